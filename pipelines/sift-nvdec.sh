#!/usr/bin/env bash
# H.264 decoded by NVDEC, then SIFT on the GPU:
#   pipelines/sift-nvdec.sh [BUILD_DIR=build] [OUT_DIR=out/sift-nvdec] [INPUT.mp4]
# Writes every frame's keypoints and descriptors to OUT_DIR/features.bin
# (featuresink's binary records, numpy-readable: plugins/sift/README.md) and
# the overlay to OUT_DIR/sift-overlay.mkv. Without INPUT.mp4, a 5-second
# 1280x720 H.264 clip is made first (nvh264enc, x264enc or openh264enc).
#
# nvh264dec hands its NV12 frames to sift in memory:CUDAMemory (nvcodec's CUDA
# memory, allocated in the CUDA context sift offers it): no copy through the
# host. sift reads the Y plane where it is and passes the frame on
# unchanged; siftoverlay draws into it on the device, and only then is it
# downloaded (cudadownload) for the JPEG encoder. A build of
# the plugin without gstreamer-cuda-1.0 does not take
# memory:CUDAMemory: then the decoder downloads and sift uploads (one copy
# through the host per frame).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
out=${2:-$root/out/sift-nvdec}
input=${3:-}
mkdir -p "$out"
export GST_PLUGIN_PATH=$build/plugins${GST_PLUGIN_PATH:+:$GST_PLUGIN_PATH}
gst-inspect-1.0 nvh264dec >/dev/null 2>&1 || { echo "nvh264dec is missing (gstreamer1.0-plugins-bad with nvcodec, and an NVIDIA driver)" >&2; exit 1; }

if [ -z "$input" ]; then
  if gst-inspect-1.0 nvh264enc >/dev/null 2>&1; then
    encoder=nvh264enc
  elif gst-inspect-1.0 x264enc >/dev/null 2>&1; then
    encoder=x264enc
  elif gst-inspect-1.0 openh264enc >/dev/null 2>&1; then
    encoder=openh264enc
  else
    echo "no INPUT.mp4 given and no H.264 encoder (nvh264enc, x264enc, openh264enc) to make one" >&2
    exit 1
  fi
  input=$out/input.mp4
  gst-launch-1.0 -q videotestsrc num-buffers=150 pattern=pinwheel ! \
    video/x-raw,width=1280,height=720,framerate=30/1 ! videoconvert ! video/x-raw,format=I420 ! $encoder ! \
    h264parse ! mp4mux ! filesink location="$input"
fi

if gst-inspect-1.0 sift | grep -c 'memory:CUDAMemory' >/dev/null; then  # -c reads all: no SIGPIPE under pipefail
  decoded='video/x-raw(memory:CUDAMemory),format=NV12'
  to_system='cudadownload ! video/x-raw,format=NV12 !'
else
  echo "this build of sift does not take memory:CUDAMemory (no gstreamer-cuda-1.0): frames go through the host" >&2
  decoded='video/x-raw,format=NV12'
  to_system=''
fi

gst-launch-1.0 -q filesrc location="$input" ! qtdemux ! h264parse ! nvh264dec ! "$decoded" ! \
  sift backend=cuda ! tee name=t \
  t. ! queue ! featuresink location="$out/features.bin" \
  t. ! queue ! siftoverlay ! $to_system jpegenc ! \
  matroskamux ! filesink location="$out/sift-overlay.mkv"
echo "wrote $out/features.bin and $out/sift-overlay.mkv"
