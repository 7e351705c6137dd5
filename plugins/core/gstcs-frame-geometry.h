// For metas that hold positions in a frame or image (SIFT keypoints and
// matches, a SAR image's grid): the tags that say so, and which transforms
// keep them valid. Header-only, shared by the meta libraries.
#pragma once

#include <gst/gst.h>
#include <gst/video/video.h>

namespace gstcs {

// Depends on the frame's size and orientation, so that elements that crop,
// flip, rotate, box or scale frames (videocrop, videoflip, videobox,
// videoscale...) drop the meta instead of copying stale positions, while
// copies of the whole frame keep it. Not tied to memory or colours.
inline const gchar **frame_geometry_tags() {
  static const gchar *tags[] = {GST_META_TAG_VIDEO_STR, GST_META_TAG_VIDEO_SIZE_STR,
                                GST_META_TAG_VIDEO_ORIENTATION_STR, nullptr};
  return tags;
}

// Whether a meta transform keeps the frame's geometry: a copy of the whole
// buffer, or a "scale" to the same size (videoconvert asks that of
// size-tagged metas).
inline bool transform_keeps_geometry(GQuark type, gpointer data) {
  if (GST_META_TRANSFORM_IS_COPY(type)) return !static_cast<GstMetaTransformCopy *>(data)->region;
  if (GST_VIDEO_META_TRANSFORM_IS_SCALE(type)) {
    const auto *scale = static_cast<GstVideoMetaTransform *>(data);
    return GST_VIDEO_INFO_WIDTH(scale->in_info) == GST_VIDEO_INFO_WIDTH(scale->out_info) &&
           GST_VIDEO_INFO_HEIGHT(scale->in_info) == GST_VIDEO_INFO_HEIGHT(scale->out_info);
  }
  return false;  // unknown transforms would move the positions
}

}  // namespace gstcs
