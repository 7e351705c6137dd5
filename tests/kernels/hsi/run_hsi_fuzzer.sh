#!/bin/sh
# Builds the hyperspectral text formats' libFuzzer target with clang and runs
# it briefly, seeded with the test data's headers when present.
# usage: run_hsi_fuzzer.sh [SECONDS] [WORK_DIR]   (defaults: 60, a temporary folder)
set -eu
seconds=${1:-60}
work=${2:-$(mktemp -d)}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
mkdir -p "$work/corpus"
clang++ -std=c++17 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
  -I"$root/kernels" "$here/fuzz_hsi_files.cpp" "$root/kernels/hsi/envi_header.cpp" \
  "$root/kernels/hsi/spectral_library.cpp" "$root/kernels/hsi/convert.cpp" "$root/kernels/hsi/envi_reader.cpp" \
  -lpthread -o "$work/fuzz_hsi_files"
# Seeds: a header (first byte even) and a CSV library (first byte odd).
printf '\000ENVI\nsamples = 3\nlines = 2\nbands = 4\nheader offset = 0\ndata type = 4\ninterleave = bil\nbyte order = 0\nwavelength units = Micrometers\nwavelength = {0.4, 0.5, 0.6, 0.7}\nfwhm = {0.01, 0.01, 0.01, 0.01}\nbbl = {1, 0, 1, 1}\ndata ignore value = -9999\n' > "$work/corpus/header"
printf '\001wavelength,grass,soil\n400,0.1,0.2\n500,0.15,0.25\n600,0.2,0.3\n' > "$work/corpus/csv"
"$work/fuzz_hsi_files" -max_total_time="$seconds" -max_len=8192 -timeout=10 -rss_limit_mb=2048 \
  -print_final_stats=1 "$work/corpus"
