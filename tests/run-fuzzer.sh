#!/bin/sh
# Builds one of the file readers' libFuzzer targets with clang (ASan and
# UBSan) and runs it for a while from a small seed corpus.
# usage: tests/run-fuzzer.sh cphd|mat|hsi|features [SECONDS] [WORK_DIR]   (defaults: 60, a temporary folder)
#   cphd      the CPHD reader (tests/kernels/sar/fuzz_cphd.cpp)
#   mat       MATLAB v5 files and their Gotcha conversion to CPHD (tests/kernels/sar/fuzz_mat.cpp)
#   hsi       ENVI headers, images and spectral libraries, CSV libraries (tests/kernels/hsi/fuzz_hsi_files.cpp)
#   features  siftmatch's reference files: featuresink binary, OpenCV YAML/XML
#             (tests/kernels/sift/fuzz_features_file.cpp)
set -eu
target=${1:?usage: run-fuzzer.sh cphd|mat|hsi|features [SECONDS] [WORK_DIR]}
seconds=${2:-60}
work=${3:-$(mktemp -d)}
root=$(cd "$(dirname "$0")/.." && pwd)
kernels=$root/kernels
mkdir -p "$work/corpus"
# 77: skipped, for `meson test`.
command -v clang++ >/dev/null || { echo "clang++ not found: no libFuzzer target can be built" >&2; exit 77; }
build() {
  clang++ -std=c++17 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -I"$kernels" "$@"
}
case $target in
  cphd)
    build $(pkg-config --cflags libxml-2.0) "$root/tests/kernels/sar/fuzz_cphd.cpp" "$kernels/sar/cphd_io.cpp" \
      "$kernels/sar/cphd_xml.cpp" "$kernels/sar/geodesy.cpp" "$kernels/sar/simulator.cpp" \
      "$kernels/common/host_resources.cpp" $(pkg-config --libs libxml-2.0) -o "$work/fuzzer"
    CS_FUZZ_WRITE_SEED="$work/corpus/seed.cphd" "$work/fuzzer"
    max_len=65536 ;;
  mat)
    build $(pkg-config --cflags libxml-2.0) -I"$root/tests/kernels/sar" "$root/tests/kernels/sar/fuzz_mat.cpp" \
      "$kernels/sar/matlab_v5.cpp" "$kernels/sar/gotcha.cpp" "$kernels/sar/cphd_io.cpp" "$kernels/sar/cphd_xml.cpp" \
      "$kernels/sar/geodesy.cpp" "$kernels/common/host_resources.cpp" $(pkg-config --libs libxml-2.0) -lz \
      -o "$work/fuzzer"
    CS_FUZZ_WRITE_SEED="$work/corpus" "$work/fuzzer"
    max_len=65536 ;;
  hsi)
    build "$root/tests/kernels/hsi/fuzz_hsi_files.cpp" "$kernels/hsi/envi_header.cpp" \
      "$kernels/hsi/spectral_library.cpp" "$kernels/hsi/convert.cpp" "$kernels/hsi/envi_reader.cpp" \
      "$kernels/common/host_resources.cpp" -lpthread -o "$work/fuzzer"
    # The target's first byte says what the rest is (fuzz_hsi_files.cpp): 0 a header, 1 a CSV library.
    { printf '\000'; cat <<'HDR'; } > "$work/corpus/header"
ENVI
samples = 3
lines = 2
bands = 4
header offset = 0
data type = 4
interleave = bil
byte order = 0
wavelength units = Micrometers
wavelength = {0.4, 0.5, 0.6, 0.7}
fwhm = {0.01, 0.01, 0.01, 0.01}
bbl = {1, 0, 1, 1}
data ignore value = -9999
HDR
    printf '\001wavelength,grass,soil\n400,0.1,0.2\n500,0.15,0.25\n600,0.2,0.3\n' > "$work/corpus/csv"
    # An image of 3 x 2 x 4 big-endian int16 samples and a library of two 4-band spectra, each a header, a NUL
    # and the data file.
    python3 - "$work/corpus" <<'PY'
import struct, sys
d = sys.argv[1]
image = ('ENVI\nsamples = 3\nlines = 2\nbands = 4\nheader offset = 0\ndata type = 2\ninterleave = bsq\n'
         'byte order = 1\ndata ignore value = -1\nreflectance scale factor = 10000\n')
open(d + '/image', 'wb').write(b'\002' + image.encode() + b'\0' + struct.pack('>24h', *range(-1, 23)))
library = ('ENVI\nfile type = ENVI Spectral Library\nsamples = 4\nlines = 2\nbands = 1\nheader offset = 0\n'
           'data type = 4\ninterleave = bsq\nbyte order = 0\nwavelength = {400, 500, 600, 700}\n'
           'spectra names = {grass, soil}\n')
open(d + '/library', 'wb').write(b'\003' + library.encode() + b'\0' + struct.pack('<8f', *[0.1 * i for i in range(8)]))
PY
    max_len=8192 ;;
  features)
    build $(pkg-config --cflags opencv4) "$root/tests/kernels/sift/fuzz_features_file.cpp" \
      "$kernels/sift/features_cpu.cpp" -lopencv_core -lopencv_imgproc -lopencv_features2d -lopencv_imgcodecs \
      -o "$work/fuzzer"
    # One binary record of two keypoints with 128-byte descriptors, and the same as YAML.
    python3 - "$work/corpus" <<'PY'
import struct, sys
d = sys.argv[1]
kps = struct.pack('<5f2i', 10, 20, 3, 45, 0.1, 255, -1) + struct.pack('<5f2i', 30, 40, 5, 90, 0.2, 1, -1)
header = b'SIFT' + struct.pack('<IQ6I', 1, 0, 64, 48, 2, 128, 0, 0)
open(d + '/binary', 'wb').write(header + kps + bytes(range(128)) * 2)
rows = ', '.join(str(i % 256) for i in range(256))
open(d + '/yaml', 'w').write('%YAML:1.0\n---\nframes:\n   - { pts: 0., width: 64, height: 48, descriptor_format: 0,\n'
    '       keypoints: [ 10., 20., 3., 45., 0.1, 255, -1, 30., 40., 5., 90., 0.2, 1, -1 ],\n'
    '       descriptors: !!opencv-matrix\n          rows: 2\n          cols: 128\n          dt: u\n'
    '          data: [ ' + rows + ' ] }\n')
PY
    max_len=16384 ;;
  *) echo "unknown target '$target' (cphd, mat, hsi or features)" >&2; exit 2 ;;
esac
# libFuzzer's own exit code for a finding is 77, which `meson test` would take for a skip.
"$work/fuzzer" -max_total_time="$seconds" -max_len=$max_len -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
  -error_exitcode=1 -artifact_prefix="$work/" "$work/corpus"
