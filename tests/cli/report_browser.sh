#!/usr/bin/env bash
# The HTML page of `graph --format html` in a real browser: Debian's
# Chromium, headless, driven by playwright-core (tests/browser/report.js,
# which says what it checks). The store: two versions of one library, a
# signed record, a build's provenance, and a file of Debian's libc6.
# Needs Chromium (chromium) and playwright-core from
# tests/validate/package-lock.json, which tools/test.sh installs
# (FINGERPRINT_NODE_MODULES, else build/validate/node_modules). The
# screenshots go to $FINGERPRINT_SCREENSHOTS, else report_browser/ in the
# directory the test runs in (CTest's: the build tree).
set -euo pipefail
shots=$(realpath -m "${FINGERPRINT_SCREENSHOTS:-$PWD/report_browser}")
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh" "$@"
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
modules=${FINGERPRINT_NODE_MODULES:-$top/build/validate/node_modules}

# Missing tools fail the test, saying what to install: a skipped browser
# test is a page nobody looked at.
if [[ ! -x /usr/bin/chromium ]]; then
  fail "no /usr/bin/chromium: apt-get install chromium"
  finish
fi
if [[ ! -d $modules/playwright-core ]]; then
  fail "no playwright-core in $modules: run tools/test.sh, or (cd tests/validate && npm ci) and set FINGERPRINT_NODE_MODULES"
  finish
fi

libc=/lib/x86_64-linux-gnu/libc.so.6
record() { run "$FP" --store S record --build-dir "$T" "$@"; expect_rc 0 "record $*"; }
printf 'lib one\n' >lib.so
record --project core --version 1.0 --target lib --build-id 1 --produced lib.so
old_lib=sha256:$(sha256sum lib.so | cut -c1-64)
# The second version, signed by a key this machine does not trust.
run "$FP" key generate --output "$T/key.pem"
expect_rc 0 "key generate"
printf 'lib two, longer\n' >lib.so
FINGERPRINT_SIGNING_KEY=$T/key.pem record --project core --version 1.1 --target lib --build-id 2 --produced lib.so
printf 'app\n' >app
record --project apps --version 0.3 --target app --build-id 7 --produced app --consumed lib.so "$libc"
printf 'bundle\n' >bundle.tar
record --project dist --target bundle --build-id 3 --produced bundle.tar --consumed app lib.so
# Build 2's provenance, as its first hook would have written it.
commit=4a58c0038f8fe93e3d5d366d737200e5b9248145
cat >S/builds/core/2.provenance.json <<EOF
{"provenance": 1, "project": "core", "build": "2", "host": "ci-7", "time": "2026-12-01T21:07:00.000Z",
 "source_dir": "/src/core", "build_dir": "$T",
 "source": {"vcs": "git", "commit": "$commit", "branch": "main", "dirty": false, "remote": "https://example.com/core.git"},
 "cmake": {"version": "3.25.1", "generator": "Ninja"}, "build_type": "RelWithDebInfo",
 "compilers": {"CXX": {"id": "GNU", "version": "12.2.0", "path": "/usr/bin/c++"}},
 "flags": {"CXX": "-O2"}, "flags_digest": "sha256:ad40dad6935e", "ci": null}
EOF
run "$FP" --store S build show core 2
expect_in out "$commit" "the store reads the provenance (the page shows what build show shows)"

run "$FP" --store S graph --format html --output "$T/page.html"
expect_rc 0 "graph --format html"
cat >facts.json <<EOF
{"projects": ["apps", "core", "dist"], "old_lib": "$old_lib", "commit": "$commit"}
EOF
mkdir -p "$shots"
RUN_TIMEOUT=120 run env HOME="$T/home" FINGERPRINT_NODE_MODULES="$modules" \
  node "$top/tests/browser/report.js" "$T/page.html" "$shots" facts.json
cat "$T/out"
grep -v '^ok: ' "$T/err" >&2 || true
expect_rc 0 "every check of the page in Chromium passed (the FAIL lines above say which did not)"
finish
