#!/bin/sh
# Builds the features files' libFuzzer target with clang and runs it briefly,
# seeded with a binary record and an OpenCV YAML document.
# usage: run_features_fuzzer.sh [SECONDS] [WORK_DIR]   (defaults: 60, a temporary folder)
set -eu
seconds=${1:-60}
work=${2:-$(mktemp -d)}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
mkdir -p "$work/corpus"
clang++ -std=c++17 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
  -I"$root/kernels" $(pkg-config --cflags opencv4) "$here/fuzz_features_file.cpp" "$root/kernels/sift/features_cpu.cpp" \
  -lopencv_core -lopencv_imgproc -lopencv_features2d -lopencv_imgcodecs -o "$work/fuzz_features_file"
# Seeds: one binary record of two keypoints with 128-byte descriptors, and the same as YAML.
python3 - "$work/corpus" <<'PY'
import struct, sys
d = sys.argv[1]
kps = struct.pack('<5f2i', 10, 20, 3, 45, 0.1, 255, -1) + struct.pack('<5f2i', 30, 40, 5, 90, 0.2, 1, -1)
open(d + '/binary', 'wb').write(b'SIFT' + struct.pack('<IQ6I', 1, 0, 64, 48, 2, 128, 0, 0) + kps + bytes(range(128)) * 2)
rows = ', '.join(str(i % 256) for i in range(256))
open(d + '/yaml', 'w').write('%YAML:1.0\n---\nframes:\n   - { pts: 0., width: 64, height: 48, descriptor_format: 0,\n'
    '       keypoints: [ 10., 20., 3., 45., 1.0000000149011612e-01, 255, -1, 30., 40., 5., 90., 2.0000000298023224e-01, 1, -1 ],\n'
    '       descriptors: !!opencv-matrix\n          rows: 2\n          cols: 128\n          dt: u\n          data: [ ' + rows + ' ] }\n')
PY
"$work/fuzz_features_file" -max_total_time="$seconds" -max_len=16384 -timeout=10 -rss_limit_mb=2048 \
  -print_final_stats=1 "$work/corpus"
