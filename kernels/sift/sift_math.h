// Per-pixel and per-keypoint math of SIFT, shared by the CUDA kernels
// (sift_cuda.cu) and the test-only host executor (tests/kernels/sift): the
// kernels call these functions from thin __global__ wrappers, the executor
// from plain loops, so CI (no GPU) tests the arithmetic the GPU runs.
//
// The algorithm is that of OpenCV 4.6's cv::SIFT, step for step:
//  - input 8-bit luma as float 0..255 (OpenCV 4.x keeps its float pyramid at
//    the pixel scale: no fixed-point factor);
//  - first octave at twice the resolution (bilinear, pixel centres aligned),
//    blurred from the assumed sigma 0.5 (1.0 after doubling) to `sigma`;
//  - per octave n_layers + 3 Gaussian levels, each blurred from the previous
//    one with the incremental sigma, kernels of size round(8 sigma + 1) | 1,
//    reflect-101 borders; next octave's level 0 = level n_layers taken at
//    every second pixel; DoG level i = G(i + 1) - G(i);
//  - extrema of DoG levels 1..n_layers over 26 neighbours (non-strict; a NaN
//    among them rejects, as it fails OpenCV's comparisons), after
//    the pre-filter |D| > floor(0.5 * contrast / n_layers * 255), at least
//    kImageBorder pixels from the edge;
//  - up to kMaxInterpSteps Newton steps on the 3x3 Hessian; contrast test
//    |D(x^)| * n_layers >= contrast; edge test tr^2 * e < (e + 1)^2 det;
//  - orientation: 36-bin histogram of gradients within radius
//    round(4.5 sigma_oct), Gaussian weight 1.5 sigma_oct, smoothed with
//    [1 4 6 4 1] / 16, one keypoint per local peak >= 0.8 * max, parabolic
//    peak interpolation, angle = 360 - bin * 10 degrees;
//  - descriptor: 4 x 4 cells of 3 sigma_oct, 8 orientation bins, trilinear
//    binning of every gradient in the rotated window (directions by
//    OpenCV's fastAtan2 polynomial, as its descriptor), Gaussian weight of
//    half the window, clipped at 0.2 of the norm, scaled to 512 / norm and
//    rounded to bytes. The histograms are summed in fixed point (integer
//    sums: deterministic; see descriptor_fixed_scale) or, on request, in
//    float.
// Keypoints carry cv::KeyPoint's values, including its packed `octave`
// (octave | layer << 8 | round((xi + 0.5) * 255) << 16, octave -1 for the
// doubled image) and its coordinates in the input image.
#pragma once

#include <float.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <vector>

#include "common/hd.h"

namespace cs::sift {

constexpr int kImageBorder = 5;
constexpr int kMaxInterpSteps = 5;
constexpr float kInitialSigma = 0.5f;
constexpr int kOrientationBins = 36;
constexpr float kOrientationSigmaFactor = 1.5f;
constexpr float kOrientationRadiusFactor = 4.5f;  // 3 * kOrientationSigmaFactor
constexpr float kOrientationPeakRatio = 0.8f;
constexpr int kDescriptorWidth = 4;   // cells per side
constexpr int kDescriptorBins = 8;    // orientation bins per cell
constexpr int kDescriptorLength = kDescriptorWidth * kDescriptorWidth * kDescriptorBins;  // 128
constexpr float kDescriptorScaleFactor = 3.f;  // cell side in units of the keypoint's sigma
constexpr float kDescriptorMagnitudeThreshold = 0.2f;
constexpr float kDescriptorByteFactor = 512.f;
// The binning histogram has a guard ring of cells and two wrap-around
// orientation bins, so that trilinear spreading needs no bounds checks.
constexpr int kDescriptorHistogramLength =
    (kDescriptorWidth + 2) * (kDescriptorWidth + 2) * (kDescriptorBins + 2);  // 360
// Gaussian kernels wider than this are refused (sigma up to about 8 / 1.93
// with 3 layers; OpenCV's defaults need 13).
constexpr int kMaxBlurRadius = 32;

// ------------------------------------------------------------- small helpers

// OpenCV's cvRound: nearest, ties to even (the default rounding mode).
CS_HD int round_even(float v) { return static_cast<int>(rintf(v)); }
CS_HD int round_even(double v) { return static_cast<int>(rint(v)); }

// Border index of OpenCV's BORDER_REFLECT_101 (gfedcb|abcdefgh|gfedcba).
CS_HD int reflect101(int i, int n) {
  if (n == 1) return 0;
  while (i < 0 || i >= n) i = i < 0 ? -i : 2 * n - 2 - i;
  return i;
}

CS_HD int clamp_index(int i, int n) { return i < 0 ? 0 : (i >= n ? n - 1 : i); }

// A float plane; pitch in elements.
struct PlaneView {
  const float *data;
  int pitch, width, height;
  CS_HD float at(int y, int x) const { return data[static_cast<ptrdiff_t>(y) * pitch + x]; }
  CS_HD const float *ptr(int y, int x) const { return data + static_cast<ptrdiff_t>(y) * pitch + x; }
};

// Input luma as float at OpenCV's scale (8-bit values unchanged).
CS_HD float luma_sample(const uint8_t *p) {
#if defined(__CUDA_ARCH__)
  // The same value without I2F, a quarter-rate instruction that bounded
  // the doubling kernel (4 per output): 2^23 + v has v in its low mantissa.
  return __uint_as_float(0x4B000000u | *p) - 8388608.f;
#else
  return static_cast<float>(*p);
#endif
}
CS_HD float luma_sample(const float *p) { return *p; }

// ------------------------------------------------------------------- pyramid

// Octaves of the pyramid: as OpenCV, round(log2(min side of the base) - 2)
// minus the first octave (-1 when doubling). 0 for images too small.
inline int octave_count(int width, int height, bool upsample) {
  const int base = upsample ? 2 * (width < height ? width : height) : (width < height ? width : height);
  if (base < 1) return 0;
  const int n = round_even(log(static_cast<double>(base)) / log(2.0) - 2.0) + (upsample ? 1 : 0);
  return n > 0 ? n : 0;
}

// The octaves of octave_count that can hold an extremum: both sides at
// least 2 kImageBorder + 1, since extrema are sought kImageBorder samples
// inside the octave (as OpenCV). Octaves only shrink, so the ones after
// the first too small feed nothing but each other: at 1920 x 1080 doubled,
// 8 of the 10 (15 x 8 and 7 x 4 are left out).
inline int detectable_octave_count(int width, int height, bool upsample) {
  const int n = octave_count(width, height, upsample);
  int w = upsample ? 2 * width : width, h = upsample ? 2 * height : height;
  for (int o = 0; o < n; ++o, w /= 2, h /= 2)
    if (w < 2 * kImageBorder + 1 || h < 2 * kImageBorder + 1) return o;
  return n;
}

// Incremental blur of Gaussian level i (1..n_layers + 2) of an octave: from
// total sigma * k^(i-1) to sigma * k^i, k = 2^(1/n_layers).
inline double level_sigma(int i, int n_layers, double sigma) {
  const double k = pow(2.0, 1.0 / n_layers);
  const double previous = pow(k, static_cast<double>(i - 1)) * sigma, total = previous * k;
  return sqrt(total * total - previous * previous);
}

// Blur that brings the input (assumed sigma 0.5, i.e. 1.0 once doubled) to `sigma`.
inline double initial_sigma(double sigma, bool upsample) {
  const double assumed = upsample ? 2.0 * kInitialSigma : kInitialSigma;
  const double d = sigma * sigma - assumed * assumed;
  return sqrt(d > 0.01 ? d : 0.01);
}

// Symmetric Gaussian taps: weight[k] for offsets +-k, k = 0..radius, as
// OpenCV's GaussianBlur of a float image with size 0: ksize =
// round(8 sigma + 1) | 1, normalised in double, stored as float.
struct BlurTaps {
  int radius;
  float weight[kMaxBlurRadius + 1];
};

inline int blur_radius(double sigma) { return (round_even(sigma * 8.0 + 1.0) | 1) / 2; }

inline BlurTaps gaussian_taps(double sigma) {
  BlurTaps t{};
  t.radius = blur_radius(sigma);
  if (t.radius > kMaxBlurRadius) t.radius = kMaxBlurRadius;  // callers refuse such sigmas first
  double w[kMaxBlurRadius + 1], sum = 0.0;
  for (int k = 0; k <= t.radius; ++k) {
    w[k] = exp(-0.5 * k * k / (sigma * sigma));
    sum += k == 0 ? w[k] : 2.0 * w[k];
  }
  for (int k = 0; k <= t.radius; ++k) t.weight[k] = static_cast<float>(w[k] / sum);
  return t;
}

// One pair of taps of a symmetric blur: sum + weight (a + b). On the GPU one
// fused multiply-add, written out: left to the compiler's contraction, the
// first pair could be fused with either product (w0 p0 or w1 (a + b)), and
// an unrolled sum and a looped one then differed in the last place.
CS_HD float add_tap_pair(float sum, float weight, float a, float b) {
#if defined(__CUDA_ARCH__)
  return fmaf(weight, a + b, sum);
#else
  return sum + weight * (a + b);
#endif
}

// One output of a 1-D symmetric blur: `p` points at the centre sample, its
// neighbours lie `step` elements apart (borders already resolved).
// 2 * radius + 1 loads, radius + 1 multiplies, 2 * radius adds.
CS_HD float blur_1d(const float *p, int step, const BlurTaps &t) {
  float s = t.weight[0] * p[0];
  for (int k = 1; k <= t.radius; ++k) s = add_tap_pair(s, t.weight[k], p[k * step], p[-k * step]);
  return s;
}

// The same sum with the radius known at compile time (R == t.radius), so
// that the loop unrolls: the GPU's common case. Same operations, same order.
template <int R>
CS_HD float blur_1d_fixed(const float *p, int step, const BlurTaps &t) {
  float s = t.weight[0] * p[0];
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
  for (int k = 1; k <= R; ++k) s = add_tap_pair(s, t.weight[k], p[k * step], p[-k * step]);
  return s;
}

// The input doubled with bilinear interpolation (OpenCV's INTER_LINEAR,
// pixel centres aligned: source x = x / 2 - 0.25; borders replicate),
// separably: along each axis, output index i reads source samples a and b
// with weight w on b. `T` is uint8_t or float.
struct UpsampleTap {
  int a, b;
  float w;
};
CS_HD UpsampleTap upsample_tap(int i, int n) {
  // i / 2 - 0.25 = i0 + w exactly: i0 = floor((i - 1) / 2), w = 0.75 for
  // even i and 0.25 for odd (no float rounding, no conversions).
  const int i0 = (i - 1) >> 1;
  return {clamp_index(i0, n), clamp_index(i0 + 1, n), (i & 1) ? 0.25f : 0.75f};
}

template <typename T>
CS_HD const T *image_row(const T *src, size_t pitch_bytes, int y) {
  return reinterpret_cast<const T *>(reinterpret_cast<const char *>(src) + static_cast<size_t>(y) * pitch_bytes);
}

// a at weight 1 - w, b at w: the one expression every doubling path uses
// (the same rounding everywhere).
CS_HD float upsample_mix(float a, float b, float w) { return a * (1.f - w) + b * w; }

// From source rows ra (tap a) and rb (tap b) of the vertical tap with weight ay.
template <typename T>
CS_HD float upsampled_sample(const T *ra, const T *rb, float ay, const UpsampleTap &x) {
  const float top = upsample_mix(luma_sample(ra + x.a), luma_sample(ra + x.b), x.w);
  const float bottom = upsample_mix(luma_sample(rb + x.a), luma_sample(rb + x.b), x.w);
  return upsample_mix(top, bottom, ay);
}

// Pixel (x, y) of the doubled input.
template <typename T>
CS_HD float upsampled_sample(const T *src, size_t pitch_bytes, int width, int height, int x, int y) {
  const UpsampleTap ty = upsample_tap(y, height);
  return upsampled_sample(image_row(src, pitch_bytes, ty.a), image_row(src, pitch_bytes, ty.b), ty.w,
                          upsample_tap(x, width));
}

template <typename T>
CS_HD float plain_sample(const T *src, size_t pitch_bytes, int x, int y) {
  return luma_sample(image_row(src, pitch_bytes, y) + x);
}

// Level 0 of the doubled octave straight from the input. It is the blur
// (level 0's taps, reflect-101 over the doubled side) of the bilinear
// doubling (upsample_tap); both are linear and separable, so along each
// axis output i (of 2 n) is a weighted sum of `taps` consecutive source
// samples from first[i]: taps = R + 2 for level 0's radius R, R + 3 for an
// even R (7 with OpenCV's defaults, against 2R + 1 = 11 taps over the
// doubled samples), or n where the side is shorter.
// The coefficients are the products of the blur's float weights and the
// bilinear weights (0.25, 0.75: exact), summed in double and rounded once:
// the same image as blurring the doubled one, to the rounding of its sums.
struct DoublingBlurAxis {
  int taps = 0;
  std::vector<int> first;           // per output, nondecreasing
  std::vector<float> coefficients;  // per output, `taps` of them
  // Away from the borders the sums repeat with the outputs' parity: outputs
  // i in [interior_begin, interior_end) (begin even; an empty range where
  // the side is short) start at source sample i / 2 - interior_shift, with
  // the coefficients of output interior_begin + i % 2.
  int interior_begin = 0, interior_end = 0, interior_shift = 0;
};

inline DoublingBlurAxis doubling_blur_axis(int n, const BlurTaps &t) {
  DoublingBlurAxis axis;
  const int outputs = 2 * n;
  // The samples outputs 2m and 2m + 1 read, together: a pair shares its
  // first sample, so that the interior's sums start at i / 2 - shift for
  // either parity (an even radius gives the odd outputs' sums a leading
  // zero coefficient).
  std::vector<int> lowest(static_cast<size_t>(outputs), n), highest(static_cast<size_t>(outputs), -1);
  int span = 0;
  for (int i = 0; i < outputs; ++i)
    for (int k = -t.radius; k <= t.radius; ++k) {
      const UpsampleTap u = upsample_tap(reflect101(i + k, outputs), n);
      const size_t pair = static_cast<size_t>(i & ~1);
      lowest[pair] = u.a < lowest[pair] ? u.a : lowest[pair];
      highest[pair] = u.b > highest[pair] ? u.b : highest[pair];
    }
  for (int i = 0; i < outputs; i += 2) {
    lowest[static_cast<size_t>(i + 1)] = lowest[static_cast<size_t>(i)];
    const int width = highest[static_cast<size_t>(i)] - lowest[static_cast<size_t>(i)] + 1;
    span = width > span ? width : span;
  }
  axis.taps = span;
  axis.first.resize(static_cast<size_t>(outputs));
  axis.coefficients.assign(static_cast<size_t>(outputs) * static_cast<size_t>(span), 0.f);
  std::vector<double> sum(static_cast<size_t>(span));
  for (int i = 0; i < outputs; ++i) {
    // Clamped so that the sum stays inside the side; it still holds [lowest, highest].
    const int first = lowest[static_cast<size_t>(i)] < n - span ? lowest[static_cast<size_t>(i)] : n - span;
    axis.first[static_cast<size_t>(i)] = first;
    for (double &v : sum) v = 0.0;
    for (int k = -t.radius; k <= t.radius; ++k) {
      const UpsampleTap u = upsample_tap(reflect101(i + k, outputs), n);
      const double w = t.weight[k < 0 ? -k : k];
      sum[static_cast<size_t>(u.a - first)] += w * (1.0 - u.w);
      sum[static_cast<size_t>(u.b - first)] += w * u.w;
    }
    for (int k = 0; k < span; ++k)
      axis.coefficients[static_cast<size_t>(i) * static_cast<size_t>(span) + static_cast<size_t>(k)] =
          static_cast<float>(sum[static_cast<size_t>(k)]);
  }
  // The interior: the widest range around the middle that follows the middle's pattern.
  const int middle = n & ~1;  // an even output near the middle of 2 n
  axis.interior_shift = (middle >> 1) - axis.first[static_cast<size_t>(middle)];
  auto follows = [&](int i) {
    if (axis.first[static_cast<size_t>(i)] != (i >> 1) - axis.interior_shift) return false;
    const float *c = &axis.coefficients[static_cast<size_t>(i) * static_cast<size_t>(span)];
    const float *m = &axis.coefficients[static_cast<size_t>(middle + (i & 1)) * static_cast<size_t>(span)];
    return memcmp(c, m, sizeof(float) * static_cast<size_t>(span)) == 0;
  };
  int begin = middle, end = middle;
  while (end < outputs && follows(end)) ++end;
  while (begin > 0 && follows(begin - 1)) --begin;
  begin += begin & 1;
  axis.interior_begin = begin < end ? begin : 0;
  axis.interior_end = begin < end ? end : 0;
  return axis;
}

// One output of a doubling-blur pass: coefficients c[0..taps-1] over
// samples v[0], v[step], ..., summed from the first (the kernel, whose
// `taps` is a compile-time constant, unrolls it).
CS_HD float doubling_blur_sum(const float *c, const float *v, int step, int taps) {
  float s = c[0] * v[0];
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
  for (int k = 1; k < taps; ++k) s += c[k] * v[k * step];
  return s;
}

// ----------------------------------------------------------------- detection

// OpenCV's integer pre-filter threshold on |D| (pixel scale).
inline float prefilter_threshold(double contrast_threshold, int n_layers) {
  return static_cast<float>(floor(0.5 * contrast_threshold / n_layers * 255.0));
}

// Maximum and minimum that give NaN when either operand is NaN, so that a
// NaN anywhere in a neighbourhood fails the extremum test as it fails
// OpenCV's comparisons (fmaxf and fminf would skip it).
CS_HD float max_or_nan(float a, float b) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  float d;
  asm("max.NaN.f32 %0, %1, %2;" : "=f"(d) : "f"(a), "f"(b));
  return d;
#else
  return a > b || a != a ? a : b;
#endif
}
CS_HD float min_or_nan(float a, float b) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  float d;
  asm("min.NaN.f32 %0, %1, %2;" : "=f"(d) : "f"(a), "f"(b));
  return d;
#else
  return a < b || a != a ? a : b;
#endif
}

// Extremum test of DoG sample `v`, given the maximum and minimum of its
// 3 x 3 x 3 neighbourhood (v included; NaN when a sample is NaN). As
// OpenCV: |v| > threshold and v >= every neighbour (v > 0) or <= every one
// (v < 0); ties count as extrema.
CS_HD bool is_extremum(float v, float threshold, float maximum, float minimum) {
  return fabsf(v) > threshold && v == (v > 0.f ? maximum : minimum);
}

// A keypoint with cv::KeyPoint's values (class_id is always -1).
struct Keypoint {
  float x, y, size, angle, response;
  int32_t octave;
};

// What orientation needs of a refined extremum besides the keypoint: where it
// sits in the pyramid and its sigma in octave pixels.
struct RefinedExtremum {
  Keypoint keypoint;  // angle not set yet
  int octave_index;   // 0 = first octave of the pyramid (the doubled image when upsampling)
  int layer, row, column;
  float octave_sigma;
};

// The parameters the per-keypoint math needs (cv::SIFT's, as floats like OpenCV passes them).
struct DetectionConstants {
  int n_layers;
  int first_octave;  // -1 when upsampling, else 0
  float contrast_threshold, edge_threshold, sigma;
};

// The n_layers + 3 Gaussian levels of one octave: level i at data + i *
// level_stride. The DoG levels are not stored: DoG level i is made where it
// is read, G(i + 1) - G(i) in float, the subtraction OpenCV stores.
struct LevelStack {
  const float *data;
  size_t level_stride;  // elements
  int pitch, width, height;
  CS_HD const float *level(int i) const { return data + static_cast<size_t>(i) * level_stride; }
  CS_HD float at(int i, int y, int x) const { return level(i)[static_cast<ptrdiff_t>(y) * pitch + x]; }
  CS_HD float dog(int i, int y, int x) const { return at(i + 1, y, x) - at(i, y, x); }
};

// The extremum test of DoG sample (row, column) of `layer` over its
// 3 x 3 x 3 neighbourhood (DoG levels layer - 1 .. layer + 1, from the
// Gaussian levels layer - 1 .. layer + 2, each sample loaded once). The
// reference of the host executor and the tests; the extrema kernel finds
// the same by separable bounds (GpuSift.ExtremaAreThoseOfThePyramid).
CS_HD bool is_scale_space_extremum(const LevelStack &gauss, int layer, int row, int column, float threshold) {
  float below[3][3];  // Gaussian level layer - 1 + q at the step's start
  for (int dy = 0; dy < 3; ++dy)
    for (int dx = 0; dx < 3; ++dx) below[dy][dx] = gauss.at(layer - 1, row - 1 + dy, column - 1 + dx);
  const float v = gauss.dog(layer, row, column);
  float maximum = v, minimum = v;
  for (int q = 0; q < 3; ++q)
    for (int dy = 0; dy < 3; ++dy)
      for (int dx = 0; dx < 3; ++dx) {
        const float above = gauss.at(layer + q, row - 1 + dy, column - 1 + dx);
        const float n = above - below[dy][dx];
        below[dy][dx] = above;
        maximum = max_or_nan(maximum, n);
        minimum = min_or_nan(minimum, n);
      }
  return is_extremum(v, threshold, maximum, minimum);
}

// Solves H x = b for a symmetric 3x3 H by Cramer's rule; false when det == 0.
CS_HD bool solve3(const float h[3][3], const float b[3], float x[3]) {
  const float c00 = h[1][1] * h[2][2] - h[1][2] * h[2][1];
  const float c01 = h[1][0] * h[2][2] - h[1][2] * h[2][0];
  const float c02 = h[1][0] * h[2][1] - h[1][1] * h[2][0];
  const float det = h[0][0] * c00 - h[0][1] * c01 + h[0][2] * c02;
  if (det == 0.f) return false;
  const float inv = 1.f / det;
  x[0] = inv * (b[0] * c00 - h[0][1] * (b[1] * h[2][2] - h[1][2] * b[2]) + h[0][2] * (b[1] * h[2][1] - h[1][1] * b[2]));
  x[1] = inv * (h[0][0] * (b[1] * h[2][2] - h[1][2] * b[2]) - b[0] * c01 + h[0][2] * (h[1][0] * b[2] - b[1] * h[2][0]));
  x[2] = inv * (h[0][0] * (h[1][1] * b[2] - b[1] * h[2][1]) - h[0][1] * (h[1][0] * b[2] - b[1] * h[2][0]) + b[0] * c02);
  return true;
}

// Gradient (dx, dy, ds) and Hessian of D at (layer, r, c) by central
// differences, in units of the 0..1 intensity scale.
CS_HD void dog_derivatives(const LevelStack &gauss, int layer, int r, int c, float g[3], float h[3][3]) {
  const float img_scale = 1.f / 255.f;
  const float first = img_scale * 0.5f, second = img_scale, cross = img_scale * 0.25f;
  auto p = [&](int dy, int dx) { return gauss.dog(layer - 1, r + dy, c + dx); };
  auto m = [&](int dy, int dx) { return gauss.dog(layer, r + dy, c + dx); };
  auto n = [&](int dy, int dx) { return gauss.dog(layer + 1, r + dy, c + dx); };
  g[0] = (m(0, 1) - m(0, -1)) * first;
  g[1] = (m(1, 0) - m(-1, 0)) * first;
  g[2] = (n(0, 0) - p(0, 0)) * first;
  const float v2 = m(0, 0) * 2.f;
  h[0][0] = (m(0, 1) + m(0, -1) - v2) * second;
  h[1][1] = (m(1, 0) + m(-1, 0) - v2) * second;
  h[2][2] = (n(0, 0) + p(0, 0) - v2) * second;
  h[0][1] = h[1][0] = (m(1, 1) - m(1, -1) - m(-1, 1) + m(-1, -1)) * cross;
  h[0][2] = h[2][0] = (n(0, 1) - n(0, -1) - p(0, 1) + p(0, -1)) * cross;
  h[1][2] = h[2][1] = (n(1, 0) - n(-1, 0) - p(1, 0) + p(-1, 0)) * cross;
}

// Sub-pixel, sub-scale refinement of the extremum at (layer, r, c) of octave
// `octave_index`, then the contrast and edge tests. On success fills `out`
// (keypoint in input-image coordinates, angle 0) and returns true.
CS_HD bool refine_extremum(const LevelStack &gauss, int octave_index, int layer, int r, int c,
                           const DetectionConstants &k, RefinedExtremum *out) {
  float xi = 0.f, xr = 0.f, xc = 0.f;
  float g[3], h[3][3];
  int step = 0;
  for (; step < kMaxInterpSteps; ++step) {
    dog_derivatives(gauss, layer, r, c, g, h);
    float x[3];
    if (!solve3(h, g, x)) x[0] = x[1] = x[2] = 0.f;  // OpenCV: a singular system gives a zero step
    xc = -x[0];
    xr = -x[1];
    xi = -x[2];
    if (fabsf(xi) < 0.5f && fabsf(xr) < 0.5f && fabsf(xc) < 0.5f) break;
    const float far = static_cast<float>(INT32_MAX / 3);
    if (fabsf(xi) > far || fabsf(xr) > far || fabsf(xc) > far) return false;
    c += round_even(xc);
    r += round_even(xr);
    layer += round_even(xi);
    if (layer < 1 || layer > k.n_layers || c < kImageBorder || c >= gauss.width - kImageBorder || r < kImageBorder ||
        r >= gauss.height - kImageBorder)
      return false;
  }
  if (step >= kMaxInterpSteps) return false;

  dog_derivatives(gauss, layer, r, c, g, h);
  const float t = g[0] * xc + g[1] * xr + g[2] * xi;
  const float contrast = gauss.dog(layer, r, c) * (1.f / 255.f) + t * 0.5f;
  if (fabsf(contrast) * static_cast<float>(k.n_layers) < k.contrast_threshold) return false;
  const float trace = h[0][0] + h[1][1];
  const float det = h[0][0] * h[1][1] - h[0][1] * h[0][1];
  const float e = k.edge_threshold;
  if (det <= 0.f || trace * trace * e >= (e + 1.f) * (e + 1.f) * det) return false;

  const float octave_scale = static_cast<float>(1 << octave_index);
  const float to_input = k.first_octave < 0 ? 1.f / static_cast<float>(1 << -k.first_octave) : 1.f;
  const float size_octave0 = k.sigma * powf(2.f, (static_cast<float>(layer) + xi) / static_cast<float>(k.n_layers)) *
                             octave_scale * 2.f;
  Keypoint kp;
  kp.x = (static_cast<float>(c) + xc) * octave_scale * to_input;
  kp.y = (static_cast<float>(r) + xr) * octave_scale * to_input;
  kp.size = size_octave0 * to_input;
  kp.angle = 0.f;
  kp.response = fabsf(contrast);
  const int packed = octave_index + (layer << 8) + (round_even((static_cast<double>(xi) + 0.5) * 255.0) << 16);
  kp.octave = (packed & ~255) | ((packed + k.first_octave) & 255);
  out->keypoint = kp;
  out->octave_index = octave_index;
  out->layer = layer;
  out->row = r;
  out->column = c;
  out->octave_sigma = size_octave0 * 0.5f / octave_scale;
  return true;
}

// --------------------------------------------------------------- orientation

struct OrientationWindow {
  int radius;
  float exp_scale;  // -1 / (2 sigma_w^2)
};

CS_HD OrientationWindow orientation_window(float octave_sigma) {
  OrientationWindow w;
  w.radius = round_even(kOrientationRadiusFactor * octave_sigma);
  const float s = kOrientationSigmaFactor * octave_sigma;
  w.exp_scale = -1.f / (2.f * s * s);
  return w;
}

// exp, quotient and square root for the orientation and descriptor
// windows' samples. On the GPU the hardware's approximations (ex2.approx,
// rcp.approx, sqrt.approx: within a few units in the last place, far below
// the ~0.01 degree of fastAtan2 below or OpenCV's own vectorised exp and
// magnitude) instead of the correctly rounded sequences, which were 40 of
// the descriptor loop's ~190 instructions a sample (sm_90 SASS); the host
// executor keeps the library's, so the two may differ in a descriptor byte
// where a value lies at a rounding boundary.
CS_HD float sample_exp(float x) {
#if defined(__CUDA_ARCH__)
  return __expf(x);
#else
  return expf(x);
#endif
}
CS_HD float sample_divide(float a, float b) {  // b in [2^-126, 2^126]
#if defined(__CUDA_ARCH__)
  return __fdividef(a, b);
#else
  return a / b;
#endif
}
CS_HD float sample_sqrt(float x) {
#if defined(__CUDA_ARCH__)
  float r;
  asm("sqrt.approx.f32 %0, %1;" : "=f"(r) : "f"(x));
  return r;
#else
  return sqrtf(x);
#endif
}

// OpenCV's fastAtan2 in degrees, [0, 360] (cv::hal::fastAtan2, which
// OpenCV 4.6's calcOrientationHist and calcSIFTDescriptor use for the
// gradient directions): a
// 7th-order polynomial in min(|x|, |y|) / (max + DBL_EPSILON), ~0.01 degree
// from atan2, in the branch-free form of its SIMD path (the same values as
// its scalar path). Against atan2f it makes the descriptors closer to
// OpenCV's (executor vs OpenCV on the eight test pictures: 92-95 % of
// matched keypoints with identical descriptors instead of 80-90 %, mean
// distance 0.17 instead of 0.27) and costs about half the instructions.
CS_HD float fast_atan2_degrees(float y, float x) {
  constexpr float to_degrees = static_cast<float>(180.0 / 3.14159265358979323846);
  constexpr float p1 = 0.9997878412794807f * to_degrees, p3 = -0.3258083974640975f * to_degrees;
  constexpr float p5 = 0.1555786518463281f * to_degrees, p7 = -0.04432655554792128f * to_degrees;
  const float ax = fabsf(x), ay = fabsf(y);
  const float c = sample_divide(ax < ay ? ax : ay, (ax < ay ? ay : ax) + static_cast<float>(DBL_EPSILON));
  const float c2 = c * c;
  float a = (((p7 * c2 + p5) * c2 + p3) * c2 + p1) * c;
  a = ax >= ay ? a : 90.f - a;
  a = x < 0.f ? 180.f - a : a;
  a = y < 0.f ? 360.f - a : a;
  return a;
}

// Whether (y, x) is a sample of the orientation window's histogram: not on
// or beyond the image edge (OpenCV skips those).
CS_HD bool orientation_sample_inside(const PlaneView &g, int y, int x) {
  return y > 0 && y < g.height - 1 && x > 0 && x < g.width - 1;
}

// The gradient at (y, x) as OpenCV's orientation histogram takes it.
CS_HD void orientation_gradient(const PlaneView &g, int y, int x, float *dx, float *dy) {
  *dx = g.at(y, x + 1) - g.at(y, x - 1);
  *dy = g.at(y - 1, x) - g.at(y + 1, x);
}

// The histogram bin and Gaussian-weighted magnitude of window sample (i, j)
// with gradient (dx, dy).
CS_HD void orientation_vote(int i, int j, float dx, float dy, float exp_scale, int *bin, float *value) {
  const float w = sample_exp(static_cast<float>(i * i + j * j) * exp_scale);
  int b = round_even((static_cast<float>(kOrientationBins) / 360.f) * fast_atan2_degrees(dy, dx));
  if (b >= kOrientationBins) b -= kOrientationBins;
  if (b < 0) b += kOrientationBins;
  *bin = b;
  *value = w * sample_sqrt(dx * dx + dy * dy);
}

// Sample (i, j) (row, column offsets) of the orientation window around (r, c)
// in Gaussian level `g`: its histogram bin and Gaussian-weighted gradient
// magnitude; false for samples on or beyond the image edge.
CS_HD bool orientation_sample(const PlaneView &g, int r, int c, int i, int j, float exp_scale, int *bin, float *value) {
  const int y = r + i, x = c + j;
  if (!orientation_sample_inside(g, y, x)) return false;
  float dx, dy;
  orientation_gradient(g, y, x, &dx, &dy);
  orientation_vote(i, j, dx, dy, exp_scale, bin, value);
  return true;
}

// [1 4 6 4 1] / 16 circular smoothing of the raw histogram; returns the maximum.
CS_HD float smoothed_orientation_bin(const float raw[kOrientationBins], int i) {
  constexpr int n = kOrientationBins;
  const float m2 = raw[(i + n - 2) % n], m1 = raw[(i + n - 1) % n], p1 = raw[(i + 1) % n], p2 = raw[(i + 2) % n];
  return (m2 + p2) * (1.f / 16.f) + (m1 + p1) * (4.f / 16.f) + raw[i] * (6.f / 16.f);
}

CS_HD float smooth_orientation_histogram(const float raw[kOrientationBins], float out[kOrientationBins]) {
  float maximum = 0.f;
  for (int i = 0; i < kOrientationBins; ++i) {
    out[i] = smoothed_orientation_bin(raw, i);
    maximum = i == 0 ? out[i] : (out[i] > maximum ? out[i] : maximum);
  }
  return maximum;
}

// Angle (degrees, cv::KeyPoint convention) of bin j when it is a local peak
// of at least kOrientationPeakRatio * maximum; false otherwise.
CS_HD bool orientation_peak(const float hist[kOrientationBins], float maximum, int j, float *angle) {
  constexpr int n = kOrientationBins;
  const int l = j > 0 ? j - 1 : n - 1, r = j < n - 1 ? j + 1 : 0;
  if (!(hist[j] > hist[l] && hist[j] > hist[r] && hist[j] >= maximum * kOrientationPeakRatio)) return false;
  float bin = static_cast<float>(j) + 0.5f * (hist[l] - hist[r]) / (hist[l] - 2.f * hist[j] + hist[r]);
  bin = bin < 0.f ? static_cast<float>(n) + bin : (bin >= static_cast<float>(n) ? bin - static_cast<float>(n) : bin);
  float a = 360.f - (360.f / static_cast<float>(n)) * bin;
  if (fabsf(a - 360.f) < FLT_EPSILON) a = 0.f;
  *angle = a;
  return true;
}

// ---------------------------------------------------------------- ordering

// The canonical order (features_cpu's sort_canonical): response descending,
// then y, x, size, angle, octave ascending.
CS_HD bool keypoint_less(const Keypoint &a, const Keypoint &b) {
  if (a.response != b.response) return a.response > b.response;
  if (a.y != b.y) return a.y < b.y;
  if (a.x != b.x) return a.x < b.x;
  if (a.size != b.size) return a.size < b.size;
  if (a.angle != b.angle) return a.angle < b.angle;
  return a.octave < b.octave;
}

// Two extrema refined to the same pyramid sample give identical keypoints;
// OpenCV keeps one (removeDuplicatedSorted compares x, y, size and angle).
// The response is compared too: keypoints at the same position and scale
// come from the same sample and have the same contrast, and duplicates then
// share the canonical order's key (rank_count_kernel finds them there).
CS_HD bool keypoint_duplicate(const Keypoint &a, const Keypoint &b) {
  return a.x == b.x && a.y == b.y && a.size == b.size && a.angle == b.angle && a.response == b.response;
}

// ---------------------------------------------------------------- descriptor

// Largest gradient magnitude a descriptor sample counts with: twice what
// input at the documented 0..255 scale can give (|dx|, |dy| <= 255:
// sqrt(2) 255), so only float input far outside 0..255 is ever capped. It
// bounds the fixed-point histogram (descriptor_fixed_scale).
constexpr float kDescriptorMaxGradient = 2.f * 255.f * 1.41421356f;

// Where a keypoint's descriptor window lies in its Gaussian level.
struct DescriptorWindow {
  int octave_index, layer;  // the level: octave of the pyramid (0 = first), layer 1..n_layers
  int px, py;               // window centre, level pixels
  int level_width, level_height;
  float cos_t, sin_t;       // rotation, divided by the cell width
  float angle;              // degrees, counter-clockwise with y up
  int radius;
  float exp_scale;
  float cell;         // cell side, level pixels
  float fixed_scale;  // descriptor_fixed_scale(cell)
};

// Fixed-point descriptor histograms. The kernels sum a window's
// contributions with integer shared-memory atomics (native instructions;
// float shared atomics are a compare-and-swap loop on sm_70..sm_90): every
// contribution v becomes round(v * scale) (descriptor_fixed) and is added to
// a uint32 entry. Integer sums do not depend on the order of the additions,
// so descriptors are deterministic, and the host executor, summing the same
// integers, gets the GPU's histogram exactly whenever the contributions are
// equal.
//
// Overflow is impossible. The entry of cell (R, C) and orientation bin o
// receives from a sample at most mag * t(rbin - R) * t(cbin - C), t(u) =
// max(0, 1 - |u|) (the trilinear row and column weights; the orientation
// and Gaussian weights are <= 1), mag <= kDescriptorMaxGradient. (rbin,
// cbin) is the sample's offset (i, j) rotated and divided by the cell side
// c, so the sum over the integer samples of t(u) t(v) is the integral over
// a, b in [0, 1] of the number of samples in the rotated rectangle |u| <
// 1 - a, |v| < 1 - b, of sides 2c (1 - a) and 2c (1 - b). A convex set holds
// at most area + perimeter / 2 + 1 lattice points (Bokowski, Hadwiger and
// Wills), which integrates to c^2 + 2c + 1 = (c + 1)^2. At most (2c + 1)^2 <=
// 4 (c + 1)^2 samples reach an entry (the a = b = 0 square), each adding at
// most 1/2 by rounding, so an entry holds at most (c + 1)^2 (scale *
// kDescriptorMaxGradient + 2); so does a raw element (an entry plus its
// wrap-around twin: a sample reaches at most one of them), and so does the
// sum of the kernels' copies of an entry (they split the samples). The
// scale is the largest power of two that keeps this below 4.29e9 < 2^32
// with 1 % to spare for the float rounding of weights and geometry (~1e-6),
// and at most kDescriptorMaxFixedScale, so that one contribution stays
// below 2^23 and rounds with one float addition (descriptor_fixed): 2^13 for
// OpenCV's defaults (c = 5.4..10.8 level pixels; the overflow bound alone
// would allow 2^17..2^15), 2^10 for the widest cells accepted parameters
// give (sigma <= ~8: c <= ~70). SiftMath tests check the lattice bound and
// a worst case (every gradient at the cap, one orientation: 0.74 of 2^32).
//
// Precision: a contribution is off by at most 1/2 unit, 2^-14 = 6e-5 at
// scale 2^13, where the float sum's rounding per addition is up to 2^-24 of
// the running entry (6e-6..6e-5 for entries of 10^2..10^3): the same order;
// the integer sum adds nothing else, the conversion back to float rounds
// once (2^-24 relative). Over an entry's few hundred contributions that is
// ~1e-3 entry units, and a byte is 512 / norm (~0.1..1) entry units, so the
// bytes equal the float path's except where the exact value lies within
// ~1e-3 of a rounding boundary (measured by SiftHost tests: about 1 byte in
// 10^4 off by one).
constexpr float kDescriptorMaxFixedScale = 8192.f;  // 2^13: kDescriptorMaxGradient * 2^13 < 2^23
CS_HD float descriptor_fixed_scale(float cell) {
  const float c1 = cell + 1.f;
  float limit = (4.29e9f / (c1 * c1) - 2.f) / (kDescriptorMaxGradient * 1.01f);
  limit = limit > 1e-30f ? limit : 1e-30f;  // not reached: cells stay below ~70 level pixels
  int e = 0;
  frexpf(limit, &e);  // limit = m 2^e, m in [0.5, 1)
  const float scale = ldexpf(1.f, e - 1);
  return scale < kDescriptorMaxFixedScale ? scale : kDescriptorMaxFixedScale;
}

// round(v), ties to even, as uint32 for v = a contribution times the fixed
// scale, 0 <= v < 2^23: the low bits of v + 2^23, whose float ulp is 1 (a
// float addition instead of a float-to-integer conversion, which the GPU
// runs at a quarter of the rate).
CS_HD uint32_t descriptor_fixed(float scaled) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(__fadd_rn(scaled, 8388608.f)) - 0x4B000000u;  // __fadd_rn: never fused
#else
  const float t = scaled + 8388608.f;
  uint32_t bits;
  memcpy(&bits, &t, sizeof bits);
  return bits - 0x4B000000u;
#endif
}

// floor(x) for |x| < 2^22, as an int (returned) and as a float: on the GPU
// an addition rounding down onto 1.5 * 2^23 (float ulp 1 there) instead of
// two quarter-rate conversions; the same values as floorf.
CS_HD int floor_small(float x, float *floor_x) {
#if defined(__CUDA_ARCH__)
  const float t = __fadd_rd(x, 12582912.f);
  *floor_x = t - 12582912.f;
  return __float_as_int(t) - 0x4B400000;
#else
  *floor_x = floorf(x);
  return static_cast<int>(*floor_x);
#endif
}

// Unpacks the keypoint as OpenCV does (octave, layer, scale from the packed
// `octave`) and sets up the window; `level_width/height` are the level's
// size (the radius is clipped to its diagonal).
CS_HD DescriptorWindow descriptor_window(const Keypoint &kp, int first_octave, int level_width, int level_height) {
  DescriptorWindow w;
  int octave = kp.octave & 255;
  w.layer = (kp.octave >> 8) & 255;
  octave = octave < 128 ? octave : (-128 | octave);
  const float scale = octave >= 0 ? 1.f / static_cast<float>(1 << octave) : static_cast<float>(1 << -octave);
  w.octave_index = octave - first_octave;
  const float size = kp.size * scale;
  w.px = round_even(kp.x * scale);
  w.py = round_even(kp.y * scale);
  w.level_width = level_width;
  w.level_height = level_height;
  float angle = 360.f - kp.angle;
  if (fabsf(angle - 360.f) < FLT_EPSILON) angle = 0.f;
  w.angle = angle;
  const float cell = kDescriptorScaleFactor * size * 0.5f;
  w.radius = round_even(cell * 1.4142135623730951f * (kDescriptorWidth + 1) * 0.5f);
  const int diagonal = static_cast<int>(sqrt(static_cast<double>(level_width) * level_width +
                                             static_cast<double>(level_height) * level_height));
  if (w.radius > diagonal) w.radius = diagonal;
  const float rad = angle * static_cast<float>(3.14159265358979323846 / 180.0);
  w.cos_t = cosf(rad) / cell;
  w.sin_t = sinf(rad) / cell;
  w.exp_scale = -1.f / (kDescriptorWidth * kDescriptorWidth * 0.5f);
  w.cell = cell;
  w.fixed_scale = descriptor_fixed_scale(cell);
  return w;
}

// What one window sample adds to the padded histogram: values[k] at
// index + descriptor_offset(k) (its 2 x 2 x 2 neighbouring row, column and
// orientation bins, trilinear weights).
struct DescriptorContribution {
  int index;
  float values[8];
};
CS_HD int descriptor_offset(int k) {  // k = 4 row + 2 column + orientation bit
  return ((k >> 2) & 1) * (kDescriptorWidth + 2) * (kDescriptorBins + 2) + ((k >> 1) & 1) * (kDescriptorBins + 2) + (k & 1);
}

// Sample (i, j) of the window, `p` pointing at it in the level (`pitch`
// elements between rows); it must lie inside the level's border ring (1 <=
// row <= height - 2, same for columns): descriptor_row_span's runs do.
// False when it falls outside the 4 x 4 grid; otherwise its weighted
// gradient spread trilinearly, every value multiplied by `scale` (a power
// of two: 1 for float sums, fixed_scale for fixed-point ones; the products
// are exactly `scale` times the unscaled ones).
CS_HD bool descriptor_contribution(const float *p, int pitch, const DescriptorWindow &w, int i, int j,
                                   float scale, DescriptorContribution *out) {
  constexpr int d = kDescriptorWidth, n = kDescriptorBins;
  const float c_rot = static_cast<float>(j) * w.cos_t - static_cast<float>(i) * w.sin_t;
  const float r_rot = static_cast<float>(j) * w.sin_t + static_cast<float>(i) * w.cos_t;
  float rbin = r_rot + static_cast<float>(d / 2) - 0.5f;
  float cbin = c_rot + static_cast<float>(d / 2) - 0.5f;
  if (!(rbin > -1.f && rbin < static_cast<float>(d) && cbin > -1.f && cbin < static_cast<float>(d))) return false;
  const float dx = p[1] - p[-1];
  const float dy = p[-pitch] - p[pitch];
  const float weight = sample_exp((c_rot * c_rot + r_rot * r_rot) * w.exp_scale);
  float obin = (fast_atan2_degrees(dy, dx) - w.angle) * (static_cast<float>(n) / 360.f);  // in (-8, 8]
  const float gradient = sample_sqrt(dx * dx + dy * dy);
  const float mag = (gradient < kDescriptorMaxGradient ? gradient : kDescriptorMaxGradient) * (weight * scale);
  float r0f, c0f, o0f;  // rbin in (-1, 4), cbin too
  const int r0 = floor_small(rbin, &r0f), c0 = floor_small(cbin, &c0f);
  int o0 = floor_small(obin, &o0f);
  rbin -= r0f;
  cbin -= c0f;
  obin -= o0f;
  static_assert((n & (n - 1)) == 0, "the orientation wrap below needs a power of two");
  o0 &= n - 1;  // o0 in -n..n: + n when negative, - n at n
  const float v_r1 = mag * rbin, v_r0 = mag - v_r1;
  const float v_rc11 = v_r1 * cbin, v_rc10 = v_r1 - v_rc11;
  const float v_rc01 = v_r0 * cbin, v_rc00 = v_r0 - v_rc01;
  out->values[7] = v_rc11 * obin;
  out->values[6] = v_rc11 - out->values[7];
  out->values[5] = v_rc10 * obin;
  out->values[4] = v_rc10 - out->values[5];
  out->values[3] = v_rc01 * obin;
  out->values[2] = v_rc01 - out->values[3];
  out->values[1] = v_rc00 * obin;
  out->values[0] = v_rc00 - out->values[1];
  out->index = ((r0 + 1) * (d + 2) + c0 + 1) * (n + 2) + o0;
  return true;
}

// Narrows [*lo, *hi] to the j with |j a + b| < bound (real arithmetic).
CS_HD void narrow_to_strip(float a, float b, float bound, float *lo, float *hi) {
  if (a == 0.f) {
    if (!(fabsf(b) < bound)) *hi = *lo - 1.f;  // no j at all
    return;
  }
  float j0 = (-bound - b) / a, j1 = (bound - b) / a;  // may be infinite for a tiny a: clamped below
  if (j0 > j1) {
    const float t = j0;
    j0 = j1;
    j1 = t;
  }
  *lo = j0 > *lo ? j0 : *lo;
  *hi = j1 < *hi ? j1 : *hi;
}

// Columns of window row i (offsets, within [-radius, radius]) that can fall
// inside the rotated 4 x 4 grid and lie inside the level's border ring
// (OpenCV skips the samples on the image edge): [*first, *last], empty when
// *first > *last. About half of the square window lies outside the rotated
// grid; the kernels enumerate these runs instead of the whole window. A
// superset of the samples descriptor_contribution accepts (the strips
// |r_rot|, |c_rot| < 2.5 widened by 1e-3 cells, then to whole columns; the
// float rounding of either computation is ~1e-6 cells), which still makes
// the decision, so the contributions are exactly those of the whole window,
// in the same order.
CS_HD void descriptor_row_span(const DescriptorWindow &w, int i, int *first, int *last) {
  *first = 0;
  *last = -1;
  const int r = w.py + i;
  if (r < 1 || r > w.level_height - 2) return;
  const float bound = static_cast<float>(kDescriptorWidth / 2) + 0.5f + 1e-3f;
  float lo = static_cast<float>(-w.radius), hi = static_cast<float>(w.radius);
  const float fi = static_cast<float>(i);
  narrow_to_strip(w.sin_t, fi * w.cos_t, bound, &lo, &hi);   // r_rot = j sin_t + i cos_t
  narrow_to_strip(w.cos_t, -fi * w.sin_t, bound, &lo, &hi);  // c_rot = j cos_t - i sin_t
  if (lo > hi) return;
  const int f = static_cast<int>(floorf(lo)), l = static_cast<int>(ceilf(hi));  // lo, hi lie within [-radius, radius]
  const int f_edge = 1 - w.px, l_edge = w.level_width - 2 - w.px;  // columns 1..width - 2
  *first = f > f_edge ? f : f_edge;
  *last = l < l_edge ? l : l_edge;
}

// Element e (0..127) of the raw descriptor: the cell's bin with its
// wrap-around bins folded back (bins n and n + 1 belong to 0 and 1).
CS_HD int descriptor_raw_index(int e) {
  constexpr int d = kDescriptorWidth, n = kDescriptorBins;
  const int cell = e / n;
  return ((cell / d + 1) * (d + 2) + (cell % d + 1)) * (n + 2) + e % n;
}
CS_HD float descriptor_raw_element(const float *hist, int e) {
  const int k = e % kDescriptorBins, b = descriptor_raw_index(e);
  return hist[b] + (k < 2 ? hist[b + kDescriptorBins] : 0.f);
}
// The same of a fixed-point histogram (no overflow: see
// descriptor_fixed_scale), back at the float scale.
CS_HD float descriptor_raw_element(const uint32_t *hist, int e, float fixed_scale) {
  const int k = e % kDescriptorBins, b = descriptor_raw_index(e);
  const uint32_t v = hist[b] + (k < 2 ? hist[b + kDescriptorBins] : 0u);
  return static_cast<float>(v) * (1.f / fixed_scale);  // a power of two: exact
}

// Byte value of a clipped, normalised element: saturate_cast<uchar>(v * scale).
CS_HD float descriptor_byte_value(float clipped, float scale) {
  int v = round_even(clipped * scale);
  v = v < 0 ? 0 : (v > 255 ? 255 : v);
  return static_cast<float>(v);
}

// The finalisation on one thread: 128 raw elements -> byte values (as
// float), in place. Clip at kDescriptorMagnitudeThreshold of the L2 norm,
// renormalise to kDescriptorByteFactor.
CS_HD void finalize_raw_descriptor(float out[kDescriptorLength]) {
  float norm2 = 0.f;
  for (int e = 0; e < kDescriptorLength; ++e) norm2 += out[e] * out[e];
  const float threshold = sqrtf(norm2) * kDescriptorMagnitudeThreshold;
  norm2 = 0.f;
  for (int e = 0; e < kDescriptorLength; ++e) {
    out[e] = out[e] < threshold ? out[e] : threshold;
    norm2 += out[e] * out[e];
  }
  const float n = sqrtf(norm2);
  const float scale = kDescriptorByteFactor / (n > FLT_EPSILON ? n : FLT_EPSILON);
  for (int e = 0; e < kDescriptorLength; ++e) out[e] = descriptor_byte_value(out[e], scale);
}

// From a float histogram, and from a fixed-point one.
CS_HD void finalize_descriptor(const float *hist, float out[kDescriptorLength]) {
  for (int e = 0; e < kDescriptorLength; ++e) out[e] = descriptor_raw_element(hist, e);
  finalize_raw_descriptor(out);
}
CS_HD void finalize_descriptor(const uint32_t *hist, float fixed_scale, float out[kDescriptorLength]) {
  for (int e = 0; e < kDescriptorLength; ++e) out[e] = descriptor_raw_element(hist, e, fixed_scale);
  finalize_raw_descriptor(out);
}

}  // namespace cs::sift
