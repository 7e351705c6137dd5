#!/usr/bin/env bash
# On a GPU machine that has the built tree and a GStreamer runtime bundle:
# the whole test suite (GPU tests included), the benchmarks and the demo.
#   tests/run-gpu-checks.sh BUILD_DIR GST_BUNDLE_DIR LOG_DIR
# GST_BUNDLE_DIR holds bin/, lib/, plugins/ (a relocatable GStreamer runtime).
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "$1" && pwd)
bundle=$(cd "$2" && pwd)
logs=$3
mkdir -p "$logs"
export PATH=$bundle/bin:$PATH
export LD_LIBRARY_PATH=$bundle/lib:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export GST_PLUGIN_SYSTEM_PATH=$bundle/plugins
export GST_PLUGIN_SCANNER=$bundle/bin/gst-plugin-scanner
export XDG_RUNTIME_DIR=/tmp
# The tests' Python references (numpy, scipy) run on the first python3 that
# has them: a GPU machine's own Python where /usr/bin/python3 lacks them.
if [ -z "${CS_PYTHON:-}" ]; then
  for py in /usr/bin/python3 "$(command -v python3 || true)"; do
    if [ -x "$py" ] && "$py" -c "import numpy, scipy.io" 2>/dev/null; then export CS_PYTHON=$py; break; fi
  done
fi
status=0
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv >"$logs/gpu.txt" 2>&1
cat "$logs/gpu.txt"

echo "== test suite"
timeout 400 "$root/tests/run-suite.sh" --direct "$build" >"$logs/tests.log" 2>&1 || status=1
tail -n 2 "$logs/tests.log"
grep -E "^\[  FAILED  \]|Failure|FAILED:" "$logs/tests.log" | head -40
tar -C "$build" -czf "$logs/test-results.tgz" test-results

echo "== benchmarks"
: >"$logs/bench.log"
for bench in "$build"/tests/bench/*_bench; do
  [ -x "$bench" ] || continue
  name=$(basename "$bench")
  echo "-- $name" | tee -a "$logs/bench.log"
  GST_PLUGIN_PATH=$build/plugins GST_REGISTRY=/tmp/bench-registry.bin \
    timeout 300 "$bench" --csv "$logs/$name.csv" 2>&1 | tee -a "$logs/bench.log" || status=1
done

echo "== demo"
GST_REGISTRY=/tmp/demo-registry.bin "$root/pipelines/demo.sh" "$build" "$logs/demo" >"$logs/demo.log" 2>&1 || status=1
cat "$logs/demo.log" | tail -n 8
exit $status
