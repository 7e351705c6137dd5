// What gpuupload and gpudownload share: caps arithmetic (the same media type
// on the other side, in another memory), metas and streams without caps.
#pragma once

#include <gst/base/gstbasetransform.h>
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

// Every meta of the input stays valid on the output: the bytes and their
// layout are the same, only the memory holding them changes. (The base
// class's default keeps only untagged metas, which loses the video meta's
// strides and the metas tied to the frame's size.)
inline gboolean transfer_keeps_every_meta(GstBaseTransform *, GstBuffer *, GstMeta *, GstBuffer *) { return TRUE; }

// A stream that comes without caps (filesrc sends none) is taken as
// application/octet-stream, so that `filesrc ! gpuupload ! filesink` copies
// the bytes as it would through identity, instead of failing as
// not-negotiated. Called with each sink event: at the SEGMENT, before it is
// stored, so that the sticky events stay in order (stream-start, caps,
// segment).
inline void transfer_assume_bytes_without_caps(GstBaseTransform *trans, GstEvent *event) {
  GstPad *sink = GST_BASE_TRANSFORM_SINK_PAD(trans);
  if (GST_EVENT_TYPE(event) != GST_EVENT_SEGMENT || gst_pad_has_current_caps(sink)) return;
  GST_INFO_OBJECT(trans, "no caps before the segment: the stream is taken as application/octet-stream");
  GstCaps *bytes = gst_caps_new_empty_simple("application/octet-stream");
  gst_pad_send_event(sink, gst_event_new_caps(bytes));
  gst_caps_unref(bytes);  // the event holds its own reference
}
