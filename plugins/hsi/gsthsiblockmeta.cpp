#include "gst/cudasensing/hsi/gsthsiblockmeta.h"

GType gst_hsi_block_meta_api_get_type(void) {
  static GType type = 0;
  static const gchar *tags[] = {nullptr};  // no tags: not tied to memory, format or size
  if (g_once_init_enter(&type)) {
    GType t = gst_meta_api_type_register("GstHsiBlockMetaAPI", tags);
    g_once_init_leave(&type, t);
  }
  return type;
}

static gboolean block_meta_init(GstMeta *meta, gpointer, GstBuffer *) {
  auto *m = reinterpret_cast<GstHsiBlockMeta *>(meta);
  m->first_line = 0;
  m->line_count = 0;
  m->scene_lines = 0;
  return TRUE;
}

// Copies (whole-buffer copies and transforms) keep the block's position.
static gboolean block_meta_transform(GstBuffer *dest, GstMeta *meta, GstBuffer *, GQuark type, gpointer data) {
  auto *m = reinterpret_cast<GstHsiBlockMeta *>(meta);
  if (GST_META_TRANSFORM_IS_COPY(type)) {
    auto *copy = static_cast<GstMetaTransformCopy *>(data);
    if (copy->region) return FALSE;  // part of a block: its lines are unknown
  }
  return gst_buffer_add_hsi_block_meta(dest, m->first_line, m->line_count, m->scene_lines) != nullptr;
}

const GstMetaInfo *gst_hsi_block_meta_get_info(void) {
  static const GstMetaInfo *info = nullptr;
  if (g_once_init_enter(&info)) {
    const GstMetaInfo *i = gst_meta_register(GST_HSI_BLOCK_META_API_TYPE, "GstHsiBlockMeta", sizeof(GstHsiBlockMeta),
                                             block_meta_init, nullptr, block_meta_transform);
    g_once_init_leave(&info, i);
  }
  return info;
}

GstHsiBlockMeta *gst_buffer_add_hsi_block_meta(GstBuffer *buffer, guint64 first_line, guint line_count,
                                               guint64 scene_lines) {
  g_return_val_if_fail(GST_IS_BUFFER(buffer), nullptr);
  auto *m = reinterpret_cast<GstHsiBlockMeta *>(gst_buffer_add_meta(buffer, GST_HSI_BLOCK_META_INFO, nullptr));
  if (!m) return nullptr;
  m->first_line = first_line;
  m->line_count = line_count;
  m->scene_lines = scene_lines;
  return m;
}
