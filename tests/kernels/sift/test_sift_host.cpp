// The SIFT engine's math (kernels/sift/sift_math.h), run on the CPU by the
// test-only host executor, against OpenCV 4.6's cv::SIFT: the pieces
// (Gaussian taps, doubling, blur, octave count) and the whole on natural
// images with the accuracy criteria of the CUDA engine.
#include <gtest/gtest.h>

#include <opencv2/features2d.hpp>
#include <opencv2/imgproc.hpp>

#include <cmath>
#include <cstdio>
#include <random>

#include "sift_host_executor.h"
#include "sift_test_util.h"
#include "test_support.h"

namespace {

using namespace cs::sift;
using sift_test::Agreement;

sift_test::HostSiftResult run_host(const cv::Mat &gray, const Params &p, DescriptorFormat f = DescriptorFormat::opencv) {
  return sift_test::host_sift(gray.data, gray.step, gray.cols, gray.rows,
                              gray.type() == CV_8U ? PixelType::u8 : PixelType::f32, p, f);
}

cv::Mat descriptor_mat(const std::vector<float> &d) {
  return cv::Mat(int(d.size() / kDescriptorLength), kDescriptorLength, CV_32F, const_cast<float *>(d.data())).clone();
}

sift_cpu::Features opencv_features(const cv::Mat &gray, const Params &p) {
  sift_cpu::Params cp;
  cp.n_features = p.n_features;
  cp.n_octave_layers = p.n_octave_layers;
  cp.contrast_threshold = p.contrast_threshold;
  cp.edge_threshold = p.edge_threshold;
  cp.sigma = p.sigma;
  sift_cpu::Features f = sift_cpu::detect_and_describe(gray, cp);
  f.descriptors.convertTo(f.descriptors, CV_32F);
  return f;
}

cv::Mat random_image(int w, int h, uint32_t seed) {
  std::vector<uint8_t> bytes = cs_test::random_bytes(size_t(w) * size_t(h), seed);
  cv::Mat m(h, w, CV_8U, bytes.data());
  cv::Mat out;
  cv::GaussianBlur(m, out, cv::Size(0, 0), 2.0);  // structure at several scales, not pixel noise
  cv::normalize(out, out, 0, 255, cv::NORM_MINMAX);
  return out;
}

// ------------------------------------------------------------ the pieces

TEST(SiftMath, GaussianTapsAreOpenCVs) {
  for (double sigma : {1.2489995996796799, 1.2262735, 1.5450077, 1.9465878, 2.4525, 3.09}) {
    const BlurTaps t = gaussian_taps(sigma);
    const int ksize = cvRound(sigma * 8 + 1) | 1;
    ASSERT_EQ(2 * t.radius + 1, ksize) << sigma;
    const cv::Mat k = cv::getGaussianKernel(ksize, sigma, CV_32F);
    for (int i = 0; i <= t.radius; ++i) EXPECT_NEAR(t.weight[i], k.at<float>(t.radius + i), 1e-7f) << sigma << " " << i;
  }
}

TEST(SiftMath, OctaveCountIsOpenCVs) {
  // cvRound(log2(min side of the doubled image) - 2) + 1
  EXPECT_EQ(octave_count(512, 512, true), 9);
  EXPECT_EQ(octave_count(1920, 1080, true), 10);
  EXPECT_EQ(octave_count(451, 300, true), 8);  // 600: 9.23 - 2 rounds to 7
  EXPECT_EQ(octave_count(640, 480, false), 7);
  EXPECT_EQ(octave_count(1, 1, true), 0);
  EXPECT_EQ(octave_count(0, 10, true), 0);
}

TEST(SiftMath, DoublingAndBlurMatchOpenCV) {
  const uint32_t seed = cs_test::fresh_seed();
  const cv::Mat img = random_image(37, 23, seed);
  cv::Mat f, doubled, blurred;
  img.convertTo(f, CV_32F);
  cv::resize(f, doubled, cv::Size(74, 46), 0, 0, cv::INTER_LINEAR);
  for (int y = 0; y < 46; ++y)
    for (int x = 0; x < 74; ++x)
      ASSERT_NEAR(upsampled_sample(img.data, img.step, 37, 23, x, y), doubled.at<float>(y, x), 1e-4f) << x << "," << y;

  const double sigma = initial_sigma(1.6, true);
  cv::GaussianBlur(doubled, blurred, cv::Size(), sigma, sigma);
  const BlurTaps t = gaussian_taps(sigma);
  const int r = t.radius;
  // Separable with reflect-101 borders, as the executor and the kernels do it.
  cv::Mat padded;
  cv::copyMakeBorder(doubled, padded, r, r, r, r, cv::BORDER_REFLECT_101);
  cv::Mat mid(padded.rows, doubled.cols, CV_32F);
  for (int y = 0; y < padded.rows; ++y)
    for (int x = 0; x < doubled.cols; ++x) mid.at<float>(y, x) = blur_1d(&padded.at<float>(y, x + r), 1, t);
  for (int y = 0; y < doubled.rows; ++y)
    for (int x = 0; x < doubled.cols; ++x)
      ASSERT_NEAR(blur_1d(&mid.at<float>(y + r, x), int(mid.step1()), t), blurred.at<float>(y, x), 2e-3f)
          << x << "," << y;
}

// The GPU's unrolled blur must give the executor's results bit for bit.
TEST(SiftMath, UnrolledBlurEqualsGenericBlur) {
  const uint32_t seed = cs_test::fresh_seed();
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(0.f, 255.f);
  std::vector<float> line(64);
  for (float &v : line) v = u(rng);
  for (double sigma : {0.6, 1.2262735, 1.9465878, 3.09}) {  // radii 3, 5, 8, 13
    const BlurTaps t = gaussian_taps(sigma);
    const float *centre = &line[32];
    float fixed = 0.f;
    switch (t.radius) {
      case 3: fixed = blur_1d_fixed<3>(centre, 1, t); break;
      case 5: fixed = blur_1d_fixed<5>(centre, 1, t); break;
      case 8: fixed = blur_1d_fixed<8>(centre, 1, t); break;
      case 13: fixed = blur_1d_fixed<13>(centre, 1, t); break;
      default: FAIL() << "unexpected radius " << t.radius << " for sigma " << sigma;
    }
    EXPECT_EQ(fixed, blur_1d(centre, 1, t)) << sigma;
  }
}

// descriptor_row_span must hold every sample that descriptor_contribution
// accepts (the kernels and the executor enumerate only the spans): over
// random sizes and angles, including the axis-aligned ones where a rotation
// coefficient is (nearly) zero.
TEST(SiftMath, DescriptorRowSpansHoldEveryAcceptedSample) {
  const int side = 801;
  const std::vector<float> plane(size_t(side) * side, 0.f);
  const PlaneView g{plane.data(), side, side, side};
  std::mt19937 rng(cs_test::fresh_seed());
  std::uniform_real_distribution<float> size_dist(1.5f, 60.f), angle_dist(0.f, 360.f);
  size_t accepted = 0, enumerated = 0, window = 0;
  for (int n = 0; n < 600; ++n) {
    Keypoint kp{};
    kp.x = kp.y = 400.f;
    kp.size = size_dist(rng);
    const float axis_angles[] = {0.f, 90.f, 180.f, 270.f, 45.f};
    kp.angle = n < 5 ? axis_angles[n] : angle_dist(rng);
    kp.octave = 0;  // octave 0, layer 0: level pixels = input pixels
    const DescriptorWindow w = descriptor_window(kp, 0, side, side);
    ASSERT_LT(w.radius, 400);
    for (int i = -w.radius; i <= w.radius; ++i) {
      int first = 0, last = -1;
      descriptor_row_span(w, i, &first, &last);
      ASSERT_GE(first, -w.radius);
      ASSERT_LE(last, w.radius);
      enumerated += size_t(std::max(0, last - first + 1));
      window += size_t(2 * w.radius + 1);
      for (int j = -w.radius; j <= w.radius; ++j) {
        DescriptorContribution c;
        if (!descriptor_contribution(g, w, i, j, &c)) continue;
        ++accepted;
        ASSERT_TRUE(j >= first && j <= last) << "size " << kp.size << " angle " << kp.angle << " i " << i << " j " << j;
      }
    }
  }
  std::printf("[ spans    ] %.1f%% of the square windows enumerated, %.1f%% of those accepted\n",
              100.0 * double(enumerated) / double(window), 100.0 * double(accepted) / double(enumerated));
  // The spans are tight: about the accepted samples plus a column per row
  // end, about half of the square windows.
  EXPECT_LT(double(enumerated), 1.2 * double(accepted));
  EXPECT_LT(double(enumerated), 0.65 * double(window));
}

TEST(SiftMath, Reflect101) {
  EXPECT_EQ(reflect101(-1, 5), 1);
  EXPECT_EQ(reflect101(-4, 5), 4);
  EXPECT_EQ(reflect101(5, 5), 3);
  EXPECT_EQ(reflect101(-6, 5), 2);  // beyond one reflection
  EXPECT_EQ(reflect101(3, 1), 0);
}

TEST(SiftMath, CanonicalOrder) {
  Keypoint a{1, 2, 3, 10, 0.5f, 0}, b = a;
  b.response = 0.4f;
  EXPECT_TRUE(keypoint_less(a, b));
  b = a;
  b.angle = 20;
  EXPECT_TRUE(keypoint_less(a, b));
  EXPECT_FALSE(keypoint_less(b, a));
  EXPECT_FALSE(keypoint_duplicate(a, b));
  b.angle = a.angle;
  b.octave = 7;
  EXPECT_TRUE(keypoint_duplicate(a, b));
}

// ------------------------------------------------------ against OpenCV

struct ImageCase {
  const char *name;
  int max_side;  // downscaled (INTER_AREA) so that CI stays quick; 0 = as is
};

class SiftHostVsOpenCV : public ::testing::TestWithParam<ImageCase> {};

TEST_P(SiftHostVsOpenCV, MeetsTheAccuracyCriteria) {
  cv::Mat gray = sift_test::load_skimage(GetParam().name);
  if (gray.empty()) GTEST_SKIP() << "scikit-image data not found (install python3-skimage or set CS_SKIMAGE_DATA)";
  if (GetParam().max_side > 0 && std::max(gray.cols, gray.rows) > GetParam().max_side) {
    const double s = double(GetParam().max_side) / std::max(gray.cols, gray.rows);
    cv::resize(gray, gray, cv::Size(), s, s, cv::INTER_AREA);
  }
  const Params p;
  const sift_cpu::Features ref = opencv_features(gray, p);
  const sift_test::HostSiftResult host = run_host(gray, p);
  const Agreement g =
      sift_test::agreement(ref.keypoints, ref.descriptors, sift_test::to_cv(host.keypoints), descriptor_mat(host.descriptors));
  std::printf("[ accuracy ] %s\n", sift_test::describe(GetParam().name, g).c_str());
  ASSERT_GT(ref.keypoints.size(), 100u) << "the image should give OpenCV keypoints";
  EXPECT_GE(g.reference_matched, 0.95);
  EXPECT_LE(g.tested_unmatched, 0.05);
  EXPECT_LT(g.median_descriptor_distance, 0.05 * 512);
}

INSTANTIATE_TEST_SUITE_P(Skimage, SiftHostVsOpenCV,
                         ::testing::Values(ImageCase{"astronaut", 0}, ImageCase{"camera", 0}, ImageCase{"coffee", 0},
                                           ImageCase{"chelsea", 0}, ImageCase{"rocket", 0}, ImageCase{"brick", 0},
                                           ImageCase{"grass", 0}, ImageCase{"gravel", 0}),
                         [](const ::testing::TestParamInfo<ImageCase> &i) { return std::string(i.param.name); });

TEST(SiftHost, NFeaturesKeepsTheStrongestLikeOpenCV) {
  const cv::Mat gray = sift_test::load_skimage("camera");
  if (gray.empty()) GTEST_SKIP() << "scikit-image data not found";
  Params p;
  p.n_features = 300;
  const sift_cpu::Features ref = opencv_features(gray, p);
  const sift_test::HostSiftResult host = run_host(gray, p);
  ASSERT_GE(host.keypoints.size(), 300u);
  EXPECT_LE(host.keypoints.size(), 310u);  // ties with the 300th response stay, as in OpenCV
  for (size_t i = 1; i < host.keypoints.size(); ++i)
    EXPECT_FALSE(keypoint_less(host.keypoints[i], host.keypoints[i - 1])) << i;
  const Agreement g = sift_test::agreement(ref.keypoints, ref.descriptors, sift_test::to_cv(host.keypoints),
                                           descriptor_mat(host.descriptors));
  std::printf("[ accuracy ] %s\n", sift_test::describe("camera/300", g).c_str());
  EXPECT_GE(g.reference_matched, 0.9);  // a cut by response moves a few borderline keypoints in or out
}

TEST(SiftHost, ParametersMatterAsInOpenCV) {
  const cv::Mat gray = sift_test::load_skimage("coffee");
  if (gray.empty()) GTEST_SKIP() << "scikit-image data not found";
  cv::Mat small;
  cv::resize(gray, small, cv::Size(), 0.5, 0.5, cv::INTER_AREA);
  Params p;
  p.n_octave_layers = 4;
  p.contrast_threshold = 0.03;
  p.edge_threshold = 8;
  p.sigma = 1.8;
  const sift_cpu::Features ref = opencv_features(small, p);
  const sift_test::HostSiftResult host = run_host(small, p);
  const Agreement g = sift_test::agreement(ref.keypoints, ref.descriptors, sift_test::to_cv(host.keypoints),
                                           descriptor_mat(host.descriptors));
  std::printf("[ accuracy ] %s\n", sift_test::describe("coffee/p", g).c_str());
  EXPECT_GE(g.reference_matched, 0.95);
  EXPECT_LE(g.tested_unmatched, 0.05);
  EXPECT_LT(g.median_descriptor_distance, 0.05 * 512);
}

TEST(SiftHost, DescriptorFormats) {
  const uint32_t seed = cs_test::fresh_seed();
  const cv::Mat img = random_image(96, 80, seed);
  const Params p;
  const sift_test::HostSiftResult bytes = run_host(img, p, DescriptorFormat::opencv);
  const sift_test::HostSiftResult floats = run_host(img, p, DescriptorFormat::float32);
  const sift_test::HostSiftResult root = run_host(img, p, DescriptorFormat::rootsift);
  ASSERT_GT(bytes.keypoints.size(), 5u);
  ASSERT_EQ(bytes.descriptors, floats.descriptors);  // the float format holds the byte values
  ASSERT_EQ(root.descriptors.size(), bytes.descriptors.size());
  for (size_t k = 0; k < bytes.keypoints.size(); ++k) {
    double l1 = 0, l2 = 0;
    for (int e = 0; e < kDescriptorLength; ++e) {
      const float v = bytes.descriptors[k * kDescriptorLength + size_t(e)];
      EXPECT_EQ(v, std::round(v));
      EXPECT_GE(v, 0.f);
      EXPECT_LE(v, 255.f);
      l1 += v;
      l2 += double(root.descriptors[k * kDescriptorLength + size_t(e)]) * root.descriptors[k * kDescriptorLength + size_t(e)];
    }
    EXPECT_GT(l1, 0);
    EXPECT_NEAR(l2, 1.0, 1e-4) << k;  // RootSIFT has unit L2 norm
  }
}

TEST(SiftHost, FloatInputEqualsBytes) {
  const uint32_t seed = cs_test::fresh_seed();
  const cv::Mat img = random_image(64, 48, seed);
  cv::Mat f;
  img.convertTo(f, CV_32F);
  const sift_test::HostSiftResult a = run_host(img, Params()), b = run_host(f, Params());
  ASSERT_EQ(a.keypoints.size(), b.keypoints.size());
  EXPECT_EQ(a.descriptors, b.descriptors);
}

TEST(SiftHost, EdgeCases) {
  // Too small for an octave, flat, and odd sizes: no crash, OpenCV's count.
  for (cv::Size s : {cv::Size(1, 1), cv::Size(2, 3), cv::Size(7, 5), cv::Size(17, 64)}) {
    const cv::Mat img = random_image(s.width, s.height, 7u + uint32_t(s.width));
    const sift_test::HostSiftResult host = run_host(img, Params());
    const sift_cpu::Features ref = opencv_features(img, Params());
    EXPECT_EQ(host.keypoints.size(), ref.keypoints.size()) << s;
  }
  const cv::Mat flat(120, 90, CV_8U, cv::Scalar(77));
  EXPECT_TRUE(run_host(flat, Params()).keypoints.empty());
}

TEST(SiftHost, RejectsBadParameters) {
  const cv::Mat img(16, 16, CV_8U, cv::Scalar(1));
  Params p;
  p.n_octave_layers = 0;
  EXPECT_THROW(run_host(img, p), std::invalid_argument);
  p = Params();
  p.sigma = 20;
  EXPECT_THROW(run_host(img, p), std::invalid_argument);
  p = Params();
  p.edge_threshold = 0;
  EXPECT_THROW(run_host(img, p), std::invalid_argument);
}

}  // namespace
