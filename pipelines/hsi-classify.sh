#!/usr/bin/env bash
# Hyperspectral classification of an AVIRIS-NG tile against the USGS library:
#   pipelines/hsi-classify.sh [BUILD_DIR=build] [OUT_DIR=out/hsi] [CUBE.hdr] [LIBRARY.hdr]
# Defaults use the shared real data. Two pipelines (CUDA when a device is
# present, else the CPU):
#   1. the ENVI cube in one block -> hsiclassify -> hsicolorize -> PNG;
#   2. the same cube as a push-broom line stream (one line per buffer): the
#      class map to an ENVI classification file and, from hsiclassify's rules
#      pad, every pixel's spectral angle to each class as an ENVI float cube;
#   3. that line stream's colours as a display would show them scrolling by
#      (hsiwaterfall: the last 8 lines, a frame every 2 lines) into PNGs
#      (autovideosink in place of pngenc shows them live).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
out=${2:-$root/out/hsi}
data=${CS_SHARED_DATA:-$root/../shared/data}
cube=${3:-$data/hsi/aviris-ng/ang20140912t192359_corr_v1c_img_400-410_10-20.hdr}
library=${4:-$data/hsi/usgs/s07_AV95_envi.hdr}
mkdir -p "$out"
export GST_PLUGIN_PATH=$build/plugins${GST_PLUGIN_PATH:+:$GST_PLUGIN_PATH}

gst-launch-1.0 -q envisrc location="$cube" lines-per-buffer=100000 ! hsiclassify library="$library" ! \
  hsicolorize ! pngenc ! filesink location="$out/classes.png"
gst-launch-1.0 -q envisrc location="$cube" lines-per-buffer=1 ! hsiclassify name=c library="$library" ! \
  queue ! envisink location="$out/classes.img" \
  c.rules ! queue ! envisink location="$out/rules.img"
gst-launch-1.0 -q envisrc location="$cube" lines-per-buffer=1 ! hsiclassify library="$library" ! hsicolorize ! \
  hsiwaterfall lines=8 step=2 ! pngenc ! multifilesink location="$out/waterfall-%02d.png"
bands=$(sed -n 's/^bands *= *//p' "$out/rules.hdr")
frames=$(ls "$out"/waterfall-*.png | wc -l)
echo "wrote $out/classes.png, $out/classes.img and $out/rules.img (+ .hdr): $bands classes; $frames waterfall frames"
