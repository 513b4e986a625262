#!/usr/bin/env bash
# The main job: build and install the runner and its CMake package, then
# build and install the three example projects (greet -> hello -> chorus),
# each on its own through find_package(Fingerprint), into a fresh store, and
# show who produced and who consumed what.
set -euo pipefail
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
. "$top/tools/deps.sh"

fingerprint_install_packages "${FINGERPRINT_BUILD_PACKAGES[@]}"

demo=${FINGERPRINT_DEMO_DIR:-$top/build/demo}
build=$demo/fingerprint
prefix=$demo/prefix
fingerprint_say "building the runner in $build and installing it into $prefix"
cmake -S "$top" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DFINGERPRINT_BUILD_TESTS=OFF >/dev/null
cmake --build "$build"
cmake --install "$build" --prefix "$prefix" >/dev/null
fp=$prefix/bin/fingerprint

export FINGERPRINT_DIR=$demo/store
export FINGERPRINT_CACHE_DIR=$demo/cache
fingerprint_say "fresh store in $FINGERPRINT_DIR"
rm -rf "$FINGERPRINT_DIR" "$FINGERPRINT_CACHE_DIR" "$demo/examples" "$demo/examples-prefix"

for project in greet hello chorus; do
  fingerprint_say "project '$project': configure, build (every link fingerprinted), install"
  cmake -S "$top/examples/$project" -B "$demo/examples/$project" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_PREFIX_PATH="$prefix;$demo/examples-prefix" -DCMAKE_INSTALL_PREFIX="$demo/examples-prefix" \
    | grep -i fingerprint
  cmake --build "$demo/examples/$project" | tail -n 1
  cmake --install "$demo/examples/$project" | grep -i fingerprint
done

libgreet=$demo/examples-prefix/lib/libgreet.so
echo
fingerprint_say "fingerprint show $libgreet"
"$fp" show "$libgreet"
echo
fingerprint_say "fingerprint consumers --transitive $libgreet"
"$fp" consumers --transitive "$libgreet"
echo
greet_hpp=$demo/examples-prefix/include/greet/greet.hpp
fingerprint_say "fingerprint consumers --transitive $greet_hpp   (who compiled against the installed header, and what came of it)"
"$fp" consumers --transitive "$greet_hpp"
echo
fingerprint_say "fingerprint graph   (who consumed what, between projects)"
"$fp" graph
echo
fingerprint_say "fingerprint graph --artifacts --format mermaid   (between targets; paste into any Mermaid viewer)"
"$fp" graph --artifacts --format mermaid
echo
fingerprint_say "ctest in chorus' build tree: the round trip of every fingerprinted target"
ctest --test-dir "$demo/examples/chorus" | grep -E 'fingerprint\.|tests passed'
