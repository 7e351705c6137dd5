// Plays a pipeline to its end, for tests that watch its pads with probes.
#pragma once

#include <gst/gst.h>

#include <string>

namespace element_test {

// Sets `pipeline` playing, waits up to `seconds` for end-of-stream or an
// error, and stops it: "" at end-of-stream, else what went wrong. The
// warnings posted meanwhile go to `warnings` (one a line) when given.
inline std::string play_to_end(GstElement *pipeline, int seconds, std::string *warnings = nullptr) {
  gst_element_set_state(pipeline, GST_STATE_PLAYING);
  GstBus *bus = gst_element_get_bus(pipeline);
  const GstMessageType wanted =
      GstMessageType(GST_MESSAGE_EOS | GST_MESSAGE_ERROR | (warnings ? GST_MESSAGE_WARNING : 0));
  std::string outcome = "no end-of-stream within " + std::to_string(seconds) + " s";
  while (GstMessage *msg = gst_bus_timed_pop_filtered(bus, GstClockTime(seconds) * GST_SECOND, wanted)) {
    const GstMessageType type = GST_MESSAGE_TYPE(msg);
    GError *error = nullptr;
    if (type == GST_MESSAGE_WARNING) {
      gst_message_parse_warning(msg, &error, nullptr);
      *warnings += std::string(error ? error->message : "a warning without a message") + "\n";
    } else if (type == GST_MESSAGE_ERROR) {
      gst_message_parse_error(msg, &error, nullptr);
      outcome = error ? error->message : "an error without a message";
    } else {
      outcome = "";
    }
    g_clear_error(&error);
    gst_message_unref(msg);
    if (type != GST_MESSAGE_WARNING) break;
  }
  gst_object_unref(bus);
  gst_element_set_state(pipeline, GST_STATE_NULL);
  return outcome;
}

}  // namespace element_test
