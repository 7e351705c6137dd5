// The SIFT engine's math (kernels/sift/sift_math.h), run on the CPU by the
// test-only host executor, against OpenCV 4.6's cv::SIFT: the pieces
// (Gaussian taps, doubling, blur, octave count) and the whole on natural
// images with the accuracy criteria of the CUDA engine.
#include <gtest/gtest.h>

#include <opencv2/features2d.hpp>
#include <opencv2/imgproc.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <random>
#include <vector>

#include "sift/frame_plan.h"
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

// The engine builds only the octaves whose sides reach 2 kImageBorder + 1.
TEST(SiftMath, OctavesTooSmallForAnExtremumAreLeftOut) {
  EXPECT_EQ(detectable_octave_count(1920, 1080, true), 8);  // of 10: 15 x 8 and 7 x 4 cannot hold one
  EXPECT_EQ(detectable_octave_count(640, 480, true), 7);    // of 9: 10 x 7, 5 x 3
  EXPECT_EQ(detectable_octave_count(640, 480, false), 6);   // of 7: 10 x 7
  EXPECT_EQ(detectable_octave_count(6, 6, true), 1);        // of 3: 12 x 12 only
  EXPECT_EQ(detectable_octave_count(5, 5, true), 0);        // 10 x 10: no room for an extremum
  EXPECT_EQ(detectable_octave_count(4000, 41, true), 3);    // of 5: 1000 x 10, 500 x 5
}

// ... and OpenCV finds no keypoint in the octaves left out: natural images,
// and discs large enough to give keypoints in the coarsest octaves it may.
TEST(SiftMath, OpenCVFindsNothingInTheOctavesLeftOut) {
  std::vector<cv::Mat> images;
  for (const char *name : {"camera", "astronaut", "coffee"}) {
    const cv::Mat gray = sift_test::load_skimage(name);
    if (!gray.empty()) images.push_back(gray);
  }
  for (const cv::Size size : {cv::Size(640, 480), cv::Size(333, 97), cv::Size(97, 333)}) {
    cv::Mat disc(size, CV_8U, cv::Scalar(40));
    cv::circle(disc, {size.width / 2, size.height / 2}, std::min(size.width, size.height) / 3, cv::Scalar(220), -1,
               cv::LINE_AA);
    images.push_back(disc);
  }
  const cv::Ptr<cv::SIFT> sift = cv::SIFT::create();
  for (const cv::Mat &img : images) {
    std::vector<cv::KeyPoint> keypoints;
    sift->detect(img, keypoints);
    const int built = detectable_octave_count(img.cols, img.rows, true);
    int coarsest = -1;
    for (const cv::KeyPoint &kp : keypoints) {
      const int octave = static_cast<int8_t>(kp.octave & 255) + 1;  // 0 = the doubled image
      coarsest = std::max(coarsest, octave);
    }
    EXPECT_LT(coarsest, built) << img.cols << "x" << img.rows << ": " << keypoints.size() << " keypoints";
    std::printf("[ octaves  ] %dx%d: %zu keypoints, coarsest octave %d of %d built (%d in OpenCV's pyramid)\n",
                img.cols, img.rows, keypoints.size(), coarsest, built, octave_count(img.cols, img.rows, true));
  }
}

// run()'s frame plan: each plan in turn until every one has kTimedFrames
// frames timed (the first of each not counted), then the lowest median.
TEST(FramePlanTuner, TimesEachPlanInTurnThenKeepsTheFastest) {
  constexpr int kPlans = FramePlanTuner::kPlans;
  static_assert(kPlans >= 4, "the test compares plans of two cluster starts");
  constexpr int kFastest = FramePlanTuner::index({1, 1});
  FramePlanTuner tuner;
  tuner.reset(2);
  EXPECT_EQ(tuner.chosen(), -1);
  EXPECT_EQ(tuner.order(), -1);
  for (int frame = 0; frame < FramePlanTuner::kTimedFrames; ++frame) {
    for (int plan = 0; plan < kPlans; ++plan) {
      ASSERT_EQ(tuner.next(), plan);
      float ms = 1.0f + 0.1f * static_cast<float>(plan);
      if (plan == kFastest) ms = frame == 3 ? 50.f : 0.9f;  // one slow frame: the median ignores it
      if (plan == 0 && frame == 0) ms = 0.01f;  // the untimed first frame of plan 0 would have won
      tuner.add(plan, ms);
      EXPECT_EQ(tuner.chosen(), -1) << frame;
    }
  }
  for (int plan = 0; plan < kPlans; ++plan) {
    EXPECT_EQ(tuner.chosen(), -1) << plan;  // the last plans have one frame too few counted
    tuner.add(plan, plan == kFastest ? 0.9f : 1.0f + 0.1f * static_cast<float>(plan));
  }
  EXPECT_EQ(tuner.chosen(), kFastest);
  EXPECT_EQ(tuner.order(), 1);
  EXPECT_EQ(FramePlanTuner::plan(tuner.chosen()).cluster_start, 1);
  for (int frame = 0; frame < 5; ++frame) EXPECT_EQ(tuner.next(), kFastest);
  tuner.add(0, 0.001f);  // later times change nothing
  EXPECT_EQ(tuner.chosen(), kFastest);

  tuner.reset(1);  // a new frame size, whose cluster has one start: the orders only
  EXPECT_EQ(tuner.chosen(), -1);
  for (int plan = 0; plan < FramePlanTuner::kOrders; ++plan) EXPECT_EQ(tuner.next(), plan);
  EXPECT_EQ(tuner.next(), 0);
  tuner.add(FramePlanTuner::index({0, 1}), 0.001f);  // not a plan of this size: ignored
  for (int frame = 0; frame <= FramePlanTuner::kTimedFrames; ++frame)
    for (int plan = 0; plan < FramePlanTuner::kOrders; ++plan) tuner.add(plan, 2.0f);
  EXPECT_EQ(tuner.chosen(), 0);  // a tie keeps the earlier plan

  FramePlanTuner fixed(1);  // the order fixed: the cluster's starts still timed
  fixed.reset(2);
  EXPECT_EQ(fixed.order(), 1);
  EXPECT_EQ(fixed.chosen(), -1);
  EXPECT_EQ(fixed.next(), FramePlanTuner::index({1, 0}));
  EXPECT_EQ(fixed.next(), FramePlanTuner::index({1, 1}));
  EXPECT_EQ(fixed.next(), FramePlanTuner::index({1, 0}));
  fixed.reset(1);  // one start: nothing left to time
  EXPECT_EQ(fixed.chosen(), FramePlanTuner::index({1, 0}));

  FramePlanTuner both(2, 1);  // both fixed
  both.reset(2);
  EXPECT_EQ(both.chosen(), FramePlanTuner::index({2, 1}));
  both.reset(1);  // the later start does not exist at this size: the first
  EXPECT_EQ(both.chosen(), FramePlanTuner::index({2, 0}));
  both.add(0, 0.001f);
  EXPECT_EQ(both.next(), FramePlanTuner::index({2, 0}));
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

// Level 0 of the doubled octave straight from the input (doubling_blur_axis,
// what the kernel and the executor sum): each output's coefficients are the
// blur of the bilinear doubling, composed in double (borders reflected over
// the doubled side, the doubling's replicated), within the sums' rounding,
// R + 2 of them (R + 3 for an even R; the whole side where it is shorter),
// in a pattern that repeats with the parity away from the borders; and the
// image it gives is
// OpenCV's resize then GaussianBlur, to the same tolerance as the two steps.
TEST(SiftMath, DoublingBlurAxisIsTheBlurredDoubling) {
  for (const double sigma : {initial_sigma(1.6, true), 0.8, 2.5})
    for (const int n : {1, 3, 6, 7, 8, 13, 64, 641}) {
      SCOPED_TRACE("sigma " + std::to_string(sigma) + ", side " + std::to_string(n));
      const BlurTaps t = gaussian_taps(sigma);
      const DoublingBlurAxis a = doubling_blur_axis(n, t);
      ASSERT_EQ(a.taps, std::min((t.radius | 1) + 2, n));
      ASSERT_EQ(a.first.size(), size_t(2 * n));
      for (int i = 0; i < 2 * n; ++i) {
        const int first = a.first[size_t(i)];
        ASSERT_GE(first, 0);
        ASSERT_LE(first + a.taps, n);
        if (i > 0) {
          ASSERT_GE(first, a.first[size_t(i - 1)]);
        }
        std::vector<double> expected(size_t(n), 0.0);  // over all source samples
        for (int k = -t.radius; k <= t.radius; ++k) {
          const UpsampleTap u = upsample_tap(reflect101(i + k, 2 * n), n);
          expected[size_t(u.a)] += double(t.weight[std::abs(k)]) * (1.0 - u.w);
          expected[size_t(u.b)] += double(t.weight[std::abs(k)]) * u.w;
        }
        double sum = 0.0;
        for (int j = 0; j < n; ++j) {
          const bool inside = j >= first && j < first + a.taps;
          const double got = inside ? a.coefficients[size_t(i) * size_t(a.taps) + size_t(j - first)] : 0.0;
          ASSERT_NEAR(got, expected[size_t(j)], 1e-7) << "output " << i << ", source " << j;
          sum += got;
        }
        EXPECT_NEAR(sum, 1.0, 1e-6) << "output " << i;
      }
      // The interior's pattern (the kernel's fast rows rely on it), over all but a few outputs at each end.
      EXPECT_EQ(a.interior_begin % 2, 0);
      for (int i = a.interior_begin; i < a.interior_end; ++i) {
        ASSERT_EQ(a.first[size_t(i)], i / 2 - a.interior_shift) << "output " << i;
        for (int k = 0; k < a.taps; ++k)
          ASSERT_EQ(a.coefficients[size_t(i) * size_t(a.taps) + size_t(k)],
                    a.coefficients[size_t(a.interior_begin + i % 2) * size_t(a.taps) + size_t(k)])
              << "output " << i;
      }
      if (n >= 64) {
        EXPECT_LE(a.interior_begin, t.radius + 3);
        EXPECT_GE(a.interior_end, 2 * n - t.radius - 3);
      }
    }

  const cv::Mat img = random_image(37, 23, cs_test::fresh_seed());
  cv::Mat f, doubled, blurred;
  img.convertTo(f, CV_32F);
  cv::resize(f, doubled, cv::Size(74, 46), 0, 0, cv::INTER_LINEAR);
  const double sigma = initial_sigma(1.6, true);
  cv::GaussianBlur(doubled, blurred, cv::Size(), sigma, sigma);
  const BlurTaps t = gaussian_taps(sigma);
  const DoublingBlurAxis ax = doubling_blur_axis(37, t), ay = doubling_blur_axis(23, t);
  std::vector<float> across(size_t(23) * 74), column(23);
  for (int y = 0; y < 23; ++y)
    for (int x = 0; x < 74; ++x)
      across[size_t(y) * 74 + size_t(x)] = doubling_blur_sum(&ax.coefficients[size_t(x) * size_t(ax.taps)],
                                                            &f.at<float>(y, ax.first[size_t(x)]), 1, ax.taps);
  for (int x = 0; x < 74; ++x) {
    for (int y = 0; y < 23; ++y) column[size_t(y)] = across[size_t(y) * 74 + size_t(x)];
    for (int y = 0; y < 46; ++y)
      ASSERT_NEAR(doubling_blur_sum(&ay.coefficients[size_t(y) * size_t(ay.taps)], &column[size_t(ay.first[size_t(y)])],
                                    1, ay.taps),
                  blurred.at<float>(y, x), 2e-3f)
          << x << "," << y;
  }
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
        if (!descriptor_contribution(g.ptr(w.py + i, w.px + j), g.pitch, w, i, j, 1.f, &c)) continue;
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

// Near the level's edges the runs stop at its border ring (OpenCV skips
// the samples on the edge): exactly the accepted samples that lie inside.
TEST(SiftMath, DescriptorRowSpansStopAtTheBorderRing) {
  const int width = 101, height = 77;
  const std::vector<float> plane(size_t(width) * height, 0.f);
  const PlaneView g{plane.data(), width, width, height};
  std::mt19937 rng(cs_test::fresh_seed());
  std::uniform_real_distribution<float> size_dist(1.5f, 12.f), angle_dist(0.f, 360.f);
  std::uniform_int_distribution<int> x_dist(0, width - 1), y_dist(0, height - 1), edge_dist(0, 3), near_dist(0, 6);
  size_t clipped = 0;
  for (int n = 0; n < 400; ++n) {
    Keypoint kp{};
    const int edge = edge_dist(rng);  // a keypoint near one of the four edges
    kp.x = float(edge == 0 ? near_dist(rng) : edge == 1 ? width - 1 - near_dist(rng) : x_dist(rng));
    kp.y = float(edge == 2 ? near_dist(rng) : edge == 3 ? height - 1 - near_dist(rng) : y_dist(rng));
    kp.size = size_dist(rng);
    kp.angle = angle_dist(rng);
    kp.octave = 0;
    const DescriptorWindow w = descriptor_window(kp, 0, width, height);
    for (int i = -w.radius; i <= w.radius; ++i) {
      int first = 0, last = -1;
      descriptor_row_span(w, i, &first, &last);
      const int r = w.py + i;
      for (int j = first; j <= last; ++j) {
        const int c = w.px + j;
        ASSERT_TRUE(r >= 1 && r <= height - 2 && c >= 1 && c <= width - 2) << "row " << r << " column " << c;
      }
      for (int j = -w.radius; j <= w.radius; ++j) {
        const int c = w.px + j;
        const bool inside = r >= 1 && r <= height - 2 && c >= 1 && c <= width - 2;
        if (!inside) {
          ++clipped;
          continue;
        }
        DescriptorContribution contribution;
        if (!descriptor_contribution(g.ptr(w.py + i, w.px + j), g.pitch, w, i, j, 1.f, &contribution)) continue;
        ASSERT_TRUE(j >= first && j <= last) << "size " << kp.size << " angle " << kp.angle << " i " << i << " j " << j;
      }
    }
  }
  EXPECT_GT(clipped, 1000u);  // the windows did reach past the edges
}

// The lemma behind descriptor_fixed_scale: over the integer samples, the
// trilinear row-and-column weights of one histogram cell sum to at most
// (c + 1)^2 and at most (2c + 1)^2 samples reach it (c = cell side), for
// any rotation, every cell of the padded grid.
TEST(SiftMath, DescriptorCellWeightsSumToAtMostCellPlusOneSquared) {
  std::mt19937 rng(cs_test::fresh_seed());
  std::uniform_real_distribution<float> size_dist(0.5f, 50.f), angle_dist(0.f, 360.f);
  double worst = 0.0;
  for (int n = 0; n < 300; ++n) {
    Keypoint kp{};
    kp.size = n < 4 ? 7.18f : size_dist(rng);
    kp.angle = n < 4 ? 90.f * float(n) : angle_dist(rng);
    const DescriptorWindow w = descriptor_window(kp, 0, 100000, 100000);
    const double c = w.cell;
    double weight[kDescriptorWidth + 2][kDescriptorWidth + 2] = {};
    int count[kDescriptorWidth + 2][kDescriptorWidth + 2] = {};
    for (int i = -w.radius; i <= w.radius; ++i)
      for (int j = -w.radius; j <= w.radius; ++j) {
        const float c_rot = float(j) * w.cos_t - float(i) * w.sin_t;
        const float r_rot = float(j) * w.sin_t + float(i) * w.cos_t;
        const float rbin = r_rot + float(kDescriptorWidth / 2) - 0.5f;
        const float cbin = c_rot + float(kDescriptorWidth / 2) - 0.5f;
        if (!(rbin > -1.f && rbin < float(kDescriptorWidth) && cbin > -1.f && cbin < float(kDescriptorWidth))) continue;
        for (int R = -1; R <= kDescriptorWidth; ++R)
          for (int C = -1; C <= kDescriptorWidth; ++C) {
            const double tr = 1.0 - std::fabs(double(rbin) - R), tc = 1.0 - std::fabs(double(cbin) - C);
            if (tr <= 0.0 || tc <= 0.0) continue;
            weight[R + 1][C + 1] += tr * tc;
            ++count[R + 1][C + 1];
          }
      }
    for (int R = 0; R < kDescriptorWidth + 2; ++R)
      for (int C = 0; C < kDescriptorWidth + 2; ++C) {
        ASSERT_LE(weight[R][C], (c + 1) * (c + 1)) << "cell " << c << " angle " << kp.angle;
        ASSERT_LE(double(count[R][C]), (2 * c + 1) * (2 * c + 1)) << "cell " << c << " angle " << kp.angle;
        worst = std::max(worst, weight[R][C] / ((c + 1) * (c + 1)));
      }
  }
  std::printf("[ fixed    ] largest cell weight sum: %.3f of (c + 1)^2\n", worst);
}

// The fixed-point histogram at its worst: every gradient at the cap
// (a steep float ramp), all of it in one orientation bin, the widest
// cells: no entry, raw element or block total comes near 2^32. Also the
// scales the documentation quotes.
TEST(SiftMath, FixedPointDescriptorHistogramCannotOverflow) {
  // OpenCV's defaults (cells of 5.4..10.8 level pixels): kDescriptorMaxFixedScale.
  EXPECT_EQ(descriptor_fixed_scale(1.5f * 3.59f), kDescriptorMaxFixedScale);
  EXPECT_EQ(descriptor_fixed_scale(1.5f * 7.18f), kDescriptorMaxFixedScale);
  EXPECT_EQ(descriptor_fixed_scale(30.f), 4096.f);
  EXPECT_EQ(descriptor_fixed_scale(70.f), 1024.f);  // about the widest cell valid parameters give
  EXPECT_LT(kDescriptorMaxGradient * kDescriptorMaxFixedScale, 8388608.f);  // one contribution < 2^23
  // descriptor_fixed rounds to nearest, ties to even, like rintf.
  for (float v : {0.f, 0.49f, 0.5f, 1.5f, 2.5f, 1234.5f, 1234.51f, 8388607.f, 5e6f + 0.25f})
    EXPECT_EQ(descriptor_fixed(v), uint32_t(std::rint(v))) << v;
  for (float v : {-3.5f, -1.f, -0.5f, 0.f, 0.25f, 3.99f, 4.f, 7.5f, -7.999f}) {
    float f = 0.f;
    EXPECT_EQ(floor_small(v, &f), int(std::floor(v))) << v;
    EXPECT_EQ(f, std::floor(v)) << v;
  }
  std::mt19937 rng(cs_test::fresh_seed());
  std::uniform_real_distribution<float> angle_dist(0.f, 360.f);
  double worst = 0.0;
  const float sizes[] = {2.f, 3.59f, 7.18f, 7.18f, 7.18f, 20.f, 46.f};
  for (int n = 0; n < int(sizeof(sizes) / sizeof(sizes[0])); ++n) {
    Keypoint kp{};
    kp.size = sizes[n];
    kp.angle = n == 2 ? 0.f : angle_dist(rng);
    const float theta = kp.angle * float(M_PI / 180.0);
    const int side = 2 * int(std::ceil(1.5f * kp.size * 2.5f * 1.4143f)) + 9;
    kp.x = kp.y = float(side / 2);
    kp.octave = 0;
    // v = K (x cos + y sin): dx = 2K cos, dy (y up) = -2K sin, far beyond
    // the cap, direction 360 - angle = the window's own: orientation bin 0.
    std::vector<float> plane(size_t(side) * side);
    const float k = 1e4f;
    for (int y = 0; y < side; ++y)
      for (int x = 0; x < side; ++x)
        plane[size_t(y) * side + x] = k * (float(x) * std::cos(theta) + float(y) * std::sin(theta));
    const PlaneView g{plane.data(), side, side, side};
    const DescriptorWindow w = descriptor_window(kp, 0, side, side);
    std::vector<uint64_t> hist(kDescriptorHistogramLength, 0);
    for (int i = -w.radius; i <= w.radius; ++i) {
      int first = 0, last = -1;
      descriptor_row_span(w, i, &first, &last);
      for (int j = first; j <= last; ++j) {
        DescriptorContribution c;
        if (!descriptor_contribution(g.ptr(w.py + i, w.px + j), g.pitch, w, i, j, w.fixed_scale, &c)) continue;
        for (int q = 0; q < 8; ++q) hist[size_t(c.index + descriptor_offset(q))] += descriptor_fixed(c.values[q]);
      }
    }
    const double c1 = double(w.cell) + 1.0;
    const double bound = c1 * c1 * (double(w.fixed_scale) * kDescriptorMaxGradient + 2.0);
    ASSERT_LE(bound, 4.29e9);
    uint64_t largest = 0;
    for (int e = 0; e < kDescriptorLength; ++e) {
      const int b = descriptor_raw_index(e);
      const uint64_t v = hist[size_t(b)] + (e % kDescriptorBins < 2 ? hist[size_t(b + kDescriptorBins)] : 0);
      largest = std::max(largest, v);
    }
    for (uint64_t v : hist) largest = std::max(largest, v);
    ASSERT_LE(double(largest), bound) << "size " << kp.size;
    ASSERT_GT(largest, 0u);
    worst = std::max(worst, double(largest) / 4294967295.0);
  }
  std::printf("[ fixed    ] largest entry at capped gradients: %.3f of 2^32\n", worst);
}

// The descriptor's gradient directions are OpenCV's fastAtan2, as in
// OpenCV's calcSIFTDescriptor: the same polynomial (equal up to the
// rounding of a fused multiply-add), ~0.01 degree from atan2.
TEST(SiftMath, FastAtan2IsOpenCVs) {
  std::mt19937 rng(cs_test::fresh_seed());
  std::uniform_real_distribution<float> v(-300.f, 300.f);
  double worst_opencv = 0.0, worst_exact = 0.0;
  for (int n = 0; n < 200000; ++n) {
    float y = v(rng), x = v(rng);
    if (n < 9) {  // axes, diagonals and zero
      x = float(n % 3 - 1);
      y = float(n / 3 - 1);
    }
    const float a = fast_atan2_degrees(y, x);
    ASSERT_GE(a, 0.f);
    ASSERT_LE(a, 360.f);
    worst_opencv = std::max(worst_opencv, std::fabs(double(a) - double(cv::fastAtan2(y, x))));
    double exact = std::atan2(double(y), double(x)) * 180.0 / M_PI;
    if (exact < 0) exact += 360.0;
    double d = std::fabs(double(a) - exact);
    worst_exact = std::max(worst_exact, std::min(d, 360.0 - d));
  }
  std::printf("[ atan2    ] largest difference to cv::fastAtan2 %.2g, to atan2 %.2g degrees\n", worst_opencv,
              worst_exact);
  EXPECT_LT(worst_opencv, 1e-4);
  EXPECT_LT(worst_exact, 0.02);
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
  b.response = 0.4f;
  EXPECT_FALSE(keypoint_duplicate(a, b));
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

// Fixed-point sums (the engine's default) against float sums of the same
// contributions: the same keypoints; bytes equal except at rounding
// boundaries (off by one, rarely).
TEST(SiftHost, FixedPointSumsMatchFloatSums) {
  cv::Mat gray = sift_test::load_skimage("astronaut");
  if (gray.empty()) gray = random_image(512, 384, cs_test::fresh_seed());
  cv::resize(gray, gray, cv::Size(), 0.5, 0.5, cv::INTER_AREA);
  const Params p;
  const sift_test::HostSiftResult fixed =
      sift_test::host_sift(gray.data, gray.step, gray.cols, gray.rows, PixelType::u8, p, DescriptorFormat::opencv,
                           sift_test::DescriptorSums::fixed);
  const sift_test::HostSiftResult floating =
      sift_test::host_sift(gray.data, gray.step, gray.cols, gray.rows, PixelType::u8, p, DescriptorFormat::opencv,
                           sift_test::DescriptorSums::floating);
  ASSERT_GT(fixed.keypoints.size(), 100u);
  ASSERT_EQ(fixed.keypoints.size(), floating.keypoints.size());
  ASSERT_EQ(fixed.descriptors.size(), floating.descriptors.size());
  size_t differing = 0;
  for (size_t i = 0; i < fixed.descriptors.size(); ++i) {
    ASSERT_LE(std::fabs(fixed.descriptors[i] - floating.descriptors[i]), 1.f) << i;
    differing += fixed.descriptors[i] != floating.descriptors[i];
  }
  std::printf("[ fixed    ] %zu of %zu descriptor bytes differ (by one) from float sums\n", differing,
              fixed.descriptors.size());
  EXPECT_LE(double(differing), 1e-3 * double(fixed.descriptors.size()));
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
