// The CUDA SIFT engine (kernels/sift/sift_cuda.h) against OpenCV's cv::SIFT
// (the accuracy criteria) and against the host executor of the same
// math (closely equal), plus formats, edge cases, capacity overflow and
// determinism. Every suite is Gpu*: skipped without a CUDA device.
#include <gtest/gtest.h>

#include <opencv2/imgproc.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <string>

#include "sift/frame_plan.h"
#include "sift/sift_cuda.h"
#include "sift_host_executor.h"
#include "sift_test_util.h"
#include "test_support.h"

namespace {

using namespace cs::sift;

constexpr int kDevice = 0;

// A gray image in device memory, with a pitch wider than the row.
class DeviceGray {
 public:
  explicit DeviceGray(const cv::Mat &img) {
    const size_t element = img.depth() == CV_8U ? 1 : 4;
    pitch_ = (size_t(img.cols) * element + 255) / 256 * 256 + 256;
    bytes_ = pitch_ * size_t(img.rows);
    ptr_ = cs::device_alloc(bytes_, kDevice);
    std::vector<uint8_t> host(bytes_, 0xAB);  // padding poisoned: it must not be read
    for (int y = 0; y < img.rows; ++y) std::memcpy(&host[size_t(y) * pitch_], img.ptr(y), size_t(img.cols) * element);
    cs::copy_async(ptr_, host.data(), bytes_, nullptr);
    cs::stream_synchronize(nullptr);
    image_ = {ptr_, pitch_, img.cols, img.rows, img.depth() == CV_8U ? PixelType::u8 : PixelType::f32};
  }
  ~DeviceGray() { cs::device_free(ptr_, kDevice); }
  const DeviceImage &image() const { return image_; }

 private:
  void *ptr_ = nullptr;
  size_t pitch_ = 0, bytes_ = 0;
  DeviceImage image_;
};

Result gpu_sift(const cv::Mat &img, const Params &p, DescriptorFormat f = DescriptorFormat::opencv,
                Capacity capacity = {}) {
  CudaSift sift(p, kDevice, capacity);
  cs::Stream stream(kDevice);
  DeviceGray d(img);
  sift.run(d.image(), f, stream.get());
  return sift.download(stream.get());
}

cv::Mat descriptors_f32(const Result &r) {
  const int n = int(r.keypoints.size());
  cv::Mat m;
  if (r.format == DescriptorFormat::opencv)
    cv::Mat(n, kDescriptorLength, CV_8U, const_cast<uint8_t *>(r.descriptors.data())).convertTo(m, CV_32F);
  else
    m = cv::Mat(n, kDescriptorLength, CV_32F, const_cast<uint8_t *>(r.descriptors.data())).clone();
  return m;
}

sift_test::HostSiftResult host(const cv::Mat &img, const Params &p, DescriptorFormat f = DescriptorFormat::opencv) {
  return sift_test::host_sift(img.data, img.step, img.cols, img.rows,
                              img.depth() == CV_8U ? PixelType::u8 : PixelType::f32, p, f);
}

cv::Mat random_image(int w, int h, uint32_t seed) {
  std::vector<uint8_t> bytes = cs_test::random_bytes(size_t(w) * size_t(h), seed);
  cv::Mat m(h, w, CV_8U, bytes.data()), out;
  cv::GaussianBlur(m, out, cv::Size(0, 0), 2.0);
  cv::normalize(out, out, 0, 255, cv::NORM_MINMAX);
  return out;
}

// A test picture of a size (seeded by its width), as 8-bit or float samples.
cv::Mat sized_image(int w, int h, uint32_t seed, bool as_float) {
  cv::Mat img = random_image(w, h, seed + uint32_t(w));
  if (as_float) img.convertTo(img, CV_32F);
  return img;
}

// An engine made while the comparison switch `name` is `value` (read when an engine is made).
std::unique_ptr<CudaSift> engine_with(const char *name, const char *value, const Params &p,
                                      const char *name2 = nullptr, const char *value2 = nullptr) {
  EXPECT_EQ(setenv(name, value, 1), 0);
  if (name2) {
    EXPECT_EQ(setenv(name2, value2, 1), 0);
  }
  auto engine = std::make_unique<CudaSift>(p, kDevice);
  unsetenv(name);
  if (name2) unsetenv(name2);
  return engine;
}

// Descriptor bytes of two runs of the same frame may differ by this much:
// none with the default fixed-point sums (integer additions do not depend
// on their order), one with CS_SIFT_DESCRIPTOR=float (float shared atomics).
int descriptor_run_tolerance() {
  const char *v = std::getenv("CS_SIFT_DESCRIPTOR");
  return v && std::string(v) == "float" ? 1 : 0;
}

// The same math on the CPU: only float rounding (sums in another order,
// fused multiply-adds) separates the host executor's features from the GPU's.
sift_test::Agreement expect_host_executor_agrees(const cv::Mat &img, const Params &p, const Result &gpu,
                                                 const std::string &name) {
  const sift_test::HostSiftResult h = host(img, p);
  const cv::Mat hd(int(h.keypoints.size()), kDescriptorLength, CV_32F, const_cast<float *>(h.descriptors.data()));
  const sift_test::Agreement g =
      sift_test::agreement(sift_test::to_cv(h.keypoints), hd, sift_test::to_cv(gpu.keypoints), descriptors_f32(gpu));
  std::printf("[ accuracy ] GPU vs executor %s\n", sift_test::describe(name, g).c_str());
  EXPECT_GE(g.reference_matched, 0.99);
  EXPECT_LE(g.tested_unmatched, 0.01);
  EXPECT_LT(g.median_descriptor_distance, 2.0);
  return g;
}

class GpuSiftImages : public ::testing::TestWithParam<const char *> {};

TEST_P(GpuSiftImages, MatchesOpenCVAndTheHostExecutor) {
  CS_REQUIRE_GPU();
  const cv::Mat gray = sift_test::load_skimage(GetParam());
  if (gray.empty()) GTEST_SKIP() << "scikit-image data not found (install python3-skimage or set CS_SKIMAGE_DATA)";
  const Params p;
  const Result gpu = gpu_sift(gray, p);
  ASSERT_FALSE(gpu.overflowed);
  const std::vector<cv::KeyPoint> gk = sift_test::to_cv(gpu.keypoints);
  const cv::Mat gd = descriptors_f32(gpu);

  sift_cpu::Params cp;
  sift_cpu::Features ref = sift_cpu::detect_and_describe(gray, cp);
  ref.descriptors.convertTo(ref.descriptors, CV_32F);
  const sift_test::Agreement vs_opencv = sift_test::agreement(ref.keypoints, ref.descriptors, gk, gd);
  std::printf("[ accuracy ] GPU vs OpenCV   %s\n", sift_test::describe(GetParam(), vs_opencv).c_str());
  EXPECT_GE(vs_opencv.reference_matched, 0.95);
  EXPECT_LE(vs_opencv.tested_unmatched, 0.05);
  EXPECT_LT(vs_opencv.median_descriptor_distance, 0.05 * 512);

  expect_host_executor_agrees(gray, p, gpu, GetParam());
  // Order: canonical, strictly increasing, no neighbours duplicates.
  for (size_t i = 1; i < gpu.keypoints.size(); ++i) {
    ASSERT_TRUE(keypoint_less(gpu.keypoints[i - 1], gpu.keypoints[i])) << i;
    ASSERT_FALSE(keypoint_duplicate(gpu.keypoints[i - 1], gpu.keypoints[i])) << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Skimage, GpuSiftImages,
                         ::testing::Values("astronaut", "camera", "coffee", "chelsea", "rocket", "brick", "grass",
                                           "gravel"));

// Layer counts other than OpenCV's default (each layer's survivors queued
// apart in the extrema kernel, other blur radii, other octave tables) give
// the host executor's keypoints, as the default does, on a picture and on
// noise (many extrema per row).
TEST(GpuSift, OtherLayerCountsMatchTheHostExecutor) {
  CS_REQUIRE_GPU();
  const cv::Mat picture = sift_test::load_skimage("camera");
  if (picture.empty()) GTEST_SKIP() << "scikit-image data not found (install python3-skimage or set CS_SKIMAGE_DATA)";
  const cv::Mat noise = random_image(320, 240, cs_test::fresh_seed());
  for (const cv::Mat *img : {&picture, &noise})
    for (const int layers : {2, 4, 5}) {
      const std::string what = std::string(img == &picture ? "camera" : "noise") + " layers " + std::to_string(layers);
      SCOPED_TRACE(what);
      Params p;
      p.n_octave_layers = layers;
      const Result gpu = gpu_sift(*img, p);
      ASSERT_FALSE(gpu.overflowed);
      EXPECT_GT(expect_host_executor_agrees(*img, p, gpu, what).reference, 50u);
    }
}

void expect_same_keypoints(const Result &a, const Result &b) {
  ASSERT_EQ(a.keypoints.size(), b.keypoints.size());
  for (size_t i = 0; i < a.keypoints.size(); ++i)
    ASSERT_EQ(std::memcmp(&a.keypoints[i], &b.keypoints[i], sizeof(Keypoint)), 0) << i;
  ASSERT_EQ(a.descriptors.size(), b.descriptors.size());
  const int tolerance = descriptor_run_tolerance();
  for (size_t i = 0; i < a.descriptors.size(); ++i)
    ASSERT_LE(std::abs(int(a.descriptors[i]) - int(b.descriptors[i])), tolerance) << i;
}

// The extrema kernel (a same-level screening, then the full test of the
// queued survivors) must find exactly the extrema of the sample-by-sample
// test in the same pyramid: odd sizes, other layer counts, unblurred noise
// (many extrema per row), no doubling, and a float image with NaN samples
// (a NaN anywhere in the neighbourhood rejects, as OpenCV's comparisons do).
// The DoG levels are made from the downloaded Gaussian levels, as detection
// makes them. run() finds octave 0's through the blurs' prefilter on large
// frames: the same with it at every size (CS_SIFT_PREFILTER=1), with a list
// of one hit (which overflows into the prefiltered kernel's dense
// fallback) and with the dense kernel throughout (CS_SIFT_PREFILTER=0).
TEST(GpuSift, ExtremaAreThoseOfThePyramid) {
  CS_REQUIRE_GPU();
  struct Case {
    std::string name;
    cv::Mat image;
    int layers;
    bool upsample;
  };
  const uint32_t seed = cs_test::fresh_seed();
  std::vector<uint8_t> bytes = cs_test::random_bytes(333 * 257, seed);
  const cv::Mat noise = cv::Mat(257, 333, CV_8U, bytes.data()).clone();
  cv::Mat with_nan;
  random_image(300, 200, seed + 1).convertTo(with_nan, CV_32F);
  with_nan(cv::Rect(100, 80, 3, 2)).setTo(std::numeric_limits<float>::quiet_NaN());
  std::vector<Case> cases = {{"1001x607", random_image(1001, 607, seed + 2), 3, true},
                             {"640x480 layers 2", random_image(640, 480, seed + 3), 2, true},
                             {"640x480 layers 4", random_image(640, 480, seed + 3), 4, true},
                             {"640x480 layers 7", random_image(640, 480, seed + 3), 7, true},
                             {"noise", noise, 3, true},
                             {"noise no doubling", noise, 3, false},
                             {"23x17 no doubling", random_image(23, 17, seed + 4), 3, false},
                             {"float with NaN", with_nan, 3, true}};
  const cv::Mat picture = sift_test::load_skimage("astronaut");
  if (!picture.empty()) cases.push_back({"astronaut", picture, 3, true});
  cs::Stream stream(kDevice);
  for (const Case &c : cases) {
    SCOPED_TRACE(c.name);
    Params p;
    p.n_octave_layers = c.layers;
    p.upsample = c.upsample;
    CudaSift sift(p, kDevice);
    DeviceGray d(c.image);
    sift.run(d.image(), DescriptorFormat::opencv, stream.get());
    const Result r = sift.download(stream.get());
    const PyramidLevels pyramid = sift.download_pyramid(stream.get());
    const float threshold = prefilter_threshold(p.contrast_threshold, p.n_octave_layers);
    int expected = 0;
    for (size_t i = 0; i < pyramid.octaves.size(); ++i) {
      const PyramidLevels::Octave &o = pyramid.octaves[i];
      const LevelStack levels{o.gauss.data(), size_t(o.width) * size_t(o.height), o.width, o.width, o.height};
      if (i > 0) {  // level 0, which detection reads for DoG level 0: every second sample of level n_layers below
        const PyramidLevels::Octave &b = pyramid.octaves[i - 1];
        const LevelStack below{b.gauss.data(), size_t(b.width) * size_t(b.height), b.width, b.width, b.height};
        int differ = 0;
        for (int row = 0; row < o.height; ++row)
          for (int column = 0; column < o.width; ++column) {
            const float v = levels.at(0, row, column), w = below.at(c.layers, 2 * row, 2 * column);
            differ += !(v == w || (std::isnan(v) && std::isnan(w)));
          }
        EXPECT_EQ(differ, 0) << "octave " << i << " level 0";
      }
      for (int layer = 1; layer <= c.layers; ++layer)
        for (int row = kImageBorder; row < o.height - kImageBorder; ++row)
          for (int column = kImageBorder; column < o.width - kImageBorder; ++column)
            expected += is_scale_space_extremum(levels, layer, row, column, threshold);
    }
    std::printf("[ extrema  ] %s: %d in %zu octaves\n", c.name.c_str(), expected, pyramid.octaves.size());
    EXPECT_EQ(r.counts.candidates, expected);
    if (c.name != "23x17 no doubling") {
      EXPECT_GT(expected, 20);
    }
    // The prefilter over every octave built level by level, over a one-hit
    // list (the dense fallback), over octave 0 alone, and none.
    for (const std::string mode : {"1", "1 hit", "1 octave", "0"}) {
      SCOPED_TRACE("CS_SIFT_PREFILTER=" + mode);
      const bool one_octave = mode == "1 octave";
      const std::unique_ptr<CudaSift> other =
          engine_with("CS_SIFT_PREFILTER", mode[0] == '1' ? "1" : "0", p,
                      one_octave ? "CS_SIFT_PREFILTER_OCTAVES" : "CS_SIFT_PREFILTER_HITS",
                      one_octave || mode == "1 hit" ? "1" : "");
      other->run(d.image(), DescriptorFormat::opencv, stream.get());
      const Result o = other->download(stream.get());
      EXPECT_EQ(o.counts.candidates, expected);
      expect_same_keypoints(r, o);
    }
  }
}

TEST(GpuSift, DeterministicAndReusable) {
  CS_REQUIRE_GPU();
  const uint32_t seed = cs_test::fresh_seed();
  const cv::Mat a = random_image(320, 240, seed), b = random_image(211, 157, seed + 1);
  CudaSift sift(Params(), kDevice);
  cs::Stream stream(kDevice);
  DeviceGray da(a), db(b);
  sift.run(da.image(), DescriptorFormat::opencv, stream.get());
  const Result first = sift.download(stream.get());
  sift.run(db.image(), DescriptorFormat::opencv, stream.get());  // another size in between
  const Result other = sift.download(stream.get());
  // Stage by stage gives the same as run().
  sift.build_pyramid(da.image(), stream.get());
  sift.detect(stream.get());
  sift.describe(DescriptorFormat::opencv, stream.get());
  const Result again = sift.download(stream.get());
  ASSERT_GT(first.keypoints.size(), 10u);
  ASSERT_EQ(first.keypoints.size(), again.keypoints.size());
  for (size_t i = 0; i < first.keypoints.size(); ++i)
    ASSERT_EQ(std::memcmp(&first.keypoints[i], &again.keypoints[i], sizeof(Keypoint)), 0) << i;
  const int tolerance = descriptor_run_tolerance();
  for (size_t i = 0; i < first.descriptors.size(); ++i)
    ASSERT_LE(std::abs(int(first.descriptors[i]) - int(again.descriptors[i])), tolerance) << i;
  const sift_test::HostSiftResult hb = host(b, Params());
  EXPECT_NEAR(double(other.keypoints.size()), double(hb.keypoints.size()), 0.02 * hb.keypoints.size() + 1);
}

// Fixed-point descriptor sums (the default) are deterministic: runs of one
// engine and separate engines give the same bytes, floats and RootSIFT
// values bit for bit. Against CS_SIFT_DESCRIPTOR=float (float shared
// atomics): the same keypoints, bytes equal except at rounding boundaries.
TEST(GpuSift, FixedPointDescriptorsAreDeterministic) {
  CS_REQUIRE_GPU();
  const char *saved = std::getenv("CS_SIFT_DESCRIPTOR");
  const std::string saved_value = saved ? saved : "";
  unsetenv("CS_SIFT_DESCRIPTOR");
  cv::Mat img = sift_test::load_skimage("astronaut");
  if (img.empty()) img = random_image(512, 512, cs_test::fresh_seed());
  DeviceGray d(img);
  cs::Stream stream(kDevice);
  CudaSift a(Params(), kDevice), b(Params(), kDevice);
  ASSERT_EQ(setenv("CS_SIFT_DESCRIPTOR", "float", 1), 0);
  CudaSift floating(Params(), kDevice);
  if (saved) {
    setenv("CS_SIFT_DESCRIPTOR", saved_value.c_str(), 1);
  } else {
    unsetenv("CS_SIFT_DESCRIPTOR");
  }
  for (DescriptorFormat f : {DescriptorFormat::opencv, DescriptorFormat::float32, DescriptorFormat::rootsift}) {
    a.run(d.image(), f, stream.get());
    const Result first = a.download(stream.get());
    ASSERT_GT(first.keypoints.size(), 100u);
    for (int run = 0; run < 3; ++run) {
      CudaSift &e = run == 1 ? b : a;
      e.run(d.image(), f, stream.get());
      const Result again = e.download(stream.get());
      ASSERT_EQ(first.keypoints.size(), again.keypoints.size());
      ASSERT_EQ(first.descriptors.size(), again.descriptors.size());
      ASSERT_EQ(std::memcmp(first.descriptors.data(), again.descriptors.data(), first.descriptors.size()), 0)
          << "format " << int(f) << " run " << run;
    }
    if (f != DescriptorFormat::opencv) continue;
    floating.run(d.image(), f, stream.get());
    const Result fl = floating.download(stream.get());
    ASSERT_EQ(fl.keypoints.size(), first.keypoints.size());
    for (size_t i = 0; i < fl.keypoints.size(); ++i)
      ASSERT_EQ(std::memcmp(&fl.keypoints[i], &first.keypoints[i], sizeof(Keypoint)), 0) << i;
    ASSERT_EQ(fl.descriptors.size(), first.descriptors.size());
    size_t differing = 0;
    for (size_t i = 0; i < fl.descriptors.size(); ++i) {
      ASSERT_LE(std::abs(int(fl.descriptors[i]) - int(first.descriptors[i])), 1) << i;
      differing += fl.descriptors[i] != first.descriptors[i];
    }
    std::printf("[ fixed    ] %zu of %zu descriptor bytes differ (by one) from float sums\n", differing,
                fl.descriptors.size());
    EXPECT_LE(double(differing), 1e-3 * double(fl.descriptors.size()));
  }
}

// Frames of one size are replayed from CUDA graphs; level 0 is launched
// outside them with each frame's own pointer and pitch. A frame in another
// buffer must give that buffer's features, not the ones the graphs were
// made with.
TEST(GpuSift, GraphReplayFollowsTheInputBuffer) {
  CS_REQUIRE_GPU();
  const uint32_t seed = cs_test::fresh_seed();
  const cv::Mat a = random_image(320, 240, seed), b = random_image(320, 240, seed + 7);
  cs::Stream stream(kDevice);
  DeviceGray da(a), db(b);
  CudaSift sift(Params(), kDevice);
  sift.run(da.image(), DescriptorFormat::opencv, stream.get());
  const Result first_a = sift.download(stream.get());
  sift.run(db.image(), DescriptorFormat::opencv, stream.get());
  const Result then_b = sift.download(stream.get());
  sift.run(da.image(), DescriptorFormat::opencv, stream.get());
  const Result again_a = sift.download(stream.get());
  ASSERT_GT(first_a.keypoints.size(), 10u);
  expect_same_keypoints(first_a, again_a);
  expect_same_keypoints(then_b, gpu_sift(b, Params()));
  // Another descriptor format after the first: its own graph.
  sift.run(da.image(), DescriptorFormat::float32, stream.get());
  const Result floats = sift.download(stream.get());
  ASSERT_EQ(floats.keypoints.size(), first_a.keypoints.size());
  EXPECT_EQ(floats.descriptors.size(), floats.keypoints.size() * kDescriptorLength * sizeof(float));
}

// The graphs replay exactly the launches that CS_SIFT_GRAPHS=0 makes one by
// one, also on the legacy default stream (which the engine cannot capture,
// so it captures on its own stream).
TEST(GpuSift, GraphsGiveTheDirectLaunchesResults) {
  CS_REQUIRE_GPU();
  const cv::Mat img = random_image(400, 300, cs_test::fresh_seed());
  DeviceGray d(img);
  ASSERT_EQ(setenv("CS_SIFT_GRAPHS", "0", 1), 0);
  CudaSift direct(Params(), kDevice);
  unsetenv("CS_SIFT_GRAPHS");
  CudaSift graphs(Params(), kDevice);
  cs::Stream stream(kDevice);
  direct.run(d.image(), DescriptorFormat::opencv, stream.get());
  const Result expected = direct.download(stream.get());
  ASSERT_GT(expected.keypoints.size(), 10u);
  for (int frame = 0; frame < 3; ++frame) {  // capture, then replays
    graphs.run(d.image(), DescriptorFormat::opencv, nullptr);
    expect_same_keypoints(expected, graphs.download(nullptr));
  }
}

// The small octaves are built by one cluster kernel (small_octaves_kernel)
// instead of a launch per level; CS_SIFT_FUSED=0 (read at construction)
// keeps the per-level kernels. Both must give the same pyramid bit for bit
// (same taps, same sums in the same order), hence the same keypoints, at
// sizes where the fused octaves start at octave 0 (tiny frames), in the
// middle, with odd sides, wide and tall strips, other layer counts (2
// layers: radii past 16, never fused), no doubling and float input.
void expect_same_pyramid(const PyramidLevels &a, const PyramidLevels &b, const std::string &what) {
  ASSERT_EQ(a.octaves.size(), b.octaves.size()) << what;
  for (size_t o = 0; o < a.octaves.size(); ++o) {
    const PyramidLevels::Octave &x = a.octaves[o], &y = b.octaves[o];
    ASSERT_EQ(x.width, y.width) << what;
    ASSERT_EQ(x.height, y.height) << what;
    const size_t plane = size_t(x.width) * size_t(x.height);
    ASSERT_EQ(x.gauss.size(), y.gauss.size()) << what;
    for (size_t i = 0; i < x.gauss.size(); ++i)
      ASSERT_EQ(std::memcmp(&x.gauss[i], &y.gauss[i], sizeof(float)), 0)
          << what << ": octave " << o << " gauss level " << i / plane << " pixel (" << (i % plane) % x.width
          << ", " << (i % plane) / x.width << "): " << x.gauss[i] << " vs " << y.gauss[i];
  }
}

TEST(GpuSift, FusedSmallOctavesEqualPerLevelKernels) {
  CS_REQUIRE_GPU();
  struct Case {
    int width, height;
    int layers;
    bool upsample, as_float;
    bool cluster8 = false;  // CS_SIFT_CLUSTER=8: the portable cluster size (bands twice as tall)
    double sigma = 1.6;     // 3: radii up to 23, past the per-level kernel's unrolled ones
  };
  const Case cases[] = {{2, 3, 3, true, false},      {7, 5, 3, true, false},       {17, 64, 3, true, false},
                        {33, 31, 3, true, false},    {64, 17, 3, false, false},    {97, 61, 3, true, true},
                        {211, 157, 3, true, false},  {320, 240, 3, true, false},   {641, 479, 3, true, false},
                        {640, 480, 2, true, false},  {640, 480, 4, true, false},   {640, 480, 5, true, false},
                        {501, 333, 3, false, false},
                        {1920, 1080, 3, true, false}, {3001, 300, 3, true, false},  {300, 3001, 3, true, false},
                        {17, 64, 3, true, false, true}, {211, 157, 3, true, false, true},
                        {1920, 1080, 3, true, false, true}, {300, 3001, 3, true, false, true},
                        {640, 480, 3, true, false, false, 3.0},   {211, 157, 4, false, false, false, 3.0}};
  const uint32_t seed = cs_test::fresh_seed();
  cs::Stream stream(kDevice);
  for (const Case &c : cases) {
    const std::string what = std::to_string(c.width) + "x" + std::to_string(c.height) + " layers " +
                             std::to_string(c.layers) + (c.upsample ? "" : " no doubling") +
                             (c.as_float ? " float" : "") + (c.cluster8 ? " cluster 8" : "") +
                             (c.sigma != 1.6 ? " sigma " + std::to_string(c.sigma) : "");
    DeviceGray d(sized_image(c.width, c.height, seed, c.as_float));
    Params p;
    p.n_octave_layers = c.layers;
    p.upsample = c.upsample;
    p.sigma = c.sigma;
    const std::unique_ptr<CudaSift> per_level_engine = engine_with("CS_SIFT_FUSED", "0", p);
    CudaSift &per_level = *per_level_engine;
    if (c.cluster8) {
      ASSERT_EQ(setenv("CS_SIFT_CLUSTER", "8", 1), 0);
    }
    CudaSift fused(p, kDevice);
    unsetenv("CS_SIFT_CLUSTER");
    for (int frame = 0; frame < 2; ++frame) {  // graph capture, then replay
      per_level.run(d.image(), DescriptorFormat::opencv, stream.get());
      const PyramidLevels a = per_level.download_pyramid(stream.get());
      const Result ra = per_level.download(stream.get());
      fused.run(d.image(), DescriptorFormat::opencv, stream.get());
      const PyramidLevels b = fused.download_pyramid(stream.get());
      const Result rb = fused.download(stream.get());
      EXPECT_FALSE(a.fused_possible) << what;
      EXPECT_EQ(a.fused_from, int(a.octaves.size())) << what;
      // sm_90+: the fused kernel must actually run (from some octave on).
      if (b.fused_possible && !b.octaves.empty()) {
        EXPECT_LT(b.fused_from, int(b.octaves.size())) << what;
        if (c.cluster8) {
          EXPECT_EQ(b.fused_blocks, 8) << what;
        }
      }
      if (frame == 0)
        std::printf("[ fused    ] %s: %zu octaves, fused from octave %d, cluster of %d\n", what.c_str(),
                    b.octaves.size(), b.fused_from, b.fused_blocks);
      expect_same_pyramid(a, b, what);
      expect_same_keypoints(ra, rb);
    }
  }
}

// Kernels that follow a kernel are launched to overlap its tail
// (programmatic dependent launch; CS_SIFT_PDL=0 launches them plainly),
// and run() describes the oriented keypoints while their canonical order is
// made, then gathers the rows (CS_SIFT_DESCRIBE_EARLY=0: the final list is
// described after it): the same candidates, keypoints and descriptors
// either way, from graphs and from direct launches, with n-features too.
TEST(GpuSift, OverlappedLaunchesChangeNothing) {
  CS_REQUIRE_GPU();
  const uint32_t seed = cs_test::fresh_seed();
  cs::Stream stream(kDevice);
  const cv::Size sizes[] = {{1920, 1080}, {640, 480}, {211, 157}, {7, 5}};
  for (const cv::Size &size : sizes) {
    for (const int layers : {3, 2, 4}) {
      const std::string what = std::to_string(size.width) + "x" + std::to_string(size.height) + " layers " +
                               std::to_string(layers);
      SCOPED_TRACE(what);
      DeviceGray d(random_image(size.width, size.height, seed + uint32_t(size.width) + uint32_t(layers)));
      Params p;
      p.n_octave_layers = layers;
      p.n_features = layers == 4 ? 300 : 0;
      ASSERT_EQ(setenv("CS_SIFT_PDL", "0", 1), 0);
      ASSERT_EQ(setenv("CS_SIFT_DESCRIBE_EARLY", "0", 1), 0);
      CudaSift plain(p, kDevice);
      unsetenv("CS_SIFT_PDL");
      unsetenv("CS_SIFT_DESCRIBE_EARLY");
      CudaSift overlapped(p, kDevice);
      ASSERT_EQ(setenv("CS_SIFT_GRAPHS", "0", 1), 0);
      CudaSift direct(p, kDevice);
      unsetenv("CS_SIFT_GRAPHS");
      plain.run(d.image(), DescriptorFormat::opencv, stream.get());
      const Result expected = plain.download(stream.get());
      ASSERT_FALSE(expected.overflowed);
      for (CudaSift *e : {&overlapped, &direct}) {
        for (int frame = 0; frame < 3; ++frame) {  // graph capture, replays, stage by stage
          if (frame < 2) {
            e->run(d.image(), DescriptorFormat::opencv, stream.get());
          } else {
            e->build_pyramid(d.image(), stream.get());
            e->detect(stream.get());
            e->describe(DescriptorFormat::opencv, stream.get());
          }
          const Result r = e->download(stream.get());
          EXPECT_EQ(r.counts.candidates, expected.counts.candidates);
          EXPECT_EQ(r.counts.refined, expected.counts.refined);
          expect_same_keypoints(expected, r);
        }
      }
    }
  }
}

// run()'s frame plans (CS_SIFT_ORDER, CS_SIFT_CLUSTER_START) give the same
// candidates, keypoints and descriptors, in every descriptor format; an
// engine left to choose times each on its first frames, settles on one and
// keeps giving the same results, and chooses again for a new frame size.
TEST(GpuSift, FramePlansGiveTheSameFeatures) {
  CS_REQUIRE_GPU();
  const uint32_t seed = cs_test::fresh_seed();
  cs::Stream stream(kDevice);
  // 33 x 31: every octave is small (fused from octave 0), so order 1 has no
  // large octave to find extrema of on its own; 300 x 3001: one large octave
  // besides octave 0 ... and the rest.
  const cv::Size sizes[] = {{1920, 1080}, {640, 480}, {211, 157}, {33, 31}, {300, 3001}};
  std::vector<std::unique_ptr<CudaSift>> fixed;  // one engine per plan
  for (int plan = 0; plan < FramePlanTuner::kPlans; ++plan) {
    const FramePlan f = FramePlanTuner::plan(plan);
    fixed.push_back(engine_with("CS_SIFT_ORDER", std::to_string(f.order).c_str(), Params(), "CS_SIFT_CLUSTER_START",
                                std::to_string(f.cluster_start).c_str()));
    EXPECT_EQ(fixed.back()->frame_order(), f.order);
  }
  CudaSift &first = *fixed[0];
  CudaSift tuned(Params(), kDevice);
  {  // frames still being timed when the size changes are not counted for the next size
    DeviceGray other(random_image(97, 61, seed));
    for (int frame = 0; frame < 3; ++frame) tuned.run(other.image(), DescriptorFormat::opencv, stream.get());
  }
  for (const cv::Size &size : sizes) {
    const std::string what = std::to_string(size.width) + "x" + std::to_string(size.height);
    SCOPED_TRACE(what);
    DeviceGray d(random_image(size.width, size.height, seed + uint32_t(size.width)));
    for (const DescriptorFormat f : {DescriptorFormat::opencv, DescriptorFormat::float32}) {
      first.run(d.image(), f, stream.get());
      const Result a = first.download(stream.get());
      for (int plan = 1; plan < FramePlanTuner::kPlans; ++plan) {
        SCOPED_TRACE("plan " + std::to_string(plan));
        fixed[static_cast<size_t>(plan)]->run(d.image(), f, stream.get());
        const Result b = fixed[static_cast<size_t>(plan)]->download(stream.get());
        EXPECT_EQ(a.counts.candidates, b.counts.candidates);
        EXPECT_EQ(a.counts.refined, b.counts.refined);
        expect_same_keypoints(a, b);
      }
    }
    first.run(d.image(), DescriptorFormat::opencv, stream.get());
    const Result expected = first.download(stream.get());
    {  // the later cluster start builds its first octave level by level instead, bit for bit the same
      const PyramidLevels a = first.download_pyramid(stream.get());
      CudaSift &later = *fixed[static_cast<size_t>(FramePlanTuner::index({0, 1}))];
      const PyramidLevels b = later.download_pyramid(stream.get());
      const int octaves = static_cast<int>(a.octaves.size());
      EXPECT_EQ(b.fused_from, a.fused_from + 2 <= octaves ? a.fused_from + 1 : a.fused_from);
      expect_same_pyramid(a, b, what + " cluster one octave later");
      std::printf("[ plan     ] %s: %d octaves, cluster from octave %d, or %d\n", what.c_str(), octaves,
                  a.fused_from, b.fused_from);
    }
    // Every plan's untimed and timed frames, and a few whose times are still in flight.
    const int frames_to_choose = FramePlanTuner::kPlans * (FramePlanTuner::kTimedFrames + 1) + 10;
    int frames = 0;
    for (; frames < frames_to_choose; ++frames) {
      tuned.run(d.image(), DescriptorFormat::opencv, stream.get());
      expect_same_keypoints(expected, tuned.download(stream.get()));
      if (tuned.frame_order() >= 0) break;
    }
    EXPECT_GE(tuned.frame_order(), 0) << "no order chosen after " << frames << " frames";
    EXPECT_GE(tuned.small_octaves_from(), 0);
    std::printf("[ plan     ] %s: order %d, cluster from octave %d, chosen after %d frames\n", what.c_str(),
                tuned.frame_order(), tuned.small_octaves_from(), frames + 1);
    tuned.run(d.image(), DescriptorFormat::opencv, stream.get());
    expect_same_keypoints(expected, tuned.download(stream.get()));
  }
}

// An engine made with the comparison switch `name`=`value` gives the pyramid
// and keypoints bit for bit of the engine made with `name`=`plain_value`
// (nullptr: unset, the default) on `img`.
void expect_switch_changes_nothing(const char *name, const char *value, const cv::Mat &img, const Params &p,
                                   const std::string &what, const char *plain_value = nullptr) {
  cs::Stream stream(kDevice);
  DeviceGray d(img);
  ASSERT_EQ(setenv(name, value, 1), 0);
  CudaSift switched(p, kDevice);
  if (plain_value) {
    ASSERT_EQ(setenv(name, plain_value, 1), 0);
  } else {
    unsetenv(name);
  }
  CudaSift plain(p, kDevice);
  unsetenv(name);
  switched.run(d.image(), DescriptorFormat::opencv, stream.get());
  plain.run(d.image(), DescriptorFormat::opencv, stream.get());
  expect_same_pyramid(switched.download_pyramid(stream.get()), plain.download_pyramid(stream.get()), what);
  expect_same_keypoints(switched.download(stream.get()), plain.download(stream.get()));
}

// The doubling kernel (source rows and columns loaded once per 2 x 8
// outputs; CS_SIFT_UPSAMPLE=kernel) equals the doubling done while level
// 0's tiles are staged (CS_SIFT_UPSAMPLE=staged, upsampled_sample per
// output) bit for bit: the same pyramid and keypoints, at odd sides
// (clamped edges) and from float input.
TEST(GpuSift, DoublingKernelEqualsStagedDoubling) {
  CS_REQUIRE_GPU();
  const uint32_t seed = cs_test::fresh_seed();
  const cv::Size sizes[] = {{640, 480}, {641, 479}, {3, 2}, {13, 9}, {97, 61}, {5, 17}};
  for (const cv::Size &size : sizes) {
    for (const bool as_float : {false, true}) {
      const std::string what = std::to_string(size.width) + "x" + std::to_string(size.height) + (as_float ? " float" : "");
      SCOPED_TRACE(what);
      const cv::Mat img = sized_image(size.width, size.height, seed, as_float);
      expect_switch_changes_nothing("CS_SIFT_UPSAMPLE", "staged", img, Params(), what, "kernel");
    }
  }
}

// Level 0 of the doubled octave straight from the input (the default:
// doubled_level0_kernel, the blur of the doubling as one sum per axis)
// against the input doubled into a plane and blurred (CS_SIFT_UPSAMPLE=
// kernel): the same image to the rounding of the sums, so every level of
// every octave within 1e-3 of 0..255 and the same features (the host
// executor's agreement criteria), at sizes with every border case (odd
// sides; sides shorter than a sum, where the plane is used), from float
// input, with 2 and 5 layers and with sigma 2.2 (other radii).
TEST(GpuSift, DirectDoublingIsTheBlurredDoubledPlane) {
  CS_REQUIRE_GPU();
  struct Case {
    int width, height;
    bool as_float;
    int layers;
    double sigma;
  };
  const Case cases[] = {{640, 480, false, 3, 1.6}, {641, 479, false, 3, 1.6}, {641, 479, true, 3, 1.6},
                        {1920, 1080, false, 3, 1.6}, {97, 61, false, 3, 1.6},  {13, 9, false, 3, 1.6},
                        {3, 2, false, 3, 1.6},       {5, 17, true, 3, 1.6},    {320, 240, false, 2, 1.6},
                        {320, 240, false, 5, 1.6},   {333, 257, false, 3, 2.2}, {3001, 300, false, 3, 1.6}};
  const uint32_t seed = cs_test::fresh_seed();
  cs::Stream stream(kDevice);
  for (const Case &c : cases) {
    const std::string what = std::to_string(c.width) + "x" + std::to_string(c.height) +
                             (c.as_float ? " float" : "") + " layers " + std::to_string(c.layers) + " sigma " +
                             std::to_string(c.sigma);
    SCOPED_TRACE(what);
    DeviceGray d(sized_image(c.width, c.height, seed, c.as_float));
    Params p;
    p.n_octave_layers = c.layers;
    p.sigma = c.sigma;
    const std::unique_ptr<CudaSift> plane_engine = engine_with("CS_SIFT_UPSAMPLE", "kernel", p);
    CudaSift &plane = *plane_engine;
    CudaSift direct(p, kDevice);
    plane.run(d.image(), DescriptorFormat::opencv, stream.get());
    direct.run(d.image(), DescriptorFormat::opencv, stream.get());
    const PyramidLevels a = plane.download_pyramid(stream.get()), b = direct.download_pyramid(stream.get());
    ASSERT_EQ(a.octaves.size(), b.octaves.size());
    double largest = 0.0;
    for (size_t o = 0; o < a.octaves.size(); ++o) {
      ASSERT_EQ(a.octaves[o].gauss.size(), b.octaves[o].gauss.size());
      for (size_t i = 0; i < a.octaves[o].gauss.size(); ++i)
        largest = std::max(largest, double(std::fabs(a.octaves[o].gauss[i] - b.octaves[o].gauss[i])));
    }
    std::printf("[ doubling ] %s: largest difference %.3g\n", what.c_str(), largest);
    EXPECT_LE(largest, 1e-3);
    const Result ra = plane.download(stream.get()), rb = direct.download(stream.get());
    const sift_test::Agreement g =
        sift_test::agreement(sift_test::to_cv(ra.keypoints), descriptors_f32(ra), sift_test::to_cv(rb.keypoints),
                             descriptors_f32(rb));
    if (ra.keypoints.empty() && rb.keypoints.empty()) continue;
    EXPECT_GE(g.reference_matched, 0.99);
    EXPECT_LE(g.tested_unmatched, 0.01);
    EXPECT_LT(g.median_descriptor_distance, 2.0);
  }
}

// Blur tiles staged in 16-byte pieces (interior tiles of float levels, the
// default) equal tiles staged in 4-byte pieces (CS_SIFT_STAGE=floats) bit
// for bit: at sides where no tile, some tiles or all but the outer ring
// qualify, with every unrolled radius of OpenCV's defaults, with 2 and 5
// layers (other radii) and with sigma 3 (radii past the unrolled ones).
TEST(GpuSift, QuadStagingEqualsFloatStaging) {
  CS_REQUIRE_GPU();
  const uint32_t seed = cs_test::fresh_seed();
  const cv::Size sizes[] = {{1920, 1080}, {641, 479}, {97, 61}, {4000, 41}, {37, 3001}, {1283, 717}};
  for (const cv::Size &size : sizes) {
    for (const int layers : {3, 2, 5}) {
      const std::string what = std::to_string(size.width) + "x" + std::to_string(size.height) + " layers " +
                               std::to_string(layers);
      SCOPED_TRACE(what);
      Params p;
      p.n_octave_layers = layers;
      expect_switch_changes_nothing("CS_SIFT_STAGE", "floats",
                                    random_image(size.width, size.height, seed + uint32_t(size.width)), p, what);
    }
  }
  Params wide;
  wide.sigma = 3.0;
  expect_switch_changes_nothing("CS_SIFT_STAGE", "floats", random_image(800, 600, seed), wide, "800x600 sigma 3");
}

// With CS_SIFT_TRACE=1 an engine gives when each kernel of run() ended, in
// order along each stream, every kernel of the frame once.
TEST(GpuSift, TraceGivesEveryKernelOfAFrame) {
  CS_REQUIRE_GPU();
  DeviceGray d(random_image(640, 480, cs_test::fresh_seed()));
  ASSERT_EQ(setenv("CS_SIFT_TRACE", "1", 1), 0);
  CudaSift traced(Params(), kDevice);
  unsetenv("CS_SIFT_TRACE");
  CudaSift plain(Params(), kDevice);
  EXPECT_TRUE(plain.trace().empty());
  cs::Stream stream(kDevice);
  plain.run(d.image(), DescriptorFormat::opencv, stream.get());
  const Result expected = plain.download(stream.get());
  for (int frame = 0; frame < 3; ++frame) {  // capture, then replays
    traced.run(d.image(), DescriptorFormat::opencv, stream.get());
    expect_same_keypoints(expected, traced.download(stream.get()));
    const std::vector<TraceMark> marks = traced.trace();
    ASSERT_FALSE(marks.empty());
    EXPECT_EQ(marks.front().kernel, "blur octave 0 level 0 (doubled)");
    EXPECT_EQ(marks.back().kernel, "SIFT descriptor gather kernel");  // after the descriptors and the order
    EXPECT_TRUE(std::any_of(marks.begin(), marks.end(),
                            [](const TraceMark &m) { return m.kernel == "SIFT descriptor kernel"; }));
    std::map<std::string, double> last_on;  // branch -> its last end
    int blurs = 0;
    for (const TraceMark &m : marks) {
      EXPECT_GE(m.end_ms, last_on[m.branch]) << m.kernel;
      last_on[m.branch] = m.end_ms;
      blurs += m.kernel.rfind("blur", 0) == 0;
    }
    EXPECT_GE(blurs, 6);  // octave 0's levels at least
    EXPECT_LE(marks.back().end_ms, 100.0);
  }
}

TEST(GpuSift, DescriptorFormatsAndFloatInput) {
  CS_REQUIRE_GPU();
  const uint32_t seed = cs_test::fresh_seed();
  const cv::Mat img = random_image(160, 120, seed);
  cv::Mat f;
  img.convertTo(f, CV_32F);
  const Result bytes = gpu_sift(img, Params(), DescriptorFormat::opencv);
  const Result floats = gpu_sift(f, Params(), DescriptorFormat::float32);
  const Result root = gpu_sift(img, Params(), DescriptorFormat::rootsift);
  ASSERT_GT(bytes.keypoints.size(), 5u);
  ASSERT_EQ(bytes.keypoints.size(), floats.keypoints.size());
  ASSERT_EQ(bytes.keypoints.size(), root.keypoints.size());
  const cv::Mat b = descriptors_f32(bytes), fl = descriptors_f32(floats), r = descriptors_f32(root);
  EXPECT_LE(cv::norm(b, fl, cv::NORM_INF), 1.0);
  for (int k = 0; k < r.rows; ++k) EXPECT_NEAR(cv::norm(r.row(k)), 1.0, 1e-4) << k;
}

TEST(GpuSift, NFeatures) {
  CS_REQUIRE_GPU();
  const uint32_t seed = cs_test::fresh_seed();
  const cv::Mat img = random_image(400, 300, seed);
  Params p;
  p.n_features = 50;
  const Result gpu = gpu_sift(img, p);
  const sift_test::HostSiftResult h = host(img, p);
  ASSERT_GE(gpu.keypoints.size(), 50u);
  EXPECT_LE(gpu.keypoints.size(), 55u);
  const sift_test::Agreement g =
      sift_test::agreement(sift_test::to_cv(h.keypoints), cv::Mat(), sift_test::to_cv(gpu.keypoints), cv::Mat());
  EXPECT_GE(g.reference_matched, 0.9);
}

// Each keypoint is placed at its rank less the duplicates ranked before it:
// a frame of many keypoints (blurred noise gives tens of thousands, a few
// of them duplicates) comes out strictly increasing with no neighbours
// duplicates (so with no gap or overwritten place), and n_features keeps
// exactly the full list's first keypoints plus ties with the last one, and
// their descriptors.
TEST(GpuSift, CanonicalOrderOfManyKeypoints) {
  CS_REQUIRE_GPU();
  const cv::Mat img = random_image(1280, 960, cs_test::fresh_seed());
  const Result all = gpu_sift(img, Params());
  ASSERT_FALSE(all.overflowed);
  const size_t n = all.keypoints.size();
  ASSERT_GT(n, 4200u);
  std::printf("[ order ] %zu keypoints of %d oriented\n", n, all.counts.oriented);
  EXPECT_LE(int(n), all.counts.oriented);
  for (size_t i = 1; i < n; ++i) {
    ASSERT_TRUE(keypoint_less(all.keypoints[i - 1], all.keypoints[i])) << i;
    ASSERT_FALSE(keypoint_duplicate(all.keypoints[i - 1], all.keypoints[i])) << i;
  }
  for (const int wanted : {1, 2047, 2048, 2049, 4097}) {
    SCOPED_TRACE(wanted);
    Params p;
    p.n_features = wanted;
    const Result some = gpu_sift(img, p);
    size_t expected = size_t(wanted);
    while (expected < n && all.keypoints[expected].response == all.keypoints[size_t(wanted) - 1].response) ++expected;
    ASSERT_EQ(some.keypoints.size(), expected);
    EXPECT_EQ(std::memcmp(some.keypoints.data(), all.keypoints.data(), expected * sizeof(Keypoint)), 0);
    EXPECT_EQ(std::memcmp(some.descriptors.data(), all.descriptors.data(), expected * kDescriptorLength), 0);
  }
}

TEST(GpuSift, EdgeCases) {
  CS_REQUIRE_GPU();
  for (cv::Size s : {cv::Size(1, 1), cv::Size(2, 3), cv::Size(7, 5), cv::Size(17, 64), cv::Size(333, 111)}) {
    const cv::Mat img = random_image(s.width, s.height, 11u + uint32_t(s.width));
    const Result gpu = gpu_sift(img, Params());
    const sift_test::HostSiftResult h = host(img, Params());
    EXPECT_NEAR(double(gpu.keypoints.size()), double(h.keypoints.size()), 0.02 * h.keypoints.size() + 1) << s;
  }
  const cv::Mat flat(120, 90, CV_8U, cv::Scalar(77));
  EXPECT_TRUE(gpu_sift(flat, Params()).keypoints.empty());
  Params no_doubling;
  no_doubling.upsample = false;
  const cv::Mat img = random_image(200, 150, 5u);
  const Result gpu = gpu_sift(img, no_doubling);
  const sift_test::HostSiftResult h = host(img, no_doubling);
  EXPECT_NEAR(double(gpu.keypoints.size()), double(h.keypoints.size()), 0.02 * h.keypoints.size() + 1);
}

// sigma = 3 takes radii up to 23: the generic (not unrolled) blur kernel,
// with more than 48 KB of shared memory (the opt-in made at construction),
// captured into the pyramid graph like the others.
TEST(GpuSift, WideBlurKernels) {
  CS_REQUIRE_GPU();
  const cv::Mat img = random_image(320, 240, cs_test::fresh_seed());
  Params p;
  p.sigma = 3.0;
  const Result gpu = gpu_sift(img, p);
  const sift_test::HostSiftResult h = host(img, p);
  ASSERT_GT(h.keypoints.size(), 5u);
  EXPECT_NEAR(double(gpu.keypoints.size()), double(h.keypoints.size()), 0.02 * h.keypoints.size() + 1);
  const sift_test::Agreement a =
      sift_test::agreement(sift_test::to_cv(h.keypoints), cv::Mat(), sift_test::to_cv(gpu.keypoints), cv::Mat());
  EXPECT_GE(a.reference_matched, 0.98);
}

TEST(GpuSift, OverflowIsCountedNotWritten) {
  CS_REQUIRE_GPU();
  const cv::Mat img = random_image(320, 240, 3u);
  Capacity tiny;
  tiny.candidates = 64;
  tiny.keypoints = 32;
  const Result gpu = gpu_sift(img, Params(), DescriptorFormat::opencv, tiny);
  EXPECT_TRUE(gpu.overflowed);
  EXPECT_GT(gpu.counts.candidates, 64);
  EXPECT_LE(gpu.keypoints.size(), 32u);
  EXPECT_EQ(gpu.descriptors.size(), gpu.keypoints.size() * 128);
}

TEST(GpuSift, RejectsBadInput) {
  CS_REQUIRE_GPU();
  Params bad;
  bad.sigma = 0;
  EXPECT_THROW(CudaSift(bad, kDevice), std::invalid_argument);
  Capacity huge;
  huge.keypoints = 1 << 30;
  EXPECT_THROW(CudaSift(Params(), kDevice, huge), std::invalid_argument);
  CudaSift sift(Params(), kDevice);
  DeviceImage empty;
  EXPECT_THROW(sift.build_pyramid(empty, nullptr), std::invalid_argument);
  EXPECT_THROW(sift.detect(nullptr), std::logic_error);
}

}  // namespace
