# A store nobody can mistake: a query of a store that is not there is an
# error naming the path and how it was chosen (and creates nothing); a
# relative -DFINGERPRINT_DIR is taken from the directory cmake ran in, not
# the build tree; FINGERPRINT_DIR of the environment at configure time is
# kept, so a build without it writes where configure said; a store this
# user may read but not write answers every query.
source "$(dirname "$0")/lib.sh" "$@"
unset FINGERPRINT_DIR XDG_DATA_HOME
export HOME=$T/home
mkdir -p "$HOME" "$T/work"

# Queries of a missing store: refused, nothing created.
run "$FP" --store "$T/nowhere" builds
expect_rc 1 "builds of a store that does not exist"
expect_in err "$T/nowhere: no fingerprint store there (given by --store)" "the error names the path and --store"
FINGERPRINT_DIR=$T/nowhere run "$FP" consumers "$T/work"
expect_rc 1 "consumers of a store that does not exist"
expect_in err "(from \$FINGERPRINT_DIR)" "and says it came from FINGERPRINT_DIR"
run "$FP" show "$SRC/README.md"
expect_rc 1 "show with no store anywhere"
expect_in err "$HOME/.local/share/fingerprint: no fingerprint store there (the default" "names the default store"
run "$FP" --store "$T/nowhere" gc --dry-run --keep-builds 1
expect_rc 1 "gc of a store that does not exist"
run "$FP" --store "$T/nowhere" fsck
expect_rc 1 "fsck of a store that does not exist"
expect_no_file "$T/nowhere" "no query created the store"
expect_no_file "$HOME/.local/share/fingerprint" "nor the default one"

# A relative store, from the directory cmake runs in.
cd "$T/work"
run cmake -S "$HERE/projects/small" -B "$T/b-rel" -G Ninja -DCMAKE_PREFIX_PATH="$PREFIX" -DFINGERPRINT_DIR=relstore
expect_rc 0 "configure with -DFINGERPRINT_DIR=relstore"
cd "$T"
expect_in out "into $T/work/relstore with" "the configure message names the real store"
expect_eq "$(sed -n 's/^FINGERPRINT_DIR:STRING=//p' "$T/b-rel/CMakeCache.txt")" "$T/work/relstore" \
  "the cache holds it absolute"
build "$T/b-rel"
expect_file "$T/work/relstore/fingerprint-store.json" "the build wrote to the store configure named"
expect_no_file "$T/b-rel/relstore" "not into the build tree"
run "$FP" --store "$T/work/relstore" show "$T/b-rel/small_app"
expect_rc 0 "the program is recorded there"

# The environment's store at configure time, kept.
FINGERPRINT_DIR=$T/envstore run cmake -S "$HERE/projects/small" -B "$T/b-env" -G Ninja \
  -DCMAKE_PREFIX_PATH="$PREFIX"
expect_rc 0 "configure with FINGERPRINT_DIR in the environment"
expect_in out "into $T/envstore with" "the configure message names it"
expect_not_in out "the default store" "not the default store"
build "$T/b-env" # without FINGERPRINT_DIR
expect_file "$T/envstore/fingerprint-store.json" "a build without FINGERPRINT_DIR wrote where configure said"
expect_no_file "$HOME/.local/share/fingerprint" "not into the default store"

# Read, not written: another user reads root's store.
if ((EUID == 0)) && command -v setpriv >/dev/null; then
  chmod -R go-w "$T/envstore"
  chmod 755 "$T" "$T/envstore"
  nobody=(setpriv --reuid=65534 --regid=65534 --clear-groups env -C / HOME=/nonexistent
    FINGERPRINT_CACHE_DIR=/nonexistent/cache)
  cp "$FP" "$T/fingerprint-copy"
  chmod 755 "$T/fingerprint-copy"
  chmod -R o+rX "$T/b-env"
  for query in "builds" "show $T/b-env/small_app" "consumers $T/b-env/lib/libsmall_lib.a" \
    "verify --build-dir $T/b-env" "gc --dry-run --keep-builds 1" "fsck" "graph --format json"; do
    # shellcheck disable=SC2086
    run "${nobody[@]}" "$T/fingerprint-copy" --store "$T/envstore" $query
    expect_rc 0 "$query of a store this user may only read"
    expect_not_in err "Permission denied" "and no permission error"
  done
  run "${nobody[@]}" "$T/fingerprint-copy" --store "$T/envstore" record --project p --target t --build-id 1 \
    --produced "$T/b-env/small_app"
  expect_rc 1 "record into a store this user may not write"
  expect_eq "$(grep -c 'Permission denied' "$T/err")" 1 "one permission error"
  expect_in err "$T/envstore/" "naming the store's file"
  mv "$T/b-env" "$T/b-env-moved" # its build tree gone: gc would drop it
  run "${nobody[@]}" "$T/fingerprint-copy" --store "$T/envstore" gc --missing-build-dirs
  expect_rc 1 "gc of a store this user may not write"
  expect_eq "$(grep -c 'Permission denied' "$T/err")" 1 "one permission error, not one per log"
  expect_in err "may read the store but not change it" "which says what it means"
  run "$FP" --store "$T/envstore" fsck
  expect_rc 0 "the store is whole after the refused gc"
else
  fail "the read-only checks need root and setpriv"
fi
finish
