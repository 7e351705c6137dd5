#!/usr/bin/env bash
# One entry point for a fresh Debian 12 machine (root, GPU optional):
#   ./setup.sh demo    install what is missing, build, run the demo (results in out/demo/)
#   ./setup.sh test    install what is missing, build, run the whole test suite
#   ./setup.sh build   install what is missing and build
# nvcc in /usr/local/cuda (or on PATH) turns the CUDA paths on; without it the
# project builds and runs CPU-only.
set -euo pipefail
cd "$(dirname "$0")"
action=${1:-}
case "$action" in demo|test|build) ;; *) echo "usage: $0 demo|test|build" >&2; exit 2 ;; esac

packages=(
  meson ninja-build pkg-config g++
  libglib2.0-dev libgstreamer1.0-dev libgstreamer-plugins-base1.0-dev libgstreamer-plugins-bad1.0-dev
  gstreamer1.0-tools gstreamer1.0-plugins-base gstreamer1.0-plugins-good gstreamer1.0-plugins-bad
  libfftw3-dev libopencv-dev libxml2-dev libgtest-dev
  python3 python3-numpy python3-scipy python3-spectral python3-gst-1.0 python3-skimage
  clang libclang-rt-dev  # the file readers' libFuzzer targets (tests/run-fuzzer.sh)
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "== installing: ${missing[*]}"
  sudo_cmd=(); [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

if ! command -v nvcc >/dev/null && [ -x /usr/local/cuda/bin/nvcc ]; then export PATH=/usr/local/cuda/bin:$PATH; fi
builddir=build
if [ ! -f "$builddir/build.ninja" ]; then
  setup_args=()
  # With nvcc, tools/cuda/nvcc is the CUDA compiler: it writes the dependency
  # files meson 1.0 does not ask nvcc for (see the script). The machine file
  # stays in the build folder: meson reads it again when it regenerates.
  if command -v nvcc >/dev/null; then
    mkdir -p "$builddir"
    printf "[binaries]\ncuda = '%s'\n" "$PWD/tools/cuda/nvcc" > "$builddir/cuda.ini"
    setup_args=(--native-file "$builddir/cuda.ini")
  fi
  meson setup "$builddir" "${setup_args[@]}"
fi
meson compile -C "$builddir"

case "$action" in
  demo) pipelines/demo.sh "$builddir" out/demo ;;
  test) tests/run-suite.sh "$builddir" ;;
  build) ;;
esac
