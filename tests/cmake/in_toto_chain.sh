# export --format in-toto-link checked by in-toto's own verifier: three
# unmodified projects fingerprinted by injection with a signing key, word (a
# library) -> phrase (a library on word's installed one) -> app (a program
# on phrase's installed one, installed). Their links, exported per build,
# pass Debian's in-toto-verify against a layout made and signed with
# in-toto's Python API (tests/cli/intoto_check.py), and fail it when an installed
# artifact, a link or its signer is not what was recorded.
source "$(dirname "$0")/lib.sh" "$@"

P=$HERE/projects/chain
inject=(-DCMAKE_PROJECT_TOP_LEVEL_INCLUDES="$MODULE")
APP_PREFIX=$T/app-prefix

run "$FP" key generate --output "$T/functionary.pem"
expect_rc 0 "key generate"
export FINGERPRINT_SIGNING_KEY=$T/functionary.pem

for project in word phrase app; do
  prefix=()
  [[ $project == app ]] && prefix=(-DCMAKE_INSTALL_PREFIX="$APP_PREFIX")
  configure "$P/$project" "$T/$project" "${inject[@]}" "${prefix[@]}"
  build "$T/$project"
  install_tree "$T/$project"
done
run "$APP_PREFIX/bin/app"
expect_eq "$OUT" "a chain" "the installed program runs"

# The links: one export per project's build; the program's by its file.
query "$T/builds.json" builds --json
# build_of PROJECT: the id of its (one) build.
build_of() {
  python3 -c 'import json,sys; print([b["build"] for b in json.load(open(sys.argv[1])) if b["project"] == sys.argv[2]][0])' \
    "$T/builds.json" "$1"
}
links=$T/links
for project in word phrase; do
  id=$(build_of "$project")
  run "$FP" export --format in-toto-link --project "$project" --build "$id" --output-dir "$links"
  expect_rc 0 "export the links of $project's build $id"
done
run "$FP" export --format in-toto-link "$APP_PREFIX/bin/app" --output-dir "$links"
expect_rc 0 "export the links of the build that produced the installed program"
keyid8=$(basename "$(echo "$OUT" | head -1)" | sed 's/.*\.\([0-9a-f]\{8\}\)\.link$/\1/')
for step in word.word word.install phrase.phrase phrase.install app.app; do
  expect_file "$links/$step.$keyid8.link" "the link of $step"
done
expect_json "$links/app.app.$keyid8.link" \
  '(d["signed"]["products"]["'"$APP_PREFIX"'/bin/app"] == d["signed"]["products"]["'"$T"'/app/app"]) and "'"$T"'/prefix/lib/libphrase.a" in d["signed"]["materials"]' \
  "app's link: the installed program beside the one built as products, phrase's installed archive a material"

# The layout, signed by an owner key of its own; the functionary's key from
# openssl, as raw bytes (the key id is securesystemslib's to compute).
run openssl pkey -in "$FINGERPRINT_SIGNING_KEY" -pubout -outform DER -out "$T/functionary.der"
expect_rc 0 "the functionary's public key"
run /usr/bin/python3 "$HERE/../cli/intoto_check.py" layout "$T/root.layout" "$T/owner" "$T/functionary.der" "$T/prefix" "$APP_PREFIX" "$P"
expect_rc 0 "make and sign the layout with in-toto's Python API"

# in-toto-verify, run where the program is installed (its inspection's place).
verify() {
  run env -C "$APP_PREFIX" in-toto-verify --layout "$T/root.layout" --layout-keys "$T/owner.pub" --key-types ed25519 \
    --link-dir "$links" "$@"
}
verify --verbose
expect_rc 0 "in-toto-verify passes the chain word -> phrase -> installed app"
expect_in both "The software product passed all verification." "in-toto-verify says it passed"

# An installed artifact changed after its build: the inspection finds it.
cp "$APP_PREFIX/bin/app" "$T/app.good"
printf 'x' >>"$APP_PREFIX/bin/app"
verify
expect_rc 1 "in-toto-verify fails on an installed program that is not the one app.app made"
expect_in both "'DISALLOW *' matched the following artifacts: ['bin/app']" "the inspection's rules refuse it"
cp "$T/app.good" "$APP_PREFIX/bin/app"

# A link edited after it was signed: phrase's archive said to be other bytes.
phrase_link=$links/phrase.phrase.$keyid8.link
cp "$phrase_link" "$T/phrase.good"
python3 - "$phrase_link" "$T/prefix/lib/libphrase.a" <<'EOF'
import json, sys
link = json.load(open(sys.argv[1]))
products = link["signed"]["products"]
path = [p for p in products if p.endswith("/libphrase.a")][0]
products[path]["sha256"] = "0" * 64
json.dump(link, open(sys.argv[1], "w"))
EOF
verify
expect_rc 1 "in-toto-verify fails on a link edited after it was signed"
expect_in both "'phrase.phrase' requires at least '1' links validly signed" "for want of a valid signature on phrase's link"
cp "$T/phrase.good" "$phrase_link"

# A link signed by a key the layout does not name, in place of the real one.
run "$FP" key generate --output "$T/intruder.pem"
FINGERPRINT_SIGNING_KEY=$T/intruder.pem run "$FP" export --format in-toto-link --project word --build "$(build_of word)" \
  --output-dir "$T/intruder-links"
expect_rc 0 "export word's links signed by another key"
mkdir "$T/word-good"
mv "$links"/word.word.*.link "$T/word-good/"
cp "$T"/intruder-links/word.word.*.link "$links/"
verify
expect_rc 1 "in-toto-verify fails when word's link is signed by a key the layout does not name"
expect_in both "word.word" "names the step"
rm "$links"/word.word.*.link
mv "$T"/word-good/* "$links/"
verify
expect_rc 0 "with word's own link back, the chain passes again"

# An artifact of the chain swapped: phrase's installed archive replaced and
# the app rebuilt on it, its link re-exported honestly. phrase's link no
# longer matches what app used.
# (A member that is no object keeps the archive one the linker reads.)
echo "not phrase's" >"$T/note.txt"
run ar rs "$T/prefix/lib/libphrase.a" "$T/note.txt"
expect_rc 0 "add a member to the installed libphrase.a"
build "$T/app"
install_tree "$T/app"
run "$FP" export --format in-toto-link "$APP_PREFIX/bin/app" --output-dir "$links"
expect_rc 0 "export app's new build"
verify
expect_rc 1 "in-toto-verify fails when app used a libphrase.a that phrase's build did not make"
expect_in both "matched the following artifacts: ['$T/prefix/lib/libphrase.a']" "app.app's rules refuse the archive"

finish
