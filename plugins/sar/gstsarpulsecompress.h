#pragma once
#include <gst/cudasensing/gstcsbasetransform.h>

G_BEGIN_DECLS
#define GST_TYPE_SAR_PULSE_COMPRESS (gst_sar_pulse_compress_get_type())
G_DECLARE_FINAL_TYPE(GstSarPulseCompress, gst_sar_pulse_compress, GST, SAR_PULSE_COMPRESS, GstCsBaseTransform)
GST_ELEMENT_REGISTER_DECLARE(sarpulsecompress);
G_END_DECLS
