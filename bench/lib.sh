# lib.sh — shared helpers for the benchmarks: build, medians, recording.
set -euo pipefail
BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$BENCH_DIR")
BUILD=${BUILD:-$ROOT/build-bench}
CORRAL=${CORRAL:-$BUILD/corral}

bench_build() {
  . "$ROOT/scripts/deps.sh"
  ensure_packages "${BUILD_PACKAGES[@]}" time "$@"
  [ -d "$BUILD" ] || meson setup "$BUILD" --buildtype=release >/dev/null
  ninja -C "$BUILD" >/dev/null
}

# median of the numbers on stdin
median() { sort -g | awk '{a[NR]=$1} END {if (NR%2) print a[(NR+1)/2]; else printf "%.6f\n", (a[NR/2]+a[NR/2+1])/2}'; }
