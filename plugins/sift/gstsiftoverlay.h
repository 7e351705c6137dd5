#pragma once
#include <gst/cudasensing/gstcsbasetransform.h>

G_BEGIN_DECLS
#define GST_TYPE_SIFT_OVERLAY (gst_sift_overlay_get_type())
G_DECLARE_FINAL_TYPE(GstSiftOverlay, gst_sift_overlay, GST, SIFT_OVERLAY, GstCsBaseTransform)
GST_ELEMENT_REGISTER_DECLARE(siftoverlay);
G_END_DECLS
