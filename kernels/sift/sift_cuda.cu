// CUDA SIFT: thin kernels around the math of sift_math.h.
//
// Pyramid. One kernel per Gaussian level of the large octaves (the small
// ones: small_octaves_kernel, one launch for all): a 32 x 64 (columns x rows) output
// tile plus a halo of the kernel radius R is staged in shared memory
// (reflect-101 indices), the horizontal pass writes (64 + 2R) x 32
// intermediate values to shared memory, the vertical pass produces the
// tile. No DoG level is stored: detection subtracts the Gaussian levels
// where it reads them (the subtraction OpenCV stores), which saves a third
// of the pyramid's writes; the extrema kernel reads six Gaussian levels
// instead of five DoG levels. Per output pixel: 4 B read (plus the halo, served
// mostly by L2), 4 B written, (R + 1) * 2 multiplies and 4R adds; with
// OpenCV's defaults R <= 13. A level of octave 0 of a 1080p frame (3840 x
// 2160 = 8.3 Mpx) moves 8.3 Mpx x 8 B = 66 MB of DRAM (17 us at 4 TB/s);
// octave 0 in all: level 0 reads the 2 MB input and writes 33 MB, levels
// 1..5 read 33 MB and write 33 MB each: ~370 MB, a floor of ~90 us at 4
// TB/s. A level measured ~50 us with 32 x 32 tiles on an H200:
// shared-memory traffic and issue bind, hence the register blocking of
// both passes and the taller tile (kTileRows). Level 0 of the octaves after
// the first is not blurred: level 1's loader takes every second sample of
// the octave below, and stores them as level 0. Level 0 of the doubled
// octave is summed straight from the input (doubled_level0_kernel: the
// blur of the bilinear doubling as one sum per axis); CS_SIFT_UPSAMPLE=kernel
// writes the doubled input into the top level's plane before the octave's
// last blur writes it (upsample_kernel) and blurs it, CS_SIFT_UPSAMPLE=staged
// samples the input bilinearly while level 0's tiles are staged.
//
// Detection. One launch over all octaves finds the extrema of every DoG
// layer (separable bounds of each sample's 3 x 3 x 3 neighbourhood; see
// extrema_kernel) and appends them to a dense candidate list
// with warp-aggregated atomics (one atomicAdd per warp). Refinement
// runs one thread per candidate over that dense list (full warps instead of
// one thread in a thousand per pixel), appending survivors to a second dense
// list. Orientation runs one warp per refined extremum: each lane bins its
// share of the window into its own column of a per-warp 36 x 32 shared
// histogram (no atomics, bank-conflict free), the columns are summed in a
// fixed order, so the histogram is deterministic. The keypoints are put in
// canonical order by a rank sort (each keypoint counts those before it;
// O(n^2) compares staged through shared memory, a few microseconds for the
// thousands of keypoints of a video frame), then one block removes
// duplicates and applies n-features, all from device-side counts: nothing
// waits for the host.
//
// Description. One block of 128 threads per keypoint bins its rotated
// window (up to ~6000 samples) into four 360-bin shared histograms with
// native integer shared atomics on fixed-point values (deterministic; float
// atomics with CS_SIFT_DESCRIPTOR=float), then one warp normalises with
// shuffles (four elements per lane).
//
// Launches. A 1080p frame was ~60 operations (10 octaves of 5 blur launches,
// 6 for the first; 2 memsets and 6 kernels for detection; 1 for
// description), most of them small: at ~5 us of fixed cost each they made
// ~0.2 ms of the frame. The small octaves (those of at most 1/1024 of the
// first octave's pixels or 4096 pixels: 120 x 67 .. 30 x 16 at 1080p) are one
// cluster launch (small_octaves_kernel), so a 1080p pyramid is 27 launches
// instead of 51 (640 x 480: 27 instead of 46). All but the first are replayed from CUDA
// graphs (see CudaSift::Impl::replay): four host calls per frame (level 0,
// pyramid graph, detection graph, description graph). No launch depends on
// a count read by the host: list kernels size their grids for the GPU and
// read the device counters.
#include <cooperative_groups.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "common/cuda_check.h"
#include "common/device_resources.h"
#include "common/dependent_launch.cuh"
#include "sift/frame_plan.h"
#include "sift/sift_cuda.h"
#include "sift/sift_math.h"

namespace cs::sift {

namespace {

constexpr int kMaxOctaves = 20;
constexpr int kMaxBaseSide = 32767;  // first-octave side limit that sift_cuda.h documents
// Blur tile: 32 output columns (one per lane) by kTileRows output rows.
// Taller than wide because only the horizontal pass computes halo rows:
// per output, the horizontal pass makes (kTileRows + 2R) / kTileRows outputs
// and the staging loads (32 + 2R)(kTileRows + 2R) / (32 kTileRows) samples;
// at R = 13 (octave 0's top level) 1.41 and 2.55 with 64 rows against 1.81
// and 3.29 with 32 (a 32 x 32 tile). Costs shared memory (34.5 KB a block at
// R = 13 against 22 KB: 6 blocks per SM instead of 8). Set kTileRows = 32
// to get the square tile back; nothing else depends on it.
constexpr int kTileColumns = 32;
constexpr int kTileRows = 64;
// Levels of few tiles (below kShortTilesBelow blocks an SM with 64 rows:
// the octaves after the first few) read from a float plane take tiles of
// kShortTileRows instead (the same sums, so the same levels): their
// time is a block's latency, not the GPU's throughput, and they run beside
// the first octave's large levels, which share the SMs' issue slots with
// them, so a block of half the rows ends sooner (the chain of small levels
// decides the frame at 640 x 480 and shares the critical path at 1080p).
// H200, 2026-12-01, three rounds of 300 frames against 64 rows
// throughout: 640 x 480 0.1679-0.1692 -> 0.1635-0.1647 ms, 1280 x 720
// 0.2689-0.2738 -> 0.2673-0.2692, 1080p 0.4058-0.4096 -> 0.4037-0.4060,
// 4K equal; 16 rows (1080p 0.4066-0.4077), or 32 rows below 8 blocks an
// SM (0.4087-0.4116), were slower.
constexpr int kShortTileRows = 32;
constexpr int kShortTilesBelow = 4;
constexpr int kBlurRows = 8;  // thread rows of a blur block (32 x 8 threads)
constexpr int kThreads = 256;
constexpr int kWarpsPerBlock = kThreads / 32;

struct Candidate {
  int octave, layer, row, column;
};

// The extrema prefilter (run(): levels 2 .. n_layers + 1 of octave 0 and
// of the later octaves built level by level). The blur that makes
// Gaussian level L + 1 holds level L's tile (staged) and level L + 1's
// (its outputs): DoG layer L of the tile, G(L + 1) - G(L) in
// float, the subtraction every extremum test makes. A DoG sample equal to
// the bound of its 3 x 3 x 3 neighbourhood equals the bound of any part of
// it (NaN included: max_or_nan), so only samples that pass is_extremum over
// their layer's 3 x 3 samples inside the tile can be extrema. The blur lists
// those (on natural pictures about 0.2 % of octave 0's samples at 1080p,
// 0.06 % at 4K) and prefiltered_extrema_kernel tests each over all 27,
// instead of a dense pass over the octave's six levels (209 MB read at
// 1080p).
struct ExtremaPrefilter {
  Candidate *hits = nullptr;  // null: the launch lists nothing
  int capacity = 0;
  int *count = nullptr;
  int octave = 0, layer = 0;  // layer: the DoG layer the launch makes, its level minus 1
  float threshold = 0.f;
};

struct OctaveGeometry {
  int width, height, pitch;
  size_t level_stride;  // elements between levels
  size_t gauss_offset;        // elements from the pool start
  int block_begin, blocks_x;  // extrema launch: first block, blocks per row of strips
  int strip_rows;             // extrema launch: rows a warp tests
};

struct OctaveTable {
  OctaveGeometry o[kMaxOctaves];
  int count;
  int layers;  // n_layers
};

// The oriented keypoints are described largest windows first, so that the
// descriptor grid ends on small ones: orientation puts each in one of these
// buckets by the size of its window (describe_bucket). H200, 1080p, Nsight
// Compute: the descriptor kernel 61.0 -> 55.7 us with two buckets, 56.8 ->
// 53.7 from two to four (another run); eight were no faster than four.
constexpr int kDescribeBuckets = 4;

struct Counters {
  int candidates, refined, oriented, final_count;
  int prefiltered;  // samples listed by the extrema prefilter (ExtremaPrefilter)
  int duplicates;  // oriented keypoints dropped as duplicates (rank_count_kernel)
  int windows[kDescribeBuckets];  // oriented keypoints in each of describe_order's buckets
};

// ------------------------------------------------------------- pyramid

// Where the blur kernel stages its tile from. The staging resolves each
// tile column once (`column`) and each row once per row (`row`), so a
// sample is only the loads: for the doubled input that halves level 0's
// instructions (the bilinear taps used to be worked out for every sample).
template <typename T>
struct UpsampleSource {
  const T *p;
  size_t pitch;
  int w, h;
  using Column = UpsampleTap;
  struct Row {
    const T *a, *b;
    float w;
  };
  __device__ Column column(int x) const { return upsample_tap(x, w); }
  __device__ Row row(int y) const {
    const UpsampleTap t = upsample_tap(y, h);
    return {image_row(p, pitch, t.a), image_row(p, pitch, t.b), t.w};
  }
  __device__ float operator()(const Row &r, const Column &c) const { return upsampled_sample(r.a, r.b, r.w, c); }
};

template <typename T>
struct PlainSource {
  const T *p;
  size_t pitch;
  using Column = int;
  using Row = const T *;
  __device__ Column column(int x) const { return x; }
  __device__ Row row(int y) const { return image_row(p, pitch, y); }
  __device__ float operator()(Row r, Column x) const { return luma_sample(r + x); }
};

struct LevelSource {
  static constexpr bool kFloatPlane = true;  // staged by cp.async (blur_level_kernel)
  // Unit stride, and rows 16-byte aligned: pitches are multiples of 32
  // floats, and levels lie multiples of a pitch apart in their pools.
  static constexpr bool kAlignedRows = true;
  const float *p;
  int pitch;
  bool quads;  // stage interior tiles in 16-byte pieces (CS_SIFT_STAGE=floats: false, for comparison)
  using Column = int;
  using Row = const float *;
  __device__ Column column(int x) const { return x; }
  __device__ Row row(int y) const { return p + static_cast<size_t>(y) * pitch; }
};

// The doubled input as floats (upsampled_sample). Output rows 2s, 2s + 1
// and columns 8t .. 8t + 7 (one thread) need source rows s - 1 .. s + 1 and
// columns 4t - 1 .. 4t + 4 (clamped): each source sample is loaded once
// and each row's horizontal interpolation made once for both output rows
// that use it, then two float4 stores a row. Before, a thread made 8
// outputs of one row, each from four loads of its own (66 instructions an
// output, 26 us at 1080p for a 33 MB write).
constexpr int kUpsampleColumns = 8;  // outputs per thread and row
template <typename T>
__global__ void __launch_bounds__(kThreads) upsample_kernel(const T *src, size_t pitch_bytes, int width, int height,
                                                            float *out, int out_pitch) {
  begin_dependent_grid();  // may be launched under the previous kernel's tail
  const int s = static_cast<int>(blockIdx.y * blockDim.y + threadIdx.y);
  const int x0 = kUpsampleColumns * static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (s >= height || x0 >= 2 * width) return;
  // Horizontal interpolations of source rows s - 1, s, s + 1 (clamped) at the 8 output columns.
  float across[3][kUpsampleColumns];
#pragma unroll
  for (int r = 0; r < 3; ++r) {
    const T *row = image_row(src, pitch_bytes, clamp_index(s - 1 + r, height));
    float v[kUpsampleColumns / 2 + 2];  // columns 4t - 1 .. 4t + 4
#pragma unroll
    for (int k = 0; k < kUpsampleColumns / 2 + 2; ++k) v[k] = luma_sample(row + clamp_index(x0 / 2 - 1 + k, width));
#pragma unroll
    for (int q = 0; q < kUpsampleColumns; ++q) {
      // upsample_tap(x0 + q): source columns 4t + ((q - 1) >> 1) and the
      // next, v[(q + 1) >> 1] and the one after (clamped as loaded).
      across[r][q] = upsample_mix(v[(q + 1) >> 1], v[((q + 1) >> 1) + 1], upsample_tap(x0 + q, width).w);
    }
  }
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    const int y = 2 * s + half;
    const UpsampleTap ty = upsample_tap(y, height);  // rows s - 1, s (y even) or s, s + 1 (y odd)
    const float *top = across[half], *bottom = across[half + 1];
    float o[kUpsampleColumns];
#pragma unroll
    for (int q = 0; q < kUpsampleColumns; ++q) o[q] = upsample_mix(top[q], bottom[q], ty.w);
    float4 *row = reinterpret_cast<float4 *>(out + static_cast<size_t>(y) * out_pitch + x0);
    row[0] = make_float4(o[0], o[1], o[2], o[3]);  // the pitch is a multiple of 32: past 2 width is padding
    row[1] = make_float4(o[4], o[5], o[6], o[7]);
  }
}

// Level 0 of the doubled octave straight from the input
// (doubling_blur_axis in sift_math.h), instead of doubling the input into a
// plane and blurring that: a 32 x 128 output tile needs at most
// (16 + K) x (64 + K) source samples, staged as floats; the
// horizontal pass sums K of them per output column for each staged row, the
// vertical pass K of those per output. Per output ~2K multiply-adds (K = 7
// with OpenCV's defaults) against the doubling's 3 and the blur's 2 x 11,
// and 4 B written instead of the doubled plane's 4 B written, 4 B read and
// the level's 4 B written. The coefficients come from per-size tables,
// K per output column and row. Away from the borders the rows' sums repeat
// with their parity (DoublingBlurAxis::interior_begin): a thread's 16 rows
// then read their 7 + K staged rows once and take two weight sets into
// registers (the generic rows, each with its own first row and weights
// from shared memory, were 45 of the kernel's 91 instructions per output
// at 1080p). H200 (2026-12-01), each kernel alone: 18.1 us at 1280 x 720
// against 11.6 + 16.8 for the doubling and level 0's blur, 1080p 31.9
// against 21.1 + 29.6, 4K 102.7 against 68 + 100. The horizontal pass of
// interior tiles two columns a thread (a pair reads the same K samples)
// was slower (32.9 and 111 us), not kept. Tiles of 128 rows instead of 64
// (the block's prologue and the staged halo rows over twice the outputs):
// 31.2 against 31.9 us at 1080p, frames 1080p 0.4258-0.4260 ->
// 0.4232-0.4252 ms, 4K 1.2543-1.2564 -> 1.2463-1.2482, 640 x 480 and
// 1280 x 720 within the rounds' spread. CS_SIFT_UPSAMPLE=kernel doubles
// into a plane and blurs it instead.
struct DoublingTables {
  const int *first_x, *first_y;      // per output column / row: its first source column / row
  const float *weight_x, *weight_y;  // K per output column / row
  int rows_begin, rows_end;          // the interior rows (DoublingBlurAxis::interior_begin, _end)
};
constexpr int kMaxDoublingTaps = 16;  // a staged row is one sample per lane: 16 + K <= 32
constexpr int kDoubledTileRows = 128;  // output rows of a tile: 16 a thread

template <typename T, int K>
__global__ void __launch_bounds__(kThreads) doubled_level0_kernel(const T *src, size_t pitch_bytes,
                                                                  const DoublingTables d, float *out, int out_pitch,
                                                                  int out_width, int out_height) {
  static_assert(kTileColumns / 2 + K <= 32, "a staged row is one sample per lane");
  constexpr int kRows = kDoubledTileRows / 2 + K;  // staged source rows, at most
  __shared__ float staged[kRows][32];
  __shared__ float across[kRows][kTileColumns];  // after the horizontal pass
  __shared__ float row_weights[kDoubledTileRows][K];
  begin_dependent_grid();  // may be launched under the previous kernel's tail
  const int x0 = static_cast<int>(blockIdx.x) * kTileColumns, y0 = static_cast<int>(blockIdx.y) * kDoubledTileRows;
  const int tx = static_cast<int>(threadIdx.x), ty = static_cast<int>(threadIdx.y);
  const int x_last = min(x0 + kTileColumns - 1, out_width - 1);
  const int y_last = min(y0 + kDoubledTileRows - 1, out_height - 1);
  const int column_base = __ldg(d.first_x + x0), row_base = __ldg(d.first_y + y0);
  const int columns = __ldg(d.first_x + x_last) + K - column_base;
  const int rows = __ldg(d.first_y + y_last) + K - row_base;
  // Every row's sample loaded before any is stored, so that the loads'
  // latencies overlap. A loop of load, convert, store made each wait for
  // the last (half the kernel's stall samples); frames 1080p 0.4107-0.4144
  // -> 0.4058-0.4096 ms, 4K 1.169-1.175 -> 1.158-1.163 (H200, 2026-12-01).
  constexpr int kStageRounds = (kRows + kBlurRows - 1) / kBlurRows;
  float samples[kStageRounds];
#pragma unroll
  for (int k = 0; k < kStageRounds; ++k) {
    const int r = ty + k * kBlurRows;
    samples[k] = r < rows && tx < columns ? luma_sample(image_row(src, pitch_bytes, row_base + r) + column_base + tx)
                                          : 0.f;
  }
#pragma unroll
  for (int k = 0; k < kStageRounds; ++k)
    if (ty + k * kBlurRows < kRows) staged[ty + k * kBlurRows][tx] = samples[k];
  // A tile of interior rows takes their two weight sets into registers (below); the others stage every row's.
  const bool interior_rows = y0 >= d.rows_begin && y0 + kDoubledTileRows <= d.rows_end;
  if (!interior_rows)
    for (int i = ty * kTileColumns + tx; i < kDoubledTileRows * K; i += kThreads)
      row_weights[i / K][i % K] = y0 + i / K <= y_last ? __ldg(d.weight_y + static_cast<size_t>(y0) * K + i) : 0.f;
  const int x = min(x0 + tx, x_last);  // lanes past the image repeat the last column (not stored)
  float column_weights[K];
#pragma unroll
  for (int k = 0; k < K; ++k) column_weights[k] = __ldg(d.weight_x + static_cast<size_t>(x) * K + k);
  const int column = __ldg(d.first_x + x) - column_base;
  __syncthreads();
  for (int r = ty; r < rows; r += kBlurRows)
    across[r][tx] = doubling_blur_sum(column_weights, &staged[r][column], 1, K);
  __syncthreads();
  if (x0 + tx > x_last) return;
  constexpr int kRowsPerThread = kDoubledTileRows / kBlurRows;
  if (interior_rows) {
    // Rows y0 + 16 ty + q sum staged rows 8 ty + q / 2 onwards (y0 is even):
    // the thread's 7 + K of them loaded once, the weights by the row's parity.
    float even[K], odd[K], v[kRowsPerThread / 2 - 1 + K];
#pragma unroll
    for (int k = 0; k < K; ++k) {
      even[k] = __ldg(d.weight_y + static_cast<size_t>(y0) * K + k);
      odd[k] = __ldg(d.weight_y + static_cast<size_t>(y0 + 1) * K + k);
    }
#pragma unroll
    for (int j = 0; j < kRowsPerThread / 2 - 1 + K; ++j) v[j] = across[kRowsPerThread / 2 * ty + j][tx];
    float *at = out + static_cast<size_t>(y0 + kRowsPerThread * ty) * out_pitch + x;
#pragma unroll
    for (int q = 0; q < kRowsPerThread; ++q)
      at[static_cast<size_t>(q) * out_pitch] = doubling_blur_sum(q & 1 ? odd : even, &v[q / 2], 1, K);
    return;
  }
  for (int q = 0; q < kRowsPerThread; ++q) {
    const int row = ty * kRowsPerThread + q, y = y0 + row;
    if (y > y_last) break;
    const int first = __ldg(d.first_y + y) - row_base;
    out[static_cast<size_t>(y) * out_pitch + x] =
        doubling_blur_sum(row_weights[row], &across[first][tx], kTileColumns, K);
  }
}

template <typename T, int... Ks>
void dispatch_doubled_level0(std::integer_sequence<int, Ks...>, int taps, const T *src, size_t pitch_bytes,
                             const DoublingTables &d, float *out, int out_pitch, int out_width, int out_height,
                             cudaStream_t stream, bool overlap_previous) {
  using Kernel = void (*)(const T *, size_t, DoublingTables, float *, int, int, int);
  static constexpr Kernel kernels[] = {&doubled_level0_kernel<T, Ks + 1>...};
  const dim3 grid((out_width + kTileColumns - 1) / kTileColumns,
                  (out_height + kDoubledTileRows - 1) / kDoubledTileRows),
      block(kTileColumns, kBlurRows);
  launch_kernel("SIFT doubled level 0 kernel", kernels[taps - 1], grid, block, 0, stream, overlap_previous, src,
                pitch_bytes, d, out, out_pitch, out_width, out_height);
}

// Radii with an unrolled kernel (OpenCV's defaults need 5..13); wider ones
// take the generic kernel.
constexpr int kMaxUnrolledRadius = 16;

// A staged tile row starts `stage_lead(R)` columns left of the tile: for the
// unrolled radii R rounded up to a multiple of 4, so that the rows of a float
// plane are copied in aligned 16-byte pieces (see blur_level_kernel), for the
// generic kernel R itself. Rows are padded to a multiple of 4 floats (plus
// 4), so that the horizontal pass can read aligned float4 runs.
__host__ __device__ constexpr int stage_lead(int radius) {
  return radius <= kMaxUnrolledRadius ? (radius + 3) / 4 * 4 : radius;
}
__host__ __device__ constexpr int staged_pitch(int radius) {
  return (kTileColumns + 2 * stage_lead(radius) + 4 + 3) / 4 * 4;
}

constexpr size_t blur_shared_bytes(int radius, int tile_rows = kTileRows) {
  const size_t rows = static_cast<size_t>(tile_rows + 2 * radius);
  return (rows * static_cast<size_t>(staged_pitch(radius)) + rows * kTileColumns) * sizeof(float);
}

// Level 1 of octave o > 0 reads level 0 straight from level n_layers of the
// octave below (every second sample); level 0 is stored there by that
// blur, from its staged samples (detection reads it for DoG level 0).
struct DownsampleSource {
  static constexpr bool kFloatPlane = true;
  const float *p;  // level n_layers of octave o - 1
  int pitch;
  using Column = int;
  using Row = const float *;
  __device__ Column column(int x) const { return 2 * x; }
  __device__ Row row(int y) const { return p + static_cast<size_t>(2 * y) * pitch; }
};

// Sources read as float planes are staged with cp.async (sm_80+): every
// row's copy is in flight at once, without registers, where the register
// path loads kStageBatch rows, stores them and loads the next (the staging
// was latency-bound: Nsight Compute's top stall was the shared stores
// waiting for their loads).
template <class Source, class = void>
struct StagedByCopy : std::false_type {};
template <class Source>
struct StagedByCopy<Source, std::void_t<decltype(Source::kFloatPlane)>> : std::bool_constant<Source::kFloatPlane> {};
template <class Source, class = void>
struct AlignedRows : std::false_type {};
template <class Source>
struct AlignedRows<Source, std::void_t<decltype(Source::kAlignedRows)>> : std::bool_constant<Source::kAlignedRows> {};

__device__ __forceinline__ void copy_float_async(float *to, const float *from) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(static_cast<unsigned>(__cvta_generic_to_shared(to))),
               "l"(from)
               : "memory");
#else
  *to = __ldg(from);
#endif
}
// 16 bytes, through L2 only (the halo is shared between blocks, not reused
// within one). sm_80+ only: below, blur tiles are staged in floats
// (kQuadStaging), which copy_float_async loads through registers.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
constexpr bool kQuadStaging = false;
#else
constexpr bool kQuadStaging = true;
#endif
__device__ __forceinline__ void copy_quad_async(unsigned to_shared, const float *from) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(to_shared), "l"(from) : "memory");
#endif
}
__device__ __forceinline__ void wait_async_copies() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_all;\n" ::: "memory");
#endif
}
// The thread's copies issued since its last commit form one group.
__device__ __forceinline__ void commit_async_copies() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.commit_group;\n" ::: "memory");
#endif
}
// Waits until at most `pending` of the thread's committed groups are in flight.
template <int pending>
__device__ __forceinline__ void wait_async_groups() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_group %0;\n" ::"n"(pending) : "memory");
#endif
}

// Staging columns per thread (tile plus halo, 32 lanes) and rows loaded per batch.
constexpr int kStageColumns = (kTileColumns + 2 * kMaxBlurRadius + 31) / 32;
constexpr int kStageBatch = 4;

__device__ int warp_append_counts(int count, int *counter);

// The prefilter's part of a blur block (ExtremaPrefilter): `dog` holds the
// thread's DoG samples of rows y .. y + kRowsPerThread - 1 of column x, the
// thread above's rows end at y - 1 and the one below's start at y +
// kRowsPerThread. Each sample's bound over its 3 x 3 neighbours inside the
// tile is separable: across the row from the neighbour lanes (a warp is a
// row of the tile's columns), then over three rows from the thread's own
// rows, and at its first and last row from the threads above and below
// through `exchange` (free shared memory, 4 x kBlurRows x kTileColumns
// floats). Missing neighbours (past the tile) count as the sample itself.
// No branch per sample (a loop over the in-tile neighbours of each sample
// above the threshold made octave 0's levels far slower: one sample of 32
// sends its warp through it). Every thread of the block calls it.
template <int kRowsPerThread>
__device__ void list_tile_extremum_candidates(const float (&dog)[kRowsPerThread], float *exchange, int x, int y,
                                              int width, int height, const ExtremaPrefilter &prefilter) {
  const int tx = static_cast<int>(threadIdx.x), ty = static_cast<int>(threadIdx.y);
  float hi[kRowsPerThread], lo[kRowsPerThread];  // bounds across the row
#pragma unroll
  for (int q = 0; q < kRowsPerThread; ++q) {
    const float left = __shfl_up_sync(0xffffffffu, dog[q], 1), right = __shfl_down_sync(0xffffffffu, dog[q], 1);
    const float l = tx > 0 ? left : dog[q], r = tx + 1 < kTileColumns ? right : dog[q];
    hi[q] = max_or_nan(max_or_nan(l, dog[q]), r);
    lo[q] = min_or_nan(min_or_nan(l, dog[q]), r);
  }
  constexpr int kPlane = kBlurRows * kTileColumns;
  const int at = ty * kTileColumns + tx;
  exchange[at] = hi[0];
  exchange[kPlane + at] = lo[0];
  exchange[2 * kPlane + at] = hi[kRowsPerThread - 1];
  exchange[3 * kPlane + at] = lo[kRowsPerThread - 1];
  __syncthreads();
  const float above_hi = ty > 0 ? exchange[2 * kPlane + at - kTileColumns] : hi[0];
  const float above_lo = ty > 0 ? exchange[3 * kPlane + at - kTileColumns] : lo[0];
  const float below_hi = ty + 1 < kBlurRows ? exchange[at + kTileColumns] : hi[kRowsPerThread - 1];
  const float below_lo = ty + 1 < kBlurRows ? exchange[kPlane + at + kTileColumns] : lo[kRowsPerThread - 1];
  const bool column_tested = x >= kImageBorder && x < width - kImageBorder;
  unsigned hits = 0;  // bit q: row y + q
#pragma unroll
  for (int q = 0; q < kRowsPerThread; ++q) {
    const float maximum =
        max_or_nan(max_or_nan(q > 0 ? hi[q - 1] : above_hi, hi[q]), q + 1 < kRowsPerThread ? hi[q + 1] : below_hi);
    const float minimum =
        min_or_nan(min_or_nan(q > 0 ? lo[q - 1] : above_lo, lo[q]), q + 1 < kRowsPerThread ? lo[q + 1] : below_lo);
    const bool tested = column_tested && y + q >= kImageBorder && y + q < height - kImageBorder;
    hits |= static_cast<unsigned>(tested && is_extremum(dog[q], prefilter.threshold, maximum, minimum)) << q;
  }
  if (!__any_sync(0xffffffffu, hits != 0)) return;
  int slot = warp_append_counts(__popc(hits), prefilter.count);
  for (; hits != 0; hits &= hits - 1u, ++slot)
    if (slot < prefilter.capacity) prefilter.hits[slot] = {prefilter.octave, prefilter.layer, y + __ffs(hits) - 1, x};
}

// Gaussian level from `src` (the level below, or the input for level 0),
// and, where `source_out` is not null, the staged source samples of the
// tile (level 0 of the octaves after the first: see DownsampleSource).
// No DoG level is stored: detection makes the DoG from the Gaussian levels
// where it reads them (at 1080p, 133 MB less written by octave 0's levels;
// the pyramid 0.337 -> 0.307 ms, H200). Staging: tiles of an aligned float
// plane whose staged rows lie inside the image (all but the outer ring)
// copy them in 16-byte pieces (a quarter of the copies of 4-byte pieces,
// whose address arithmetic was 42 % of the kernel's instructions at R =
// 8); the others resolve the borders once per row and column, and either
// copy floats asynchronously or issue
// kStageBatch x kStageColumns independent loads per thread before storing
// any, so that global latency overlaps (one load at a time per thread made
// the kernel latency-bound).
// upward: the tile rows in reverse block order, bottom to top (blocks start
// in index order), so that a level starts where its source level ended.
// R > 0: the radius at compile time. Loops unroll, and both passes keep a
// run of 4 + 2R inputs in registers to make 4 outputs from it: the
// horizontal pass reads it as float4s from the staged row, the vertical pass
// as a column of the intermediate tile, so each shared load serves up to
// 2R + 1 taps (shared-memory bandwidth bounded the one-output-per-thread
// form). R == 0: any radius (taps.radius), one output per thread and pass.
template <class Source, int R, int TileRows = kTileRows>
__global__ void __launch_bounds__(kThreads) blur_level_kernel(const Source src, const BlurTaps taps, float *gauss,
                                                               float *source_out, int pitch, int width, int height,
                                                               bool upward, const ExtremaPrefilter prefilter) {
  begin_dependent_grid();  // may be launched under the previous kernel's tail
  extern __shared__ float4 shared4[];
  float *shared = reinterpret_cast<float *>(shared4);
  const int r = R > 0 ? R : taps.radius;
  const int lead = stage_lead(r);
  const int side_x = kTileColumns + 2 * r, side_y = TileRows + 2 * r, sp = staged_pitch(r);
  float *in = shared;                 // side_y x sp: staged column c holds source column x0 - lead + c
  float *mid = shared + side_y * sp;  // side_y x kTileColumns: after the horizontal pass
  float *in_halo = in + (lead - r);   // column c: source column x0 - r + c
  const int tile_row = static_cast<int>(upward ? gridDim.y - 1 - blockIdx.y : blockIdx.y);
  const int x0 = static_cast<int>(blockIdx.x) * kTileColumns, y0 = tile_row * TileRows;
  const int tx = static_cast<int>(threadIdx.x), ty = static_cast<int>(threadIdx.y);
  const int tid = ty * kTileColumns + tx;
  constexpr int kColumns = R > 0 ? (kTileColumns + 2 * R + 31) / 32 : kStageColumns;
  // Tiles whose halo stays inside the image (all but the outer ring) skip
  // the reflection, and tiles inside it the clipping of outputs: reflecting
  // every staged row and 64-bit addressing every written output took ~60
  // of ~150 instructions per output at R = 13 (1080p, octave 0).
  const bool interior = x0 >= r && y0 >= r && x0 + kTileColumns + r <= width && y0 + TileRows + r <= height;
  bool staged = false;
  if constexpr (kQuadStaging && R > 0 && AlignedRows<Source>::value) {
    if (src.quads && interior && x0 >= lead && x0 + kTileColumns + lead <= width) {
      // Thread t copies quad t % kQuadsPerRow of rows t / kQuadsPerRow + k
      // kRowStep (the last kThreads % kQuadsPerRow threads idle): a fixed
      // column and fixed steps, so each piece costs its copy and two adds
      // (stepping all kThreads threads through the pieces, wrapping from
      // row to row, took 22 instructions a piece).
      constexpr int kQuadsPerRow = (kTileColumns + 2 * stage_lead(R)) / 4;
      constexpr int kRowStep = kThreads / kQuadsPerRow, kRows = TileRows + 2 * R;
      constexpr int kPitch = staged_pitch(R);
      if (tid < kRowStep * kQuadsPerRow) {
        const int quad = tid % kQuadsPerRow, first_row = tid / kQuadsPerRow;
        unsigned to = static_cast<unsigned>(__cvta_generic_to_shared(in)) +
                      static_cast<unsigned>(first_row * kPitch + 4 * quad) * 4u;
        const float *from = src.row(y0 - r + first_row) + (x0 - lead + 4 * quad);
        const size_t from_step = static_cast<size_t>(kRowStep) * src.pitch;
#pragma unroll
        for (int k = 0; k < (kRows + kRowStep - 1) / kRowStep; ++k) {
          if (k < kRows / kRowStep || first_row + k * kRowStep < kRows) copy_quad_async(to, from);
          to += kRowStep * kPitch * 4u;
          from += from_step;
        }
      }
      wait_async_copies();
      staged = true;
    }
  }
  if (!staged) {
    typename Source::Column gx[kColumns];
#pragma unroll
    for (int k = 0; k < kColumns; ++k) {
      const int sx = x0 - r + tx + 32 * k;
      gx[k] = src.column(interior ? sx : reflect101(sx, width));
    }
    if constexpr (StagedByCopy<Source>::value) {
      for (int row = ty; row < side_y; row += kBlurRows) {
        const int sy = y0 - r + row;
        const typename Source::Row source_row = src.row(interior ? sy : reflect101(sy, height));
#pragma unroll
        for (int k = 0; k < kColumns; ++k)
          if (tx + 32 * k < side_x) copy_float_async(&in_halo[row * sp + tx + 32 * k], source_row + gx[k]);
      }
      wait_async_copies();
    } else {
      for (int row0 = ty; row0 < side_y; row0 += kBlurRows * kStageBatch) {
        float v[kStageBatch][kColumns];
#pragma unroll
        for (int b = 0; b < kStageBatch; ++b) {
          const int row = row0 + b * kBlurRows;
          const int sy = y0 - r + row;
          const typename Source::Row source_row = src.row(interior ? sy : reflect101(sy, height));
#pragma unroll
          for (int k = 0; k < kColumns; ++k)
            v[b][k] = row < side_y && tx + 32 * k < side_x ? src(source_row, gx[k]) : 0.f;
        }
#pragma unroll
        for (int b = 0; b < kStageBatch; ++b) {
          const int row = row0 + b * kBlurRows;
#pragma unroll
          for (int k = 0; k < kColumns; ++k)
            if (row < side_y && tx + 32 * k < side_x) in_halo[row * sp + tx + 32 * k] = v[b][k];
        }
      }
    }
  }
  __syncthreads();
  if constexpr (R > 0) {
    // Outputs 4u .. 4u + 3 of a row need staged columns 4u + kShift ..
    // 4u + kShift + 3 + 2R: the float4s from 4u on cover them.
    constexpr int kShift = stage_lead(R) - R;
    constexpr int kQuads = (kShift + 2 * R + 7) / 4;
    const int u = tid % (kTileColumns / 4);  // which 4 outputs of the row
    for (int row = tid / (kTileColumns / 4); row < side_y; row += kThreads / (kTileColumns / 4)) {
      const float4 *run = reinterpret_cast<const float4 *>(&in[row * sp + 4 * u]);
      float values[4 * kQuads];
#pragma unroll
      for (int m = 0; m < kQuads; ++m) {
        const float4 q = run[m];
        values[4 * m] = q.x;
        values[4 * m + 1] = q.y;
        values[4 * m + 2] = q.z;
        values[4 * m + 3] = q.w;
      }
      float4 o;
      o.x = blur_1d_fixed<R>(&values[kShift + R], 1, taps);
      o.y = blur_1d_fixed<R>(&values[kShift + R + 1], 1, taps);
      o.z = blur_1d_fixed<R>(&values[kShift + R + 2], 1, taps);
      o.w = blur_1d_fixed<R>(&values[kShift + R + 3], 1, taps);
      *reinterpret_cast<float4 *>(&mid[row * kTileColumns + 4 * u]) = o;
    }
  } else {
    for (int row = ty; row < side_y; row += kBlurRows)
      mid[row * kTileColumns + tx] = blur_1d(&in[row * sp + tx + lead], 1, taps);
  }
  __syncthreads();
  const int x = x0 + tx;
  constexpr int kRowsPerThread = TileRows / kBlurRows;  // consecutive output rows
  const int first = ty * kRowsPerThread;
  float out[kRowsPerThread];
  if constexpr (R > 0) {
    float column[kRowsPerThread + 2 * R];
#pragma unroll
    for (int j = 0; j < kRowsPerThread + 2 * R; ++j) column[j] = mid[(first + j) * kTileColumns + tx];
#pragma unroll
    for (int q = 0; q < kRowsPerThread; ++q) out[q] = blur_1d_fixed<R>(&column[q + R], 1, taps);
  } else {
#pragma unroll
    for (int q = 0; q < kRowsPerThread; ++q)
      out[q] = blur_1d(&mid[(first + q + r) * kTileColumns + tx], kTileColumns, taps);
  }
  // Rows this thread writes (all of them but in the last row and column of tiles).
  const int rows_out = x < width ? min(kRowsPerThread, height - (y0 + first)) : 0;
  const size_t at = static_cast<size_t>(y0 + first) * pitch + x;
  const float *centre = in + (first + r) * sp + tx + lead;
  // A thread's rows: all of them, without a predicate per store where every
  // row lies in the level (predicated, the stores recomputed their
  // addresses: ~100 instructions a thread for 16 values), or the first rows_out.
  auto store = [&](auto every_row) {
#pragma unroll
    for (int q = 0; q < kRowsPerThread; ++q) {
      if (!every_row && q >= rows_out) continue;
      const size_t to = at + static_cast<size_t>(q) * pitch;
      gauss[to] = out[q];
      if (source_out) source_out[to] = centre[q * sp];
    }
  };
  if (rows_out == kRowsPerThread)
    store(std::true_type{});
  else
    store(std::false_type{});
  if (prefilter.hits) {
    float dog[kRowsPerThread];
#pragma unroll
    for (int q = 0; q < kRowsPerThread; ++q) dog[q] = __fsub_rn(out[q], centre[q * sp]);  // not fused: as stored
    __syncthreads();  // every thread is done with `mid`
    list_tile_extremum_candidates<kRowsPerThread>(dog, mid, x, y0 + first, width, height, prefilter);
  }
}

template <class Source, int R, int TileRows = kTileRows>
void launch_blur(const Source &src, const BlurTaps &t, float *gauss, float *source_out, int pitch, int width,
                 int height, bool upward, const ExtremaPrefilter &prefilter, cudaStream_t stream,
                 bool overlap_previous) {
  const dim3 grid((width + kTileColumns - 1) / kTileColumns, (height + TileRows - 1) / TileRows),
      block(kTileColumns, kBlurRows);
  const size_t bytes = blur_shared_bytes(t.radius, TileRows);  // over 48 KB: see allow_wide_blurs
  launch_kernel("SIFT blur kernel", blur_level_kernel<Source, R, TileRows>, grid, block, bytes, stream,
                overlap_previous, src, t, gauss, source_out, pitch, width, height, upward, prefilter);
}

// Kernels of the generic path past R = 21 need more than 48 KB of shared
// memory, an opt-in per kernel and device. Set once when the engine is made
// (the current device), not at launch: launches are captured into graphs,
// and this is no stream operation. The unrolled radii stay under 48 KB.
template <class Source>
void allow_wide_blur(size_t bytes) {
  check_cuda(cudaFuncSetAttribute(blur_level_kernel<Source, 0>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                  static_cast<int>(bytes)),
             "cudaFuncSetAttribute");
}

static_assert(blur_shared_bytes(kMaxUnrolledRadius) <= 48 * 1024, "unrolled blur kernels launch without the opt-in");

void allow_wide_blurs(size_t bytes) {
  if (bytes <= 48 * 1024) return;
  allow_wide_blur<UpsampleSource<uint8_t>>(bytes);
  allow_wide_blur<UpsampleSource<float>>(bytes);
  allow_wide_blur<PlainSource<uint8_t>>(bytes);
  allow_wide_blur<PlainSource<float>>(bytes);
  allow_wide_blur<LevelSource>(bytes);
  allow_wide_blur<DownsampleSource>(bytes);
}

template <class Source, int... Rs>
void dispatch_blur(std::integer_sequence<int, Rs...>, const Source &src, const BlurTaps &t, int tile_rows,
                   float *gauss, float *source_out, int pitch, int width, int height, bool upward,
                   const ExtremaPrefilter &prefilter, cudaStream_t stream, bool overlap_previous) {
  using Launch = void (*)(const Source &, const BlurTaps &, float *, float *, int, int, int, bool,
                          const ExtremaPrefilter &, cudaStream_t, bool);
  static constexpr Launch unrolled[] = {&launch_blur<Source, Rs + 1>...};
  const bool radius_unrolled = t.radius >= 1 && t.radius <= static_cast<int>(sizeof...(Rs));
  if constexpr (StagedByCopy<Source>::value) {
    static constexpr Launch short_tiles[] = {&launch_blur<Source, Rs + 1, kShortTileRows>...};
    if (radius_unrolled && tile_rows == kShortTileRows)
      return short_tiles[t.radius - 1](src, t, gauss, source_out, pitch, width, height, upward, prefilter, stream,
                                       overlap_previous);
  }
  if (radius_unrolled)
    unrolled[t.radius - 1](src, t, gauss, source_out, pitch, width, height, upward, prefilter, stream,
                           overlap_previous);
  else
    launch_blur<Source, 0>(src, t, gauss, source_out, pitch, width, height, upward, prefilter, stream,
                           overlap_previous);
}

// -------------------------------------------------------- small octaves

// The octaves past the first few are small (at 1080p doubled, 120 x 67
// down to 30 x 16: 10 K pixels in three octaves) but cost five dependent
// launches each, a few microseconds apiece whatever their size (the GPU's
// ramp and tail between dependent kernels, which graphs do not remove). From
// the first small octave (kFusedShareOfFirst below), ONE launch builds
// every level and DoG: a cluster of
// 16 blocks (sm_90 thread-block cluster; 8, the portable size, where 16
// cannot run), block b owning a band of ceil(h / blocks) rows of each octave and holding the octave's
// current level of its band in its own shared memory (`cur`). Per level:
//  1. the horizontal pass of the band's rows (reflect-101 in x needs only
//     the row itself) into the block's `mid` band;
//  2. cluster barrier;
//  3. the block copies the band's rows plus R halo rows each side
//     (reflect-101 row indices, as blur_level_kernel stages them) from the
//     `mid` bands of their owners (distributed shared memory) into its
//     local `halo`; __syncthreads;
//  4. the vertical pass writes the Gaussian to global memory (detection
//     reads it there) and the new level into `cur`.
// `mid` is double buffered, so one cluster barrier per level suffices: a
// block rewrites a `mid` buffer only after the next barrier, which every
// reader of its previous contents has passed. Level n_layers of the band is
// also kept (`keep`): the next octave's level 0 is its every second sample,
// gathered from the owners of rows 2y. The sequential chain of octaves runs
// inside the launch; only the first fused octave's level 0 comes from
// global memory (level n_layers of the octave below, or octave 0's level
// 0). Same taps summed in the same order over the same values as
// blur_level_kernel (blur_1d is blur_1d_fixed<R> with the loop not unrolled;
// the per-level kernel's halo rows are horizontal passes of reflected rows,
// i.e. the same values), so the levels are bit for bit those of the
// per-level kernels (GpuSift.FusedSmallOctavesEqualPerLevelKernels).
// Launches: 5 per fused octave -> 1 for all of them; 6 cluster barriers per
// fused octave instead. DRAM/L2: each fused level is read from shared
// memory instead of global (4 B per pixel and level less; the halo's
// redundancy, (band + 2R) / band, is paid in shared-memory copies only).
constexpr long long kFusedPixels = 64 * 1024;
// Which octaves are small: those of at most 1/1024 of the first octave's
// pixels (octaves 5.. of a frame) or at most 4096 pixels, within
// kFusedPixels in all. Measured on an H200 (ms per frame; fused from the
// octave named, whose first pixels count): 640 x 480 0.272 (octave 3),
// 0.258 (4), 0.244 (5); 1280 x 720 0.366 (4), 0.347 (5), 0.356 (6); 1920 x
// 1080 0.540 (4), 0.540 (5), 0.551 (6); 3840 x 2160 1.439 (5), 1.450 (6). A
// level of a larger octave takes the cluster longer than its own kernel
// beside the other branches takes; below, the cluster saves launches. Where
// the boundary lies within an octave depends on the branches' balance (with
// later code 1080p gained 0.9 % from the cluster one octave later, 4K lost
// 0.4 %), so run() also times that start (FramePlanTuner).
constexpr long long kFusedShareOfFirst = 1024;
constexpr long long kFusedAlwaysPixels = 4096;
constexpr int kClusterBlocks[] = {16, 8};  // tried in this order: 16 (H100/H200, non-portable), 8 (portable)
constexpr int kFusedThreads = 512;
constexpr int kMaxFusedLevels = 8;  // n_layers + 3 <= 8 (OpenCV's default: 6)
// Outputs per thread: one in each pass. A level of a small octave is a few
// hundred outputs per block, fewer than its 512 threads, so register
// blocking (4 per thread, as the per-level kernel) only lengthened each
// thread's chain of dependent taps while most threads idled: one output
// each took the 1080p frame from 0.499 to 0.487 ms, 1280 x 720 0.325 ->
// 0.315, 4K 1.405 -> 1.395 (H200, 2 x 2: 0.491 at 1080p).
// The taps are looped with the radius a run-time value (blur_1d), not
// unrolled per radius: each level of each octave ran its own unrolled
// instance (up to 16 radii, both passes), so a level's instructions came
// cold from L2, once per level, on a kernel that runs a few hundred
// outputs a block. Looped (H200, 2026-12-01, same run, three rounds): the
// kernel 42 -> 34 us at 640 x 480 (10 levels) and 72 -> 50 us at 1280 x 720
// (15); frames 0.1827-0.1828 -> 0.1735-0.1744 ms, 0.2866-0.2876 ->
// 0.2790-0.2794, 1080p equal (0.4222-0.4239 against 0.4217-0.4234).
constexpr size_t kFusedSharedLimit = 160 * 1024;

struct FusedPyramid {
  OctaveTable table;
  int first;          // first fused octave
  int blocks;         // of the cluster (= the grid)
  int band_capacity;  // floats per band buffer: max over the fused octaves of band rows x width
  int halo_capacity;  // floats of the halo buffer: max of (band + 2 R_max) x width
  float *gauss;
  BlurTaps taps[kMaxFusedLevels];  // [i]: level i (0 unused)
};

__host__ __device__ constexpr int fused_band(int height, int blocks) { return (height + blocks - 1) / blocks; }
constexpr size_t fused_shared_bytes(int band_capacity, int halo_capacity) {
  return (4 * static_cast<size_t>(band_capacity) + static_cast<size_t>(halo_capacity)) * sizeof(float);
}

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
// Copies `rows` rows of w floats into dst (row k at dst + k w), one row per
// warp; line(k) gives the source row, `stride` its sample spacing. Eight
// loads per lane in flight (distributed shared memory and L2 latencies are
// hundreds of cycles; one load at a time per lane made the copies the
// slowest part).
template <class Line>
__device__ void fused_copy_rows(float *dst, int rows, int w, int stride, const Line &line) {
  constexpr int kWarps = kFusedThreads / 32, kLoads = 8;
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  for (int k = warp; k < rows; k += kWarps) {
    const float *from = line(k);
    float *to = dst + k * w;
    for (int x0 = 0; x0 < w; x0 += 32 * kLoads) {
      float v[kLoads];
#pragma unroll
      for (int j = 0; j < kLoads; ++j) {
        const int x = x0 + lane + 32 * j;
        v[j] = x < w ? from[stride * x] : 0.f;
      }
#pragma unroll
      for (int j = 0; j < kLoads; ++j) {
        const int x = x0 + lane + 32 * j;
        if (x < w) to[x] = v[j];
      }
    }
  }
}

// Horizontal pass of `rows` rows of width w, one output per thread, borders reflected.
__device__ void fused_horizontal(const float *cur, float *mid, int rows, int w, const BlurTaps &t) {
  const int r = t.radius;
  for (int i = static_cast<int>(threadIdx.x); i < rows * w; i += kFusedThreads) {
    const int row = i / w, x = i - row * w;
    const float *line = cur + row * w;
    float sum;
    if (x >= r && x + r < w) {
      sum = blur_1d(line + x, 1, t);
    } else {  // blur_1d's sum over reflected samples
      sum = t.weight[0] * line[x];
      for (int k = 1; k <= r; ++k)
        sum = add_tap_pair(sum, t.weight[k], line[reflect101(x + k, w)], line[reflect101(x - k, w)]);
    }
    mid[i] = sum;
  }
}

// Vertical pass from the local halo copy (rows + 2R rows of mid), one output per thread.
__device__ void fused_vertical(const float *halo, float *cur, float *keep, int y0, int rows, int w, const BlurTaps &t,
                               float *gauss, int pitch) {
  for (int i = static_cast<int>(threadIdx.x); i < rows * w; i += kFusedThreads) {
    const int row = i / w, x = i - row * w;
    const float out = blur_1d(&halo[(row + t.radius) * w + x], w, t);
    gauss[static_cast<size_t>(y0 + row) * pitch + x] = out;
    cur[i] = out;
    if (keep) keep[i] = out;
  }
}
#endif

__global__ void __launch_bounds__(kFusedThreads) small_octaves_kernel(const FusedPyramid p) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  namespace cg = cooperative_groups;
  cg::cluster_group cluster = cg::this_cluster();
  __shared__ FusedPyramid s;  // the parameters, indexed by octave and level at run time
  {
    const unsigned *from = reinterpret_cast<const unsigned *>(&p);
    unsigned *to = reinterpret_cast<unsigned *>(&s);
    for (int i = static_cast<int>(threadIdx.x); i < static_cast<int>(sizeof(FusedPyramid) / 4); i += kFusedThreads)
      to[i] = from[i];
  }
  extern __shared__ float4 fused_shared4[];
  float *cur = reinterpret_cast<float *>(fused_shared4);
  float *keep = cur + p.band_capacity;
  float *mid0 = keep + p.band_capacity, *mid1 = mid0 + p.band_capacity;
  float *halo = mid1 + p.band_capacity;
  const int rank = static_cast<int>(cluster.block_rank());
  const int layers = p.table.layers;
  __syncthreads();
  int step = 0;  // levels done: picks the mid buffer
  for (int o = p.first; o < p.table.count; ++o) {
    const OctaveGeometry &g = s.table.o[o];
    const int w = g.width, h = g.height, band = fused_band(h, p.blocks);
    const int y0 = min(rank * band, h), rows = min(band, h - y0);
    // Level 0 of the band, one row per warp.
    if (o == p.first) {
      const float *src;
      int src_pitch, stride;
      if (o == 0) {
        src = p.gauss + g.gauss_offset;
        src_pitch = g.pitch;
        stride = 1;
      } else {
        const OctaveGeometry &b = s.table.o[o - 1];
        src = p.gauss + b.gauss_offset + static_cast<size_t>(layers) * b.level_stride;
        src_pitch = b.pitch;
        stride = 2;
      }
      fused_copy_rows(cur, rows, w, stride,
                      [&](int row) { return src + static_cast<size_t>(stride * (y0 + row)) * src_pitch; });
    } else {
      const int below_w = s.table.o[o - 1].width, below_band = fused_band(s.table.o[o - 1].height, p.blocks);
      fused_copy_rows(cur, rows, w, 2, [&](int row) {
        const int yy = 2 * (y0 + row), owner = yy / below_band;
        return static_cast<const float *>(cluster.map_shared_rank(keep, static_cast<unsigned>(owner))) +
               (yy - owner * below_band) * below_w;
      });
    }
    __syncthreads();
    if (o > 0) {  // level 0 for detection (DoG level 0); octave 0's is where the band came from
      float *level0 = p.gauss + g.gauss_offset;
      for (int i = static_cast<int>(threadIdx.x); i < rows * w; i += kFusedThreads) {
        const int row = i / w;
        level0[static_cast<size_t>(y0 + row) * g.pitch + (i - row * w)] = cur[i];
      }
    }
    for (int level = 1; level < layers + 3; ++level, ++step) {
      const BlurTaps &t = s.taps[level];
      const int r = t.radius;
      float *mid = step & 1 ? mid1 : mid0;
      fused_horizontal(cur, mid, rows, w, t);
      cluster.sync();  // every band's mid rows are ready (and, at level 1, the keep bands read)
      fused_copy_rows(halo, rows > 0 ? rows + 2 * r : 0, w, 1, [&](int k) {
        const int yy = reflect101(y0 - r + k, h), owner = yy / band;
        return static_cast<const float *>(cluster.map_shared_rank(mid, static_cast<unsigned>(owner))) +
               (yy - owner * band) * w;
      });
      __syncthreads();
      float *gauss = p.gauss + g.gauss_offset + static_cast<size_t>(level) * g.level_stride;
      float *kept = level == layers ? keep : nullptr;
      fused_vertical(halo, cur, kept, y0, rows, w, t, gauss, g.pitch);
      __syncthreads();  // the band's new level, before the next horizontal pass reads it
    }
  }
  cluster.sync();  // no block leaves while another may still read its shared memory
#endif
}

// Waits `ns` nanoseconds (one warp): CS_SIFT_DELAY's stand-in for more work
// on one branch of the frame.
__global__ void spin_kernel(long long ns) {
  unsigned long long start, now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  } while (now - start < static_cast<unsigned long long>(ns));
}

// ------------------------------------------------------------ detection

// Appends one element per lane whose `pred` holds, with one atomicAdd per
// warp; every lane of the warp must call it. Returns the lane's slot (or -1).
__device__ int warp_append(bool pred, int *counter) {
  const unsigned mask = __ballot_sync(0xffffffffu, pred);
  if (mask == 0) return -1;
  const int lane = static_cast<int>(threadIdx.x) & 31;
  const int leader = __ffs(mask) - 1;
  int base = 0;
  if (lane == leader) base = atomicAdd(counter, __popc(mask));
  base = __shfl_sync(0xffffffffu, base, leader);
  return pred ? base + __popc(mask & ((1u << lane) - 1u)) : -1;
}

__device__ LevelStack gauss_stack(const float *gauss_pool, const OctaveGeometry &g) {
  return {gauss_pool + g.gauss_offset, g.level_stride, g.pitch, g.width, g.height};
}

__device__ PlaneView gauss_plane(const float *gauss_pool, const OctaveGeometry &g, int level) {
  return {gauss_pool + g.gauss_offset + static_cast<size_t>(level) * g.level_stride, g.pitch, g.width, g.height};
}

// Extrema of every octave in one launch, without branches per pixel: the
// 26-neighbour test is v == the maximum (or minimum) of the 3 x 3 x 3
// neighbourhood (is_extremum), and that bound is separable. Per row: the
// DoG samples of each level (differences of the Gaussian levels: none is
// stored), their bound over the three levels of each layer, then over three
// columns (the outer columns from the neighbour lanes by shuffles), then
// over three rows (rolling from row to row, each row's pair kept). A warp
// covers a strip of up to kExtremaLongestStripRows rows by 64 columns, a lane 2
// adjacent columns (one 8-byte copy per Gaussian level and row, three rows
// ahead, into the warp's ring in shared memory); lanes 0 and 31 only lend
// their columns to their neighbours, so a warp tests 60 columns. The
// layers are taken three at a time, the six Gaussian levels they need
// loaded once per row. Extrema are rare: they are appended with one
// atomicAdd per warp. A warp's rows run one after the other, so octaves
// with few strips take shorter ones (with 16-row strips everywhere, the
// small octaves' launch at the end of the frame, a few warps of 18 rows
// each, made 640 x 480 frames 0.199-0.201 ms against 0.192-0.194, H200).
// `first_block`: the launch covers the octaves whose blocks start there.
// Strip rows: 32 in octaves with at least kExtremaLongestStripWarps strips
// of 32 (4K doubled's first), else 16 in those with at least
// kExtremaLongStripWarps strips of 16 (the doubled octaves of 1280 x 720
// and larger, 1080p's second), else 8, halved (down to 2) while the octave
// has fewer than kExtremaEnoughWarps strips (about an H200's fill). When rows were loaded
// into registers (below), 16 rows only from 16384 strips (4K doubled's
// first octave) were the faster: against 16-row strips in every octave
// with 2048 strips or more (H200, same run, three rounds) 1080p 0.463-0.465
// -> 0.454-0.456 ms, 1280 x 720 0.305-0.307 -> 0.304-0.305; halving until
// 8192 or 16384 strips was slower at every size. With the ring, the
// pointers stepped and the loop unrolled, 16 rows from 2048 strips (three
// rounds, against from 16384): 1080p 0.4151-0.4188 -> 0.4089-0.4104 ms,
// 1280 x 720 0.2736-0.2737 -> 0.2716-0.2727, 4K 1.193-1.196 -> 1.188-1.190,
// 640 x 480 equal (from 4096: in between); octave 0's extrema at 1080p
// 64.5 -> 63.3 us, 35.3 M -> 30.8 M instructions, 199 -> 209 MB read.
// Octave 0's extrema at 1080p (Nsight Compute, H200, 2026-12-01; 199 MB
// read either way): rows loaded into registers one row ahead, each row's
// six addresses computed afresh, 77-78 us and 47.9 M warp instructions
// (issue slots 64 % busy, DRAM 55 %); through the ring 74 us; with the
// levels' pointers stepped a row at a time 66.5 us, 40.0 M; the row loop
// unrolled by two 64.2 us, 35.3 M (by three: 65.6 us, 34.6 M). Three
// blocks an SM (80 registers) were slower with every unrolling. Strips of
// 32 rows in octaves with at least kExtremaLongestStripWarps of them (4K
// doubled's first octave, whose extrema are bound by DRAM: two rows more
// read per 32 instead of per 16): 4K 1.183-1.189 -> 1.177-1.179 ms (three
// rounds); from 2048 such strips (1080p's first octave too) 1080p equal.
constexpr int kExtremaLongestStripRows = 32;
constexpr int kExtremaLongestStripWarps = 8192;
constexpr int kExtremaLongStripRows = 16;
constexpr int kExtremaLongStripWarps = 2048;
constexpr int kExtremaStripRows = 8;
constexpr int kExtremaFewestStripRows = 2;
constexpr int kExtremaEnoughWarps = 2048;
constexpr int kExtremaLaneColumns = 2;
constexpr int kExtremaTileColumns = (32 - 2) * kExtremaLaneColumns;  // tested columns of a warp
constexpr int kExtremaLayers = 3;                                      // layers of one pass over a strip
constexpr int kExtremaLevels = kExtremaLayers + 3;                     // Gaussian levels they need
constexpr int kExtremaMinBlocks = 2;  // blocks per SM the kernel is compiled for (128 registers)

// A lane's adjacent samples of one row (one aligned load).
struct alignas(4 * kExtremaLaneColumns) LaneSamples {
  float v[kExtremaLaneColumns];
};

template <class Bound>
__device__ __forceinline__ LaneSamples bound_of(const LaneSamples &a, const LaneSamples &b, Bound bound) {
  LaneSamples r;
#pragma unroll
  for (int c = 0; c < kExtremaLaneColumns; ++c) r.v[c] = bound(a.v[c], b.v[c]);
  return r;
}

// The bound over three columns of each of the lane's, the outer ones from
// the neighbour lanes.
template <class Bound>
__device__ __forceinline__ LaneSamples bound_of_columns(const LaneSamples &m, Bound bound) {
  constexpr int n = kExtremaLaneColumns;
  const float left = __shfl_up_sync(0xffffffffu, m.v[n - 1], 1), right = __shfl_down_sync(0xffffffffu, m.v[0], 1);
  float pairs[n + 1];  // pairs[c]: bound of columns c - 1 and c
  pairs[0] = bound(left, m.v[0]);
#pragma unroll
  for (int c = 1; c < n; ++c) pairs[c] = bound(m.v[c - 1], m.v[c]);
  pairs[n] = bound(m.v[n - 1], right);
  LaneSamples r;
#pragma unroll
  for (int c = 0; c < n; ++c) r.v[c] = bound(pairs[c], c + 1 < n ? m.v[c + 1] : right);
  return r;
}

struct LaneBounds {
  LaneSamples maximum, minimum;
};

// Appends `count` elements per lane (any count, 0 included) with one
// atomicAdd per warp; every lane of the warp must call it. Returns the
// lane's first slot.
__device__ int warp_append_counts(int count, int *counter) {
  const int lane = static_cast<int>(threadIdx.x) & 31;
  int inclusive = count;
#pragma unroll
  for (int step = 1; step < 32; step *= 2) {
    const int below = __shfl_up_sync(0xffffffffu, inclusive, step);
    if (lane >= step) inclusive += below;
  }
  int base = 0;
  if (lane == 31 && inclusive > 0) base = atomicAdd(counter, inclusive);
  return __shfl_sync(0xffffffffu, base, 31) + inclusive - count;
}

// A warp's rows reach it through a ring of rows in shared memory, copied
// kExtremaRowsInFlight rows ahead by cp.async (sm_80+; below, loaded and
// stored), without registers.
constexpr int kExtremaRowsInFlight = 3;
constexpr int kExtremaRingRows = kExtremaRowsInFlight + 1;  // + the row being read
// The row loop unrolled by two, so that the rows' rolling bounds change
// places by renaming instead of register moves (18 a row).
constexpr int kExtremaRowUnroll = 2;

__device__ __forceinline__ void copy_lane_samples_async(LaneSamples *to, const float *from) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.ca.shared.global [%0], [%1], %2;\n" ::"r"(static_cast<unsigned>(__cvta_generic_to_shared(to))),
               "l"(from), "n"(sizeof(LaneSamples))
               : "memory");
#else
  *to = *reinterpret_cast<const LaneSamples *>(from);
#endif
}

__global__ void __launch_bounds__(kThreads, kExtremaMinBlocks)
    extrema_kernel(const float *gauss_pool, const OctaveTable table, int first_block, float threshold, Candidate *out,
                   int capacity, Counters *counters) {
  begin_dependent_grid();  // may be launched under the previous kernel's tail
  const int block = first_block + static_cast<int>(blockIdx.x);
  int o = 0;
  while (o + 1 < table.count && block >= table.o[o + 1].block_begin) ++o;
  const OctaveGeometry &g = table.o[o];
  const int b = block - g.block_begin;
  const int lane = static_cast<int>(threadIdx.x) % 32, warp = static_cast<int>(threadIdx.x) / 32;
  const int strip = (b / g.blocks_x) * kWarpsPerBlock + warp;
  __shared__ LaneSamples ring[kWarpsPerBlock][kExtremaRingRows][kExtremaLevels][32];  // 48 KB
  const int first_row = kImageBorder + strip * g.strip_rows;  // first tested row of the warp
  if (first_row >= g.height - kImageBorder) return;           // the whole warp
  const int x = (b % g.blocks_x) * kExtremaTileColumns + kExtremaLaneColumns * lane;  // the lane's first column
  unsigned tested_columns = 0;
#pragma unroll
  for (int c = 0; c < kExtremaLaneColumns; ++c)
    if (lane >= 1 && lane <= 30 && x + c >= kImageBorder && x + c < g.width - kImageBorder) tested_columns |= 1u << c;
  // Lanes past the pitch (a multiple of 32) load the row's last samples: only untested columns see them.
  const int load_x = min(x, g.pitch - kExtremaLaneColumns);
  const LevelStack gauss = gauss_stack(gauss_pool, g);
  const auto maximum = [](float a, float b) { return max_or_nan(a, b); };
  const auto minimum = [](float a, float b) { return min_or_nan(a, b); };

  for (int first_layer = 1; first_layer <= table.layers; first_layer += kExtremaLayers) {
    // Gaussian levels first_layer - 1 .. first_layer + 4 (DoG levels first_layer - 1 .. first_layer + 3);
    // past the top level the top again: its DoG samples are 0, and no layer that reads them is tested.
    const float *level[kExtremaLevels];
#pragma unroll
    for (int k = 0; k < kExtremaLevels; ++k)
      level[k] = gauss.level(min(first_layer - 1 + k, table.layers + 2)) + load_x;
    unsigned tested = 0;  // bit kExtremaLaneColumns * j + c: layer first_layer + j, column x + c
#pragma unroll
    for (int j = 0; j < kExtremaLayers; ++j)
      if (first_layer + j <= table.layers) tested |= tested_columns << (kExtremaLaneColumns * j);
    // Row i of the strip is image row first_row - 1 + i (rows past the image repeat its last: untested).
    // One group of copies per row (an empty one past the strip, so that the count of groups in flight
    // stays kExtremaRowsInFlight); a lane reads back only what it copied itself. The levels' pointers
    // step down a row at a time (computing each row's addresses afresh was a fifth of the loop).
    const int rows = g.strip_rows + 2;
    int from_row = first_row - 1;
#pragma unroll
    for (int k = 0; k < kExtremaLevels; ++k) level[k] += static_cast<size_t>(from_row) * g.pitch;
    const auto copy_row = [&](int i) {
      if (i < rows) {
#pragma unroll
        for (int k = 0; k < kExtremaLevels; ++k)
          copy_lane_samples_async(&ring[warp][i % kExtremaRingRows][k][lane], level[k]);
        if (from_row < g.height - 1) {
          ++from_row;
#pragma unroll
          for (int k = 0; k < kExtremaLevels; ++k) level[k] += g.pitch;
        }
      }
      commit_async_copies();
    };
#pragma unroll
    for (int i = 0; i < kExtremaRowsInFlight; ++i) copy_row(i);
    LaneBounds before[kExtremaLayers], pair[kExtremaLayers];  // the row above's bounds; the two rows above's
    LaneSamples centre[kExtremaLayers];                        // the row above's samples of each layer
#pragma unroll kExtremaRowUnroll
    for (int i = 0; i < rows; ++i) {
      wait_async_groups<kExtremaRowsInFlight - 1>();  // row i has arrived
      LaneSamples next[kExtremaLevels];
#pragma unroll
      for (int k = 0; k < kExtremaLevels; ++k) next[k] = ring[warp][i % kExtremaRingRows][k][lane];
      copy_row(i + kExtremaRowsInFlight);  // into the slot read one row ago
      LaneSamples dog[kExtremaLevels - 1];  // this row's DoG samples: G(k + 1) - G(k), as OpenCV's DoG levels
#pragma unroll
      for (int k = 0; k < kExtremaLevels - 1; ++k)
#pragma unroll
        for (int c = 0; c < kExtremaLaneColumns; ++c) dog[k].v[c] = next[k + 1].v[c] - next[k].v[c];
      unsigned found = 0;
#pragma unroll
      for (int j = 0; j < kExtremaLayers; ++j) {
        // The layer's three levels, then three columns.
        const LaneBounds here = {
            bound_of_columns(bound_of(bound_of(dog[j], dog[j + 1], maximum), dog[j + 2], maximum), maximum),
            bound_of_columns(bound_of(bound_of(dog[j], dog[j + 1], minimum), dog[j + 2], minimum), minimum)};
        if (i >= 2) {  // row i - 1 has its three rows
          const LaneSamples hi = bound_of(pair[j].maximum, here.maximum, maximum);
          const LaneSamples lo = bound_of(pair[j].minimum, here.minimum, minimum);
#pragma unroll
          for (int c = 0; c < kExtremaLaneColumns; ++c)
            found |= static_cast<unsigned>(is_extremum(centre[j].v[c], threshold, hi.v[c], lo.v[c]))
                     << (kExtremaLaneColumns * j + c);
        }
        if (i >= 1)
          pair[j] = {bound_of(before[j].maximum, here.maximum, maximum),
                     bound_of(before[j].minimum, here.minimum, minimum)};
        before[j] = here;
        centre[j] = dog[j + 1];
      }
      const int tested_row = first_row + i - 2;
      found = tested_row < g.height - kImageBorder ? found & tested : 0u;
      if (!__any_sync(0xffffffffu, found != 0)) continue;
      int slot = warp_append_counts(__popc(found), &counters->candidates);
      for (; found != 0; found &= found - 1u, ++slot) {
        const int bit = __ffs(found) - 1;
        if (slot < capacity)
          out[slot] = {o, first_layer + bit / kExtremaLaneColumns, tested_row, x + bit % kExtremaLaneColumns};
      }
    }
  }
}

// The extrema of octaves 0 .. octaves - 1 from the prefilter's hits
// (ExtremaPrefilter; a hit names its octave): each tested over its 3 x 3 x 3
// neighbourhood, into the candidate list as extrema_kernel appends them.
// When the hits overflowed their list (a picture with far more in-tile
// extrema than natural ones have), every sample of those octaves' layers is
// tested instead, one thread each: the same extrema, slowly. Warps step
// together (the appends take every lane).
__global__ void __launch_bounds__(kThreads)
    prefiltered_extrema_kernel(const float *gauss_pool, const OctaveTable table, int octaves, float threshold,
                               const Candidate *hits, int hit_capacity, Candidate *out, int capacity,
                               Counters *counters) {
  begin_dependent_grid();  // may be launched under the previous kernel's tail
  const int hit_count = counters->prefiltered;
  const bool dense = hit_count > hit_capacity;
  const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
  auto extremum_at = [&](const Candidate &c) {
    const OctaveGeometry &g = table.o[c.octave];
    const LevelStack gauss = gauss_stack(gauss_pool, g);
    return c.row >= kImageBorder && c.row < g.height - kImageBorder && c.column >= kImageBorder &&
           c.column < g.width - kImageBorder && fabsf(gauss.dog(c.layer, c.row, c.column)) > threshold &&
           is_scale_space_extremum(gauss, c.layer, c.row, c.column, threshold);
  };
  for (int octave = 0; octave < (dense ? octaves : 1); ++octave) {
    const OctaveGeometry &g = table.o[octave];
    const long long plane = static_cast<long long>(g.width) * g.height;
    const long long total = dense ? plane * table.layers : hit_count;
    for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; i - threadIdx.x % 32 < total;
         i += stride) {
      Candidate c{octave, 0, 0, 0};
      bool extremum = false;
      if (i < total) {
        if (dense) {
          c.layer = 1 + static_cast<int>(i / plane);
          c.row = static_cast<int>(i % plane / g.width);
          c.column = static_cast<int>(i % g.width);
        } else {
          c = hits[i];
        }
        extremum = extremum_at(c);
      }
      const int slot = warp_append(extremum, &counters->candidates);
      if (extremum && slot < capacity) out[slot] = c;
    }
  }
}

// One thread per candidate of the dense list, one warp per block: a
// candidate's up to five refinement steps are a chain of dependent loads and
// a 3 x 3 solve, so the kernel is latency-bound. With blocks of 256 threads a
// frame's few thousand candidates sat on a few dozen SMs, eight warps each
// (1080p, Nsight Compute: 6 % of issue slots used, 14.5 us); spread over
// every SM, one warp a block: 11.2 us.
constexpr int kRefineThreads = 32;
__global__ void __launch_bounds__(kRefineThreads) refine_kernel(const float *gauss_pool, const OctaveTable table,
                                                                 const DetectionConstants k, const Candidate *in,
                                                                 int in_capacity, RefinedExtremum *out, int capacity,
                                                                 Counters *counters) {
  begin_dependent_grid();  // may be launched under the previous kernel's tail
  const int n = min(counters->candidates, in_capacity);
  for (int base = static_cast<int>(blockIdx.x) * kRefineThreads; base < n;
       base += static_cast<int>(gridDim.x) * kRefineThreads) {
    const int i = base + static_cast<int>(threadIdx.x);
    bool ok = false;
    RefinedExtremum e;
    if (i < n) {
      const Candidate c = in[i];
      ok = refine_extremum(gauss_stack(gauss_pool, table.o[c.octave]), c.octave, c.layer, c.row, c.column, k, &e);
    }
    const int slot = warp_append(ok, &counters->refined);
    if (ok && slot < capacity) out[slot] = e;
  }
}

// Four warps per refined extremum (kOrientationWarps), one extremum per
// block at a time: each lane bins its share of the window (every 128th sample)
// into its own histogram column; the columns are summed per warp, then the
// four warps' sums, in a fixed order. The first warp then smooths and finds
// the peaks, a bin per lane (one lane doing them was a serial tail of ~1000
// instructions per extremum). One warp per extremum left the kernel
// latency-bound: a warp walked up to 28 samples per lane one after the
// other, with about 20 warps per SM for a frame's few thousand extrema.
// Two extrema per block of eight warps made each wait at the block's
// barriers for the other's window, which may be four times larger (a
// third of the kernel's stall samples at 1080p; 23.4 -> 22.5 us alone).
// Which of the kDescribeBuckets a keypoint's descriptor window falls in, 0
// for the largest: its radius grows as 2^((layer + xi) / n_layers), and
// layer + xi lies in [0.5, n_layers + 0.5).
__device__ int describe_bucket(const Keypoint &kp, int n_layers) {
  const float scale_step = static_cast<float>((kp.octave >> 8) & 255) +
                           static_cast<float>((kp.octave >> 16) & 255) * (1.f / 255.f) - 0.5f;
  const int bucket = static_cast<int>((static_cast<float>(n_layers) + 0.5f - scale_step) *
                                      (static_cast<float>(kDescribeBuckets) / static_cast<float>(n_layers)));
  return bucket < 0 ? 0 : bucket < kDescribeBuckets ? bucket : kDescribeBuckets - 1;
}

constexpr int kOrientationWarps = 4;
constexpr int kOrientationGroups = 1;  // extrema per block at a time
constexpr int kOrientationBlockWarps = kOrientationWarps * kOrientationGroups;
constexpr int kOrientationThreads = 32 * kOrientationBlockWarps;
constexpr int kOrientationBlocksPerSm = 8;
// Window samples a lane loads before it votes with any of them (loaded one
// at a time, each vote waited for its own four loads; eight spill at the 64
// registers of eight blocks an SM).
constexpr int kOrientationBatch = 4;
// Eight blocks per SM (62 registers, no spills): the list grid's blocks run at once.
__global__ void __launch_bounds__(kOrientationThreads, kOrientationBlocksPerSm)
    orientation_kernel(const float *gauss_pool, const OctaveTable table, const RefinedExtremum *in, int in_capacity,
                       Keypoint *out, int *ranks, int *describe_order, int capacity, Counters *counters) {
  begin_dependent_grid();  // may be launched under the previous kernel's tail
  __shared__ float columns[kOrientationBlockWarps][kOrientationBins * 32];  // [bin][lane]
  __shared__ float warp_sums[kOrientationBlockWarps][kOrientationBins];
  __shared__ float raw[kOrientationGroups][kOrientationBins];
  __shared__ float smooth[kOrientationGroups][kOrientationBins];
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  const int group = warp / kOrientationWarps, part = warp % kOrientationWarps;
  float *mine = columns[warp];
  const int n = min(counters->refined, in_capacity);
  // The same number of rounds for every warp of the block: the groups meet at block barriers.
  for (int base = static_cast<int>(blockIdx.x) * kOrientationGroups; base < n;
       base += static_cast<int>(gridDim.x) * kOrientationGroups) {
    const int item = base + group;
    const bool active = item < n;
    RefinedExtremum e{};
    if (active) {
      e = in[item];
      const OrientationWindow w = orientation_window(e.octave_sigma);
      const PlaneView g = gauss_plane(gauss_pool, table.o[e.octave_index], e.layer);
      for (int bin = 0; bin < kOrientationBins; ++bin) mine[bin * 32 + lane] = 0.f;
      const int side = 2 * w.radius + 1, total = side * side;
      // Sample s of the window is row s / side, column s % side; this lane
      // takes s = 32 part + lane + 128 k, stepped without dividing (two
      // integer divisions a sample were a quarter of the loop's instructions).
      // kOrientationBatch samples at a time: their gradients' loads first
      // (samples past the window or the image load the centre's, unused),
      // then their votes, in the lane's order of samples as before.
      constexpr int kStride = 32 * kOrientationWarps;
      const int row_step = kStride / side, column_step = kStride % side;
      const int first = 32 * part + lane;
      int row = first / side, column = first % side;
      for (int s = first; s < total; s += kOrientationBatch * kStride) {
        int di[kOrientationBatch], dj[kOrientationBatch];
        bool inside[kOrientationBatch];
        float dx[kOrientationBatch], dy[kOrientationBatch];
#pragma unroll
        for (int u = 0; u < kOrientationBatch; ++u) {
          di[u] = row - w.radius;
          dj[u] = column - w.radius;
          const int y = e.row + di[u], x = e.column + dj[u];
          inside[u] = s + u * kStride < total && orientation_sample_inside(g, y, x);
          orientation_gradient(g, inside[u] ? y : e.row, inside[u] ? x : e.column, &dx[u], &dy[u]);
          row += row_step;
          column += column_step;
          if (column >= side) {
            column -= side;
            ++row;
          }
        }
#pragma unroll
        for (int u = 0; u < kOrientationBatch; ++u) {
          if (!inside[u]) continue;
          int bin;
          float value;
          orientation_vote(di[u], dj[u], dx[u], dy[u], w.exp_scale, &bin, &value);
          mine[bin * 32 + lane] += value;
        }
      }
      __syncwarp();
      // Column sums in a fixed order; the rotation (t + b) & 31 keeps the
      // lanes on distinct banks.
      for (int bin = lane; bin < kOrientationBins; bin += 32) {
        float sum = 0.f;
        for (int t = 0; t < 32; ++t) sum += mine[bin * 32 + ((t + bin) & 31)];
        warp_sums[warp][bin] = sum;
      }
    }
    __syncthreads();
    if (active && part == 0) {
      for (int bin = lane; bin < kOrientationBins; bin += 32) {
        float sum = 0.f;
        for (int p = 0; p < kOrientationWarps; ++p) sum += warp_sums[warp + p][bin];
        raw[group][bin] = sum;
      }
      __syncwarp();
      // smooth_orientation_histogram, a bin per lane (the maximum of floats
      // does not depend on the order).
      float maximum = 0.f;
      for (int bin = lane; bin < kOrientationBins; bin += 32) {
        smooth[group][bin] = smoothed_orientation_bin(raw[group], bin);
        maximum = fmaxf(maximum, smooth[group][bin]);
      }
      for (int d = 16; d > 0; d /= 2) maximum = fmaxf(maximum, __shfl_xor_sync(0xffffffffu, maximum, d));
      __syncwarp();
      for (int b0 = 0; b0 < kOrientationBins; b0 += 32) {
        float angle = 0.f;
        const bool peak = b0 + lane < kOrientationBins && orientation_peak(smooth[group], maximum, b0 + lane, &angle);
        const int slot = warp_append(peak, &counters->oriented);
        if (peak && slot < capacity) {
          Keypoint kp = e.keypoint;
          kp.angle = angle;
          out[slot] = kp;
          ranks[slot] = 0;  // rank_count_kernel adds to it (no memset of the list's capacity)
          const int bucket = describe_bucket(kp, table.layers);
          describe_order[bucket * capacity + atomicAdd(&counters->windows[bucket], 1)] = slot;
        }
      }
    }
    __syncthreads();  // warp_sums, raw and smooth are rewritten in the next round
  }
}

// The canonical order's leading fields as one key: response descending,
// then y ascending (float bits made orderable as unsigned integers, -0 as
// +0). Keypoints with different keys are in the order of their keys
// (keypoint_less); equal keys (the orientations of one extremum,
// duplicates) need the other fields.
__device__ uint64_t canonical_key(const Keypoint &k) {
  auto orderable = [](float f) {
    const uint32_t u = __float_as_uint(f + 0.f);
    return (u & 0x80000000u) ? ~u : u | 0x80000000u;
  };
  return uint64_t(~orderable(k.response)) << 32 | orderable(k.y);
}

// Rank sort into canonical order: keypoint i goes to the number of
// keypoints before it (ties of identical keypoints broken by index). The
// counting is spread over a 2-D grid: blockIdx.x takes tiles of i,
// blockIdx.y a slice of the j range (their keys staged through shared
// memory; the whole keypoints read only where keys are equal), and the
// partial counts meet in `ranks` by integer atomics (exact, so the order is
// deterministic). n^2 comparisons, each a 64-bit comparison of keys
// (1080p, ~2700 keypoints, Nsight Compute: 4.4 M instructions, 13 us; the
// keypoints compared field by field: 6.3 M, 20 us).
// Duplicates (keypoint_duplicate) share the key, so they meet where keys
// are equal: a keypoint with a duplicate before it is dropped, flagged in
// its rank by kRankDuplicate and listed once in `duplicates`. Within a run
// of equal keys the order is by x, size, angle, octave, so a keypoint has a
// duplicate before it exactly when the one just before it is one.
constexpr int kRankSlices = 64;
constexpr int kMaxKeypointCapacity = 1 << 30;  // the constructor refuses larger capacities
constexpr int kRankDuplicate = 1 << 30;  // above any count (kMaxKeypointCapacity)
__global__ void __launch_bounds__(kThreads) rank_count_kernel(const Keypoint *in, int in_capacity, int *ranks,
                                                               int *duplicates, Counters *counters) {
  begin_dependent_grid();  // may be launched under the previous kernel's tail
  __shared__ uint64_t tile[kThreads];
  const int n = min(counters->oriented, in_capacity);
  const int slice = (n + static_cast<int>(gridDim.y) - 1) / static_cast<int>(gridDim.y);
  const int j0 = static_cast<int>(blockIdx.y) * slice, j1 = min(n, j0 + slice);
  if (j0 >= j1) return;
  for (int base = static_cast<int>(blockIdx.x) * kThreads; base < n; base += static_cast<int>(gridDim.x) * kThreads) {
    const int i = base + static_cast<int>(threadIdx.x);
    Keypoint me{};
    uint64_t my_key = 0;
    if (i < n) {
      me = in[i];
      my_key = canonical_key(me);
    }
    int rank = 0;
    bool duplicate = false;
    for (int t0 = j0; t0 < j1; t0 += kThreads) {
      __syncthreads();
      const int staged = t0 + static_cast<int>(threadIdx.x);
      if (staged < j1) tile[threadIdx.x] = canonical_key(in[staged]);
      __syncthreads();
      const int m = min(kThreads, j1 - t0);
      if (i >= n) continue;
      // Keys first, a few integer instructions each; the keys equal to this
      // one (the other orientations of its extremum, duplicates) then from
      // the whole keypoints, in a second pass over the tile.
      bool tie = false;
#pragma unroll 4
      for (int q = 0; q < m; ++q) {
        const uint64_t key = tile[q];
        rank += key < my_key ? 1 : 0;
        tie = tie || key == my_key;
      }
      if (tie)
        for (int q = 0; q < m; ++q) {
          if (tile[q] != my_key) continue;
          const int j = t0 + q;
          const Keypoint other = in[j];
          if (keypoint_less(other, me) || (j < i && !keypoint_less(me, other))) {
            ++rank;
            duplicate = duplicate || keypoint_duplicate(other, me);
          }
        }
    }
    if (i < n && rank > 0) atomicAdd(&ranks[i], rank);
    if (i < n && duplicate && !(atomicOr(&ranks[i], kRankDuplicate) & kRankDuplicate))
      duplicates[atomicAdd(&counters->duplicates, 1)] = i;
  }
}

// Keypoint i to its place in the final list, its rank less the duplicates
// ranked before it (few: each keypoint counts them in the list the rank
// count made); duplicates are dropped. Also records where each final
// keypoint came from (its index in `in`). With n_features, retain_kernel
// then shortens the list.
__global__ void __launch_bounds__(kThreads) place_kernel(const Keypoint *in, int in_capacity, const int *ranks,
                                                          const int *duplicates, Keypoint *out, int *out_from,
                                                          Counters *counters) {
  begin_dependent_grid();  // may be launched under the previous kernel's tail
  __shared__ int dropped_ranks[kThreads];
  const int n = min(counters->oriented, in_capacity), dropped = counters->duplicates;
  const int tid = static_cast<int>(threadIdx.x);
  // The same number of rounds in every thread of the block: they meet at its barriers.
  for (int base = static_cast<int>(blockIdx.x) * kThreads; base < n; base += static_cast<int>(gridDim.x) * kThreads) {
    const int i = base + tid;
    const int rank = i < n ? ranks[i] : kRankDuplicate;
    int place = rank;
    for (int k0 = 0; k0 < dropped; k0 += kThreads) {
      __syncthreads();
      if (k0 + tid < dropped) dropped_ranks[tid] = ranks[duplicates[k0 + tid]] & ~kRankDuplicate;
      __syncthreads();
      const int m = min(kThreads, dropped - k0);
      for (int k = 0; k < m; ++k) place -= dropped_ranks[k] < rank ? 1 : 0;
    }
    if (rank & kRankDuplicate) continue;
    out[place] = in[i];
    out_from[place] = i;
  }
  if (blockIdx.x == 0 && tid == 0) counters->final_count = n - dropped;
}

// The n_features strongest of the final list plus ties with the last one
// (OpenCV's retainBest): one thread.
__global__ void retain_kernel(const Keypoint *list, int n_features, Counters *counters) {
  begin_dependent_grid();  // may be launched under the previous kernel's tail
  if (threadIdx.x != 0) return;
  int count = counters->final_count;
  if (count > n_features) {
    const float last = list[n_features - 1].response;
    int keep = n_features;
    while (keep < count && list[keep].response == last) ++keep;
    count = keep;
  }
  counters->final_count = count;
}

constexpr int kDescriptorThreads = 128;

// Exclusive prefix sum of `value` over the block (blockDim.x ==
// kDescriptorThreads): offsets[t] for thread t, offsets[kDescriptorThreads]
// = the total, which is returned. Ends with a barrier.
__device__ int block_exclusive_scan(int value, int *offsets, int *warp_totals) {
  const int tid = static_cast<int>(threadIdx.x), lane = tid % 32, warp = tid / 32;
  int inclusive = value;
  for (int d = 1; d < 32; d *= 2) {
    const int up = __shfl_up_sync(0xffffffffu, inclusive, d);
    if (lane >= d) inclusive += up;
  }
  if (lane == 31) warp_totals[warp] = inclusive;
  __syncthreads();
  int before = 0;
  for (int q = 0; q < warp; ++q) before += warp_totals[q];
  offsets[tid] = before + inclusive - value;
  if (tid == kDescriptorThreads - 1) offsets[kDescriptorThreads] = before + inclusive;
  __syncthreads();
  return offsets[kDescriptorThreads];
}

// How a descriptor kernel sums its histograms: fixed point with integer
// shared atomics (the default: native instructions, deterministic), or
// float shared atomics (CS_SIFT_DESCRIPTOR=float: a compare-and-swap loop
// per addition on sm_70..sm_90, a byte may differ by one between runs).
enum class DescriptorSums { fixed, floating };

constexpr int kDescriptorWarps = kDescriptorThreads / 32;
constexpr int kDescriptorHistograms = kDescriptorWarps;  // copies of the histogram per block
// Blocks per SM the descriptor kernel is compiled for: 12 gives it 40
// registers and 48 warps an SM (12 bytes spilled, -Xptxas -v, sm_90); 16
// capped it at 32 registers for full occupancy and spilled 40 bytes, whose
// reloads the loop paid every sample. With the loop as it is now, 12 was
// the faster (H200, three rounds, frames: 1280 x 720 0.2947-0.2965 ->
// 0.2906-0.2921 ms, 1080p 0.4416-0.4435 -> 0.4393-0.4402, 640 x 480 and 4K
// within 0.002); 14 gives 32 registers, as 16 does.
constexpr int kDescriptorMinBlocks = 12;

// One block of kDescriptorThreads per keypoint of the final list: a square
// window has up to ~6000 samples (radius 38 at the top layer), of which the
// ~3000 in the rotated grid's row runs are enumerated (24 per thread; the
// whole square, with half the lanes idle on samples outside the grid, cost
// twice the iterations). Each warp takes a quarter of the runs' samples,
// its lanes 32 consecutive ones at a time (one or two rows: the four
// neighbour loads of a warp touch a few cache lines instead of one per
// lane), each about 50 flops, exp, sqrt and OpenCV's atan2 polynomial, and
// eight shared atomics into one of four 360-bin histograms (by lane with
// fixed point, by warp with floats); the four are summed in a fixed order
// and warp 0 normalises (four elements a lane).
// With DescriptorSums::fixed the eight atomics are native integer additions
// of round(v * fixed_scale) (sift_math.h: descriptor_fixed_scale proves
// that no entry can overflow), rounded by float additions rather than
// conversions (descriptor_fixed, floor_small: conversions run at a quarter
// of the float rate); with floating, float atomicAdd (a load / add /
// compare-and-swap loop each). sm_90, static SASS of the sample loop: 188
// instructions, ~25 of them only when a lane moves to the next row, no
// conversion but the int-to-float of i and j, three MUFU; before fixed
// point, OpenCV's atan2 and this lane layout: 255, with eight
// compare-and-swap loops (five instructions a pass, a pass more per lost
// race) and eight conversions. Since, a row's run read with one 16-byte
// load (`spans`; the three arrays it replaced were ~25 instructions a pass
// whenever a lane moved to the next row, nine passes in ten) and the
// samples' exp, quotient and square root by the hardware's approximations
// (sample_exp, sample_divide, sample_sqrt): 1080p, Nsight Compute, 35.1 M ->
// 30.0 M instructions, 54.6 -> 48.6 us.
// Tried and not kept (frames, same run): blocks of two warps, 32 per SM
// (every keypoint of a 1080p frame at once instead of 1.3 rounds: 1080p
// 0.467 against 0.457 ms); eight histogram copies (lane % 8): equal or
// slower.
// The keypoints described: the final list (describe()), or every oriented
// keypoint, while the canonical order is being made (run(); the rows are
// then gathered by descriptor_gather_kernel).
enum class DescribedList { final_list, oriented };

template <DescriptorSums kSums>
__global__ void __launch_bounds__(kDescriptorThreads, kDescriptorMinBlocks)
    descriptor_kernel(const float *gauss_pool, const OctaveTable table, int first_octave, const Keypoint *keypoints,
                      const Counters *counters, const int *describe_order, DescribedList list, int capacity,
                      DescriptorFormat format, void *descriptors) {
  begin_dependent_grid();  // may be launched under the previous kernel's tail
  constexpr bool kFixed = kSums == DescriptorSums::fixed;
  using Entry = std::conditional_t<kFixed, unsigned int, float>;
  __shared__ Entry hists[kDescriptorHistograms][kDescriptorHistogramLength];
  __shared__ int span_offset[kDescriptorThreads + 1];  // where each row's samples start in the chunk
  // Per row of the chunk, read with one load: x = where its samples end, and
  // for its sample s the column s + y and the element s + z from the centre;
  // w = its row offset.
  __shared__ int4 spans[kDescriptorThreads];
  __shared__ int warp_totals[kDescriptorWarps];
  Entry *hist = hists[0];
  const int tid = static_cast<int>(threadIdx.x), lane = tid % 32, warp = tid / 32;
  // Integer atomics of different instructions to one address cost nothing
  // extra, only the lanes of one instruction that meet on an address do
  // (they are serialised): neighbouring lanes, on neighbouring samples,
  // usually share a cell and an orientation bin, so lane l adds to copy
  // l % 4 (the copies lie 8 banks apart). Float atomics are compare-and-swap
  // loops, which other warps' additions make retry: one copy per warp.
  Entry *my_hist = hists[kFixed ? lane % kDescriptorHistograms : warp];
  const int n = list == DescribedList::final_list ? counters->final_count : min(counters->oriented, capacity);
  for (int b = static_cast<int>(blockIdx.x); b < n; b += static_cast<int>(gridDim.x)) {
    // The oriented keypoints by their windows' buckets, largest first.
    int item = b;
    if (list == DescribedList::oriented) {
      int bucket = 0;
      while (bucket < kDescribeBuckets - 1 && item >= counters->windows[bucket]) item -= counters->windows[bucket++];
      item = describe_order[bucket * capacity + item];
    }
    const Keypoint kp = keypoints[item];
    int octave = kp.octave & 255;
    octave = octave < 128 ? octave : (-128 | octave);
    const OctaveGeometry &geo = table.o[octave - first_octave];
    const DescriptorWindow w = descriptor_window(kp, first_octave, geo.width, geo.height);
    const PlaneView g = gauss_plane(gauss_pool, geo, w.layer);
    const float value_scale = kFixed ? w.fixed_scale : 1.f;
    const float *centre = g.ptr(w.py, w.px);  // offsets from here stay within the level (32-bit)
    const int pitch = g.pitch;
    for (int b = tid; b < kDescriptorHistogramLength * kDescriptorHistograms; b += kDescriptorThreads)
      hists[0][b] = Entry(0);
    __syncthreads();
    // Only the samples of each row's run inside the rotated grid and the
    // level's border ring (descriptor_row_span: half of the square window)
    // are enumerated, in chunks of kDescriptorThreads rows (one chunk for
    // OpenCV's defaults): each thread finds one row's run, a block scan
    // turns the run lengths into offsets, and warp q takes the q-th quarter
    // of the chunk's samples, lane l its samples l, l + 32, ...
    for (int chunk = -w.radius; chunk <= w.radius; chunk += kDescriptorThreads) {
      int first = 0, last = -1;
      if (chunk + tid <= w.radius) descriptor_row_span(w, chunk + tid, &first, &last);
      const int length = last >= first ? last - first + 1 : 0;
      const int total = block_exclusive_scan(length, span_offset, warp_totals);
      const int start = span_offset[tid];
      spans[tid] = make_int4(start + length, first - start, (chunk + tid) * pitch + first - start, chunk + tid);
      __syncthreads();
      const int share = (total + kDescriptorWarps - 1) / kDescriptorWarps;
      const int s_end = min(total, (warp + 1) * share);
      int s = warp * share + lane;
      if (s < s_end) {
        int row = 0;  // the last row whose run starts at or before s (binary search)
        for (int step = kDescriptorThreads / 2; step > 0; step /= 2)
          if (row + step < kDescriptorThreads && span_offset[row + step] <= s) row += step;
        int4 span = spans[row];
        for (; s < s_end; s += 32) {
          while (s >= span.x) span = spans[++row];  // rows with empty runs are skipped
          DescriptorContribution c;
          if (!descriptor_contribution(centre + (s + span.z), pitch, w, span.w, s + span.y, value_scale, &c)) continue;
#pragma unroll
          for (int k = 0; k < 8; ++k) {
            if constexpr (kFixed)
              atomicAdd(&my_hist[c.index + descriptor_offset(k)], descriptor_fixed(c.values[k]));
            else
              atomicAdd(&my_hist[c.index + descriptor_offset(k)], c.values[k]);
          }
        }
      }
      __syncthreads();  // the spans are rewritten by the next chunk; the histograms are read next
    }
    for (int b = tid; b < kDescriptorHistogramLength; b += kDescriptorThreads) {
      Entry sum = hists[0][b];
#pragma unroll
      for (int q = 1; q < kDescriptorHistograms; ++q) sum += hists[q][b];
      hist[b] = sum;
    }
    __syncthreads();
    if (tid < 32) {
      float v[4], sum = 0.f;
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        if constexpr (kFixed)
          v[q] = descriptor_raw_element(hist, 4 * lane + q, w.fixed_scale);
        else
          v[q] = descriptor_raw_element(hist, 4 * lane + q);
        sum += v[q] * v[q];
      }
      for (int d = 16; d > 0; d /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, d);
      const float threshold = sqrtf(sum) * kDescriptorMagnitudeThreshold;
      sum = 0.f;
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        v[q] = v[q] < threshold ? v[q] : threshold;
        sum += v[q] * v[q];
      }
      for (int d = 16; d > 0; d /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, d);
      const float norm = sqrtf(sum);
      const float scale = kDescriptorByteFactor / (norm > FLT_EPSILON ? norm : FLT_EPSILON);
      float l1 = 0.f;
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        v[q] = descriptor_byte_value(v[q], scale);
        l1 += v[q];
      }
      if (format == DescriptorFormat::opencv) {
        const uchar4 b = make_uchar4(static_cast<unsigned char>(v[0]), static_cast<unsigned char>(v[1]),
                                     static_cast<unsigned char>(v[2]), static_cast<unsigned char>(v[3]));
        reinterpret_cast<uchar4 *>(static_cast<unsigned char *>(descriptors) +
                                   static_cast<size_t>(item) * kDescriptorLength)[lane] = b;
      } else {
        if (format == DescriptorFormat::rootsift) {
          for (int d = 16; d > 0; d /= 2) l1 += __shfl_xor_sync(0xffffffffu, l1, d);
#pragma unroll
          for (int q = 0; q < 4; ++q) v[q] = l1 > 0.f ? sqrtf(v[q] / l1) : 0.f;
        }
        reinterpret_cast<float4 *>(static_cast<float *>(descriptors) + static_cast<size_t>(item) * kDescriptorLength)[lane] =
            make_float4(v[0], v[1], v[2], v[3]);
      }
    }
    __syncthreads();
  }
}

// Row `from[j]` of `rows` to row j of `out` for each keypoint j of the
// final list (`row_bytes`, a multiple of 16): a warp per row.
__global__ void __launch_bounds__(kThreads) descriptor_gather_kernel(const uint4 *rows, const int *from,
                                                                      const Counters *counters, int row_bytes,
                                                                      uint4 *out) {
  begin_dependent_grid();  // may be launched under the previous kernel's tail
  const int n = counters->final_count, words = row_bytes / 16;
  const int lane = static_cast<int>(threadIdx.x) % 32, warps = static_cast<int>(gridDim.x * blockDim.x) / 32;
  for (int j = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x) / 32; j < n; j += warps) {
    const uint4 *row = rows + static_cast<size_t>(from[j]) * words;
    for (int k = lane; k < words; k += 32) out[static_cast<size_t>(j) * words + k] = row[k];
  }
}

// ------------------------------------------------------------- buffers

class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(size_t bytes, int device) : ptr_(device_alloc(std::max<size_t>(bytes, 1), device)), device_(device) {}
  ~DeviceBuffer() { reset(); }
  DeviceBuffer(DeviceBuffer &&o) noexcept : ptr_(o.ptr_), device_(o.device_) { o.ptr_ = nullptr; }
  DeviceBuffer &operator=(DeviceBuffer &&o) noexcept {
    if (this != &o) {
      reset();
      ptr_ = o.ptr_;
      device_ = o.device_;
      o.ptr_ = nullptr;
    }
    return *this;
  }
  void reset() noexcept {
    if (ptr_) device_free(ptr_, device_);
    ptr_ = nullptr;
  }
  template <typename T>
  T *as() const {
    return static_cast<T *>(ptr_);
  }

 private:
  void *ptr_ = nullptr;
  int device_ = -1;
};

int round_up(int v, int m) { return (v + m - 1) / m * m; }

// An instantiated CUDA graph. Destroying one that is still running is safe
// (CUDA frees it when it completes).
class GraphExec {
 public:
  GraphExec() = default;
  explicit GraphExec(cudaGraphExec_t exec) : exec_(exec) {}
  ~GraphExec() { reset(); }
  GraphExec(GraphExec &&o) noexcept : exec_(o.exec_) { o.exec_ = nullptr; }
  GraphExec &operator=(GraphExec &&o) noexcept {
    if (this != &o) {
      reset();
      exec_ = o.exec_;
      o.exec_ = nullptr;
    }
    return *this;
  }
  void reset() noexcept {
    if (exec_) cudaGraphExecDestroy(exec_);
    exec_ = nullptr;
  }
  explicit operator bool() const { return exec_ != nullptr; }
  void launch(cudaStream_t stream) const { check_cuda(cudaGraphLaunch(exec_, stream), "cudaGraphLaunch"); }

 private:
  cudaGraphExec_t exec_ = nullptr;
};

// Records what `enqueue(stream)` launches on `capture_stream` (nothing
// runs) and instantiates it. The engine's own stream is used for capture,
// so that the caller's stream may be the legacy default stream, which
// cannot be captured.
template <class Enqueue>
GraphExec capture_graph(cudaStream_t capture_stream, Enqueue &&enqueue) {
  check_cuda(cudaStreamBeginCapture(capture_stream, cudaStreamCaptureModeThreadLocal), "cudaStreamBeginCapture");
  cudaGraph_t graph = nullptr;
  try {
    enqueue(capture_stream);
  } catch (...) {
    cudaStreamEndCapture(capture_stream, &graph);  // leaves the stream usable
    if (graph) cudaGraphDestroy(graph);
    throw;
  }
  check_cuda(cudaStreamEndCapture(capture_stream, &graph), "cudaStreamEndCapture");
  cudaGraphExec_t exec = nullptr;
  // Kernel nodes keep the priority of the stream they were captured from
  // (the pyramid's chain is urgent).
  const cudaError_t err = cudaGraphInstantiate(&exec, graph, cudaGraphInstantiateFlagUseNodePriority);
  cudaGraphDestroy(graph);
  check_cuda(err, "cudaGraphInstantiate");
  return GraphExec(exec);
}

// Comparison and debugging switches, read when the engine is made: true
// when the environment variable `name` is set to `value`.
bool env_is(const char *name, const char *value) {
  const char *v = std::getenv(name);
  return v && std::string(v) == value;
}

// CS_SIFT_GRAPHS=0 launches every kernel directly instead of replaying
// graphs (the same launches in the same order: for debugging and for
// comparing the two on a GPU).
bool graphs_enabled() { return !env_is("CS_SIFT_GRAPHS", "0"); }

// CS_SIFT_FUSED=0 builds the small octaves with the per-level kernels too
// (for comparison and debugging; the results are the same bit for bit).
bool fused_enabled() { return !env_is("CS_SIFT_FUSED", "0"); }

// CS_SIFT_UPSAMPLE=kernel: the input doubled into a plane (upsample_kernel),
// then blurred, instead of level 0 straight from the input.
bool upsample_kernel_chosen() { return env_is("CS_SIFT_UPSAMPLE", "kernel"); }
// CS_SIFT_UPSAMPLE=staged: level 0 doubles the input while staging its
// tiles instead of from a doubled copy (comparison).
bool upsample_staged() { return env_is("CS_SIFT_UPSAMPLE", "staged"); }

// CS_SIFT_STAGE=floats: blur tiles staged in 4-byte pieces only, instead of
// 16-byte ones where the tile allows (comparison; the same levels bit for bit).
bool quad_staging_enabled() { return !env_is("CS_SIFT_STAGE", "floats"); }

// CS_SIFT_UPPER_EARLY=0: the large octaves' upper levels wait for the
// whole chain of lower levels instead of their own octave's (comparison).
bool upper_early_enabled() { return !env_is("CS_SIFT_UPPER_EARLY", "0"); }

// CS_SIFT_ORDER=0, 1 or 2: run() uses that frame order (see enqueue_frame)
// instead of timing each on the first frames of a size; CS_SIFT_CLUSTER_START=0
// or 1 likewise the small octaves' cluster from the first small octave or one
// octave later (FramePlanTuner).
int env_choice(const char *name, int choices) {
  for (int c = 0; c < choices; ++c)
    if (env_is(name, std::to_string(c).c_str())) return c;
  return -1;
}
int fixed_frame_order() { return env_choice("CS_SIFT_ORDER", FramePlanTuner::kOrders); }
int fixed_cluster_start() { return env_choice("CS_SIFT_CLUSTER_START", FramePlanTuner::kClusterStarts); }

// CS_SIFT_PRIORITY=0: the pyramid's chain on an ordinary-priority stream.
bool priority_enabled() { return !env_is("CS_SIFT_PRIORITY", "0"); }

// CS_SIFT_DELAY=<branch>:<us> (branch chain, upper or main): run() waits
// that long at the end of the branch's work (spin_kernel). How much the
// frame grows says how far the branch is from the critical path, which the
// timing events of --trace cannot show (they keep kernels from overlapping).
struct BranchDelays {
  int chain = 0, upper = 0, main = 0;  // microseconds
};
BranchDelays branch_delays() {
  BranchDelays d;
  const char *v = std::getenv("CS_SIFT_DELAY");
  if (!v) return d;
  const std::string s(v);
  const size_t colon = s.find(':');
  if (colon == std::string::npos) return d;
  const std::string branch = s.substr(0, colon);
  const int us = std::atoi(s.c_str() + colon + 1);
  if (branch == "chain") d.chain = us;
  if (branch == "upper") d.upper = us;
  if (branch == "main") d.main = us;
  return d;
}

// CS_SIFT_DESCRIPTOR=float sums descriptor histograms with float shared
// atomics, as before fixed point (for comparison: the same kernel
// otherwise); anything else, or unset, with fixed-point integer ones
// (DescriptorSums::fixed).
bool fixed_descriptors_enabled() { return !env_is("CS_SIFT_DESCRIPTOR", "float"); }

// Kernels that follow a kernel are launched to overlap its tail
// (launch_kernel); CS_SIFT_PDL=0 launches them plainly, for comparison.
bool dependent_launch_enabled() { return !env_is("CS_SIFT_PDL", "0"); }

// run() describes the oriented keypoints while their canonical order is
// made (enqueue_frame); CS_SIFT_DESCRIBE_EARLY=0 describes the final list
// after it, for comparison.
bool describe_early_enabled() { return !env_is("CS_SIFT_DESCRIBE_EARLY", "0"); }

// run() finds the extrema through the blurs' prefilter
// (ExtremaPrefilter; octave 0 and the later large octaves, see
// prefilter_octaves_override) where octave 0 has at least kPrefilterFromSamples
// samples a level. H200, 2026-12-03, three rounds of 300 frames against the
// dense kernel: 4K (doubled: 33 M samples) 1.150-1.154 -> 1.045-1.051 ms,
// but 1080p (8.3 M) 0.382-0.383 -> 0.385-0.388 and 1280 x 720 0.249-0.252
// -> 0.254-0.256 (there the levels' extra work costs what the dense pass
// saved: its reads of 33 MB levels partly hit the 50 MB L2, and it runs
// beside the other branches). CS_SIFT_PREFILTER=1 or 0 prefilters at every
// size or at none (tests, comparison); CS_SIFT_PREFILTER_HITS=n lists at
// most n hits (tests: an overflowing list takes the dense fallback).
constexpr long long kPrefilterFromSamples = 16LL << 20;
enum class PrefilterChoice { by_size, always, never };
PrefilterChoice prefilter_choice() {
  if (env_is("CS_SIFT_PREFILTER", "1")) return PrefilterChoice::always;
  if (env_is("CS_SIFT_PREFILTER", "0")) return PrefilterChoice::never;
  return PrefilterChoice::by_size;
}
int prefilter_hits_override() {
  const char *v = std::getenv("CS_SIFT_PREFILTER_HITS");
  return v && *v ? std::max(0, std::atoi(v)) : 0;
}
// Where octave 0 is prefiltered, so is every later octave built level by
// level (the octaves before the small octaves' cluster): their dense
// extrema, on the caller's stream after the upper branch, become part of
// the prefiltered kernel, and their levels' extra work falls on the chain
// and upper branches, which have slack where octave 0 is this large.
// H200, 2026-12-03, two rounds of 300 frames, 4K, prefiltered octaves 1 /
// 2 / 3 / 4: 1.040-1.041 / 1.031-1.035 / 1.025-1.027 / 1.022-1.024 ms (the
// code before 1.042-1.043); 1080p with CS_SIFT_PREFILTER=1, 1 / 2 / 3:
// 0.386-0.387 / 0.386-0.387 / 0.386-0.388. CS_SIFT_PREFILTER_OCTAVES=n
// prefilters octaves 0 .. n - 1 only (tests, comparison).
int prefilter_octaves_override() {
  const char *v = std::getenv("CS_SIFT_PREFILTER_OCTAVES");
  return v && *v ? std::max(0, std::atoi(v)) : 0;
}

// CS_SIFT_CLUSTER=8: clusters of 8 blocks even where 16 can run (tests, tuning).
int fused_cluster_limit() { return env_is("CS_SIFT_CLUSTER", "8") ? 8 : 16; }

}  // namespace

struct CudaSift::Impl {
  Params params;
  int device = 0;
  Capacity requested;
  int sm_count = 1;
  DetectionConstants constants{};
  std::vector<BlurTaps> taps;  // [0] initial, [i] level i

  // Per image size.
  int width = 0, height = 0;
  bool have_geometry = false;
  OctaveTable table{};
  int extrema_blocks = 0;
  int candidate_capacity = 0, keypoint_capacity = 0;
  // duplicates: the oriented keypoints dropped as such (rank_count_kernel).
  DeviceBuffer gauss, candidates, refined, oriented, ranks, duplicates, final_list, descriptors, counters;
  // run(): where each final keypoint came from in `oriented`, and the
  // descriptors in the order of `oriented` (enqueue_frame);
  // describe_order: the oriented keypoints in kDescribeBuckets lists of the
  // keypoint capacity each, by their windows' size (orientation_kernel).
  DeviceBuffer final_from, oriented_descriptors, describe_order;
  DescriptorFormat format = DescriptorFormat::opencv;
  bool described = false;  // descriptors belong to the current final list

  // Small octaves in one launch (small_octaves_kernel): possible when the
  // device has clusters (sm_90+) and an octave has at most kMaxFusedLevels levels; used from
  // octave `fused.first` on (table.count: not at all). Per image size the
  // cluster can start at the first small octave or one octave later (a
  // frame plan's cluster_start: FramePlanTuner); `fused` is the start of the
  // kernels being enqueued.
  struct ClusterStart {
    int first = 0;                 // the first octave the cluster builds
    int capacity = 0, halo = 0;    // floats of its first octave's band, and of the band with its halo rows
  };
  bool fused_possible = false;
  size_t fused_shared_max = 0;  // the device's opt-in limit, capped at kFusedSharedLimit
  ClusterStart cluster_starts[FramePlanTuner::kClusterStarts], fused;
  int cluster_start_count = 1;
  int fused_blocks = 16;
  int fused_max_blocks = 16;  // CS_SIFT_CLUSTER=8 keeps the portable size
  int fused_radius = 0;  // the widest radius of levels 1..n_layers + 2

  // Per-frame launches are replayed from CUDA graphs, made on first use for
  // the current image size (they hold its buffers, octave table and launch
  // sizes; the parameters are fixed per engine) and dropped when the size
  // changes: ~60 launches per 1080p frame otherwise cost ~5 us each. Level
  // 0 is not in a graph: it is the one kernel that reads the caller's image,
  // whose pointer and pitch change from frame to frame; it is launched
  // directly, and being the largest kernel of the pyramid it covers the
  // host's enqueue of the graph that follows it.
  bool use_graphs = true;
  bool upsample_while_staging = false;  // CS_SIFT_UPSAMPLE=staged
  bool direct_doubling = true;           // CS_SIFT_UPSAMPLE (neither kernel nor staged)
  // Per image size: doubled_level0_kernel's tables (doubling_blur_axis),
  // doubling_taps coefficients per output column and row (0: not used).
  DeviceBuffer doubling_buffer;
  DoublingTables doubling{};
  int doubling_taps = 0;
  bool quad_staging = true;             // CS_SIFT_STAGE (quad_staging_enabled)
  bool upper_early = true;              // CS_SIFT_UPPER_EARLY (upper_early_enabled)
  BranchDelays delays;                  // CS_SIFT_DELAY (branch_delays)
  bool fixed_descriptors = true;  // CS_SIFT_DESCRIPTOR (fixed_descriptors_enabled)
  bool dependent_launch = true;   // CS_SIFT_PDL (dependent_launch_enabled)
  Stream capture_stream;
  GraphExec pyramid_graph, detect_graph, describe_graphs[3];  // describe: per DescriptorFormat
  // run(): everything after level 0, per DescriptorFormat and frame plan.
  GraphExec frame_graphs[3][FramePlanTuner::kPlans];
  // Which plan run() uses, chosen per frame size by timing frames between
  // pairs of events (`timing_pairs`, reused; `timed_frames`: in flight).
  FramePlanTuner plan_tuner;
  struct TimedFrame {
    EventHandle start, stop;
    int plan;
  };
  std::vector<TimedFrame> timing_pairs, timed_frames;

  // Three branches (enqueue_pyramid_levels); in a graph the forks and
  // joins are its edges.
  Stream chain_stream, upper_stream;
  Event octave0_event, chain_event, chain_done, upper_done;
  std::vector<Event> lower_done;  // [o]: octave o's lower levels built (upper levels may start)
  Event oriented_done, ordered;  // run(): describing while ordering
  Event upper_extrema, chain_extrema;  // frame order 1: the upper and chain branches' extrema found
  bool describe_while_ordering = true;  // CS_SIFT_DESCRIBE_EARLY (describe_early_enabled)
  // run(): the large octaves' extrema through the blurs' prefilter (prefilter_choice), its hits' list.
  PrefilterChoice prefilter_choice = PrefilterChoice::by_size;
  int prefilter_hits_limit = 0;  // CS_SIFT_PREFILTER_HITS; 0: from the frame size
  int prefilter_octaves_limit = 0;  // CS_SIFT_PREFILTER_OCTAVES; 0: every octave before the small ones
  bool prefilter = false;
  int prefiltered_octaves = 0;  // octaves 0 .. n - 1 when `prefilter`, at most the first small octave
  Event prefilter_levels_done;  // the last prefiltered octave's levels made (upper branch), when n > 1
  int prefilter_capacity = 0;
  DeviceBuffer prefilter_hits;

  // CudaSift::next_frame_start(): recorded once the first octave's levels
  // are made; offered (`stagger`) where one of its levels is a quarter of
  // the L2 or more (CS_SIFT_STAGGER=0 / 1 forces it off / on).
  Event octave0_built;
  int l2_bytes = 0;
  int stagger_choice = -1;
  bool stagger = false;

  // CS_SIFT_TRACE=1: a timing event after each kernel of run() (trace()).
  // In the frame graphs they are event-record nodes, so each graph keeps
  // the marks captured with it.
  struct Mark {
    std::string kernel;
    const char *branch;
    EventHandle event;
  };
  bool tracing = false;
  std::vector<Mark> frame_marks[3][FramePlanTuner::kPlans], input_marks;  // as frame_graphs; upsampling and level 0
  std::vector<Mark> *marking = nullptr;           // where marks go now (none: not tracing)
  EventHandle frame_start = nullptr;
  int traced_format = -1, traced_plan = 0;

  // A stream being enqueued into, and whether what was last enqueued on it
  // is a kernel (next_kernel).
  struct Lane {
    cudaStream_t stream;
    bool after_kernel = false;
    const char *name = "main";  // for the trace (main, chain, upper)
  };
  struct Branches {
    Lane main, chain, upper;
  };

  // Runs `enqueue` on `stream`, through `graph` (captured on first use).
  template <class Enqueue>
  void replay(GraphExec &graph, cudaStream_t stream, Enqueue &&enqueue) {
    if (!use_graphs) {
      enqueue(stream);
      return;
    }
    if (!graph) graph = capture_graph(capture_stream.get(), enqueue);
    graph.launch(stream);
  }

  // Hands the frames timed so far that the GPU has finished to the tuner
  // (without waiting) and frees their events.
  void collect_frame_times() {
    size_t done = 0;
    while (done < timed_frames.size() && event_done(timed_frames[done].stop)) {
      const TimedFrame &t = timed_frames[done++];
      plan_tuner.add(t.plan, event_elapsed_ms(t.start, t.stop));
      timing_pairs.push_back(t);
    }
    timed_frames.erase(timed_frames.begin(), timed_frames.begin() + static_cast<long>(done));
  }
  // A pair of timing events for the next frame, or none (null start) when
  // every pair is in flight.
  TimedFrame timing_pair(int plan) {
    constexpr size_t kPairs = 2 * (FramePlanTuner::kTimedFrames + 1) * FramePlanTuner::kPlans;
    if (timing_pairs.empty() && timed_frames.size() < kPairs)
      timing_pairs.push_back({timing_event_create(device), timing_event_create(device), 0});
    if (timing_pairs.empty()) return {nullptr, nullptr, plan};
    TimedFrame t = timing_pairs.back();
    timing_pairs.pop_back();
    t.plan = plan;
    return t;
  }

  ~Impl() {
    drop_graphs();  // before the events their record nodes refer to
    clear_marks(input_marks);
    if (frame_start) event_destroy(frame_start);
    for (const std::vector<TimedFrame> *pairs : {&timing_pairs, &timed_frames})
      for (const TimedFrame &t : *pairs) {
        event_destroy(t.start);
        event_destroy(t.stop);
      }
  }

  void drop_graphs() noexcept {
    pyramid_graph.reset();
    detect_graph.reset();
    for (GraphExec &g : describe_graphs) g.reset();
    for (GraphExec(&per_plan)[FramePlanTuner::kPlans] : frame_graphs)
      for (GraphExec &g : per_plan) g.reset();
    for (std::vector<Mark>(&per_plan)[FramePlanTuner::kPlans] : frame_marks)
      for (std::vector<Mark> &marks : per_plan) clear_marks(marks);
  }

  void ensure(int w, int h, cudaStream_t stream) {
    if (have_geometry && w == width && h == height) return;
    have_geometry = false;
    drop_graphs();  // they refer to the buffers and the octave table of the old size
    timing_pairs.insert(timing_pairs.end(), timed_frames.begin(), timed_frames.end());  // nor its frames in flight
    timed_frames.clear();
    // Only the octaves that can hold a keypoint are built (the rest of
    // OpenCV's octave_count are a few samples across: at 1080p two more
    // octaves, ten levels of the small octaves' chain of barriers).
    const int n_octaves = detectable_octave_count(w, h, params.upsample);
    const int base_w = params.upsample ? 2 * w : w, base_h = params.upsample ? 2 * h : h;
    if (n_octaves > kMaxOctaves || base_w > kMaxBaseSide || base_h > kMaxBaseSide)
      throw std::invalid_argument("CudaSift: " + std::to_string(w) + "x" + std::to_string(h) +
                                  " is too large (first octave sides up to " + std::to_string(kMaxBaseSide) + ")");
    const int layers = params.n_octave_layers;
    const size_t octave0_level_bytes = sizeof(float) * static_cast<size_t>(base_w) * static_cast<size_t>(base_h);
    stagger = stagger_choice >= 0 ? stagger_choice == 1 : octave0_level_bytes * 4 >= static_cast<size_t>(l2_bytes);
    table = OctaveTable{};
    table.count = n_octaves;
    table.layers = layers;
    int ow = params.upsample ? 2 * w : w, oh = params.upsample ? 2 * h : h;
    size_t gauss_total = 0;
    int blocks = 0;
    for (int o = 0; o < n_octaves; ++o) {
      if (o > 0) {
        ow /= 2;
        oh /= 2;
      }
      OctaveGeometry &g = table.o[o];
      g.width = ow;
      g.height = oh;
      g.pitch = round_up(ow, 32);
      g.level_stride = static_cast<size_t>(g.pitch) * static_cast<size_t>(oh);
      g.gauss_offset = gauss_total;
      gauss_total += static_cast<size_t>(layers + 3) * g.level_stride;  // levels 0..n_layers + 2
      g.block_begin = blocks;
      // Every octave built has a tested pixel (sides of at least 2 kImageBorder + 1). Tile t tests columns
      // 2 + 60 t .. 61 + 60 t, strip s rows kImageBorder + R s .. + R - 1 with R = strip_rows, those inside the
      // border (extrema_kernel).
      const int last_column = ow - kImageBorder - 1;
      g.blocks_x = (last_column - kExtremaLaneColumns + kExtremaTileColumns) / kExtremaTileColumns;
      auto strips = [&](int rows) { return (oh - 2 * kImageBorder + rows - 1) / rows; };
      auto warps = [&](int rows) { return g.blocks_x * strips(rows); };
      g.strip_rows = warps(kExtremaLongestStripRows) >= kExtremaLongestStripWarps ? kExtremaLongestStripRows
                     : warps(kExtremaLongStripRows) >= kExtremaLongStripWarps     ? kExtremaLongStripRows
                                                                                  : kExtremaStripRows;
      while (g.strip_rows > kExtremaFewestStripRows && warps(g.strip_rows) < kExtremaEnoughWarps)
        g.strip_rows /= 2;
      blocks += g.blocks_x * ((strips(g.strip_rows) + kWarpsPerBlock - 1) / kWarpsPerBlock);
    }
    extrema_blocks = blocks;
    const long long pixels = static_cast<long long>(w) * h;
    keypoint_capacity = requested.keypoints > 0
                            ? requested.keypoints
                            : static_cast<int>(std::clamp<long long>(pixels / 16, 8192, 1 << 20));
    candidate_capacity = requested.candidates > 0 ? requested.candidates : 2 * keypoint_capacity;
    DeviceGuard guard(device);
    choose_fused_octaves();
    // Natural pictures list 0.06-0.2 % of octave 0's tested samples (ExtremaPrefilter); more take the
    // dense fallback.
    const long long octave0_level = static_cast<long long>(table.o[0].width) * table.o[0].height;
    prefilter = prefilter_choice == PrefilterChoice::always ||
                (prefilter_choice == PrefilterChoice::by_size && octave0_level >= kPrefilterFromSamples);
    prefiltered_octaves = 0;
    long long prefiltered_samples = 0;
    if (prefilter) {
      // Octaves after the first cluster start are small in every plan; with
      // the later start one of them is built level by level, with dense extrema.
      const int large = cluster_starts[0].first;
      prefiltered_octaves = prefilter_octaves_limit > 0 ? std::min(prefilter_octaves_limit, large) : large;
      for (int o = 0; o < prefiltered_octaves; ++o)
        prefiltered_samples += static_cast<long long>(table.o[o].width) * table.o[o].height * layers;
    }
    prefilter_capacity = prefilter_hits_limit > 0
                             ? prefilter_hits_limit
                             : static_cast<int>(std::clamp<long long>(prefiltered_samples / 64, 65536, 1 << 24));
    plan_tuner.reset(cluster_start_count);  // the other size's times say nothing of this one
    gauss = DeviceBuffer();
    gauss = DeviceBuffer(gauss_total * sizeof(float), device);
    candidates = DeviceBuffer(static_cast<size_t>(candidate_capacity) * sizeof(Candidate), device);
    prefilter_hits = DeviceBuffer();
    if (prefilter)
      prefilter_hits = DeviceBuffer(static_cast<size_t>(prefilter_capacity) * sizeof(Candidate), device);
    refined = DeviceBuffer(static_cast<size_t>(candidate_capacity) * sizeof(RefinedExtremum), device);
    oriented = DeviceBuffer(static_cast<size_t>(keypoint_capacity) * sizeof(Keypoint), device);
    ranks = DeviceBuffer(static_cast<size_t>(keypoint_capacity) * sizeof(int), device);
    duplicates = DeviceBuffer(static_cast<size_t>(keypoint_capacity) * sizeof(int), device);
    final_list = DeviceBuffer(static_cast<size_t>(keypoint_capacity) * sizeof(Keypoint), device);
    descriptors = DeviceBuffer(static_cast<size_t>(keypoint_capacity) * kDescriptorLength * sizeof(float), device);
    oriented_descriptors = DeviceBuffer();
    if (describe_while_ordering)
      oriented_descriptors = DeviceBuffer(static_cast<size_t>(keypoint_capacity) * kDescriptorLength * sizeof(float), device);
    final_from = DeviceBuffer(static_cast<size_t>(keypoint_capacity) * sizeof(int), device);
    describe_order = DeviceBuffer(static_cast<size_t>(keypoint_capacity) * kDescribeBuckets * sizeof(int), device);
    if (!counters.as<Counters>()) counters = DeviceBuffer(sizeof(Counters), device);
    make_doubling_tables(w, h, stream);
    width = w;
    height = h;
    have_geometry = true;
  }

  // The cluster's bands when it starts at octave o.
  ClusterStart cluster_start_at(int o, int blocks) const {
    if (o >= table.count) return {table.count, 0, 0};
    const int band = fused_band(table.o[o].height, blocks);
    return {o, band * table.o[o].width, (band + 2 * fused_radius) * table.o[o].width};
  }

  // The first octave from which the rest are small (kFusedShareOfFirst,
  // kFusedAlwaysPixels), hold kFusedPixels or fewer and the largest band
  // fits the shared memory (later octaves are smaller); and, where the
  // cluster would build two octaves or more, the start one octave later.
  void choose_fused_octaves() {
    cluster_start_count = 1;
    for (const int blocks : kClusterBlocks) {
      if (blocks > fused_max_blocks) continue;
      fused_blocks = blocks;
      fused = cluster_start_at(table.count, blocks);
      if (!fused_possible) break;
      long long pixels = 0;
      for (int o = table.count - 1; o >= 0; --o) {
        pixels += static_cast<long long>(table.o[o].width) * table.o[o].height;
        const ClusterStart start = cluster_start_at(o, blocks);
        const long long own = static_cast<long long>(table.o[o].width) * table.o[o].height;
        const long long first = static_cast<long long>(table.o[0].width) * table.o[0].height;
        const bool small = own * kFusedShareOfFirst <= first || own <= kFusedAlwaysPixels;
        if (!small || pixels > kFusedPixels || fused_shared_bytes(start.capacity, start.halo) > fused_shared_max) break;
        fused = start;
      }
      if (fused.first == table.count) break;
      int active = 0;  // can a cluster of this size run at all (e.g. on a small MIG slice)?
      cudaLaunchConfig_t config = fused_config(nullptr);
      cudaLaunchAttribute attribute = fused_cluster_attribute();
      config.attrs = &attribute;
      config.numAttrs = 1;
      if (cudaOccupancyMaxActiveClusters(&active, small_octaves_kernel, &config) == cudaSuccess && active >= 1) {
        cluster_starts[0] = fused;
        if (fused.first + 2 <= table.count) {  // the later start's bands are narrower: its cluster runs too
          cluster_starts[1] = cluster_start_at(fused.first + 1, blocks);
          cluster_start_count = 2;
        }
        return;
      }
      cudaGetLastError();
      fused = cluster_start_at(table.count, blocks);  // no cluster size runs here
    }
    cluster_starts[0] = fused;
  }

  cudaLaunchConfig_t fused_config(cudaStream_t stream) const {
    cudaLaunchConfig_t config{};
    config.gridDim = dim3(static_cast<unsigned>(fused_blocks));
    config.blockDim = dim3(kFusedThreads);
    config.dynamicSmemBytes = fused_shared_bytes(fused.capacity, fused.halo);
    config.stream = stream;
    return config;
  }
  cudaLaunchAttribute fused_cluster_attribute() const {
    cudaLaunchAttribute a{};
    a.id = cudaLaunchAttributeClusterDimension;
    a.val.clusterDim.x = static_cast<unsigned>(fused_blocks);
    a.val.clusterDim.y = 1;
    a.val.clusterDim.z = 1;
    return a;
  }

  void launch_small_octaves(Lane &lane) {
    const cudaStream_t stream = lane.stream;
    lane.after_kernel = true;
    FusedPyramid f{};
    f.table = table;
    f.first = fused.first;
    f.blocks = fused_blocks;
    f.band_capacity = fused.capacity;
    f.halo_capacity = fused.halo;
    f.gauss = gauss.as<float>();
    for (size_t i = 1; i < taps.size(); ++i) f.taps[i] = taps[i];
    cudaLaunchConfig_t config = fused_config(stream);
    cudaLaunchAttribute attribute = fused_cluster_attribute();
    config.attrs = &attribute;
    config.numAttrs = 1;
    check_cuda(cudaLaunchKernelEx(&config, small_octaves_kernel, f), "cudaLaunchKernelEx (SIFT small octaves)");
    mark(lane, "small octaves");
  }

  float *gauss_level(int o, int level) const {
    return gauss.as<float>() + table.o[o].gauss_offset + static_cast<size_t>(level) * table.o[o].level_stride;
  }

  // The next kernel on `lane`: whether it may overlap the tail of the one
  // before it (launch_kernel), which it may when that is what was last
  // enqueued there (not an event wait or a memset).
  bool next_kernel(Lane &lane) const {
    const bool overlap = dependent_launch && lane.after_kernel;
    lane.after_kernel = true;
    return overlap;
  }
  static void wait(Lane &lane, const Event &event) {
    stream_wait(lane.stream, event.get());
    lane.after_kernel = false;
  }
  template <typename... KernelParams, typename... Args>
  void launch(Lane &lane, const char *what, void (*kernel)(KernelParams...), dim3 grid, dim3 block, size_t shared,
              Args &&...args) {
    launch_kernel(what, kernel, grid, block, shared, lane.stream, next_kernel(lane), std::forward<Args>(args)...);
    mark(lane, what);
  }
  // Marks where `lane` is now, when tracing (an external event record, so
  // that a captured graph records it on every replay).
  void mark(Lane &lane, std::string what) {
    if (!marking) return;
    marking->push_back({std::move(what), lane.name, timing_event_create(device)});
    record_external(marking->back().event, lane);
  }
  // Records `event` where `lane` is now, for the caller to wait on: in a
  // captured graph as a record node, replayed with the graph.
  static void record_external(EventHandle event, Lane &lane) {
    cudaStreamCaptureStatus capturing = cudaStreamCaptureStatusNone;
    check_cuda(cudaStreamIsCapturing(lane.stream, &capturing), "cudaStreamIsCapturing");
    check_cuda(cudaEventRecordWithFlags(event, lane.stream,
                                        capturing == cudaStreamCaptureStatusActive ? cudaEventRecordExternal
                                                                                   : cudaEventRecordDefault),
               "cudaEventRecordWithFlags");
    lane.after_kernel = false;  // the next kernel follows the record, not the kernel
  }
  static void clear_marks(std::vector<Mark> &marks) noexcept {
    for (Mark &m : marks) event_destroy(m.event);
    marks.clear();
  }

  LevelSource level_source(const float *level, int pitch) const { return {level, pitch, quad_staging}; }
  // `source_out`: where to store the staged source too (see DownsampleSource).
  template <class Source>
  void blur(const Source &src, int o, int level, Lane &lane, float *source_out = nullptr,
            const ExtremaPrefilter &prefilter = {}) {
    const OctaveGeometry &g = table.o[o];
    const BlurTaps &t = taps[static_cast<size_t>(level)];
    const long long tall_tiles = static_cast<long long>((g.width + kTileColumns - 1) / kTileColumns) *
                                 ((g.height + kTileRows - 1) / kTileRows);
    const int tile_rows = tall_tiles < static_cast<long long>(kShortTilesBelow) * sm_count ? kShortTileRows : kTileRows;
    // Odd levels take their tiles bottom to top: the rows their source level
    // wrote last are the ones still in L2.
    const bool upward = level % 2 == 1;
    dispatch_blur(std::make_integer_sequence<int, kMaxUnrolledRadius>(), src, t, tile_rows, gauss_level(o, level),
                  source_out, g.pitch, g.width, g.height, upward, prefilter, lane.stream, next_kernel(lane));
    if (marking) mark(lane, "blur octave " + std::to_string(o) + " level " + std::to_string(level));
  }

  // Level 0 of octave 0 from the caller's image. Doubled first when
  // upsampling, into the top level's plane (free until the octave's last blur writes it).
  template <typename T>
  void upsample_input(const DeviceImage &image, Lane &lane) {
    const OctaveGeometry &g = table.o[0];
    float *const top_level = gauss_level(0, params.n_octave_layers + 2);
    const dim3 block(32, kThreads / 32),  // (the doubled sides: g.width = 2 image.width)
        grid((g.width + 32 * kUpsampleColumns - 1) / (32 * kUpsampleColumns), (image.height + block.y - 1) / block.y);
    launch(lane, "SIFT upsample kernel", upsample_kernel<T>, grid, block, 0, static_cast<const T *>(image.data),
           image.pitch_bytes, image.width, image.height, top_level, g.pitch);
    blur(level_source(top_level, g.pitch), 0, 0, lane);
  }
  // doubled_level0_kernel's tables for a w x h input, when it is used,
  // copied in the order of `stream` (a plain cudaMemcpy from pageable
  // memory may return before its DMA is done, and the frame's kernel, on
  // another stream, could read the tables first).
  void make_doubling_tables(int w, int h, cudaStream_t stream) {
    doubling_buffer = DeviceBuffer();
    doubling_taps = 0;
    if (!params.upsample || !direct_doubling) return;
    const DoublingBlurAxis x = doubling_blur_axis(w, taps[0]), y = doubling_blur_axis(h, taps[0]);
    // Sides shorter than R + 2 (sums of fewer samples on one axis): the doubled plane.
    if (x.taps != y.taps || x.taps > kMaxDoublingTaps) return;
    std::vector<unsigned char> host;
    auto append = [&host](const auto &v) {
      const size_t at = host.size(), bytes = v.size() * sizeof(v[0]);
      host.resize(at + (bytes + 15) / 16 * 16);
      std::memcpy(host.data() + at, v.data(), bytes);
      return at;
    };
    const size_t first_x = append(x.first), first_y = append(y.first);
    const size_t weight_x = append(x.coefficients), weight_y = append(y.coefficients);
    doubling_buffer = DeviceBuffer(host.size(), device);
    check_cuda(cudaMemcpyAsync(doubling_buffer.as<unsigned char>(), host.data(), host.size(),
                               cudaMemcpyHostToDevice, stream),
               "cudaMemcpyAsync (SIFT doubling tables)");
    const unsigned char *base = doubling_buffer.as<unsigned char>();
    doubling = {reinterpret_cast<const int *>(base + first_x), reinterpret_cast<const int *>(base + first_y),
                reinterpret_cast<const float *>(base + weight_x), reinterpret_cast<const float *>(base + weight_y),
                y.interior_begin, y.interior_end};
    doubling_taps = x.taps;
  }
  template <typename T>
  void doubled_level0(const DeviceImage &image, Lane &lane) {
    const OctaveGeometry &g = table.o[0];
    dispatch_doubled_level0(std::make_integer_sequence<int, kMaxDoublingTaps>(), doubling_taps,
                            static_cast<const T *>(image.data), image.pitch_bytes, doubling, gauss_level(0, 0),
                            g.pitch, g.width, g.height, lane.stream, next_kernel(lane));
    if (marking) mark(lane, "blur octave 0 level 0 (doubled)");
  }

  void blur_input(const DeviceImage &image, Lane &lane) {
    if (params.upsample && doubling_taps > 0) {
      if (image.type == PixelType::u8)
        doubled_level0<uint8_t>(image, lane);
      else
        doubled_level0<float>(image, lane);
    } else if (params.upsample && upsample_while_staging) {
      if (image.type == PixelType::u8)
        blur(UpsampleSource<uint8_t>{static_cast<const uint8_t *>(image.data), image.pitch_bytes, image.width, image.height}, 0, 0, lane);
      else
        blur(UpsampleSource<float>{static_cast<const float *>(image.data), image.pitch_bytes, image.width, image.height}, 0, 0, lane);
    } else if (params.upsample) {
      if (image.type == PixelType::u8)
        upsample_input<uint8_t>(image, lane);
      else
        upsample_input<float>(image, lane);
    } else {
      if (image.type == PixelType::u8)
        blur(PlainSource<uint8_t>{static_cast<const uint8_t *>(image.data), image.pitch_bytes}, 0, 0, lane);
      else
        blur(PlainSource<float>{static_cast<const float *>(image.data), image.pitch_bytes}, 0, 0, lane);
    }
  }

  bool small_octaves_fused() const { return fused.first < table.count; }

  Branches branches(cudaStream_t stream) const {
    return {Lane{stream}, Lane{chain_stream.get(), false, "chain"}, Lane{upper_stream.get(), false, "upper"}};
  }

  // Every other level of every octave (reads only the engine's buffers), in
  // three branches. Level n_layers of an octave feeds the next octave, so
  // the chain of levels 1..n_layers of octave after octave, then the small
  // octaves' launch (latency-bound on 16 SMs: at 1080p about as long as
  // two of octave 0's levels), is the critical path; the upper levels
  // (n_layers + 1, n_layers + 2) hang off it:
  //   main:   octave 0's levels 1..n_layers, then its upper levels;
  //   chain:  the other large octaves' levels 1..n_layers, then the small
  //           octaves;
  //   upper:  the other large octaves' upper levels, beside the small
  //           octaves.
  // They end in chain_done and upper_done (join_branches waits for both).
  // `upper_after_octave1` (frame order 2): octave 0's upper levels wait for
  // the chain's octave 1, so that the chain's first levels have the GPU to
  // themselves (main has slack at the small sizes: see enqueue_frame).
  // `prefiltered`: the blurs of octaves 0 .. prefiltered - 1 list their
  // extrema's candidates (ExtremaPrefilter).
  void enqueue_pyramid_levels(Branches &b, bool upper_after_octave1, int prefiltered = 0) {
    const int layers = params.n_octave_layers;
    // Level `level` of octave o makes DoG layer level - 1; layers 1 .. n_layers are tested.
    auto prefilter_for = [&](int o, int level) {
      ExtremaPrefilter f;
      if (o >= prefiltered || level < 2 || level > layers + 1) return f;
      f.hits = prefilter_hits.as<Candidate>();
      f.capacity = prefilter_capacity;
      f.count = &counters.as<Counters>()->prefiltered;
      f.octave = o;
      f.layer = level - 1;
      f.threshold = prefilter_threshold(params.contrast_threshold, layers);
      return f;
    };
    auto lower_levels = [&](int o, Lane &lane) {
      const OctaveGeometry &g = table.o[o];
      if (o == 0)
        blur(level_source(gauss_level(0, 0), g.pitch), 0, 1, lane);
      else
        blur(DownsampleSource{gauss_level(o - 1, layers), table.o[o - 1].pitch}, o, 1, lane, gauss_level(o, 0));
      for (int level = 2; level <= layers; ++level)
        blur(level_source(gauss_level(o, level - 1), g.pitch), o, level, lane, nullptr, prefilter_for(o, level));
    };
    auto upper_levels = [&](int o, Lane &lane) {
      for (int level = layers + 1; level < layers + 3; ++level)
        blur(level_source(gauss_level(o, level - 1), table.o[o].pitch), o, level, lane, nullptr,
             prefilter_for(o, level));
    };
    if (fused.first > 0) lower_levels(0, b.main);
    octave0_event.record(b.main.stream);
    wait(b.chain, octave0_event);
    for (int o = 1; o < fused.first; ++o) {
      lower_levels(o, b.chain);
      if (upper_early) lower_done[static_cast<size_t>(o)].record(b.chain.stream);
    }
    chain_event.record(b.chain.stream);
    // The upper branch forks from octave 0's event even when no large
    // octave follows (a stream joins a graph capture only by waiting on
    // captured work), and each octave's upper levels wait for its own lower
    // ones: they run beside the chain instead of after all of it (1080p
    // 0.537 -> 0.522 ms against CS_SIFT_UPPER_EARLY=0, H200).
    wait(b.upper, upper_early ? octave0_event : chain_event);
    if (small_octaves_fused()) launch_small_octaves(b.chain);
    delay(b.chain, delays.chain);
    chain_done.record(b.chain.stream);
    for (int o = 1; o < fused.first; ++o) {
      if (upper_early) wait(b.upper, lower_done[static_cast<size_t>(o)]);
      upper_levels(o, b.upper);
      if (o == prefiltered - 1) prefilter_levels_done.record(b.upper.stream);
    }
    delay(b.upper, delays.upper);
    upper_done.record(b.upper.stream);
    if (upper_after_octave1 && upper_early && fused.first > 1) wait(b.main, lower_done[1]);
    if (fused.first > 0) upper_levels(0, b.main);
  }
  void delay(Lane &lane, int us) {
    if (us > 0) launch(lane, "SIFT delay", spin_kernel, dim3(1), dim3(32), 0, 1000LL * us);
  }
  void join_branches(Lane &main) {
    wait(main, chain_done);
    wait(main, upper_done);
  }

  void reset_counters(cudaStream_t s) {
    check_cuda(cudaMemsetAsync(counters.as<Counters>(), 0, sizeof(Counters), s), "cudaMemsetAsync");
  }
  // Before detection: the counters. (The rank counts are zeroed by the
  // orientation kernel as it appends each keypoint: a memset of the list's
  // capacity, 2 MB at 1080p, had cost the caller's stream 0.5-1 % of a frame
  // at 640 x 480 and 1280 x 720.)
  void reset_lists(Lane &lane) {
    reset_counters(lane.stream);
    lane.after_kernel = false;
  }

  // Extrema of octaves [first, end) into the candidate list.
  void enqueue_extrema(int first, int end, Lane &lane) {
    if (first >= end) return;
    const int first_block = table.o[first].block_begin;
    const int end_block = end < table.count ? table.o[end].block_begin : extrema_blocks;
    const float threshold = prefilter_threshold(params.contrast_threshold, params.n_octave_layers);
    launch(lane, "SIFT extrema kernel", extrema_kernel, dim3(end_block - first_block), dim3(kThreads), 0,
           gauss.as<float>(), table, first_block, threshold, candidates.as<Candidate>(), candidate_capacity,
           counters.as<Counters>());
  }

  // The extrema of octaves 0 .. octaves - 1 from the prefilter's hits
  // (enqueue_pyramid_levels with `prefiltered`), into the candidate list;
  // on `lane` after octave 0's levels, and after the upper branch's levels
  // of the last octave when there are more.
  void enqueue_prefiltered_extrema(Lane &lane, int octaves) {
    if (octaves > 1) wait(lane, prefilter_levels_done);
    const float threshold = prefilter_threshold(params.contrast_threshold, params.n_octave_layers);
    launch(lane, "SIFT prefiltered extrema kernel", prefiltered_extrema_kernel, dim3(2 * sm_count), dim3(kThreads), 0,
           gauss.as<float>(), table, octaves, threshold, prefilter_hits.as<Candidate>(), prefilter_capacity,
           candidates.as<Candidate>(), candidate_capacity, counters.as<Counters>());
  }

  // Extrema to the final list. No grid depends on a count: the extrema grid
  // covers the octaves, the list kernels get enough blocks to fill the GPU
  // and loop over the device-side counts, so nothing waits for the host.
  void enqueue_detect(Lane &lane) {
    reset_lists(lane);
    enqueue_extrema(0, table.count, lane);
    enqueue_candidate_lists(lane);
  }

  // Candidates to the final list: refinement, orientation, canonical order.
  void enqueue_candidate_lists(Lane &lane) {
    enqueue_oriented(lane);
    enqueue_canonical_order(lane);
  }
  // Candidates to oriented keypoints.
  void enqueue_oriented(Lane &lane) {
    Counters *c = counters.as<Counters>();
    // Kernels over device-sized lists: enough blocks to fill the GPU, each
    // looping over the list.
    launch(lane, "SIFT refine kernel", refine_kernel, dim3(32 * sm_count), dim3(kRefineThreads), 0, gauss.as<float>(),
           table, constants, candidates.as<Candidate>(), candidate_capacity, refined.as<RefinedExtremum>(),
           candidate_capacity, c);
    launch(lane, "SIFT orientation kernel", orientation_kernel, dim3(kOrientationBlocksPerSm * sm_count),
           dim3(kOrientationThreads), 0, gauss.as<float>(), table, refined.as<RefinedExtremum>(), candidate_capacity,
           oriented.as<Keypoint>(), ranks.as<int>(), describe_order.as<int>(), keypoint_capacity, c);
  }
  // Oriented keypoints to the final list: canonical order, duplicates
  // removed, n_features.
  void enqueue_canonical_order(Lane &lane) {
    Counters *c = counters.as<Counters>();
    const dim3 list_blocks(4 * sm_count), threads(kThreads);
    launch(lane, "SIFT rank kernel", rank_count_kernel, dim3(16, kRankSlices), threads, 0, oriented.as<Keypoint>(),
           keypoint_capacity, ranks.as<int>(), duplicates.as<int>(), c);
    launch(lane, "SIFT place kernel", place_kernel, list_blocks, threads, 0, oriented.as<Keypoint>(),
           keypoint_capacity, ranks.as<int>(), duplicates.as<int>(), final_list.as<Keypoint>(), final_from.as<int>(),
           c);
    if (params.n_features > 0)
      launch(lane, "SIFT retain kernel", retain_kernel, dim3(1), dim3(32), 0, final_list.as<Keypoint>(),
             params.n_features, c);
  }

  // Descriptors of the final list (DescribedList::final_list), or of the
  // oriented keypoints into oriented_descriptors.
  void enqueue_describe(DescriptorFormat f, Lane &lane, DescribedList list = DescribedList::final_list) {
    // Windows differ in cost by up to 13x (radius 10..38): with more blocks
    // than fit at once, each keypoint gets its own block and the hardware
    // hands blocks to SMs as they free up, which balances the load.
    auto kernel =
        fixed_descriptors ? descriptor_kernel<DescriptorSums::fixed> : descriptor_kernel<DescriptorSums::floating>;
    const bool final = list == DescribedList::final_list;
    launch(lane, "SIFT descriptor kernel", kernel, dim3(64 * sm_count), dim3(kDescriptorThreads), 0, gauss.as<float>(),
           table, constants.first_octave, (final ? final_list : oriented).as<Keypoint>(), counters.as<Counters>(),
           describe_order.as<int>(), list, keypoint_capacity, f,
           (final ? descriptors : oriented_descriptors).as<void>());
  }

  // A whole frame after level 0 (run()), with the cluster's start `fused`,
  // in one of three orders (which plan is faster depends on the frame size
  // and the GPU: FramePlanTuner):
  //   0: the large octaves' extrema once every large octave's levels exist,
  //      on the caller's stream while the small octaves are still being
  //      built, then the small octaves' extrema;
  //   1: each branch finds its own octaves' extrema as soon as it has built
  //      them: octave 0's on the caller's stream, the other large octaves'
  //      on the upper stream, the small octaves' on the chain;
  //   2: order 0 with octave 0's upper levels held until the chain has built
  //      octave 1's lower levels. The caller's stream waits for the upper
  //      branch after them anyway, and octave 0's two largest levels, made
  //      beside the chain's first octaves, fill the GPU and slow them; at the
  //      small sizes the chain is the critical path (H200, 2026-12-01, three
  //      rounds of 300 frames, order 0 / this: 640 x 480 0.1625-0.1642 /
  //      0.1547-0.1565 ms, 1280 x 720 0.2651-0.2661 / 0.2594-0.2597, 1080p
  //      0.3958-0.3978 / 0.3990-0.4010, 4K 1.143-1.147 / 1.147-1.151).
  // The same kernels every way, so the same results.
  void enqueue_frame(DescriptorFormat f, int plan, cudaStream_t s) {
    const int order = FramePlanTuner::plan(plan).order;
    std::vector<Mark> &marks = frame_marks[static_cast<int>(f)][plan];
    clear_marks(marks);  // of the graph this one replaces, or of the last frame launched directly
    marking = tracing ? &marks : nullptr;
    Branches b = branches(s);
    reset_lists(b.main);
    // Octave 0 is built on the caller's stream, its prefiltered extrema found
    // there right after its levels; with later octaves prefiltered, once
    // their levels exist too.
    const int prefiltered = prefilter ? std::min(prefiltered_octaves, fused.first) : 0;
    enqueue_pyramid_levels(b, order == 2, prefiltered);
    record_external(octave0_built.get(), b.main);
    if (prefiltered == 1) enqueue_prefiltered_extrema(b.main, prefiltered);
    const int dense_from = prefiltered;
    if (order == 1 && fused.first > 0) {
      enqueue_extrema(dense_from, 1, b.main);
      if (prefiltered > 1) enqueue_prefiltered_extrema(b.main, prefiltered);
      enqueue_extrema(std::max(1, dense_from), fused.first, b.upper);
      upper_extrema.record(b.upper.stream);
      enqueue_extrema(fused.first, table.count, b.chain);
      chain_extrema.record(b.chain.stream);
      delay(b.main, delays.main);
      wait(b.main, upper_extrema);
      wait(b.main, chain_extrema);
    } else {
      wait(b.main, upper_done);
      if (prefiltered > 1) enqueue_prefiltered_extrema(b.main, prefiltered);
      enqueue_extrema(dense_from, fused.first, b.main);
      delay(b.main, delays.main);
      wait(b.main, chain_done);
      enqueue_extrema(fused.first, table.count, b.main);
    }
    if (describe_while_ordering) {
      // The oriented keypoints are described while the canonical order is
      // made (on the urgent chain stream, done with the pyramid: its short
      // kernels, which the gather waits for, go ahead of the descriptor
      // blocks instead of queueing behind them); the rows are then gathered
      // into the final order.
      enqueue_oriented(b.main);
      oriented_done.record(b.main.stream);
      wait(b.chain, oriented_done);
      enqueue_canonical_order(b.chain);
      ordered.record(b.chain.stream);
      enqueue_describe(f, b.main, DescribedList::oriented);
      wait(b.main, ordered);
      const int row_bytes = static_cast<int>(descriptor_bytes(f));
      launch(b.main, "SIFT descriptor gather kernel", descriptor_gather_kernel, dim3(sm_count), dim3(kThreads), 0,
             oriented_descriptors.as<uint4>(), final_from.as<int>(), counters.as<Counters>(), row_bytes,
             descriptors.as<uint4>());
    } else {
      enqueue_candidate_lists(b.main);
      enqueue_describe(f, b.main);
    }
    marking = nullptr;
  }

  // Checks the caller's image, sizes the buffers and launches level 0;
  // false when the image is too small for any octave.
  bool start_frame(const DeviceImage &image, cudaStream_t s) {
    if (image.width < 1 || image.height < 1 || !image.data) throw std::invalid_argument("CudaSift: empty image");
    const size_t element = image.type == PixelType::u8 ? 1 : sizeof(float);
    if (image.pitch_bytes < static_cast<size_t>(image.width) * element)
      throw std::invalid_argument("CudaSift: pitch smaller than a row");
    ensure(image.width, image.height, s);
    if (table.count == 0) return false;
    DeviceGuard guard(device);
    Lane lane{s};
    blur_input(image, lane);
    return true;
  }
};

CudaSift::CudaSift(const Params &params, int device, Capacity capacity) : impl_(new Impl) {
  validate(params);
  if (capacity.keypoints >= kMaxKeypointCapacity || capacity.candidates >= kMaxKeypointCapacity)
    throw std::invalid_argument("CudaSift: capacities must stay below 2^30");
  if (device < 0 || device >= device_count())
    throw CudaError(0, "CudaSift: no CUDA device " + std::to_string(device) + " (" + no_device_reason() + ")");
  Impl &m = *impl_;
  m.params = params;
  m.device = device;
  m.requested = capacity;
  DeviceGuard guard(device);
  check_cuda(cudaDeviceGetAttribute(&m.sm_count, cudaDevAttrMultiProcessorCount, device), "cudaDeviceGetAttribute");
  m.use_graphs = graphs_enabled();
  m.upsample_while_staging = upsample_staged();
  m.direct_doubling = !m.upsample_while_staging && !upsample_kernel_chosen();
  m.quad_staging = quad_staging_enabled();
  m.fixed_descriptors = fixed_descriptors_enabled();
  m.dependent_launch = dependent_launch_enabled();
  m.describe_while_ordering = describe_early_enabled();
  m.prefilter_choice = prefilter_choice();
  m.prefilter_hits_limit = prefilter_hits_override();
  m.prefilter_octaves_limit = prefilter_octaves_override();
  m.prefilter_levels_done = Event(device);
  m.octave0_built = Event(device);
  check_cuda(cudaDeviceGetAttribute(&m.l2_bytes, cudaDevAttrL2CacheSize, device), "cudaDeviceGetAttribute");
  m.stagger_choice = env_is("CS_SIFT_STAGGER", "0") ? 0 : env_is("CS_SIFT_STAGGER", "1") ? 1 : -1;
  m.tracing = env_is("CS_SIFT_TRACE", "1");
  if (m.use_graphs) m.capture_stream = Stream(device);
  // The chain's kernels (and the small octaves' cluster, which needs 16
  // free SMs of one GPC) are scheduled ahead of the large levels beside
  // them; CS_SIFT_PRIORITY=0 gives them an ordinary stream (comparison).
  m.chain_stream = priority_enabled() ? Stream(device, Stream::Urgent{}) : Stream(device);
  m.upper_stream = priority_enabled() ? Stream(device, Stream::Urgent{}) : Stream(device);
  for (Event *e : {&m.octave0_event, &m.chain_event, &m.chain_done, &m.upper_done, &m.oriented_done, &m.ordered})
    *e = Event(device);
  for (int o = 0; o < kMaxOctaves; ++o) m.lower_done.emplace_back(device);
  m.upper_early = upper_early_enabled();
  m.delays = branch_delays();
  m.plan_tuner = FramePlanTuner(fixed_frame_order(), fixed_cluster_start());
  m.upper_extrema = Event(device);
  m.chain_extrema = Event(device);
  m.constants = {params.n_octave_layers, params.upsample ? -1 : 0, static_cast<float>(params.contrast_threshold),
                 static_cast<float>(params.edge_threshold), static_cast<float>(params.sigma)};
  m.taps.resize(static_cast<size_t>(params.n_octave_layers + 3));
  m.taps[0] = gaussian_taps(initial_sigma(params.sigma, params.upsample));
  for (int i = 1; i < params.n_octave_layers + 3; ++i)
    m.taps[static_cast<size_t>(i)] = gaussian_taps(level_sigma(i, params.n_octave_layers, params.sigma));
  size_t widest = 0;
  for (const BlurTaps &t : m.taps) widest = std::max(widest, blur_shared_bytes(t.radius));
  allow_wide_blurs(widest);
  int major = 0, optin = 0;
  check_cuda(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device), "cudaDeviceGetAttribute");
  check_cuda(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device), "cudaDeviceGetAttribute");
  for (size_t i = 1; i < m.taps.size(); ++i) m.fused_radius = std::max(m.fused_radius, m.taps[i].radius);
  // The opt-in limit less the kernel's static shared memory (the parameters, ~2 KB).
  m.fused_shared_max = std::min(kFusedSharedLimit, static_cast<size_t>(std::max(optin - 4096, 0)));
  cudaFuncAttributes kernel{};  // built for sm_90+? (a compute_80 PTX JIT-compiled on sm_90 has an empty body)
  check_cuda(cudaFuncGetAttributes(&kernel, small_octaves_kernel), "cudaFuncGetAttributes");
  m.fused_possible = fused_enabled() && major >= 9 && kernel.binaryVersion >= 90 &&
                     params.n_octave_layers + 3 <= kMaxFusedLevels;
  m.fused_max_blocks = fused_cluster_limit();
  if (m.fused_possible) {
    check_cuda(cudaFuncSetAttribute(small_octaves_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    static_cast<int>(m.fused_shared_max)),
               "cudaFuncSetAttribute");
    // Clusters of 16 (H100, H200) are an opt-in; where refused, 8 are used.
    if (cudaFuncSetAttribute(small_octaves_kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1) != cudaSuccess)
      cudaGetLastError();
  }
}

CudaSift::~CudaSift() = default;

const Params &CudaSift::params() const { return impl_->params; }
int CudaSift::device() const { return impl_->device; }

void CudaSift::build_pyramid(const DeviceImage &image, StreamHandle stream) {
  Impl &m = *impl_;
  if (!m.start_frame(image, stream)) return;
  DeviceGuard guard(m.device);
  m.fused = m.cluster_starts[0];
  m.replay(m.pyramid_graph, stream, [&m](cudaStream_t into) {
    Impl::Branches b = m.branches(into);
    m.enqueue_pyramid_levels(b, false);
    m.join_branches(b.main);
  });
}

void CudaSift::detect(StreamHandle stream) {
  Impl &m = *impl_;
  if (!m.have_geometry) throw std::logic_error("CudaSift::detect before build_pyramid");
  DeviceGuard guard(m.device);
  const cudaStream_t s = stream;
  m.described = false;
  if (m.table.count == 0) {
    m.reset_counters(s);
    return;
  }
  m.replay(m.detect_graph, s, [&m](cudaStream_t into) {
    Impl::Lane lane{into};
    m.enqueue_detect(lane);
  });
}

void CudaSift::describe(DescriptorFormat format, StreamHandle stream) {
  Impl &m = *impl_;
  if (!m.have_geometry) throw std::logic_error("CudaSift::describe before build_pyramid");
  const int format_index = static_cast<int>(format);
  if (format_index < 0 || format_index > static_cast<int>(DescriptorFormat::rootsift))
    throw std::invalid_argument("CudaSift: unknown descriptor format");
  m.format = format;
  m.described = true;
  if (m.table.count == 0) return;
  DeviceGuard guard(m.device);
  m.replay(m.describe_graphs[format_index], stream,
           [&m, format](cudaStream_t into) {
             Impl::Lane lane{into};
             m.enqueue_describe(format, lane);
           });
}

void CudaSift::run(const DeviceImage &image, DescriptorFormat format, StreamHandle stream) {
  Impl &m = *impl_;
  const int format_index = static_cast<int>(format);
  if (format_index < 0 || format_index > static_cast<int>(DescriptorFormat::rootsift))
    throw std::invalid_argument("CudaSift: unknown descriptor format");
  if (m.tracing) {
    if (!m.frame_start) m.frame_start = timing_event_create(m.device);
    event_record(m.frame_start, stream);
    m.traced_format = format_index;
    m.clear_marks(m.input_marks);
    m.marking = &m.input_marks;
  }
  const bool started = m.start_frame(image, stream);
  m.marking = nullptr;
  m.format = format;
  m.described = true;
  DeviceGuard guard(m.device);
  if (!started) {
    m.reset_counters(stream);
    return;
  }
  // While the frame plan is being chosen, the frames after level 0 are
  // timed (level 0 is the same in every plan), their graph made before the
  // first event so that its capture is not counted.
  m.collect_frame_times();
  const int plan = m.plan_tuner.next();
  m.traced_plan = plan;
  m.fused = m.cluster_starts[FramePlanTuner::plan(plan).cluster_start];
  GraphExec &graph = m.frame_graphs[format_index][plan];
  auto enqueue = [&m, format, plan](cudaStream_t into) { m.enqueue_frame(format, plan, into); };
  Impl::TimedFrame timed{nullptr, nullptr, plan};
  if (m.plan_tuner.chosen() < 0) {
    if (m.use_graphs && !graph) graph = capture_graph(m.capture_stream.get(), enqueue);
    timed = m.timing_pair(plan);
  }
  if (timed.start) event_record(timed.start, stream);
  m.replay(graph, stream, enqueue);
  if (timed.start) {
    event_record(timed.stop, stream);
    m.timed_frames.push_back(timed);
  }
}

std::vector<TraceMark> CudaSift::trace() {
  Impl &m = *impl_;
  std::vector<TraceMark> timeline;
  if (!m.tracing || m.traced_format < 0) return timeline;
  for (const std::vector<Impl::Mark> *marks : {&m.input_marks, &m.frame_marks[m.traced_format][m.traced_plan]}) {
    for (const Impl::Mark &mark : *marks) {
      event_synchronize(mark.event);
      timeline.push_back({mark.kernel, mark.branch, event_elapsed_ms(m.frame_start, mark.event)});
    }
  }
  return timeline;
}

const int *CudaSift::device_final_count() const {
  return impl_->counters.as<Counters>() ? &impl_->counters.as<Counters>()->final_count : nullptr;
}
const Keypoint *CudaSift::device_keypoints() const { return impl_->final_list.as<Keypoint>(); }
const void *CudaSift::device_descriptors() const { return impl_->descriptors.as<void>(); }
EventHandle CudaSift::next_frame_start() const { return impl_->stagger ? impl_->octave0_built.get() : nullptr; }
int CudaSift::keypoint_capacity() const { return impl_->keypoint_capacity; }
int CudaSift::candidate_capacity() const { return impl_->candidate_capacity; }
int CudaSift::frame_order() const { return impl_->plan_tuner.order(); }
int CudaSift::small_octaves_from() const {
  const int plan = impl_->plan_tuner.chosen();
  return plan < 0 ? -1 : impl_->cluster_starts[FramePlanTuner::plan(plan).cluster_start].first;
}

PyramidLevels CudaSift::download_pyramid(StreamHandle stream) {
  Impl &m = *impl_;
  PyramidLevels r;
  if (!m.have_geometry) throw std::logic_error("CudaSift::download_pyramid before build_pyramid");
  DeviceGuard guard(m.device);
  const int layers = m.params.n_octave_layers;
  r.fused_from = m.fused.first;
  r.fused_possible = m.fused_possible;
  r.fused_blocks = m.fused.first < m.table.count ? m.fused_blocks : 0;
  r.octaves.resize(static_cast<size_t>(m.table.count));
  for (int o = 0; o < m.table.count; ++o) {
    const OctaveGeometry &g = m.table.o[o];
    PyramidLevels::Octave &out = r.octaves[static_cast<size_t>(o)];
    out.width = g.width;
    out.height = g.height;
    const size_t plane = static_cast<size_t>(g.width) * static_cast<size_t>(g.height);
    out.gauss.resize(static_cast<size_t>(layers + 3) * plane);
    const size_t row = static_cast<size_t>(g.width) * sizeof(float), pitch = static_cast<size_t>(g.pitch) * sizeof(float);
    for (int level = 0; level < layers + 3; ++level)
      check_cuda(cudaMemcpy2DAsync(out.gauss.data() + static_cast<size_t>(level) * plane, row, m.gauss_level(o, level),
                                   pitch, row, static_cast<size_t>(g.height), cudaMemcpyDeviceToHost, stream),
                 "cudaMemcpy2DAsync");
  }
  stream_synchronize(stream);
  return r;
}

// The results come through page-locked staging: a copy into pageable memory
// is staged by the driver at a fraction of the link's speed (a 1080p frame's
// ~2700 keypoints and descriptors, 0.4 MB, took ~0.15 ms more that way).
Result CudaSift::download(StreamHandle stream) {
  Impl &m = *impl_;
  Result r;
  r.format = m.format;
  if (!m.have_geometry) return r;
  DeviceGuard guard(m.device);
  Counters c{};
  {
    const StagingBlock staged(sizeof c);
    check_cuda(cudaMemcpyAsync(staged.bytes(), m.counters.as<Counters>(), sizeof c, cudaMemcpyDeviceToHost, stream),
               "cudaMemcpyAsync");
    stream_synchronize(stream);
    std::memcpy(&c, staged.bytes(), sizeof c);
  }
  r.counts = {c.candidates, c.refined, c.oriented, c.final_count};
  r.overflowed = c.candidates > m.candidate_capacity || c.refined > m.candidate_capacity || c.oriented > m.keypoint_capacity;
  const size_t n = static_cast<size_t>(std::max(c.final_count, 0));
  if (n == 0) return r;
  const size_t keypoint_bytes = n * sizeof(Keypoint);
  const size_t descriptors_bytes = m.described ? n * descriptor_bytes(m.format) : 0;
  const StagingBlock staged(keypoint_bytes + descriptors_bytes);
  uint8_t *const staged_descriptors = staged.bytes() + keypoint_bytes;
  check_cuda(cudaMemcpyAsync(staged.bytes(), m.final_list.as<Keypoint>(), keypoint_bytes, cudaMemcpyDeviceToHost,
                             stream),
             "cudaMemcpyAsync");
  if (descriptors_bytes > 0)
    check_cuda(cudaMemcpyAsync(staged_descriptors, m.descriptors.as<void>(), descriptors_bytes, cudaMemcpyDeviceToHost,
                               stream),
               "cudaMemcpyAsync");
  stream_synchronize(stream);
  const auto *keypoints = reinterpret_cast<const Keypoint *>(staged.bytes());
  r.keypoints.assign(keypoints, keypoints + n);
  r.descriptors.assign(staged_descriptors, staged_descriptors + descriptors_bytes);
  return r;
}

}  // namespace cs::sift
