#!/usr/bin/env bash
# Live SIFT keypoints on a camera, shown in a window:
#   pipelines/sift-camera.sh [BUILD_DIR=build] [DEVICE=/dev/video0] [N_FEATURES=500]
# v4l2src gives the camera's own format; videoconvert makes BGRx, which sift
# reads (its luma computed on the device on CUDA) and siftoverlay draws on.
# sift runs on CUDA when a device is present, else OpenCV on the CPU (slower:
# frames are dropped by the display's clock, not queued). Stop with Ctrl-C.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
device=${2:-/dev/video0}
n_features=${3:-500}
export GST_PLUGIN_PATH=$build/plugins${GST_PLUGIN_PATH:+:$GST_PLUGIN_PATH}
[ -e "$device" ] || { echo "no camera at $device" >&2; exit 1; }

# leaky queue: a slow frame drops the waiting one instead of adding latency.
exec gst-launch-1.0 v4l2src device="$device" ! videoconvert ! video/x-raw,format=BGRx ! \
  queue max-size-buffers=1 leaky=downstream ! sift n-features="$n_features" ! siftoverlay ! \
  videoconvert ! autovideosink sync=false
