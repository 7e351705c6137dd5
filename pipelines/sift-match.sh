#!/usr/bin/env bash
# Two images matched with SIFT:
#   pipelines/sift-match.sh [BUILD_DIR=build] [OUT_DIR=out/sift-match] [REFERENCE.png] [QUERY.png]
# The query is matched against the reference picture (siftmatch finds its
# features; ratio test, mutual check, RANSAC homography), its matched
# keypoints are drawn into OUT_DIR/query-keypoints.png and siftmatch's
# summary (matches, inliers, homography from query to reference pixels) is
# printed. The reference's features are also written to OUT_DIR/reference.bin
# (featuresink), which siftmatch takes as well, and the query matched against
# them must give the same summary. Without images, the query is scikit-image's
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

image() {  # a picture as one frame, decoded as siftmatch decodes its reference (a JPEG's Y plane, RGB's luma)
  echo "filesrc location=$1 ! decodebin ! videoconvert dither=none ! imagefreeze num-buffers=1"
}

# -m prints the messages; of them, siftmatch's: keypoints, matches, inliers, homography.
match() {  # match REFERENCE [OVERLAY.png]
  local draw="fakesink"
  [ -n "${2:-}" ] && draw="siftoverlay color=0xff0000 ! videoconvert ! pngenc ! filesink location=$2"
  gst-launch-1.0 -m $(image "$query") ! sift ! \
    siftmatch reference="$1" mutual-check=true homography=true post-messages=true ! $draw |
    grep -o 'siftmatch, .*' | tr -d ';'
}
from_picture=$(match "$reference" "$out/query-keypoints.png")
echo "$from_picture"
gst-launch-1.0 -q $(image "$reference") ! sift ! featuresink location="$out/reference.bin"
from_file=$(match "$out/reference.bin")
[ "$from_file" = "$from_picture" ] || { echo "the features file gave another result: $from_file" >&2; exit 1; }
echo "wrote $out/reference.bin and $out/query-keypoints.png"
