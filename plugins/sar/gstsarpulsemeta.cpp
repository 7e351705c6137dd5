#include <gst/cudasensing/sar/gstsarpulsemeta.h>

#include <cstring>

#include "gstcs-frame-geometry.h"

// Bindings read the records with a dtype of 8-byte fields: no padding.
static_assert(sizeof(GstSarPulseParameters) == 50 * 8, "GstSarPulseParameters has 50 fields of 8 bytes");

void gst_sar_pulse_parameters_init(GstSarPulseParameters *params) {
  std::memset(params, 0, sizeof(*params));
  params->amp_sf = 1.0;
  params->signal = 1;
}

GType gst_sar_pulse_meta_api_get_type(void) {
  static GType type = 0;
  // No tags: the meta describes pulses, not memory or a video format, so
  // every transform that copies metadata keeps it.
  static const gchar *tags[] = {nullptr};
  if (g_once_init_enter(&type)) g_once_init_leave(&type, gst_meta_api_type_register("GstSarPulseMetaAPI", tags));
  return type;
}

static gboolean pulse_meta_init(GstMeta *meta, gpointer, GstBuffer *) {
  auto *m = reinterpret_cast<GstSarPulseMeta *>(meta);
  m->first_pulse = 0;
  m->n_pulses = 0;
  m->pulses = nullptr;
  return TRUE;
}

static void pulse_meta_free(GstMeta *meta, GstBuffer *) {
  auto *m = reinterpret_cast<GstSarPulseMeta *>(meta);
  g_free(m->pulses);
  m->pulses = nullptr;
  m->n_pulses = 0;
}

static gboolean pulse_meta_transform(GstBuffer *dest, GstMeta *meta, GstBuffer *, GQuark type, gpointer data) {
  auto *m = reinterpret_cast<GstSarPulseMeta *>(meta);
  if (!GST_META_TRANSFORM_IS_COPY(type)) return FALSE;  // other transforms do not keep pulse rows
  auto *copy = static_cast<GstMetaTransformCopy *>(data);
  // A copy of part of a buffer no longer holds whole rows that we could name.
  if (copy->region) return TRUE;
  return gst_buffer_add_sar_pulse_meta(dest, m->first_pulse, m->n_pulses, m->pulses) != nullptr;
}

const GstMetaInfo *gst_sar_pulse_meta_get_info(void) {
  static const GstMetaInfo *info = nullptr;
  if (g_once_init_enter(&info)) {
    const GstMetaInfo *mi = gst_meta_register(GST_SAR_PULSE_META_API_TYPE, "GstSarPulseMeta", sizeof(GstSarPulseMeta),
                                              pulse_meta_init, pulse_meta_free, pulse_meta_transform);
    g_once_init_leave(&info, mi);
  }
  return info;
}

GstSarPulseMeta *gst_buffer_add_sar_pulse_meta(GstBuffer *buffer, guint64 first_pulse, guint n_pulses,
                                               const GstSarPulseParameters *pulses) {
  g_return_val_if_fail(GST_IS_BUFFER(buffer), nullptr);
  auto *m = reinterpret_cast<GstSarPulseMeta *>(gst_buffer_add_meta(buffer, GST_SAR_PULSE_META_INFO, nullptr));
  if (!m) return nullptr;
  m->first_pulse = first_pulse;
  m->n_pulses = n_pulses;
  m->pulses = g_new(GstSarPulseParameters, n_pulses ? n_pulses : 1);
  if (pulses) {
    std::memcpy(m->pulses, pulses, sizeof(GstSarPulseParameters) * n_pulses);
  } else {
    for (guint i = 0; i < n_pulses; ++i) gst_sar_pulse_parameters_init(&m->pulses[i]);
  }
  return m;
}

GstCustomMeta *gst_buffer_add_sar_pulse_custom_meta(GstBuffer *buffer, const GstSarPulseMeta *meta) {
  g_return_val_if_fail(GST_IS_BUFFER(buffer) && meta, nullptr);
  GstCustomMeta *custom = gstcs::add_untagged_custom_meta(buffer, GST_SAR_PULSE_CUSTOM_META);
  if (!custom) return nullptr;
  GstStructure *s = gst_custom_meta_get_structure(custom);
  gst_structure_set(s, "first-pulse", G_TYPE_UINT64, meta->first_pulse, "n-pulses", G_TYPE_UINT, meta->n_pulses,
                    "record-size", G_TYPE_UINT, guint(sizeof(GstSarPulseParameters)), nullptr);
  gstcs::set_bytes_field(s, "pulses", meta->pulses, sizeof(GstSarPulseParameters) * meta->n_pulses);
  return custom;
}
