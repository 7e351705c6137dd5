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
//  - extrema of DoG levels 1..n_layers over 26 neighbours (non-strict), after
//    the pre-filter |D| > floor(0.5 * contrast / n_layers * 255), at least
//    kImageBorder pixels from the edge;
//  - up to kMaxInterpSteps Newton steps on the 3x3 Hessian; contrast test
//    |D(x^)| * n_layers >= contrast; edge test tr^2 * e < (e + 1)^2 det;
//  - orientation: 36-bin histogram of gradients within radius
//    round(4.5 sigma_oct), Gaussian weight 1.5 sigma_oct, smoothed with
//    [1 4 6 4 1] / 16, one keypoint per local peak >= 0.8 * max, parabolic
//    peak interpolation, angle = 360 - bin * 10 degrees;
//  - descriptor: 4 x 4 cells of 3 sigma_oct, 8 orientation bins, trilinear
//    binning of every gradient in the rotated window, Gaussian weight of
//    half the window, clipped at 0.2 of the norm, scaled to 512 / norm and
//    rounded to bytes.
// Keypoints carry cv::KeyPoint's values, including its packed `octave`
// (octave | layer << 8 | round((xi + 0.5) * 255) << 16, octave -1 for the
// doubled image) and its coordinates in the input image.
#pragma once

#include <float.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>

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
CS_HD float luma_sample(const uint8_t *p) { return static_cast<float>(*p); }
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

// One output of a 1-D symmetric blur: `p` points at the centre sample, its
// neighbours lie `step` elements apart (borders already resolved).
// 2 * radius + 1 loads, radius + 1 multiplies, 2 * radius adds.
CS_HD float blur_1d(const float *p, int step, const BlurTaps &t) {
  float s = t.weight[0] * p[0];
  for (int k = 1; k <= t.radius; ++k) s += t.weight[k] * (p[k * step] + p[-k * step]);
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
  for (int k = 1; k <= R; ++k) s += t.weight[k] * (p[k * step] + p[-k * step]);
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
  const float f = 0.5f * static_cast<float>(i) - 0.25f;
  const int i0 = static_cast<int>(floorf(f));
  return {clamp_index(i0, n), clamp_index(i0 + 1, n), f - static_cast<float>(i0)};
}

template <typename T>
CS_HD const T *image_row(const T *src, size_t pitch_bytes, int y) {
  return reinterpret_cast<const T *>(reinterpret_cast<const char *>(src) + static_cast<size_t>(y) * pitch_bytes);
}

// From source rows ra (tap a) and rb (tap b) of the vertical tap with weight ay.
template <typename T>
CS_HD float upsampled_sample(const T *ra, const T *rb, float ay, const UpsampleTap &x) {
  const float top = luma_sample(ra + x.a) * (1.f - x.w) + luma_sample(ra + x.b) * x.w;
  const float bottom = luma_sample(rb + x.a) * (1.f - x.w) + luma_sample(rb + x.b) * x.w;
  return top * (1.f - ay) + bottom * ay;
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

// ----------------------------------------------------------------- detection

// OpenCV's integer pre-filter threshold on |D| (pixel scale).
inline float prefilter_threshold(double contrast_threshold, int n_layers) {
  return static_cast<float>(floor(0.5 * contrast_threshold / n_layers * 255.0));
}

// Maximum and minimum of the 3 x 3 neighbourhood (centre included) of `p`.
CS_HD void neighbourhood_bounds(const float *p, int pitch, float *maximum, float *minimum) {
  float hi = p[0], lo = p[0];
  for (int dy = -1; dy <= 1; ++dy)
    for (int dx = -1; dx <= 1; ++dx) {
      const float v = p[dy * pitch + dx];
      hi = v > hi ? v : hi;
      lo = v < lo ? v : lo;
    }
  *maximum = hi;
  *minimum = lo;
}

// Extremum test of DoG sample `v` over its 26 neighbours, given the 3 x 3
// bounds of the level below, its own level and the level above. As OpenCV:
// |v| > threshold and v >= every neighbour (v > 0) or <= every one (v < 0);
// ties count as extrema.
CS_HD bool is_extremum(float v, float threshold, const float maximum[3], const float minimum[3]) {
  if (!(fabsf(v) > threshold)) return false;
  if (v > 0.f) return v >= maximum[0] && v >= maximum[1] && v >= maximum[2];
  return v <= minimum[0] && v <= minimum[1] && v <= minimum[2];
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

// The n_layers + 2 DoG levels of one octave: level i at data + i * level_stride.
struct LevelStack {
  const float *data;
  size_t level_stride;  // elements
  int pitch, width, height;
  CS_HD const float *level(int i) const { return data + static_cast<size_t>(i) * level_stride; }
  CS_HD float at(int i, int y, int x) const { return level(i)[static_cast<ptrdiff_t>(y) * pitch + x]; }
};

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
CS_HD void dog_derivatives(const LevelStack &d, int layer, int r, int c, float g[3], float h[3][3]) {
  const float img_scale = 1.f / 255.f;
  const float first = img_scale * 0.5f, second = img_scale, cross = img_scale * 0.25f;
  const float *p = d.level(layer - 1) + static_cast<ptrdiff_t>(r) * d.pitch + c;
  const float *m = d.level(layer) + static_cast<ptrdiff_t>(r) * d.pitch + c;
  const float *n = d.level(layer + 1) + static_cast<ptrdiff_t>(r) * d.pitch + c;
  const int s = d.pitch;
  g[0] = (m[1] - m[-1]) * first;
  g[1] = (m[s] - m[-s]) * first;
  g[2] = (n[0] - p[0]) * first;
  const float v2 = m[0] * 2.f;
  h[0][0] = (m[1] + m[-1] - v2) * second;
  h[1][1] = (m[s] + m[-s] - v2) * second;
  h[2][2] = (n[0] + p[0] - v2) * second;
  h[0][1] = h[1][0] = (m[s + 1] - m[s - 1] - m[-s + 1] + m[-s - 1]) * cross;
  h[0][2] = h[2][0] = (n[1] - n[-1] - p[1] + p[-1]) * cross;
  h[1][2] = h[2][1] = (n[s] - n[-s] - p[s] + p[-s]) * cross;
}

// Sub-pixel, sub-scale refinement of the extremum at (layer, r, c) of octave
// `octave_index`, then the contrast and edge tests. On success fills `out`
// (keypoint in input-image coordinates, angle 0) and returns true.
CS_HD bool refine_extremum(const LevelStack &d, int octave_index, int layer, int r, int c, const DetectionConstants &k,
                           RefinedExtremum *out) {
  float xi = 0.f, xr = 0.f, xc = 0.f;
  float g[3], h[3][3];
  int step = 0;
  for (; step < kMaxInterpSteps; ++step) {
    dog_derivatives(d, layer, r, c, g, h);
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
    if (layer < 1 || layer > k.n_layers || c < kImageBorder || c >= d.width - kImageBorder || r < kImageBorder ||
        r >= d.height - kImageBorder)
      return false;
  }
  if (step >= kMaxInterpSteps) return false;

  dog_derivatives(d, layer, r, c, g, h);
  const float t = g[0] * xc + g[1] * xr + g[2] * xi;
  const float contrast = d.at(layer, r, c) * (1.f / 255.f) + t * 0.5f;
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

// Gradient direction in degrees, [0, 360), of (dx, dy) with y up.
CS_HD float direction_degrees(float dy, float dx) {
  float a = atan2f(dy, dx) * (180.f / 3.14159265358979f);
  if (a < 0.f) a += 360.f;
  if (a >= 360.f) a -= 360.f;
  return a;
}

// Sample (i, j) (row, column offsets) of the orientation window around (r, c)
// in Gaussian level `g`: its histogram bin and Gaussian-weighted gradient
// magnitude; false for samples on or beyond the image edge (OpenCV skips them).
CS_HD bool orientation_sample(const PlaneView &g, int r, int c, int i, int j, float exp_scale, int *bin, float *value) {
  const int y = r + i, x = c + j;
  if (y <= 0 || y >= g.height - 1 || x <= 0 || x >= g.width - 1) return false;
  const float dx = g.at(y, x + 1) - g.at(y, x - 1);
  const float dy = g.at(y - 1, x) - g.at(y + 1, x);
  const float w = expf(static_cast<float>(i * i + j * j) * exp_scale);
  int b = round_even((static_cast<float>(kOrientationBins) / 360.f) * direction_degrees(dy, dx));
  if (b >= kOrientationBins) b -= kOrientationBins;
  if (b < 0) b += kOrientationBins;
  *bin = b;
  *value = w * sqrtf(dx * dx + dy * dy);
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
CS_HD bool keypoint_duplicate(const Keypoint &a, const Keypoint &b) {
  return a.x == b.x && a.y == b.y && a.size == b.size && a.angle == b.angle;
}

// ---------------------------------------------------------------- descriptor

// Where a keypoint's descriptor window lies in its Gaussian level.
struct DescriptorWindow {
  int octave_index, layer;  // the level: octave of the pyramid (0 = first), layer 1..n_layers
  int px, py;               // window centre, level pixels
  float cos_t, sin_t;       // rotation, divided by the cell width
  float angle;              // degrees, counter-clockwise with y up
  int radius;
  float exp_scale;
};

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

// Sample (i, j) of the window: false when it falls outside the 4 x 4 grid
// or on the image edge; otherwise its weighted gradient spread trilinearly.
CS_HD bool descriptor_contribution(const PlaneView &g, const DescriptorWindow &w, int i, int j,
                                   DescriptorContribution *out) {
  constexpr int d = kDescriptorWidth, n = kDescriptorBins;
  const float c_rot = static_cast<float>(j) * w.cos_t - static_cast<float>(i) * w.sin_t;
  const float r_rot = static_cast<float>(j) * w.sin_t + static_cast<float>(i) * w.cos_t;
  float rbin = r_rot + static_cast<float>(d / 2) - 0.5f;
  float cbin = c_rot + static_cast<float>(d / 2) - 0.5f;
  const int r = w.py + i, c = w.px + j;
  if (!(rbin > -1.f && rbin < static_cast<float>(d) && cbin > -1.f && cbin < static_cast<float>(d) && r > 0 &&
        r < g.height - 1 && c > 0 && c < g.width - 1))
    return false;
  const float dx = g.at(r, c + 1) - g.at(r, c - 1);
  const float dy = g.at(r - 1, c) - g.at(r + 1, c);
  const float weight = expf((c_rot * c_rot + r_rot * r_rot) * w.exp_scale);
  float obin = (direction_degrees(dy, dx) - w.angle) * (static_cast<float>(n) / 360.f);
  const float mag = sqrtf(dx * dx + dy * dy) * weight;
  const int r0 = static_cast<int>(floorf(rbin)), c0 = static_cast<int>(floorf(cbin));
  int o0 = static_cast<int>(floorf(obin));
  rbin -= static_cast<float>(r0);
  cbin -= static_cast<float>(c0);
  obin -= static_cast<float>(o0);
  if (o0 < 0) o0 += n;
  if (o0 >= n) o0 -= n;
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
// inside the rotated 4 x 4 grid: [*first, *last], empty when *first > *last.
// About half of the square window lies outside the rotated grid; the
// kernels enumerate these runs instead of the whole window. A superset of
// what descriptor_contribution accepts (the strips |r_rot|, |c_rot| < 2.5
// widened by 1e-3 cells, then to whole columns; the float rounding of
// either computation is ~1e-6 cells), which still makes the decision, so
// the contributions are exactly those of the whole window, in the same
// order.
CS_HD void descriptor_row_span(const DescriptorWindow &w, int i, int *first, int *last) {
  const float bound = static_cast<float>(kDescriptorWidth / 2) + 0.5f + 1e-3f;
  float lo = static_cast<float>(-w.radius), hi = static_cast<float>(w.radius);
  const float fi = static_cast<float>(i);
  narrow_to_strip(w.sin_t, fi * w.cos_t, bound, &lo, &hi);   // r_rot = j sin_t + i cos_t
  narrow_to_strip(w.cos_t, -fi * w.sin_t, bound, &lo, &hi);  // c_rot = j cos_t - i sin_t
  if (lo > hi) {
    *first = 0;
    *last = -1;
    return;
  }
  *first = static_cast<int>(floorf(lo));  // lo, hi lie within [-radius, radius]
  *last = static_cast<int>(ceilf(hi));
}

// Element e (0..127) of the raw descriptor: the cell's bin with its
// wrap-around bins folded back (bins n and n + 1 belong to 0 and 1).
CS_HD float descriptor_raw_element(const float *hist, int e) {
  constexpr int d = kDescriptorWidth, n = kDescriptorBins;
  const int cell = e / n, k = e % n;
  const int base = ((cell / d + 1) * (d + 2) + (cell % d + 1)) * (n + 2);
  return hist[base + k] + (k < 2 ? hist[base + n + k] : 0.f);
}

// Byte value of a clipped, normalised element: saturate_cast<uchar>(v * scale).
CS_HD float descriptor_byte_value(float clipped, float scale) {
  int v = round_even(clipped * scale);
  v = v < 0 ? 0 : (v > 255 ? 255 : v);
  return static_cast<float>(v);
}

// The full finalisation on one thread: raw histogram -> 128 byte values (as
// float). Clip at kDescriptorMagnitudeThreshold of the L2 norm, renormalise
// to kDescriptorByteFactor.
CS_HD void finalize_descriptor(const float *hist, float out[kDescriptorLength]) {
  float norm2 = 0.f;
  for (int e = 0; e < kDescriptorLength; ++e) {
    out[e] = descriptor_raw_element(hist, e);
    norm2 += out[e] * out[e];
  }
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

}  // namespace cs::sift
