// The CUDA side of the SIFT elements: sift backend=cuda against OpenCV on
// natural images (the criteria), every input format and memory,
// determinism, empty and tiny frames; the staged elements siftpyramid !
// siftdetect ! siftdescribe against sift, also with queues between them;
// siftoverlay drawing on device frames; sift's frames in flight (the same
// features in the same order for any count, EOS, flushes, errors, no frame
// leaked). GPU tests are in Gpu* suites and skip without
// a device; the CPU tests check what needs no device (the luma formula of the
// RGB kernel, the device overlay's pixel test against OpenCV's drawing,
// errors, caps, properties).
#include <gst/check/gstharness.h>
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <numeric>

#include "../../plugins/sift/sift-draw.h"
#include "../../plugins/sift/sift-formats.h"
#include "../../plugins/sift/sift-luma.h"
#include "common/host_resources.h"
#include "gst/cudasensing/sift/gstsiftfeaturesmeta.h"
#include "sift_test_util.h"
#include "test_sift_cuda_support.h"
#include "test_sift_support.h"

using namespace sift_test;

namespace {

// Width 318: GRAY8, NV12 and I420 rows are padded to 320 bytes.
constexpr int kWidth = 318, kHeight = 240;

cv::Mat gray_of(const cv::Mat &bgr) {
  if (bgr.channels() == 1) return bgr;
  cv::Mat g;
  cv::cvtColor(bgr, g, cv::COLOR_BGR2GRAY);
  return g;
}

cv::Mat as_float(const cv::Mat &m) {
  cv::Mat f;
  m.convertTo(f, CV_32F);
  return f;
}

// --------------------------------------------------------------- CPU tests

TEST(SiftLuma, EqualsOpenCVsColourToGrayForEveryColour) {
  // All 2^24 colours, as RGBA and as BGRA pixels, against cv::cvtColor.
  cv::Mat rgba(4096, 4096, CV_8UC4);
  for (int y = 0; y < rgba.rows; ++y)
    for (int x = 0; x < rgba.cols; ++x) {
      const uint32_t c = uint32_t(y) * 4096u + uint32_t(x);
      rgba.at<cv::Vec4b>(y, x) = cv::Vec4b(uchar(c >> 16), uchar(c >> 8), uchar(c), uchar(c * 7));
    }
  for (const auto &[code, order] : {std::make_pair(cv::COLOR_RGBA2GRAY, gstsift::kRgbaOrder),
                                    std::make_pair(cv::COLOR_BGRA2GRAY, gstsift::kBgraOrder)}) {
    cv::Mat expected;
    cv::cvtColor(rgba, expected, code);
    size_t differ = 0;
    for (int y = 0; y < rgba.rows; ++y)
      for (int x = 0; x < rgba.cols; ++x) {
        const cv::Vec4b p = rgba.at<cv::Vec4b>(y, x);
        differ += gstsift::luma_bt601(p[order.r], p[order.g], p[order.b]) != expected.at<uchar>(y, x);
      }
    EXPECT_EQ(differ, 0u) << "colour-to-gray code " << code;
  }
}

TEST(SiftLuma, EveryListedFormatGivesGStreamersOwnLuma) {
  // Random frames of every format sift lists, read by luma_layout + luma_at
  // (what both backends do) and by GStreamer's own unpacking: Y (its high
  // byte when wider than 8 bits), or the BT.601 gray of the unpacked colours.
  GstCaps *caps = gst_caps_from_string("video/x-raw, format=(string)" SIFT_FORMATS);
  ASSERT_NE(caps, nullptr);
  const GValue *formats = gst_structure_get_value(gst_caps_get_structure(caps, 0), "format");
  ASSERT_NE(formats, nullptr);
  ASSERT_GE(gst_value_list_get_size(formats), 30u);
  std::mt19937 rng(cs_test::fresh_seed());
  for (guint k = 0; k < gst_value_list_get_size(formats); ++k) {
    const char *name = g_value_get_string(gst_value_list_get_value(formats, k));
    SCOPED_TRACE(name);
    const GstVideoFormat format = gst_video_format_from_string(name);
    ASSERT_NE(format, GST_VIDEO_FORMAT_UNKNOWN);
    gstsift::LumaLayout layout;
    ASSERT_NO_THROW(layout = gstsift::luma_layout(format));
    constexpr int kFrameWidth = 37, kFrameHeight = 6;  // odd: a packed 4:2:2 row's last pixel shares its chroma
    GstVideoInfo info;
    ASSERT_TRUE(gst_video_info_set_format(&info, format, kFrameWidth, kFrameHeight));
    std::vector<uint8_t> bytes(GST_VIDEO_INFO_SIZE(&info));
    for (uint8_t &b : bytes) b = uint8_t(rng());
    GstBuffer *buf = gst_buffer_new_wrapped_full(GstMemoryFlags(0), bytes.data(), bytes.size(), 0, bytes.size(),
                                                 nullptr, nullptr);
    GstVideoFrame frame;
    ASSERT_TRUE(gst_video_frame_map(&frame, &info, buf, GST_MAP_READ));
    const GstVideoFormatInfo *f = info.finfo;
    const bool wide = f->unpack_format == GST_VIDEO_FORMAT_AYUV64;
    std::vector<uint16_t> unpacked(size_t(4) * kFrameWidth);  // A, Y, U, V or A, R, G, B; 8 or 16 bits each
    size_t differ = 0;
    for (int y = 0; y < kFrameHeight; ++y) {
      f->unpack_func(f, GST_VIDEO_PACK_FLAG_NONE, unpacked.data(), frame.data, frame.info.stride, 0, y, kFrameWidth);
      const auto *row = static_cast<const uint8_t *>(GST_VIDEO_FRAME_PLANE_DATA(&frame, 0)) +
                        size_t(y) * size_t(GST_VIDEO_FRAME_PLANE_STRIDE(&frame, 0));
      const auto *narrow = reinterpret_cast<const uint8_t *>(unpacked.data());
      for (int x = 0; x < kFrameWidth; ++x) {
        const auto component = [&](int c) { return wide ? unpacked[4 * x + c] >> 8 : narrow[4 * x + c]; };
        const uint8_t expected = layout.rgb ? gstsift::luma_bt601(component(1), component(2), component(3))
                                            : uint8_t(component(1));
        differ += gstsift::luma_at(row, x, layout) != expected;
      }
    }
    EXPECT_EQ(differ, 0u) << "of " << kFrameWidth * kFrameHeight << " pixels";
    gst_video_frame_unmap(&frame);
    gst_buffer_unref(buf);
  }
  gst_caps_unref(caps);
  for (GstVideoFormat refused : {GST_VIDEO_FORMAT_RGB16, GST_VIDEO_FORMAT_v210, GST_VIDEO_FORMAT_GBR,
                                 GST_VIDEO_FORMAT_NV12_64Z32, GST_VIDEO_FORMAT_UNKNOWN})
    EXPECT_THROW(gstsift::luma_layout(refused), std::invalid_argument) << gst_video_format_to_string(refused);
}

TEST(SiftDraw, DevicePixelTestFollowsOpenCVsDrawing) {
  // The device overlay sets the pixels on_mark() accepts; OpenCV's cv::circle
  // and cv::line (the CPU overlay) rasterise the same marks. They must agree
  // to within a pixel both ways (so a mark can be neither thicker nor thinner
  // than OpenCV's by more than a pixel), for thin and thick marks, small and large.
  std::mt19937 rng(cs_test::fresh_seed());
  // Marks inside the picture: where OpenCV clips a circle at the image border it adds pixels of its own.
  std::uniform_real_distribution<float> pos(64.f, 136.f), size(1.f, 100.f), angle(0.f, 360.f);
  for (int thickness : {1, 2, 3, 5}) {
    double worst_cv = 1, worst_mark = 1;
    for (int trial = 0; trial < 200; ++trial) {
      const float a = trial % 10 == 0 ? -1.f : angle(rng);
      const gstsift::KeypointMark m = gstsift::keypoint_mark(pos(rng), pos(rng), size(rng), a, 1.0, 1.0);
      cv::Mat opencv = cv::Mat::zeros(200, 200, CV_8U), mark = cv::Mat::zeros(200, 200, CV_8U);
      cv::circle(opencv, cv::Point(m.cx, m.cy), m.radius, cv::Scalar(255), thickness, cv::LINE_8);
      if (m.has_line) cv::line(opencv, cv::Point(m.cx, m.cy), cv::Point(m.tip_x, m.tip_y), cv::Scalar(255), thickness, cv::LINE_8);
      const int reach = gstsift::mark_reach(m, thickness);
      for (int y = std::max(0, m.cy - reach); y <= std::min(199, m.cy + reach); ++y)
        for (int x = std::max(0, m.cx - reach); x <= std::min(199, m.cx + reach); ++x)
          if (gstsift::on_mark(m, x, y, thickness)) mark.at<uchar>(y, x) = 255;
      // Nothing outside the reach: the kernel only looks there.
      cv::Mat outside = mark.clone();
      for (int y = 0; y < 200; ++y)
        for (int x = 0; x < 200; ++x) outside.at<uchar>(y, x) = gstsift::on_mark(m, x, y, thickness) ? 255 : 0;
      ASSERT_EQ(cv::countNonZero(outside != mark), 0) << "a pixel beyond mark_reach is on the mark";
      const auto [cv_near, mark_near] = near_fractions(opencv, mark);
      worst_cv = std::min(worst_cv, cv_near);
      worst_mark = std::min(worst_mark, mark_near);
    }
    EXPECT_GE(worst_cv, 0.97) << "OpenCV pixels far from the device's marks, thickness " << thickness;
    EXPECT_GE(worst_mark, 0.97) << "device pixels far from OpenCV's marks, thickness " << thickness;
  }
}

TEST(SiftStages, PyramidWithoutADeviceFailsClearly) {
  if (cs::device_count() > 0) GTEST_SKIP() << "a CUDA device is present: the GpuSiftStages suite runs the stages";
  const cv::Mat bgr = textured_bgr(64, 48, 1);
  for (const char *launch : {"siftpyramid", "siftpyramid backend=cpu", "siftpyramid backend=cuda"}) {
    RunResult r = run(launch, frame_caps(GST_VIDEO_FORMAT_GRAY8, 64, 48), {make_frame(bgr, GST_VIDEO_FORMAT_GRAY8)});
    EXPECT_TRUE(r.error.find("CUDA only") != std::string::npos || r.error.find("backend=cuda") != std::string::npos)
        << launch << ": " << r.everything();
  }
}

TEST(SiftStages, LaterStagesWithoutAPyramidAreAClearError) {
  const cv::Mat bgr = textured_bgr(64, 48, 1);
  for (const char *launch : {"siftdetect", "siftdescribe"}) {
    RunResult r = run(launch, frame_caps(GST_VIDEO_FORMAT_GRAY8, 64, 48), {make_frame(bgr, GST_VIDEO_FORMAT_GRAY8)});
    EXPECT_NE(r.error.find("no SIFT pyramid"), std::string::npos) << launch << ": " << r.everything();
  }
}

TEST(SiftStages, PropertiesAreSifts) {
  // The engine's parameters on siftpyramid and the output's on siftdescribe:
  // the same names, ranges and defaults as sift.
  GstElement *sift = gst_element_factory_make("sift", nullptr);
  GstElement *pyramid = gst_element_factory_make("siftpyramid", nullptr);
  GstElement *describe = gst_element_factory_make("siftdescribe", nullptr);
  ASSERT_TRUE(sift && pyramid && describe);
  auto check = [&](GstElement *stage, std::initializer_list<const char *> names) {
    for (const char *name : names) {
      GParamSpec *a = g_object_class_find_property(G_OBJECT_GET_CLASS(sift), name);
      GParamSpec *b = g_object_class_find_property(G_OBJECT_GET_CLASS(stage), name);
      ASSERT_TRUE(a && b) << name;
      EXPECT_EQ(a->value_type, b->value_type) << name;
      EXPECT_EQ(g_param_values_cmp(a, g_param_spec_get_default_value(a), g_param_spec_get_default_value(b)), 0)
          << name;
    }
  };
  check(pyramid, {"n-features", "n-octave-layers", "contrast-threshold", "edge-threshold", "sigma", "upsample"});
  check(describe, {"descriptor-format", "grid-cols", "grid-rows", "max-per-cell"});
  g_object_set(pyramid, "n-features", 500, "sigma", 1.4, nullptr);
  gint n = 0;
  gdouble sigma = 0;
  g_object_get(pyramid, "n-features", &n, "sigma", &sigma, nullptr);
  EXPECT_EQ(n, 500);
  EXPECT_DOUBLE_EQ(sigma, 1.4);
  gst_object_unref(sift);
  gst_object_unref(pyramid);
  gst_object_unref(describe);
}

TEST(SiftElement, CpuBackendTakesSystemMemoryOnly) {
  // The CPU backend would download every device frame: it does not offer device memory.
  EXPECT_TRUE(accepts("sift", kSystemGray, "backend", 2));
  EXPECT_FALSE(accepts("sift", kDeviceGray, "backend", 2));
  if (cs::device_count() > 0) {
    EXPECT_TRUE(accepts("sift", kDeviceGray, "backend", 1));
  }
}

TEST(SiftOverlay, AcceptsDeviceFrames) {
  EXPECT_TRUE(accepts("siftoverlay", kDeviceGray));
  EXPECT_TRUE(accepts("siftoverlay", kSystemGray));
  for (const char *stage : {"siftdetect", "siftdescribe"}) {
    EXPECT_TRUE(accepts(stage, kDeviceGray)) << stage;
    EXPECT_TRUE(accepts(stage, kSystemGray)) << stage;
  }
}

// --------------------------------------------------------------- GPU tests

TEST(GpuSiftElement, NaturalImagesMatchOpenCV) {
  CS_REQUIRE_GPU();
  if (skimage_data_dir().empty()) GTEST_SKIP() << "scikit-image's pictures are absent (python3-skimage; or set CS_SKIMAGE_DATA)";
  for (const char *name : {"astronaut", "camera", "coffee", "chelsea", "rocket", "brick", "grass", "gravel"}) {
    SCOPED_TRACE(name);
    const cv::Mat gray = load_skimage(name);
    ASSERT_FALSE(gray.empty()) << name << " missing from " << skimage_data_dir();
    const Features got = run_one("sift backend=cuda", GST_VIDEO_FORMAT_GRAY8, gray);
    const Features ref = opencv_sift(gray);
    const Agreement g = agreement(ref.keypoints, as_float(ref.descriptors), got.keypoints, as_float(got.descriptors));
    std::printf("%s\n", describe(name, g).c_str());
    ASSERT_GT(ref.keypoints.size(), 50u);
    // The criteria: 1 px, 10 % size, 10 degrees.
    EXPECT_GE(g.reference_matched, 0.95);
    EXPECT_LE(g.tested_unmatched, 0.05);
    EXPECT_LT(g.median_descriptor_distance, 0.05 * 512);
  }
}

TEST(GpuSiftElement, ColourFrameMatchesOpenCVOnTheColourImage) {
  CS_REQUIRE_GPU();
  if (skimage_data_dir().empty()) GTEST_SKIP() << "scikit-image's pictures are absent";
  const cv::Mat bgr = read_png(skimage_data_dir() + "/astronaut.png");
  ASSERT_FALSE(bgr.empty());
  ASSERT_EQ(bgr.channels(), 3);
  const Features got = run_one("sift backend=cuda", GST_VIDEO_FORMAT_RGBA, bgr);
  const Features ref = opencv_sift(bgr);  // OpenCV converts colour to gray itself
  const Agreement g = agreement(ref.keypoints, as_float(ref.descriptors), got.keypoints, as_float(got.descriptors));
  std::printf("%s\n", describe("astronaut RGBA", g).c_str());
  EXPECT_GE(g.reference_matched, 0.95);
  EXPECT_LE(g.tested_unmatched, 0.05);
}

TEST(GpuSiftElement, EveryFormatGivesTheSameFeatures) {
  CS_REQUIRE_GPU();
  const cv::Mat bgr = textured_bgr(kWidth, kHeight, cs_test::fresh_seed());
  // make_frame gives every format the same luma: OpenCV's gray of the BGR image.
  const Features gray = run_one("sift backend=cuda", GST_VIDEO_FORMAT_GRAY8, gray_of(bgr));
  ASSERT_GT(gray.keypoints.size(), 100u) << "the test image should be rich in features";
  const std::vector<GstVideoFormat> formats = offered_formats("sift");
  ASSERT_GE(formats.size(), 30u);
  for (GstVideoFormat format : formats) {
    SCOPED_TRACE(gst_video_format_to_string(format));
    expect_same_keypoints(run_one("sift backend=cuda", format, bgr), gray);
  }
}

TEST(GpuSiftElement, DeviceMemoryInputEqualsSystemMemoryInput) {
  CS_REQUIRE_GPU();
  const cv::Mat bgr = textured_bgr(kWidth, kHeight, cs_test::fresh_seed());
  for (GstVideoFormat format : {GST_VIDEO_FORMAT_GRAY8, GST_VIDEO_FORMAT_NV12, GST_VIDEO_FORMAT_BGRx,
                                GST_VIDEO_FORMAT_RGB, GST_VIDEO_FORMAT_YUY2, GST_VIDEO_FORMAT_P010_10LE}) {
    SCOPED_TRACE(gst_video_format_to_string(format));
    const Features system = run_one("sift backend=cuda", format, bgr);
    ASSERT_GT(system.keypoints.size(), 100u);
    // The frame reaches sift in device memory; caps force it there.
    const Features device = run_one(std::string("gpuupload ! video/x-raw(memory:CudaSensing) ! sift backend=cuda"),
                                    format, bgr);
    expect_same_keypoints(device, system);
  }
}

TEST(GpuSiftElement, FramesPassUnchanged) {
  CS_REQUIRE_GPU();
  const cv::Mat bgr = textured_bgr(kWidth, kHeight, cs_test::fresh_seed());
  for (const char *middle : {"sift backend=cuda", "gpuupload ! sift backend=cuda ! gpudownload"}) {
    SCOPED_TRACE(middle);
    RunResult r = run(middle, frame_caps(GST_VIDEO_FORMAT_RGBA, kWidth, kHeight), {make_frame(bgr, GST_VIDEO_FORMAT_RGBA)});
    ASSERT_EQ(r.error, "") << r.everything();
    ASSERT_EQ(r.buffers.size(), 1u);
    GstBuffer *expected = make_frame(bgr, GST_VIDEO_FORMAT_RGBA);
    GstMapInfo m1, m2;
    ASSERT_TRUE(gst_buffer_map(expected, &m1, GST_MAP_READ));
    ASSERT_TRUE(gst_buffer_map(r.buffers[0], &m2, GST_MAP_READ));
    ASSERT_EQ(m1.size, m2.size);
    EXPECT_EQ(std::memcmp(m1.data, m2.data, m1.size), 0);
    gst_buffer_unmap(expected, &m1);
    gst_buffer_unmap(r.buffers[0], &m2);
    gst_buffer_unref(expected);
  }
}

TEST(GpuSiftElement, DeterministicAcrossFramesAndRuns) {
  CS_REQUIRE_GPU();
  const cv::Mat bgr = textured_bgr(kWidth, kHeight, cs_test::fresh_seed());
  const std::vector<Features> first = run_features("sift backend=cuda", GST_VIDEO_FORMAT_GRAY8, {bgr, bgr, bgr});
  const std::vector<Features> second = run_features("sift backend=cuda", GST_VIDEO_FORMAT_GRAY8, {bgr});
  ASSERT_EQ(first.size(), 3u);
  ASSERT_EQ(second.size(), 1u);
  ASSERT_GT(first[0].keypoints.size(), 100u);
  expect_same_keypoints(first[1], first[0]);
  expect_same_keypoints(first[2], first[0]);
  expect_same_keypoints(second[0], first[0]);
  for (size_t i = 1; i < first[0].keypoints.size(); ++i)
    EXPECT_GE(first[0].keypoints[i - 1].response, first[0].keypoints[i].response) << "strongest first, " << i;
}

TEST(GpuSiftElement, FramesOfChangingContentAreNotMixedUp) {
  CS_REQUIRE_GPU();
  // Several different frames in one stream: each frame's features are its own.
  std::vector<cv::Mat> images;
  for (uint32_t i = 0; i < 4; ++i) images.push_back(textured_bgr(kWidth, kHeight, cs_test::fresh_seed() + i));
  const std::vector<Features> stream = run_features("sift backend=cuda", GST_VIDEO_FORMAT_GRAY8, images);
  ASSERT_EQ(stream.size(), images.size());
  for (size_t i = 0; i < images.size(); ++i)
    expect_same_keypoints(stream[i], run_one("sift backend=cuda", GST_VIDEO_FORMAT_GRAY8, images[i]));
}

TEST(GpuSiftElement, FeaturelessFrameGivesAnEmptyMeta) {
  CS_REQUIRE_GPU();
  const cv::Mat flat(120, 160, CV_8UC3, cv::Scalar(90, 90, 90));
  const Features f = run_one("sift backend=cuda", GST_VIDEO_FORMAT_GRAY8, flat);
  EXPECT_EQ(f.keypoints.size(), 0u);
  EXPECT_EQ(f.descriptors.rows, 0);
}

TEST(GpuSiftElement, TinyAndOddFramesAreHandledAsOpenCV) {
  CS_REQUIRE_GPU();
  for (cv::Size size : {cv::Size(1, 1), cv::Size(7, 5), cv::Size(16, 16), cv::Size(33, 17), cv::Size(17, 33),
                        cv::Size(331, 203)}) {
    SCOPED_TRACE(size);
    const cv::Mat bgr = textured_bgr(std::max(size.width, 8), std::max(size.height, 8), 7)(cv::Rect(cv::Point(0, 0), size)).clone();
    for (GstVideoFormat format : {GST_VIDEO_FORMAT_GRAY8, GST_VIDEO_FORMAT_I420, GST_VIDEO_FORMAT_BGRA}) {
      SCOPED_TRACE(gst_video_format_to_string(format));
      const Features got = run_one("sift backend=cuda", format, bgr);  // no error, a meta (checked inside)
      const Features ref = opencv_sift(gray_of(bgr));
      if (ref.keypoints.size() < 20) {
        EXPECT_LE(got.keypoints.size(), ref.keypoints.size() + 2);
        continue;
      }
      const Agreement g = agreement(ref.keypoints, as_float(ref.descriptors), got.keypoints, as_float(got.descriptors));
      EXPECT_GE(g.reference_matched, 0.95) << describe("odd size", g);
      EXPECT_LE(g.tested_unmatched, 0.05) << describe("odd size", g);
    }
  }
}

TEST(GpuSiftElement, DescriptorFormatsAndGridFilter) {
  CS_REQUIRE_GPU();
  const cv::Mat bgr = textured_bgr(kWidth, kHeight, cs_test::fresh_seed());
  const Features bytes = run_one("sift backend=cuda", GST_VIDEO_FORMAT_GRAY8, bgr);
  const Features floats = run_one("sift backend=cuda descriptor-format=float", GST_VIDEO_FORMAT_GRAY8, bgr);
  const Features root = run_one("sift backend=cuda descriptor-format=rootsift", GST_VIDEO_FORMAT_GRAY8, bgr);
  ASSERT_GT(bytes.keypoints.size(), 100u);
  ASSERT_EQ(floats.descriptors.type(), CV_32F);
  ASSERT_EQ(root.descriptors.type(), CV_32F);
  expect_same_keypoints(Features{bytes.keypoints, as_float(bytes.descriptors)}, floats);  // the byte values as floats
  ASSERT_EQ(root.keypoints.size(), bytes.keypoints.size());
  for (int r = 0; r < root.descriptors.rows; ++r) {
    ASSERT_TRUE(key(root.keypoints[size_t(r)]) == key(bytes.keypoints[size_t(r)]));
    EXPECT_NEAR(cv::norm(root.descriptors.row(r), cv::NORM_L2), 1.0, 1e-4) << r;
  }
  // Grid filter: the strongest max-per-cell of each cell, in the same order
  // as before, each with its own descriptor (within the engine's run-to-run
  // step of one).
  const int cols = 4, rows = 3, max = 5;
  const Features kept = run_one("sift backend=cuda grid-cols=4 grid-rows=3 max-per-cell=5", GST_VIDEO_FORMAT_GRAY8, bgr);
  ASSERT_EQ(kept.descriptors.rows, int(kept.keypoints.size()));
  std::map<int, int> seen;
  size_t next = 0;
  for (size_t r = 0; r < bytes.keypoints.size(); ++r) {
    const cv::KeyPoint &k = bytes.keypoints[r];
    const int c = std::min(rows - 1, int(k.pt.y * rows / kHeight)) * cols + std::min(cols - 1, int(k.pt.x * cols / kWidth));
    if (seen[c]++ >= max) continue;
    ASSERT_LT(next, kept.keypoints.size());
    EXPECT_TRUE(key(kept.keypoints[next]) == key(k)) << next;
    EXPECT_LE(cv::norm(kept.descriptors.row(int(next)), bytes.descriptors.row(int(r)), cv::NORM_INF), 1.0) << next;
    ++next;
  }
  EXPECT_EQ(next, kept.keypoints.size());
  EXPECT_LT(kept.keypoints.size(), bytes.keypoints.size());
}

TEST(GpuSiftElement, NFeaturesAndUpsampleOff) {
  CS_REQUIRE_GPU();
  const cv::Mat bgr = textured_bgr(kWidth, kHeight, cs_test::fresh_seed());
  const Features all = run_one("sift backend=cuda", GST_VIDEO_FORMAT_GRAY8, bgr);
  const Features strongest = run_one("sift backend=cuda n-features=50", GST_VIDEO_FORMAT_GRAY8, bgr);
  ASSERT_GE(strongest.keypoints.size(), 50u);
  EXPECT_LE(strongest.keypoints.size(), 60u);  // ties at the 50th response are kept, as OpenCV
  for (size_t i = 0; i < 50; ++i) EXPECT_TRUE(key(strongest.keypoints[i]) == key(all.keypoints[i])) << i;
  const Features half = run_one("sift backend=cuda upsample=false", GST_VIDEO_FORMAT_GRAY8, bgr);
  ASSERT_GT(half.keypoints.size(), 10u);
  for (const cv::KeyPoint &k : half.keypoints) ASSERT_NE(k.octave & 255, 255) << "no doubled octave without upsampling";
}

TEST(GpuSiftElement, AutoBackendRunsCuda) {
  CS_REQUIRE_GPU();
  const cv::Mat bgr = textured_bgr(kWidth, kHeight, cs_test::fresh_seed());
  expect_same_keypoints(run_one("sift", GST_VIDEO_FORMAT_GRAY8, bgr),
                        run_one("sift backend=cuda", GST_VIDEO_FORMAT_GRAY8, bgr));
}

TEST(GpuSiftElement, BadParametersFailAtStart) {
  CS_REQUIRE_GPU();
  const cv::Mat bgr = textured_bgr(64, 48, 1);
  // sigma 20 needs a blur wider than the engine's widest kernel.
  RunResult r = run("sift backend=cuda sigma=20", frame_caps(GST_VIDEO_FORMAT_GRAY8, 64, 48),
                    {make_frame(bgr, GST_VIDEO_FORMAT_GRAY8)});
  EXPECT_NE(r.error, "") << "an impossible sigma must be refused";
}

TEST(GpuSiftStages, StagedElementsEqualSift) {
  CS_REQUIRE_GPU();
  const cv::Mat bgr = textured_bgr(kWidth, kHeight, cs_test::fresh_seed());
  const std::string params = "n-features=300 contrast-threshold=0.03";
  const std::string output = "descriptor-format=rootsift grid-cols=3 grid-rows=2 max-per-cell=40";
  for (GstVideoFormat format : {GST_VIDEO_FORMAT_GRAY8, GST_VIDEO_FORMAT_RGBA}) {
    SCOPED_TRACE(gst_video_format_to_string(format));
    const Features single = run_one("sift backend=cuda " + params + " " + output, format, bgr);
    ASSERT_GT(single.keypoints.size(), 50u);
    const Features staged =
        run_one("siftpyramid " + params + " ! siftdetect ! siftdescribe " + output, format, bgr);
    // RootSIFT of descriptors that may differ by one byte step: sqrt(1 / L1) at most, L1 >= 512.
    expect_same_keypoints(staged, single, 0.05);
  }
}

TEST(GpuSiftStages, QueuesBetweenStagesKeepEachFramesOwnState) {
  CS_REQUIRE_GPU();
  std::vector<cv::Mat> images;
  for (uint32_t i = 0; i < 8; ++i) images.push_back(textured_bgr(kWidth, kHeight, cs_test::fresh_seed() + i));
  const std::vector<Features> single = run_features("sift backend=cuda", GST_VIDEO_FORMAT_GRAY8, images);
  for (const char *middle :
       {"siftpyramid ! queue ! siftdetect ! queue ! siftdescribe",
        "siftpyramid max-in-flight=3 ! queue max-size-buffers=2 ! siftdetect ! queue ! siftdescribe",
        "gpuupload ! siftpyramid max-in-flight=1 ! queue ! siftdetect ! siftdescribe ! gpudownload"}) {
    SCOPED_TRACE(middle);
    const std::vector<Features> staged = run_features(middle, GST_VIDEO_FORMAT_GRAY8, images);
    ASSERT_EQ(staged.size(), single.size());
    for (size_t i = 0; i < staged.size(); ++i) expect_same_keypoints(staged[i], single[i]);
  }
}

TEST(GpuSiftStages, MissingDetectIsAClearError) {
  CS_REQUIRE_GPU();
  const cv::Mat bgr = textured_bgr(64, 48, 1);
  RunResult r = run("siftpyramid ! siftdescribe", frame_caps(GST_VIDEO_FORMAT_GRAY8, 64, 48),
                    {make_frame(bgr, GST_VIDEO_FORMAT_GRAY8)});
  EXPECT_NE(r.error.find("not detected"), std::string::npos) << r.everything();
}

TEST(GpuSiftStages, FrameWithoutKeypointsGivesAnEmptyMeta) {
  CS_REQUIRE_GPU();
  const cv::Mat flat(120, 160, CV_8UC3, cv::Scalar(40, 40, 40));
  const Features f = run_one("siftpyramid ! siftdetect ! siftdescribe", GST_VIDEO_FORMAT_GRAY8, flat);
  EXPECT_EQ(f.keypoints.size(), 0u);
}

// Frames of a textured pattern moving 3 px right and 2 px down per frame:
// each frame differs from the one before it.
std::vector<cv::Mat> moving_pattern(int frames) {
  const cv::Mat scene = textured_bgr(kWidth + 3 * frames, kHeight + 2 * frames, cs_test::fresh_seed());
  std::vector<cv::Mat> out;
  for (int i = 0; i < frames; ++i) out.push_back(scene(cv::Rect(3 * i, 2 * i, kWidth, kHeight)).clone());
  return out;
}

// Each output frame's number (run() stamps frame i at i/30 s) and features.
struct NumberedFeatures {
  std::vector<int> numbers;
  std::vector<Features> features;
};

int frame_number(GstBuffer *b) { return int(gst_util_uint64_scale_round(GST_BUFFER_PTS(b), 30, GST_SECOND)); }

NumberedFeatures run_numbered(const std::string &middle, const std::vector<cv::Mat> &images) {
  std::vector<GstBuffer *> frames;
  for (const cv::Mat &image : images) frames.push_back(make_frame(image, GST_VIDEO_FORMAT_GRAY8));
  RunResult r = run(middle, frame_caps(GST_VIDEO_FORMAT_GRAY8, images[0].cols, images[0].rows), frames);
  EXPECT_EQ(r.error, "") << middle << ": " << r.everything();
  NumberedFeatures out;
  for (GstBuffer *b : r.buffers) {
    out.numbers.push_back(frame_number(b));
    const GstSiftFeaturesMeta *m = gst_buffer_get_sift_features_meta(b);
    EXPECT_NE(m, nullptr) << middle << ": frame " << out.numbers.back() << " without a features meta";
    out.features.push_back(m ? from_meta(*m) : Features{});
  }
  return out;
}

std::vector<int> first_numbers(int count) {
  std::vector<int> n(size_t(count), 0);
  std::iota(n.begin(), n.end(), 0);
  return n;
}

bool same_keypoints(const Features &a, const Features &b) {
  if (a.keypoints.size() != b.keypoints.size()) return false;
  for (size_t i = 0; i < a.keypoints.size(); ++i)
    if (key(a.keypoints[i]) != key(b.keypoints[i])) return false;
  return true;
}

// Frames in flight, on either backend (`backend`: "cpu" or "cuda"): CUDA's
// engines on their own streams, or OpenCV on a thread per frame.
void expect_any_count_gives_the_same_features_in_the_same_order(const std::string &backend) {
  const std::string sift = "sift backend=" + backend;
  const std::vector<cv::Mat> images = moving_pattern(9);
  const NumberedFeatures serial = run_numbered(sift + " frames-in-flight=1", images);
  ASSERT_EQ(serial.numbers, first_numbers(9));
  for (size_t i = 0; i < serial.features.size(); ++i) {
    ASSERT_GT(serial.features[i].keypoints.size(), 100u) << "frame " << i << " should be rich in features";
    if (i > 0) {
      ASSERT_FALSE(same_keypoints(serial.features[i], serial.features[i - 1])) << "frames should differ";
    }
  }
  std::vector<std::string> middles = {sift, sift + " frames-in-flight=2", sift + " frames-in-flight=3",
                                      sift + " frames-in-flight=8"};
  if (backend == "cuda")
    middles.push_back("gpuupload ! video/x-raw(memory:CudaSensing) ! " + sift + " frames-in-flight=3");
  for (const std::string &middle : middles) {
    SCOPED_TRACE(middle);
    const NumberedFeatures held = run_numbered(middle, images);
    ASSERT_EQ(held.numbers, first_numbers(9)) << "every frame, in order";
    for (size_t i = 0; i < held.features.size(); ++i) {
      SCOPED_TRACE(i);
      expect_same_keypoints(held.features[i], serial.features[i]);
    }
  }
}

void expect_end_of_stream_delivers_every_held_frame(const std::string &backend) {
  const std::vector<cv::Mat> images = moving_pattern(5);
  for (int frames : {1, 2, 5}) {
    for (int in_flight : {1, 2, 3}) {
      const std::string middle = "sift backend=" + backend + " frames-in-flight=" + std::to_string(in_flight);
      SCOPED_TRACE(middle + ", " + std::to_string(frames) + " frames");
      const NumberedFeatures got =
          run_numbered(middle, std::vector<cv::Mat>(images.begin(), images.begin() + frames));
      ASSERT_EQ(got.numbers, first_numbers(frames));
      for (const Features &f : got.features) EXPECT_GT(f.keypoints.size(), 100u);
    }
  }
}

void count_finalized(gpointer counter, GstMiniObject *) { ++*static_cast<int *>(counter); }

// A GRAY8 frame of `image` stamped as frame `number`, counting into `finalized` when freed.
GstBuffer *counted_frame(const cv::Mat &image, int number, int *finalized) {
  GstBuffer *b = make_frame(image, GST_VIDEO_FORMAT_GRAY8);
  GST_BUFFER_PTS(b) = gst_util_uint64_scale(guint64(number), GST_SECOND, 30);
  GST_BUFFER_DURATION(b) = GST_SECOND / 30;
  gst_mini_object_weak_ref(GST_MINI_OBJECT(b), count_finalized, finalized);
  return b;
}

void expect_flush_drops_held_frames_and_loses_nothing_after_it(const std::string &backend) {
  const std::vector<cv::Mat> images = moving_pattern(5);
  GstHarness *h = gst_harness_new_parse(("sift frames-in-flight=3 backend=" + backend).c_str());
  gst_harness_set_src_caps(h, frame_caps(GST_VIDEO_FORMAT_GRAY8, kWidth, kHeight));
  int finalized = 0;
  // Three in flight: the first two frames are held, none out yet.
  ASSERT_EQ(gst_harness_push(h, counted_frame(images[0], 0, &finalized)), GST_FLOW_OK);
  ASSERT_EQ(gst_harness_push(h, counted_frame(images[1], 1, &finalized)), GST_FLOW_OK);
  EXPECT_EQ(gst_harness_buffers_received(h), 0u);
  EXPECT_EQ(finalized, 0);
  ASSERT_TRUE(gst_harness_push_event(h, gst_event_new_flush_start()));
  ASSERT_TRUE(gst_harness_push_event(h, gst_event_new_flush_stop(TRUE)));
  EXPECT_EQ(finalized, 2) << "the held frames are dropped by the flush, not leaked";
  GstSegment segment;
  gst_segment_init(&segment, GST_FORMAT_TIME);
  ASSERT_TRUE(gst_harness_push_event(h, gst_event_new_segment(&segment)));
  for (int i = 2; i < 5; ++i) ASSERT_EQ(gst_harness_push(h, counted_frame(images[size_t(i)], i, &finalized)), GST_FLOW_OK);
  ASSERT_TRUE(gst_harness_push_event(h, gst_event_new_eos()));
  ASSERT_EQ(gst_harness_buffers_received(h), 3u) << "every frame after the flush";
  for (int i = 2; i < 5; ++i) {
    GstBuffer *b = gst_harness_pull(h);
    ASSERT_NE(b, nullptr);
    EXPECT_EQ(frame_number(b), i);
    const GstSiftFeaturesMeta *m = gst_buffer_get_sift_features_meta(b);
    ASSERT_NE(m, nullptr) << "frame " << i;
    EXPECT_GT(m->count, 100u) << "frame " << i;
    gst_buffer_unref(b);
  }
  gst_harness_teardown(h);
  EXPECT_EQ(finalized, 5);
}

void expect_stop_drops_held_frames_and_caps_changes_drain_them(const std::string &backend) {
  const std::vector<cv::Mat> images = moving_pattern(3);
  const std::string sift = "sift frames-in-flight=3 backend=" + backend;
  int finalized = 0;
  {
    GstHarness *h = gst_harness_new_parse(sift.c_str());
    gst_harness_set_src_caps(h, frame_caps(GST_VIDEO_FORMAT_GRAY8, kWidth, kHeight));
    ASSERT_EQ(gst_harness_push(h, counted_frame(images[0], 0, &finalized)), GST_FLOW_OK);
    ASSERT_EQ(gst_harness_push(h, counted_frame(images[1], 1, &finalized)), GST_FLOW_OK);
    EXPECT_EQ(gst_element_set_state(h->element, GST_STATE_READY), GST_STATE_CHANGE_SUCCESS);
    EXPECT_EQ(finalized, 2) << "the held frames are dropped at the state change, not leaked";
    gst_harness_teardown(h);
  }
  {
    // New caps (a smaller frame): the frames held under the old caps leave first, with their own size.
    GstHarness *h = gst_harness_new_parse(sift.c_str());
    gst_harness_set_src_caps(h, frame_caps(GST_VIDEO_FORMAT_GRAY8, kWidth, kHeight));
    ASSERT_EQ(gst_harness_push(h, counted_frame(images[0], 0, &finalized)), GST_FLOW_OK);
    ASSERT_EQ(gst_harness_push(h, counted_frame(images[1], 1, &finalized)), GST_FLOW_OK);
    gst_harness_set_src_caps(h, frame_caps(GST_VIDEO_FORMAT_GRAY8, kWidth / 2, kHeight / 2));
    EXPECT_EQ(gst_harness_buffers_received(h), 2u);
    const cv::Mat half = images[2](cv::Rect(0, 0, kWidth / 2, kHeight / 2)).clone();
    ASSERT_EQ(gst_harness_push(h, counted_frame(half, 2, &finalized)), GST_FLOW_OK);
    ASSERT_TRUE(gst_harness_push_event(h, gst_event_new_eos()));
    ASSERT_EQ(gst_harness_buffers_received(h), 3u);
    for (int i = 0; i < 3; ++i) {
      GstBuffer *b = gst_harness_pull(h);
      ASSERT_NE(b, nullptr);
      EXPECT_EQ(frame_number(b), i);
      const GstSiftFeaturesMeta *m = gst_buffer_get_sift_features_meta(b);
      ASSERT_NE(m, nullptr) << "frame " << i;
      EXPECT_EQ(m->image_width, guint(i < 2 ? kWidth : kWidth / 2)) << "frame " << i;
      gst_buffer_unref(b);
    }
    gst_harness_teardown(h);
  }
  EXPECT_EQ(finalized, 5);
}

void expect_a_bad_frame_is_an_error_not_a_silent_drop(const std::string &backend) {
  const std::vector<cv::Mat> images = moving_pattern(2);
  std::vector<GstBuffer *> frames = {make_frame(images[0], GST_VIDEO_FORMAT_GRAY8),
                                     make_frame(images[1], GST_VIDEO_FORMAT_GRAY8),
                                     gst_buffer_new_allocate(nullptr, 100, nullptr)};  // too short for the caps
  RunResult r = run("sift frames-in-flight=2 backend=" + backend, frame_caps(GST_VIDEO_FORMAT_GRAY8, kWidth, kHeight),
                    frames);
  EXPECT_NE(r.error.find("Extracting SIFT features"), std::string::npos) << r.everything();
  EXPECT_NE(r.everything().find(backend == "cuda" ? "cannot hold" : "cannot map the frame"), std::string::npos)
      << r.everything();
  for (GstBuffer *b : r.buffers) EXPECT_NE(gst_buffer_get_sift_features_meta(b), nullptr);
}

// frames-in-flight=0 (auto, the default) holds 2 frames on CUDA and half
// the host's cores, 2 to 8, on the CPU: the first frame leaves when that
// many have come in.
void expect_auto_holds_as_many_frames_as_the_backend_wants(const std::string &backend) {
  const unsigned cores = cs::usable_cores();
  const size_t held = backend == "cuda" ? 2 : std::clamp<size_t>(cores / 2, 2, 8);
  SCOPED_TRACE(std::to_string(cores) + " cores");
  const std::vector<cv::Mat> images = moving_pattern(int(held));
  GstHarness *h = gst_harness_new_parse(("sift backend=" + backend).c_str());
  GstElement *sift = gst_harness_find_element(h, "sift");
  gint property = -1;
  g_object_get(sift, "frames-in-flight", &property, nullptr);
  gst_object_unref(sift);
  EXPECT_EQ(property, 0);
  gst_harness_set_src_caps(h, frame_caps(GST_VIDEO_FORMAT_GRAY8, kWidth, kHeight));
  int finalized = 0;
  for (size_t i = 0; i + 1 < held; ++i)
    ASSERT_EQ(gst_harness_push(h, counted_frame(images[i], int(i), &finalized)), GST_FLOW_OK);
  EXPECT_EQ(gst_harness_buffers_received(h), 0u);
  ASSERT_EQ(gst_harness_push(h, counted_frame(images[held - 1], int(held - 1), &finalized)), GST_FLOW_OK);
  EXPECT_EQ(gst_harness_buffers_received(h), 1u);
  gst_harness_teardown(h);
  EXPECT_EQ(finalized, int(held));
}

// Auto on the CPU holds no more frames than a quarter of the host's memory
// holds OpenCV's pyramids of: 32000 x 32000 frames (about 240 GB of
// pyramids each) are taken one at a time, 640 x 480 ones as the cores say,
// and the count follows each new caps. The LATENCY query tells: frames in
// flight - 1 frame periods.
TEST(SiftFramesInFlight, AutoOnTheCpuFitsTheHostsMemory) {
  const size_t by_cores = std::clamp<size_t>(cs::usable_cores() / 2, 2, 8);
  GstHarness *h = gst_harness_new_parse("sift backend=cpu");
  for (const auto &[width, height, held] : {std::tuple<int, int, size_t>{640, 480, by_cores},
                                            std::tuple<int, int, size_t>{32000, 32000, 1},
                                            std::tuple<int, int, size_t>{640, 480, by_cores}}) {
    SCOPED_TRACE(std::to_string(width) + "x" + std::to_string(height));
    gst_harness_set_src_caps(h, frame_caps(GST_VIDEO_FORMAT_GRAY8, width, height));
    EXPECT_EQ(gst_harness_query_latency(h), GstClockTime(held - 1) * GST_SECOND / 30);
  }
  gst_harness_teardown(h);
}

#define FRAMES_IN_FLIGHT_TEST(name, check)  \
  TEST(SiftFramesInFlight, name) { check("cpu"); } \
  TEST(GpuSiftFramesInFlight, name) {       \
    CS_REQUIRE_GPU();                       \
    check("cuda");                          \
  }
FRAMES_IN_FLIGHT_TEST(AnyCountGivesTheSameFeaturesInTheSameOrder,
                      expect_any_count_gives_the_same_features_in_the_same_order)
FRAMES_IN_FLIGHT_TEST(EndOfStreamDeliversEveryHeldFrame, expect_end_of_stream_delivers_every_held_frame)
FRAMES_IN_FLIGHT_TEST(FlushDropsHeldFramesAndLosesNothingAfterIt,
                      expect_flush_drops_held_frames_and_loses_nothing_after_it)
FRAMES_IN_FLIGHT_TEST(StopDropsHeldFramesAndCapsChangesDrainThem,
                      expect_stop_drops_held_frames_and_caps_changes_drain_them)
FRAMES_IN_FLIGHT_TEST(ABadFrameIsAnErrorNotASilentDrop, expect_a_bad_frame_is_an_error_not_a_silent_drop)
FRAMES_IN_FLIGHT_TEST(AutoHoldsAsManyFramesAsTheBackendWants, expect_auto_holds_as_many_frames_as_the_backend_wants)
#undef FRAMES_IN_FLIGHT_TEST

TEST(GpuSiftOverlay, DeviceFramesAreDrawnLikeSystemFrames) {
  CS_REQUIRE_GPU();
  const cv::Mat bgr = textured_bgr(320, 240, cs_test::fresh_seed());
  auto changed = [&](const std::string &middle, GstVideoFormat format) {
    return overlay_changes(middle, format, bgr);
  };
  for (GstVideoFormat format : {GST_VIDEO_FORMAT_BGRx, GST_VIDEO_FORMAT_RGBA, GST_VIDEO_FORMAT_GRAY8,
                                GST_VIDEO_FORMAT_NV12, GST_VIDEO_FORMAT_I420, GST_VIDEO_FORMAT_NV21,
                                GST_VIDEO_FORMAT_YV12, GST_VIDEO_FORMAT_P010_10LE, GST_VIDEO_FORMAT_I420_10LE}) {
    SCOPED_TRACE(gst_video_format_to_string(format));
    const std::vector<cv::Mat> cpu = changed("sift backend=cpu ! siftoverlay backend=cpu color=0xff00ff", format);
    const std::vector<cv::Mat> gpu = changed(
        "sift backend=cpu ! gpuupload ! video/x-raw(memory:CudaSensing) ! siftoverlay backend=cuda color=0xff00ff ! "
        "gpudownload",
        format);
    // A device frame on the CPU backend is mapped (downloaded), drawn by OpenCV, and stays a device frame.
    const std::vector<cv::Mat> mapped = changed(
        "sift backend=cpu ! gpuupload ! video/x-raw(memory:CudaSensing) ! siftoverlay backend=cpu color=0xff00ff ! "
        "gpudownload",
        format);
    expect_drawn_alike(cpu, gpu, mapped);
  }
}

TEST(GpuSiftOverlay, DrawingOneBranchOfATeeLeavesTheOtherAlone) {
  CS_REQUIRE_GPU();
  expect_other_tee_branch_undrawn("gpuupload ! video/x-raw(memory:CudaSensing)", "gpudownload");
}

}  // namespace
