#!/usr/bin/env bash
# Continuous (video) SAR from a simulated stream:
#   pipelines/sar-video.sh [BUILD_DIR=build] [OUT_DIR=out/sar-video]
# An aperture of 256 pulses slides by 32 pulses per frame (each frame moves
# the previous image on by adding 32 pulses and subtracting 32; every 16th
# is recomputed); the frames, on one fixed dB scale, become OUT_DIR/video-sar.mp4
# (H.264) when x264enc and mp4mux are installed, else a PNG sequence
# OUT_DIR/frame-NNNN.png.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
out=${2:-$root/out/sar-video}
mkdir -p "$out"
export GST_PLUGIN_PATH=$build/plugins${GST_PLUGIN_PATH:+:$GST_PLUGIN_PATH}

# A spotlight pass staring at a scene of point targets: each frame is the
# scene seen from a little further along the flight line.
targets="-30,0,0,1;-15,10,0,0.8;0,-5,0,1;15,8,0,0.6;30,-12,0,0.9;5,20,0,0.5"
source="sarsim mode=spotlight num-pulses=2048 prf=250 pulses-per-buffer=32 snr=10 targets=$targets ! \
  sarpulsecompress window=hamming upsample=4 ! \
  sarbackproject width=320 height=192 pixel-spacing=0.25 aperture=256 stride=32 refresh-interval=16 ! \
  sarimage fixed-reference=true reference-level=50 dynamic-range=40"
if gst-inspect-1.0 x264enc >/dev/null 2>&1 && gst-inspect-1.0 mp4mux >/dev/null 2>&1; then
  gst-launch-1.0 -q $source ! videoconvert ! video/x-raw,format=I420 ! x264enc ! mp4mux ! \
    filesink location="$out/video-sar.mp4"
  echo "wrote $out/video-sar.mp4"
else
  rm -f "$out"/frame-*.png
  gst-launch-1.0 -q $source ! pngenc ! multifilesink location="$out/frame-%04d.png"
  echo "x264enc or mp4mux missing: wrote $(ls "$out"/frame-*.png | wc -l) frames as $out/frame-NNNN.png"
fi
