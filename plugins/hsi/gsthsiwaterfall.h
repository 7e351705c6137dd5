#pragma once
#include <gst/base/gstbasetransform.h>

G_BEGIN_DECLS
#define GST_TYPE_HSI_WATERFALL (gst_hsi_waterfall_get_type())
G_DECLARE_FINAL_TYPE(GstHsiWaterfall, gst_hsi_waterfall, GST, HSI_WATERFALL, GstBaseTransform)
GST_ELEMENT_REGISTER_DECLARE(hsiwaterfall);
G_END_DECLS
