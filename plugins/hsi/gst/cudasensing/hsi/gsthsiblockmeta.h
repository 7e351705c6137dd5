/* GstHsiBlockMeta: which lines of a hyperspectral scene a buffer holds.
 *
 * A buffer of `application/x-hyperspectral` is a block of whole lines
 * (static facts — samples, bands, interleave, sample format — are caps
 * fields); this meta says where the block sits in the scene. Elements that
 * turn a block into something else (hsiclassify's class map) keep the meta,
 * so a class map also knows its lines. The meta has no tags: it survives
 * copies, gpuupload and gpudownload. */
#pragma once

#include <gst/gst.h>

#ifndef GST_HSI_API
#define GST_HSI_API __attribute__((visibility("default"))) extern
#endif

G_BEGIN_DECLS

#define GST_HSI_BLOCK_META_API_TYPE (gst_hsi_block_meta_api_get_type ())
#define GST_HSI_BLOCK_META_INFO (gst_hsi_block_meta_get_info ())

typedef struct _GstHsiBlockMeta GstHsiBlockMeta;

struct _GstHsiBlockMeta {
  GstMeta meta;
  /* 0-based index, in the scene, of the block's first line. */
  guint64 first_line;
  /* Number of lines in the block. */
  guint line_count;
  /* Lines in the whole scene, or 0 when unknown (an endless line stream). */
  guint64 scene_lines;
};

GST_HSI_API GType gst_hsi_block_meta_api_get_type (void);
GST_HSI_API const GstMetaInfo *gst_hsi_block_meta_get_info (void);

/* Adds a block meta to `buffer` (writable) and returns it. */
GST_HSI_API GstHsiBlockMeta *gst_buffer_add_hsi_block_meta (GstBuffer * buffer, guint64 first_line,
    guint line_count, guint64 scene_lines);

/* The buffer's block meta, or NULL. */
#define gst_buffer_get_hsi_block_meta(b) \
  ((GstHsiBlockMeta *) gst_buffer_get_meta ((b), GST_HSI_BLOCK_META_API_TYPE))

G_END_DECLS
