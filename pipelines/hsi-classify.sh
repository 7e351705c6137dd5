#!/usr/bin/env bash
# Hyperspectral classification of an AVIRIS-NG tile against the USGS library:
#   pipelines/hsi-classify.sh [BUILD_DIR=build] [OUT_DIR=out/hsi] [CUBE.hdr] [LIBRARY.hdr]
# Defaults use the shared real data. Writes a colour class map (PNG) and an
# ENVI classification file.
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
gst-launch-1.0 -q envisrc location="$cube" lines-per-buffer=1 ! hsiclassify library="$library" ! \
  envisink location="$out/classes.img"
echo "wrote $out/classes.png and $out/classes.img (+ .hdr)"
