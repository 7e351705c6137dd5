#include "gst/cudasensing/sift/gstsiftfeaturesmeta.h"

#include <gst/video/video.h>

#include <cstring>

#include "gstcs-frame-geometry.h"

GType gst_sift_descriptor_format_get_type(void) {
  static GType type = 0;
  static const GEnumValue values[] = {
      {GST_SIFT_DESCRIPTOR_OPENCV, "OpenCV's SIFT descriptor bytes (128 x uint8)", "opencv"},
      {GST_SIFT_DESCRIPTOR_FLOAT, "OpenCV's default float descriptor (128 x float32, same values as the bytes)",
       "float"},
      {GST_SIFT_DESCRIPTOR_ROOTSIFT, "RootSIFT: L1-normalised, element-wise square root, unit L2 (128 x float32)",
       "rootsift"},
      {0, nullptr, nullptr}};
  if (g_once_init_enter(&type)) {
    GType t = g_enum_register_static("GstSiftDescriptorFormat", values);
    g_once_init_leave(&type, t);
  }
  return type;
}

gsize gst_sift_descriptor_format_element_size(GstSiftDescriptorFormat format) {
  return format == GST_SIFT_DESCRIPTOR_OPENCV ? 1 : sizeof(gfloat);
}

// Both metas hold positions in the frame (the matches index the features):
// tagged and transformed as gstcs-frame-geometry.h says.

// --- features ---

GType gst_sift_features_meta_api_get_type(void) {
  static GType type = 0;
  if (g_once_init_enter(&type)) {
    GType t = gst_meta_api_type_register("GstSiftFeaturesMetaAPI", gstcs::frame_geometry_tags());
    g_once_init_leave(&type, t);
  }
  return type;
}

static gboolean features_init(GstMeta *meta, gpointer, GstBuffer *) {
  auto *m = reinterpret_cast<GstSiftFeaturesMeta *>(meta);
  m->image_width = m->image_height = 0;
  m->count = 0;
  m->descriptor_format = GST_SIFT_DESCRIPTOR_OPENCV;
  m->descriptor_length = 0;
  m->keypoints = nullptr;
  m->descriptors = nullptr;
  return TRUE;
}

static void features_free(GstMeta *meta, GstBuffer *) {
  auto *m = reinterpret_cast<GstSiftFeaturesMeta *>(meta);
  g_free(m->keypoints);
  g_free(m->descriptors);
  m->keypoints = nullptr;
  m->descriptors = nullptr;
}

gsize gst_sift_features_meta_descriptor_bytes(const GstSiftFeaturesMeta *m) {
  return gsize(m->count) * m->descriptor_length * gst_sift_descriptor_format_element_size(m->descriptor_format);
}

static gboolean features_transform(GstBuffer *dest, GstMeta *meta, GstBuffer *, GQuark type, gpointer data) {
  auto *m = reinterpret_cast<GstSiftFeaturesMeta *>(meta);
  if (!gstcs::transform_keeps_geometry(type, data)) return FALSE;
  GstSiftFeaturesMeta *d = gst_buffer_add_sift_features_meta(dest, m->image_width, m->image_height, m->count,
                                                             m->descriptor_format, m->descriptor_length);
  if (!d) return FALSE;
  if (m->count) {
    std::memcpy(d->keypoints, m->keypoints, sizeof(GstSiftKeypoint) * m->count);
    if (m->descriptors) std::memcpy(d->descriptors, m->descriptors, gst_sift_features_meta_descriptor_bytes(m));
  }
  return TRUE;
}

const GstMetaInfo *gst_sift_features_meta_get_info(void) {
  static const GstMetaInfo *info = nullptr;
  if (g_once_init_enter(&info)) {
    const GstMetaInfo *i = gst_meta_register(GST_SIFT_FEATURES_META_API_TYPE, "GstSiftFeaturesMeta",
                                             sizeof(GstSiftFeaturesMeta), features_init, features_free,
                                             features_transform);
    g_once_init_leave(&info, i);
  }
  return info;
}

GstSiftFeaturesMeta *gst_buffer_add_sift_features_meta(GstBuffer *buffer, guint image_width, guint image_height,
                                                       guint count, GstSiftDescriptorFormat descriptor_format,
                                                       guint descriptor_length) {
  g_return_val_if_fail(GST_IS_BUFFER(buffer), nullptr);
  auto *m =
      reinterpret_cast<GstSiftFeaturesMeta *>(gst_buffer_add_meta(buffer, GST_SIFT_FEATURES_META_INFO, nullptr));
  if (!m) return nullptr;
  m->image_width = image_width;
  m->image_height = image_height;
  m->count = count;
  m->descriptor_format = descriptor_format;
  m->descriptor_length = descriptor_length;
  if (count) {
    m->keypoints = g_new0(GstSiftKeypoint, count);
    const gsize bytes = gst_sift_features_meta_descriptor_bytes(m);
    if (bytes) m->descriptors = g_malloc0(bytes);
  }
  return m;
}

// --- features as a custom meta (a GstStructure) ---

static_assert(sizeof(GstSiftKeypoint) == 28, "the custom meta documents 28-byte keypoint records");
static_assert(sizeof(GstSiftMatch) == 16, "the custom meta documents 16-byte match records");

GstCustomMeta *gst_buffer_add_sift_features_custom_meta(GstBuffer *buffer, const GstSiftFeaturesMeta *meta) {
  g_return_val_if_fail(GST_IS_BUFFER(buffer) && meta, nullptr);
  GstCustomMeta *custom = gstcs::add_geometry_custom_meta(buffer, GST_SIFT_FEATURES_CUSTOM_META);
  if (!custom) return nullptr;
  GEnumClass *formats = G_ENUM_CLASS(g_type_class_ref(GST_TYPE_SIFT_DESCRIPTOR_FORMAT));
  const GEnumValue *format = g_enum_get_value(formats, meta->descriptor_format);
  GstStructure *s = gst_custom_meta_get_structure(custom);
  gst_structure_set(s, "image-width", G_TYPE_UINT, meta->image_width, "image-height", G_TYPE_UINT, meta->image_height,
                    "count", G_TYPE_UINT, meta->count, "descriptor-length", G_TYPE_UINT, meta->descriptor_length,
                    "descriptor-format", G_TYPE_STRING, format ? format->value_nick : "unknown", nullptr);
  g_type_class_unref(formats);
  gstcs::set_bytes_field(s, "keypoints", meta->keypoints, sizeof(GstSiftKeypoint) * meta->count);
  gstcs::set_bytes_field(s, "descriptors", meta->descriptors,
                         meta->descriptors ? gst_sift_features_meta_descriptor_bytes(meta) : 0);
  return custom;
}

// --- matches ---

GType gst_sift_matches_meta_api_get_type(void) {
  static GType type = 0;
  if (g_once_init_enter(&type)) {
    GType t = gst_meta_api_type_register("GstSiftMatchesMetaAPI", gstcs::frame_geometry_tags());
    g_once_init_leave(&type, t);
  }
  return type;
}

static gboolean matches_init(GstMeta *meta, gpointer, GstBuffer *) {
  auto *m = reinterpret_cast<GstSiftMatchesMeta *>(meta);
  m->count = 0;
  m->matches = nullptr;
  m->has_homography = FALSE;
  for (double &h : m->homography) h = 0.0;
  m->train_count = 0;
  return TRUE;
}

static void matches_free(GstMeta *meta, GstBuffer *) {
  auto *m = reinterpret_cast<GstSiftMatchesMeta *>(meta);
  g_free(m->matches);
  m->matches = nullptr;
}

static gboolean matches_transform(GstBuffer *dest, GstMeta *meta, GstBuffer *, GQuark type, gpointer data) {
  auto *m = reinterpret_cast<GstSiftMatchesMeta *>(meta);
  if (!gstcs::transform_keeps_geometry(type, data)) return FALSE;
  GstSiftMatchesMeta *d = gst_buffer_add_sift_matches_meta(dest, m->count);
  if (!d) return FALSE;
  if (m->count) std::memcpy(d->matches, m->matches, sizeof(GstSiftMatch) * m->count);
  d->has_homography = m->has_homography;
  std::memcpy(d->homography, m->homography, sizeof(m->homography));
  d->train_count = m->train_count;
  return TRUE;
}

const GstMetaInfo *gst_sift_matches_meta_get_info(void) {
  static const GstMetaInfo *info = nullptr;
  if (g_once_init_enter(&info)) {
    const GstMetaInfo *i = gst_meta_register(GST_SIFT_MATCHES_META_API_TYPE, "GstSiftMatchesMeta",
                                             sizeof(GstSiftMatchesMeta), matches_init, matches_free,
                                             matches_transform);
    g_once_init_leave(&info, i);
  }
  return info;
}

GstSiftMatchesMeta *gst_buffer_add_sift_matches_meta(GstBuffer *buffer, guint count) {
  g_return_val_if_fail(GST_IS_BUFFER(buffer), nullptr);
  auto *m = reinterpret_cast<GstSiftMatchesMeta *>(gst_buffer_add_meta(buffer, GST_SIFT_MATCHES_META_INFO, nullptr));
  if (!m) return nullptr;
  m->count = count;
  if (count) m->matches = g_new0(GstSiftMatch, count);
  return m;
}

GstCustomMeta *gst_buffer_add_sift_matches_custom_meta(GstBuffer *buffer, const GstSiftMatchesMeta *meta) {
  g_return_val_if_fail(GST_IS_BUFFER(buffer) && meta, nullptr);
  GstCustomMeta *custom = gstcs::add_geometry_custom_meta(buffer, GST_SIFT_MATCHES_CUSTOM_META);
  if (!custom) return nullptr;
  GstStructure *s = gst_custom_meta_get_structure(custom);
  gst_structure_set(s, "count", G_TYPE_UINT, meta->count, "train-count", G_TYPE_UINT, meta->train_count,
                    "has-homography", G_TYPE_BOOLEAN, meta->has_homography, nullptr);
  gstcs::set_bytes_field(s, "matches", meta->matches, sizeof(GstSiftMatch) * meta->count);
  if (meta->has_homography) gstcs::set_doubles_field(s, "homography", meta->homography, 9);
  return custom;
}
