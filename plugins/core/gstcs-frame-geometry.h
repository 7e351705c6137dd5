// For metas that hold positions in a frame or image (SIFT keypoints and
// matches, a SAR image's grid): the tags that say so, which transforms keep
// them valid, and GstCustomMetas (for language bindings) carried the same
// way, or, for metas of no geometry, by every copy. Header-only, shared by
// the meta libraries.
#pragma once

#include <gst/gst.h>
#include <gst/video/video.h>

#include <mutex>

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

namespace detail {
inline gboolean copy_field(GQuark field, const GValue *value, gpointer into) {
  gst_structure_id_set_value(static_cast<GstStructure *>(into), field, value);
  return TRUE;
}

// Transforms that `keeps` accepts carry a copy of the structure.
template <bool (*keeps)(GQuark, gpointer)>
gboolean custom_transform(GstBuffer *dest, GstCustomMeta *meta, GstBuffer *, GQuark type, gpointer data, gpointer) {
  if (!keeps(type, data)) return FALSE;
  GstCustomMeta *copy = gst_buffer_add_custom_meta(dest, g_type_name(reinterpret_cast<GstMeta *>(meta)->info->type));
  if (!copy) return FALSE;
  gst_structure_foreach(gst_custom_meta_get_structure(meta), copy_field, gst_custom_meta_get_structure(copy));
  return TRUE;
}

inline bool is_whole_copy(GQuark type, gpointer data) {
  return GST_META_TRANSFORM_IS_COPY(type) && !static_cast<GstMetaTransformCopy *>(data)->region;
}

// Adds an empty GstCustomMeta `name`, registered on first use with `tags`
// and carried by the transforms that `keeps` accepts.
template <bool (*keeps)(GQuark, gpointer)>
GstCustomMeta *add_custom_meta(GstBuffer *buffer, const char *name, const gchar **tags) {
  static std::mutex registering;
  {
    std::lock_guard<std::mutex> lock(registering);
    if (!gst_meta_get_info(name)) gst_meta_register_custom(name, tags, custom_transform<keeps>, nullptr, nullptr);
  }
  return gst_buffer_add_custom_meta(buffer, name);
}
}  // namespace detail

// Adds an empty GstCustomMeta `name` (registered on first use, tagged with
// frame_geometry_tags and carried by transform_keeps_geometry) for the caller
// to fill its structure. The name must not be a GType's (an element's type
// name such as GstSarImage): the meta's implementation is registered as one.
inline GstCustomMeta *add_geometry_custom_meta(GstBuffer *buffer, const char *name) {
  return detail::add_custom_meta<transform_keeps_geometry>(buffer, name, frame_geometry_tags());
}

// The same for a meta tied to no frame geometry, memory or format (the
// pulses of a SAR block): untagged, so every element that copies metadata
// keeps it; carried by copies of the whole buffer, as the struct metas are.
inline GstCustomMeta *add_untagged_custom_meta(GstBuffer *buffer, const char *name) {
  static const gchar *no_tags[] = {nullptr};
  return detail::add_custom_meta<detail::is_whole_copy>(buffer, name, no_tags);
}

// Sets `field` of `s` to a copy of `size` bytes as GBytes.
inline void set_bytes_field(GstStructure *s, const char *field, const void *data, gsize size) {
  GBytes *bytes = g_bytes_new(data, size);
  gst_structure_set(s, field, G_TYPE_BYTES, bytes, nullptr);
  g_bytes_unref(bytes);
}

// Sets `field` of `s` to an array of `count` doubles.
inline void set_doubles_field(GstStructure *s, const char *field, const double *values, int count) {
  GValue array = G_VALUE_INIT, element = G_VALUE_INIT;
  gst_value_array_init(&array, guint(count));
  g_value_init(&element, G_TYPE_DOUBLE);
  for (int i = 0; i < count; ++i) {
    g_value_set_double(&element, values[i]);
    gst_value_array_append_value(&array, &element);
  }
  g_value_unset(&element);
  gst_structure_take_value(s, field, &array);
}

}  // namespace gstcs
