#pragma once
#include <gst/base/gstbasesink.h>

G_BEGIN_DECLS
#define GST_TYPE_CPHD_SINK (gst_cphd_sink_get_type())
G_DECLARE_FINAL_TYPE(GstCphdSink, gst_cphd_sink, GST, CPHD_SINK, GstBaseSink)
GST_ELEMENT_REGISTER_DECLARE(cphdsink);
G_END_DECLS
