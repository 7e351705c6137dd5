#pragma once
#include <gst/cudasensing/gstcsbasetransform.h>

G_BEGIN_DECLS
#define GST_TYPE_SIFT (gst_sift_get_type())
G_DECLARE_FINAL_TYPE(GstSift, gst_sift, GST, SIFT, GstCsBaseTransform)
GST_ELEMENT_REGISTER_DECLARE(sift);
G_END_DECLS
