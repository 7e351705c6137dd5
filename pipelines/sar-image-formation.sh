#!/usr/bin/env bash
# SAR image formation, phase history to pictures:
#   pipelines/sar-image-formation.sh [BUILD_DIR=build] [OUT_DIR=out/sar] [DATA_DIR=../shared/data]
# 1. Simulated point targets -> pulse compression -> backprojection (every
#    pulse in one image) -> dB picture: OUT_DIR/sim-image.png.
# 2. The AFRL Gotcha pass (when DATA_DIR/sar/gotcha holds it): converted to
#    CPHD by tools/gotcha-to-cphd, then cphdsrc -> the same chain:
#    OUT_DIR/gotcha.png (a parking lot; cars are the bright compact returns).
# CUDA runs when a device is present, the CPU otherwise.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
out=${2:-$root/out/sar}
data=${3:-$root/../shared/data}
mkdir -p "$out"
export GST_PLUGIN_PATH=$build/plugins${GST_PLUGIN_PATH:+:$GST_PLUGIN_PATH}

gst-launch-1.0 -q sarsim num-pulses=512 prf=250 bandwidth=300e6 sample-rate=360e6 targets="0,0,0,1;20,-15,0,0.5;-30,25,0,0.7;-10,-40,0,0.3" ! \
  sarpulsecompress window=taylor upsample=4 ! \
  sarbackproject width=512 height=512 pixel-spacing=0.25 interpolation=linear ! \
  sarimage dynamic-range=50 ! pngenc ! filesink location="$out/sim-image.png"
echo "wrote $out/sim-image.png (512 x 512 pixels of 0.25 m, four simulated point targets)"

gotcha=$data/sar/gotcha
if ls "$gotcha"/data_3dsar_pass1_az00[1-4]_HH.mat >/dev/null 2>&1; then
  "$build/tools/gotcha-to-cphd" "$out/gotcha.cphd" "$gotcha"/data_3dsar_pass1_az00[1-4]_HH.mat >/dev/null
  gst-launch-1.0 -q cphdsrc location="$out/gotcha.cphd" ! sarpulsecompress window=taylor upsample=4 ! \
    sarbackproject width=400 height=400 pixel-spacing=0.2 interpolation=knab ! \
    sarimage dynamic-range=40 ! pngenc ! filesink location="$out/gotcha.png"
  echo "wrote $out/gotcha.png (Gotcha pass 1 HH, 4 degrees of azimuth, 400 x 400 pixels of 0.2 m)"
else
  echo "Gotcha data not found under $gotcha: skipped the real-data image"
fi
