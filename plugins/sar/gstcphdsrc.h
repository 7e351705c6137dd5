#pragma once
#include <gst/base/gstpushsrc.h>

G_BEGIN_DECLS
#define GST_TYPE_CPHD_SRC (gst_cphd_src_get_type())
G_DECLARE_FINAL_TYPE(GstCphdSrc, gst_cphd_src, GST, CPHD_SRC, GstPushSrc)
GST_ELEMENT_REGISTER_DECLARE(cphdsrc);
G_END_DECLS
