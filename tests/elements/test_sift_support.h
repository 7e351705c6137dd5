// Helpers for the SIFT element tests: synthetic textured images, frames in
// any of the supported video formats, a pipeline runner (appsrc "src" ->
// ... -> appsink "sink") that collects buffers and the first error, and
// OpenCV references in a canonical order.
#pragma once

#include <gst/app/gstappsink.h>
#include <gst/app/gstappsrc.h>
#include <gst/check/gstharness.h>
#include <gst/gst.h>
#include <gst/video/video.h>
#include <gtest/gtest.h>

#include <opencv2/features2d.hpp>
#include <opencv2/imgproc.hpp>

#include <algorithm>
#include <cstring>
#include <functional>
#include <numeric>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "gst/cudasensing/sift/gstsiftfeatures-opencv.hpp"
#include "test_support.h"

namespace sift_test {

// A BGR image with texture at several scales: smoothed noise, random
// rectangles and many discs (blobs, which SIFT finds), blurred a little.
inline cv::Mat textured_bgr(int width, int height, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> byte(0, 255);
  cv::Mat coarse(height / 6 + 2, width / 6 + 2, CV_8UC3);
  for (auto it = coarse.begin<cv::Vec3b>(); it != coarse.end<cv::Vec3b>(); ++it)
    *it = cv::Vec3b(uchar(byte(rng)), uchar(byte(rng)), uchar(byte(rng)));
  cv::Mat image;
  cv::resize(coarse, image, cv::Size(width, height), 0, 0, cv::INTER_CUBIC);
  std::uniform_int_distribution<int> xs(0, width - 1), ys(0, height - 1), rs(2, std::max(3, width / 24));
  const int shapes = std::max(20, width * height / 250);
  for (int i = 0; i < shapes; ++i) {
    const cv::Scalar colour(byte(rng), byte(rng), byte(rng));
    if (i % 8 == 0) {
      const cv::Point corner(xs(rng), ys(rng));
      cv::rectangle(image, corner, corner + cv::Point(rs(rng) * 2, rs(rng) * 2), colour, cv::FILLED);
    } else {
      cv::circle(image, cv::Point(xs(rng), ys(rng)), rs(rng), colour, cv::FILLED, cv::LINE_AA);
    }
  }
  cv::GaussianBlur(image, image, cv::Size(0, 0), 1.0);
  return image;
}

// A video frame of `format` holding `bgr`, written by GStreamer's own packing
// of the format (GstVideoFormatInfo's pack function): RGB formats get its
// colours, the others its gray (OpenCV's) as Y with neutral chroma, Y wider
// than 8 bits carrying the gray in its high byte and noise below it (as far
// as the format keeps those bits). Bytes the packing leaves alone, such as
// stride padding, are poisoned.
inline GstBuffer *make_frame(const cv::Mat &bgr, GstVideoFormat format, GstVideoInfo *info_out = nullptr) {
  GstVideoInfo info;
  gst_video_info_set_format(&info, format, guint(bgr.cols), guint(bgr.rows));
  GstBuffer *buf = gst_buffer_new_allocate(nullptr, GST_VIDEO_INFO_SIZE(&info), nullptr);
  gst_buffer_memset(buf, 0, 0xEE, GST_VIDEO_INFO_SIZE(&info));
  GstVideoFrame frame;
  gst_video_frame_map(&frame, &info, buf, GST_MAP_WRITE);
  const GstVideoFormatInfo *f = info.finfo;
  const bool rgb = GST_VIDEO_FORMAT_INFO_IS_RGB(f);
  const GstVideoFormat unpacked = f->unpack_format;
  const bool wide = unpacked == GST_VIDEO_FORMAT_AYUV64 || unpacked == GST_VIDEO_FORMAT_ARGB64;
  cv::Mat gray;
  cv::cvtColor(bgr, gray, cv::COLOR_BGR2GRAY);
  std::mt19937 rng(uint32_t(bgr.cols) * 131u + uint32_t(format));
  // `lines` lines of A, Y, U, V (or A, R, G, B), 8 or 16 bits each.
  const int lines = f->pack_lines, width = bgr.cols;
  std::vector<uint16_t> line16(size_t(4) * width * lines);
  std::vector<uint8_t> line8(line16.size());
  for (int y0 = 0; y0 < bgr.rows; y0 += lines) {
    for (int l = 0; l < lines; ++l) {
      const int y = std::min(y0 + l, bgr.rows - 1);
      for (int x = 0; x < width; ++x) {
        const size_t i = size_t(4) * (size_t(l) * width + x);
        const cv::Vec3b c = bgr.at<cv::Vec3b>(y, x);
        const uint8_t v[4] = {255, rgb ? c[2] : gray.at<uint8_t>(y, x), rgb ? c[1] : uint8_t(128),
                              rgb ? c[0] : uint8_t(128)};
        for (int k = 0; k < 4; ++k) {
          line8[i + k] = v[k];
          line16[i + k] = uint16_t(v[k] << 8 | (k == 1 && !rgb ? rng() & 0xFF : v[k]));
        }
      }
    }
    void *src = wide ? static_cast<void *>(line16.data()) : line8.data();
    f->pack_func(f, GST_VIDEO_PACK_FLAG_NONE, src, int(4 * width * (wide ? 2 : 1)), frame.data, frame.info.stride,
                 info.chroma_site, y0, width);
  }
  gst_video_frame_unmap(&frame);
  if (info_out) *info_out = info;
  return buf;
}

// The formats a factory's sink pad template offers in `memory` (a caps
// feature: system memory, the project's device memory, nvcodec's).
inline std::vector<GstVideoFormat> offered_formats(const char *factory_name,
                                                   const char *memory = GST_CAPS_FEATURE_MEMORY_SYSTEM_MEMORY) {
  std::vector<GstVideoFormat> out;
  GstElementFactory *factory = gst_element_factory_find(factory_name);
  if (!factory) return out;
  GstCapsFeatures *wanted = gst_caps_features_new(memory, nullptr);
  for (const GList *t = gst_element_factory_get_static_pad_templates(factory); t; t = t->next) {
    auto *tmpl = static_cast<GstStaticPadTemplate *>(t->data);
    if (tmpl->direction != GST_PAD_SINK) continue;
    GstCaps *caps = gst_static_caps_get(&tmpl->static_caps);
    for (guint i = 0; i < gst_caps_get_size(caps); ++i) {
      const GstCapsFeatures *features = gst_caps_get_features(caps, i);
      if (!gst_caps_features_is_equal(features ? features : GST_CAPS_FEATURES_MEMORY_SYSTEM_MEMORY, wanted)) continue;
      const GValue *formats = gst_structure_get_value(gst_caps_get_structure(caps, i), "format");
      for (guint k = 0; formats && k < gst_value_list_get_size(formats); ++k)
        out.push_back(gst_video_format_from_string(g_value_get_string(gst_value_list_get_value(formats, k))));
    }
    gst_caps_unref(caps);
  }
  gst_caps_features_free(wanted);
  gst_object_unref(factory);
  return out;
}

inline GstCaps *frame_caps(GstVideoFormat format, int width, int height) {
  GstVideoInfo info;
  gst_video_info_set_format(&info, format, guint(width), guint(height));
  GST_VIDEO_INFO_FPS_N(&info) = 30;
  GST_VIDEO_INFO_FPS_D(&info) = 1;
  return gst_video_info_to_caps(&info);
}

struct RunResult {
  std::vector<GstBuffer *> buffers;
  std::string error, error_debug;
  RunResult() = default;
  RunResult(const RunResult &) = delete;
  RunResult(RunResult &&o) noexcept : buffers(std::move(o.buffers)), error(o.error), error_debug(o.error_debug) {
    o.buffers.clear();
  }
  ~RunResult() {
    for (GstBuffer *b : buffers) gst_buffer_unref(b);
  }
  std::string everything() const { return error + " | " + error_debug; }
};

// Called with the pipeline before it plays (to set a context on it, say).
using BeforePlay = std::function<void(GstElement *pipeline)>;

// Runs "appsrc name=src ! <middle> ! appsink name=sink" (without the appsink
// when `middle` ends in a sink of its own), pushing `frames` with `caps`
// (taken) and timestamps 0, 1/30 s, ...; takes the frames.
inline RunResult run(const std::string &middle, GstCaps *caps, std::vector<GstBuffer *> frames,
                     bool append_appsink = true, const BeforePlay &before_play = {}) {
  RunResult result;
  const std::string launch = "appsrc name=src format=time ! " + middle +
                             (append_appsink ? " ! appsink name=sink sync=false" : "");
  GError *err = nullptr;
  GstElement *pipeline = gst_parse_launch(launch.c_str(), &err);
  if (!pipeline || err) {
    result.error = std::string("parse: ") + (err ? err->message : "?");
    g_clear_error(&err);
    gst_caps_unref(caps);
    for (GstBuffer *b : frames) gst_buffer_unref(b);
    if (pipeline) gst_object_unref(pipeline);
    return result;
  }
  GstElement *src = gst_bin_get_by_name(GST_BIN(pipeline), "src");
  GstElement *sink = gst_bin_get_by_name(GST_BIN(pipeline), "sink");
  g_object_set(src, "caps", caps, nullptr);
  gst_caps_unref(caps);
  if (sink) g_object_set(sink, "emit-signals", FALSE, "max-buffers", 0u, nullptr);
  GstBus *bus = gst_element_get_bus(pipeline);
  if (before_play) before_play(pipeline);
  gst_element_set_state(pipeline, GST_STATE_PLAYING);
  for (size_t i = 0; i < frames.size(); ++i) {
    GST_BUFFER_PTS(frames[i]) = gst_util_uint64_scale(i, GST_SECOND, 30);
    GST_BUFFER_DURATION(frames[i]) = GST_SECOND / 30;
    gst_app_src_push_buffer(GST_APP_SRC(src), frames[i]);
  }
  gst_app_src_end_of_stream(GST_APP_SRC(src));
  // appsink holds EOS back until its samples are pulled: pull while waiting.
  auto pull = [&] {
    if (!sink) return;
    while (GstSample *s = gst_app_sink_try_pull_sample(GST_APP_SINK(sink), 0)) {
      result.buffers.push_back(gst_buffer_ref(gst_sample_get_buffer(s)));
      gst_sample_unref(s);
    }
  };
  const gint64 deadline = g_get_monotonic_time() + 120 * G_USEC_PER_SEC;
  for (bool done = false; !done;) {
    pull();
    GstMessage *msg = gst_bus_timed_pop_filtered(bus, 5 * GST_MSECOND,
                                                 GstMessageType(GST_MESSAGE_EOS | GST_MESSAGE_ERROR));
    if (!msg) {
      if (g_get_monotonic_time() > deadline) {
        result.error = "timeout";
        break;
      }
      continue;
    }
    if (GST_MESSAGE_TYPE(msg) == GST_MESSAGE_ERROR) {
      GError *e = nullptr;
      gchar *debug = nullptr;
      gst_message_parse_error(msg, &e, &debug);
      result.error = e ? e->message : "?";
      result.error_debug = debug ? debug : "";
      g_clear_error(&e);
      g_free(debug);
    }
    done = true;
    gst_message_unref(msg);
  }
  pull();
  gst_element_set_state(pipeline, GST_STATE_NULL);
  gst_object_unref(bus);
  gst_object_unref(src);
  if (sink) gst_object_unref(sink);
  gst_object_unref(pipeline);
  return result;
}

struct Features {
  std::vector<cv::KeyPoint> keypoints;
  cv::Mat descriptors;
};

inline Features from_meta(const GstSiftFeaturesMeta &m) {
  return {gst_sift::keypoints(m), gst_sift::descriptors(m)};
}

// Every field of a keypoint, for exact comparisons and a total order.
inline auto key(const cv::KeyPoint &k) {
  return std::make_tuple(k.pt.x, k.pt.y, k.size, k.angle, k.response, k.octave, k.class_id);
}

// Sorted by all keypoint fields (and descriptor rows with them): the test's
// own order, independent of the element's.
inline Features sorted(const Features &f) {
  std::vector<int> idx(f.keypoints.size());
  std::iota(idx.begin(), idx.end(), 0);
  std::stable_sort(idx.begin(), idx.end(), [&](int a, int b) {
    if (key(f.keypoints[a]) != key(f.keypoints[b])) return key(f.keypoints[a]) < key(f.keypoints[b]);
    return std::lexicographical_compare(f.descriptors.ptr(a), f.descriptors.ptr(a) + f.descriptors.cols * f.descriptors.elemSize(),
                                        f.descriptors.ptr(b), f.descriptors.ptr(b) + f.descriptors.cols * f.descriptors.elemSize());
  });
  Features out;
  out.descriptors.create(int(idx.size()), f.descriptors.cols, f.descriptors.type());
  for (size_t i = 0; i < idx.size(); ++i) {
    out.keypoints.push_back(f.keypoints[size_t(idx[i])]);
    f.descriptors.row(idx[i]).copyTo(out.descriptors.row(int(i)));
  }
  return out;
}

// Same keypoints (every field) in the same order; descriptor elements
// within `descriptor_tolerance` of each other (equal by default).
inline void expect_same(const Features &a, const Features &b, double descriptor_tolerance = 0.0) {
  ASSERT_EQ(a.keypoints.size(), b.keypoints.size());
  for (size_t i = 0; i < a.keypoints.size(); ++i)
    ASSERT_TRUE(key(a.keypoints[i]) == key(b.keypoints[i])) << "keypoint " << i;
  ASSERT_EQ(a.descriptors.rows, b.descriptors.rows);
  ASSERT_EQ(a.descriptors.type(), b.descriptors.type());
  if (a.descriptors.rows) {
    EXPECT_LE(cv::norm(a.descriptors, b.descriptors, cv::NORM_INF), descriptor_tolerance);
  }
}

// OpenCV's SIFT on an image (BGR or gray) with OpenCV's default parameters
// unless given.
inline Features opencv_sift(const cv::Mat &image, int descriptor_type = CV_8U, int n_features = 0) {
  Features f;
  cv::SIFT::create(n_features, 3, 0.04, 10, 1.6, descriptor_type)
      ->detectAndCompute(image, cv::noArray(), f.keypoints, f.descriptors);
  return f;
}

// What came out of a QoS run: each frame's time and DISCONT mark, and the
// QoS messages posted (the element's name, its running time, its count of
// dropped frames).
struct QosRun {
  struct Frame {
    GstClockTime pts;
    bool discont;
  };
  struct Message {
    std::string source;
    GstClockTime running_time;
    guint64 dropped;
  };
  std::vector<Frame> frames;
  std::vector<Message> messages;
};

// Pushes `frame` at each of `times` (30 fps durations) through the harness
// of `launch`, a downstream QoS event before the frame at `qos_before`
// declaring running times up to `earliest` late (as a synchronised sink
// does), then EOS; returns what came out.
inline QosRun run_with_late_frames(const std::string &launch, const cv::Mat &frame,
                                   const std::vector<GstClockTime> &times, size_t qos_before,
                                   GstClockTime earliest) {
  GstHarness *h = gst_harness_new_parse(launch.c_str());
  GstBus *bus = gst_bus_new();
  gst_element_set_bus(h->element, bus);
  gst_harness_set_src_caps(h, frame_caps(GST_VIDEO_FORMAT_GRAY8, frame.cols, frame.rows));
  for (size_t i = 0; i < times.size(); ++i) {
    if (i == qos_before) {
      // earliest = timestamp + diff: a frame at `earliest` - 10 ms came 10 ms late
      const GstClockTime shown = earliest - 10 * GST_MSECOND;
      EXPECT_TRUE(gst_harness_push_upstream_event(
          h, gst_event_new_qos(GST_QOS_TYPE_UNDERFLOW, 1.5, GstClockTimeDiff(10 * GST_MSECOND), shown)));
    }
    GstBuffer *buf = make_frame(frame, GST_VIDEO_FORMAT_GRAY8);
    GST_BUFFER_PTS(buf) = times[i];
    GST_BUFFER_DURATION(buf) = GST_SECOND / 30;
    EXPECT_EQ(gst_harness_push(h, buf), GST_FLOW_OK) << "frame " << i;
  }
  EXPECT_TRUE(gst_harness_push_event(h, gst_event_new_eos()));
  QosRun run;
  while (GstBuffer *out = gst_harness_try_pull(h)) {
    run.frames.push_back({GST_BUFFER_PTS(out), GST_BUFFER_IS_DISCONT(out) != FALSE});
    gst_buffer_unref(out);
  }
  while (GstMessage *m = gst_bus_pop_filtered(bus, GST_MESSAGE_QOS)) {
    QosRun::Message q{GST_OBJECT_NAME(GST_MESSAGE_SRC(m)), GST_CLOCK_TIME_NONE, 0};
    gboolean live;
    guint64 stream_time, timestamp, duration, processed;
    GstFormat format;
    gst_message_parse_qos(m, &live, &q.running_time, &stream_time, &timestamp, &duration);
    gst_message_parse_qos_stats(m, &format, &processed, &q.dropped);
    run.messages.push_back(q);
    gst_message_unref(m);
  }
  gst_element_set_bus(h->element, nullptr);
  gst_object_unref(bus);
  gst_harness_teardown(h);
  return run;
}

// A run of frames at 0, 100, 300, 400 and 500 ms with QoS declaring up to
// 300 ms late before the second: `dropper`, and only it, drops the frames
// at 100 and 300 ms with a QoS message each; the frame after the gap comes
// marked DISCONT.
inline void expect_late_frames_dropped(const std::string &launch, const std::string &dropper) {
  SCOPED_TRACE(launch);
  const std::vector<GstClockTime> times = {0, 100 * GST_MSECOND, 300 * GST_MSECOND, 400 * GST_MSECOND,
                                           500 * GST_MSECOND};
  const QosRun run = run_with_late_frames(launch, textured_bgr(160, 120, 5), times, 1, 300 * GST_MSECOND);
  ASSERT_EQ(run.frames.size(), 3u);
  EXPECT_EQ(run.frames[0].pts, 0u);
  EXPECT_EQ(run.frames[1].pts, 400 * GST_MSECOND);
  EXPECT_TRUE(run.frames[1].discont) << "the frame after the dropped ones";
  EXPECT_EQ(run.frames[2].pts, 500 * GST_MSECOND);
  EXPECT_FALSE(run.frames[2].discont);
  ASSERT_EQ(run.messages.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(run.messages[i].source, dropper);
    EXPECT_EQ(run.messages[i].dropped, i + 1);
  }
  EXPECT_EQ(run.messages[0].running_time, 100 * GST_MSECOND);
  EXPECT_EQ(run.messages[1].running_time, 300 * GST_MSECOND);
}

}  // namespace sift_test
