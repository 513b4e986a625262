# Shared helpers for the CMake integration tests: real mini-projects
# configured with -G Ninja (or another generator), built, touched, rebuilt
# and queried. Sourced with the installed runner as the first argument; the
# Fingerprint package is installed beside it (the cmake.install_package
# fixture), the repository's checkout is $FINGERPRINT_SOURCE_DIR.
source "$(dirname "${BASH_SOURCE[0]}")/../cli/lib.sh" "$@"

PREFIX=$(cd "$(dirname "$FP")/.." && pwd)
SRC=${FINGERPRINT_SOURCE_DIR:?set FINGERPRINT_SOURCE_DIR to the checkout}
HERE=$SRC/tests/cmake
MODULE=$PREFIX/lib/cmake/Fingerprint/Fingerprint.cmake
export FINGERPRINT_DIR=$T/store
RUN_TIMEOUT=900

# configure SOURCE BUILD [cmake args...]: fails the test when cmake does.
configure() {
  local source=$1 build=$2
  shift 2
  run cmake -S "$source" -B "$build" -G "${GENERATOR:-Ninja}" -DCMAKE_PREFIX_PATH="$PREFIX;$T/prefix" \
    -DCMAKE_INSTALL_PREFIX="$T/prefix" "$@"
  expect_rc 0 "configure $(basename "$source") in $build"
}

# build BUILD [cmake --build args...]
build() {
  local dir=$1
  shift
  run cmake --build "$dir" "$@"
  expect_rc 0 "build $dir $*"
}

# install BUILD
install_tree() {
  run cmake --install "$1"
  expect_rc 0 "install $1"
}

# query FILE ARGS...: runs the runner, its JSON output in FILE.
query() {
  local file=$1
  shift
  run "$FP" "$@"
  cp "$T/out" "$file"
}
