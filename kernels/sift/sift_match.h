// Brute-force matching of SIFT descriptors for siftmatch: for each query row
// the nearest and second-nearest train rows (L2), then Lowe's ratio test and
// the optional mutual check. GStreamer- and OpenCV-free. Rows are 128 bytes
// (cv::SIFT's CV_8U descriptor, DescriptorFormat::opencv) or 128 floats
// (float and RootSIFT).
//
// Byte rows:
// Same answers as features_cpu's match_descriptors (cv::BFMatcher, NORM_L2
// on the descriptors converted to float):
//   - the squared distance of two byte rows is an integer below 2^24
//     (128 * 255^2), which float sums hold exactly, so OpenCV's float sum is
//     the integer computed here;
//   - OpenCV ranks train rows by the float square root of that sum, in which
//     neighbouring integers can round to the same value, and keeps the lower
//     index of equals; neighbours here are ranked by that same key
//     (match_distance, correctly rounded on host and device) and then index;
//   - the ratio test compares those float distances in double, as
//     match_descriptors does.
// Float rows: the squared distance is summed in float in a fixed order (four
// partial sums, products and sums rounded one by one, never fused), so the
// GPU and the host loop give the same floats; OpenCV's vectorised sum may
// differ from both in the last bits, so a ratio on the edge can go the other
// way there.
// The per-pair math is CS_HD (one copy for the CUDA kernel and the host
// loop); CudaMatcher runs it on the GPU (sift_match.cu), nearest_two_host on
// the CPU (sift_match.cpp, also the reference of the GPU tests).
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "common/cuda_runtime.h"
#include "common/hd.h"

namespace cs::sift {

constexpr int kMatchDescriptorBytes = 128;
constexpr int kMatchDescriptorWords = kMatchDescriptorBytes / 4;
constexpr int kMatchDescriptorFloats = 128;

// Sum of the products of corresponding bytes of two descriptors, each given
// as 32 words of 4 bytes: an exact integer (at most 128 x 255^2 < 2^23).
CS_HD uint32_t descriptor_dot(const uint32_t *a, const uint32_t *b) {
  uint32_t sum = 0;
#if defined(__CUDA_ARCH__)
#pragma unroll
  for (int w = 0; w < kMatchDescriptorWords; ++w) sum = __dp4a(a[w], b[w], sum);  // four byte products at once
#else
  for (int w = 0; w < kMatchDescriptorWords; ++w)
    for (int shift = 0; shift < 32; shift += 8) sum += ((a[w] >> shift) & 0xffu) * ((b[w] >> shift) & 0xffu);
#endif
  return sum;
}

// Squared L2 distance from the rows' squared norms and their dot product,
// |a - b|^2 = |a|^2 + |b|^2 - 2 a.b, exact in 32-bit integers (each term is
// below 2^24). The norms are computed once per row, so a pair costs one dot
// product: 32 __dp4a on the GPU.
CS_HD uint32_t distance_squared_from(uint32_t norm_a, uint32_t norm_b, uint32_t dot_ab) {
  return norm_a + norm_b - 2u * dot_ab;
}

CS_HD uint32_t descriptor_distance_squared(const uint32_t *a, const uint32_t *b) {
  return distance_squared_from(descriptor_dot(a, a), descriptor_dot(b, b), descriptor_dot(a, b));
}

// The L2 distance OpenCV reports and ranks by: the float square root of the
// (exact) squared distance, correctly rounded.
CS_HD float match_distance(uint32_t distance_squared) {
#if defined(__CUDA_ARCH__)
  return __fsqrt_rn(float(distance_squared));
#else
  return std::sqrt(float(distance_squared));
#endif
}

// The L2 distance of two float rows (kMatchDescriptorFloats each), given as
// their bits: the square root of the squared differences summed in four
// partial sums (element k into sum k % 4), then (s0 + s1) + (s2 + s3); every
// operation rounded on its own, the same on host and device.
CS_HD float float_descriptor_distance(const uint32_t *a, const uint32_t *b) {
  float sum[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#if defined(__CUDA_ARCH__)
#pragma unroll
  for (int k = 0; k < kMatchDescriptorFloats; ++k) {
    const float d = __fsub_rn(__uint_as_float(a[k]), __uint_as_float(b[k]));
    sum[k % 4] = __fadd_rn(sum[k % 4], __fmul_rn(d, d));
  }
  return __fsqrt_rn(__fadd_rn(__fadd_rn(sum[0], sum[1]), __fadd_rn(sum[2], sum[3])));
#else
  for (int k = 0; k < kMatchDescriptorFloats; ++k) {
    float x, y;
    std::memcpy(&x, &a[k], sizeof x);
    std::memcpy(&y, &b[k], sizeof y);
    const volatile float d = x - y, square = d * d;  // volatile: no fused multiply-add on any host
    sum[k % 4] += square;
  }
  return std::sqrt((sum[0] + sum[1]) + (sum[2] + sum[3]));
#endif
}

// The two kinds of rows, for the kernel and the host loops: 32-bit words per
// row, a per-row term computed once (the squared norm of byte rows; none for
// float rows) and the pair's distance from the rows and those terms.
struct ByteDescriptorRows {
  using Element = uint8_t;
  static constexpr int kWords = kMatchDescriptorWords;
  CS_HD static uint32_t row_term(const uint32_t *row) { return descriptor_dot(row, row); }
  CS_HD static float distance(const uint32_t *a, uint32_t a_term, const uint32_t *b, uint32_t b_term) {
    return match_distance(distance_squared_from(a_term, b_term, descriptor_dot(a, b)));
  }
};

struct FloatDescriptorRows {
  using Element = float;
  static constexpr int kWords = kMatchDescriptorFloats;
  CS_HD static uint32_t row_term(const uint32_t *) { return 0; }
  CS_HD static float distance(const uint32_t *a, uint32_t, const uint32_t *b, uint32_t) {
    return float_descriptor_distance(a, b);
  }
};

// The two nearest train rows of one query row (-1: none) and their
// distances (match_distance).
struct NearestTwo {
  int best = -1, second = -1;
  float best_distance = 0.0f, second_distance = 0.0f;
};

// Whether (distance, index) ranks before (current, current_index): by
// OpenCV's float distance, then the lower index; anything ranks before none.
CS_HD bool ranks_before(float distance, int index, float current, int current_index) {
  return current_index < 0 || distance < current || (distance == current && index < current_index);
}

// Offers train row `index` at `distance` to a query's nearest two.
CS_HD void offer_neighbour(NearestTwo &n, float distance, int index) {
  if (ranks_before(distance, index, n.best_distance, n.best)) {
    n.second = n.best;
    n.second_distance = n.best_distance;
    n.best = index;
    n.best_distance = distance;
  } else if (ranks_before(distance, index, n.second_distance, n.second)) {
    n.second = index;
    n.second_distance = distance;
  }
}

// One kept match: query row, train row, L2 distance (OpenCV's float).
struct DescriptorMatch {
  int query, train;
  float distance;
};

// Lowe's ratio test on each query's nearest two (kept when the nearest is
// below `ratio` times the second; with no second neighbour, one train row,
// nothing is kept, as OpenCV's knnMatch users do) and, when
// `nearest_query_of_train` is not empty, the mutual check (the train row's
// own nearest query row must be this query). In query order, as
// match_descriptors.
std::vector<DescriptorMatch> select_matches(const std::vector<NearestTwo> &nearest, double ratio,
                                            const std::vector<int> &nearest_query_of_train);

// The nearest two train rows of each query row, by loops on the CPU. Rows
// are kMatchDescriptorBytes bytes or kMatchDescriptorFloats floats,
// consecutive.
std::vector<NearestTwo> nearest_two_host(const uint8_t *query, int query_count, const uint8_t *train,
                                         int train_count);
std::vector<NearestTwo> nearest_two_host(const float *query, int query_count, const float *train, int train_count);

// Matches on the CPU: nearest_two_host (both ways for the mutual check),
// then select_matches.
std::vector<DescriptorMatch> match_host(const uint8_t *query, int query_count, const uint8_t *train, int train_count,
                                        double ratio, bool mutual);
std::vector<DescriptorMatch> match_host(const float *query, int query_count, const float *train, int train_count,
                                        double ratio, bool mutual);

// Brute-force matcher on one device: the train rows stay on the device until
// replaced; device buffers grow to the largest sets seen and are reused.
// Built without CUDA, constructing it throws cs::CudaError.
class CudaMatcher {
 public:
  explicit CudaMatcher(int device);
  ~CudaMatcher();
  CudaMatcher(const CudaMatcher &) = delete;
  CudaMatcher &operator=(const CudaMatcher &) = delete;

  int device() const;
  // Uploads the train rows (count x kMatchDescriptorBytes bytes or
  // kMatchDescriptorFloats floats, host memory). Queries must then be rows
  // of the same kind (std::invalid_argument otherwise).
  void set_train(const uint8_t *train, int train_count, StreamHandle stream);
  void set_train(const float *train, int train_count, StreamHandle stream);
  // The rows of the last query (nearest_two or match) become the train rows
  // without another upload: matching each frame against the one before
  // uploads each frame's rows once. std::logic_error when no query was
  // given since the train rows were set.
  void train_on_last_query();
  int train_count() const;
  // Nearest two train rows of each query row (host memory); waits for the stream.
  std::vector<NearestTwo> nearest_two(const uint8_t *query, int query_count, StreamHandle stream);
  std::vector<NearestTwo> nearest_two(const float *query, int query_count, StreamHandle stream);
  // Uploads the query rows, finds the nearest two (and, for the mutual
  // check, each train row's nearest query row) on the device, downloads
  // them (one synchronisation) and applies select_matches.
  std::vector<DescriptorMatch> match(const uint8_t *query, int query_count, double ratio, bool mutual,
                                     StreamHandle stream);
  std::vector<DescriptorMatch> match(const float *query, int query_count, double ratio, bool mutual,
                                     StreamHandle stream);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace cs::sift
