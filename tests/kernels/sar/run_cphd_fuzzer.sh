#!/bin/sh
# Builds the CPHD reader's libFuzzer target with clang and runs it briefly.
# usage: run_cphd_fuzzer.sh [SECONDS] [WORK_DIR]   (defaults: 60, a temporary folder)
set -eu
seconds=${1:-60}
work=${2:-$(mktemp -d)}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
mkdir -p "$work/corpus"
clang++ -std=c++17 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
  -I"$root/kernels" $(pkg-config --cflags libxml-2.0) \
  "$here/fuzz_cphd.cpp" "$root/kernels/sar/cphd_io.cpp" "$root/kernels/sar/cphd_xml.cpp" \
  "$root/kernels/sar/geodesy.cpp" "$root/kernels/sar/simulator.cpp" \
  $(pkg-config --libs libxml-2.0) -o "$work/fuzz_cphd"
CS_FUZZ_WRITE_SEED="$work/corpus/seed.cphd" "$work/fuzz_cphd"
"$work/fuzz_cphd" -max_total_time="$seconds" -max_len=65536 -timeout=10 -rss_limit_mb=2048 \
  -print_final_stats=1 "$work/corpus"
