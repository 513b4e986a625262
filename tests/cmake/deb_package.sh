# `cpack -G DEB` in this build tree makes a Debian package with the runner,
# the PostgreSQL helper, the CMake package, the manual page and the bash
# completion; unpacked into a scratch root with `dpkg -x`, a project finds
# Fingerprint there with find_package alone and records; the manual page
# renders without a groff warning and names every command; the completion
# completes commands, options and paths.
source "$(dirname "$0")/lib.sh" "$@"
TREE=${FINGERPRINT_BUILD_TREE:?set FINGERPRINT_BUILD_TREE to the build tree to package}

run cpack -G DEB --config "$TREE/CPackConfig.cmake" -B "$T/pkg"
expect_rc 0 "cpack -G DEB"
deb=$(ls "$T"/pkg/fingerprint_*.deb 2>/dev/null | head -1)
expect_file "$deb" "the package"
run dpkg-deb --contents "$deb"
for path in ./usr/bin/fingerprint ./usr/bin/fingerprint-postgresql ./usr/lib/cmake/Fingerprint/FingerprintConfig.cmake \
  ./usr/lib/cmake/Fingerprint/Fingerprint.cmake ./usr/share/man/man1/fingerprint.1 \
  ./usr/share/bash-completion/completions/fingerprint; do
  expect_in out "$path" "the package holds $path"
done
run dpkg-deb --field "$deb" Depends
expect_in out "libc6" "dpkg-shlibdeps found its dependencies"
expect_in out "libpq5" "the PostgreSQL helper's too"

root=$T/root
run dpkg -x "$deb" "$root"
expect_rc 0 "dpkg -x into a scratch root"
run "$root/usr/bin/fingerprint" --version
expect_rc 0 "the packaged runner runs"

# A project that finds Fingerprint in the unpacked package and nowhere else.
mkdir -p "$T/uses"
cat >"$T/uses/CMakeLists.txt" <<'CMAKE'
cmake_minimum_required(VERSION 3.25)
project(uses LANGUAGES CXX)
find_package(Fingerprint REQUIRED)
include(Fingerprint)
add_executable(uses main.cpp)
CMAKE
printf 'int main() { return 0; }\n' >"$T/uses/main.cpp"
run cmake -S "$T/uses" -B "$T/uses-build" -G Ninja -DCMAKE_PREFIX_PATH="$root/usr"
expect_rc 0 "configure a project against the unpacked package"
expect_in out "with $root/usr/bin/fingerprint" "its hooks run the packaged runner"
build "$T/uses-build"
query "$T/uses.json" show --json "$T/uses-build/uses"
expect_json "$T/uses.json" '[e["project"] for e in d["producers"]] == ["uses"]' "the build was recorded"

# The manual page: groff reads it without a warning; every command and
# every option of the table is in it.
page=$root/usr/share/man/man1/fingerprint.1
run groff -man -ww -z "$page"
expect_rc 0 "groff reads the manual page"
expect_eq "$ERR" "" "without a warning"
run env MANWIDTH=100 man -l "$page"
for command in $("$FP" help | sed -n 's/^  \([a-z]\+\) .*/\1/p'); do
  expect_in out "fingerprint $command" "the manual page has the command $command"
done
expect_in out "--trusted-keys" "and its options"
expect_in out "EXIT STATUS" "and the exit statuses"

# The completion, in a bash of its own.
completion=$root/usr/share/bash-completion/completions/fingerprint
complete_words() {
  bash -c 'source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); _fingerprint; printf "%s\n" "${COMPREPLY[@]}"' \
    complete "$completion" "$@"
}
expect_eq "$(complete_words fingerprint sh)" "show" "a command"
expect_eq "$(complete_words fingerprint help con)" "consumers" "a command after help"
# expect_word WORDS WORD WHAT: WORD is one of the lines of WORDS.
expect_word() {
  local found=0
  [[ $'\n'$1$'\n' == *$'\n'$2$'\n'* ]] && found=1
  _result $found "$3: '$2' among '${1//$'\n'/ }'"
}
words=$(complete_words fingerprint consumers --)
expect_word "$words" --transitive "consumers' options"
expect_word "$words" --utc "and the common ones"
touch "$T/uses/pathfile.txt"
expect_eq "$(cd "$T/uses" && complete_words fingerprint graph --output path)" "pathfile.txt" "a path after --output"
expect_eq "$(cd "$T/uses" && complete_words fingerprint graph --project path)" "" "nothing after --project"
expect_eq "$(complete_words fingerprint key ge)" "generate" "key's subcommand"

finish
