// Plays a pipeline to its end, for tests that watch its pads with probes.
#pragma once

#include <gst/gst.h>

#include <string>

namespace element_test {

// Sets `pipeline` playing, waits up to `seconds` for end-of-stream or an
// error, and stops it: "" at end-of-stream, else what went wrong.
inline std::string play_to_end(GstElement *pipeline, int seconds) {
  gst_element_set_state(pipeline, GST_STATE_PLAYING);
  GstBus *bus = gst_element_get_bus(pipeline);
  GstMessage *msg = gst_bus_timed_pop_filtered(bus, GstClockTime(seconds) * GST_SECOND,
                                               GstMessageType(GST_MESSAGE_EOS | GST_MESSAGE_ERROR));
  std::string outcome;
  if (!msg) {
    outcome = "no end-of-stream within " + std::to_string(seconds) + " s";
  } else if (GST_MESSAGE_TYPE(msg) == GST_MESSAGE_ERROR) {
    GError *error = nullptr;
    gst_message_parse_error(msg, &error, nullptr);
    outcome = error ? error->message : "an error without a message";
    g_clear_error(&error);
  }
  if (msg) gst_message_unref(msg);
  gst_object_unref(bus);
  gst_element_set_state(pipeline, GST_STATE_NULL);
  return outcome;
}

}  // namespace element_test
