#pragma once
#include <gst/base/gstbasetransform.h>
#include <gst/cudasensing/gstcsbasetransform.h>

G_BEGIN_DECLS
#define GST_TYPE_SIFT_PYRAMID (gst_sift_pyramid_get_type())
G_DECLARE_FINAL_TYPE(GstSiftPyramid, gst_sift_pyramid, GST, SIFT_PYRAMID, GstCsBaseTransform)
#define GST_TYPE_SIFT_DETECT (gst_sift_detect_get_type())
G_DECLARE_FINAL_TYPE(GstSiftDetect, gst_sift_detect, GST, SIFT_DETECT, GstBaseTransform)
#define GST_TYPE_SIFT_DESCRIBE (gst_sift_describe_get_type())
G_DECLARE_FINAL_TYPE(GstSiftDescribe, gst_sift_describe, GST, SIFT_DESCRIBE, GstBaseTransform)
GST_ELEMENT_REGISTER_DECLARE(siftpyramid);
GST_ELEMENT_REGISTER_DECLARE(siftdetect);
GST_ELEMENT_REGISTER_DECLARE(siftdescribe);
G_END_DECLS
