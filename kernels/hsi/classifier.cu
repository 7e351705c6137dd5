// The CUDA classifier: one thread per pixel, the math of classify_math.h.
//
// A block of kPixelsPerBlock threads walks its pixels' selected bands in
// chunks of kBandChunk: the chunk is loaded cooperatively along whichever
// axis is contiguous in memory (bands in BIP, pixels in BIL and BSQ), decoded
// from the native format on the way, and kept in shared memory; each thread
// then reads its own pixel's values from there. References are read from
// constant memory when the prepared table fits (every thread of a warp reads
// the same value at the same time: a broadcast), otherwise each chunk of the
// current reference group is staged in shared memory next to the pixels.
//
// Precision::tensor: classify_gemm_kernel forms every pixel's dot products
// with the references as one matrix product on the tensor cores (WMMA, TF32
// split into high and low parts; classify_math.h gives its error), and the
// scores from those and per-pixel sums with the same score functions: the
// pixel itself (sam, euclidean), shifted (correlation), continuum-removed
// (bandfit); sid as two products, one after the other over the bands
// (sid_score). BIP blocks of
// native f32/i16/u16 samples over a contiguous band range take the
// specialised tensor kernel of bip_tensor.cu instead (kernel_for says which).
#include <mma.h>

#include <cstdint>
#include <map>
#include <mutex>
#include <stdexcept>
#include <type_traits>
#include <utility>
#include <vector>

#include "hsi/bip_tensor.h"
#include "hsi/classifier.h"
#include "common/cuda_check.h"

namespace cs::hsi {

namespace {

constexpr int kPixelsPerBlock = 128;
// 62 KiB of the 64 KiB constant bank; the rest is left to the compiler.
constexpr size_t kConstantTableFloats = 15872;

__constant__ float c_reference_table[kConstantTableFloats];

struct ConstantTable {
  ReferenceTableShape shape;
  __device__ float ref(int plane, int k, int u) const { return c_reference_table[shape.index(plane, k, u)]; }
  __device__ float constant(int k) const { return c_reference_table[shape.constant_index(k)]; }
  __device__ float position(int u) const { return c_reference_table[shape.position_index(u)]; }
};

// References k0.. and bands c0.. staged in shared memory (planes x group x chunk).
struct SharedTileTable {
  const float *tile;
  const float *table;  // global copy: per-reference constants and band positions
  ReferenceTableShape shape;
  int k0, c0;
  __device__ float ref(int plane, int k, int u) const {
    return tile[(plane * kReferenceGroup + (k - k0)) * kBandChunk + (u - c0)];
  }
  __device__ float constant(int k) const { return __ldg(table + shape.constant_index(k)); }
  __device__ float position(int u) const { return __ldg(table + shape.position_index(u)); }
};

struct KernelArgs {
  const void *data;
  SampleFormat format;
  BlockLayout layout;
  const int *bands;    // selected band indices (device)
  const float *table;  // prepared references (device)
  ReferenceTableShape shape;
  float threshold;
  ClassMapTarget class_map;
  float *rule_images;
};

template <Method M, DataType T, bool kTableInConstant, class Acc>
__global__ void __launch_bounds__(kPixelsPerBlock) classify_kernel(const KernelArgs a) {
  __shared__ float tile[kBandChunk][kPixelsPerBlock + 1];  // +1: BIP stores hit distinct banks
  __shared__ size_t pixel_base[kPixelsPerBlock];
  __shared__ float reference_tile[kTableInConstant ? 1 : table_planes(M) * kReferenceGroup * kBandChunk];

  const int tid = threadIdx.x;
  const size_t pixels = a.layout.pixels();
  const size_t first_pixel = size_t(blockIdx.x) * kPixelsPerBlock;
  const size_t pixel = first_pixel + tid;
  const bool active = pixel < pixels;
  const int nb = a.shape.bands, K = a.shape.references;
  const bool bands_contiguous = a.layout.band_stride == 1;
  pixel_base[tid] = active ? a.layout.pixel_offset(pixel) : 0;
  __syncthreads();

  auto stage_pixels = [&](int c0) {
    const int n = min(kBandChunk, nb - c0);
    for (int i = tid; i < kBandChunk * kPixelsPerBlock; i += kPixelsPerBlock) {
      const int p = bands_contiguous ? i / kBandChunk : i % kPixelsPerBlock;
      const int uu = bands_contiguous ? i % kBandChunk : i / kPixelsPerBlock;
      float x = 0.0f;
      if (uu < n && first_pixel + p < pixels)
        x = decode_sample<T>(a.data, pixel_base[p] + size_t(__ldg(a.bands + c0 + uu)) * a.layout.band_stride,
                             a.format);
      tile[uu][p] = x;
    }
  };
  auto stage_references = [&](int k0, int c0) {
    constexpr int kTile = kReferenceGroup * kBandChunk;
    for (int i = tid; i < table_planes(M) * kTile; i += kPixelsPerBlock) {
      const int plane = i / kTile, k = k0 + (i % kTile) / kBandChunk, u = c0 + i % kBandChunk;
      reference_tile[i] = (k < K && u < nb) ? __ldg(a.table + a.shape.index(plane, k, u)) : 0.0f;
    }
  };
  auto table_for = [&](int k0, int c0) {
    if constexpr (kTableInConstant)
      return ConstantTable{a.shape};
    else
      return SharedTileTable{reference_tile, a.table, a.shape, k0, c0};
  };

  // SID needs the pixel's total before its terms can be summed.
  Sum<Acc> floored;
  if constexpr (M == Method::sid) {
    for (int c0 = 0; c0 < nb; c0 += kBandChunk) {
      __syncthreads();
      stage_pixels(c0);
      __syncthreads();
      const int n = min(kBandChunk, nb - c0);
      for (int uu = 0; uu < n; ++uu) floored.add(sid_floor(tile[uu][tid]));
      floored.fold();
    }
  }
  float first = 0, last = 0;
  if constexpr (M == Method::correlation || M == Method::bandfit) {
    if (active) {
      first = decode_sample<T>(a.data, pixel_base[tid] + size_t(__ldg(a.bands)) * a.layout.band_stride, a.format);
      last = decode_sample<T>(a.data, pixel_base[tid] + size_t(__ldg(a.bands + nb - 1)) * a.layout.band_stride,
                              a.format);
    }
  }
  const PixelContext px = pixel_context<M>(first, last, floored.total);

  BestMatch best;
  for (int k0 = 0; k0 < K; k0 += kReferenceGroup) {
    const int count = min(kReferenceGroup, K - k0);
    ReferenceSums<M, kReferenceGroup, Acc> sums;
    sums.clear();
    for (int c0 = 0; c0 < nb; c0 += kBandChunk) {
      __syncthreads();  // the previous chunk is consumed
      stage_pixels(c0);
      if constexpr (!kTableInConstant) stage_references(k0, c0);
      __syncthreads();
      const int n = min(kBandChunk, nb - c0);
      const auto table = table_for(k0, c0);
      for (int uu = 0; uu < n; ++uu) sums.add_band(tile[uu][tid], c0 + uu, k0, count, px, table);
      sums.fold();
    }
    if (active) {
      const auto table = table_for(k0, 0);
      for (int j = 0; j < count; ++j) {
        const float s = sums.score(j, k0 + j, nb, px, table);
        if (a.rule_images) a.rule_images[size_t(k0 + j) * pixels + pixel] = s;
        best.offer(s, k0 + j, higher_is_better(M));
      }
    }
  }
  if (!active) return;
  const int label = best.label(a.threshold, higher_is_better(M));
  a.class_map.write(pixel, label);
}

// --- Precision::tensor: the dot products as a matrix product ---

// A block: kGemmPixels pixels against kGemmRefs references per pass. Each
// warp owns 16 pixels x kGemmWarpRefs references (few accumulators: small
// register footprint, several blocks per SM to hide the staging latency).
constexpr int kGemmPixels = 64;
constexpr int kGemmRefs = 64;
constexpr int kGemmWarpRefs = 32;
constexpr int kGemmFragments = kGemmWarpRefs / 16;
constexpr int kGemmStrips = kGemmPixels / 16;
constexpr int kGemmThreads = 32 * kGemmStrips * (kGemmRefs / kGemmWarpRefs);
// Threads per pixel in the per-pixel sums and scores.
constexpr int kGemmPixelParts = kGemmThreads / kGemmPixels;
// Row pitch (floats) of the staged tiles: WMMA needs a multiple of 4; the
// extra 4 spreads rows over the shared-memory banks.
constexpr int kGemmLd = kBandChunk + 4;
constexpr int kGemmOutLd = kGemmRefs + 4;
static_assert(kBandChunk % 8 == 0 && kBandChunk % kGemmPixelParts == 0, "chunk shape");
static_assert(kGemmRefs % kGemmPixelParts == 0, "references split evenly over a pixel's threads");

using TensorA = nvcuda::wmma::fragment<nvcuda::wmma::matrix_a, 16, 16, 8, nvcuda::wmma::precision::tf32,
                                       nvcuda::wmma::row_major>;
using TensorB = nvcuda::wmma::fragment<nvcuda::wmma::matrix_b, 16, 16, 8, nvcuda::wmma::precision::tf32,
                                       nvcuda::wmma::col_major>;
using TensorAcc = nvcuda::wmma::fragment<nvcuda::wmma::accumulator, 16, 16, 8, float>;

// x = hi + lo with both parts representable in TF32: hi x hi + hi x lo +
// lo x hi recovers a float product to ~2^-22. (Splitting once when staging,
// into two tiles, measured ~5% slower on an H200 than splitting fragments.)
template <class Fragment>
__device__ void split_tf32(Fragment &hi, Fragment &lo) {
  for (int i = 0; i < hi.num_elements; ++i) {
    const float x = hi.x[i];
    const float h = nvcuda::wmma::__float_to_tf32(x);
    hi.x[i] = h;
    lo.x[i] = nvcuda::wmma::__float_to_tf32(x - h);
  }
}

template <Method M, DataType T>
__global__ void __launch_bounds__(kGemmThreads, 3) classify_gemm_kernel(const KernelArgs a) {
  static_assert(dot_product_method(M) || M == Method::sid, "every method has a matrix-product form");
  using namespace nvcuda;
  // sid: two products over the bands, one after the other (classify_math.h,
  // sid_score): the pixel's centred logs times q, then p times the centred
  // log q; p needs the pixel's sum, which the first half finishes.
  constexpr int kHalves = M == Method::sid ? 2 : 1;
  // The pixel and reference tiles while the bands are summed; the pass's
  // dot products (kGemmPixels x kGemmRefs) over them afterwards.
  constexpr int kTileFloats = (kGemmPixels + kGemmRefs) * kGemmLd, kOutFloats = kGemmPixels * kGemmOutLd;
  __shared__ __align__(32) float smem[kTileFloats > kOutFloats ? kTileFloats : kOutFloats];
  float *const x_tile = smem, *const r_tile = smem + kGemmPixels * kGemmLd, *const dots = smem;
  __shared__ size_t pixel_base[kGemmPixels];
  // correlation's shift; bandfit's shift and continuum (PixelContext's
  // fields); sid: the log at the first band (the centre of the pixel's logs),
  // 1 / sum and log sum (once the first half is done)
  __shared__ float shift[kGemmPixels], continuum_start[kGemmPixels], continuum_end[kGemmPixels];
  __shared__ float inv_sum[kGemmPixels], log_sum[kGemmPixels];
  // Per reference of the pass: euclidean |r|^2; sid: sum q log q, sum q and
  // the mean of log q (the centre of its logs)
  __shared__ double ref_norm2[kGemmRefs], ref_q_sum[kGemmRefs];
  __shared__ float ref_log_centre[kGemmRefs];
  // Per pixel: its sums (each of its threads' share, added in a fixed order)
  // and each thread's best match of the pass.
  __shared__ double part_sum[kGemmPixelParts][kGemmPixels], part_sum2[kGemmPixelParts][kGemmPixels];
  __shared__ bool part_finite[kGemmPixelParts][kGemmPixels];
  __shared__ float part_score[kGemmPixelParts][kGemmPixels];
  __shared__ int part_index[kGemmPixelParts][kGemmPixels];

  const int tid = threadIdx.x, warp = tid / 32;
  const int strip = warp % kGemmStrips, column = warp / kGemmStrips * kGemmWarpRefs;
  const size_t pixels = a.layout.pixels();
  const size_t first_pixel = size_t(blockIdx.x) * kGemmPixels;
  const int nb = a.shape.bands, K = a.shape.references;
  const bool bands_contiguous = a.layout.band_stride == 1;
  for (int p = tid; p < kGemmPixels; p += kGemmThreads) {
    const bool in_block = first_pixel + p < pixels;
    pixel_base[p] = in_block ? a.layout.pixel_offset(first_pixel + p) : 0;
    // correlation sums the pixel shifted by its first band, bandfit its
    // continuum-removed values shifted by 1 (classify_math.h)
    PixelContext px;
    if (correlation_like(M) && in_block) {
      auto band_sample = [&](int u) {
        return decode_sample<T>(a.data, pixel_base[p] + size_t(__ldg(a.bands + u)) * a.layout.band_stride, a.format);
      };
      px = pixel_context<M>(band_sample(0), band_sample(nb - 1), 0.0);
      if (!px.defined) px.continuum_start = quiet_nan();  // every value NaN: no class
    }
    if (M == Method::sid && in_block)
      px.shift = logf(sid_floor(
          decode_sample<T>(a.data, pixel_base[p] + size_t(__ldg(a.bands)) * a.layout.band_stride, a.format)));
    shift[p] = px.shift;
    continuum_start[p] = px.continuum_start;
    continuum_end[p] = px.continuum_end;
  }
  // Thread tid works for pixel `mine`, as its part `part` of kGemmPixelParts.
  const int mine = tid % kGemmPixels, part = tid / kGemmPixels;
  const size_t pixel = first_pixel + mine;
  const bool active = pixel < pixels;
  // sam, euclidean: sum2 = |x|^2; correlation, bandfit: sums of d and d^2;
  // sid: sum v and sum v log v of the floored values v
  double sum = 0, sum2 = 0;
  bool finite = true;
  BestMatch best;
  for (int k0 = 0; k0 < K; k0 += kGemmRefs) {
    const int count = min(kGemmRefs, K - k0);
    __syncthreads();  // the previous pass's dot products are read
    if constexpr (M == Method::euclidean) {
      for (int k = tid; k < count; k += kGemmThreads) {
        double n2 = 0;
        for (int u = 0; u < nb; ++u) {
          const double r = __ldg(a.table + a.shape.index(0, k0 + k, u));
          n2 += r * r;
        }
        ref_norm2[k] = n2;
      }
    }
    if constexpr (M == Method::sid) {
      for (int k = tid; k < count; k += kGemmThreads) {
        double q_log_q = 0, q_sum = 0, log_q_sum = 0;
        for (int u = 0; u < nb; ++u) {
          const double q = __ldg(a.table + a.shape.index(0, k0 + k, u));
          const double log_q = __ldg(a.table + a.shape.index(1, k0 + k, u));
          q_log_q += q * log_q;
          q_sum += q;
          log_q_sum += log_q;
        }
        ref_norm2[k] = q_log_q;
        ref_q_sum[k] = q_sum;
        ref_log_centre[k] = float(log_q_sum / nb);
      }
    }
    TensorAcc acc[kGemmFragments];
    double total[kGemmFragments][TensorAcc::num_elements];
    for (auto &t : total)
      for (double &v : t) v = 0;
    const int chunks = (nb + kBandChunk - 1) / kBandChunk;
    for (int c = 0; c < kHalves * chunks; ++c) {
      const int half = c / chunks, c0 = (c % chunks) * kBandChunk;
      const int n = min(kBandChunk, nb - c0);
      if (M == Method::sid && k0 == 0 && c == chunks) {  // the pixel's sum, for p
        part_sum[part][mine] = sum;
        __syncthreads();
        if (part == 0) {
          double total_sum = 0;
          for (int q = 0; q < kGemmPixelParts; ++q) total_sum += part_sum[q][mine];
          const PixelContext px = pixel_context<Method::sid>(0.0f, 0.0f, total_sum);
          inv_sum[mine] = px.inv_sum;
          log_sum[mine] = px.log_sum;
        }
      }
      __syncthreads();  // the previous chunk is consumed (and sid's sums are in)
      for (int i = tid; i < kBandChunk * kGemmPixels; i += kGemmThreads) {
        const int p = bands_contiguous ? i / kBandChunk : i % kGemmPixels;
        const int uu = bands_contiguous ? i % kBandChunk : i / kGemmPixels;
        float x = 0.0f;  // bands beyond the last and pixels beyond the block add nothing
        if (uu < n && first_pixel + p < pixels) {
          x = decode_sample<T>(a.data, pixel_base[p] + size_t(__ldg(a.bands + c0 + uu)) * a.layout.band_stride,
                               a.format);
          if constexpr (M == Method::sid) {
            const float v = sid_floor(x);
            x = half == 0 ? logf(v) - shift[p] : v * inv_sum[p];
          } else if constexpr (correlation_like(M)) {
            PixelContext px;
            px.continuum_start = continuum_start[p];
            px.continuum_end = continuum_end[p];
            const float position = M == Method::bandfit ? __ldg(a.table + a.shape.position_index(c0 + uu)) : 0.0f;
            x = band_value<M>(x, position, px) - shift[p];
          }
        }
        x_tile[p * kGemmLd + uu] = x;
      }
      for (int i = tid; i < kGemmRefs * kBandChunk; i += kGemmThreads) {
        const int k = i / kBandChunk, uu = i % kBandChunk;
        float r = 0.0f;
        if (k < count && uu < n) {
          r = __ldg(a.table + a.shape.index(half, k0 + k, c0 + uu));  // sid: q, then log q
          if (half == 1) r -= ref_log_centre[k];
        }
        r_tile[k * kGemmLd + uu] = r;
      }
      __syncthreads();
      if (k0 == 0 && half == 0) {  // this thread's share of its pixel's bands
        constexpr int kShare = kBandChunk / kGemmPixelParts;
        for (int uu = part * kShare; uu < min(n, (part + 1) * kShare); ++uu) {
          const float d = x_tile[mine * kGemmLd + uu];
          finite = finite && is_finite(d);
          if constexpr (M == Method::sid) {  // d is log v - shift
            const float v = sid_floor(decode_sample<T>(
                a.data, pixel_base[mine] + size_t(__ldg(a.bands + c0 + uu)) * a.layout.band_stride, a.format));
            sum += v;
            sum2 += double(v) * logf(v);
          } else {
            sum += d;
            sum2 += double(d) * d;
          }
        }
      }
      for (auto &f : acc) wmma::fill_fragment(f, 0.0f);
      for (int step = 0; step < kBandChunk; step += 8) {
        TensorA xh, xl;
        wmma::load_matrix_sync(xh, x_tile + strip * 16 * kGemmLd + step, kGemmLd);
        split_tf32(xh, xl);
        for (int j = 0; j < kGemmFragments; ++j) {
          TensorB rh, rl;
          wmma::load_matrix_sync(rh, r_tile + (column + j * 16) * kGemmLd + step, kGemmLd);
          split_tf32(rh, rl);
          // The tensor cores truncate when they add into an accumulator:
          // over a chunk's 12 products of all-positive terms that biased
          // dot products by up to ~1.3e-6 (H200). Each step's three products
          // go into a fresh fragment and are added with rounding instead.
          TensorAcc step_sum;
          wmma::fill_fragment(step_sum, 0.0f);
          wmma::mma_sync(step_sum, xl, rh, step_sum);  // small terms first
          wmma::mma_sync(step_sum, xh, rl, step_sum);
          wmma::mma_sync(step_sum, xh, rh, step_sum);
          for (int i = 0; i < TensorAcc::num_elements; ++i) acc[j].x[i] += step_sum.x[i];
        }
      }
      for (int j = 0; j < kGemmFragments; ++j)  // chunk sums in double, as Sum<float>
        for (int i = 0; i < TensorAcc::num_elements; ++i) total[j][i] += acc[j].x[i];
    }
    if (k0 == 0) {
      part_sum[part][mine] = sum;
      part_sum2[part][mine] = sum2;
      part_finite[part][mine] = finite;
    }
    for (int j = 0; j < kGemmFragments; ++j)
      for (int i = 0; i < TensorAcc::num_elements; ++i) acc[j].x[i] = float(total[j][i]);
    __syncthreads();  // every warp is done with the tiles that `dots` overlays
    for (int j = 0; j < kGemmFragments; ++j)
      wmma::store_matrix_sync(dots + strip * 16 * kGemmOutLd + column + j * 16, acc[j], kGemmOutLd,
                              wmma::mem_row_major);
    __syncthreads();
    if (k0 == 0) {  // the pixel's sums, its parts added in order
      sum = sum2 = 0;
      finite = true;
      for (int q = 0; q < kGemmPixelParts; ++q) {
        sum += part_sum[q][mine];
        sum2 += part_sum2[q][mine];
        finite = finite && part_finite[q][mine];
      }
    }
    // This thread scores references k0 + part * share ..; the pixel's best
    // is then taken over its parts in reference order (ties: lower index).
    constexpr int kShare = kGemmRefs / kGemmPixelParts;
    BestMatch part_best;
    if (active) {
      for (int j = part * kShare; j < min(count, (part + 1) * kShare); ++j) {
        const int k = k0 + j;
        const double dot = dots[mine * kGemmOutLd + j];
        float score;
        if (!finite)
          score = quiet_nan();
        else if constexpr (M == Method::sam)
          score = sam_score(dot, sum2);
        else if constexpr (correlation_like(M))
          score = correlation_score(dot, sum, sum2, nb, __ldg(a.table + a.shape.constant_index(k)));
        else if constexpr (M == Method::sid)
          score = sid_score(dot, sum, sum2, inv_sum[mine], log_sum[mine], shift[mine], ref_log_centre[j],
                            ref_q_sum[j], ref_norm2[j]);
        else
          score = euclidean_score(sum2 - 2 * dot + ref_norm2[j]);
        if (a.rule_images) a.rule_images[size_t(k) * pixels + pixel] = score;
        part_best.offer(score, k, higher_is_better(M));
      }
    }
    part_score[part][mine] = part_best.score;
    part_index[part][mine] = part_best.index;
    __syncthreads();
    if (part == 0)
      for (int q = 0; q < kGemmPixelParts; ++q)
        if (part_index[q][mine] >= 0) best.offer(part_score[q][mine], part_index[q][mine], higher_is_better(M));
  }
  if (!active || part != 0) return;
  const int label = best.label(a.threshold, higher_is_better(M));
  a.class_map.write(pixel, label);
}

// The constant bank is one per device and process, shared by every
// classifier: the owner's table stays resident while it keeps classifying;
// a new owner first waits for the kernels still reading the old table.
struct ConstantBank {
  std::mutex mutex;
  uint64_t owner = 0;
  cudaEvent_t uploaded = nullptr;                       // after the resident table's upload
  std::vector<std::pair<StreamHandle, cudaEvent_t>> readers;  // per stream: after its last launch
};

ConstantBank &constant_bank(int device) {
  static std::mutex mutex;
  // Never destroyed: its events may outlive the CUDA context at exit.
  static auto *banks = new std::map<int, ConstantBank>();
  std::lock_guard<std::mutex> lock(mutex);
  return (*banks)[device];
}

uint64_t next_classifier_id() {
  static std::mutex mutex;
  static uint64_t id = 0;
  std::lock_guard<std::mutex> lock(mutex);
  return ++id;
}

}  // namespace

struct CudaSpectralClassifier::Impl {
  SpectralClassifier host;
  int device;
  uint64_t id;
  bool in_constant;
  float *table = nullptr;
  int *bands = nullptr;
  // The BIP tensor kernel's tables (tensor precision; sid on wgmma only,
  // contiguous bands), prepared once here; first_band < 0 when unused.
  int first_band = -1;
  bip_tensor::DeviceTables bip;
  bool bip_enabled = true;
  int sm_count = 0;
  size_t max_shared_bytes = 0;

  Impl(const SpectralClassifier &c, int dev)
      : host(c), device(dev), id(next_classifier_id()), in_constant(c.table().size() <= kConstantTableFloats) {}

  void free_device_memory() {
    for (const void *p : {static_cast<const void *>(table), static_cast<const void *>(bands),
                          bip.fragments, static_cast<const void *>(bip.dot_scale),
                          static_cast<const void *>(bip.key_scale), static_cast<const void *>(bip.key_offset),
                          static_cast<const void *>(bip.key_inverse),
                          static_cast<const void *>(bip.screen_references),
                          static_cast<const void *>(bip.screen_terms), static_cast<const void *>(bip.screen_mean),
                          static_cast<const void *>(bip.screen_pair_weights),
                          static_cast<const void *>(bip.positions),
                          static_cast<const void *>(bip.sid_terms)})
      if (p) device_free(const_cast<void *>(p), device);
  }

  // Uploads the BIP tensor kernel's tables when the classifier can use it.
  void prepare_bip_tensor() {
    if (host.precision() != Precision::tensor) return;
    const int first = bip_tensor::contiguous_first_band(host.bands());
    if (first < 0) return;
    int shared_optin = 0;
    cs::check_cuda(cudaDeviceGetAttribute(&sm_count, cudaDevAttrMultiProcessorCount, device), "count SMs");
    cs::check_cuda(cudaDeviceGetAttribute(&shared_optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device),
                   "query shared memory per block");
    max_shared_bytes = size_t(shared_optin);
    bip_tensor::Product product = bip_tensor::product_from_environment();
    // wgmma needs an sm_90a build on a 9.0 device, and every group's
    // references in shared memory next to f32 staging; else the fp16 form.
    if (product == bip_tensor::Product::wgmma &&
        (!bip_tensor::wgmma_available(device) ||
         !bip_tensor::stages_for(DataType::f32, bip_tensor::product_chunks_for(host.method(), host.table_shape()),
                                 max_shared_bytes, product, bip_tensor::groups_for(host.table_shape()))))
      product = bip_tensor::Product::fp16x3;
    // sid's two products run on wgmma only: elsewhere the generic kernel.
    if (!dot_product_method(host.method()) && product != bip_tensor::Product::wgmma) return;
    // The screen's bounds are tighter where the tensor cores are known to truncate float operands.
    const Tf32Reading reading =
        product == bip_tensor::Product::wgmma ? bip_tensor::tf32_reading(device) : Tf32Reading::unknown;
    const bip_tensor::Tables t =
        bip_tensor::make_tables(host.method(), host.table(), host.table_shape(), product, reading);
    // Too many bands for the references to stay in shared memory even with
    // 16-bit samples: the generic kernel.
    if (!bip_tensor::stages_for(DataType::i16, t.chunks, max_shared_bytes, product, t.groups)) return;
    auto upload = [&](const void *src, size_t bytes, const char *what) {
      void *dst = device_alloc(bytes, device);
      const cudaError_t status = cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice);
      if (status != cudaSuccess) device_free(dst, device);
      cs::check_cuda(status, what);
      return dst;
    };
    bip.product = product;
    if (product != bip_tensor::Product::tf32x3) {
      if (product == bip_tensor::Product::wgmma)
        bip.fragments = upload(t.wgmma_references.data(), t.wgmma_references.size() * sizeof(uint16_t),
                               "upload BIP tensor references");
      else
        bip.fragments = upload(t.half_fragments.data(), t.half_fragments.size() * sizeof(uint32_t),
                               "upload BIP tensor fragments");
      bip.dot_scale = static_cast<const double *>(
          upload(t.dot_scale.data(), t.dot_scale.size() * sizeof(double), "upload BIP tensor scales"));
    } else {
      bip.fragments = upload(t.fragments.data(), t.fragments.size() * sizeof(float), "upload BIP tensor fragments");
    }
    bip.key_scale = static_cast<const double *>(
        upload(t.key_scale.data(), t.key_scale.size() * sizeof(double), "upload BIP tensor keys"));
    bip.key_offset = static_cast<const double *>(
        upload(t.key_offset.data(), t.key_offset.size() * sizeof(double), "upload BIP tensor keys"));
    std::vector<double> key_inverse(t.key_scale.size());
    for (size_t k = 0; k < key_inverse.size(); ++k) key_inverse[k] = 1.0 / t.key_scale[k];  // NaN stays NaN
    bip.key_inverse = static_cast<const double *>(
        upload(key_inverse.data(), key_inverse.size() * sizeof(double), "upload BIP tensor keys"));
    // The screen: f32 tiles of every selected band next to the references.
    // Only with three tiles per SM (up to 224 bands): with two (288 bands)
    // and one (425) it was slower than the wgmma kernel on an H200 (1533
    // against 1709 GB/s, 786 against 1202, sam).
    if (!t.screen_references.empty() && bip_tensor::screen_from_environment()) {
      bip.screen_warpgroups = bip_tensor::screen_warpgroups_for(host.table_shape().bands, max_shared_bytes);
      if (bip.screen_warpgroups < bip_tensor::kScreenMostWarpgroups) bip.screen_warpgroups = 0;
      if (bip.screen_warpgroups > 0) {
        bip.screen_references = static_cast<const float *>(upload(
            t.screen_references.data(), t.screen_references.size() * sizeof(float), "upload BIP screen references"));
        bip.screen_largest_norm2 = t.screen_largest_norm2;
        bip.screen_common_weight = t.screen_common_weight;
        bip.screen_terms = static_cast<const float *>(
            upload(t.screen_terms.data(), t.screen_terms.size() * sizeof(float), "upload BIP screen terms"));
        bip.screen_pair_weights = static_cast<const float *>(upload(t.screen_pair_weights.data(),
                                                                   t.screen_pair_weights.size() * sizeof(float),
                                                                   "upload BIP screen pair bounds"));
        if (!t.screen_mean.empty())
          bip.screen_mean = static_cast<const float *>(
              upload(t.screen_mean.data(), t.screen_mean.size() * sizeof(float), "upload BIP screen mean"));
      }
    }
    if (!t.positions.empty())
      bip.positions = static_cast<const float *>(
          upload(t.positions.data(), t.positions.size() * sizeof(float), "upload BIP tensor band positions"));
    if (!t.sid_terms.empty())
      bip.sid_terms = static_cast<const double *>(
          upload(t.sid_terms.data(), t.sid_terms.size() * sizeof(double), "upload BIP tensor sid terms"));
    bip.table = table;
    bip.shape = host.table_shape();
    bip.groups = t.groups;
    bip.chunks = t.chunks;
    first_band = first;
  }

  // How the BIP tensor kernel would run this block: bytes per copy and
  // staging buffers; copy_bytes 0 when it does not apply.
  struct BipPlan {
    int copy_bytes = 0, stages = 0;
  };
  BipPlan bip_plan(const CubeBlock &block) const {
    BipPlan plan;
    if (first_band < 0 || !bip_enabled) return plan;
    if (host.method() == Method::sid && !bip_tensor::sid_floor_is_normal(block)) return plan;
    plan.stages = bip_tensor::stages_for(block.format.type, bip.chunks, max_shared_bytes, bip.product, bip.groups);
    if (plan.stages) plan.copy_bytes = bip_tensor::copy_bytes_for(block, first_band, host.table_shape().bands);
    return plan;
  }
};

CudaSpectralClassifier::CudaSpectralClassifier(const SpectralClassifier &classifier, int device)
    : impl_(std::make_unique<Impl>(classifier, device)) {
  DeviceGuard guard(device);
  const std::vector<float> &table = classifier.table();
  const std::vector<int> &bands = classifier.bands();
  impl_->table = static_cast<float *>(device_alloc(table.size() * sizeof(float), device));
  try {
    impl_->bands = static_cast<int *>(device_alloc(bands.size() * sizeof(int), device));
    cs::check_cuda(cudaMemcpy(impl_->table, table.data(), table.size() * sizeof(float), cudaMemcpyHostToDevice),
               "upload reference table");
    cs::check_cuda(cudaMemcpy(impl_->bands, bands.data(), bands.size() * sizeof(int), cudaMemcpyHostToDevice),
               "upload band list");
    impl_->prepare_bip_tensor();
  } catch (...) {
    impl_->free_device_memory();
    throw;
  }
}

CudaSpectralClassifier::~CudaSpectralClassifier() {
  if (!impl_) return;
  impl_->free_device_memory();
}

CudaSpectralClassifier::Kernel CudaSpectralClassifier::kernel_for(const CubeBlock &block) const {
  const SpectralClassifier &host = impl_->host;
  if (host.precision() != Precision::tensor) return Kernel::per_pixel;
  return impl_->bip_plan(block).copy_bytes ? Kernel::tensor_bip : Kernel::tensor;
}

void CudaSpectralClassifier::set_bip_tensor_enabled(bool enabled) { impl_->bip_enabled = enabled; }

const char *CudaSpectralClassifier::bip_tensor_product() const {
  return impl_->first_band < 0 ? "" : bip_tensor::product_name(impl_->bip.product);
}

bool CudaSpectralClassifier::screens(const CubeBlock &block, const ClassificationOutput &output) const {
  return kernel_for(block) == Kernel::tensor_bip &&
         bip_tensor::uses_screen(impl_->host.method(), impl_->bip, block.format.type,
                                 impl_->bip_plan(block).copy_bytes, output);
}

bool CudaSpectralClassifier::table_in_constant_memory() const { return impl_->in_constant; }
int CudaSpectralClassifier::device() const { return impl_->device; }

// The kernels take the threshold with each launch.
void CudaSpectralClassifier::set_threshold(double threshold) { impl_->host.set_threshold(threshold); }

void CudaSpectralClassifier::classify(const CubeBlock &block, const ClassificationOutput &output,
                                      StreamHandle stream) {
  const SpectralClassifier &host = impl_->host;
  host.check_block(block, output);
  const size_t pixels = block.layout.pixels();
  if (pixels == 0) return;
  if (reinterpret_cast<uintptr_t>(block.data) % sample_size(block.format.type) != 0)
    throw std::invalid_argument("device block is not aligned to its sample size");
  if (output.class_map_format == ClassMapFormat::gray16 && reinterpret_cast<uintptr_t>(output.class_map) % 2 != 0)
    throw std::invalid_argument("16-bit class map is not 2-byte aligned");
  DeviceGuard guard(impl_->device);
  if (const ClassMapPadding padding = class_map_padding(output, block.layout.samples); padding.bytes)
    cs::check_cuda(cudaMemset2DAsync(static_cast<unsigned char *>(output.class_map) + padding.offset,
                                     output.class_map_stride, 0, padding.bytes, block.layout.lines, stream),
                   "zero the class map's line padding");

  KernelArgs args;
  args.data = block.data;
  args.format = block.format;
  args.layout = block.layout;
  args.bands = impl_->bands;
  args.table = impl_->table;
  args.shape = host.table_shape();
  args.threshold = float(host.threshold());
  args.class_map = ClassMapTarget::of(output, block.layout.samples);
  args.rule_images = output.rule_images;
  const unsigned grid = unsigned((pixels + kPixelsPerBlock - 1) / kPixelsPerBlock);

  if (host.precision() == Precision::tensor) {
    if (const Impl::BipPlan plan = impl_->bip_plan(block); plan.copy_bytes) {
      bip_tensor::classify(host.method(), impl_->bip, block, impl_->first_band, plan.copy_bytes, plan.stages,
                           args.threshold, output, args.class_map, impl_->sm_count, stream);
      return;
    }
    // Reads the table from global memory: no constant bank to share.
    const unsigned gemm_grid = unsigned((pixels + kGemmPixels - 1) / kGemmPixels);
    with_data_type(block.format.type, [&](auto type) {
      switch (host.method()) {
        case Method::sam:
          classify_gemm_kernel<Method::sam, decltype(type)::value><<<gemm_grid, kGemmThreads, 0, stream>>>(args);
          break;
        case Method::correlation:
          classify_gemm_kernel<Method::correlation, decltype(type)::value>
              <<<gemm_grid, kGemmThreads, 0, stream>>>(args);
          break;
        case Method::bandfit:
          classify_gemm_kernel<Method::bandfit, decltype(type)::value><<<gemm_grid, kGemmThreads, 0, stream>>>(args);
          break;
        case Method::sid:
          classify_gemm_kernel<Method::sid, decltype(type)::value><<<gemm_grid, kGemmThreads, 0, stream>>>(args);
          break;
        default:
          classify_gemm_kernel<Method::euclidean, decltype(type)::value><<<gemm_grid, kGemmThreads, 0, stream>>>(args);
      }
    });
    cs::check_cuda(cudaGetLastError(), "classify (tensor) kernel launch");
    return;
  }

  auto launch = [&](auto in_constant) {
    with_method(host.method(), [&](auto method) {
      with_data_type(block.format.type, [&](auto type) {
        with_precision(host.precision(), [&](auto precision) {
          classify_kernel<decltype(method)::value, decltype(type)::value, decltype(in_constant)::value,
                          AccumulatorOf<decltype(precision)::value>><<<grid, kPixelsPerBlock, 0, stream>>>(args);
        });
      });
    });
    cs::check_cuda(cudaGetLastError(), "classify kernel launch");
  };

  if (!impl_->in_constant) {
    launch(std::false_type{});
    return;
  }
  ConstantBank &bank = constant_bank(impl_->device);
  std::lock_guard<std::mutex> lock(bank.mutex);
  if (bank.owner != impl_->id) {
    for (auto &[reader_stream, done] : bank.readers) {
      cs::check_cuda(cudaStreamWaitEvent(stream, done, 0), "wait for the previous constant-table readers");
      cudaEventDestroy(done);
    }
    bank.readers.clear();
    if (!bank.uploaded) cs::check_cuda(cudaEventCreateWithFlags(&bank.uploaded, cudaEventDisableTiming), "create event");
    cs::check_cuda(cudaMemcpyToSymbolAsync(c_reference_table, impl_->table, host.table().size() * sizeof(float), 0,
                                       cudaMemcpyDeviceToDevice, stream),
               "upload references to constant memory");
    cs::check_cuda(cudaEventRecord(bank.uploaded, stream), "record constant upload");
    bank.owner = impl_->id;
  }
  cs::check_cuda(cudaStreamWaitEvent(stream, bank.uploaded, 0), "wait for the constant upload");
  launch(std::true_type{});
  cudaEvent_t *done = nullptr;
  for (auto &[reader_stream, event] : bank.readers)
    if (reader_stream == stream) done = &event;
  if (!done) {
    bank.readers.emplace_back(stream, nullptr);
    done = &bank.readers.back().second;
    cs::check_cuda(cudaEventCreateWithFlags(done, cudaEventDisableTiming), "create event");
  }
  cs::check_cuda(cudaEventRecord(*done, stream), "record constant-table use");
}

}  // namespace cs::hsi
