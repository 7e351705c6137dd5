// Helpers for the SAR element tests: run a pipeline to the end and collect
// what its appsink named "out" received, with the first error's text.
#pragma once

#include <gst/app/gstappsink.h>
#include <gst/cudasensing/sar/gstsarpulsemeta.h>
#include <gst/gst.h>
#include <unistd.h>

#include <complex>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

namespace sar_elements {

struct PipelineRun {
  std::vector<GstSample *> samples;
  std::string error;  // empty: reached EOS without error
  ~PipelineRun() {
    for (GstSample *s : samples) gst_sample_unref(s);
  }
  GstBuffer *buffer(size_t i) const { return gst_sample_get_buffer(samples.at(i)); }
  GstCaps *caps(size_t i) const { return gst_sample_get_caps(samples.at(i)); }
};

inline std::string error_text(GstMessage *msg) {
  GError *err = nullptr;
  gchar *debug = nullptr;
  gst_message_parse_error(msg, &err, &debug);
  std::string text = std::string(err ? err->message : "?") + " | " + (debug ? debug : "");
  g_clear_error(&err);
  g_free(debug);
  return text;
}

// `setup`, when given, sees the pipeline before it starts (to add pad probes).
inline void run_pipeline(const std::string &launch, PipelineRun *run,
                         const std::function<void(GstElement *)> &setup = {}) {
  GError *err = nullptr;
  GstElement *pipeline = gst_parse_launch(launch.c_str(), &err);
  if (!pipeline || err) {
    run->error = std::string("cannot build pipeline: ") + (err ? err->message : "?");
    g_clear_error(&err);
    if (pipeline) gst_object_unref(pipeline);
    return;
  }
  GstElement *sink = gst_bin_get_by_name(GST_BIN(pipeline), "out");
  // The EOS message must not wait for the test to pull the samples.
  if (sink) g_object_set(sink, "wait-on-eos", FALSE, nullptr);
  if (setup) setup(pipeline);
  gst_element_set_state(pipeline, GST_STATE_PLAYING);
  GstBus *bus = gst_element_get_bus(pipeline);
  GstMessage *msg = gst_bus_timed_pop_filtered(bus, 120 * GST_SECOND,
                                               GstMessageType(GST_MESSAGE_ERROR | GST_MESSAGE_EOS));
  if (!msg)
    run->error = "timed out";
  else if (GST_MESSAGE_TYPE(msg) == GST_MESSAGE_ERROR)
    run->error = error_text(msg);
  if (msg) gst_message_unref(msg);
  if (sink) {
    while (GstSample *s = gst_app_sink_try_pull_sample(GST_APP_SINK(sink), 0)) run->samples.push_back(s);
    gst_object_unref(sink);
  }
  gst_element_set_state(pipeline, GST_STATE_NULL);
  gst_object_unref(bus);
  gst_object_unref(pipeline);
}

// All bytes of the received buffers, concatenated.
inline std::vector<uint8_t> all_bytes(const PipelineRun &run) {
  std::vector<uint8_t> out;
  for (size_t i = 0; i < run.samples.size(); ++i) {
    GstMapInfo map;
    gst_buffer_map(run.buffer(i), &map, GST_MAP_READ);
    out.insert(out.end(), map.data, map.data + map.size);
    gst_buffer_unmap(run.buffer(i), &map);
  }
  return out;
}

// All pulses of the received buffers' metas, in order; first pulses checked to be consecutive.
inline std::vector<GstSarPulseParameters> all_pulses(const PipelineRun &run, bool *consecutive) {
  std::vector<GstSarPulseParameters> out;
  *consecutive = true;
  for (size_t i = 0; i < run.samples.size(); ++i) {
    const GstSarPulseMeta *m = gst_buffer_get_sar_pulse_meta(run.buffer(i));
    if (!m) {
      *consecutive = false;
      continue;
    }
    if (m->first_pulse != out.size()) *consecutive = false;
    out.insert(out.end(), m->pulses, m->pulses + m->n_pulses);
  }
  return out;
}

inline double caps_double(GstCaps *caps, const char *field) {
  double v = NAN;
  gst_structure_get_double(gst_caps_get_structure(caps, 0), field, &v);
  return v;
}
inline int caps_int(GstCaps *caps, const char *field) {
  int v = -1;
  gst_structure_get_int(gst_caps_get_structure(caps, 0), field, &v);
  return v;
}
inline std::string caps_string(GstCaps *caps, const char *field) {
  const char *s = gst_structure_get_string(gst_caps_get_structure(caps, 0), field);
  return s ? s : "";
}

// A file name in a fresh temporary folder, removed with the object.
class TempFile {
 public:
  explicit TempFile(const char *name) {
    char tmpl[] = "/tmp/cs-sar-elements-XXXXXX";
    const char *d = mkdtemp(tmpl);
    dir_ = d ? d : "/tmp";
    path_ = dir_ + "/" + name;
  }
  ~TempFile() {
    std::remove(path_.c_str());
    rmdir(dir_.c_str());
  }
  const std::string &path() const { return path_; }

 private:
  std::string dir_, path_;
};

}  // namespace sar_elements
