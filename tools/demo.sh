#!/usr/bin/env bash
# The main job: build the runner, record a small producer -> consumer chain
# into a fresh store, and show who produced and who consumed what.
set -euo pipefail
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
. "$top/tools/deps.sh"

fingerprint_install_packages "${FINGERPRINT_BUILD_PACKAGES[@]}"

build=${FINGERPRINT_BUILD_DIR:-$top/build/demo}
fingerprint_say "building the runner in $build"
cmake -S "$top" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DFINGERPRINT_BUILD_TESTS=OFF >/dev/null
cmake --build "$build" --target fingerprint
fp="$build/runner/fingerprint"

work="$build/demo-work"
export FINGERPRINT_DIR="$build/demo-store"
export FINGERPRINT_CACHE_DIR="$build/demo-cache"
fingerprint_say "fresh store in $FINGERPRINT_DIR"
rm -rf "$work" "$FINGERPRINT_DIR" "$FINGERPRINT_CACHE_DIR"
mkdir -p "$work"
cd "$work"

cat > greet.cpp <<'CPP'
#include <string>
std::string greet(const std::string& who) { return "hello, " + who; }
CPP
cat > app.cpp <<'CPP'
#include <iostream>
#include <string>
std::string greet(const std::string& who);
int main() { std::cout << greet("world") << "\n"; }
CPP

fingerprint_say "project 'greet' builds libgreet.a and records it as produced"
g++ -O2 -c greet.cpp -o greet.o
ar rcs libgreet.a greet.o
"$fp" record --project greet --version 1.0 --target greet --build-id 1 --produced libgreet.a --consumed greet.o

fingerprint_say "project 'app' links libgreet.a into app and records what it consumed"
g++ -O2 app.cpp libgreet.a -o app
"$fp" record --project app --target app --build-id 1 --produced app --consumed libgreet.a

fingerprint_say "project 'bundle' packs app into bundle.tar and records it"
tar cf bundle.tar app
"$fp" record --project bundle --target bundle --build-id 1 --produced bundle.tar --consumed app

echo
fingerprint_say "fingerprint digest libgreet.a app   (same output as sha256sum)"
"$fp" digest libgreet.a app
echo
fingerprint_say "fingerprint show libgreet.a"
"$fp" show libgreet.a
echo
fingerprint_say "fingerprint consumers --transitive libgreet.a"
"$fp" consumers --transitive libgreet.a
echo
fingerprint_say "fingerprint verify libgreet.a app bundle.tar"
"$fp" verify libgreet.a app bundle.tar
