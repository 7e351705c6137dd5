#!/usr/bin/env bash
# SAR data in and pulse compression:
#   pipelines/sar-pulse-compression.sh [BUILD_DIR=build] [OUT_DIR=out/sar]
# Simulates point targets, records them as CPHD, plays the file back through
# pulse compression (CUDA when a device is present), writes the range profiles.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
out=${2:-$root/out/sar}
mkdir -p "$out"
export GST_PLUGIN_PATH=$build/plugins${GST_PLUGIN_PATH:+:$GST_PLUGIN_PATH}

gst-launch-1.0 -q sarsim num-pulses=512 domain=frequency targets="0,0,0,1;20,-15,0,0.5" ! \
  cphdsink location="$out/sim.cphd"
gst-launch-1.0 -q cphdsrc location="$out/sim.cphd" ! sarpulsecompress window=taylor upsample=4 ! \
  filesink location="$out/profiles.cf32"
echo "wrote $out/sim.cphd and $out/profiles.cf32 ($(stat -c %s "$out/profiles.cf32") bytes of complex float range profiles)"
