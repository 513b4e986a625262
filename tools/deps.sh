# Sourced by demo.sh and test.sh: installs the Debian/Ubuntu packages that
# are missing, and only those. Idempotent; says what it does.

fingerprint_say() { printf '==> %s\n' "$*"; }

# fingerprint_install_packages PACKAGE...
fingerprint_install_packages() {
  local missing=() package
  for package in "$@"; do
    if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q 'install ok installed'; then
      missing+=("$package")
    fi
  done
  if [ ${#missing[@]} -eq 0 ]; then
    fingerprint_say "packages already installed: $*"
    return 0
  fi
  local sudo=()
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || { echo "error: need root or sudo to install: ${missing[*]}" >&2; return 1; }
    sudo=(sudo)
  fi
  fingerprint_say "installing missing packages: ${missing[*]}"
  # Package lists may be absent on a fresh machine (or stale): refresh once.
  if ! "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"; then
    fingerprint_say "refreshing the package lists (apt-get update)"
    "${sudo[@]}" apt-get update -qq
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
  fi
}

# What building the runner needs.
# libpq-dev: the PostgreSQL store (fingerprint-postgresql).
FINGERPRINT_BUILD_PACKAGES=(cmake ninja-build g++ pkg-config libssl-dev nlohmann-json3-dev zlib1g-dev libpq-dev)
# What the test suite needs on top.
# googletest also brings /usr/src/googletest, the unmodified project the
# injection test fingerprints.
# graphviz and chromium: graph --format svg|html, and the page tested in a
# real headless browser.
# postgresql: the server the PostgreSQL store's tests start on loopback
# (initdb, pg_ctl; psql comes with it).
# strace: cmake.killed_build kills a hook at the exact system call of its
# build-sequence rewrite.
# ccache: cmake.complete_graph keeps a project's compile launcher working
# inside the compile hook.
# git: the build provenance tests record a real repository's commit.
# in-toto: cmake.in_toto_chain checks the links export writes with
# in-toto's own verifier (in-toto-verify) and Python API.
# dpkg-dev, groff-base: cmake.deb_package makes the .deb (cpack runs
# dpkg-shlibdeps) and checks the manual page with groff's warnings.
FINGERPRINT_TEST_PACKAGES=(libgtest-dev googletest libbenchmark-dev python3 coreutils util-linux clang-format graphviz chromium
  postgresql strace ccache git in-toto dpkg-dev groff-base)
# What the fuzz build needs on top of the build packages: clang, its runtime
# libraries (libFuzzer, ASan, UBSan) for the default clang version, and
# llvm-symbolizer, without which a crash's stack trace has no file:line.
FINGERPRINT_FUZZ_PACKAGES=(clang libclang-rt-dev llvm)
