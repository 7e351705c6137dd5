/* The grid and the pulses of a formed SAR image, as a GstMeta.
 *
 * A buffer of application/x-sar-image (format=CF32, width, height: complex
 * float32 pixels, row-major, row r and column c at r * width + c) carries a
 * GstSarImageMeta that says where each pixel lies and which pulses formed it.
 * Pixel (c, r) lies at
 *     centre + (c - width/2) * spacing_x * axis_x + (r - height/2) * spacing_y * axis_y
 * (integer division: the centre is a pixel); origin is pixel (0, 0). The
 * grid of sarbackproject is north-up in the plane tangent to the ellipsoid at
 * the centre: axis_x points east, axis_y south (row 0 is the northern edge).
 *
 * The meta is tagged video, size and orientation: copies of the whole image
 * keep it, and so do sarimage's frames of it (pixel for pixel the same grid);
 * elements that crop, flip, rotate or scale those frames drop it.
 */
#pragma once

#include <gst/gst.h>

#ifndef GST_SAR_API
#define GST_SAR_API __attribute__((visibility("default"))) extern
#endif

G_BEGIN_DECLS

#define GST_SAR_IMAGE_MEDIA_TYPE "application/x-sar-image"

typedef struct {
  GstMeta meta;
  /* The grid. */
  guint width, height;    /* pixels: columns, rows */
  gdouble spacing_x;      /* m between columns */
  gdouble spacing_y;      /* m between rows */
  gdouble centre[3];      /* ECF m: pixel (width/2, height/2) */
  gdouble origin[3];      /* ECF m: pixel (0, 0) */
  gdouble axis_x[3];      /* ECF unit vector of increasing column */
  gdouble axis_y[3];      /* ECF unit vector of increasing row */
  /* The pulses summed into the image (CPHD vector indices and TxTime, s). */
  guint64 first_pulse, last_pulse;
  gdouble first_pulse_time, last_pulse_time;
  guint n_pulses;
} GstSarImageMeta;

GST_SAR_API GType gst_sar_image_meta_api_get_type (void);
#define GST_SAR_IMAGE_META_API_TYPE (gst_sar_image_meta_api_get_type ())
GST_SAR_API const GstMetaInfo *gst_sar_image_meta_get_info (void);
#define GST_SAR_IMAGE_META_INFO (gst_sar_image_meta_get_info ())

/* Adds a meta with every field zero; the caller fills it. */
GST_SAR_API GstSarImageMeta *gst_buffer_add_sar_image_meta (GstBuffer * buffer);

#define gst_buffer_get_sar_image_meta(b) \
  ((GstSarImageMeta *) gst_buffer_get_meta ((b), GST_SAR_IMAGE_META_API_TYPE))

/* The same grid as a GstCustomMeta named GST_SAR_IMAGE_CUSTOM_META
 * (sarbackproject's `custom-meta`), for language bindings, which read a
 * GstStructure where they cannot read the struct: width, height, n-pulses
 * (guint), spacing-x, spacing-y, first-pulse-time, last-pulse-time (gdouble),
 * first-pulse, last-pulse (guint64), centre, origin, axis-x, axis-y (arrays
 * of 3 doubles, ECF). Tagged and carried like the struct. */
#define GST_SAR_IMAGE_CUSTOM_META "GstSarImageGrid"

/* Adds the custom meta holding a copy of `meta`'s grid to `buffer` (writable). */
GST_SAR_API GstCustomMeta *gst_buffer_add_sar_image_custom_meta (GstBuffer * buffer, const GstSarImageMeta * meta);

G_END_DECLS
