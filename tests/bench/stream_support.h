// Streaming benchmarks: capture a source's buffers once (caps, metas), then
// push them through the pipeline under test from memory, as a recorded
// stream read ahead would arrive, and time what comes out.
#pragma once

#include <gst/app/gstappsink.h>
#include <gst/app/gstappsrc.h>
#include <gst/cudasensing/cudasensing.h>
#include <gst/gst.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "common/cuda_runtime.h"

namespace bench {

// The buffers a source pipeline ending in `appsink name=out` produces, with
// their caps (empty on failure, which is printed).
class CapturedStream {
 public:
  explicit CapturedStream(const std::string &launch) {
    GError *error = nullptr;
    GstElement *pipeline = gst_parse_launch(launch.c_str(), &error);
    if (!pipeline) {
      std::fprintf(stderr, "pipeline %s: %s\n", launch.c_str(), error ? error->message : "?");
      g_clear_error(&error);
      return;
    }
    GstElement *sink = gst_bin_get_by_name(GST_BIN(pipeline), "out");
    gst_element_set_state(pipeline, GST_STATE_PLAYING);
    while (GstSample *s = gst_app_sink_try_pull_sample(GST_APP_SINK(sink), 60 * GST_SECOND)) {
      if (!caps_) caps_ = gst_caps_ref(gst_sample_get_caps(s));
      buffers_.push_back(gst_buffer_ref(gst_sample_get_buffer(s)));
      gst_sample_unref(s);
    }
    gst_element_set_state(pipeline, GST_STATE_NULL);
    gst_object_unref(sink);
    gst_object_unref(pipeline);
    if (buffers_.empty()) std::fprintf(stderr, "%s produced nothing\n", launch.c_str());
  }
  // Buffers made by the caller (taken over), with their caps.
  CapturedStream(const std::string &caps, std::vector<GstBuffer *> buffers)
      : caps_(gst_caps_from_string(caps.c_str())), buffers_(std::move(buffers)) {}
  ~CapturedStream() {
    for (GstBuffer *b : buffers_) gst_buffer_unref(b);
    if (caps_) gst_caps_unref(caps_);
  }
  CapturedStream(const CapturedStream &) = delete;
  CapturedStream &operator=(const CapturedStream &) = delete;

  bool empty() const { return buffers_.empty(); }
  const std::vector<GstBuffer *> &buffers() const { return buffers_; }
  std::string caps() const {
    gchar *text = caps_ ? gst_caps_to_string(caps_) : g_strdup("");
    std::string s = text;
    g_free(text);
    return s;
  }
  // Moves every buffer into page-locked memory (bytes and metas), as from a
  // source that takes gpuupload's allocator.
  void make_page_locked() {
    GstAllocator *pinned = gst_cs_pinned_allocator_get();
    for (GstBuffer *&b : buffers_) {
      GstBuffer *copy = gst_buffer_new_allocate(pinned, gst_buffer_get_size(b), nullptr);
      GstMapInfo from, to;
      gst_buffer_map(b, &from, GST_MAP_READ);
      gst_buffer_map(copy, &to, GST_MAP_WRITE);
      std::memcpy(to.data, from.data, from.size);
      gst_buffer_unmap(copy, &to);
      gst_buffer_unmap(b, &from);
      gst_buffer_copy_into(copy, b, GstBufferCopyFlags(GST_BUFFER_COPY_METADATA), 0, static_cast<gsize>(-1));
      gst_buffer_unref(b);
      b = copy;
    }
    if (pinned) gst_object_unref(pinned);
  }

 private:
  GstCaps *caps_ = nullptr;
  std::vector<GstBuffer *> buffers_;
};

// A pad probe's record of the last buffer that passed and how many did.
struct LastBuffer {
  GstBuffer *buffer = nullptr;
  gint seen = 0;
  static GstPadProbeReturn probe(GstPad *, GstPadProbeInfo *info, gpointer data) {
    auto *self = static_cast<LastBuffer *>(data);
    gst_buffer_replace(&self->buffer, GST_PAD_PROBE_INFO_BUFFER(info));
    g_atomic_int_inc(&self->seen);
    return GST_PAD_PROBE_OK;
  }
};

// One run of appsrc ! `stages` ! fakesink name=sink.
struct StreamRun {
  bool ok = false;
  double seconds = 0;       // from the first timed push to end-of-stream
  int outputs = 0;          // buffers that reached the sink
  double first_output = 0;  // seconds after the first timed push
  double last_output = 0;
};

// Pushes `pushes` buffers (round robin over `stream`'s), the first
// `warmup` untimed, through `stages`; timestamps every output buffer.
inline StreamRun push_through(const CapturedStream &stream, const std::string &stages, int64_t pushes,
                              int64_t warmup) {
  using Clock = std::chrono::steady_clock;
  StreamRun run;
  if (stream.empty()) return run;
  const std::string launch = "appsrc name=src format=time max-buffers=4 block=true caps=\"" + stream.caps() +
                             "\" ! " + stages + " ! fakesink name=sink sync=false";
  GError *error = nullptr;
  GstElement *pipeline = gst_parse_launch(launch.c_str(), &error);
  if (!pipeline) {
    std::fprintf(stderr, "pipeline %s: %s\n", launch.c_str(), error ? error->message : "?");
    g_clear_error(&error);
    return run;
  }
  struct Outputs {
    Clock::time_point start;
    bool started = false;
    std::vector<Clock::time_point> times;
    GMutex lock;
  } outputs;
  g_mutex_init(&outputs.lock);
  GstElement *src = gst_bin_get_by_name(GST_BIN(pipeline), "src");
  GstElement *sink = gst_bin_get_by_name(GST_BIN(pipeline), "sink");
  GstPad *sink_pad = gst_element_get_static_pad(sink, "sink");
  gst_pad_add_probe(
      sink_pad, GST_PAD_PROBE_TYPE_BUFFER,
      [](GstPad *, GstPadProbeInfo *, gpointer data) {
        auto *o = static_cast<Outputs *>(data);
        g_mutex_lock(&o->lock);
        if (o->started) o->times.push_back(Clock::now());
        g_mutex_unlock(&o->lock);
        return GST_PAD_PROBE_OK;
      },
      &outputs, nullptr);
  gst_element_set_state(pipeline, GST_STATE_PLAYING);
  const auto &buffers = stream.buffers();
  for (int64_t i = 0; i < pushes + warmup; ++i) {
    if (i == warmup) {
      g_mutex_lock(&outputs.lock);
      outputs.start = Clock::now();
      outputs.started = true;
      g_mutex_unlock(&outputs.lock);
    }
    GstBuffer *b = gst_buffer_ref(buffers[static_cast<size_t>(i) % buffers.size()]);
    if (gst_app_src_push_buffer(GST_APP_SRC(src), b) != GST_FLOW_OK) break;
  }
  gst_app_src_end_of_stream(GST_APP_SRC(src));
  GstBus *bus = gst_element_get_bus(pipeline);
  GstMessage *msg =
      gst_bus_timed_pop_filtered(bus, 300 * GST_SECOND, GstMessageType(GST_MESSAGE_EOS | GST_MESSAGE_ERROR));
  const Clock::time_point end = Clock::now();
  run.ok = msg && GST_MESSAGE_TYPE(msg) == GST_MESSAGE_EOS;
  if (msg && GST_MESSAGE_TYPE(msg) == GST_MESSAGE_ERROR) {
    GError *err = nullptr;
    gst_message_parse_error(msg, &err, nullptr);
    std::fprintf(stderr, "streamed run failed: %s\n", err ? err->message : "?");
    g_clear_error(&err);
  } else if (!run.ok) {
    std::fprintf(stderr, "streamed run timed out\n");
  }
  if (msg) gst_message_unref(msg);
  gst_object_unref(bus);
  gst_element_set_state(pipeline, GST_STATE_NULL);
  gst_object_unref(sink_pad);
  gst_object_unref(sink);
  gst_object_unref(src);
  gst_object_unref(pipeline);
  auto since_start = [&](Clock::time_point t) { return std::chrono::duration<double>(t - outputs.start).count(); };
  run.seconds = since_start(end);
  run.outputs = static_cast<int>(outputs.times.size());
  if (!outputs.times.empty()) {
    run.first_output = since_start(outputs.times.front());
    run.last_output = since_start(outputs.times.back());
  }
  g_mutex_clear(&outputs.lock);
  return run;
}

// Runs `launch` to its end; false (and the error printed) if it fails.
inline bool run_to_end(const std::string &launch) {
  GError *error = nullptr;
  GstElement *pipeline = gst_parse_launch(launch.c_str(), &error);
  if (!pipeline || error) {
    std::fprintf(stderr, "pipeline %s: %s\n", launch.c_str(), error ? error->message : "?");
    g_clear_error(&error);
    if (pipeline) gst_object_unref(pipeline);
    return false;
  }
  gst_element_set_state(pipeline, GST_STATE_PLAYING);
  GstBus *bus = gst_element_get_bus(pipeline);
  GstMessage *msg =
      gst_bus_timed_pop_filtered(bus, 600 * GST_SECOND, GstMessageType(GST_MESSAGE_EOS | GST_MESSAGE_ERROR));
  const bool ok = msg && GST_MESSAGE_TYPE(msg) == GST_MESSAGE_EOS;
  if (!ok) std::fprintf(stderr, "%s: no end of stream\n", launch.c_str());
  if (msg) gst_message_unref(msg);
  gst_object_unref(bus);
  gst_element_set_state(pipeline, GST_STATE_NULL);
  gst_object_unref(pipeline);
  return ok;
}

// `source` (a launch description of one source element) ! `chain` !
// fakesink, `runs` times: seconds from when the source's first buffer
// leaves it (set-up and negotiation before are not timed, nor the first
// buffer's read) until the last buffer's contents are complete. Exits the
// program on a pipeline error.
inline std::vector<double> source_run_seconds(const std::string &source, const std::string &chain, int runs) {
  using Clock = std::chrono::steady_clock;
  const std::string launch =
      source + " name=source ! " + (chain.empty() ? "" : chain + " ! ") + "fakesink name=sink sync=false";
  std::vector<double> seconds;
  for (int r = 0; r < runs; ++r) {
    GError *error = nullptr;
    GstElement *pipeline = gst_parse_launch(launch.c_str(), &error);
    if (!pipeline || error) {
      std::fprintf(stderr, "pipeline %s: %s\n", launch.c_str(), error ? error->message : "?");
      std::exit(1);
    }
    GstElement *sink = gst_bin_get_by_name(GST_BIN(pipeline), "sink");
    GstPad *sink_pad = gst_element_get_static_pad(sink, "sink");
    LastBuffer last;
    gst_pad_add_probe(sink_pad, GST_PAD_PROBE_TYPE_BUFFER, LastBuffer::probe, &last, nullptr);
    GstElement *src = gst_bin_get_by_name(GST_BIN(pipeline), "source");
    GstPad *src_pad = gst_element_get_static_pad(src, "src");
    Clock::time_point start;
    gst_pad_add_probe(
        src_pad, GST_PAD_PROBE_TYPE_BUFFER,
        [](GstPad *, GstPadProbeInfo *, gpointer data) {
          *static_cast<Clock::time_point *>(data) = Clock::now();
          return GST_PAD_PROBE_REMOVE;
        },
        &start, nullptr);
    GstBus *bus = gst_element_get_bus(pipeline);
    gst_element_set_state(pipeline, GST_STATE_PLAYING);
    GstMessage *msg =
        gst_bus_timed_pop_filtered(bus, 300 * GST_SECOND, GstMessageType(GST_MESSAGE_EOS | GST_MESSAGE_ERROR));
    if (!msg || GST_MESSAGE_TYPE(msg) != GST_MESSAGE_EOS || !last.buffer) {
      std::fprintf(stderr, "%s: no end of stream\n", launch.c_str());
      std::exit(1);
    }
    GstMemory *mem = gst_buffer_peek_memory(last.buffer, 0);
    if (gst_is_cs_memory(mem)) cs::event_synchronize(gst_cs_memory_get_ready_event(mem));
    seconds.push_back(std::chrono::duration<double>(Clock::now() - start).count());
    gst_message_unref(msg);
    gst_buffer_unref(last.buffer);
    gst_element_set_state(pipeline, GST_STATE_NULL);
    for (GstObject *o : {GST_OBJECT(bus), GST_OBJECT(src_pad), GST_OBJECT(src), GST_OBJECT(sink_pad),
                         GST_OBJECT(sink), GST_OBJECT(pipeline)})
      gst_object_unref(o);
  }
  return seconds;
}

}  // namespace bench
