// The sift element (CPU backend): its meta equals OpenCV's SIFT on the same
// image, for every input format; deterministic order; descriptor formats;
// the grid filter; the meta survives copies and the transfer elements; bad
// input and impossible settings give clear errors; frames-in-flight (a CUDA
// setting) is a documented property that the CPU backend ignores.
#include <gst/check/gstharness.h>
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "gst/cudasensing/sift/gstsiftfeaturesmeta.h"
#include "test_sift_support.h"

using namespace sift_test;

namespace {

// Width 318: GRAY8 rows are padded to 320 bytes, so strides are honoured.
constexpr int kWidth = 318, kHeight = 240;

Features run_sift(const cv::Mat &bgr, GstVideoFormat format, const std::string &props = "",
                  GstSiftDescriptorFormat expect_format = GST_SIFT_DESCRIPTOR_OPENCV) {
  RunResult r = run("sift backend=cpu " + props, frame_caps(format, bgr.cols, bgr.rows), {make_frame(bgr, format)});
  EXPECT_EQ(r.error, "") << r.everything();
  EXPECT_EQ(r.buffers.size(), 1u);
  if (r.buffers.empty()) return {};
  const GstSiftFeaturesMeta *m = gst_buffer_get_sift_features_meta(r.buffers[0]);
  EXPECT_NE(m, nullptr);
  if (!m) return {};
  EXPECT_EQ(m->image_width, guint(bgr.cols));
  EXPECT_EQ(m->image_height, guint(bgr.rows));
  EXPECT_EQ(m->descriptor_format, expect_format);
  EXPECT_EQ(m->descriptor_length, 128u);
  return from_meta(*m);
}

cv::Mat gray_of(const cv::Mat &bgr) {
  cv::Mat g;
  cv::cvtColor(bgr, g, cv::COLOR_BGR2GRAY);
  return g;
}

TEST(SiftElement, Gray8EqualsOpenCV) {
  const cv::Mat bgr = textured_bgr(kWidth, kHeight, cs_test::fresh_seed());
  const Features got = run_sift(bgr, GST_VIDEO_FORMAT_GRAY8);
  const Features ref = opencv_sift(gray_of(bgr));
  ASSERT_GT(ref.keypoints.size(), 100u) << "the test image should be rich in features";
  expect_same(sorted(got), sorted(ref));
}

TEST(SiftElement, EveryOfferedFormatGivesOpenCVsFeaturesOfItsLuma) {
  // Width 318: rows of most formats are padded, so strides are honoured.
  const cv::Mat bgr = textured_bgr(kWidth, kHeight, cs_test::fresh_seed());
  const Features of_gray = sorted(opencv_sift(gray_of(bgr)));
  const Features of_colour = sorted(opencv_sift(bgr));  // OpenCV converts colour to gray itself
  ASSERT_GT(of_gray.keypoints.size(), 100u) << "the test image should be rich in features";
  const std::vector<GstVideoFormat> formats = offered_formats("sift");
  ASSERT_GE(formats.size(), 30u);
  for (GstVideoFormat format : formats) {
    SCOPED_TRACE(gst_video_format_to_string(format));
    const bool rgb = GST_VIDEO_FORMAT_INFO_IS_RGB(gst_video_format_get_info(format));
    expect_same(sorted(run_sift(bgr, format)), rgb ? of_colour : of_gray);
  }
}

TEST(SiftElement, ParametersReachOpenCV) {
  const cv::Mat bgr = textured_bgr(kWidth, kHeight, cs_test::fresh_seed());
  Features ref;
  cv::SIFT::create(50, 4, 0.03, 8, 1.4, CV_8U)->detectAndCompute(gray_of(bgr), cv::noArray(), ref.keypoints,
                                                                   ref.descriptors);
  const Features got = run_sift(bgr, GST_VIDEO_FORMAT_GRAY8,
                                "n-features=50 n-octave-layers=4 contrast-threshold=0.03 edge-threshold=8 sigma=1.4");
  EXPECT_LE(got.keypoints.size(), 60u);  // OpenCV keeps ties at the 50th response
  expect_same(sorted(got), sorted(ref));
}

TEST(SiftElement, SameFrameSameListStrongestFirst) {
  const cv::Mat bgr = textured_bgr(kWidth, kHeight, cs_test::fresh_seed());
  RunResult r = run("sift backend=cpu", frame_caps(GST_VIDEO_FORMAT_GRAY8, kWidth, kHeight),
                    {make_frame(bgr, GST_VIDEO_FORMAT_GRAY8), make_frame(bgr, GST_VIDEO_FORMAT_GRAY8)});
  ASSERT_EQ(r.error, "") << r.everything();
  ASSERT_EQ(r.buffers.size(), 2u);
  const Features a = from_meta(*gst_buffer_get_sift_features_meta(r.buffers[0]));
  const Features b = from_meta(*gst_buffer_get_sift_features_meta(r.buffers[1]));
  expect_same(a, b);  // same order, not only the same set
  for (size_t i = 1; i < a.keypoints.size(); ++i)
    EXPECT_GE(a.keypoints[i - 1].response, a.keypoints[i].response) << i;
  // The frame itself passes unchanged.
  GstBuffer *expected = make_frame(bgr, GST_VIDEO_FORMAT_GRAY8);
  GstMapInfo m1, m2;
  gst_buffer_map(expected, &m1, GST_MAP_READ);
  gst_buffer_map(r.buffers[0], &m2, GST_MAP_READ);
  ASSERT_EQ(m1.size, m2.size);
  EXPECT_EQ(std::memcmp(m1.data, m2.data, m1.size), 0);
  gst_buffer_unmap(expected, &m1);
  gst_buffer_unmap(r.buffers[0], &m2);
  gst_buffer_unref(expected);
}

TEST(SiftElement, FloatFormatIsOpenCVsDefaultDescriptor) {
  const cv::Mat bgr = textured_bgr(kWidth, kHeight, cs_test::fresh_seed());
  const Features got = run_sift(bgr, GST_VIDEO_FORMAT_GRAY8, "descriptor-format=float", GST_SIFT_DESCRIPTOR_FLOAT);
  EXPECT_EQ(got.descriptors.type(), CV_32F);
  expect_same(sorted(got), sorted(opencv_sift(gray_of(bgr), CV_32F)));
}

TEST(SiftElement, RootSiftIsL1NormalisedSquareRoot) {
  const cv::Mat bgr = textured_bgr(kWidth, kHeight, cs_test::fresh_seed());
  const Features plain = run_sift(bgr, GST_VIDEO_FORMAT_GRAY8, "descriptor-format=float", GST_SIFT_DESCRIPTOR_FLOAT);
  const Features root =
      run_sift(bgr, GST_VIDEO_FORMAT_GRAY8, "descriptor-format=rootsift", GST_SIFT_DESCRIPTOR_ROOTSIFT);
  ASSERT_EQ(root.keypoints.size(), plain.keypoints.size());
  ASSERT_GT(root.keypoints.size(), 0u);
  for (int r = 0; r < root.descriptors.rows; ++r) {
    ASSERT_TRUE(key(root.keypoints[size_t(r)]) == key(plain.keypoints[size_t(r)]));
    const double l1 = cv::norm(plain.descriptors.row(r), cv::NORM_L1);
    ASSERT_GT(l1, 0.0);
    // Unit L2 norm: the squares sum to the L1-normalised descriptor's sum, 1.
    EXPECT_NEAR(cv::norm(root.descriptors.row(r), cv::NORM_L2), 1.0, 1e-5) << r;
    for (int c = 0; c < 128; ++c) {
      const double expected = std::sqrt(plain.descriptors.at<float>(r, c) / l1);
      ASSERT_NEAR(root.descriptors.at<float>(r, c), expected, 1e-6) << r << "," << c;
      ASSERT_GE(root.descriptors.at<float>(r, c), 0.f);
    }
  }
}

TEST(SiftElement, GridFilterKeepsTheStrongestPerCell) {
  const cv::Mat bgr = textured_bgr(kWidth, kHeight, cs_test::fresh_seed());
  const Features all = run_sift(bgr, GST_VIDEO_FORMAT_GRAY8);
  const int cols = 4, rows = 3, max = 5;
  const Features kept = run_sift(bgr, GST_VIDEO_FORMAT_GRAY8, "grid-cols=4 grid-rows=3 max-per-cell=5");
  auto cell = [&](const cv::KeyPoint &k) {
    const int cx = std::min(cols - 1, int(k.pt.x * cols / kWidth)), cy = std::min(rows - 1, int(k.pt.y * rows / kHeight));
    return cy * cols + cx;
  };
  std::map<int, std::vector<size_t>> all_cells, kept_cells;
  for (size_t i = 0; i < all.keypoints.size(); ++i) all_cells[cell(all.keypoints[i])].push_back(i);
  for (size_t i = 0; i < kept.keypoints.size(); ++i) kept_cells[cell(kept.keypoints[i])].push_back(i);
  size_t expected_total = 0;
  for (auto &[c, members] : all_cells) {
    const size_t expect = std::min<size_t>(members.size(), max);
    expected_total += expect;
    ASSERT_EQ(kept_cells[c].size(), expect) << "cell " << c;
    // The kept ones are the strongest of the cell (ties broken alike), with their descriptors.
    std::vector<size_t> idx = members;
    std::stable_sort(idx.begin(), idx.end(),
                     [&](size_t a, size_t b) { return all.keypoints[a].response > all.keypoints[b].response; });
    const float weakest_kept = all.keypoints[idx[expect - 1]].response;
    for (size_t k : kept_cells[c]) {
      EXPECT_GE(kept.keypoints[k].response, weakest_kept);
      bool found = false;
      for (size_t a : members)
        if (key(all.keypoints[a]) == key(kept.keypoints[k]) &&
            cv::norm(all.descriptors.row(int(a)), kept.descriptors.row(int(k)), cv::NORM_INF) == 0)
          found = true;
      EXPECT_TRUE(found) << "kept keypoint " << k << " is not one of the cell's";
    }
  }
  EXPECT_EQ(kept.keypoints.size(), expected_total);
  EXPECT_LT(kept.keypoints.size(), all.keypoints.size()) << "the test should make the filter drop keypoints";
}

TEST(SiftElement, FeaturelessFrameGivesAnEmptyMeta) {
  const cv::Mat flat(120, 160, CV_8UC3, cv::Scalar(90, 90, 90));
  const Features f = run_sift(flat, GST_VIDEO_FORMAT_GRAY8);
  EXPECT_EQ(f.keypoints.size(), 0u);
  EXPECT_EQ(f.descriptors.rows, 0);
}

TEST(SiftElement, TinyAndOddFramesWork) {
  for (cv::Size size : {cv::Size(1, 1), cv::Size(7, 5), cv::Size(33, 17)}) {
    const cv::Mat bgr = textured_bgr(std::max(size.width, 8), std::max(size.height, 8), 7)(cv::Rect(cv::Point(0, 0), size)).clone();
    SCOPED_TRACE(size);
    expect_same(sorted(run_sift(bgr, GST_VIDEO_FORMAT_GRAY8)), sorted(opencv_sift(gray_of(bgr))));
  }
}

TEST(SiftMeta, SurvivesCopiesAndTransfers) {
  const cv::Mat bgr = textured_bgr(kWidth, kHeight, cs_test::fresh_seed());
  RunResult r = run("sift backend=cpu descriptor-format=rootsift ! gpuupload ! gpudownload",
                    frame_caps(GST_VIDEO_FORMAT_RGBA, kWidth, kHeight), {make_frame(bgr, GST_VIDEO_FORMAT_RGBA)});
  ASSERT_EQ(r.error, "") << r.everything();
  ASSERT_EQ(r.buffers.size(), 1u);
  const GstSiftFeaturesMeta *m = gst_buffer_get_sift_features_meta(r.buffers[0]);
  ASSERT_NE(m, nullptr) << "the meta did not survive gpuupload ! gpudownload";
  const Features before = from_meta(*m);
  EXPECT_GT(before.keypoints.size(), 0u);
  GstBuffer *copy = gst_buffer_copy_deep(r.buffers[0]);
  const GstSiftFeaturesMeta *mc = gst_buffer_get_sift_features_meta(copy);
  ASSERT_NE(mc, nullptr);
  EXPECT_NE(mc->keypoints, m->keypoints) << "a copy owns its arrays";
  EXPECT_EQ(mc->descriptor_format, GST_SIFT_DESCRIPTOR_ROOTSIFT);
  expect_same(from_meta(*mc), before);
  gst_buffer_unref(copy);
  expect_same(sorted(before), sorted(run_sift(bgr, GST_VIDEO_FORMAT_RGBA, "descriptor-format=rootsift",
                                              GST_SIFT_DESCRIPTOR_ROOTSIFT)));
}

// The meta's positions belong to the frame's geometry: elements that keep the
// whole frame keep it (videoconvert, a frame-rate change's copies), those that
// crop, box, flip, rotate or scale the frame drop it rather than pass stale
// positions on.
TEST(SiftMeta, FollowsTheFramesGeometry) {
  const cv::Mat bgr = textured_bgr(kWidth, kHeight, cs_test::fresh_seed());
  const std::map<std::string, bool> kept = {
      {"videoconvert ! video/x-raw,format=RGBA", true},
      {"videorate ! video/x-raw,framerate=60/1", true},
      {"queue ! identity", true},
      {"videocrop left=10 top=4", false},
      {"videobox left=8 top=8", false},
      {"videoflip video-direction=180", false},
      {"videoflip video-direction=90r", false},
      {"videoscale ! video/x-raw,width=" + std::to_string(kWidth / 2) + ",height=" + std::to_string(kHeight / 2),
       false},
  };
  int dropping_elements_tried = 0;
  for (const auto &[middle, keeps] : kept) {
    SCOPED_TRACE(middle);
    const std::string name = middle.substr(0, middle.find(' '));
    GstElementFactory *first = gst_element_factory_find(name.c_str());
    if (!first) {  // a GStreamer installation without that plugin
      std::printf("[ skipped  ] %s is not installed\n", name.c_str());
      continue;
    }
    gst_object_unref(first);
    dropping_elements_tried += keeps ? 0 : 1;
    RunResult r = run("sift backend=cpu custom-meta=true ! " + middle, frame_caps(GST_VIDEO_FORMAT_I420, kWidth, kHeight),
                      {make_frame(bgr, GST_VIDEO_FORMAT_I420)});
    ASSERT_EQ(r.error, "") << r.everything();
    ASSERT_FALSE(r.buffers.empty());
    const GstSiftFeaturesMeta *m = gst_buffer_get_sift_features_meta(r.buffers[0]);
    EXPECT_EQ(m != nullptr, keeps);
    EXPECT_EQ(gst_buffer_get_custom_meta(r.buffers[0], GST_SIFT_FEATURES_CUSTOM_META) != nullptr, keeps)
        << "the custom meta goes where the struct goes";
    if (m) {
      EXPECT_GT(m->count, 0u);
    }
  }
  EXPECT_GE(dropping_elements_tried, 2) << "videoflip and videoscale at least";
}

// custom-meta: the same features in a GstStructure (for language bindings),
// in every descriptor format; none without the property.
TEST(SiftMeta, CustomMetaHoldsTheSameFeatures) {
  const cv::Mat bgr = textured_bgr(kWidth, kHeight, cs_test::fresh_seed());
  for (const std::string format : {"opencv", "float", "rootsift"}) {
    SCOPED_TRACE(format);
    RunResult r = run("sift backend=cpu custom-meta=true descriptor-format=" + format,
                      frame_caps(GST_VIDEO_FORMAT_GRAY8, kWidth, kHeight), {make_frame(bgr, GST_VIDEO_FORMAT_GRAY8)});
    ASSERT_EQ(r.error, "") << r.everything();
    ASSERT_EQ(r.buffers.size(), 1u);
    const GstSiftFeaturesMeta *m = gst_buffer_get_sift_features_meta(r.buffers[0]);
    GstCustomMeta *custom = gst_buffer_get_custom_meta(r.buffers[0], GST_SIFT_FEATURES_CUSTOM_META);
    ASSERT_TRUE(m && custom);
    ASSERT_GT(m->count, 10u);
    const GstStructure *s = gst_custom_meta_get_structure(custom);
    guint count = 0, width = 0, height = 0, length = 0;
    ASSERT_TRUE(gst_structure_get(s, "count", G_TYPE_UINT, &count, "image-width", G_TYPE_UINT, &width, "image-height",
                                  G_TYPE_UINT, &height, "descriptor-length", G_TYPE_UINT, &length, nullptr));
    EXPECT_EQ(count, m->count);
    EXPECT_EQ(width, guint(kWidth));
    EXPECT_EQ(height, guint(kHeight));
    EXPECT_EQ(length, 128u);
    EXPECT_STREQ(gst_structure_get_string(s, "descriptor-format"), format.c_str());
    auto bytes_of = [&](const char *field) {
      const GValue *v = gst_structure_get_value(s, field);
      EXPECT_TRUE(v && G_VALUE_HOLDS(v, G_TYPE_BYTES)) << field;
      gsize size = 0;
      const void *data = v ? g_bytes_get_data(static_cast<GBytes *>(g_value_get_boxed(v)), &size) : nullptr;
      return std::string(static_cast<const char *>(data), size);
    };
    EXPECT_EQ(bytes_of("keypoints"),
              std::string(reinterpret_cast<const char *>(m->keypoints), 28 * size_t(m->count)));
    EXPECT_EQ(bytes_of("descriptors"), std::string(static_cast<const char *>(m->descriptors),
                                                   gst_sift_features_meta_descriptor_bytes(m)));
  }
  RunResult plain = run("sift backend=cpu", frame_caps(GST_VIDEO_FORMAT_GRAY8, kWidth, kHeight),
                        {make_frame(bgr, GST_VIDEO_FORMAT_GRAY8)});
  ASSERT_EQ(plain.buffers.size(), 1u);
  EXPECT_EQ(gst_buffer_get_custom_meta(plain.buffers[0], GST_SIFT_FEATURES_CUSTOM_META), nullptr);
}

TEST(SiftMeta, OpenCVHelperRoundTrip) {
  std::vector<cv::KeyPoint> kps = {cv::KeyPoint(1.5f, 2.25f, 3.f, 45.f, 0.5f, (2 << 8) | 255, -1),
                                   cv::KeyPoint(10.f, 20.f, 7.5f, 359.f, 0.01f, 1, 3)};
  cv::Mat desc(2, 128, CV_8U);
  cv::randu(desc, 0, 256);
  GstBuffer *buf = gst_buffer_new();
  ASSERT_NE(gst_sift::add_features(buf, 640, 480, kps, desc, GST_SIFT_DESCRIPTOR_OPENCV), nullptr);
  const GstSiftFeaturesMeta *m = gst_buffer_get_sift_features_meta(buf);
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->count, 2u);
  EXPECT_EQ(gst_sift_features_meta_descriptor_bytes(m), 256u);
  expect_same(from_meta(*m), Features{kps, desc});
  EXPECT_THROW(gst_sift::add_features(buf, 640, 480, kps, desc, GST_SIFT_DESCRIPTOR_FLOAT), std::invalid_argument);
  gst_buffer_unref(buf);
}

TEST(SiftElement, UnsupportedFormatFailsNegotiation) {
  const cv::Mat bgr = textured_bgr(64, 48, 1);
  GstBuffer *buf = gst_buffer_new_allocate(nullptr, 64 * 48 * 2, nullptr);
  RunResult r = run("sift backend=cpu", frame_caps(GST_VIDEO_FORMAT_RGB16, 64, 48), {buf});
  EXPECT_NE(r.error, "");
  EXPECT_NE(r.everything().find("not-negotiated"), std::string::npos) << r.everything();
}

TEST(SiftElement, ZeroSizeFrameIsRefused) {
  GstCaps *caps = gst_caps_from_string("video/x-raw, format=GRAY8, width=0, height=0, framerate=30/1");
  RunResult r = run("sift backend=cpu", caps, {gst_buffer_new()});
  EXPECT_NE(r.error, "");
  EXPECT_NE(r.everything().find("not-negotiated"), std::string::npos) << r.everything();
}

TEST(SiftElement, ShortFrameBufferIsAClearError) {
  GstBuffer *buf = gst_buffer_new_allocate(nullptr, 100, nullptr);  // 64x48 GRAY8 needs 3072 bytes
  RunResult r = run("sift backend=cpu", frame_caps(GST_VIDEO_FORMAT_GRAY8, 64, 48), {buf});
  EXPECT_NE(r.error.find("cannot map the frame"), std::string::npos) << r.everything();
}

// The grid filter takes its three settings together: one or two of them set
// is an error naming them, not a filter silently off.
TEST(SiftElement, IncompleteGridFilterIsAClearError) {
  const cv::Mat bgr = textured_bgr(64, 48, 1);
  for (const char *grid : {"grid-cols=4 max-per-cell=2", "grid-rows=4 max-per-cell=2", "grid-cols=4 grid-rows=4"}) {
    RunResult r = run(std::string("sift backend=cpu ") + grid, frame_caps(GST_VIDEO_FORMAT_GRAY8, 64, 48),
                      {make_frame(bgr, GST_VIDEO_FORMAT_GRAY8)});
    EXPECT_NE(r.error.find("Incomplete grid filter"), std::string::npos) << grid << ": " << r.everything();
    EXPECT_NE(r.everything().find("needs all three"), std::string::npos) << r.everything();
  }
}

TEST(SiftElement, UpsampleFalseIsRefusedOnTheCpuBackend) {
  const cv::Mat bgr = textured_bgr(64, 48, 1);
  RunResult r = run("sift backend=cpu upsample=false", frame_caps(GST_VIDEO_FORMAT_GRAY8, 64, 48),
                    {make_frame(bgr, GST_VIDEO_FORMAT_GRAY8)});
  EXPECT_NE(r.error.find("upsample=false"), std::string::npos) << r.everything();
}

TEST(SiftElement, CudaBackendWithoutADeviceFailsClearly) {
  if (cs::device_count() > 0) GTEST_SKIP() << "a CUDA device is present: the Gpu* suites test backend=cuda";
  const cv::Mat bgr = textured_bgr(64, 48, 1);
  RunResult r = run("sift backend=cuda", frame_caps(GST_VIDEO_FORMAT_GRAY8, 64, 48),
                    {make_frame(bgr, GST_VIDEO_FORMAT_GRAY8)});
  ASSERT_NE(r.error, "") << "backend=cuda must not silently run on the CPU";
  EXPECT_NE(r.error.find("backend=cuda"), std::string::npos) << r.everything();
}

TEST(SiftElement, AutoBackendWithoutADeviceRunsOpenCV) {
  if (cs::device_count() > 0) GTEST_SKIP() << "a CUDA device is present: auto runs CUDA (GpuSiftElement.AutoBackendRunsCuda)";
  const cv::Mat bgr = textured_bgr(kWidth, kHeight, cs_test::fresh_seed());
  RunResult r = run("sift", frame_caps(GST_VIDEO_FORMAT_GRAY8, kWidth, kHeight), {make_frame(bgr, GST_VIDEO_FORMAT_GRAY8)});
  ASSERT_EQ(r.error, "") << r.everything();
  ASSERT_EQ(r.buffers.size(), 1u);
  expect_same(sorted(from_meta(*gst_buffer_get_sift_features_meta(r.buffers[0]))), sorted(opencv_sift(gray_of(bgr))));
}

TEST(SiftElement, FramesInFlightPropertyIsDocumentedAndRoundTrips) {
  GstElement *sift = gst_element_factory_make("sift", nullptr);
  ASSERT_NE(sift, nullptr);
  GParamSpec *spec = g_object_class_find_property(G_OBJECT_GET_CLASS(sift), "frames-in-flight");
  ASSERT_NE(spec, nullptr);
  ASSERT_EQ(spec->value_type, G_TYPE_INT);
  const GParamSpecInt *range = G_PARAM_SPEC_INT(spec);
  EXPECT_EQ(range->minimum, 0);
  EXPECT_EQ(range->default_value, 0);  // auto
  EXPECT_GE(range->maximum, 3);
  const std::string blurb = g_param_spec_get_blurb(spec);
  for (const char *says : {"on CUDA", "on the CPU", "latency", "1 = ", "lock step", "0 = auto", "cores"})
    EXPECT_NE(blurb.find(says), std::string::npos) << says << " in: " << blurb;
  for (gint value : {1, 3, range->maximum}) {
    g_object_set(sift, "frames-in-flight", value, nullptr);
    gint got = 0;
    g_object_get(sift, "frames-in-flight", &got, nullptr);
    EXPECT_EQ(got, value);
  }
  gst_object_unref(sift);
}

// Properties read at start cannot change while the element runs: the change is
// refused with a warning on the bus, and the value read back is the one in use.
TEST(SiftElement, StartPropertiesAreRefusedWhileRunning) {
  // one frame at a time: each frame out as it goes in
  GstHarness *h = gst_harness_new_parse("sift backend=cpu n-features=7 frames-in-flight=1");
  gst_harness_set_src_caps(h, frame_caps(GST_VIDEO_FORMAT_GRAY8, kWidth, kHeight));
  const cv::Mat bgr = textured_bgr(kWidth, kHeight, cs_test::fresh_seed());
  ASSERT_EQ(gst_harness_push(h, make_frame(bgr, GST_VIDEO_FORMAT_GRAY8)), GST_FLOW_OK);
  GstBuffer *first = gst_harness_pull(h);
  const guint kept = gst_buffer_get_sift_features_meta(first)->count;  // 7, or a few more on equal responses
  gst_buffer_unref(first);
  ASSERT_LT(kept, 20u);
  GstElement *sift = gst_harness_find_element(h, "sift");
  GstBus *bus = gst_bus_new();
  gst_element_set_bus(sift, bus);
  g_object_set(sift, "n-features", 20, nullptr);
  gint n = 0;
  g_object_get(sift, "n-features", &n, nullptr);
  EXPECT_EQ(n, 7);
  GstMessage *warning = gst_bus_pop_filtered(bus, GST_MESSAGE_WARNING);
  ASSERT_NE(warning, nullptr);
  GError *err = nullptr;
  gst_message_parse_warning(warning, &err, nullptr);
  EXPECT_NE(std::string(err->message).find("'n-features' cannot change while the element runs"), std::string::npos)
      << err->message;
  g_error_free(err);
  gst_message_unref(warning);
  ASSERT_EQ(gst_harness_push(h, make_frame(bgr, GST_VIDEO_FORMAT_GRAY8)), GST_FLOW_OK);
  GstBuffer *second = gst_harness_pull(h);
  EXPECT_EQ(gst_buffer_get_sift_features_meta(second)->count, kept) << "the same frame, the same n-features";
  gst_buffer_unref(second);
  gst_element_set_bus(sift, nullptr);
  gst_object_unref(bus);
  gst_object_unref(sift);
  gst_harness_teardown(h);
  // Stopped, the change is taken.
  sift = gst_element_factory_make("sift", nullptr);
  g_object_set(sift, "n-features", 20, nullptr);
  g_object_get(sift, "n-features", &n, nullptr);
  EXPECT_EQ(n, 20);
  gst_object_unref(sift);
}


}  // namespace
