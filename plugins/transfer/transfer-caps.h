// Caps arithmetic shared by gpuupload and gpudownload: the same media type on
// the other side, in another memory.
#pragma once

#include <gst/cudasensing/gstcsmemory.h>

// Caps for the other pad: `caps` moved into `feature` (when `offer_feature`),
// followed by `caps` unchanged (the pass-through choice).
inline GstCaps *transfer_caps(GstCaps *caps, const char *feature, bool offer_feature, GstCaps *filter) {
  GstCaps *result;
  if (gst_caps_is_any(caps)) {
    result = gst_caps_new_any();
  } else {
    result = offer_feature ? gst_cs_caps_with_feature(caps, feature) : gst_caps_new_empty();
    result = gst_caps_merge(result, gst_caps_copy(caps));
  }
  if (filter) {
    GstCaps *tmp = gst_caps_intersect_full(filter, result, GST_CAPS_INTERSECT_FIRST);
    gst_caps_unref(result);
    result = tmp;
  }
  return result;
}
