#!/usr/bin/env bash
# Runs every test binary and reports how many GPU tests ran and how many were
# skipped (GPU suites are named Gpu*; they skip without a CUDA device).
#   tests/run-suite.sh BUILD_DIR            through `meson test`
#   tests/run-suite.sh --direct BUILD_DIR   the binaries themselves (machines without meson
#                                           or where the build folder was copied elsewhere)
# Exit status: non-zero when any test failed.
set -uo pipefail
direct=0
if [ "${1:-}" = "--direct" ]; then direct=1; shift; fi
build=$(cd "${1:?usage: $0 [--direct] BUILD_DIR}" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
results=$build/test-results
rm -rf "$results"; mkdir -p "$results"

status=0
if [ $direct -eq 0 ]; then
  meson test -C "$build" --print-errorlogs || status=$?
else
  export GST_PLUGIN_PATH=$build/plugins
  export GST_REGISTRY=$build/test-registry.bin
  export GTEST_OUTPUT=xml:$results/
  export CS_SOURCE_ROOT=${CS_SOURCE_ROOT:-$(dirname "$here")}
  export CS_SHARED_DATA=${CS_SHARED_DATA:-$CS_SOURCE_ROOT/../shared/data}
  export LD_LIBRARY_PATH=$build/plugins/core${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  while IFS= read -r t; do
    echo "== $t"
    timeout "${CS_TEST_TIMEOUT:-600}" "$t" || { echo "FAILED: $t"; status=1; }
  done < <(find "$build/tests" -type f -executable -name 'test_*' | sort)
fi

python3 - "$results" <<'PY'
import glob, sys, xml.etree.ElementTree as ET
ran = skipped = failed = total = 0
gpu_ran = gpu_skipped = 0
for f in sorted(glob.glob(sys.argv[1] + "/*.xml")):
    for case in ET.parse(f).getroot().iter("testcase"):
        total += 1
        is_skipped = case.get("result") == "skipped" or case.get("status") == "notrun"
        is_failed = case.find("failure") is not None
        gpu = case.get("classname", "").startswith("Gpu")
        skipped += is_skipped
        failed += is_failed
        if gpu:
            gpu_skipped += is_skipped
            gpu_ran += not is_skipped
print(f"tests: {total} total, {total - skipped - failed} passed, {failed} failed, {skipped} skipped")
print(f"GPU tests: {gpu_ran} ran, {gpu_skipped} skipped")
PY
exit $status
