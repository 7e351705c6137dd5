#pragma once
#include <gst/cudasensing/gstcsbasetransform.h>

G_BEGIN_DECLS
#define GST_TYPE_SAR_BACKPROJECT (gst_sar_backproject_get_type())
G_DECLARE_FINAL_TYPE(GstSarBackproject, gst_sar_backproject, GST, SAR_BACKPROJECT, GstCsBaseTransform)
GST_ELEMENT_REGISTER_DECLARE(sarbackproject);
G_END_DECLS
