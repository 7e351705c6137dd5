#!/usr/bin/env bash
# SIFT keypoints drawn into a video file:
#   pipelines/sift-video.sh [BUILD_DIR=build] [OUT_DIR=out/sift-video] [INPUT_VIDEO]
# INPUT_VIDEO is any file decodebin plays; without one, a 3-second clip of
# scikit-image's astronaut picture (a still, python3-skimage) is made first.
# sift runs on CUDA when a device is present, else OpenCV on the CPU; the
# overlay goes to OUT_DIR/sift-overlay.mp4 (H.264) when x264enc and mp4mux
# are installed, else OUT_DIR/sift-overlay.mkv (Motion JPEG).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
out=${2:-$root/out/sift-video}
input=${3:-}
mkdir -p "$out"
export GST_PLUGIN_PATH=$build/plugins${GST_PLUGIN_PATH:+:$GST_PLUGIN_PATH}

if [ -z "$input" ]; then
  picture=${CS_SKIMAGE_DATA:-/usr/lib/python3/dist-packages/skimage/data}/astronaut.png
  [ -f "$picture" ] || { echo "no INPUT_VIDEO given and $picture is missing (install python3-skimage)" >&2; exit 1; }
  input=$out/input.mkv
  # 640x360 of the picture scaled to 1024x1024.
  gst-launch-1.0 -q filesrc location="$picture" ! pngdec ! imagefreeze num-buffers=90 ! \
    video/x-raw,framerate=30/1 ! videoconvert ! videoscale ! video/x-raw,width=1024,height=1024 ! \
    videocrop top=332 bottom=332 left=0 right=384 ! jpegenc ! matroskamux ! filesink location="$input"
fi

if gst-inspect-1.0 x264enc >/dev/null 2>&1 && gst-inspect-1.0 mp4mux >/dev/null 2>&1; then
  encode="x264enc ! mp4mux"
  result=$out/sift-overlay.mp4
else
  encode="jpegenc ! matroskamux"
  result=$out/sift-overlay.mkv
fi
# I420, what decoders give and encoders take: sift reads its luma plane (on the device on CUDA),
# siftoverlay draws in colour into luma and chroma; no conversion on either side.
gst-launch-1.0 -q filesrc location="$input" ! decodebin ! videoconvert ! video/x-raw,format=I420 ! \
  sift n-features=1000 ! siftoverlay color=0x00ff00 ! $encode ! filesink location="$result"
echo "wrote $result"
