# deps.sh — installs the Debian packages corral needs, when any is missing.
# Sourced by scripts/test and scripts/demo.  Usage: ensure_packages PKG...
ensure_packages() {
  local missing=()
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  if [ "$(id -u)" -ne 0 ]; then
    echo "missing packages: ${missing[*]} (run as root, or: sudo apt-get install ${missing[*]})" >&2
    return 1
  fi
  echo "installing: ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null && apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

BUILD_PACKAGES=(gcc libc6-dev meson ninja-build pkg-config libseccomp-dev libjansson-dev scdoc)
TEST_PACKAGES=(libcmocka-dev golang-go python3 iproute2 util-linux procps psmisc git curl valgrind clang
  libclang-rt-14-dev bubblewrap man-db make libpython3.11-testsuite)
