#pragma once
#include <gst/base/gstbasesink.h>

G_BEGIN_DECLS
#define GST_TYPE_ENVI_SINK (gst_envi_sink_get_type())
G_DECLARE_FINAL_TYPE(GstEnviSink, gst_envi_sink, GST, ENVI_SINK, GstBaseSink)
GST_ELEMENT_REGISTER_DECLARE(envisink);
G_END_DECLS
