#!/usr/bin/env bash
# Jasper Ridge as a colour class map:
#   pipelines/hsi-jasper.sh [BUILD_DIR=build] [OUT_DIR=out/hsi-jasper]
# Converts the MATLAB file of the shared data to ENVI (tools/jasper_to_envi.py:
# the scene, its class means as a spectral library, the abundance labels),
# classifies the scene by spectral angle against the class means with no
# threshold, and writes the class map and the labels as PNGs in the same
# colours (the labels' class lookup), plus an ENVI classification file.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
out=${2:-$root/out/hsi-jasper}
data=${CS_SHARED_DATA:-$root/../shared/data}
mat=$data/hsi/jasper/jasperRidge2_R198.mat
if [ ! -f "$mat" ]; then
  echo "$mat is absent (see ../shared/data/README.md)" >&2
  exit 1
fi
mkdir -p "$out"
export GST_PLUGIN_PATH=$build/plugins${GST_PLUGIN_PATH:+:$GST_PLUGIN_PATH}
"${CS_PYTHON:-/usr/bin/python3}" "$root/tools/jasper_to_envi.py" "$mat" "$out"

# threshold=4 rad: above any angle, so every pixel gets its nearest class.
gst-launch-1.0 -q envisrc location="$out/jasper_ridge.hdr" lines-per-buffer=100000 ! \
  hsiclassify library="$out/jasper_class_means.hdr" method=sam threshold=4 ! tee name=t ! \
  queue ! hsicolorize lookup="$out/jasper_labels.hdr" ! pngenc ! filesink location="$out/classes.png" \
  t. ! queue ! envisink location="$out/classes.img"
gst-launch-1.0 -q filesrc location="$out/jasper_labels.img" ! \
  rawvideoparse format=gray8 width=100 height=100 framerate=0/1 ! \
  hsicolorize lookup="$out/jasper_labels.hdr" ! pngenc ! filesink location="$out/labels.png"
echo "wrote $out/classes.png (SAM vs class means), $out/labels.png (argmax of the abundances), $out/classes.img"
