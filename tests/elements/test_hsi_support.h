// Helpers for the hyperspectral element tests: run a pipeline that ends in
// an appsink named "sink" and collect what arrives, with the first error.
#pragma once

#include <gst/app/gstappsink.h>
#include <gst/gst.h>
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "gst/cudasensing/hsi/gsthsiblockmeta.h"
#include "kernels/hsi/hsi_test_util.h"

namespace hsi_element_test {

struct Received {
  GstBuffer *buffer = nullptr;
  GstCaps *caps = nullptr;
};

struct RunResult {
  std::vector<Received> samples;
  std::map<std::string, std::vector<Received>> branches;  // further appsinks, by name
  bool eos = false;
  std::string error;         // first error message text ("" = none)
  std::string error_source;  // name of the element that posted it
  std::string error_debug;
  std::vector<std::string> warnings;  // every warning's text, in order

  RunResult() = default;
  RunResult(const RunResult &) = delete;
  RunResult &operator=(const RunResult &) = delete;
  RunResult(RunResult &&other) noexcept { *this = std::move(other); }
  RunResult &operator=(RunResult &&other) noexcept {
    std::swap(samples, other.samples);
    std::swap(branches, other.branches);
    eos = other.eos;
    error = other.error;
    error_source = other.error_source;
    error_debug = other.error_debug;
    std::swap(warnings, other.warnings);
    return *this;
  }
  ~RunResult() {
    auto release = [](std::vector<Received> &list) {
      for (Received &r : list) {
        gst_buffer_unref(r.buffer);
        gst_caps_unref(r.caps);
      }
    };
    release(samples);
    for (auto &[name, list] : branches) release(list);
  }
  // The bytes of a buffer (mapped for the CPU: device memory downloads).
  static std::vector<uint8_t> bytes_of(const Received &r) {
    GstMapInfo map;
    if (!gst_buffer_map(r.buffer, &map, GST_MAP_READ)) return {};
    std::vector<uint8_t> v(map.data, map.data + map.size);
    gst_buffer_unmap(r.buffer, &map);
    return v;
  }
  // The bytes of sample i of the appsink "sink".
  std::vector<uint8_t> bytes(size_t i) const { return bytes_of(samples[i]); }
  std::string everything() const { return error_source + ": " + error + " | " + error_debug; }
};

// Runs `launch` (which must contain `appsink name=sink`) to EOS or error.
// `branch_sinks`: names of further appsinks whose samples go to branches;
// `prepare`, when given, sees the pipeline before it plays (probes...).
inline RunResult run_pipeline(const std::string &launch, const std::vector<std::string> &branch_sinks = {},
                              const std::function<void(GstElement *)> &prepare = {}) {
  RunResult result;
  GError *parse_error = nullptr;
  GstElement *pipeline = gst_parse_launch(launch.c_str(), &parse_error);
  if (!pipeline || parse_error) {
    result.error = std::string("parse: ") + (parse_error ? parse_error->message : "?");
    g_clear_error(&parse_error);
    if (pipeline) gst_object_unref(pipeline);
    return result;
  }
  GstElement *sink = gst_bin_get_by_name(GST_BIN(pipeline), "sink");
  g_object_set(sink, "sync", FALSE, "max-buffers", 0u, nullptr);
  std::vector<std::pair<std::string, GstElement *>> others;
  for (const std::string &name : branch_sinks) {
    GstElement *other = gst_bin_get_by_name(GST_BIN(pipeline), name.c_str());
    if (!other) {
      result.error = "no appsink named " + name;
      continue;
    }
    g_object_set(other, "sync", FALSE, "max-buffers", 0u, nullptr);
    others.emplace_back(name, other);
    result.branches[name];
  }
  // Takes what the further appsinks hold.
  auto drain_branches = [&]() {
    for (auto &[name, other] : others)
      while (GstSample *sample = gst_app_sink_try_pull_sample(GST_APP_SINK(other), 0)) {
        Received r;
        r.buffer = gst_buffer_ref(gst_sample_get_buffer(sample));
        r.caps = gst_caps_ref(gst_sample_get_caps(sample));
        result.branches[name].push_back(r);
        gst_sample_unref(sample);
      }
  };
  GstBus *bus = gst_element_get_bus(pipeline);
  bool pipeline_eos = false;
  // Reads every pending bus message; true when an error came.
  auto read_bus = [&](GstClockTime wait) {
    bool error = false;
    while (GstMessage *msg = gst_bus_timed_pop(bus, wait)) {
      wait = 0;
      if (GST_MESSAGE_TYPE(msg) == GST_MESSAGE_EOS) pipeline_eos = true;
      if (GST_MESSAGE_TYPE(msg) == GST_MESSAGE_WARNING) {
        GError *err = nullptr;
        gst_message_parse_warning(msg, &err, nullptr);
        result.warnings.push_back(err ? err->message : "?");
        g_clear_error(&err);
      }
      if (GST_MESSAGE_TYPE(msg) == GST_MESSAGE_ERROR) {
        error = true;
        if (result.error.empty()) {
          GError *err = nullptr;
          gchar *debug = nullptr;
          gst_message_parse_error(msg, &err, &debug);
          result.error = err ? err->message : "?";
          result.error_debug = debug ? debug : "";
          result.error_source = GST_OBJECT_NAME(GST_MESSAGE_SRC(msg));
          g_clear_error(&err);
          g_free(debug);
        }
      }
      gst_message_unref(msg);
    }
    return error;
  };
  if (prepare) prepare(pipeline);
  gst_element_set_state(pipeline, GST_STATE_PLAYING);
  const gint64 deadline = g_get_monotonic_time() + 60 * G_USEC_PER_SEC;
  bool error = false;
  while (g_get_monotonic_time() < deadline) {
    drain_branches();
    if (GstSample *sample = gst_app_sink_try_pull_sample(GST_APP_SINK(sink), 20 * GST_MSECOND)) {
      Received r;
      r.buffer = gst_buffer_ref(gst_sample_get_buffer(sample));
      r.caps = gst_caps_ref(gst_sample_get_caps(sample));
      result.samples.push_back(r);
      gst_sample_unref(sample);
      continue;
    }
    if ((error = read_bus(0)) || gst_app_sink_is_eos(GST_APP_SINK(sink))) break;
  }
  result.eos = gst_app_sink_is_eos(GST_APP_SINK(sink));
  // The pipeline's EOS comes once every sink has it (other branches of a tee
  // may still be writing when the appsink is done). The further appsinks
  // are drained meanwhile: an appsink holds its EOS until its samples are
  // taken (wait-on-eos), so a branch whose last samples arrived after the
  // main sink's EOS kept the pipeline from it until the deadline.
  while (!error && result.eos && !pipeline_eos && g_get_monotonic_time() < deadline) {
    drain_branches();
    error = read_bus(20 * GST_MSECOND);
  }
  drain_branches();
  gst_object_unref(bus);
  for (auto &[name, other] : others) gst_object_unref(other);
  gst_element_set_state(pipeline, GST_STATE_NULL);
  gst_object_unref(sink);
  gst_object_unref(pipeline);
  return result;
}

// A synthetic ENVI image: header text written next to the data.
struct SyntheticCube {
  size_t samples = 7, lines = 10, bands = 5;
  cs::hsi::DataType type = cs::hsi::DataType::f32;
  cs::hsi::Interleave interleave = cs::hsi::Interleave::bip;
  cs::hsi::ByteOrder order = cs::hsi::ByteOrder::little_endian;
  size_t header_offset = 0;
  std::string extra;  // further header lines

  std::string header_text() const {
    return std::string("ENVI\ndescription = {synthetic test cube}\n") + "samples = " + std::to_string(samples) +
           "\nlines = " + std::to_string(lines) + "\nbands = " + std::to_string(bands) +
           "\nheader offset = " + std::to_string(header_offset) + "\nfile type = ENVI Standard\ndata type = " +
           std::to_string(int(type)) + "\ninterleave = " + cs::hsi::interleave_name(interleave) +
           "\nbyte order = " + std::to_string(int(order)) + "\n" + extra;
  }
  size_t sample_bytes() const { return cs::hsi::sample_size(type); }
  // Index (in samples) of (line, sample, band) in the whole file's data.
  size_t index(size_t line, size_t s, size_t band) const {
    switch (interleave) {
      case cs::hsi::Interleave::bip: return (line * samples + s) * bands + band;
      case cs::hsi::Interleave::bil: return (line * bands + band) * samples + s;
      case cs::hsi::Interleave::bsq: break;
    }
    return (band * lines + line) * samples + s;
  }
  // The block of lines [first, first + count) as the stream should carry it
  // (BSQ: band planes of those lines), from the file's data bytes.
  std::vector<uint8_t> expected_block(const std::vector<uint8_t> &data, size_t first, size_t count) const {
    std::vector<uint8_t> out;
    const size_t b = sample_bytes();
    auto append = [&](size_t idx) { out.insert(out.end(), data.begin() + long(idx * b), data.begin() + long((idx + 1) * b)); };
    if (interleave == cs::hsi::Interleave::bsq) {
      for (size_t band = 0; band < bands; ++band)
        for (size_t l = first; l < first + count; ++l)
          for (size_t s = 0; s < samples; ++s) append(index(l, s, band));
    } else {
      for (size_t i = index(first, 0, 0); i < index(first + count, 0, 0); ++i) append(i);
    }
    return out;
  }
  // Writes name.hdr and name.img (with the header offset's filler bytes).
  void write(const std::string &base, const std::vector<uint8_t> &data) const {
    hsi_test::write_text(base + ".hdr", header_text());
    std::vector<uint8_t> file(header_offset, 0xAB);
    file.insert(file.end(), data.begin(), data.end());
    hsi_test::write_bytes(base + ".img", file.data(), file.size());
  }
};

// A small f32 cube of random reflectances with five wavelengths (450-850
// nm): "small.hdr" in `dir`, whose path is returned.
inline std::string write_small_cube(const hsi_test::ScratchDir &dir) {
  SyntheticCube cube;
  cube.extra = "wavelength = {450, 550, 650, 750, 850}\nwavelength units = nm\n";
  std::vector<float> values(cube.samples * cube.lines * cube.bands);
  std::mt19937 rng(cs_test::fresh_seed());
  for (float &v : values) v = 0.1f + float(rng() % 1000) / 1000.0f;
  std::vector<uint8_t> data(values.size() * 4);
  std::memcpy(data.data(), values.data(), data.size());
  cube.write(dir.file("small"), data);
  return dir.file("small.hdr");
}

}  // namespace hsi_element_test
