#!/usr/bin/env bash
# A video file decoded by NVDEC (H.264, H.265 including 10-bit Main10, VP9,
# AV1), then SIFT on the GPU:
#   pipelines/sift-nvdec.sh [BUILD_DIR=build] [OUT_DIR=out/sift-nvdec] [INPUT]
# Writes every frame's keypoints and descriptors to OUT_DIR/features.bin
# (featuresink's binary records, numpy-readable: plugins/sift/README.md) and
# the overlay to OUT_DIR/sift-overlay.mkv. INPUT is any container parsebin
# opens (MP4, Matroska, MPEG-TS); its codec picks the decoder. Without INPUT,
# a 5-second 1280x720 H.264 clip is made first (nvh264enc, x264enc or
# openh264enc).
#
# The decoder hands its frames (NV12, or P010 from 10-bit streams) to sift in
# memory:CUDAMemory (nvcodec's CUDA memory, allocated in the CUDA context
# sift offers it): no copy through the host. sift reads the luma where it is
# and passes the frame on unchanged; siftoverlay draws into it on the device,
# and only then is it downloaded (cudadownload) for the JPEG encoder. A
# build of the plugin without gstreamer-cuda-1.0 does not take
# memory:CUDAMemory: then the decoder downloads and sift uploads (one copy
# through the host per frame).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
out=${2:-$root/out/sift-nvdec}
input=${3:-}
mkdir -p "$out"
export GST_PLUGIN_PATH=$build/plugins${GST_PLUGIN_PATH:+:$GST_PLUGIN_PATH}

nvdec_missing() {
  echo "$1 is missing (gstreamer1.0-plugins-bad with nvcodec, an NVIDIA driver and GPU that decode it)" >&2
  exit 1
}

if [ -z "$input" ]; then
  # The clip made here is H.264: no point making it without its decoder.
  gst-inspect-1.0 nvh264dec >/dev/null 2>&1 || nvdec_missing nvh264dec
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

# The decoder for the file's video codec: the caps parsebin gives its first buffer.
codec=$(gst-launch-1.0 -v filesrc location="$input" ! parsebin ! fakesink num-buffers=1 2>/dev/null |
          grep -m1 -o -E 'video/x-(h264|h265|vp9|av1)' || true)
case "$codec" in
  video/x-h264) decoder=nvh264dec ;;
  video/x-h265) decoder=nvh265dec ;;
  video/x-vp9) decoder=nvvp9dec ;;
  video/x-av1) decoder=nvav1dec ;;
  *) echo "$input: no H.264, H.265, VP9 or AV1 video found" >&2; exit 1 ;;
esac
gst-inspect-1.0 "$decoder" >/dev/null 2>&1 || nvdec_missing "$decoder"

if gst-inspect-1.0 sift | grep -c 'memory:CUDAMemory' >/dev/null; then  # -c reads all: no SIGPIPE under pipefail
  decoded='video/x-raw(memory:CUDAMemory)'
  to_system='cudadownload ! video/x-raw !'
else
  echo "this build of sift does not take memory:CUDAMemory (no gstreamer-cuda-1.0): frames go through the host" >&2
  decoded='video/x-raw'
  to_system=''
fi

# videoconvert: jpegenc takes 8-bit frames only (10-bit P010 becomes I420 there).
gst-launch-1.0 -q filesrc location="$input" ! parsebin ! "$decoder" ! "$decoded" ! \
  sift backend=cuda ! tee name=t \
  t. ! queue ! featuresink location="$out/features.bin" \
  t. ! queue ! siftoverlay ! $to_system videoconvert ! jpegenc ! \
  matroskamux ! filesink location="$out/sift-overlay.mkv"
echo "wrote $out/features.bin and $out/sift-overlay.mkv"
