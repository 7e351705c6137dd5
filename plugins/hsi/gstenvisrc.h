#pragma once
#include <gst/base/gstpushsrc.h>

G_BEGIN_DECLS
#define GST_TYPE_ENVI_SRC (gst_envi_src_get_type())
G_DECLARE_FINAL_TYPE(GstEnviSrc, gst_envi_src, GST, ENVI_SRC, GstPushSrc)
GST_ELEMENT_REGISTER_DECLARE(envisrc);
G_END_DECLS
