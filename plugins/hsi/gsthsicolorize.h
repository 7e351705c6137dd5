#pragma once
#include <gst/video/gstvideofilter.h>

G_BEGIN_DECLS
#define GST_TYPE_HSI_COLORIZE (gst_hsi_colorize_get_type())
G_DECLARE_FINAL_TYPE(GstHsiColorize, gst_hsi_colorize, GST, HSI_COLORIZE, GstVideoFilter)
GST_ELEMENT_REGISTER_DECLARE(hsicolorize);
G_END_DECLS
