/* GstSiftFeaturesMeta: the SIFT keypoints and descriptors of one video frame.
 *
 * Keypoints carry exactly OpenCV's cv::KeyPoint fields: x, y (pixels of the
 * input frame, origin at the centre of the top-left pixel as in OpenCV),
 * size (diameter of the meaningful neighbourhood), angle (degrees, [0, 360),
 * -1 = not applicable), response, octave (OpenCV's packed value: octave in
 * the low byte, as a signed char where -1 is the doubled first octave; layer
 * in bits 8-15; OpenCV's sub-layer offset above) and class_id.
 *
 * Descriptors are one row of `descriptor_length` (128) elements per keypoint,
 * in keypoint order: guint8 for GST_SIFT_DESCRIPTOR_OPENCV, gfloat for
 * GST_SIFT_DESCRIPTOR_FLOAT and GST_SIFT_DESCRIPTOR_ROOTSIFT.
 *
 * The meta owns its arrays and has no tags: copies, gpuupload and
 * gpudownload keep it (a copy of a region of the frame drops it).
 *
 * GstSiftMatchesMeta: matches of a frame's features (query) against the
 * previous frame's or a reference image's (train), with an optional
 * homography mapping query points to train points. */
#pragma once

#include <gst/gst.h>

#ifndef GST_SIFT_API
#define GST_SIFT_API __attribute__((visibility("default"))) extern
#endif

G_BEGIN_DECLS

typedef enum {
  GST_SIFT_DESCRIPTOR_OPENCV = 0,   /* guint8, OpenCV's SIFT descriptor bytes (descriptorType CV_8U) */
  GST_SIFT_DESCRIPTOR_FLOAT = 1,    /* gfloat, OpenCV's default CV_32F descriptor (same values as the bytes) */
  GST_SIFT_DESCRIPTOR_ROOTSIFT = 2, /* gfloat, RootSIFT: L1-normalised, element-wise square root (unit L2 norm) */
} GstSiftDescriptorFormat;

#define GST_TYPE_SIFT_DESCRIPTOR_FORMAT (gst_sift_descriptor_format_get_type ())
GST_SIFT_API GType gst_sift_descriptor_format_get_type (void);

/* Bytes per descriptor element: 1 for OPENCV, 4 otherwise. */
GST_SIFT_API gsize gst_sift_descriptor_format_element_size (GstSiftDescriptorFormat format);

typedef struct {
  gfloat x;
  gfloat y;
  gfloat size;
  gfloat angle;
  gfloat response;
  gint32 octave;
  gint32 class_id;
} GstSiftKeypoint;

#define GST_SIFT_FEATURES_META_API_TYPE (gst_sift_features_meta_api_get_type ())
#define GST_SIFT_FEATURES_META_INFO (gst_sift_features_meta_get_info ())

typedef struct _GstSiftFeaturesMeta GstSiftFeaturesMeta;

struct _GstSiftFeaturesMeta {
  GstMeta meta;
  /* Size of the frame the keypoints were found in. */
  guint image_width;
  guint image_height;
  /* Number of keypoints (and descriptor rows); 0 for a frame without features. */
  guint count;
  GstSiftDescriptorFormat descriptor_format;
  /* Elements per descriptor (128 for SIFT); 0 when only keypoints are given. */
  guint descriptor_length;
  /* `count` keypoints (NULL when count is 0). */
  GstSiftKeypoint *keypoints;
  /* count * descriptor_length elements, row-major (NULL when empty). */
  gpointer descriptors;
};

GST_SIFT_API GType gst_sift_features_meta_api_get_type (void);
GST_SIFT_API const GstMetaInfo *gst_sift_features_meta_get_info (void);

/* Adds a features meta for `count` keypoints to `buffer` (writable) with
 * zeroed, meta-owned arrays for the caller to fill, and returns it. */
GST_SIFT_API GstSiftFeaturesMeta *gst_buffer_add_sift_features_meta (GstBuffer * buffer, guint image_width,
    guint image_height, guint count, GstSiftDescriptorFormat descriptor_format, guint descriptor_length);

/* Bytes of the descriptor array. */
GST_SIFT_API gsize gst_sift_features_meta_descriptor_bytes (const GstSiftFeaturesMeta * meta);

#define gst_buffer_get_sift_features_meta(b) \
  ((GstSiftFeaturesMeta *) gst_buffer_get_meta ((b), GST_SIFT_FEATURES_META_API_TYPE))

/* The same features as a GstCustomMeta named GST_SIFT_FEATURES_CUSTOM_META
 * (sift's and siftdescribe's `custom-meta`), for language bindings, which
 * read a GstStructure where they cannot read the struct above:
 *   image-width, image-height, count, descriptor-length (guint),
 *   descriptor-format (string: "opencv", "float", "rootsift"),
 *   keypoints (GBytes: count GstSiftKeypoint records, 28 bytes each,
 *     little-endian float32 x, y, size, angle, response, int32 octave, class_id),
 *   descriptors (GBytes: the descriptor rows as in the struct above).
 * Python: s = buf.get_custom_meta("GstSiftFeatures").get_structure();
 *   numpy.frombuffer(s.get_value("keypoints").get_data(), dtype=...).
 * Tagged and carried like the struct (dropped where the frame's geometry changes). */
#define GST_SIFT_FEATURES_CUSTOM_META "GstSiftFeatures"

/* Adds the custom meta holding a copy of `meta`'s features to `buffer` (writable). */
GST_SIFT_API GstCustomMeta *gst_buffer_add_sift_features_custom_meta (GstBuffer * buffer,
    const GstSiftFeaturesMeta * meta);

/* One match: keypoint `query_index` of this frame and `train_index` of the
 * reference, their descriptor distance (L2), and whether the homography
 * (when computed) counts it as an inlier. */
typedef struct {
  guint32 query_index;
  guint32 train_index;
  gfloat distance;
  gboolean inlier;
} GstSiftMatch;

#define GST_SIFT_MATCHES_META_API_TYPE (gst_sift_matches_meta_api_get_type ())
#define GST_SIFT_MATCHES_META_INFO (gst_sift_matches_meta_get_info ())

typedef struct _GstSiftMatchesMeta GstSiftMatchesMeta;

struct _GstSiftMatchesMeta {
  GstMeta meta;
  guint count;
  GstSiftMatch *matches;
  /* Whether `homography` holds a result (RANSAC asked for and found). */
  gboolean has_homography;
  /* Row-major 3x3 matrix H with train ~ H * query (homogeneous pixels). */
  gdouble homography[9];
  /* Keypoints in the reference (train) set. */
  guint train_count;
};

GST_SIFT_API GType gst_sift_matches_meta_api_get_type (void);
GST_SIFT_API const GstMetaInfo *gst_sift_matches_meta_get_info (void);

/* Adds a matches meta with room for `count` zeroed matches. */
GST_SIFT_API GstSiftMatchesMeta *gst_buffer_add_sift_matches_meta (GstBuffer * buffer, guint count);

#define gst_buffer_get_sift_matches_meta(b) \
  ((GstSiftMatchesMeta *) gst_buffer_get_meta ((b), GST_SIFT_MATCHES_META_API_TYPE))

/* The matches as a GstCustomMeta named GST_SIFT_MATCHES_CUSTOM_META
 * (siftmatch's `custom-meta`), for language bindings: count, train-count
 * (guint), matches (GBytes: count GstSiftMatch records, 16 bytes each,
 * little-endian uint32 query_index, train_index, float32 distance, int32
 * inlier), has-homography (gboolean) and, when it is true, homography (an
 * array of 9 doubles, row-major). Tagged and carried like the struct. */
#define GST_SIFT_MATCHES_CUSTOM_META "GstSiftMatches"

/* Adds the custom meta holding a copy of `meta`'s matches to `buffer` (writable). */
GST_SIFT_API GstCustomMeta *gst_buffer_add_sift_matches_custom_meta (GstBuffer * buffer,
    const GstSiftMatchesMeta * meta);

G_END_DECLS
