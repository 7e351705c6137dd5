#!/usr/bin/env bash
# Two images matched with SIFT:
#   pipelines/sift-match.sh [BUILD_DIR=build] [OUT_DIR=out/sift-match] [REFERENCE.png] [QUERY.png]
# The reference's features go to OUT_DIR/reference.bin (featuresink); the
# query is matched against them (ratio test, mutual check, RANSAC
# homography), its matched keypoints are drawn into OUT_DIR/query-keypoints.png
# and siftmatch's summary (matches, inliers, homography from query to
# reference pixels) is printed. Without images, the query is scikit-image's
# astronaut picture and the reference the same picture rotated by 20 degrees
# and scaled by 0.8 (made here with rotate and videoscale).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
out=${2:-$root/out/sift-match}
reference=${3:-}
query=${4:-}
mkdir -p "$out"
export GST_PLUGIN_PATH=$build/plugins${GST_PLUGIN_PATH:+:$GST_PLUGIN_PATH}

if [ -z "$reference" ] || [ -z "$query" ]; then
  query=${CS_SKIMAGE_DATA:-/usr/lib/python3/dist-packages/skimage/data}/astronaut.png
  [ -f "$query" ] || { echo "no images given and $query is missing (install python3-skimage)" >&2; exit 1; }
  reference=$out/reference.png
  gst-launch-1.0 -q filesrc location="$query" ! pngdec ! videoconvert ! rotate angle=0.349 ! videoscale ! \
    video/x-raw,width=410,height=410 ! videoconvert ! pngenc ! filesink location="$reference"
fi

image() {  # a PNG or JPEG file as one GRAY8 frame
  local decoder=pngdec
  case "$1" in *.jpg|*.jpeg|*.JPG|*.JPEG) decoder=jpegdec ;; esac
  echo "filesrc location=$1 ! $decoder ! videoconvert ! video/x-raw,format=GRAY8 ! imagefreeze num-buffers=1"
}

gst-launch-1.0 -q $(image "$reference") ! sift ! featuresink location="$out/reference.bin"
# -m prints the messages; of them, siftmatch's: keypoints, matches, inliers, homography.
gst-launch-1.0 -m $(image "$query") ! sift ! \
  siftmatch reference="$out/reference.bin" mutual-check=true homography=true post-messages=true ! \
  siftoverlay color=0xff0000 ! videoconvert ! pngenc ! filesink location="$out/query-keypoints.png" |
  grep -o 'siftmatch, .*' | tr -d ';'
echo "wrote $out/reference.bin and $out/query-keypoints.png"
