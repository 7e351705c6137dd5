#pragma once
#include <gst/base/gstbasetransform.h>

G_BEGIN_DECLS
#define GST_TYPE_SAR_IMAGE (gst_sar_image_get_type())
G_DECLARE_FINAL_TYPE(GstSarImage, gst_sar_image, GST, SAR_IMAGE, GstBaseTransform)
GST_ELEMENT_REGISTER_DECLARE(sarimage);
G_END_DECLS
