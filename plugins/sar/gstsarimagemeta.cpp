#include <gst/cudasensing/sar/gstsarimagemeta.h>

#include <cstring>

#include "gstcs-frame-geometry.h"

// Tagged as depending on the image's size and orientation: copies of the
// whole image keep it (and sarimage's frames of it), elements that crop,
// flip or scale the frames drop it instead of passing a stale grid on.
GType gst_sar_image_meta_api_get_type(void) {
  static GType type = 0;
  if (g_once_init_enter(&type))
    g_once_init_leave(&type, gst_meta_api_type_register("GstSarImageMetaAPI", gstcs::frame_geometry_tags()));
  return type;
}

static gboolean image_meta_init(GstMeta *meta, gpointer, GstBuffer *) {
  auto *m = reinterpret_cast<GstSarImageMeta *>(meta);
  std::memset(reinterpret_cast<char *>(m) + sizeof(GstMeta), 0, sizeof(*m) - sizeof(GstMeta));
  return TRUE;
}

static gboolean image_meta_transform(GstBuffer *dest, GstMeta *meta, GstBuffer *, GQuark type, gpointer data) {
  auto *m = reinterpret_cast<GstSarImageMeta *>(meta);
  if (!gstcs::transform_keeps_geometry(type, data)) return FALSE;
  GstSarImageMeta *copy = gst_buffer_add_sar_image_meta(dest);
  if (!copy) return FALSE;
  std::memcpy(reinterpret_cast<char *>(copy) + sizeof(GstMeta), reinterpret_cast<const char *>(m) + sizeof(GstMeta),
              sizeof(*m) - sizeof(GstMeta));
  return TRUE;
}

const GstMetaInfo *gst_sar_image_meta_get_info(void) {
  static const GstMetaInfo *info = nullptr;
  if (g_once_init_enter(&info)) {
    const GstMetaInfo *mi = gst_meta_register(GST_SAR_IMAGE_META_API_TYPE, "GstSarImageMeta", sizeof(GstSarImageMeta),
                                              image_meta_init, nullptr, image_meta_transform);
    g_once_init_leave(&info, mi);
  }
  return info;
}

GstSarImageMeta *gst_buffer_add_sar_image_meta(GstBuffer *buffer) {
  g_return_val_if_fail(GST_IS_BUFFER(buffer), nullptr);
  return reinterpret_cast<GstSarImageMeta *>(gst_buffer_add_meta(buffer, GST_SAR_IMAGE_META_INFO, nullptr));
}

GstCustomMeta *gst_buffer_add_sar_image_custom_meta(GstBuffer *buffer, const GstSarImageMeta *meta) {
  g_return_val_if_fail(GST_IS_BUFFER(buffer) && meta, nullptr);
  GstCustomMeta *custom = gstcs::add_geometry_custom_meta(buffer, GST_SAR_IMAGE_CUSTOM_META);
  if (!custom) return nullptr;
  GstStructure *s = gst_custom_meta_get_structure(custom);
  gst_structure_set(s, "width", G_TYPE_UINT, meta->width, "height", G_TYPE_UINT, meta->height, "n-pulses", G_TYPE_UINT,
                    meta->n_pulses, "spacing-x", G_TYPE_DOUBLE, meta->spacing_x, "spacing-y", G_TYPE_DOUBLE,
                    meta->spacing_y, "first-pulse-time", G_TYPE_DOUBLE, meta->first_pulse_time, "last-pulse-time",
                    G_TYPE_DOUBLE, meta->last_pulse_time, "first-pulse", G_TYPE_UINT64, meta->first_pulse,
                    "last-pulse", G_TYPE_UINT64, meta->last_pulse, nullptr);
  gstcs::set_doubles_field(s, "centre", meta->centre, 3);
  gstcs::set_doubles_field(s, "origin", meta->origin, 3);
  gstcs::set_doubles_field(s, "axis-x", meta->axis_x, 3);
  gstcs::set_doubles_field(s, "axis-y", meta->axis_y, 3);
  return custom;
}
