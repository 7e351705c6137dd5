#!/usr/bin/env bash
# The main demo: runs on the built tree with an embedded input (no file, no GPU
# needed) and writes its results to OUT_DIR.
#   pipelines/demo.sh [BUILD_DIR=build] [OUT_DIR=out/demo]
# Stage 1 (foundation): video frames go through gpuupload ! gpudownload (device
# memory and back when a GPU is present, pass-through otherwise); the frames
# must come back bit-identical, and one is written as a PNG.
# Stage 2 (SAR): simulated phase history of point targets is pulse-compressed,
# backprojected and written as a dB picture, out/demo/sar-image.png.
# Stage 3 (SIFT): 30 moving test-card frames through sift; the last frame with
# its keypoints drawn, out/demo/sift-overlay.png, and every frame's features in
# out/demo/sift-features.yml (OpenCV FileStorage).
# Stage 4 (hyperspectral): a synthetic scene of five materials with known
# classes (tools/synthetic_hsi.py, numpy) is classified by spectral angle
# against the materials' library: out/demo/hsi-classes.png, and the share of
# pure pixels whose class agrees with the scene's truth.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
out=${2:-$root/out/demo}
mkdir -p "$out"
export GST_PLUGIN_PATH=$build/plugins${GST_PLUGIN_PATH:+:$GST_PLUGIN_PATH}
export GST_REGISTRY=${GST_REGISTRY:-$build/demo-registry.bin}

frames=120
video="videotestsrc pattern=smpte num-buffers=$frames ! video/x-raw,format=RGBA,width=1280,height=720,framerate=30/1"

echo "== reference frames (no GPU elements)"
gst-launch-1.0 -q $video ! filesink location="$out/reference.rgba"
echo "== the same frames through gpuupload ! gpudownload"
start=$(date +%s.%N)
gst-launch-1.0 -q $video ! gpuupload ! gpudownload ! filesink location="$out/roundtrip.rgba"
end=$(date +%s.%N)
echo "== one frame as PNG"
gst-launch-1.0 -q videotestsrc pattern=smpte num-buffers=1 ! video/x-raw,format=RGBA,width=1280,height=720 ! \
  gpuupload ! gpudownload ! videoconvert ! pngenc ! filesink location="$out/frame.png"

echo "== SAR image from simulated phase history"
sar_start=$(date +%s.%N)
gst-launch-1.0 -q sarsim num-pulses=384 prf=250 targets="0,0,0,1;12,-9,0,0.6;-18,14,0,0.8;-6,-22,0,0.4" ! \
  sarpulsecompress window=taylor upsample=4 ! sarbackproject width=256 height=256 pixel-spacing=0.25 ! \
  sarimage dynamic-range=50 ! pngenc ! filesink location="$out/sar-image.png"
sar_end=$(date +%s.%N)

echo "== SIFT on moving test-card frames"
sift_start=$(date +%s.%N)
gst-launch-1.0 -q videotestsrc pattern=smpte num-buffers=30 horizontal-speed=2 ! \
  video/x-raw,format=RGBA,width=640,height=480 ! sift ! tee name=t \
  t. ! queue ! siftoverlay ! videoconvert ! pngenc ! multifilesink location="$out/sift-overlay.png" \
  t. ! queue ! featuresink format=opencv-yaml location="$out/sift-features.yml"
sift_end=$(date +%s.%N)

echo "== hyperspectral classification of a synthetic scene"
python=${CS_PYTHON:-/usr/bin/python3}
"$python" "$root/tools/synthetic_hsi.py" "$out/hsi"
hsi_start=$(date +%s.%N)
gst-launch-1.0 -q envisrc location="$out/hsi/scene.hdr" lines-per-buffer=100000 ! \
  hsiclassify library="$out/hsi/materials.hdr" ! tee name=c \
  c. ! queue ! hsicolorize ! pngenc ! filesink location="$out/hsi-classes.png" \
  c. ! queue ! filesink location="$out/hsi/classes.u8"
hsi_end=$(date +%s.%N)
hsi_agreement=$("$python" -c "
import numpy as np, sys
truth = np.fromfile(sys.argv[1], np.uint8); got = np.fromfile(sys.argv[2], np.uint8)
pure = truth > 0
print(f'{100.0 * np.mean(truth[pure] == got[pure]):.2f}')" "$out/hsi/truth.u8" "$out/hsi/classes.u8")

backend=$(GST_DEBUG=gpuupload:4,csbasetransform:4 gst-launch-1.0 -q videotestsrc num-buffers=1 ! gpuupload ! fakesink 2>&1 |
          grep -o 'backend: [a-z]*' | head -1 | cut -d' ' -f2)
if cmp -s "$out/reference.rgba" "$out/roundtrip.rgba"; then identical=yes; else identical=NO; fi
{
  echo "frames:                 $frames (1280x720 RGBA)"
  echo "backend:                ${backend:-unknown}"
  echo "round trip identical:   $identical"
  echo "wall time (with start): $(awk "BEGIN{printf \"%.2f\", $end - $start}") s"
  echo "picture:                $out/frame.png"
  echo "SIFT:                   $out/sift-overlay.png, features of 30 frames in $out/sift-features.yml ($(awk "BEGIN{printf \"%.2f\", $sift_end - $sift_start}") s)"
  echo "hyperspectral:          $out/hsi-classes.png ($hsi_agreement% of pure pixels in their true class, $(awk "BEGIN{printf \"%.2f\", $hsi_end - $hsi_start}") s)"
  echo "SAR image:              $out/sar-image.png (4 point targets, 384 pulses, 256x256 pixels of 0.25 m, $(awk "BEGIN{printf \"%.2f\", $sar_end - $sar_start}") s)"
} | tee "$out/summary.txt"
rm -f "$out/reference.rgba" "$out/roundtrip.rgba"
[ "$identical" = yes ]
