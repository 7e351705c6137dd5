// Helpers of the tests of the SIFT elements' CUDA side (test_sift_cuda.cpp,
// test_sift_cuda_io.cpp): features of frames run through a pipeline,
// keypoint comparisons with the engine's descriptor tolerance, caps
// acceptance by an element's sink pad, and what an overlay changed.
#pragma once

#include <cstring>
#include <utility>
#include <vector>

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
                                          const std::vector<cv::Mat> &images, const BeforePlay &before_play = {}) {
  std::vector<GstBuffer *> frames;
  for (const cv::Mat &image : images) frames.push_back(make_frame(bgr_of(image), format));
  RunResult r = run(middle, frame_caps(format, images[0].cols, images[0].rows), frames, true, before_play);
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

inline Features run_one(const std::string &middle, GstVideoFormat format, const cv::Mat &image,
                        const BeforePlay &before_play = {}) {
  std::vector<Features> f = run_features(middle, format, {image}, before_play);
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

// Fractions of `a`'s set pixels with a set pixel of `b` within one pixel
// (8-neighbourhood), and the other way round.
inline std::pair<double, double> near_fractions(const cv::Mat &a, const cv::Mat &b) {
  cv::Mat grown_a, grown_b;
  const cv::Mat kernel = cv::Mat::ones(3, 3, CV_8U);
  cv::dilate(a, grown_a, kernel);
  cv::dilate(b, grown_b, kernel);
  const double na = cv::countNonZero(a), nb = cv::countNonZero(b);
  cv::Mat a_near_b, b_near_a;
  cv::bitwise_and(a, grown_b, a_near_b);
  cv::bitwise_and(b, grown_a, b_near_a);
  return {na ? cv::countNonZero(a_near_b) / na : 1.0, nb ? cv::countNonZero(b_near_a) / nb : 1.0};
}

// What "appsrc ! <middle> ! appsink" changed in a `format` frame of `bgr`
// (an overlay's marks): [0] the pixels of the first plane, [1] for NV12 and
// I420 the chroma samples (255 where changed). The frame's own pixels seldom
// equal a mark's colour (a test picks an unusual one), so the marks show.
inline std::vector<cv::Mat> overlay_changes(const std::string &middle, GstVideoFormat format, const cv::Mat &bgr,
                                            const BeforePlay &before_play = {}) {
  const int width = bgr.cols, height = bgr.rows;
  RunResult r = run(middle, frame_caps(format, width, height), {make_frame(bgr, format)}, true, before_play);
  EXPECT_EQ(r.error, "") << middle << ": " << r.everything();
  const GstVideoFormatInfo *f = gst_video_format_get_info(format);
  const bool yuv420 = GST_VIDEO_FORMAT_INFO_IS_YUV(f) && GST_VIDEO_FORMAT_INFO_N_PLANES(f) > 1 && f->w_sub[1] == 1 &&
                      f->h_sub[1] == 1;  // NV12, I420, P010, ...
  std::vector<cv::Mat> masks{cv::Mat::zeros(height, width, CV_8U)};
  if (yuv420) masks.push_back(cv::Mat::zeros((height + 1) / 2, (width + 1) / 2, CV_8U));
  if (r.buffers.empty()) return masks;
  GstBuffer *before = make_frame(bgr, format);
  GstVideoInfo info;
  gst_video_info_set_format(&info, format, guint(width), guint(height));
  GstVideoFrame a, b;
  EXPECT_TRUE(gst_video_frame_map(&a, &info, before, GST_MAP_READ));
  EXPECT_TRUE(gst_video_frame_map(&b, &info, r.buffers[0], GST_MAP_READ));
  // Component k's sample (x, y) in both frames, `bytes` of it (from the
  // start of the pixel for k = 0 and for interleaved chroma).
  auto differs = [&](int k, int x, int y, int bytes) {
    auto at = [&](GstVideoFrame &f) {
      const int start = GST_VIDEO_FRAME_COMP_POFFSET(&f, k);
      return static_cast<const uint8_t *>(GST_VIDEO_FRAME_COMP_DATA(&f, k)) - start +
             y * GST_VIDEO_FRAME_COMP_STRIDE(&f, k) + x * GST_VIDEO_FRAME_COMP_PSTRIDE(&f, k);
    };
    return std::memcmp(at(a), at(b), size_t(bytes)) != 0;
  };
  const int bytes = GST_VIDEO_INFO_COMP_PSTRIDE(&info, 0);
  for (int y = 0; y < height; ++y)
    for (int x = 0; x < width; ++x) masks[0].at<uchar>(y, x) = differs(0, x, y, bytes) ? 255 : 0;
  if (yuv420)
    for (int y = 0; y < masks[1].rows; ++y)
      for (int x = 0; x < masks[1].cols; ++x)
        masks[1].at<uchar>(y, x) =
            differs(1, x, y, GST_VIDEO_INFO_COMP_PSTRIDE(&info, 1)) ||
                    (GST_VIDEO_INFO_COMP_PLANE(&info, 2) != GST_VIDEO_INFO_COMP_PLANE(&info, 1) &&
                     differs(2, x, y, GST_VIDEO_INFO_COMP_PSTRIDE(&info, 2)))
                ? 255
                : 0;
  gst_video_frame_unmap(&a);
  gst_video_frame_unmap(&b);
  gst_buffer_unref(before);
  return masks;
}

// An overlay's changes drawn on the device (`device`) and through a CPU
// mapping (`mapped`) against OpenCV's drawing of the same keypoints into a
// system frame (`reference`), each as overlay_changes gives them: the
// device's marks within a pixel of OpenCV's (97 % of the samples both ways),
// the mapped ones OpenCV's exactly.
inline void expect_drawn_alike(const std::vector<cv::Mat> &reference, const std::vector<cv::Mat> &device,
                               const std::vector<cv::Mat> &mapped) {
  ASSERT_EQ(device.size(), reference.size());
  ASSERT_EQ(mapped.size(), reference.size());
  for (size_t k = 0; k < reference.size(); ++k) {
    SCOPED_TRACE(k == 0 ? "first plane" : "chroma");
    ASSERT_GT(cv::countNonZero(reference[k]), k == 0 ? 500 : 150) << "the overlay should have drawn something";
    const auto [reference_near, device_near] = near_fractions(reference[k], device[k]);
    EXPECT_GE(reference_near, 0.97);
    EXPECT_GE(device_near, 0.97);
    EXPECT_EQ(cv::countNonZero(mapped[k] != reference[k]), 0);
  }
}

// Frames uploaded by `upload` (into device memory), their features found
// on the device, then a tee: siftoverlay draws on one branch, the other
// downloads (`download`) and must get the frames undrawn, since both share
// the device frame and the overlay must draw into a copy of its own.
inline void expect_other_tee_branch_undrawn(const std::string &upload, const std::string &download) {
  const cv::Mat bgr = textured_bgr(320, 240, cs_test::fresh_seed());
  RunResult r = run(upload + " ! sift backend=cuda ! tee name=t "
                    "t. ! queue ! siftoverlay backend=cuda color=0xff0000 ! fakesink sync=false "
                    "t. ! queue ! " + download,
                    frame_caps(GST_VIDEO_FORMAT_BGRx, 320, 240),
                    {make_frame(bgr, GST_VIDEO_FORMAT_BGRx), make_frame(bgr, GST_VIDEO_FORMAT_BGRx)});
  ASSERT_EQ(r.error, "") << r.everything();
  ASSERT_EQ(r.buffers.size(), 2u);
  GstBuffer *expected = make_frame(bgr, GST_VIDEO_FORMAT_BGRx);
  GstMapInfo want;
  ASSERT_TRUE(gst_buffer_map(expected, &want, GST_MAP_READ));
  for (GstBuffer *b : r.buffers) {
    GstMapInfo got;
    ASSERT_TRUE(gst_buffer_map(b, &got, GST_MAP_READ));
    ASSERT_EQ(got.size, want.size);
    EXPECT_EQ(std::memcmp(got.data, want.data, want.size), 0) << "the other branch's frame was drawn on";
    gst_buffer_unmap(b, &got);
  }
  gst_buffer_unmap(expected, &want);
  gst_buffer_unref(expected);
}

inline constexpr const char *kDeviceGray =
    "video/x-raw(memory:CudaSensing), format=GRAY8, width=64, height=48, framerate=30/1";
inline constexpr const char *kSystemGray = "video/x-raw, format=GRAY8, width=64, height=48, framerate=30/1";


}  // namespace sift_test
