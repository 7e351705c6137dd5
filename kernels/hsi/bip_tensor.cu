// The contiguous-BIP tensor kernels (bip_tensor.h says when they are used):
// the kernel below in its three product forms, and the screen for class
// maps on Hopper (classify_bip_screen_kernel, further down, with its own
// figures; f32 rows copied as they are, 16-bit rows widened on the way).
//
// Shape. One persistent thread block per multiprocessor (256 threads, 8
// warps) walks tiles of kTilePixels = 128 pixels. For each tile and each group
// of 64 references it forms the 128 x 64 dot products over the selected bands
// in chunks of 32 bands:
//   - the chunk's 128 pixel rows (128 B of f32, 64 B of i16/u16 each) are
//     copied with 16-byte cp.async (8 or 4 bytes when the block's alignment
//     asks for it) into a padded row-major tile; with 4 staging tiles (3 when
//     the references leave too little shared memory) chunks c + 1 and c + 2,
//     of this tile or the next, are in flight while chunk c multiplies, and
//     no barrier is needed at the end of a chunk;
//   - the references' TF32 high and low parts, in fragment order
//     (bip_tensor.h), are copied into shared memory once per kernel when K <=
//     64 (once per tile and group otherwise) and read with one 16-byte load
//     per 8 references x 8 bands;
//   - warps form a 4 x 2 grid of 32-pixel x 32-reference sub-tiles: per
//     8-band step a warp loads its pixel rows (one 16-byte load covers two
//     steps), splits them into TF32 high and low parts in registers and
//     issues 2 x 4 x 3 mma.sync.m16n8k8 (lo x hi, hi x lo, hi x hi: the
//     "3xTF32" product, ~2^-22 per operand as the generic kernel);
//   - float accumulators are added into double totals every 32 bands (the
//     tensor precision's contract in classify_math.h), one column of them
//     after each step so the conversions overlap the products;
//   - the pixels' sums (|x|^2; for correlation the sums of the pixel shifted
//     by its first band) come from the same registers, in double, in the
//     first pass over the tile;
//   - the epilogue scores from registers: with rule images every score
//     (classify_math.h's score functions); without, a ranking key per
//     reference (the dot product for sam, dot / sqrt(reference constant) for
//     correlation, 2 dot - |r|^2 for euclidean: each orders the references as
//     the score does) and the score of the winner only, so a pixel costs one
//     acos instead of 64. Best per pixel across warps and groups, threshold,
//     class map.
// Integer samples are multiplied exactly as integers (they fit TF32's high
// plus low part without rounding); a reflectance scale is applied to the
// finished sums in double.
//
// Cost per pixel, 224 bands, 64 references (the README's benchmark case):
//   cube read         896 B (f32) or 448 B (i16) from HBM, once; references
//                     from shared memory (115 KB per block, loaded once);
//   tensor work       224/8 steps x 8 columns x 3 products = 672 mma.m16n8k8
//                     per 16 pixels = 42 per pixel (86 kFLOP; the useful
//                     product is a third of it);
//   shared memory     per warp and step 1 KB of pixels + 2 KB of references
//                     for 24 mma: 128 B per mma;
//   other issue       per element per warp: conversion and split (~5 ops),
//                     twice (two warp columns), sums in double once.
// At 3 TB/s an f32 cube is 3.35e9 pixels/s = 1.4e11 mma/s = 0.54 mma per
// cycle per SM (132 SMs, 1.98 GHz). wgmma's dense TF32 peak is ~0.9 per
// cycle; mma.sync is expected to sustain well under that on Hopper (about
// 0.55-0.65, an estimate, not measured here), so the f32 case is bound by
// the tensor pipe close to 3 TB/s: shared memory carries 69 B/cycle at that
// rate (of 128), HBM 3 TB/s of ~4 achievable, other issue about half of the
// schedulers' slots. An i16 cube carries twice the pixels per byte: the same
// tensor bound is ~1.5 TB/s of i16 read. Two costs come on top: the epilogue
// (one block per SM, so the tensor pipe idles while a tile is scored: ~10%
// with one acos per pixel, several times more with rule images, which score
// every reference in double) and, with K > 64, one reload of the references
// per tile and group. Going beyond needs fewer products per pixel (fp16 or
// int8 splits of integer samples, whose pixel side is exact; or wgmma), not
// faster staging.
// Measured on an H200 (1024 x 1024 x 224, K = 64): 691-716 GB/s of f32 read,
// 340 GB/s of i16; Nsight Compute: 254 registers, one block of 8 warps per
// SM (2 per scheduler), tensor pipe ~27% busy, latency-bound. ptxas (sm_90):
// 250-254 registers, no spills, no static shared memory (all dynamic: 215 KB
// for 224 bands of f32 with 4 staging buffers, 167 KB of i16).
//
// fp16x3 (the default; CS_HSI_BIP_KERNEL=tf32 for the above; Product, the
// kernel's template parameter):
// the same tiles, staging, double folds and epilogue, with
//   - mma.m16n8k16 on fp16 high and low parts (lo x hi, hi x lo, hi x hi):
//     fp16 carries TF32's 11 significant bits, so the split leaves out the
//     same ~2^-22 of each operand, and an instruction takes 16 bands: half
//     the instructions of 3xTF32 for the same products;
//   - fp16's range handled by powers of two (exact both ways): each reference
//     times 2^e (its largest magnitude into [2^14, 2^15), on the host); each
//     f32 pixel row times 2^e per chunk of 32 bands (the quad's largest
//     magnitude, two shuffles), undone when the chunk's float sums go into
//     double (so the windows are the chunks, not staggered: each column
//     folds right after its last products of the chunk);
//     integer samples and their correlation differences (17 bits) times 1/2,
//     which splits them exactly. Low parts below 2^-14 (fp16 subnormals)
//     lose at most 2^-25, i.e. 2^-39 of the row's (or reference's) largest
//     magnitude per band: over 224 bands under 2^-35 |x||r|, nothing next to
//     the split's 2^-22 per operand. High parts stay below 2^15 < 65504.
//   - 16 warps of 16 pixels x 32 references (8 x 2) instead of 8 of 32 x 32:
//     half the accumulators per thread, so 128 registers and 4 warps per
//     scheduler, while each warp still keeps 4 independent accumulator chains
//     per step and the pixels are still split by two warp columns;
//   - half the reference table in shared memory (8 KB per chunk of 32 bands
//     instead of 16 KB).
// ptxas (sm_90): 122-128 registers, no spills, 512 threads, one block per SM;
// dynamic shared memory 159 KB for 224 bands of f32 with 4 staging buffers,
// 111 KB of i16. Per pixel, 224 bands, 64 references:
//   tensor work       224/16 steps x 8 columns x 3 = 336 mma.m16n8k16 per 16
//                     pixels = 21 per pixel (the same 86 kFLOP as 42
//                     mma.m16n8k8);
//   shared memory     per warp and 16-band step 1 KB of pixels (512 B of
//                     16-bit samples) + 2 KB of references for 12 mma: 256 B
//                     per mma; 5.4 KB per pixel (4.5 KB of 16-bit), as
//                     3xTF32;
//   other issue       per element per warp: conversion, scale, split (two
//                     cvt.rn.f16x2.f32 and two cvt.f32.f16 per pair) and the
//                     row's maximum (~5 ops), twice (two warp columns); per
//                     output and chunk one float-to-double conversion and
//                     one double FMA (448 per pixel, as 3xTF32).
// At 3 TB/s of f32 that is 0.27 mma.m16n8k16 per cycle per SM (half the
// instruction rate 3xTF32 needs), 69 B/cycle of shared memory, about a third
// of the float-to-double conversion rate; 16-bit samples at the same bytes
// per second need twice that (shared memory ~115 B/cycle of 128: the i16
// bound is near 2.5-3 TB/s).
// Measured on an H200 (2026-11-29, same cube): 835-902 GB/s of f32, 451-474
// of i16 (3xTF32: 645-716 and 325-348). Nsight Compute (f32 sam): 1.06 ms,
// issue slots 50% busy, 4 warps and 0.9 eligible per scheduler, top stall a
// fixed-latency dependency, ALU the busiest pipe (29%), DRAM 18%: ~475
// warp instructions per pixel, of which the products are 21. Tried and
// slower, not kept: splitting each staged chunk once into fp16 tiles in
// shared memory (all 512 threads, the next chunk while this one multiplies)
// read with ldmatrix.x4, four accumulator columns interleaved: 795-837 GB/s
// of f32 (203 KB of shared memory, spills of 4-8 B).
//
// wgmma (the default on Hopper; classify_bip_wgmma_kernel): the same
// fp16x3 products, scales, staging and double folds on the warp-group
// instructions, which take the products' operand traffic off the issue
// slots:
//   - three independent warp groups per block (one block of 384 threads per
//     SM, 168 registers), each walking its own 64-pixel tiles with its own
//     staging ring and a named barrier; every group of references' high and
//     low tables resident in shared memory for the whole kernel (57 KB per
//     group of 64 x 224 bands), in the instructions' operand layout
//     (bip_tensor.h);
//   - per chunk a thread splits its fragment of the staged rows (rows g and
//     g + 8 of its warp's 16, as mma.m16n8k16's A operand: split_chunk, the
//     code the fp16x3 kernel runs), issues 6 wgmma.m64n64k16 (lo x hi, hi x
//     lo, hi x hi per 16 bands) into its 32 accumulators, waits for them and
//     folds them into double totals; the other warp groups fill the wait;
//   - a warp's accumulators hold all 64 references of its 16 rows: the
//     epilogue ranks them with a quad of shuffles (no cross-warp merge),
//     from a key factor and offset per reference in shared memory, and
//     recovers the winner's dot product from its key.
// Per pixel, 224 bands, 64 references: 21 x 4 wgmma = 2.6 warp
// instructions of products (each moves its own 2 KB of references from
// shared memory) instead of 21 mma.sync and 14 fragment loads; the same
// split, sums and folds, no longer repeated for two warp columns.
// Measured on an H200 (2026-11-30, same cube): 1296-1418 GB/s of f32,
// 691-722 of i16 (0.65-0.72 ms per cube); on another H200 the same day
// 1569-1691 and 829-884 (the lent machines differ by up to 20%: compare
// within a run). Its first form kept two
// accumulator sets, folding one chunk's while the next multiplied (254
// registers, two warp groups): 1206-1343 and 641-690, 5% slower in the same
// run, because ptxas waits for a warp group's products where the two sets'
// paths join (so nothing overlapped) and the 48 extra registers held the
// SM to 8 warps. Nsight Compute on this form (f32 sam, one launch: 567 us at
// 1.78 GHz; the benchmark's median of back-to-back launches is 0.67 ms):
// 12 warps per SM, issue slots 43% busy, 0.78 eligible warps per
// scheduler; 229 M warp instructions, 219 per pixel: per warp and chunk 407
// (split and issue ~210, stage 63, loop ~70, fold 64), per warp and tile
// 639 of epilogue (40 per pixel: ranking 32 references per thread, then
// one score per pixel). Top stalls: fixed-latency dependencies, shared
// loads and shuffles, the warp group's barrier. Tried and slower: the
// rule-image scoring as a call, halving the code (0.80 against 0.72 ms: the
// kernel's arguments then live in local memory); each thread staging just
// the samples it splits, with no barrier per chunk (1458-1619 against
// 1569-1691 GB/s of f32 in one run: more, narrower copies). 3 TB/s of f32 needs 3.35
// G pixels/s: about twice fewer instructions per pixel.
//
// Bandfit and sid on it (H200, 2026-11-30, same cube, K = 64). Bandfit's
// pixels are continuum-removed in float as they are loaded (load_four: one
// fast division per sample, the band positions read four at a time), then
// correlation's products and sums: 0.78 ms per f32 cube (1209 GB/s;
// correlation 0.62 in the same run; 0.93-0.96 with the correctly rounded
// division), 659 GB/s of i16. Sid
// multiplies two operands per chunk into the same accumulators: the
// pixel's centred logs (a logf per sample) with q, and p = v / sum with the
// centred log q (split_sid_chunk), sum v log v in double; sum v is read
// from global memory before a tile's first chunk (sid_quarter_sum), so the
// bands are staged once: 1.61 ms (582-585 GB/s of f32, 315 of i16; 1.67 ms,
// 561 and 273, when it ran the chunks twice, one operand each, staging the
// bands again). Its table is twice as large (q, then log q): 227 KB of
// shared memory at 224 bands of f32 with three staging buffers per warp
// group, so K <= 64 there. Since 2026-12-02 its logs come from the
// hardware's log2, its operands take fixed scales and sum p log p comes
// from them in float (split_sid_chunk), and the sums' loads go out a row at
// a time: 0.90-0.92 ms (1022-1043 GB/s of f32, 499-510 of i16). Then its
// chunk sums add in float (no conversion to double per accumulator and
// chunk), its logs skip the subnormal rescaling, blocks with neither
// swapped bytes nor an ignore value take a kernel without those tests:
// 0.65-0.66 ms (1423-1440 GB/s of f32, 713-726 of i16; f32 and i16 now
// take the same time: the kernel issues and waits, it does not read).
#include "hsi/bip_tensor.h"

#include <cuda_fp16.h>
#include <math_constants.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "common/cuda_check.h"
#include "common/cuda_runtime.h"

namespace cs::hsi::bip_tensor {

namespace {

constexpr int kWarpReferences = 32;
constexpr int kWarpColumns = kGroupReferences / kWarpReferences;     // 2
constexpr int kMmaColumns = kWarpReferences / kColumnReferences;     // n8 tiles per warp
static_assert(kWarpColumns == 2, "shared_bytes() counts two candidates per pixel");

// Block and warp tiles per product: tf32x3 8 warps of 32 pixels x 32
// references; fp16x3 16 warps of 16 pixels x 32 references (half the
// accumulators per thread, so 128 registers and twice the warps).
template <Product P>
struct Shape;
template <>
struct Shape<Product::tf32x3> {
  static constexpr int kThreads = 256, kWarpPixels = 32;
  using Fragment = float4;
};
template <>
struct Shape<Product::fp16x3> {
  static constexpr int kThreads = 512, kWarpPixels = 16;
  using Fragment = uint4;
};
template <Product P>
constexpr int kThreadsOf = Shape<P>::kThreads;
template <Product P>
constexpr int kWarpRowsOf = kTilePixels / Shape<P>::kWarpPixels;  // 4 or 8
template <Product P>
constexpr int kMmaRowsOf = Shape<P>::kWarpPixels / 16;  // m16 tiles per warp
template <Product P>
constexpr bool kOneWarpPerSubTile = kWarpRowsOf<P> * kWarpColumns * 32 == kThreadsOf<P>;
static_assert(kOneWarpPerSubTile<Product::tf32x3> && kOneWarpPerSubTile<Product::fp16x3>, "one warp per sub-tile");
// Staged row: 32 samples + 16 of padding. With 48 elements per row the
// 16-byte (f32) and 8-byte (16-bit) fragment loads of a warp hit distinct
// banks in each phase.
constexpr int kRowElements = 48;

template <DataType T>
struct Sample;
template <>
struct Sample<DataType::f32> {
  static constexpr int kBytes = 4;
};
template <>
struct Sample<DataType::i16> {
  static constexpr int kBytes = 2;
};
template <>
struct Sample<DataType::u16> {
  static constexpr int kBytes = 2;
};
template <DataType T>
constexpr int kRowBytes = kRowElements * Sample<T>::kBytes;

struct Args {
  const unsigned char *data;  // the block's first pixel, first selected band
  size_t pixels, pixel_stride;  // pixel_stride in bytes
  int bands, chunks, groups, references;
  int stages;  // staging buffers; stages - 2 chunks in flight
  const void *fragments;      // float4 (tf32x3) or uint4 (fp16x3) entries
  const double *dot_scale;    // fp16x3: per reference, 2^-(its scale's exponent)
  const double *key_scale, *key_offset, *key_inverse;
  const float *table;
  ReferenceTableShape shape;
  const float *screen_references, *screen_terms;  // the screen's table and key terms (bip_tensor.h)
  const float *screen_mean;                        // what the table's rows were centred by (Tables::screen_mean)
  const float2 *screen_pair_weights;               // per pair of references (Tables::screen_pair_weights)
  const float *positions;                          // bandfit's continuum abscissae (Tables::positions)
  const double *sid_terms;                         // sid's per-reference terms (Tables::sid_terms)
  int band_chunks;  // chunks of the bands, walked per tile and group (chunks: the table's, twice as many for sid)
  float sid_floor;  // sid's floor for the stored values (kSidFloor / scale)
  double screen_largest_norm2;                      // of the usable references
  double screen_common_weight;                      // Tables::screen_common_weight
  bool has_ignore;
  float ignore_value;
  bool swap_bytes;  // samples in the other byte order
  double scale;  // decoded value = scale x stored value
  float threshold;
  double threshold_cos;  // sam: the cosine of the threshold (within 0 .. pi)
  ClassMapTarget class_map;
  float *rule_images;
};

__device__ __forceinline__ uint32_t shared_address(const void *p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// Copies `src_bytes` (0..kBytes) from global to shared memory, zero-filling
// the rest of the kBytes.
template <int kBytes>
__device__ __forceinline__ void copy_async(uint32_t dst, const void *src, int src_bytes) {
  if constexpr (kBytes == 16)
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes) : "memory");
  else
    asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;\n" ::"r"(dst), "l"(src), "n"(kBytes),
                 "r"(src_bytes)
                 : "memory");
}
__device__ __forceinline__ void commit_copies() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int kPending>
__device__ __forceinline__ void wait_copies() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending) : "memory");
}

// c += a x b, 16 x 8 x 16, fp16 operands, float accumulators.
__device__ __forceinline__ void mma_f16(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// c += a x b, 16 x 8 x 8, TF32 operands, float accumulators.
__device__ __forceinline__ void mma_tf32(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// Rows of one chunk of a tile into a staging buffer: kBytes per copy,
// consecutive threads along a row (a warp reads whole 128-byte f32 rows).
// Bands past the last selected one and pixels past the block are zeros.
template <DataType T, int kBytes, int kRows, int kThreads>
__device__ void stage_rows(const Args &a, unsigned char *buffer, size_t first_pixel, int chunk, int thread) {
  constexpr int kPerRow = kChunkBands * Sample<T>::kBytes / kBytes;
  const int valid_bytes = min(kChunkBands, a.bands - chunk * kChunkBands) * Sample<T>::kBytes;
  const unsigned char *chunk_start = a.data + size_t(chunk) * kChunkBands * Sample<T>::kBytes;
  // The common case, a whole chunk of whole rows: one 64-bit address per
  // chunk, 32-bit offsets from it, no zero fill.
  if (valid_bytes == kChunkBands * Sample<T>::kBytes && first_pixel + kRows <= a.pixels &&
      a.pixel_stride <= 0xffffffffu / kRows) {
    static_assert(kRows * kPerRow % kThreads == 0, "every thread makes the same number of copies");
    const unsigned char *rows = chunk_start + first_pixel * a.pixel_stride;
    const uint32_t stride = uint32_t(a.pixel_stride);
#pragma unroll
    for (int j = 0; j < kRows * kPerRow / kThreads; ++j) {
      const int i = thread + j * kThreads, row = i / kPerRow, offset = (i % kPerRow) * kBytes;
      copy_async<kBytes>(shared_address(buffer + row * kRowBytes<T> + offset), rows + (uint32_t(row) * stride + offset),
                         kBytes);
    }
    return;
  }
  for (int i = thread; i < kRows * kPerRow; i += kThreads) {
    const int row = i / kPerRow, offset = (i % kPerRow) * kBytes;
    const size_t pixel = first_pixel + row;
    const int bytes = pixel < a.pixels ? max(0, min(kBytes, valid_bytes - offset)) : 0;
    const unsigned char *src = bytes > 0 ? chunk_start + pixel * a.pixel_stride + offset : a.data;
    copy_async<kBytes>(shared_address(buffer + row * kRowBytes<T> + offset), src, bytes);
  }
}

// `kRows` rows of one chunk into `buffer`, by threads 0..kThreads-1 of a
// block or warp group (`thread`: this one).
template <DataType T, int kRows, int kThreads>
__device__ void stage_chunk(const Args &a, int copy_bytes, unsigned char *buffer, size_t first_pixel, int chunk,
                            int thread) {
  if (copy_bytes == 16)
    stage_rows<T, 16, kRows, kThreads>(a, buffer, first_pixel, chunk, thread);
  else if (copy_bytes == 8)
    stage_rows<T, 8, kRows, kThreads>(a, buffer, first_pixel, chunk, thread);
  else
    stage_rows<T, 4, kRows, kThreads>(a, buffer, first_pixel, chunk, thread);
}

// One group's reference fragments (16 bytes each) into shared memory.
template <Product P>
__device__ void stage_references(const Args &a, uint4 *references, int group) {
  constexpr int kPerChunk = fragments_per_chunk(P);
  const uint4 *src = static_cast<const uint4 *>(a.fragments) +
                     fragment_index(group, 0, a.chunks, 0, 0, 0, steps_per_chunk(P));
  for (int i = threadIdx.x; i < a.chunks * kPerChunk; i += kThreadsOf<P>)
    copy_async<16>(shared_address(references + i), src + i, 16);
}

// 16-bit samples to float by the integer conversion (a quarter-rate
// instruction per sample, the high sample shifted down first: three
// instructions a pair). `swap`: stored in the other byte order (the block's
// byte order is not the machine's). Float-bit arithmetic instead (2^23 + u
// as float bits, minus 2^23; signed samples biased by 2^15 first) takes
// five a pair: where the screen widens the samples it multiplies (its
// 16-bit tiles kept as stored) i16 sam was 1233-1263 GB/s with it, 1290-1307
// with this (H200, same run); correlation and bandfit, then staged as
// floats, ~1 % faster.
template <DataType T>
__device__ __forceinline__ void widen_pair(uint32_t pair, bool swap, float &first, float &second) {
  if (swap) pair = __byte_perm(pair, 0u, 0x2301);
  if constexpr (T == DataType::i16) {
    first = __int2float_rn(int(short(pair & 0xffffu)));
    second = __int2float_rn(int(pair) >> 16);
  } else {
    first = __uint2float_rn(pair & 0xffffu);
    second = __uint2float_rn(pair >> 16);
  }
}

// An f32 sample as stored in the other byte order (the block's byte order
// is not the machine's), when `swap`.
__device__ __forceinline__ float native_float(float stored, bool swap) {
  return swap ? __uint_as_float(__byte_perm(__float_as_uint(stored), 0u, 0x0123)) : stored;
}

// Where a kernel learns the block's byte order: from its arguments at run
// time, or fixed by its instance (sid's wgmma kernels, one for each order,
// so that the byte permutes and their selects are compiled in or out).
enum class ByteOrder { from_args, native, swapped };
template <ByteOrder O>
__device__ __forceinline__ bool swapped_bytes(const Args &a) {
  return O == ByteOrder::from_args ? a.swap_bytes : O == ByteOrder::swapped;
}

// Whether the values a kernel multiplies are fractions: f32 samples, and
// bandfit's continuum-removed values and sid's logs and p whatever the
// samples (integer samples are otherwise multiplied exactly, as integers,
// and scaled afterwards).
template <DataType T, Method M>
constexpr bool kFractionalValues = T == DataType::f32 || M == Method::bandfit || M == Method::sid;

// Correlation's and bandfit's value of sample x at band `position`: x minus
// the first band's (correlation); x over its continuum, minus 1 (bandfit),
// as x times the continuum's approximate reciprocal (within an ulp) with the
// 1 subtracted in the same fused step: the products' own error is 2^-22, and
// the correctly rounded division took 0.95 ms per f32 cube against 0.78
// (H200). The continuum is fused as well (both terms positive: no
// cancellation); CPU and exact kernels round its products apart
// (classify_math.h). The reciprocal flushes to 0 beyond 2^126: both
// operands are scaled by 1/4 there, unless `kContinuaBelow2To126` (every
// continuum of the caller's pixels is below: both ends below 2^125), which
// saves the per-sample test; results are the same either way.
__device__ __forceinline__ float approximate_reciprocal(float c) {
  float r;
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(c));
  return r;
}

template <Method M, bool kContinuaBelow2To126 = false>
__device__ __forceinline__ float shifted_value(float x, float position, const PixelContext &px) {
  if constexpr (M == Method::bandfit) {
    const float c = fmaf(px.continuum_end, position, px.continuum_start * (1.0f - position));
    if (kContinuaBelow2To126 || c < 0x1p126f) return fmaf(x, approximate_reciprocal(c), -px.shift);
    return fmaf(x * 0.25f, approximate_reciprocal(c * 0.25f), -px.shift);
  } else {
    return x - px.shift;
  }
}

// Samples 4t..4t+3 of a span of 16 in staged row `row` of the chunk from
// selected band `chunk_band`, as floats (stored values: the scale is applied
// to the sums; bandfit's values do not depend on it), the ignore value as
// NaN; correlation and bandfit: the value summed (band_value) minus the
// row's shift (`px`, row_context). `valid`: selected bands in this chunk;
// the staged zeros past them must stay zeros (no NaN from a zero ignore
// value, no shifted values in the sums). `O`: the block's byte order
// (swapped_bytes); `kTestsIgnore` false: the caller marks the ignore value's
// pixels otherwise (sid: a NaN sum), so no sample is tested.
template <DataType T, Method M, ByteOrder O = ByteOrder::from_args, bool kTestsIgnore = true>
__device__ __forceinline__ void load_four(const Args &a, const unsigned char *tile, int row, int span, int t,
                                          int chunk_band, int valid, const PixelContext &px, float (&x)[4]) {
  const int band = span * 16 + 4 * t;
  const bool swap = swapped_bytes<O>(a);
  if constexpr (T == DataType::f32) {
    const float4 v = *reinterpret_cast<const float4 *>(tile + row * kRowBytes<T> + band * 4);
    x[0] = native_float(v.x, swap), x[1] = native_float(v.y, swap);
    x[2] = native_float(v.z, swap), x[3] = native_float(v.w, swap);
  } else {
    const uint2 v = *reinterpret_cast<const uint2 *>(tile + row * kRowBytes<T> + band * 2);
    widen_pair<T>(v.x, swap, x[0], x[1]);
    widen_pair<T>(v.y, swap, x[2], x[3]);
  }
  if (kTestsIgnore && a.has_ignore)
    for (float &v : x) v = v == a.ignore_value ? quiet_nan() : v;
  if constexpr (M == Method::bandfit) {
    const float4 p = __ldg(reinterpret_cast<const float4 *>(a.positions + chunk_band + band));
    const float position[4] = {p.x, p.y, p.z, p.w};
    for (int i = 0; i < 4; ++i) x[i] = shifted_value<M>(x[i], position[i], px);
  } else if constexpr (M == Method::correlation) {
    for (float &v : x) v = shifted_value<M>(v, 0.0f, px);
  }
  if (valid < kChunkBands)  // the last chunk only
    for (int i = 0; i < 4; ++i) x[i] = band + i < valid ? x[i] : 0.0f;
}

// One stored sample as a float, the ignore value as NaN; `kGlobal`: read
// through the read-only cache (global memory), else from shared memory.
template <DataType T, bool kGlobal>
__device__ __forceinline__ float load_sample(const Args &a, const unsigned char *at) {
  float v;
  if constexpr (T == DataType::f32) {
    v = native_float(kGlobal ? __ldg(reinterpret_cast<const float *>(at)) : *reinterpret_cast<const float *>(at),
                     a.swap_bytes);
  } else {
    const uint16_t *const sample = reinterpret_cast<const uint16_t *>(at);
    const uint16_t stored = kGlobal ? __ldg(sample) : *sample;
    float unused;
    widen_pair<T>(stored, a.swap_bytes, v, unused);
  }
  return a.has_ignore && v == a.ignore_value ? quiet_nan() : v;
}

// Band 0 of a staged row (the first selected band): correlation's shift.
template <DataType T>
__device__ __forceinline__ float load_first(const Args &a, const unsigned char *tile, int row) {
  return load_sample<T, false>(a, tile + row * kRowBytes<T>);
}

// The pixel's last selected band, from global memory (only chunk 0 of a
// tile is staged when its rows' contexts are formed); 0 past the block.
template <DataType T>
__device__ __forceinline__ float load_last(const Args &a, size_t pixel) {
  if (pixel >= a.pixels) return 0.0f;
  return load_sample<T, true>(a, a.data + pixel * a.pixel_stride + size_t(a.bands - 1) * Sample<T>::kBytes);
}

// Sid: this thread's share of pixel `pixel`'s sum of floored values (bands
// 4t .. 4t + 3 of every 16: the quad's four threads hold the row between
// them; float over eight, double beyond), from global memory before the
// tile's first chunk is multiplied, so that p = v / sum enters the products
// from the first chunk on and each chunk is staged once. The ignore value
// and NaN make the sum NaN, as in the chunks. Rows past the block (staged
// as zeros, never written) take 1, so that their values stay finite.
// Whole groups of four are loaded kSumBatch at a time before any is added:
// one load, then its sum, in turn held a quarter of the kernel's stall
// samples (Nsight Compute, f32, H200, 2026-12-02: the byte permute after
// each load, waiting for DRAM); the same additions in the same order.
// Fourteen at a time (a row of 224 bands in one batch, one trip to L2)
// instead of four: f32 sid 926 -> 998-1010 GB/s, i16 459-464 -> 480-491;
// seven 989-995 and 486-491 (H200, 2026-12-02, same runs). Both rows'
// groups in one batch were far slower: four a row, f32 sid 720-724 -> 420
// GB/s, i16 362-368 -> 236-238 (same run); seven a row 413-416 and
// 218-222, fourteen 225-228 and 129 (2026-12-02, later). The rows
// are asked into L2 two chunks before their tile (the wgmma kernel's
// prefetch_tile): 715-716 -> 744-749 GB/s of f32, i16 356-357 -> 369
// (same run, two rounds); four chunks ahead 733-736, a whole tile 675-679
// (the cube's L2 footprint doubles).
// `O`: the byte order (swapped_bytes); `kIgnore`: the block has an ignore
// value, each of whose samples sets a flag that makes the sum NaN at the end
// (one compare a sample, no select in the sums' dependency chain).
template <DataType T, ByteOrder O, bool kIgnore>
__device__ double sid_quarter_sum(const Args &a, int copy_bytes, size_t pixel, int t) {
  if (pixel >= a.pixels) return 1.0;
  const bool swap_bytes = swapped_bytes<O>(a);
  bool ignored = false;
  const unsigned char *const row = a.data + pixel * a.pixel_stride;
  constexpr int kBytes = Sample<T>::kBytes, kSumBatch = 14;
  static_assert(kSumBatch % 2 == 0, "a batch's groups are added in pairs");
  // The four samples at `at` (16-byte aligned for f32, 8-byte for 16-bit samples).
  auto load_four_samples = [&](const unsigned char *at, float (&x)[4]) {
    if constexpr (T == DataType::f32) {
      const float4 v = __ldg(reinterpret_cast<const float4 *>(at));
      x[0] = native_float(v.x, swap_bytes), x[1] = native_float(v.y, swap_bytes);
      x[2] = native_float(v.z, swap_bytes), x[3] = native_float(v.w, swap_bytes);
    } else {
      const uint2 v = __ldg(reinterpret_cast<const uint2 *>(at));
      widen_pair<T>(v.x, swap_bytes, x[0], x[1]);
      widen_pair<T>(v.y, swap_bytes, x[2], x[3]);
    }
    if constexpr (kIgnore)
      for (const float v : x) ignored |= v == a.ignore_value;
  };
  // `band`'s four samples floored and added, those past the last band skipped.
  auto floored_part = [&](int band, const float (&x)[4], bool all_bands) {
    float part = 0;
    for (int i = 0; i < 4; ++i)
      if (all_bands || band + i < a.bands) part += x[i] < a.sid_floor ? a.sid_floor : x[i];  // NaN stays NaN
    return part;
  };
  // copy_bytes: the rows' alignment, so four samples load at once when it reaches theirs.
  const bool whole = copy_bytes >= 4 * kBytes;
  double total = 0;
  int band = 4 * t;
  if (whole)
    for (; band + 16 * (kSumBatch - 1) + 4 <= a.bands; band += 16 * kSumBatch) {
      const unsigned char *const batch = row + size_t(band) * kBytes;  // the loads at fixed offsets from it
      float x[kSumBatch][4];
#pragma unroll
      for (int j = 0; j < kSumBatch; ++j) load_four_samples(batch + 16 * j * kBytes, x[j]);
#pragma unroll
      for (int j = 0; j < kSumBatch; j += 2)  // float over two groups (eight samples), double beyond
        total += double(floored_part(band + 16 * j, x[j], true) + floored_part(band + 16 * (j + 1), x[j + 1], true));
    }
  for (; band < a.bands; band += 16) {
    float x[4];
    if (whole && band + 4 <= a.bands) {
      load_four_samples(row + size_t(band) * kBytes, x);
    } else {
      for (int i = 0; i < 4; ++i) x[i] = band + i < a.bands ? load_sample<T, true>(a, row + (band + i) * kBytes) : 0.0f;
    }
    total += floored_part(band, x, false);
  }
  return ignored ? quiet_nan() : total;
}

// Both rows' sums (sum[0]: row0, sum[1]: row1), one after the other (the
// loop not unrolled: one copy of each form), in the byte order of the
// kernel's instance and with ignore tests only where the block has an
// ignore value (the byte permutes and ignore tests, issued where they
// select nothing, were half of the sums' instructions): f32 sid 995-1010 ->
// 1033-1043 GB/s, i16 485-486 -> 500-503; with the loop unrolled (four
// copies) 1018-1029 and 491-494 (H200, 2026-12-02, same run, three rounds).
template <DataType T, ByteOrder O>
__device__ void sid_quarter_sums(const Args &a, int copy_bytes, size_t first_pixel, int row0, int row1, int t,
                                 double (&sum)[2]) {
#pragma unroll 1
  for (int half = 0; half < 2; ++half) {
    const size_t pixel = first_pixel + (half ? row1 : row0);
    const double row_sum = a.has_ignore ? sid_quarter_sum<T, O, true>(a, copy_bytes, pixel, t)
                                        : sid_quarter_sum<T, O, false>(a, copy_bytes, pixel, t);
    sum[0] = half ? sum[0] : row_sum;
    sum[1] = half ? row_sum : sum[1];
  }
}

// What load_four needs to know about a row (pixel `pixel`, staged row `row`
// of chunk 0): correlation's shift, bandfit's continuum (NaN where band fit
// is undefined, so that every value and the pixel's sums are: no class),
// sid's log at the first band.
template <DataType T, Method M>
__device__ __forceinline__ PixelContext row_context(const Args &a, const unsigned char *tile, int row, size_t pixel) {
  PixelContext px;
  if constexpr (correlation_like(M)) {
    const float first = load_first<T>(a, tile, row);
    px = pixel_context<M>(first, M == Method::bandfit ? load_last<T>(a, pixel) : first, 0.0);
    if (!px.defined) px.continuum_start = quiet_nan();
  } else if constexpr (M == Method::sid) {  // the centre of its logs (inv_sum, log_sum: after the first half)
    const float first = load_first<T>(a, tile, row);
    px.shift = logf(first < a.sid_floor ? a.sid_floor : first);
  }
  return px;
}

// x = hi + lo, both TF32. Integer samples (and their differences) have at
// most 17 significant bits: lo is then exact and needs no rounding.
template <bool kFractional>
__device__ __forceinline__ void split(float x, uint32_t &hi, uint32_t &lo) {
  const float h = tf32_round(x);
  hi = __float_as_uint(h);
  lo = __float_as_uint(kFractional ? tf32_low(x, h) : x - h);
}

// fp16x3: x0, x1 (already scaled) = hi + lo, each an fp16 pair (x0 in the
// low half), hi rounded to nearest even, lo = x - hi (exact in float)
// rounded likewise: half_bits/half_value on the host.
__device__ __forceinline__ void split_pair(float x0, float x1, uint32_t &hi, uint32_t &lo) {
  const __half2 h = __floats2half2_rn(x0, x1);
  const float2 back = __half22float2(h);
  const __half2 l = __floats2half2_rn(x0 - back.x, x1 - back.y);
  hi = *reinterpret_cast<const uint32_t *>(&h);
  lo = *reinterpret_cast<const uint32_t *>(&l);
}

// 2^-e as a double (fp16x3's pixel scales; -126 <= e <= 127).
__device__ __forceinline__ double inverse_power_of_two(int e) { return __hiloint2double((1023 - e) << 20, 0); }

// A fragment's values for rows g and g + 8 ([span][row][band]: this thread's
// bands 4t..4t+3 of both 16-band spans of a chunk).
using ChunkValues = float[2][2][4];

// Each row's scale for the products: fractional values by 2^e, e from the
// row's largest magnitude in the chunk over `sets` (the quad's four threads
// hold its 32 bands), integers by 1/2; exact either way, undone on the sums
// with `unscale` (integers: in the epilogue).
template <bool kFractional, int kSets>
__device__ __forceinline__ void row_scales(const ChunkValues *sets, float (&scale)[2], double (&unscale)[2]) {
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    if constexpr (kFractional) {
      // NaN samples leave it alone (their pixel is no-data); a tree, not a chain
      float largest = 0;
#pragma unroll
      for (int set = 0; set < kSets; ++set) {
        const ChunkValues &v = sets[set];
        largest = fmaxf(largest, fmaxf(fmaxf(fmaxf(fabsf(v[0][half][0]), fabsf(v[0][half][1])),
                                             fmaxf(fabsf(v[0][half][2]), fabsf(v[0][half][3]))),
                                       fmaxf(fmaxf(fabsf(v[1][half][0]), fabsf(v[1][half][1])),
                                             fmaxf(fabsf(v[1][half][2]), fabsf(v[1][half][3])))));
      }
      largest = fmaxf(largest, __shfl_xor_sync(0xffffffffu, largest, 1));
      largest = fmaxf(largest, __shfl_xor_sync(0xffffffffu, largest, 2));
      const int e = half_scale_exponent(largest);
      scale[half] = power_of_two(e);
      unscale[half] = inverse_power_of_two(e);
    } else {
      scale[half] = kHalfIntegerScale;
      unscale[half] = 1;
    }
  }
}

// The scaled values as fp16 high and low registers in mma.m16n8k16's A order
// ([span][register]: rows g, g + 8 at k = 2t, 2t + 1 (bands 4t, 4t + 1), then
// at k = 2t + 8, 2t + 9 (4t + 2, 4t + 3)).
__device__ __forceinline__ void split_fragment(const ChunkValues &x, const float (&scale)[2], uint32_t (&hi)[2][4],
                                               uint32_t (&lo)[2][4]) {
#pragma unroll
  for (int span = 0; span < 2; ++span)
#pragma unroll
    for (int r = 0; r < 4; ++r) {
      const int half = r % 2, first = 2 * (r / 2);
      split_pair(x[span][half][first] * scale[half], x[span][half][first + 1] * scale[half], hi[span][r],
                 lo[span][r]);
    }
}

// fp16x3 and wgmma (every method but sid): this thread's fragment of a
// staged chunk, for rows `row0` and `row1` (a fragment's g and g + 8), as
// fp16 high and low registers (split_fragment), of the method's values
// (load_four), each row scaled (row_scales). With `summing`, adds the values
// to this thread's share of the rows' sums: in float over its 8 samples of
// the chunk, scaled as for the products (no overflow), then in double (as
// the fast precision sums).
template <DataType T, Method M>
__device__ __forceinline__ void split_chunk(const Args &a, const unsigned char *tile, int row0, int row1, int t,
                                            int chunk_band, int valid, const PixelContext (&px)[2], bool summing,
                                            double (&sum)[2], double (&sum2)[2], uint32_t (&hi)[2][4],
                                            uint32_t (&lo)[2][4], double (&unscale)[2]) {
  const int rows[2] = {row0, row1};
  ChunkValues x;
#pragma unroll
  for (int span = 0; span < 2; ++span)
#pragma unroll
    for (int half = 0; half < 2; ++half)
      load_four<T, M>(a, tile, rows[half], span, t, chunk_band, valid, px[half], x[span][half]);
  float scale[2];
  row_scales<kFractionalValues<T, M>, 1>(&x, scale, unscale);
  if (summing)  // of the scaled samples (no float overflow), unscaled in double
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      float part[2] = {0, 0}, part2[2] = {0, 0};  // per span: two independent chains
#pragma unroll
      for (int span = 0; span < 2; ++span)
        for (float v : x[span][half]) {
          v *= scale[half];
          if constexpr (correlation_like(M)) part[span] += v;
          part2[span] = fmaf(v, v, part2[span]);
        }
      const double back = kFractionalValues<T, M> ? unscale[half] : 1.0 / kHalfIntegerScale;
      if constexpr (correlation_like(M)) sum[half] += double(part[0] + part[1]) * back;
      sum2[half] += double(part2[0] + part2[1]) * back * back;
    }
  split_fragment(x, scale, hi, lo);
}

// Sid's two operands from one staged chunk (classify_math.h, sid_score): the
// rows' centred logs log v - m (times q) and p = v inv_sum (times log q -
// c_k), v floored, each operand by its fixed scale (kSidLogExponent,
// kSidShareExponent: the products go into the same accumulators, both
// carrying 2^8, so no row needs its own scale per chunk); with `summing`,
// sum p (log v - m) from the same scaled operands, in float over a
// thread's eight bands of the chunk, double beyond: sum p log p is that plus (m -
// log_sum) sum p (score_of). Its terms are at most |log v - m|, as the
// products' are, so their float error stays within the products' bounds;
// sum v log v, as the other kernels form it, needed double products (terms
// up to v log v, which cancel against log_sum sum v: float partial sums
// made errors of 5e-6 in SID ~0.45 for pixels spanning 12 decades). The log is the
// hardware's log2 (log2_of_normal, as CUDA's __log2f: within 2^-22 absolute of log2 v for v in
// [0.5, 2], 2 ulps elsewhere: up to 2.6e-6 in log v at v = 65535, where logf
// errs by up to 1e-6) times ln 2, not logf (~20 instructions a sample). Its
// errors enter SID as sum (p - q) x error (both terms take the same log), so
// they vanish as p nears q. An earlier fast log of v / v_first left float's
// range for a floored first band next to samples above ~1e26; the log2 of v
// itself has no such limit, and against logf it took f32 sid 744-749 ->
// 831-836 GB/s, i16 369 -> 412-417 (H200, 2026-12-02, same run, two rounds;
// the GPU tests' bounds against the exact kernel held). `kWholeChunk`: every
// band of the chunk is selected (all chunks but a last partial one), so no
// sample is zeroed: 690.6 M -> 635.5 M warp instructions (Nsight Compute,
// f32, H200, 2026-12-02), f32 sid 575-579 -> 583-587 GB/s and i16 314-315 ->
// 318-320 (two runs, same binary each); the time moves less than the
// instructions, as the kernel waits on each chunk's products and double
// sums.
constexpr double kSidCentredPLogPUnscale = 1.0 / double(1 << (kSidLogExponent + kSidShareExponent));
template <DataType T, bool kWholeChunk, ByteOrder O>
__device__ __forceinline__ void split_sid_chunk(const Args &a, const unsigned char *tile, int row0, int row1, int t,
                                                int chunk_band, int valid, const PixelContext (&px)[2], bool summing,
                                                double (&sum2)[2], uint32_t (&hi)[2][2][4], uint32_t (&lo)[2][2][4]) {
  const int rows[2] = {row0, row1};
  constexpr float kLogScale = float(1 << kSidLogExponent), kShareScale = float(1 << kSidShareExponent);
  // The hardware's log2 of a normal (or infinite, or NaN) float, without the
  // rescaling of subnormal inputs that __log2f adds (four instructions a
  // sample): the floor keeps v normal (sid_floor_is_normal). f32 sid
  // 1291-1292 -> 1355-1369 GB/s, i16 648-652 -> 663-668; the floor by
  // fmaxf rather than a NaN-keeping select, 1370-1376 and 668-677 (same
  // run, three rounds).
  auto log2_of_normal = [](float v) {
    float log2_v;
    asm("lg2.approx.ftz.f32 %0, %1;" : "=f"(log2_v) : "f"(v));
    return log2_v;
  };
  // Per row: -m and 1 / sum v times their operands' scales (exact: powers of two).
  const float shifted[2] = {-px[0].shift * kLogScale, -px[1].shift * kLogScale};
  const float share[2] = {px[0].inv_sum * kShareScale, px[1].inv_sum * kShareScale};
  ChunkValues values[2];  // the logs, then p, scaled
  float centred_p_log_p[2] = {0, 0};  // per row, eight terms of 2^23 sum p (log v - m), unselected bands' zero
#pragma unroll
  for (int span = 0; span < 2; ++span)
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      float x[4];
      load_four<T, Method::sid, O, false>(a, tile, rows[half], span, t, chunk_band, valid, px[half], x);
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const bool selected = kWholeChunk || span * 16 + 4 * t + i < valid;
        const float v = fmaxf(x[i], a.sid_floor);  // NaN: its pixel's sum is NaN, so are p and the scores
        const float log_operand = fmaf(log2_of_normal(v), CUDART_LN2_F * kLogScale, shifted[half]);
        values[0][span][half][i] = selected ? log_operand : 0.0f;
        values[1][span][half][i] = selected ? v * share[half] : 0.0f;
        centred_p_log_p[half] = fmaf(values[0][span][half][i], values[1][span][half][i], centred_p_log_p[half]);
      }
    }
  if (summing)
#pragma unroll
    for (int half = 0; half < 2; ++half) sum2[half] += centred_p_log_p[half];
  const float unit[2] = {1.0f, 1.0f};  // scaled already
  split_fragment(values[0], unit, hi[0], lo[0]);
  split_fragment(values[1], unit, hi[1], lo[1]);
}

// The best reference of a pixel so far: highest key, ties to the lower index,
// NaN never wins.
struct Candidate {
  double key;
  double dot;
  int k;
  __device__ void clear() {
    key = quiet_nan();
    dot = 0;
    k = -1;
  }
  __device__ void offer(double other_key, double other_dot, int other_k) {
    if (!(other_key == other_key) || other_k < 0) return;
    if (k < 0 || other_key > key || (other_key == key && other_k < k)) {
      key = other_key;
      dot = other_dot;
      k = other_k;
    }
  }
};

// The score of reference k from the scaled dot product, pixel sums and (sid)
// the pixel's context.
template <Method M>
__device__ float score_of(const Args &a, int k, double dot, double sum, double sum2, const PixelContext &px) {
  if constexpr (M == Method::sid) {  // sum2: 2^23 sum p (log v - m) (split_sid_chunk)
    const double p_sum = px.inv_sum * sum;
    const double p_log_p = sum2 * kSidCentredPLogPUnscale + (double(px.shift) - double(px.log_sum)) * p_sum;
    return sid_score_of_p(dot, p_log_p, p_sum, px.log_sum, px.shift, float(__ldg(a.sid_terms + 3 * k)),
                          __ldg(a.sid_terms + 3 * k + 1), __ldg(a.sid_terms + 3 * k + 2));
  }
  else if constexpr (M == Method::sam)
    return sam_score(dot, sum2);
  else if constexpr (correlation_like(M))
    return correlation_score(dot, sum, sum2, a.bands, __ldg(a.table + a.shape.constant_index(k)));
  else
    return euclidean_score(sum2 - 2 * dot - __ldg(a.key_offset + k));  // key_offset = -|r|^2
}

// Reference k's ranking key for a pixel (its score when rule images are
// asked for, which it writes), offered to the pixel's best. `s`, `s2`: the
// pixel's sums, scaled; `finite`: whether they are. (Kept inline: a call
// would put the kernel's arguments in local memory, which the hot loop then
// reads: 0.80 against 0.72 ms per cube on an H200.)
template <Method M>
__device__ __forceinline__ void offer_reference(const Args &a, int k, double dot, bool finite, double s, double s2,
                                                const PixelContext &px, size_t pixel, Candidate &best) {
  double key;
  if (a.rule_images) {
    const float score = finite ? score_of<M>(a, k, dot, s, s2, px) : quiet_nan();
    if (pixel < a.pixels) a.rule_images[size_t(k) * a.pixels + pixel] = score;
    key = higher_is_better(M) ? score : -double(score);  // higher is better
  } else {
    key = finite ? __ldg(a.key_scale + k) * dot + __ldg(a.key_offset + k) : quiet_nan();
  }
  best.offer(key, dot, k);
}

// The best of a quad's four candidates (a row's references are spread over
// the quad), in every lane of the quad.
__device__ __forceinline__ void quad_best(Candidate &best) {
  for (int mask = 1; mask <= 2; mask <<= 1) {
    const double other_key = __shfl_xor_sync(0xffffffffu, best.key, mask);
    const double other_dot = __shfl_xor_sync(0xffffffffu, best.dot, mask);
    const int other_k = __shfl_xor_sync(0xffffffffu, best.k, mask);
    best.offer(other_key, other_dot, other_k);
  }
}

// Where reference k's score meets the threshold, as the dot product `at`
// (a larger dot product scores better in every screened method: sam's angle
// acos(dot / |x|), correlation's dot / sqrt(variance x the reference's
// constant), euclidean's sqrt(|x|^2 - 2 dot + |r|^2); +infinity where no
// score meets it), and `scale`, the size of the dot products there (for the
// score's float rounding). Not `defined` where score_of gives NaN (no
// label). The pixel's part, a square root, is formed once (PixelThreshold);
// correlation's reference part, sqrt of its constant, is 1 / key_scale
// (key_inverse), within a few double roundings of the score's own.
struct ThresholdDot {
  bool defined = false;
  double at = 0, scale = 0;
};
struct PixelThreshold {
  double s2 = 0;
  double root = 0;  // sam: |x|; correlation, bandfit: sqrt(variance); euclidean 0; NaN: no score
};
// `s`, `s2`: the pixel's sums as score_of takes them.
template <Method M>
__device__ PixelThreshold pixel_threshold(const Args &a, double s, double s2) {
  PixelThreshold p;
  p.s2 = s2;
  p.root = quiet_nan();
  if (!isfinite(s) || !isfinite(s2)) return p;
  if constexpr (M == Method::sam) {
    if (s2 > 0) p.root = sqrt(s2);
  } else if constexpr (correlation_like(M)) {
    const double variance = s2 - s * s / a.bands;
    if (variance > 0) p.root = sqrt(variance);
  } else {
    p.root = 0;
  }
  return p;
}
template <Method M>
__device__ ThresholdDot threshold_dot(const Args &a, int k, const PixelThreshold &p) {
  ThresholdDot d;
  if (!(p.root == p.root)) return d;
  const double t = a.threshold;
  if constexpr (M == Method::sam) {
    d.scale = p.root;
    d.at = t < 0 ? CUDART_INF : d.scale * a.threshold_cos;
  } else if constexpr (correlation_like(M)) {
    d.scale = p.root * __ldg(a.key_inverse + k);
    d.at = t * d.scale;
  } else {
    const double r2 = -__ldg(a.key_offset + k);  // key_offset = -|r|^2
    d.scale = (p.s2 + r2 + t * t) / 2;
    d.at = t < 0 ? CUDART_INF : (p.s2 + r2 - t * t) / 2;
  }
  d.defined = true;
  return d;
}

// The class map's label of a pixel whose best reference is k (-1: none)
// with dot product `dot`, without its score: label_of's answer but where the
// score lies within its float rounding of the threshold.
// `meets`: threshold_dot's answer for k.
[[maybe_unused]] __device__ int label_from_dot(const Args &a, int k, double dot, const ThresholdDot &meets) {
  if (k < 0 || !meets.defined) return 0;
  return !(a.threshold == a.threshold) || dot >= meets.at ? k + 1 : 0;
}

// The class of a pixel whose best reference is k (-1: none) with dot
// product `dot`: its score against the threshold.
template <Method M>
__device__ int label_of(const Args &a, int k, double dot, double s, double s2, const PixelContext &px = PixelContext()) {
  BestMatch match;
  if (k >= 0 && isfinite(s) && isfinite(s2)) match.offer(score_of<M>(a, k, dot, s, s2, px), k, higher_is_better(M));
  return match.label(a.threshold, higher_is_better(M));
}

// The pixel's class from its best reference over every group, written.
template <Method M>
__device__ void write_label(const Args &a, size_t pixel, const Candidate &best, double s, double s2,
                            const PixelContext &px = PixelContext()) {
  a.class_map.write(pixel, label_of<M>(a, best.k, best.dot, s, s2, px));
}

// Where step s of a worker's (block's or warp group's) work is: its chunk,
// reference group, tile and staging buffer. Advanced one step at a time (no
// 64-bit divisions).
struct StepCursor {
  int chunk, group, buffer;
  size_t first_pixel;  // of the tile
  size_t tile_step;    // pixels from one of the worker's tiles to its next
  __device__ static StepCursor first(size_t first_pixel, size_t tile_step) {
    return {0, 0, 0, first_pixel, tile_step};
  }
  __device__ void advance(const Args &a) {
    if (++buffer == a.stages) buffer = 0;
    if (++chunk < a.band_chunks) return;
    chunk = 0;
    if (++group < a.groups) return;
    group = 0;
    first_pixel += tile_step;
  }
};

template <Product P, Method M, DataType T>
__global__ void __launch_bounds__(kThreadsOf<P>, 1) classify_bip_tensor_kernel(const Args a, const int copy_bytes) {
  constexpr int kThreads = kThreadsOf<P>, kWarpPixels = Shape<P>::kWarpPixels;
  constexpr int kWarpRows = kWarpRowsOf<P>, kMmaRows = kMmaRowsOf<P>;
  using Fragment = typename Shape<P>::Fragment;
  extern __shared__ __align__(16) unsigned char smem[];
  uint4 *const references = reinterpret_cast<uint4 *>(smem);
  unsigned char *const staging = smem + size_t(a.chunks) * fragments_per_chunk(P) * sizeof(uint4);
  double *const pixel_sum = reinterpret_cast<double *>(staging + a.stages * kTilePixels * kRowBytes<T>);
  double *const pixel_sum2 = pixel_sum + kTilePixels;
  double *const candidate_key = pixel_sum2 + kTilePixels;           // [kWarpColumns][kTilePixels]
  double *const candidate_dot = candidate_key + kWarpColumns * kTilePixels;
  int *const candidate_index = reinterpret_cast<int *>(candidate_dot + kWarpColumns * kTilePixels);

  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int warp_row = warp % kWarpRows, warp_column = warp / kWarpRows;
  const int g = lane / 4, t = lane % 4;  // mma fragment coordinates
  const size_t tiles = (a.pixels + kTilePixels - 1) / kTilePixels;
  if (blockIdx.x >= tiles) return;
  const int steps_per_tile = a.groups * a.chunks;
  const int total_steps = int((tiles - 1 - blockIdx.x) / gridDim.x + 1) * steps_per_tile;
  auto buffer = [&](int index) { return staging + index * (kTilePixels * kRowBytes<T>); };
  const int ahead = a.stages - 2;  // chunks in flight while one multiplies
  // Staged row of fragment row `half` (g or g + 8) of m-tile `m`.
  auto row_of = [&](int m, int half) { return warp_row * kWarpPixels + m * 16 + half * 8 + g; };

  float acc[kMmaRows][kMmaColumns][4];
  double total[kMmaRows][kMmaColumns][4];
  double sum[kMmaRows][2], sum2[kMmaRows][2];  // this thread's share of its rows' sums
  PixelContext context[kMmaRows][2];
  Candidate running;  // threads < kTilePixels: pixel `threadIdx.x` of the tile, over groups
  running.clear();

  // Copies of step s form one cp.async group (possibly empty), committed in
  // step order; the first group also holds the references when one group of
  // references covers K.
  StepCursor staged = StepCursor::first(size_t(blockIdx.x) * kTilePixels, size_t(gridDim.x) * kTilePixels);
  StepCursor current = staged;
  int staged_steps = 0;
  auto stage_next = [&]() {
    if (staged_steps++ < total_steps)
      stage_chunk<T, kTilePixels, kThreads>(a, copy_bytes, buffer(staged.buffer), staged.first_pixel, staged.chunk,
                                            threadIdx.x);
    staged.advance(a);
  };
  if (a.groups == 1) stage_references<P>(a, references, 0);
  for (int s = 0; s < ahead; ++s) {
    stage_next();
    commit_copies();
  }

  for (int step = 0; step < total_steps; ++step, current.advance(a)) {
    const int group = current.group, chunk = current.chunk;
    const bool new_references = a.groups > 1 && chunk == 0;
    if (new_references) {
      __syncthreads();  // every warp is done with the previous group's references
      stage_references<P>(a, references, group);
      commit_copies();
    }
    // Into the buffer of step - 2 (stages = ahead + 2): every thread passed
    // the barrier of step - 1, so every thread finished reading it.
    stage_next();  // step + ahead
    commit_copies();
    if (new_references)
      wait_copies<0>();
    else if (ahead == 2)
      wait_copies<2>();  // all but the two chunks just ahead
    else
      wait_copies<1>();
    __syncthreads();

    const unsigned char *tile = buffer(current.buffer);
    const Fragment *fragments =
        reinterpret_cast<const Fragment *>(references) + chunk * fragments_per_chunk(P);
    const bool first_pass = group == 0, summing = first_pass && warp_column == 0;
    const int valid_bands = min(kChunkBands, a.bands - chunk * kChunkBands);
    if (chunk == 0) {
#pragma unroll
      for (auto &m : total)
        for (auto &n : m)
          for (double &v : n) v = 0;
      for (auto &m : acc)
        for (auto &n : m)
          for (float &v : n) v = 0;
#pragma unroll
      for (int m = 0; m < kMmaRows; ++m)
#pragma unroll
        for (int half = 0; half < 2; ++half) {
          context[m][half] = row_context<T, M>(a, tile, row_of(m, half), current.first_pixel + row_of(m, half));
          if (first_pass) sum[m][half] = sum2[m][half] = 0;
        }
    }

    // This thread's samples 4t..4t+3 of a span of 16 bands of its rows, and
    // (first pass, first warp column) their share of the pixel sums.
    auto load_span = [&](int span, float (&x)[kMmaRows][2][4]) {
#pragma unroll
      for (int m = 0; m < kMmaRows; ++m)
#pragma unroll
        for (int half = 0; half < 2; ++half) {
          load_four<T, M>(a, tile, row_of(m, half), span, t, chunk * kChunkBands, valid_bands, context[m][half],
                          x[m][half]);
          if (summing)
            for (float v : x[m][half]) {
              const double d = v;
              if constexpr (correlation_like(M)) sum[m][half] += d;
              sum2[m][half] = fma(d, d, sum2[m][half]);
            }
        }
    };

    if constexpr (P == Product::tf32x3) {
#pragma unroll
      for (int span = 0; span < 2; ++span) {
        float x[kMmaRows][2][4];
        load_span(span, x);
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          // k = t: band 4t + 2h of the span; k = t + 4: band 4t + 2h + 1.
          uint32_t a_hi[kMmaRows][4], a_lo[kMmaRows][4];
#pragma unroll
          for (int m = 0; m < kMmaRows; ++m) {
            constexpr bool kFractional = kFractionalValues<T, M>;
            split<kFractional>(x[m][0][2 * h], a_hi[m][0], a_lo[m][0]);      // row g,     k = t
            split<kFractional>(x[m][1][2 * h], a_hi[m][1], a_lo[m][1]);      // row g + 8, k = t
            split<kFractional>(x[m][0][2 * h + 1], a_hi[m][2], a_lo[m][2]);  // row g,     k = t + 4
            split<kFractional>(x[m][1][2 * h + 1], a_hi[m][3], a_lo[m][3]);  // row g + 8, k = t + 4
          }
          const int step_in_chunk = span * 2 + h;
#pragma unroll
          for (int n = 0; n < kMmaColumns; ++n) {
            const float4 b =
                fragments[(step_in_chunk * kColumnsPerGroup + warp_column * kMmaColumns + n) * kLanes + lane];
            const uint32_t b_hi0 = __float_as_uint(b.x), b_hi1 = __float_as_uint(b.y);
            const uint32_t b_lo0 = __float_as_uint(b.z), b_lo1 = __float_as_uint(b.w);
#pragma unroll
            for (int m = 0; m < kMmaRows; ++m) {
              mma_tf32(acc[m][n], a_lo[m], b_hi0, b_hi1);  // small terms first
              mma_tf32(acc[m][n], a_hi[m], b_lo0, b_lo1);
              mma_tf32(acc[m][n], a_hi[m], b_hi0, b_hi1);
            }
          }
          // Column n's float sums go into double after step n of every chunk:
          // each holds 4 steps (32 bands) at most, as a chunk-wise flush would,
          // but the conversions (a quarter-rate pipe) spread over the chunk
          // instead of all warps converting at once before the barrier.
          static_assert(kMmaColumns == kStepsPerChunk, "one column flushed per step");
#pragma unroll
          for (int m = 0; m < kMmaRows; ++m)
#pragma unroll
            for (int i = 0; i < 4; ++i) {
              total[m][step_in_chunk][i] += acc[m][step_in_chunk][i];
              acc[m][step_in_chunk][i] = 0;
            }
        }
      }
    } else {
      static_assert(kMmaRowsOf<Product::fp16x3> == 1, "fp16x3: one m-tile per warp");
      uint32_t a_hi[2][4], a_lo[2][4];
      double row_unscale[2];
      split_chunk<T, M>(a, tile, row_of(0, 0), row_of(0, 1), t, chunk * kChunkBands, valid_bands, context[0], summing,
                        sum[0], sum2[0], a_hi, a_lo, row_unscale);
      // The chunk's float sums of column n into double, the row's scale
      // undone (the scales change from chunk to chunk: the windows are the
      // chunks, not staggered). Column n - 1 after column n's last products
      // are issued, so its conversions overlap them.
      auto fold = [&](int n) {
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          if constexpr (kFractionalValues<T, M>)
            total[0][n][i] = fma(double(acc[0][n][i]), row_unscale[i / 2], total[0][n][i]);
          else
            total[0][n][i] += acc[0][n][i];
          acc[0][n][i] = 0;
        }
      };
#pragma unroll
      for (int span = 0; span < 2; ++span) {
#pragma unroll
        for (int n = 0; n < kMmaColumns; ++n) {
          const uint4 b = fragments[(span * kColumnsPerGroup + warp_column * kMmaColumns + n) * kLanes + lane];
          mma_f16(acc[0][n], a_lo[span], b.x, b.y);  // small terms first
          mma_f16(acc[0][n], a_hi[span], b.z, b.w);
          mma_f16(acc[0][n], a_hi[span], b.x, b.y);
          if (span == 1 && n > 0) fold(n - 1);
        }
      }
      fold(kMmaColumns - 1);
    }

    if (chunk == a.chunks - 1) {
      if constexpr (P == Product::tf32x3) {
        // What the last chunk's later steps added to the earlier columns.
#pragma unroll
        for (int m = 0; m < kMmaRows; ++m)
#pragma unroll
          for (int n = 0; n < kMmaColumns; ++n)
#pragma unroll
            for (int i = 0; i < 4; ++i) {
              total[m][n][i] += acc[m][n][i];
              acc[m][n][i] = 0;
            }
      }
      // --- end of a group: scores, best per pixel ---
      const size_t first_pixel = current.first_pixel;
      if (summing) {  // the quad's four threads hold a row's bands between them
#pragma unroll
        for (int m = 0; m < kMmaRows; ++m)
#pragma unroll
          for (int half = 0; half < 2; ++half) {
            for (int mask = 1; mask <= 2; mask <<= 1) {
              sum[m][half] += __shfl_xor_sync(0xffffffffu, sum[m][half], mask);
              sum2[m][half] += __shfl_xor_sync(0xffffffffu, sum2[m][half], mask);
            }
            if (t == 0) {
              pixel_sum[row_of(m, half)] = sum[m][half];
              pixel_sum2[row_of(m, half)] = sum2[m][half];
            }
          }
      }
      __syncthreads();
      const double scale = a.scale;
      // fp16x3: the dot products also carry the references' scales and, for
      // integer samples, the pixels' 1/2 (powers of two: exact).
      const double dot_unscale =
          P == Product::fp16x3 && !kFractionalValues<T, M> ? scale / double(kHalfIntegerScale) : scale;
      // Fully unrolled: `total` stays in registers.
#pragma unroll
      for (int m = 0; m < kMmaRows; ++m)
#pragma unroll
        for (int half = 0; half < 2; ++half) {
          const int row = row_of(m, half);
          const size_t pixel = first_pixel + row;
          const double s = pixel_sum[row] * scale, s2 = pixel_sum2[row] * scale * scale;
          const bool finite = isfinite(s2) && isfinite(s);
          Candidate best;
          best.clear();
#pragma unroll
          for (int n = 0; n < kMmaColumns; ++n)
#pragma unroll
            for (int c = 0; c < 2; ++c) {
              const int k = group * kGroupReferences + warp_column * kWarpReferences + n * kColumnReferences +
                            2 * t + c;
              if (k >= a.references) continue;
              double dot = total[m][n][half * 2 + c] * dot_unscale;
              if constexpr (P == Product::fp16x3) dot *= __ldg(a.dot_scale + k);
              offer_reference<M>(a, k, dot, finite, s, s2, context[m][half], pixel, best);
            }
          quad_best(best);
          if (t == 0) {
            candidate_key[warp_column * kTilePixels + row] = best.key;
            candidate_dot[warp_column * kTilePixels + row] = best.dot;
            candidate_index[warp_column * kTilePixels + row] = best.k;
          }
        }
      __syncthreads();
      if (threadIdx.x < kTilePixels) {
        const int row = threadIdx.x;
        for (int column = 0; column < kWarpColumns; ++column)
          running.offer(candidate_key[column * kTilePixels + row], candidate_dot[column * kTilePixels + row],
                        candidate_index[column * kTilePixels + row]);
        const size_t pixel = first_pixel + row;
        if (group == a.groups - 1) {
          if (pixel < a.pixels)
            write_label<M>(a, pixel, running, pixel_sum[row] * scale, pixel_sum2[row] * scale * scale);
          running.clear();
        }
      }
    }
    // No barrier here: the next copies go to a buffer read two steps ago.
  }
}

// --- wgmma (sm_90a) ---
// __CUDA_ARCH_FEAT_SM90_ALL: this pass compiles for sm_90a, whose machine
// code has the warp-group instructions; other passes get empty bodies and
// wgmma_available() says which one the device loaded.
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define CS_HSI_WGMMA_BUILT 1
#endif

constexpr int kWarpgroupThreads = 128;
constexpr int kWgmmaThreads = kWarpgroupsPerBlock * kWarpgroupThreads;
constexpr int kWgmmaAccumulators = kWarpgroupPixels * kGroupReferences / kWarpgroupThreads;  // 32 per thread

#if defined(CS_HSI_WGMMA_BUILT)
// Asks L2 for a tile's kRows rows ahead of their reads (one bulk prefetch
// of the rows' whole span; 16-byte multiples, as 16-byte staging copies imply).
template <DataType T, int kRows>
__device__ __forceinline__ void prefetch_tile(const Args &a, size_t first_pixel) {
  if (first_pixel >= a.pixels) return;
  const size_t rows = min(size_t(kRows), a.pixels - first_pixel);
  const size_t bytes = ((rows - 1) * a.pixel_stride + a.bands * Sample<T>::kBytes + 15) / 16 * 16;
  asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;\n" ::"l"(a.data + first_pixel * a.pixel_stride),
               "r"(uint32_t(min(bytes, size_t(0xfffffff0u)))) : "memory");
}

// Shared-memory matrix descriptor, no swizzling: start address, the bytes
// between core matrices adjacent along k ("leading") and along the
// references ("stride"), each in 16-byte units.
__device__ __forceinline__ uint64_t matrix_descriptor(uint32_t address, uint32_t leading_bytes,
                                                      uint32_t stride_bytes) {
  return uint64_t((address & 0x3ffffu) >> 4) | uint64_t(leading_bytes >> 4) << 16 |
         uint64_t(stride_bytes >> 4) << 32;
}

// The descriptor of the matrix `units` 16-byte units after `descriptor`'s:
// shared addresses stay below 2^18, so the 14-bit address field of the low
// word never carries (one 32-bit add instead of masking and shifting each
// address: f32 sid 1431-1435 -> 1431-1440 GB/s, i16 711-716 -> 718-726,
// the other methods equal; H200, 2026-12-02, same run, three rounds).
__device__ __forceinline__ uint64_t descriptor_plus(uint64_t descriptor, uint32_t units) {
  return (descriptor & 0xffffffff00000000ull) | uint32_t(uint32_t(descriptor) + units);
}

// d += a x b, 64 pixels x 64 references x 16 bands: a, this thread's fp16
// pixel registers; b, the references' descriptor. kFirst: d = a x b (d is
// then only written, so the compiler keeps nothing in it before).
#define CS_WGMMA_ACCUMULATORS(c) \
  c(d[0]), c(d[1]), c(d[2]), c(d[3]), c(d[4]), c(d[5]), c(d[6]), c(d[7]), \
  c(d[8]), c(d[9]), c(d[10]), c(d[11]), c(d[12]), c(d[13]), c(d[14]), c(d[15]), \
  c(d[16]), c(d[17]), c(d[18]), c(d[19]), c(d[20]), c(d[21]), c(d[22]), c(d[23]), \
  c(d[24]), c(d[25]), c(d[26]), c(d[27]), c(d[28]), c(d[29]), c(d[30]), c(d[31])
#define CS_WGMMA_INSTRUCTION \
      "{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n" \
      "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 " \
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15," \
      " %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31},\n" \
      " {%32, %33, %34, %35}, %36, p, 1, 1, 0;\n}\n"
template <bool kFirst>
__device__ __forceinline__ void wgmma_f16(float (&d)[kWgmmaAccumulators], const uint32_t (&a)[4], uint64_t b) {
  if constexpr (kFirst)
    asm volatile(CS_WGMMA_INSTRUCTION
                 : CS_WGMMA_ACCUMULATORS("=f")
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "n"(0));
  else
    asm volatile(CS_WGMMA_INSTRUCTION
                 : CS_WGMMA_ACCUMULATORS("+f")
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "n"(1));
}
// d += a x b, 64 pixels x 64 references x 8 bands, TF32 (the operands'
// float bits, of which the instruction reads the TF32 part): a, the pixels'
// operand from this thread's registers (the instruction's fragment: row g of
// its warp's 16 in a[0] and a[2], row g + 8 in a[1] and a[3]; columns t and
// t + 4); b, the references' descriptor.
#define CS_WGMMA_TF32_REGISTER_INSTRUCTION \
      "{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n" \
      "wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32 " \
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15," \
      " %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31},\n" \
      " {%32, %33, %34, %35}, %36, p, 1, 1;\n}\n"
template <bool kFirst>
__device__ __forceinline__ void wgmma_tf32(float (&d)[kWgmmaAccumulators], const uint32_t (&a)[4], uint64_t b) {
  if constexpr (kFirst)
    asm volatile(CS_WGMMA_TF32_REGISTER_INSTRUCTION
                 : CS_WGMMA_ACCUMULATORS("=f")
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "n"(0));
  else
    asm volatile(CS_WGMMA_TF32_REGISTER_INSTRUCTION
                 : CS_WGMMA_ACCUMULATORS("+f")
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "n"(1));
}
#undef CS_WGMMA_TF32_REGISTER_INSTRUCTION
#undef CS_WGMMA_ACCUMULATORS
#undef CS_WGMMA_INSTRUCTION
__device__ __forceinline__ void wgmma_fence() {
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
}
__device__ __forceinline__ void wgmma_commit() {
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}
// Waits until at most kPending committed groups are in flight.
template <int kPending>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(kPending) : "memory");
}
// After a wait, for the registers of the finished instructions: the empty
// asm "writes" them here, so the compiler neither reads the accumulators
// earlier nor reuses the pixel registers before the instructions that read
// them have finished.
__device__ __forceinline__ void hold(float (&d)[kWgmmaAccumulators]) {
#pragma unroll
  for (float &v : d) asm volatile("" : "+f"(v)::"memory");
}
template <int kSpans>
__device__ __forceinline__ void hold(uint32_t (&r)[kSpans][4]) {
#pragma unroll
  for (auto &span : r)
    for (uint32_t &v : span) asm volatile("" : "+r"(v)::"memory");
}
// A row's sum over the quad's four threads, which hold its bands between
// them (every lane of the quad gets the totals).
__device__ __forceinline__ void add_over_quad(double (&sum)[2]) {
#pragma unroll
  for (int half = 0; half < 2; ++half)
    for (int mask = 1; mask <= 2; mask <<= 1) sum[half] += __shfl_xor_sync(0xffffffffu, sum[half], mask);
}
#endif  // CS_HSI_WGMMA_BUILT

// One warp group per 64-pixel tile (kWarpgroupsPerBlock per block, one
// block per SM), all reference groups' tables resident in shared memory; per
// chunk of 32 bands the warp group stages its rows (cp.async, as the kernel
// above), each thread splits its fragment of them (split_chunk; sid:
// split_sid_chunk, two operands) and issues 6 wgmma per operand into one
// accumulator set, waits for them and folds it into its totals (double;
// sid's float). Epilogue as the kernel above, with a warp's 16 rows holding
// all 64 references of the group.
// `O` (sid only: native or swapped): the block's byte order, fixed by the
// instance, so its chunks are split without byte permutes where the bytes
// are the machine's, and without ignore tests: a pixel with the ignore
// value has a NaN sum (sid_quarter_sum, which tests), so NaN p, products and
// scores, class 0. With an ignore value in the header (as AVIRIS-NG's
// -9999) f32 sid took 985-991 GB/s before, as for swapped bytes, against
// 1409-1424 without one (H200, 2026-12-02); with an instance per byte order
// and sid_quarter_sum's flag, 1408-1429 with the ignore value and
// 1403-1404 for swapped bytes (2026-12-03).
template <Method M, DataType T, ByteOrder O = ByteOrder::from_args>
__global__ void __launch_bounds__(kWgmmaThreads, 1) classify_bip_wgmma_kernel(const Args a, const int copy_bytes) {
#if defined(CS_HSI_WGMMA_BUILT)
  extern __shared__ __align__(16) unsigned char smem[];
  const int padded_bands = a.chunks * kChunkBands;
  const size_t table_bytes = size_t(a.groups) * 2 * kGroupReferences * padded_bands * sizeof(uint16_t);
  // Per reference: its ranking key from the folded sums, key = sums x
  // factor + offset (offset -infinity for unusable or padding references:
  // never the best of a finite pixel), and the dot product from the key,
  // dot = (key - offset) x dot_per_key.
  double2 *const key_terms = reinterpret_cast<double2 *>(smem + table_bytes);
  double *const dot_per_key = reinterpret_cast<double *>(key_terms + a.groups * kGroupReferences);
  // Sid's float totals carry its products' 2^kSidLogExponent.
  const double dot_unscale = M == Method::sid             ? a.scale / double(1 << kSidLogExponent)
                             : kFractionalValues<T, M> ? a.scale
                                                       : a.scale / double(kHalfIntegerScale);
  {
    const uint4 *src = static_cast<const uint4 *>(a.fragments);
    uint4 *dst = reinterpret_cast<uint4 *>(smem);
    for (size_t i = threadIdx.x; i < table_bytes / 16; i += kWgmmaThreads) dst[i] = __ldg(src + i);
    for (int k = threadIdx.x; k < a.groups * kGroupReferences; k += kWgmmaThreads) {
      const double key_scale = k < a.references ? __ldg(a.key_scale + k) : quiet_nan();
      const bool usable = isfinite(key_scale);
      key_terms[k] = usable ? make_double2(dot_unscale * __ldg(a.dot_scale + k) * key_scale, __ldg(a.key_offset + k))
                            : make_double2(0.0, -CUDART_INF);
      dot_per_key[k] = usable ? __ldg(a.key_inverse + k) : 0.0;  // 1 / key_scale, made with the tables
    }
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");  // the table, visible to the wgmma reads
    __syncthreads();
  }
  const int warpgroup = threadIdx.x / kWarpgroupThreads, thread = threadIdx.x % kWarpgroupThreads;
  const int warp = thread / 32, lane = thread % 32, g = lane / 4, t = lane % 4;
  const size_t tiles = (a.pixels + kWarpgroupPixels - 1) / kWarpgroupPixels;
  const size_t first_tile = size_t(blockIdx.x) * kWarpgroupsPerBlock + warpgroup;
  const size_t tile_step = size_t(gridDim.x) * kWarpgroupsPerBlock;
  if (first_tile >= tiles) return;
  const int total_steps = int((tiles - 1 - first_tile) / tile_step + 1) * a.groups * a.band_chunks;
  unsigned char *const staging = smem + table_bytes + a.groups * kGroupReferences * 3 * sizeof(double) +
                                size_t(warpgroup) * a.stages * kWarpgroupPixels * kRowBytes<T>;
  auto buffer = [&](int index) { return staging + index * (kWarpgroupPixels * kRowBytes<T>); };
  auto sync_warpgroup = [&] {
    asm volatile("bar.sync %0, %1;\n" ::"r"(warpgroup + 1), "n"(kWarpgroupThreads) : "memory");
  };
  const int ahead = a.stages - 2;
  const int row0 = warp * 16 + g, row1 = row0 + 8;
  const uint32_t table_address = shared_address(smem);
  const uint32_t part_bytes = kGroupReferences * padded_bands * sizeof(uint16_t);  // high to low parts
  const uint32_t stride_bytes = 8 * padded_bands * sizeof(uint16_t);             // 8 references further
  const uint64_t table_descriptor = matrix_descriptor(table_address, 128, stride_bytes);

  StepCursor staged = StepCursor::first(first_tile * kWarpgroupPixels, tile_step * kWarpgroupPixels);
  StepCursor current = staged;
  int staged_steps = 0;
  auto stage_next = [&]() {
    if (staged_steps++ < total_steps)
      stage_chunk<T, kWarpgroupPixels, kWarpgroupThreads>(a, copy_bytes, buffer(staged.buffer), staged.first_pixel,
                                                          staged.chunk, thread);
    staged.advance(a);
  };
  for (int s = 0; s < ahead; ++s) {
    stage_next();
    commit_copies();
  }

  // Sid multiplies two operands per chunk ((log v - m) x q and p x (log q -
  // c_k), its table's two halves) into the same accumulators.
  constexpr int kOperands = M == Method::sid ? 2 : 1;
  float acc[kWgmmaAccumulators];
  // Sid's chunk sums add in float: its operands' scales are fixed, so every
  // chunk's accumulators carry the same 2^kSidLogExponent. Each addition
  // rounds by at most 2^-24 of the running total (|total| <= the logs'
  // spread), seven for 224 bands, against the products' own twelve
  // truncating additions a chunk. The others' chunk sums add in double (their
  // scales change from chunk to chunk). Sid's float-to-double conversion and
  // double add per accumulator and chunk held a quarter of the chunks' stall
  // samples (Nsight Compute, f32, H200, 2026-12-02); in float (and 32 fewer
  // registers, no spills): f32 sid 1040-1049 -> 1291-1292 GB/s, i16 499-505
  // -> 648-652 (same run, three rounds).
  using Total = std::conditional_t<M == Method::sid, float, double>;
  Total total[kWgmmaAccumulators];
  double sum[2] = {0, 0}, sum2[2] = {0, 0};
  PixelContext context[2];
  Candidate running[2];
  running[0].clear();
  running[1].clear();

  // One chunk: its products, then its float sums folded into the totals.
  // Returns whether it ended a group of references for its tile.
  auto step = [&]() {
    stage_next();  // step + ahead, into the buffer read two steps ago
    commit_copies();
    if (ahead == 2)
      wait_copies<2>();
    else
      wait_copies<1>();
    sync_warpgroup();
    const unsigned char *tile = buffer(current.buffer);
    const int group = current.group, chunk = current.chunk;
    const bool summing = group == 0;
    // Sid reads the next tile's rows for their sums before its first chunk
    // (sid_quarter_sum): into L2 two chunks before this tile ends.
    if constexpr (M == Method::sid)
      if (thread == 0 && copy_bytes == 16 && group == a.groups - 1 && chunk == max(0, a.band_chunks - 2))
        prefetch_tile<T, kWarpgroupPixels>(a, current.first_pixel + current.tile_step);
    if (chunk == 0) {
#pragma unroll
      for (Total &v : total) v = 0;
      if (summing) {  // the rows' contexts and sums serve every group
        context[0] = row_context<T, M>(a, tile, row0, current.first_pixel + row0);
        context[1] = row_context<T, M>(a, tile, row1, current.first_pixel + row1);
        sum[0] = sum[1] = sum2[0] = sum2[1] = 0;
        if constexpr (M == Method::sid) {  // p's 1 / sum v before the first product
          sid_quarter_sums<T, O>(a, copy_bytes, current.first_pixel, row0, row1, t, sum);
          add_over_quad(sum);
#pragma unroll
          for (int half = 0; half < 2; ++half) {
            const PixelContext px = pixel_context<Method::sid>(0.0f, 0.0f, sum[half]);
            context[half].inv_sum = px.inv_sum;
            context[half].log_sum = px.log_sum;
          }
        }
      }
    }
    uint32_t a_hi[kOperands][2][4], a_lo[kOperands][2][4];  // [operand][span][register]: read by the products
    double unscale[2];
    const int chunk_band = chunk * kChunkBands, valid = min(kChunkBands, a.bands - chunk_band);
    if constexpr (M == Method::sid) {
      // Every chunk but a last partial one has all of its bands: no selection per sample.
      if (valid == kChunkBands)
        split_sid_chunk<T, true, O>(a, tile, row0, row1, t, chunk_band, valid, context, summing, sum2, a_hi,
                                         a_lo);
      else
        split_sid_chunk<T, false, O>(a, tile, row0, row1, t, chunk_band, valid, context, summing, sum2, a_hi,
                                          a_lo);
    } else
      split_chunk<T, M>(a, tile, row0, row1, t, chunk_band, valid, context, summing, sum, sum2, a_hi[0], a_lo[0],
                        unscale);
    // Operand o's table: chunk o x band_chunks + chunk of the group's table.
    const uint32_t high = (uint32_t(group) * 2 * part_bytes + uint32_t(chunk) * 512) >> 4;
    wgmma_fence();
#pragma unroll
    for (int o = 0; o < kOperands; ++o)
#pragma unroll
      for (int span = 0; span < 2; ++span) {
        const uint32_t units = high + (uint32_t(o * a.band_chunks) * 512 + span * 256) / 16;
        const uint64_t b_hi = descriptor_plus(table_descriptor, units);
        const uint64_t b_lo = descriptor_plus(b_hi, part_bytes / 16);
        if (o == 0 && span == 0)
          wgmma_f16<true>(acc, a_lo[o][span], b_hi);  // small terms first
        else
          wgmma_f16<false>(acc, a_lo[o][span], b_hi);
        wgmma_f16<false>(acc, a_hi[o][span], b_lo);
        wgmma_f16<false>(acc, a_hi[o][span], b_hi);
      }
    wgmma_commit();
    wgmma_wait<0>();
    hold(acc);
#pragma unroll
    for (int o = 0; o < kOperands; ++o) {
      hold(a_hi[o]);
      hold(a_lo[o]);
    }
    // Accumulator j: rows g (j % 4 < 2) or g + 8, reference 8 (j / 4) + 2t + j % 2.
#pragma unroll
    for (int j = 0; j < kWgmmaAccumulators; ++j) {
      if constexpr (M == Method::sid)
        total[j] += acc[j];
      else if constexpr (kFractionalValues<T, M>)
        total[j] = fma(double(acc[j]), unscale[(j % 4) / 2], total[j]);
      else
        total[j] += acc[j];
    }
    return chunk == a.band_chunks - 1;
  };

  // End of a group of references for the tile: scores, best per pixel.
  auto finish_group = [&]() {
    const int group = current.group;
    if (group == 0) {  // sid's sum v is whole already (sid_quarter_sum)
      if constexpr (M != Method::sid) add_over_quad(sum);
      add_over_quad(sum2);
    }
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const size_t pixel = current.first_pixel + (half ? row1 : row0);
      const double s = sum[half] * a.scale, s2 = sum2[half] * a.scale * a.scale;
      const bool finite = isfinite(s2) && isfinite(s);
      if (a.rule_images) {  // every score
        Candidate best;
        best.clear();
#pragma unroll
        for (int n = 0; n < kColumnsPerGroup; ++n)
#pragma unroll
          for (int c = 0; c < 2; ++c) {
            const int k = group * kGroupReferences + n * kColumnReferences + 2 * t + c;
            if (k >= a.references) continue;
            const double dot = double(total[4 * n + 2 * half + c]) * dot_unscale * __ldg(a.dot_scale + k);
            offer_reference<M>(a, k, dot, finite, s, s2, context[half], pixel, best);
          }
        quad_best(best);
        running[half].offer(best.key, best.dot, best.k);
      } else {  // ranking keys; the dot product of the winner only
        double best_key = -CUDART_INF;
        int best_k = -1;
#pragma unroll
        for (int n = 0; n < kColumnsPerGroup; ++n)
#pragma unroll
          for (int c = 0; c < 2; ++c) {  // ascending k: a tie keeps the lower
            const int k = group * kGroupReferences + n * kColumnReferences + 2 * t + c;
            const double2 terms = key_terms[k];
            const double key = fma(double(total[4 * n + 2 * half + c]), terms.x, terms.y);
            const bool better = key > best_key;
            best_k = better ? k : best_k;
            best_key = better ? key : best_key;
          }
        for (int mask = 1; mask <= 2; mask <<= 1) {
          const double other_key = __shfl_xor_sync(0xffffffffu, best_key, mask);
          const int other_k = __shfl_xor_sync(0xffffffffu, best_k, mask);
          if (other_key > best_key || (other_key == best_key && other_k < best_k)) {
            best_key = other_key;
            best_k = other_k;
          }
        }
        if (finite && best_k >= 0)  // after the shuffles: every lane of the quad takes part in them
          running[half].offer(best_key, (best_key - key_terms[best_k].y) * dot_per_key[best_k], best_k);
      }
    }
    if (group == a.groups - 1) {  // lanes t = 0 and 1 of each quad write rows g and g + 8: one pass
      const int half = t & 1;
      const size_t pixel = current.first_pixel + (half ? row1 : row0);
      Candidate mine;  // field by field: selecting the struct would put the pair in local memory
      mine.key = half ? running[1].key : running[0].key;
      mine.dot = half ? running[1].dot : running[0].dot;
      mine.k = half ? running[1].k : running[0].k;
      if (t < 2 && pixel < a.pixels)
        write_label<M>(a, pixel, mine, (half ? sum[1] : sum[0]) * a.scale,
                       (half ? sum2[1] : sum2[0]) * a.scale * a.scale, half ? context[1] : context[0]);
      running[0].clear();
      running[1].clear();
    }
  };
  for (int s = 0; s < total_steps; ++s, current.advance(a))
    if (step()) finish_group();
#endif
}

// --- the screen (bip_tensor.h; sm_90a) ---
#if defined(CS_HSI_WGMMA_BUILT)

// A 16-byte copy (as copy_async<16>) whose lines L2 may drop first: the
// screen reads the cube once, and the next tile, prefetched into L2 while
// this one is scored, must outlive the lines already staged. Without the
// hint about a sixth of the prefetched lines were evicted before use and
// read again from DRAM (1.10 GB read for a 0.94 GB f32 cube; the 16-bit
// kernels, which read half as fast, lost none: 470 MB for 470).
__device__ __forceinline__ uint64_t read_once_policy() {
  uint64_t policy;
  asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;\n" : "=l"(policy));
  return policy;
}
template <int kBytes>
__device__ __forceinline__ void copy_async_read_once(uint32_t dst, const void *src, uint64_t policy) {
  if constexpr (kBytes == 16)
    asm volatile("cp.async.cg.shared.global.L2::cache_hint [%0], [%1], 16, 16, %2;\n" ::"r"(dst), "l"(src),
                 "l"(policy)
                 : "memory");
  else
    asm volatile("cp.async.ca.shared.global.L2::cache_hint [%0], [%1], %2, %2, %3;\n" ::"r"(dst), "l"(src),
                 "n"(kBytes), "l"(policy)
                 : "memory");
}

// A tile's pixel rows (every selected band) as stored into the screen's
// swizzled tile layout (bip_tensor.h: f32 rows, 128 bytes a slab; 16-bit rows,
// 64 bytes), zeros past the last band and the last pixel. Warp w copies rows
// 16w .. 16w + 15, four rows (lane / 8) of one slab's 8 blocks (block lane %
// 8, 4 bands) per instruction, in pieces of kBytes.
template <int kSampleBytes, int kBytes>
__device__ void stage_screen_rows(const Args &a, void *tile, size_t first_pixel, int slabs, int thread) {
  constexpr int kBlockBytes = 4 * kSampleBytes, kRowBytes = 8 * kBlockBytes, kSlabBytes = kScreenRows * kRowBytes;
  static_assert(kBytes <= kBlockBytes && kBlockBytes % kBytes == 0, "a block in whole pieces");
  const int lane = thread % 32, warp = thread / 32, q = lane % 8;
  const int valid_bytes = a.bands * kSampleBytes;
  const unsigned char *src[4];
  uint32_t dst[4];
  size_t pixel[4];
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int m = 16 * warp + lane / 8 + 4 * i;
    pixel[i] = first_pixel + m;
    src[i] = a.data + (pixel[i] < a.pixels ? pixel[i] : 0) * a.pixel_stride + q * kBlockBytes;
    dst[i] = shared_address(tile) + m * kRowBytes + tile_block<kSampleBytes>(m, q) * kSampleBytes;
  }
  if (kBytes == kBlockBytes && first_pixel + kScreenRows <= a.pixels && valid_bytes == slabs * kRowBytes) {
    // The common case: no bounds, no zero fill.
    const uint64_t policy = read_once_policy();
    for (int slab = 0; slab < slabs; ++slab)
#pragma unroll
      for (int i = 0; i < 4; ++i)
        copy_async_read_once<kBlockBytes>(dst[i] + slab * kSlabBytes, src[i] + slab * kRowBytes, policy);
    return;
  }
  for (int slab = 0; slab < slabs; ++slab)
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
      for (int part = 0; part < kBlockBytes / kBytes; ++part) {
        const int offset = slab * kRowBytes + q * kBlockBytes + part * kBytes;
        const int bytes = pixel[i] < a.pixels ? max(0, min(kBytes, valid_bytes - offset)) : 0;
        copy_async<kBytes>(dst[i] + slab * kSlabBytes + part * kBytes,
                           bytes > 0 ? src[i] + slab * kRowBytes + part * kBytes : a.data, bytes);
      }
}

// Bandfit's 16-bit blocks (the other methods keep 16-bit tiles as stored):
// a tile's pixel rows converted to float (exactly) into the
// same swizzled layout (the copies cannot widen). Warp w converts rows
// 16w .. 16w + 15: per instruction 8 rows (lane / 4) by a slab's four
// 8-band pieces (lane % 4), each 16 bytes read and 32 written (two 16-byte
// blocks). In rows of aligned 16-byte pieces the slabs that the bands fill
// are copied raw into shared memory first, all at once (one round trip per
// tile; `copy_raw`, issued while the tile before is finished), and widened
// there (`widen`, once they have arrived); before, the pieces came through
// registers, four slabs of both row halves in flight at a time (224 bands:
// two round trips per tile; eight at once spilled). A last slab that the
// bands do not fill, other alignments and rows past the block read sample
// by sample (in `widen`). (Vector loads for every piece within the bands,
// the cut piece sample by sample, made 224 bands 11 % slower: a predicate
// per load.)
template <DataType T>
struct WidenedScreenRows {
  static constexpr int kSlabFloats = kScreenSlabBytes / sizeof(float);
  const Args &a;
  float *tile;
  size_t first_pixel;
  int slabs, lane, warp, piece, rows[2];
  const unsigned char *src[2];
  bool vector;  // the slabs the bands fill come as raw pieces
  __device__ WidenedScreenRows(const Args &args, float *tile_, size_t first, int slabs_, int thread, bool vector_rows)
      : a(args), tile(tile_), first_pixel(first), slabs(slabs_), lane(thread % 32), warp(thread / 32),
        piece(lane % 4), vector(vector_rows && first + kScreenRows <= args.pixels) {
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      rows[half] = 16 * warp + 8 * half + lane / 4;
      const size_t pixel = first_pixel + rows[half];
      src[half] = a.data + (pixel < a.pixels ? pixel : 0) * a.pixel_stride;
    }
  }
  // A raw piece's place: each slab's pieces in the second half of the warp's
  // own rows there (rows 16w + 8 .. 16w + 15, 1 KB, unswizzled: row r at r x
  // 64 bytes), each lane copying the two pieces it widens.
  __device__ const char *raw(int slab, int half) const {
    return reinterpret_cast<const char *>(tile + slab * kSlabFloats + (16 * warp + 8) * 32) +
           (8 * half + lane / 4) * 64 + piece * 16;
  }
  // The raw pieces of every slab the bands fill, in flight at once (the
  // caller commits them).
  __device__ void copy_raw() const {
    if (!vector) return;
    for (int slab = 0; slab < a.bands / 32; ++slab)
#pragma unroll
      for (int half = 0; half < 2; ++half)
        copy_async<16>(shared_address(raw(slab, half)), src[half] + (slab * 4 + piece) * 16, 16);
  }
  __device__ void store(int m, int slab, const float (&x)[8]) const {
    float *const row = tile + slab * kSlabFloats + m * 32;
    *reinterpret_cast<float4 *>(row + swizzled_block(m, 2 * piece)) = make_float4(x[0], x[1], x[2], x[3]);
    *reinterpret_cast<float4 *>(row + swizzled_block(m, 2 * piece + 1)) = make_float4(x[4], x[5], x[6], x[7]);
  }
  // Once the raw pieces have arrived (every lane's: after the wait, a
  // __syncwarp): per slab both pieces read, the warp's reads done
  // (__syncwarp), the floats stored over them; then the rest sample by sample.
  __device__ void widen() const {
    const int first_sampled_slab = vector ? a.bands / 32 : 0;  // slabs from here on are read sample by sample
    for (int slab = 0; slab < first_sampled_slab; ++slab) {
      uint4 v[2];
#pragma unroll
      for (int half = 0; half < 2; ++half) v[half] = *reinterpret_cast<const uint4 *>(raw(slab, half));
      __syncwarp();  // every lane's pieces read before the floats overwrite them
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        float x[8];
        widen_pair<T>(v[half].x, a.swap_bytes, x[0], x[1]);
        widen_pair<T>(v[half].y, a.swap_bytes, x[2], x[3]);
        widen_pair<T>(v[half].z, a.swap_bytes, x[4], x[5]);
        widen_pair<T>(v[half].w, a.swap_bytes, x[6], x[7]);
        store(rows[half], slab, x);
      }
    }
#pragma unroll
    for (int half = 0; half < 2; ++half)
      for (int slab = first_sampled_slab; slab < slabs; ++slab) {
        float x[8];
#pragma unroll
        for (int i = 0; i < 8; ++i) {
          const int band = slab * 32 + piece * 8 + i;
          float unused;
          x[i] = 0.0f;
          if (first_pixel + rows[half] < a.pixels && band < a.bands)
            widen_pair<T>(__ldg(reinterpret_cast<const uint16_t *>(src[half]) + band), a.swap_bytes, x[i], unused);
        }
        store(rows[half], slab, x);
      }
  }
};

// Shared-memory matrix descriptor, 128-byte swizzle, K-major: 8-row groups
// `stride_bytes` apart (the leading offset is unused).
__device__ __forceinline__ uint64_t swizzled_descriptor(uint32_t address, uint32_t stride_bytes) {
  return uint64_t((address & 0x3ffffu) >> 4) | uint64_t(1) << 16 | uint64_t(stride_bytes >> 4) << 32 |
         uint64_t(1) << 62;
}

#endif  // CS_HSI_WGMMA_BUILT

// One warp group per tile of 64 pixels, every selected band of the tile
// staged at once in the swizzled tile layout (bip_tensor.h; bandfit: each
// pixel then continuum-removed in place as load_four does, after looking
// for the ignore value; correlation: shifted by its first band where the
// samples are read; 16-bit samples for every method but bandfit: staged as
// stored, the next tile while this one is scored, and widened where they
// are read); per tile:
//  1. the screen's product: bands / 8 wgmma.m64n64k8 TF32, the pixels'
//     operand from registers, loaded a slab at a time (a commit per slab);
//  2. from the same registers each pixel's |x|^2 (correlation, bandfit: and
//     sum x; sam: x . m) (float over a thread's 16 samples of two slabs,
//     double beyond; a pixel whose float sums would leave float's range is scaled
//     by a power of two, exactly, and summed again from the tile);
//  3. per pixel and reference the key from the product, in float, and its
//     bound e_k = |x| w_k + s_k (bip_tensor.cpp, make_screen_references):
//     the references whose key + e_k reaches the largest key - e_j are the
//     candidates (the exact best is one of them; all usable references
//     when the product could overflow);
//  4. a lone candidate is the class without more work when there is no
//     threshold, or when its key, within its bound and the term common to
//     every reference (Tables::screen_common_weight), puts the dot product
//     clearly on one side of the threshold's (threshold_dot); the other
//     pixels' candidates are scored again from the staged samples in the
//     fast precision, one (pixel, reference) per 2 or 4 lanes and round,
//     each lane a part of the bands; the best key wins, ties to the lower index;
//     the class map written (label_from_dot: no score is formed).
// Shared memory: the references (57 KB for 224 bands), their terms, and one
// tile per warp group (57 KB): three warp groups per SM at 224 bands (16-bit
// tiles kept as stored take half of theirs).
// Measured on an H200 (2026-11-30, 1024 x 1024 x 224, K = 64): 0.49 ms per
// f32 cube for sam, 0.44 for euclidean (the wgmma kernel: 0.56-0.57); 0.52
// and 0.46 while ptxas serialised the product's steps (C7515).
// Nsight Compute (sam): 161 warp instructions per pixel at 8.3 cycles each
// (staging 13, |x|^2 and the product ~37, selection 25, rescoring ~51),
// issue slots 34% busy. The stalls are short dependencies, shared-memory
// latency and the barriers around a tile, which is staged, screened and
// scored in turn (since then the barrier at a tile's end is gone: within
// the runs' spread). With two or one tiles per SM (288 or 425 bands) it was
// slower than the wgmma kernel; the classifier takes it only with three.
// Step 4 took the pixel's candidates up to four per pass by the pixel's own
// two threads until 2026-11-30: with ~1.3 candidates per pixel on the
// benchmark's cube but a warp's pass as long as its pixel with the most,
// and 77% of the pixels with one. Settling those and spreading the rest
// over the warp (H200, same run, three rounds, GB/s of f32 cube): sam
// 2030-2051 -> 2216-2233, correlation 1981-1991 -> 2186-2213, euclidean
// 2182-2185 -> 2312-2343, bandfit 1409-1415 -> 1568-1581; i16 9-13%.
// Comparing sam's settled keys through the score (two double acos per
// pixel) instead of the threshold's dot product was 3% slower than before.
// Sam's centre m then read from shared memory (the last KB there) instead of
// global memory (the norm pass had waited on those loads): f32 sam
// 2238-2268 -> 2298-2330 GB/s, i16 1055-1062 -> 1099-1104, the others equal.
// Then step 3 with both rows in one pass (each reference's terms read once)
// keeping key + bound only: f32 sam 2312-2334 -> 2369-2387, correlation
// 2192-2200 -> 2256-2267, euclidean 2331-2340 -> 2382-2415, bandfit
// 1565-1571 -> 1594-1597, i16 1.4-4.2% (166-168 registers, no spills).
// The rescored items' key terms loaded before their dot products instead of
// by the rows collecting them: 0-1.5% (f32 correlation 2252-2260 -> 2276-2281).
// The class map's labels then came from the threshold's dot product too
// (label_from_dot; sam's double acos was 15% of the kernel's instructions):
// sam 2.0-2.9% faster, the others within 1.7%. Writing only the settled
// pixels' classes without a score was 2% slower: the warp's other pixels
// still computed theirs.
// Nsight Compute (sam, f32) after the change: 139 warp instructions per
// pixel (161 before), 8.0 cycles each; the candidate selection (step 3)
// is the largest part, a third of them.
// Then the threshold's dot product and square roots once per pixel
// (PixelThreshold, key_inverse) and the class map written without a 64-bit
// division per pixel (ClassMapTarget): f32 sam 2384-2398 -> 2546-2585 GB/s
// over the two steps, the other methods 2-4% (kernels/hsi/README.md);
// 118.5 warp instructions per pixel, the rescoring now the largest part.
// Staged with blocks 1 KB apart (no swizzle), every copy took one
// shared-memory wavefront per lane (0.82 against 0.64 ms). Staging and
// screening slab by slab as the slabs arrived was no faster (0.54 against
// 0.53 ms).
// The pixels' operand from registers (2026-12-01; before, both operands
// came from shared memory, |x|^2 from a second pass over the tile, two
// threads a pixel, and a warp-group barrier preceded the product, whose
// descriptor read every warp's rows): one read of the tile fewer, and a
// warp's product depends on its own rows only. H200, three A/B runs of
// three rounds: f32 sam 2618-2638 -> 2653-2701 GB/s (and 2619-2642 ->
// 2653-2694, 2558-2636 -> 2679-2697), euclidean and correlation 0-3%
// faster, bandfit and i16 within 1% (kernels/hsi/README.md). Then float
// over two slabs before each double add (the norms, the rescoring): f32 sam
// 2641-2683 -> 2698-2717, i16 sam 1204-1216 -> 1224-1239, the others 0-2%.
// 16-bit tiles kept as stored for sam and euclidean (2026-12-02; before,
// every 16-bit tile was copied raw into half of its floats' place and
// widened there, a round trip and a pass per tile): i16 sam 1225-1239 ->
// 1256-1267 GB/s, euclidean 1229-1235 -> 1292-1298, big-endian alike
// (kernels/hsi/README.md); then correlation's too, shifted where read: i16
// correlation 1129-1138 -> 1146-1160. Then f32 rows of the next tile copied
// once the rescoring has read this one's, before the labels (they had been
// copied at the next tile's start, their round trip in full view): f32 sam
// 2660-2702 -> 2761-2778, euclidean 2663-2670 -> 2700-2711, correlation
// 2389-2422 -> 2446-2476, bandfit 1672-1690 -> 1715-1729. Then 16-bit tiles
// as stored the same way, one per warp group instead of two (the next one had
// been copied while this one was scored, with no L2 prefetch): i16 sam
// 1303-1331 -> 1393-1405, euclidean 1343-1358 -> 1474-1495, correlation
// 1190-1196 -> 1238-1245 (kernels/hsi/README.md).
template <Method M, DataType T>
__global__ void __launch_bounds__(kScreenMostWarpgroups * kWarpgroupThreads, 1)
    classify_bip_screen_kernel(const Args a, const int copy_bytes) {
#if defined(CS_HSI_WGMMA_BUILT)
  extern __shared__ __align__(16) unsigned char smem[];
  constexpr unsigned kAll = 0xffffffffu;
  // sam's table rows are centred (make_screen_references): its keys add x . m.
  constexpr bool kCentred = M == Method::sam;
  // 16-bit samples stay as stored in the tiles where nothing rewrites them
  // (sam, euclidean, correlation): half a float tile, each sample widened
  // where it is read (correlation's shift applied there too); bandfit's
  // continuum-removed values are formed once, in float tiles.
  constexpr bool kRawTiles = screen_raw_tiles(M, T);
  // Correlation's shift applied where the samples are read, not in the tile
  // (f32: 2% faster than a pass over the staged rows).
  constexpr bool kShiftedInRegisters = M == Method::correlation;
  // Pixels left with two candidates tested against their pair's bound: sam
  // of f32 blocks and correlation (H200, 2026-12-03, three rounds: f32 sam
  // 2793-2826 -> 2877-2886 GB/s; then f32 correlation too, two rounds:
  // 2680-2685 -> 2754-2759; with the bound centred on the TF32 reading,
  // 16-bit correlation too: i16 1317-1325 -> 1340-1359). With the test f32
  // euclidean lost 3-4 % (again with the centred bound) and i16 sam 1.4 %
  // (4 % with the centred bound), their candidates' step then longer than
  // what it saves (kernels/hsi/README.md).
  constexpr bool kPairTest = (M == Method::sam && T == DataType::f32) || M == Method::correlation;
  using TileSample = std::conditional_t<kRawTiles, uint16_t, float>;
  constexpr int kSlabFloats = kScreenSlabBytes / sizeof(float);  // a tile's 32 bands: 8 KB (16-bit tiles: 4 KB)
  const int slabs = screen_padded_bands(a.bands) / 32;
  const size_t table_floats = size_t(slabs) * kSlabFloats, tile_floats = table_floats;
  float *const table = reinterpret_cast<float *>(smem);
  // Per reference: key factor (the block's scale applied), key offset
  // (-infinity: unusable), bound weight and slack (bip_tensor.h, screen_terms).
  float4 *const terms = reinterpret_cast<float4 *>(table + table_floats);
  // Sam's centre m (Tables::screen_mean), read for every tile's x . m.
  float *const mean = reinterpret_cast<float *>(terms + kGroupReferences);
  const int warpgroups = int(blockDim.x) / kWarpgroupThreads;
  {
    const float4 *src = reinterpret_cast<const float4 *>(a.screen_references);
    float4 *dst = reinterpret_cast<float4 *>(table);
    for (size_t i = threadIdx.x; i < table_floats / 4; i += blockDim.x) dst[i] = __ldg(src + i);
    for (int k = threadIdx.x; k < kGroupReferences; k += blockDim.x) {
      const float4 v = __ldg(reinterpret_cast<const float4 *>(a.screen_terms) + k);
      terms[k] = make_float4(v.x * float(a.scale), v.y, v.z, v.w);
    }
    if constexpr (kCentred)
      for (int u = threadIdx.x; u < slabs * 32; u += blockDim.x) mean[u] = __ldg(a.screen_mean + u);
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");  // the table, visible to the wgmma reads
    __syncthreads();
  }
  uint64_t usable = 0;
  for (int k = 0; k < kGroupReferences; ++k) usable |= uint64_t(terms[k].y != -CUDART_INF_F) << k;
  // Broadcast from lane 0: the compiler then keeps the warp group and what derives from it (the tiles' addresses,
  // the product's descriptors) in uniform registers (sam's SASS: 62 register-to-uniform moves -> 4, 10250 -> 9770
  // lines; its time on an H200 did not change, the kernel waits on latencies rather than issue).
  const int warpgroup = __shfl_sync(0xffffffffu, int(threadIdx.x) / kWarpgroupThreads, 0);
  const int thread = int(threadIdx.x) % kWarpgroupThreads;
  const int warp = thread / 32, lane = thread % 32, g = lane / 4, t = lane % 4;
  // The tiles from the 1 KB boundary after the centre (the swizzle's period).
  float *const first_tile =
      mean + slabs * 32 + (1024 - (shared_address(mean + slabs * 32) & 1023u)) % 1024 / sizeof(float);
  // The warp group's tile (tile_floats samples).
  TileSample *const tile = reinterpret_cast<TileSample *>(first_tile) + warpgroup * tile_floats;
  // A row's block (4 bands) in a slab (bip_tensor.h), in samples from the row's start.
  auto block_at = [](int row, int block) { return tile_block<int(sizeof(TileSample))>(row, block); };
  // Four adjacent samples of a tile (a block), and two, as floats.
  auto load_block = [&](const TileSample *at) {
    if constexpr (kRawTiles) {
      const uint2 v = *reinterpret_cast<const uint2 *>(at);
      float4 x;
      widen_pair<T>(v.x, a.swap_bytes, x.x, x.y);
      widen_pair<T>(v.y, a.swap_bytes, x.z, x.w);
      return x;
    } else {
      return *reinterpret_cast<const float4 *>(at);
    }
  };
  auto load_pair = [&](const TileSample *at) {
    if constexpr (kRawTiles) {
      float2 x;
      widen_pair<T>(*reinterpret_cast<const uint32_t *>(at), a.swap_bytes, x.x, x.y);
      return x;
    } else {
      return *reinterpret_cast<const float2 *>(at);
    }
  };
  const uint32_t table_address = shared_address(table);
  // The 128-byte swizzle is of address bits: the table's rows must start on its 1 KB period (dynamic shared
  // memory begins there).
  if (table_address % 1024 != 0) __trap();
  // The product's operand: this thread's rows g and g + 8 of the warp's 16,
  // per step i of a slab its two columns t and t + 4, which are adjacent
  // bands of block i + 4 (t / 2) (bip_tensor.h, screen_product_column); sam's
  // centre at the same bands.
  const int fragment_row = warp * 16 + g;
  int fragment_offset[4], mean_offset[4];
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    fragment_offset[i] = block_at(g, i + 4 * (t / 2)) + 2 * (t % 2);
    mean_offset[i] = kScreenBlockBands * (i + 4 * (t / 2)) + 2 * (t % 2);
  }
  // Correlation's values: the samples of bands from `band` on less the
  // pixel's first band (load_four's shift), zeros past the last band.
  auto shifted = [&](float x, float shift, int band) { return band < a.bands ? x - shift : 0.0f; };
  auto shift_four = [&](float4 &x, float shift, int band) {
    if (band + 4 <= a.bands)
      x = make_float4(x.x - shift, x.y - shift, x.z - shift, x.w - shift);
    else
      x = make_float4(shifted(x.x, shift, band), shifted(x.y, shift, band + 1), shifted(x.z, shift, band + 2),
                      shifted(x.w, shift, band + 3));
  };
  // The pixel this thread scores again (its row of the tile; its sums too
  // where they are scaled) and its half of each slab: blocks 4 h .. 4 h + 3,
  // at own + 4 (q ^ row % 8).
  const int own_row = warp * 16 + lane % 16, h = lane / 16;
  int x_offset[4];
#pragma unroll
  for (int i = 0; i < 4; ++i) x_offset[i] = block_at(own_row, 4 * h + i);
  float own_shift = 0.0f;  // correlation: the own pixel's first band
  // The own pixel's 16 values of this thread's half of slab s (times `scale`
  // when scaled; `as_stored`: the samples, before correlation's shift).
  auto load_sixteen = [&](int s, float (&x)[16], auto scaled, float scale, bool as_stored) {
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      float4 v = load_block(tile + own_row * 32 + s * kSlabFloats + x_offset[i]);
      if constexpr (kShiftedInRegisters)
        if (!as_stored) shift_four(v, own_shift, s * 32 + 16 * h + 4 * i);
      x[4 * i] = v.x, x[4 * i + 1] = v.y, x[4 * i + 2] = v.z, x[4 * i + 3] = v.w;
    }
    if constexpr (decltype(scaled)::value)
      for (float &e : x) e *= scale;
  };
  // For a scaled pixel (step 2 below): this thread's half of sum x^2 over
  // slab s, in float (four chains of four), and over the tile, the slabs'
  // sums in double; sam also x . m, m the table's centre; correlation and
  // bandfit also sum x.
  auto slab_norm2 = [&](int s, float scale, double &sum, double &centre_dot) {
    float x[16];
    load_sixteen(s, x, std::true_type{}, scale, false);
    float part[4] = {0, 0, 0, 0};
#pragma unroll
    for (int i = 0; i < 16; ++i) part[i / 4] = fmaf(x[i], x[i], part[i / 4]);
    if constexpr (kCentred) {
      float along[4];
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const float4 m = *reinterpret_cast<const float4 *>(mean + s * 32 + 16 * h + 4 * i);
        along[i] = x[4 * i] * m.x;
        along[i] = fmaf(x[4 * i + 1], m.y, along[i]);
        along[i] = fmaf(x[4 * i + 2], m.z, along[i]);
        along[i] = fmaf(x[4 * i + 3], m.w, along[i]);
      }
      centre_dot += double((along[0] + along[1]) + (along[2] + along[3]));
    }
    if constexpr (correlation_like(M)) {
      float plain[4] = {0, 0, 0, 0};
#pragma unroll
      for (int i = 0; i < 16; ++i) plain[i / 4] += x[i];
      sum += double((plain[0] + plain[1]) + (plain[2] + plain[3]));
    }
    return double((part[0] + part[1]) + (part[2] + part[3]));
  };
  auto half_norm2 = [&](float scale, double &sum, double &centre_dot) {
    double total = 0;
    sum = 0;
    centre_dot = 0;
#pragma unroll 2
    for (int s = 0; s < slabs; ++s) total += slab_norm2(s, scale, sum, centre_dot);
    return total;
  };
  // Whether this thread's half of the pixel holds the ignore value, among
  // the selected bands only: the zeros staged past the last band are not
  // samples (an ignore value of 0 would otherwise make every pixel of a
  // partial slab no-data). The band test only in a last partial slab: in
  // every slab it had been two of the pass's three instructions a sample.
  auto half_ignored = [&] {
    bool found = false;
    auto look_in_slab = [&](int s, auto whole) {
      float x[16];
      load_sixteen(s, x, std::false_type{}, 1.0f, true);
#pragma unroll
      for (int j = 0; j < 16; ++j)
        found |= x[j] == a.ignore_value && (decltype(whole)::value || s * 32 + 16 * h + j < a.bands);
    };
    const int whole_slabs = a.bands / 32;
    for (int s = 0; s < whole_slabs; ++s) look_in_slab(s, std::true_type{});
    if (whole_slabs < slabs) look_in_slab(whole_slabs, std::false_type{});
    return found;
  };
  // Bandfit (correlation shifts where it reads, kShiftedInRegisters): the
  // own pixel's samples as load_four sums them (continuum-removed as
  // shifted_value does, then shifted by 1), in place; zeros past the last
  // band stay.
  auto shift_own_half = [&](const PixelContext &px, auto continua_below_2_to_126) {
    float *const own = reinterpret_cast<float *>(tile) + own_row * 32;  // float tiles only
    constexpr bool kBelow = decltype(continua_below_2_to_126)::value;
    auto value = [&](float x, float t) { return shifted_value<M, kBelow>(x, t, px); };
    // A slab's loads all issued before its arithmetic (a branch per four
    // samples kept them one group at a time, each waited for); the bands
    // past the last only in the last slab.
    auto shift_slab = [&](int s, auto whole) {
      float4 v[4], t[4];
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        v[i] = *reinterpret_cast<const float4 *>(own + s * kSlabFloats + x_offset[i]);
        t[i] = make_float4(0, 0, 0, 0);
        if constexpr (M == Method::bandfit)  // positions padded to whole chunks: the slabs
          t[i] = __ldg(reinterpret_cast<const float4 *>(a.positions + s * 32 + 16 * h + 4 * i));
      }
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const int band = s * 32 + 16 * h + 4 * i;
        const bool kept[4] = {!whole && band >= a.bands, !whole && band + 1 >= a.bands,
                              !whole && band + 2 >= a.bands, !whole && band + 3 >= a.bands};
        v[i] = make_float4(kept[0] ? v[i].x : value(v[i].x, t[i].x), kept[1] ? v[i].y : value(v[i].y, t[i].y),
                           kept[2] ? v[i].z : value(v[i].z, t[i].z), kept[3] ? v[i].w : value(v[i].w, t[i].w));
        *reinterpret_cast<float4 *>(own + s * kSlabFloats + x_offset[i]) = v[i];
      }
    };
    const int whole_slabs = a.bands / 32;
    for (int s = 0; s < whole_slabs; ++s) shift_slab(s, std::true_type{});
    if (whole_slabs < slabs) shift_slab(whole_slabs, std::false_type{});
  };
  // The row's ends first (bandfit: a warp whose pixels' continua are all
  // below 2^126, the usual case, skips the per-sample test).
  auto shift_half = [&] {
    const float *const own = reinterpret_cast<float *>(tile) + own_row * 32;  // float tiles only
    auto staged = [&](int band) {  // the own row's sample of `band` in the swizzled tile
      return own[(band / 32) * kSlabFloats + swizzled_block(own_row, band % 32 / 4) + band % 4];
    };
    PixelContext px = pixel_context<M>(staged(0), staged(a.bands - 1), 0.0);
    if (!px.defined) px.continuum_start = quiet_nan();
    __syncwarp();  // both halves have read the row's ends before either is rewritten
    // Both ends below 2^125: every continuum between them below 2^126 (a
    // NaN end: the pixel's values are NaN on either path).
    const bool ends_below_2_to_125 = !(px.continuum_start >= 0x1p125f || px.continuum_end >= 0x1p125f);
    if (M != Method::bandfit || __all_sync(kAll, ends_below_2_to_125))
      shift_own_half(px, std::true_type{});
    else
      shift_own_half(px, std::false_type{});
  };
  // f32 blocks in the other byte order: the own pixel's half of the tile in place, as the machine's floats.
  auto swap_half = [&] {
    float *const own = reinterpret_cast<float *>(tile) + own_row * 32;  // float tiles only
    for (int s = 0; s < slabs; ++s)
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        float4 *const at = reinterpret_cast<float4 *>(own + s * kSlabFloats + x_offset[i]);
        const float4 v = *at;
        *at = make_float4(native_float(v.x, true), native_float(v.y, true), native_float(v.z, true),
                          native_float(v.w, true));
      }
  };
  auto half_largest = [&] {
    float largest = 0;
    for (int s = 0; s < slabs; ++s) {
      float x[16];
      load_sixteen(s, x, std::false_type{}, 1.0f, false);
      for (float v : x) largest = fmaxf(largest, fabsf(v));
    }
    return largest;
  };
  // Step 4's rescoring: kItemLanes adjacent lanes score one (pixel,
  // reference) item, each kItemSteps of a slab's 4 product steps; a round takes
  // kItemSlots items. On an H200 (2026-11-30, the benchmark's cube, against
  // 2 lanes an item): 4 lanes were 3-5% faster for sam, correlation and
  // euclidean, 3% slower for bandfit (which has more candidates); 8 slower
  // than 4 for all but 16-bit euclidean. Adjacent lanes, so that a
  // quarter-warp's loads (one shared-memory phase) are two items' blocks,
  // with the table in the tile's swizzle (2026-12-01): 1-4% faster for every
  // method; 8 lanes then (a phase one item's 8 blocks, no conflicts) 3-10%
  // slower than 4.
  // Euclidean's warps with more items than one round of 8 take 2 lanes an
  // item instead (16 a round): a warp's second round kept the other warps of
  // its group waiting at the next tile's first product (Nsight Compute, f32
  // sam: a tenth of the stall samples there; a model of the bound on cubes
  // like the benchmark's gives 41% of the warps more than 8 items, nearly
  // every group one such warp). H200, 2026-12-02, three rounds against 4
  // lanes always: f32 euclidean 2685-2731 -> 2813-2886 GB/s, i16 1296-1306
  // -> 1312-1339; the same choice made sam and correlation slower (f32 sam
  // -1%, i16 sam -6%, correlation -2 to -5%), so they keep 4 lanes.
  using FourLanes = std::integral_constant<int, 4>;
  using TwoLanes = std::integral_constant<int, 2>;
  // This lane's part of x . r_k, x the tile's row `row` (times `scale` when
  // scaled), kItemSteps of the product's steps a slab: step i pairs the
  // tile's blocks i and i + 4 with the table's 2 i and 2 i + 1, whose
  // columns are the bands (0 4 1 5) and (2 6 3 7) of those blocks
  // (screen_product_column). Float over two slabs' parts (a chain per block),
  // double beyond.
  auto part_dot = [&](auto lanes, int row, int k, auto scaled, float scale, float shift) {
    constexpr int kItemLanes = decltype(lanes)::value, kItemSteps = 4 / kItemLanes;
    const int item_part = lane % kItemLanes;
    const TileSample *x_row = tile + row * 32;
    const float *r_row = table + k * 32;
    double dot = 0;
    float pair = 0;  // float over two slabs (16 or 32 bands of the lane's), then double
#pragma unroll 2
    for (int s = 0; s < slabs; ++s) {
      float part[2 * kItemSteps];
#pragma unroll
      for (int q = 0; q < kItemSteps; ++q) {
        const int i = item_part * kItemSteps + q;
        float4 x[2];
#pragma unroll
        for (int half = 0; half < 2; ++half) {
          x[half] = load_block(x_row + s * kSlabFloats + block_at(row, i + 4 * half));
          if constexpr (kShiftedInRegisters) shift_four(x[half], shift, s * 32 + 4 * (i + 4 * half));
          if constexpr (decltype(scaled)::value)
            x[half].x *= scale, x[half].y *= scale, x[half].z *= scale, x[half].w *= scale;
        }
        const float4 low = *reinterpret_cast<const float4 *>(r_row + s * kSlabFloats + swizzled_block(k, 2 * i));
        const float4 high = *reinterpret_cast<const float4 *>(r_row + s * kSlabFloats + swizzled_block(k, 2 * i + 1));
        part[2 * q] = fmaf(x[0].w, high.y, fmaf(x[0].z, low.y, fmaf(x[0].y, high.x, x[0].x * low.x)));
        part[2 * q + 1] = fmaf(x[1].w, high.w, fmaf(x[1].z, low.w, fmaf(x[1].y, high.z, x[1].x * low.z)));
      }
      if constexpr (kItemSteps == 2)
        pair += (part[0] + part[1]) + (part[2] + part[3]);
      else
        pair += part[0] + part[1];
      if (s % 2 == 1 || s + 1 == slabs) dot += double(pair), pair = 0;
    }
    return dot;
  };
  const size_t tiles = (a.pixels + kScreenRows - 1) / kScreenRows;
  const size_t tile_step = size_t(gridDim.x) * warpgroups;
  // 16-bit rows read in 16-byte pieces where the bands fill the slabs.
  const bool widened_vector_rows = copy_bytes == 16;
  const uint64_t table_descriptor = swizzled_descriptor(table_address, 1024);
  const size_t first_tile_index = size_t(blockIdx.x) * warpgroups + warpgroup;
  // A warp copies its rows of the next tile (bandfit's 16-bit rows: their
  // raw pieces, widened at the tile's start) as soon as its lanes have read
  // this one's (before the labels), the first tile here.
  auto copy_rows = [&](size_t first_pixel) {
    if constexpr (kRawTiles)  // 16-bit rows come in aligned 16-byte pieces (uses_screen), so in 8-byte blocks
      stage_screen_rows<2, 8>(a, tile, first_pixel, slabs, thread);
    else if constexpr (T != DataType::f32)
      WidenedScreenRows<T>(a, reinterpret_cast<float *>(tile), first_pixel, slabs, thread, widened_vector_rows)
          .copy_raw();
    else if (copy_bytes == 16)
      stage_screen_rows<4, 16>(a, tile, first_pixel, slabs, thread);
    else if (copy_bytes == 8)
      stage_screen_rows<4, 8>(a, tile, first_pixel, slabs, thread);
    else
      stage_screen_rows<4, 4>(a, tile, first_pixel, slabs, thread);
  };
  if (first_tile_index < tiles) copy_rows(first_tile_index * kScreenRows);
  commit_copies();
  for (size_t tile_index = first_tile_index; tile_index < tiles; tile_index += tile_step) {
    const size_t first_pixel = tile_index * kScreenRows;
    // The warp group's next tile into L2 while this one is scored.
    if (thread == 0 && copy_bytes == 16) prefetch_tile<T, kScreenRows>(a, first_pixel + tile_step * kScreenRows);
    wait_copies<0>();
    if constexpr (T != DataType::f32 && !kRawTiles) {
      __syncwarp();  // every lane's raw pieces arrived
      WidenedScreenRows<T>(a, reinterpret_cast<float *>(tile), first_pixel, slabs, thread, widened_vector_rows)
          .widen();
    }
    if constexpr (T != DataType::f32) {
      __syncwarp();  // the warp's rows, copied or converted by its lanes
    } else if (a.swap_bytes) {
      __syncwarp();  // the warp's rows, copied by its lanes
      swap_half();
      __syncwarp();
    }
    // The ignore value is looked for among the samples as stored.
    bool ignored = false;
    auto find_ignored = [&] {
      if (!a.has_ignore) return;
      ignored = half_ignored();
      ignored = __shfl_xor_sync(kAll, int(ignored), 16) || ignored;
    };
    if constexpr (correlation_like(M)) {
      __syncwarp();  // the warp's rows, copied by its lanes, complete for every lane
      find_ignored();
      if constexpr (kShiftedInRegisters) {
        const TileSample first = tile[own_row * 32 + block_at(own_row, 0)];
        if constexpr (kRawTiles) {
          float unused;
          widen_pair<T>(first, a.swap_bytes, own_shift, unused);
        } else {
          own_shift = first;  // float tiles hold the machine's floats (swap_half)
        }
      } else {
        shift_half();
      }
    }
    __syncwarp();  // the warp's rows, staged by its lanes, complete for every lane

    // 1. The product, 8 bands a step, each thread's operand registers loaded
    // per slab (fragment_offset) and the slab's 4 steps issued as one group;
    // two slabs' registers in turn, so the next slab loads while the last
    // multiplies. The table's step offsets are 32 bytes into its rows
    // (descriptor units of 16 bytes). The first step overwrites the
    // accumulators: zeroing them with ordinary instructions made ptxas
    // serialise the steps (C7515).
    // 2. Meanwhile, from the same registers before each group is issued (the
    // instruction reads them until its group has finished): the two rows'
    // |x|^2 (and sum x, sam's x . m with m in the tile's band order), in
    // float over a thread's 16 samples of two slabs, double beyond and over
    // the quad.
    float acc[kWgmmaAccumulators];
    uint32_t fragments[2][4][4];
    float fragment_shift[2] = {0, 0};  // correlation: rows g and g + 8's first bands
    if constexpr (kShiftedInRegisters)
      for (int half = 0; half < 2; ++half) fragment_shift[half] = __shfl_sync(kAll, own_shift, g + 8 * half);
    double row_norm2[2] = {0, 0}, row_sum[2] = {0, 0}, row_centre[2] = {0, 0};
    // Two slabs a double add: one a slab had throttled the double pipe.
    float square[2] = {0, 0}, plain[2] = {0, 0}, along[2] = {0, 0};
    auto add_to_rows = [&] {
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        row_norm2[half] += double(square[half]);
        if constexpr (correlation_like(M)) row_sum[half] += double(plain[half]);
        if constexpr (kCentred) row_centre[half] += double(along[half]);
        square[half] = plain[half] = along[half] = 0;
      }
    };
    auto multiply_slab = [&](int s, uint32_t (&f)[4][4], auto first) {
      if (s >= 2) {
        wgmma_wait<1>();  // slab s - 2's group, which read f, has finished
        hold(f);
      }
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        float2 x[2];
#pragma unroll
        for (int half = 0; half < 2; ++half) {
          x[half] = load_pair(tile + (fragment_row + half * 8) * 32 + s * kSlabFloats + fragment_offset[i]);
          if constexpr (kShiftedInRegisters) {
            const int band = s * 32 + mean_offset[i];
            if (s * 32 + 32 <= a.bands) {  // a slab the bands fill (the same for the whole warp)
              x[half].x -= fragment_shift[half], x[half].y -= fragment_shift[half];
            } else {
              x[half].x = shifted(x[half].x, fragment_shift[half], band);
              x[half].y = shifted(x[half].y, fragment_shift[half], band + 1);
            }
          }
          f[i][half] = __float_as_uint(x[half].x);
          f[i][2 + half] = __float_as_uint(x[half].y);
          square[half] = fmaf(x[half].x, x[half].x, square[half]);
          square[half] = fmaf(x[half].y, x[half].y, square[half]);
          if constexpr (correlation_like(M)) plain[half] += x[half].x + x[half].y;
        }
        if constexpr (kCentred) {
          const float2 m = *reinterpret_cast<const float2 *>(mean + s * 32 + mean_offset[i]);
#pragma unroll
          for (int half = 0; half < 2; ++half)
            along[half] = fmaf(x[half].x, m.x, fmaf(x[half].y, m.y, along[half]));
        }
      }
      wgmma_fence();
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const uint64_t b = table_descriptor + s * (kScreenSlabBytes >> 4) + i * (32 >> 4);
        if (decltype(first)::value && i == 0)
          wgmma_tf32<true>(acc, f[i], b);
        else
          wgmma_tf32<false>(acc, f[i], b);
      }
      wgmma_commit();
    };
    multiply_slab(0, fragments[0], std::true_type{});
    add_to_rows();
    for (int s = 1; s < slabs; s += 2) {
      multiply_slab(s, fragments[1], std::false_type{});
      if (s + 1 < slabs) multiply_slab(s + 1, fragments[0], std::false_type{});
      add_to_rows();
    }
    add_over_quad(row_norm2);
    if constexpr (correlation_like(M)) add_over_quad(row_sum);
    if constexpr (kCentred) add_over_quad(row_centre);
    // To the layout of the rest of the tile's work: lane l (and l + 16) has
    // the warp's row l % 16, which the quad of lane 4 (l % 8) holds.
    auto own_value = [&](const double (&v)[2]) {
      const double first = __shfl_sync(kAll, v[0], 4 * (lane % 8)), second = __shfl_sync(kAll, v[1], 4 * (lane % 8));
      return lane % 16 < 8 ? first : second;
    };
    double norm2 = own_value(row_norm2);
    double sum = correlation_like(M) ? own_value(row_sum) : 0.0, centre_dot = kCentred ? own_value(row_centre) : 0.0;
    // Float sums near the ends of float's range, or all zero: the pixel
    // times 2^e, its largest magnitude into [2^14, 2^15) (finite samples),
    // its sums again from the tile, two threads a pixel.
    const bool check = norm2 == norm2 && !(norm2 >= 0x1p-90 && norm2 <= 0x1p100);
    const bool any_scaled = __any_sync(kAll, check);
    float pixel_scale = 1.0f;
    double unscale = 1.0;  // 1 / pixel_scale, exactly
    if (any_scaled) {
      float largest = half_largest();
      largest = fmaxf(largest, __shfl_xor_sync(kAll, largest, 16));
      if (check && isfinite(largest) && largest > 0) {
        const int e = half_scale_exponent(largest);
        pixel_scale = power_of_two(e);
        unscale = inverse_power_of_two(e);
      }
      double half_sum, half_centre;
      norm2 = half_norm2(pixel_scale, half_sum, half_centre);
      norm2 += __shfl_xor_sync(kAll, norm2, 16);
      sum = half_sum + __shfl_xor_sync(kAll, half_sum, 16);
      centre_dot = half_centre + __shfl_xor_sync(kAll, half_centre, 16);
    }
    if constexpr (!correlation_like(M)) find_ignored();
    if constexpr (kCentred) centre_dot *= unscale * a.scale;
    const double raw_norm2 = ignored ? quiet_nan() : norm2 * unscale * unscale;
    // The product cannot overflow: |x.r_k| <= |x| |r_k| well inside float.
    const bool bounded = raw_norm2 * a.screen_largest_norm2 < 0x1p250;

    // 3. Candidates. Accumulator 4j + 2h + c: row g (h = 0) or g + 8, reference 8j + 2t + c.
    wgmma_wait<0>();
    hold(acc);
    hold(fragments[0]);
    hold(fragments[1]);
    // Both rows at once, so that each reference's terms are read once: per
    // row and reference the key's upper end (key + bound) kept, the largest
    // lower end (key - bound) over the row's references.
    uint64_t candidates[2];
    float lone_high[2];  // per row: its candidate's key + bound, where it has one candidate
    double n2[2];
    float norm[2], high[2][16], lower[2] = {-CUDART_INF_F, -CUDART_INF_F};
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      n2[half] = __shfl_sync(kAll, raw_norm2, g + 8 * half) * a.scale * a.scale;
      norm[half] = sqrtf(float(n2[half]));
    }
#pragma unroll
    for (int i = 0; i < 16; ++i) {
      const float4 r = terms[8 * (i / 2) + 2 * t + i % 2];
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        const float key = fmaf(acc[4 * (i / 2) + 2 * half + i % 2], r.x, r.y);
        const float bound = fmaf(norm[half], r.z, r.w);
        high[half][i] = key + bound;
        lower[half] = fmaxf(lower[half], key - bound);
      }
    }
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const bool row_bounded = __shfl_sync(kAll, int(bounded), g + 8 * half);
      float row_lower = fmaxf(lower[half], __shfl_xor_sync(kAll, lower[half], 1));
      row_lower = fmaxf(row_lower, __shfl_xor_sync(kAll, row_lower, 2));
      // References 0-31 and 32-63: bit 8j + c here, 8j + 2t + c once shifted.
      uint32_t low = 0, upper = 0;
      float last_high = -CUDART_INF_F;  // of this lane's last candidate (unusable references never pass)
#pragma unroll
      for (int i = 0; i < 16; ++i) {
        const bool passes = high[half][i] >= row_lower;
        const uint32_t bit = passes ? 1u << (8 * (i / 2) % 32 + i % 2) : 0u;
        if (i < 8)
          low |= bit;
        else
          upper |= bit;
        last_high = passes ? high[half][i] : last_high;
      }
      uint64_t mine = (uint64_t(upper << 2 * t) << 32 | (low << 2 * t)) & usable;
      mine |= __shfl_xor_sync(kAll, mine, 1);
      mine |= __shfl_xor_sync(kAll, mine, 2);
      const float own_high = last_high;
      last_high = fmaxf(last_high, __shfl_xor_sync(kAll, last_high, 1));
      lone_high[half] = fmaxf(last_high, __shfl_xor_sync(kAll, last_high, 2));
      if (!isfinite(n2[half]))
        mine = 0;  // no-data: class 0
      else if (!row_bounded)
        mine = usable;  // the screen says nothing
      else if ((M == Method::sam || correlation_like(M)) && n2[half] == 0)
        mine &= ~(mine - 1);  // no angle (or correlation) to any reference: one candidate gives class 0
      if constexpr (kPairTest) {
        // Two candidates p < q held by different lanes of the quad (each its
        // lane's only one, whose key + bound that lane kept): the bound of
        // the error in their keys' difference (Tables::screen_pair_weights),
        // far below their own bounds' sum where they are similar, may rule
        // the lower one out.
        const uint64_t rest = mine & (mine - 1);
        const int p = __ffsll(static_cast<long long>(mine)) - 1, q = __ffsll(static_cast<long long>(rest)) - 1;
        const int lane_p = p % 8 / 2, lane_q = q % 8 / 2;
        const float high_p = __shfl_sync(kAll, own_high, (lane & ~3) + max(lane_p, 0));
        const float high_q = __shfl_sync(kAll, own_high, (lane & ~3) + max(lane_q, 0));
        if (row_bounded && rest != 0 && (rest & (rest - 1)) == 0 && lane_p != lane_q) {
          const float4 rp = terms[p], rq = terms[q];
          // The keys as formed before high = key + bound: within 2^-23 (|high| + |key|) each.
          const float key_p = high_p - fmaf(norm[half], rp.z, rp.w), key_q = high_q - fmaf(norm[half], rq.z, rq.w);
          const bool p_above = key_p >= key_q;
          const int j = p_above ? p : q, k = p_above ? q : p;
          const float2 w = __ldg(a.screen_pair_weights + j * kGroupReferences + k);
          const float slack = 0x1p-22f * (fabsf(high_p) + fabsf(high_q) + fabsf(key_p) + fabsf(key_q));
          if (fminf(key_p, key_q) + fmaf(norm[half], w.x, w.y) + slack < fmaxf(key_p, key_q)) {
            mine = uint64_t(1) << j;
            lone_high[half] = p_above ? high_p : high_q;
          }
        }
      }
      candidates[half] = mine;
    }

    // 4. A lone candidate is the pixel's class when there is no threshold, or
    // when its key, within the screen's bound (the common term included),
    // puts the dot product on one side of the threshold's (below it: class
    // 0). The other pixels' candidates are scored again from the
    // staged samples, spread over the warp: one (pixel, reference) item per
    // kItemLanes lanes and round, each lane a part of the bands.
    const int local = lane % 16;
    const uint64_t from_first = __shfl_sync(kAll, candidates[0], 4 * (local % 8));
    const uint64_t from_second = __shfl_sync(kAll, candidates[1], 4 * (local % 8));
    const float high_first = __shfl_sync(kAll, lone_high[0], 4 * (local % 8));
    const float high_second = __shfl_sync(kAll, lone_high[1], 4 * (local % 8));
    const uint64_t mine = local < 8 ? from_first : from_second;
    const double pixel_sum = sum * unscale * a.scale, pixel_norm2 = raw_norm2 * a.scale * a.scale;
    const PixelThreshold pixel_part = pixel_threshold<M>(a, pixel_sum, pixel_norm2);
    auto meets_for = [&](int k) { return threshold_dot<M>(a, k, pixel_part); };
    Candidate best;
    best.clear();
    bool settled = mine == 0;
    if (mine != 0 && (mine & (mine - 1)) == 0) {
      const int k = __ffsll(static_cast<long long>(mine)) - 1;
      const float4 r = terms[k];
      const float norm = sqrtf(float(pixel_norm2)), bound = fmaf(norm, r.z, r.w);
      // 1 / key_scale, rounded (the width's (1 + 2^-20) and the margin below cover it).
      const double per_key = __ldg(a.key_inverse + k);
      // The key as step 3 formed it is high - bound within high's float rounding.
      const double high = local < 8 ? high_first : high_second;
      const double width =
          (double(bound) + a.screen_common_weight * double(norm) + 0x1p-23 * fabs(high)) * (1 + 0x1p-20) *
          fabs(per_key);
      // key = key_scale x . r_k + key_offset (sam's keys leave out x . m).
      const double dot =
          (high - double(bound) - __ldg(a.key_offset + k) + (kCentred ? centre_dot : 0.0)) * per_key;
      if (!(a.threshold == a.threshold)) {
        settled = true;
        best.offer(0.0, dot, k);
      } else if (isfinite(dot) && isfinite(width)) {
        // Clear of the threshold by more than its float rounding in the score.
        const ThresholdDot meets = meets_for(k);
        const double at = meets.at, margin = 0x1p-20 * meets.scale;
        if (!meets.defined) {
          settled = true;  // no score: unclassified
        } else if (dot - width > at + margin) {
          settled = true;
          best.offer(0.0, dot, k);
        } else if (dot + width < at - margin) {
          settled = true;  // unclassified
        }
      }
    }
    const uint64_t pending = settled ? 0 : mine;
    const int count = __popcll(pending);
    int end = count;  // of this pixel's items, counted over the warp's pixels in order
#pragma unroll
    for (int d = 1; d < 16; d <<= 1) {
      const int before = __shfl_up_sync(kAll, end, d, 16);
      if (local >= d) end += before;
    }
    const int start = end - count, items = __shfl_sync(kAll, end, 15);
    auto rescore = [&](auto lanes) {
      constexpr int kItemLanes = decltype(lanes)::value, kItemSlots = 32 / kItemLanes;
      const int item_slot = lane / kItemLanes;
      for (int first_item = 0; first_item < items; first_item += kItemSlots) {
        // This slot's item: of the last pixel whose items start at or before it.
        const int item = first_item + item_slot;
        int p = 0;
#pragma unroll
        for (int step = 8; step > 0; step >>= 1)
          if (__shfl_sync(kAll, start, p + step) <= item) p += step;
        const int nth = item - __shfl_sync(kAll, start, p);
        uint64_t bits = uint64_t(__shfl_sync(kAll, uint32_t(pending >> 32), p)) << 32 |
                        __shfl_sync(kAll, uint32_t(pending), p);
        for (int n = 0; n < nth && item < items; ++n) bits &= bits - 1;
        const int k = item < items ? __ffsll(static_cast<long long>(bits)) - 1 : 0;
        const float scale_p = __shfl_sync(kAll, pixel_scale, p);
        // The item's key terms, loaded while its dot product is formed.
        const double offset_k = __ldg(a.key_offset + k), scale_k = kCentred ? 1.0 : __ldg(a.key_scale + k);
        const float shift_p = kShiftedInRegisters ? __shfl_sync(kAll, own_shift, p) : 0.0f;
        double dot = any_scaled ? part_dot(lanes, warp * 16 + p, k, std::true_type{}, scale_p, shift_p)
                                : part_dot(lanes, warp * 16 + p, k, std::false_type{}, 1.0f, shift_p);
#pragma unroll
        for (int other = 1; other < kItemLanes; other *= 2) dot += __shfl_xor_sync(kAll, dot, other);
        // Back to the pixels: this pixel's items of the round are slots [from, to).
        const int from = max(start, first_item) - first_item, to = min(end, first_item + kItemSlots) - first_item;
        const int here = max(to - from, 0);
        const int most = __reduce_max_sync(kAll, unsigned(here));
        for (int c = 0; c < most; ++c) {
          const int source = min(from + c, kItemSlots - 1) * kItemLanes;
          const double dot_k = __shfl_sync(kAll, dot, source) * unscale * a.scale;
          const int k_c = __shfl_sync(kAll, k, source);
          const double offset_c = __shfl_sync(kAll, offset_k, source);
          [[maybe_unused]] const double scale_c = kCentred ? 1.0 : __shfl_sync(kAll, scale_k, source);
          if (c >= here) continue;
          if constexpr (kCentred) {
            // x . t_k + x . m = key_scale[k] x . r_k (up to the float rounding of t_k: 2^-24 |x| |t_k|)
            const double scaled_dot = dot_k + centre_dot;
            best.offer(scaled_dot + offset_c, scaled_dot, k_c);
          } else {
            best.offer(fma(dot_k, scale_c, offset_c), dot_k, k_c);
          }
        }
      }
    };
    if constexpr (M == Method::bandfit) {
      rescore(TwoLanes{});
    } else if constexpr (M == Method::euclidean) {
      if (items > 8)
        rescore(TwoLanes{});
      else
        rescore(FourLanes{});
    } else {
      rescore(FourLanes{});
    }
    __syncwarp();  // every lane's reads of the warp's rows done
    if (tile_index + tile_step < tiles) copy_rows(first_pixel + tile_step * kScreenRows);
    commit_copies();
    if (kCentred && !settled && best.k >= 0) best.dot *= __ldg(a.key_inverse + best.k);  // the winner's x . r_k
    const size_t pixel = first_pixel + own_row;
    if (lane < 16 && pixel < a.pixels)
      a.class_map.write(pixel, label_from_dot(a, best.k, best.dot, best.k >= 0 ? meets_for(best.k) : ThresholdDot{}));
    // No barrier around the staging: a warp copies and reads only its own 16
    // rows, which feed only its own accumulators (complete at its wait
    // above), so it restages them while the other warps still score.
  }
#endif
}

__global__ void wgmma_probe_kernel(int *built) {
#if defined(CS_HSI_WGMMA_BUILT)
  *built = 1;
#else
  *built = 0;
#endif
}

// Each pair (a, b) of `operands`: one wgmma TF32 product of a pixel operand
// of a's in every register and a table of b's (so that neither operand's
// layout matters); every accumulator of every thread (128 x 32 per pair,
// in `results`) is then 8 x a's reading x b's reading.
__global__ void tf32_reading_probe_kernel(const float2 *operands, int count, float *results) {
#if defined(CS_HSI_WGMMA_BUILT)
  __shared__ __align__(1024) float table[kScreenSlabBytes / sizeof(float)];
  for (int n = 0; n < count; ++n) {
    const float2 v = operands[n];
    for (int i = threadIdx.x; i < kScreenSlabBytes / int(sizeof(float)); i += blockDim.x) table[i] = v.y;
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");  // the table, visible to the wgmma reads
    __syncthreads();
    const uint32_t a = __float_as_uint(v.x), fragment[4] = {a, a, a, a};
    float acc[kWgmmaAccumulators];
    wgmma_fence();
    wgmma_tf32<true>(acc, fragment, swizzled_descriptor(shared_address(table), 1024));
    wgmma_commit();
    wgmma_wait<0>();
    hold(acc);
    for (int i = 0; i < kWgmmaAccumulators; ++i)
      results[(size_t(n) * kWarpgroupThreads + threadIdx.x) * kWgmmaAccumulators + i] = acc[i];
    __syncthreads();  // every thread's product has read the table
  }
#endif
}

template <Product P, Method M, DataType T>
void launch_typed(const Args &args, int copy_bytes, int sm_count, StreamHandle stream) {
  if constexpr (P == Product::wgmma) {
    // Sid's instances fix the byte order; the other methods read it from the arguments.
    const auto kernel = [&] {
      if constexpr (M == Method::sid)
        return args.swap_bytes ? classify_bip_wgmma_kernel<M, T, ByteOrder::swapped>
                               : classify_bip_wgmma_kernel<M, T, ByteOrder::native>;
      else
        return classify_bip_wgmma_kernel<M, T>;
    }();
    const size_t bytes = shared_bytes(T, args.chunks, args.stages, P, args.groups);
    cs::check_cuda(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(bytes)),
                   "allow the BIP wgmma kernel's shared memory");
    const size_t tiles = (args.pixels + kWarpgroupPixels - 1) / kWarpgroupPixels;
    const size_t blocks = (tiles + kWarpgroupsPerBlock - 1) / kWarpgroupsPerBlock;
    const unsigned grid = unsigned(blocks < size_t(sm_count) ? blocks : size_t(sm_count));
    kernel<<<grid, kWgmmaThreads, bytes, stream>>>(args, copy_bytes);
    cs::check_cuda(cudaGetLastError(), "classify (wgmma, BIP) kernel launch");
  } else {
    const size_t bytes = shared_bytes(T, args.chunks, args.stages, P);
    cs::check_cuda(cudaFuncSetAttribute(classify_bip_tensor_kernel<P, M, T>,
                                        cudaFuncAttributeMaxDynamicSharedMemorySize, int(bytes)),
                   "allow the BIP tensor kernel's shared memory");
    const size_t tiles = (args.pixels + kTilePixels - 1) / kTilePixels;
    const unsigned grid = unsigned(tiles < size_t(sm_count) ? tiles : size_t(sm_count));
    classify_bip_tensor_kernel<P, M, T><<<grid, kThreadsOf<P>, bytes, stream>>>(args, copy_bytes);
    cs::check_cuda(cudaGetLastError(), "classify (tensor, BIP) kernel launch");
  }
}

template <Method M, DataType T>
void launch_screen_typed(const Args &args, int copy_bytes, int warpgroups, int sm_count, StreamHandle stream) {
  // No more than the tiles take, the rest left to L1: 16-bit tiles given
  // float tiles' room measured 3-4 % slower (two runs, kernels/hsi/README.md).
  const size_t bytes = screen_shared_bytes(args.bands, warpgroups, screen_raw_tiles(M, T));
  cs::check_cuda(cudaFuncSetAttribute(classify_bip_screen_kernel<M, T>,
                                      cudaFuncAttributeMaxDynamicSharedMemorySize, int(bytes)),
                 "allow the BIP screen kernel's shared memory");
  const size_t tiles = (args.pixels + kScreenRows - 1) / kScreenRows;
  const size_t blocks = (tiles + warpgroups - 1) / warpgroups;
  const unsigned grid = unsigned(blocks < size_t(sm_count) ? blocks : size_t(sm_count));
  classify_bip_screen_kernel<M, T><<<grid, warpgroups * kWarpgroupThreads, bytes, stream>>>(args, copy_bytes);
  cs::check_cuda(cudaGetLastError(), "classify (screen, BIP) kernel launch");
}

template <Method M>
void launch_screen(const Args &args, DataType type, int copy_bytes, int warpgroups, int sm_count,
                   StreamHandle stream) {
  if (type == DataType::i16)
    launch_screen_typed<M, DataType::i16>(args, copy_bytes, warpgroups, sm_count, stream);
  else if (type == DataType::u16)
    launch_screen_typed<M, DataType::u16>(args, copy_bytes, warpgroups, sm_count, stream);
  else
    launch_screen_typed<M, DataType::f32>(args, copy_bytes, warpgroups, sm_count, stream);
}

template <Product P, Method M>
void launch_method(const Args &args, DataType type, int copy_bytes, int sm_count, StreamHandle stream) {
  switch (type) {
    case DataType::f32: return launch_typed<P, M, DataType::f32>(args, copy_bytes, sm_count, stream);
    case DataType::i16: return launch_typed<P, M, DataType::i16>(args, copy_bytes, sm_count, stream);
    case DataType::u16: return launch_typed<P, M, DataType::u16>(args, copy_bytes, sm_count, stream);
    default: throw std::invalid_argument("BIP tensor kernel: unsupported sample type");
  }
}

template <Product P>
void launch_product(Method method, const Args &args, DataType type, int copy_bytes, int sm_count,
                    StreamHandle stream) {
  switch (method) {
    case Method::sam: return launch_method<P, Method::sam>(args, type, copy_bytes, sm_count, stream);
    case Method::correlation: return launch_method<P, Method::correlation>(args, type, copy_bytes, sm_count, stream);
    case Method::bandfit: return launch_method<P, Method::bandfit>(args, type, copy_bytes, sm_count, stream);
    case Method::sid:
      if constexpr (P == Product::wgmma) return launch_method<P, Method::sid>(args, type, copy_bytes, sm_count, stream);
      break;
    case Method::euclidean: return launch_method<P, Method::euclidean>(args, type, copy_bytes, sm_count, stream);
  }
  throw std::invalid_argument("BIP tensor kernel: no such method for this product form");
}

}  // namespace

bool wgmma_available(int device) {
  static std::mutex mutex;
  static std::map<int, bool> known;
  std::lock_guard<std::mutex> lock(mutex);
  if (auto it = known.find(device); it != known.end()) return it->second;
  bool built = false;
  if (compute_capability(device) == 90) {
    DeviceGuard guard(device);
    int *flag = nullptr;
    int value = 0;
    cs::check_cuda(cudaMalloc(&flag, sizeof(int)), "allocate the wgmma probe's flag");
    wgmma_probe_kernel<<<1, 1>>>(flag);
    const cudaError_t launched = cudaGetLastError();
    const cudaError_t copied =
        launched == cudaSuccess ? cudaMemcpy(&value, flag, sizeof(int), cudaMemcpyDeviceToHost) : launched;
    cudaFree(flag);
    // No machine code for this device in the module: no wgmma; anything else is an error.
    if (copied != cudaSuccess && copied != cudaErrorNoKernelImageForDevice && copied != cudaErrorInvalidDeviceFunction)
      cs::check_cuda(copied, "run the wgmma probe");
    built = copied == cudaSuccess && value == 1;
  }
  known[device] = built;
  return built;
}

Tf32Reading tf32_reading(int device) {
  static std::mutex mutex;
  static std::map<int, Tf32Reading> known;
  if (!wgmma_available(device)) return Tf32Reading::unknown;
  std::lock_guard<std::mutex> lock(mutex);
  if (auto it = known.find(device); it != known.end()) return it->second;
  // Operands whose 13 low fraction bits are set in various patterns (both
  // signs, several exponents; above and below half a TF32 unit), each once
  // from registers against 1 in the table and once the other way round (a
  // TF32 value has 11 significant bits: the sums of 8 such products are
  // exact in float, however the instruction adds them).
  std::vector<float> values;
  for (uint32_t low : {0x1fffu, 0x1001u, 0x0fffu, 0x1800u, 0x0001u, 0x1234u, 0x0abcu})
    for (float base : {1.0f, -1.5f, 3.0e-3f, -7.25e4f})
      values.push_back(bits_float(float_bits(base) | low));
  std::vector<float2> operands;
  for (float v : values) operands.push_back({v, 1.0f}), operands.push_back({1.0f, v});
  const int count = int(operands.size());
  const size_t result_count = size_t(count) * kWarpgroupThreads * kWgmmaAccumulators;
  std::vector<float> results(result_count, 0.0f);
  {
    DeviceGuard guard(device);
    float2 *device_operands = nullptr;
    float *device_results = nullptr;
    cs::check_cuda(cudaMalloc(&device_operands, operands.size() * sizeof(float2)), "allocate the TF32 probe");
    const cudaError_t allocated = cudaMalloc(&device_results, result_count * sizeof(float));
    cudaError_t status = allocated;
    if (status == cudaSuccess)
      status = cudaMemcpy(device_operands, operands.data(), operands.size() * sizeof(float2), cudaMemcpyHostToDevice);
    if (status == cudaSuccess) {
      tf32_reading_probe_kernel<<<1, kWarpgroupThreads>>>(device_operands, count, device_results);
      status = cudaGetLastError();
    }
    if (status == cudaSuccess)
      status = cudaMemcpy(results.data(), device_results, result_count * sizeof(float), cudaMemcpyDeviceToHost);
    cudaFree(device_operands);
    if (allocated == cudaSuccess) cudaFree(device_results);
    cs::check_cuda(status, "run the TF32 reading probe");
  }
  Tf32Reading reading = Tf32Reading::truncates;
  for (int n = 0; n < count; ++n) {
    const float expected = 8.0f * tf32_truncate(operands[size_t(n)].x) * tf32_truncate(operands[size_t(n)].y);
    for (size_t i = 0; i < size_t(kWarpgroupThreads) * kWgmmaAccumulators; ++i)
      if (results[size_t(n) * kWarpgroupThreads * kWgmmaAccumulators + i] != expected) reading = Tf32Reading::unknown;
  }
  known[device] = reading;
  return reading;
}

void classify(Method method, const DeviceTables &tables, const CubeBlock &block, int first_band, int copy_bytes,
              int stages, float threshold, const ClassificationOutput &output, const ClassMapTarget &class_map,
              int sm_count, StreamHandle stream) {
  const size_t size = sample_size(block.format.type);
  Args args;
  args.data = static_cast<const unsigned char *>(block.data) + size_t(first_band) * size;
  args.pixels = block.layout.pixels();
  args.pixel_stride = block.layout.sample_stride * size;
  args.bands = tables.shape.bands;
  args.chunks = tables.chunks;
  args.groups = tables.groups;
  args.references = tables.shape.references;
  args.stages = stages;
  args.fragments = tables.fragments;
  args.dot_scale = tables.dot_scale;
  args.key_scale = tables.key_scale;
  args.key_offset = tables.key_offset;
  args.key_inverse = tables.key_inverse;
  args.table = tables.table;
  args.shape = tables.shape;
  args.positions = tables.positions;
  args.has_ignore = block.format.has_ignore;
  args.swap_bytes = block.format.swap_bytes;
  args.ignore_value = float(block.format.ignore_value);
  // Continuum-removed values and sid's p and log p (its floor excepted) do
  // not depend on the samples' scale: those kernels take the stored values.
  const double scale = block.format.has_scale ? block.format.scale : 1.0;
  args.scale = method == Method::bandfit || method == Method::sid ? 1.0 : scale;
  args.sid_floor = sid_stored_floor(block);
  args.sid_terms = tables.sid_terms;
  args.band_chunks = chunks_for(tables.shape);
  args.threshold = threshold;
  args.threshold_cos = std::cos(std::fmin(std::fmax(double(threshold), 0.0), CUDART_PI));
  args.class_map = class_map;
  args.rule_images = output.rule_images;
  if (args.pixels == 0) return;
  if (uses_screen(method, tables, block.format.type, copy_bytes, output)) {
    args.screen_references = tables.screen_references;
    args.screen_terms = tables.screen_terms;
    args.screen_mean = tables.screen_mean;
    args.screen_pair_weights = reinterpret_cast<const float2 *>(tables.screen_pair_weights);
    args.screen_largest_norm2 = tables.screen_largest_norm2;
    args.screen_common_weight = tables.screen_common_weight;
    if (method == Method::sam)
      launch_screen<Method::sam>(args, block.format.type, copy_bytes, tables.screen_warpgroups, sm_count,
                                   stream);
    else if (method == Method::correlation)
      launch_screen<Method::correlation>(args, block.format.type, copy_bytes, tables.screen_warpgroups, sm_count,
                                   stream);
    else if (method == Method::bandfit)
      launch_screen<Method::bandfit>(args, block.format.type, copy_bytes, tables.screen_warpgroups, sm_count,
                                   stream);
    else
      launch_screen<Method::euclidean>(args, block.format.type, copy_bytes, tables.screen_warpgroups, sm_count,
                                   stream);
    return;
  }
  if (tables.product == Product::wgmma)
    launch_product<Product::wgmma>(method, args, block.format.type, copy_bytes, sm_count, stream);
  else if (tables.product == Product::fp16x3)
    launch_product<Product::fp16x3>(method, args, block.format.type, copy_bytes, sm_count, stream);
  else
    launch_product<Product::tf32x3>(method, args, block.format.type, copy_bytes, sm_count, stream);
}

}  // namespace cs::hsi::bip_tensor
