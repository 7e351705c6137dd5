#pragma once
#include <gst/base/gstbasesink.h>

G_BEGIN_DECLS
#define GST_TYPE_FEATURE_SINK (gst_feature_sink_get_type())
G_DECLARE_FINAL_TYPE(GstFeatureSink, gst_feature_sink, GST, FEATURE_SINK, GstBaseSink)
GST_ELEMENT_REGISTER_DECLARE(featuresink);
G_END_DECLS
