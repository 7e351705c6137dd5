#pragma once
#include <gst/cudasensing/gstcsbasetransform.h>

G_BEGIN_DECLS
#define GST_TYPE_SIFT_MATCHER (gst_sift_matcher_get_type())
G_DECLARE_FINAL_TYPE(GstSiftMatcher, gst_sift_matcher, GST, SIFT_MATCHER, GstCsBaseTransform)
GST_ELEMENT_REGISTER_DECLARE(siftmatch);
G_END_DECLS
