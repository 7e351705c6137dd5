// Plays a pipeline to its end, for tests that watch its pads with probes;
// stops one at random moments, for tests of what stopping leaves behind.
#pragma once

#include <gst/gst.h>

#include <chrono>
#include <map>
#include <random>
#include <string>
#include <thread>

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

// Plays `launch` and stops it (to READY, which keeps its bus) `stops` times,
// each after a random 0-10 ms: the errors posted, by element and text, with
// their counts. Stopping a stream mid-block is no error.
inline std::map<std::string, int> errors_over_random_stops(const std::string &launch, int stops, unsigned seed) {
  std::map<std::string, int> errors;
  GError *parse_error = nullptr;
  GstElement *pipeline = gst_parse_launch(launch.c_str(), &parse_error);
  if (!pipeline || parse_error) {
    errors[std::string("parse: ") + (parse_error ? parse_error->message : "?")] = 1;
    g_clear_error(&parse_error);
    if (pipeline) gst_object_unref(pipeline);
    return errors;
  }
  GstBus *bus = gst_element_get_bus(pipeline);
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> pause_us(0, 10000);
  for (int i = 0; i < stops; ++i) {
    gst_element_set_state(pipeline, GST_STATE_PLAYING);
    std::this_thread::sleep_for(std::chrono::microseconds(pause_us(rng)));
    gst_element_set_state(pipeline, GST_STATE_READY);
    while (GstMessage *msg = gst_bus_pop_filtered(bus, GST_MESSAGE_ERROR)) {
      GError *error = nullptr;
      gst_message_parse_error(msg, &error, nullptr);
      ++errors[std::string(GST_OBJECT_NAME(GST_MESSAGE_SRC(msg))) + ": " + (error ? error->message : "?")];
      g_clear_error(&error);
      gst_message_unref(msg);
    }
  }
  gst_object_unref(bus);
  gst_element_set_state(pipeline, GST_STATE_NULL);
  gst_object_unref(pipeline);
  return errors;
}

}  // namespace element_test
