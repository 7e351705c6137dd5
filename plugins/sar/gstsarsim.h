#pragma once
#include <gst/base/gstpushsrc.h>

G_BEGIN_DECLS
#define GST_TYPE_SAR_SIM (gst_sar_sim_get_type())
G_DECLARE_FINAL_TYPE(GstSarSim, gst_sar_sim, GST, SAR_SIM, GstPushSrc)
GST_ELEMENT_REGISTER_DECLARE(sarsim);
G_END_DECLS
