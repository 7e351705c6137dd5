// Helpers of the tests of the SIFT elements' CUDA side (test_sift_cuda.cpp,
// test_sift_cuda_io.cpp): features of frames run through a pipeline,
// keypoint comparisons with the engine's descriptor tolerance, and caps
// acceptance by an element's sink pad.
#pragma once

#include "test_sift_support.h"

namespace sift_test {

// A BGR image of a gray or BGR one.
inline cv::Mat bgr_of(const cv::Mat &image) {
  if (image.channels() == 3) return image;
  cv::Mat bgr;
  cv::cvtColor(image, bgr, cv::COLOR_GRAY2BGR);
  return bgr;
}

// The features of each output frame of "appsrc ! <middle> ! appsink".
inline std::vector<Features> run_features(const std::string &middle, GstVideoFormat format,
                                   const std::vector<cv::Mat> &images) {
  std::vector<GstBuffer *> frames;
  for (const cv::Mat &image : images) frames.push_back(make_frame(bgr_of(image), format));
  RunResult r = run(middle, frame_caps(format, images[0].cols, images[0].rows), frames);
  EXPECT_EQ(r.error, "") << middle << ": " << r.everything();
  EXPECT_EQ(r.buffers.size(), images.size()) << middle;
  std::vector<Features> out;
  for (GstBuffer *b : r.buffers) {
    const GstSiftFeaturesMeta *m = gst_buffer_get_sift_features_meta(b);
    EXPECT_NE(m, nullptr) << middle << ": a frame without a features meta";
    if (!m) continue;
    EXPECT_EQ(m->image_width, guint(images[0].cols));
    EXPECT_EQ(m->image_height, guint(images[0].rows));
    out.push_back(from_meta(*m));
  }
  return out;
}

inline Features run_one(const std::string &middle, GstVideoFormat format, const cv::Mat &image) {
  std::vector<Features> f = run_features(middle, format, {image});
  return f.empty() ? Features{} : f[0];
}

// Same keypoints (every field) in the same order; descriptors may differ by
// one step, as the engine sums descriptor histograms with atomics (its
// documented run-to-run variation of a descriptor byte by one, rarely).
inline void expect_same_keypoints(const Features &a, const Features &b, double descriptor_tolerance = 1.0) {
  expect_same(a, b, descriptor_tolerance);
}

// Whether `factory`'s sink pad accepts `caps_string`, with an integer or
// enum property set (before start: what the element would negotiate).
inline bool accepts(const char *factory, const char *caps_string, const char *property = nullptr, int value = 0) {
  GstElement *e = gst_element_factory_make(factory, nullptr);
  if (property) g_object_set(e, property, value, nullptr);
  GstPad *sink = gst_element_get_static_pad(e, "sink");
  GstCaps *caps = gst_caps_from_string(caps_string);
  const bool ok = gst_pad_query_accept_caps(sink, caps);
  gst_caps_unref(caps);
  gst_object_unref(sink);
  gst_object_unref(e);
  return ok;
}

inline constexpr const char *kDeviceGray =
    "video/x-raw(memory:CudaSensing), format=GRAY8, width=64, height=48, framerate=30/1";
inline constexpr const char *kSystemGray = "video/x-raw, format=GRAY8, width=64, height=48, framerate=30/1";


}  // namespace sift_test
