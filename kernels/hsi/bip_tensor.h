// Precision::tensor specialised for the common layout: BIP blocks (each
// pixel's bands contiguous, pixels one after another), native byte order,
// f32/i16/u16 samples, a contiguous range of selected bands. The generic
// tensor kernel (classifier.cu) decodes every sample through BlockLayout and
// the band list; this one copies whole rows of a pixel tile with 16-byte
// asynchronous copies and keeps the references, already split into TF32
// high and low parts and laid out in the order the matrix instructions read
// them, in shared memory for the whole kernel. The kernel is in
// bip_tensor.cu; this header holds its tile geometry and the host-side
// preparation (so the CPU tests check the fragment layout).
//
// Three forms, chosen once per process by CS_HSI_BIP_KERNEL:
//   wgmma (default, or unset) 3xFP16 on Hopper's warp-group instructions
//                             (wgmma.m64n64k16, sm_90a): pixels' fp16 parts
//                             from registers, references' from shared memory;
//                             where the device or the build lacks them
//                             (wgmma_available), fp16 below;
//   fp16                      3xFP16: mma.m16n8k16 on fp16 high and low parts
//                             of operands scaled by powers of two (per
//                             reference, per pixel and chunk of 32 bands) so
//                             that their largest magnitude is in [2^14, 2^15);
//                             the scales are undone exactly on the sums;
//   tf32                      3xTF32: mma.m16n8k8 on TF32 high and low parts
//                             (the first form, slower: H200, 2026-11-29,
//                             645-716 GB/s of f32 cube against fp16's 835-902;
//                             kept for comparison: it does not scale, so
//                             products summing beyond float's range, from
//                             samples near 1e38, overflow).
// All split each operand into two 11-bit parts: the same precision contract
// (classify_math.h, "tensor"); bip_tensor.cu's top comment has the figures.
// Every method: sam, correlation (pixels shifted by their first band),
// bandfit (pixels continuum-removed in float) and euclidean as one product;
// sid (wgmma only) as two, one after the other, over twice the chunks
// (Tables::sid_terms). With wgmma, class maps of f32, i16 and u16 blocks,
// every method but sid, take the screen below instead where three tiles fit per SM (one TF32
// product, then the candidates scored exactly).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "common/cuda_runtime.h"
#include "hsi/class_map_target.h"
#include "hsi/classifier.h"
#include "hsi/classify_math.h"
#include "hsi/sample_decode.h"

namespace cs::hsi::bip_tensor {

// Pixels per tile (one thread block's rows of the matrix product).
inline constexpr int kTilePixels = 128;
// References per pass over a tile; more references take more passes.
inline constexpr int kGroupReferences = 64;
// Bands per staged chunk: as the generic tensor kernel, products are summed
// in float within a chunk and the chunk sums in double.
inline constexpr int kChunkBands = kBandChunk;
// Bands per matrix instruction (mma.m16n8k8: k = 8) and its references (n = 8).
inline constexpr int kStepBands = 8;
inline constexpr int kStepsPerChunk = kChunkBands / kStepBands;
inline constexpr int kColumnReferences = 8;
inline constexpr int kColumnsPerGroup = kGroupReferences / kColumnReferences;
inline constexpr int kLanes = 32;
// One fragment entry per (chunk, step, column, lane): 4 floats, the high
// parts of the lane's two reference values, then their low parts.
inline constexpr int kFragmentsPerChunk = kStepsPerChunk * kColumnsPerGroup * kLanes;

static_assert(kChunkBands == 32, "a chunk is two spans of 16 bands (see fragment_band)");

// The products the kernel forms (see the top of this file).
enum class Product : int { tf32x3 = 0, fp16x3 = 1, wgmma = 2 };
const char *product_name(Product product);  // "tf32", "fp16", "wgmma"
// CS_HSI_BIP_KERNEL, read once per process: "tf32" selects tf32x3, "fp16"
// fp16x3; unset, empty or "wgmma" the default wgmma (anything else too, with
// a warning).
Product product_from_environment();
// Whether `device` runs the wgmma form: compute capability 9.0 and a build
// whose machine code for it has the sm_90a instructions (checked once per
// device by running a probe kernel of bip_tensor.cu's module).
bool wgmma_available(int device);
// How `device`'s tensor cores read the float operands of wgmma's TF32
// product: `truncates` when a probe kernel's products of operands with low
// bits set (from registers and from shared memory) are those of the
// truncated values, else `unknown` (also without wgmma); once per device.
Tf32Reading tf32_reading(int device);

// fp16x3: one mma.m16n8k16 takes 16 bands, a chunk is two steps. Its
// fragment entries hold, per (chunk, step, column, lane), the lane's four
// reference values at half_fragment_band(step, lane, 0..3) as fp16 pairs
// (low half first): hi(j = 0, 1), hi(2, 3), lo(0, 1), lo(2, 3). In the
// instruction's k order those are k = 2t, 2t + 1 (first register) and
// 2t + 8, 2t + 9 (second), t = lane % 4: a thread's four adjacent bands of a
// 16-band span, one 16-byte (8-byte) shared-memory load of pixel samples.
inline constexpr int kHalfStepBands = 16;
inline constexpr int kHalfStepsPerChunk = kChunkBands / kHalfStepBands;
inline constexpr int kHalfFragmentsPerChunk = kHalfStepsPerChunk * kColumnsPerGroup * kLanes;
CS_HD int half_fragment_band(int step, int lane, int j) { return step * kHalfStepBands + 4 * (lane % 4) + j; }
CS_HD constexpr int steps_per_chunk(Product product) {
  return product == Product::fp16x3 ? kHalfStepsPerChunk : kStepsPerChunk;
}
CS_HD constexpr int fragments_per_chunk(Product product) {
  return product == Product::fp16x3 ? kHalfFragmentsPerChunk : kFragmentsPerChunk;
}

// fp16 (IEEE binary16) from float, rounded to nearest even, with fp16's
// subnormals, infinities and NaN (as cvt.rn.f16.f32, so the host's table and
// the kernel's pixels round alike), and back.
CS_HD uint16_t half_bits(float x) {
  const uint32_t u = float_bits(x);
  const uint32_t sign = (u >> 16) & 0x8000u, a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return uint16_t(sign | 0x7e00u);  // NaN
  if (a >= 0x477ff000u) return uint16_t(sign | 0x7c00u);  // 65520 and above round to infinity
  if (a >= 0x38800000u) {  // 2^-14 and above: normal
    const uint32_t rounded = a + 0x0fffu + ((a >> 13) & 1u);
    return uint16_t(sign | ((rounded >> 13) - 0x1c000u));
  }
  // Subnormal: round(|x| * 2^24); |x| * 2^24 = mantissa * 2^(exponent - 126).
  const int shift = 126 - int(a >> 23);
  if (shift > 24) return uint16_t(sign);  // below 2^-25 (or exactly it: the tie goes to the even 0)
  const uint32_t mantissa = (a & 0x7fffffu) | 0x800000u;
  uint32_t r = mantissa >> shift;
  const uint32_t rest = mantissa & ((1u << shift) - 1u), half = 1u << (shift - 1);
  if (rest > half || (rest == half && (r & 1u))) ++r;
  return uint16_t(sign | r);
}
CS_HD float half_value(uint16_t h) {
  const uint32_t exponent = (h >> 10) & 0x1fu, mantissa = h & 0x3ffu;
  float v;
  if (exponent == 0)
    v = float(mantissa) * 5.9604644775390625e-8f;  // 2^-24
  else if (exponent == 31)
    v = mantissa ? quiet_nan() : bits_float(0x7f800000u);
  else
    v = bits_float(((exponent + 112u) << 23) | (mantissa << 13));
  return (h & 0x8000u) ? -v : v;
}
// fp16x3's scale: the exponent e for which max_abs * 2^e lies in [2^14,
// 2^15) (so the high parts, at most 2^15, stay finite, and the low parts of
// values down to 2^-28 max_abs stay normal), clamped to 127 (zero and float
// subnormals: 2^e stays a normal float). From the bits of max_abs: its sign
// is ignored; infinity and NaN give -114 (the pixel is no-data anyway).
inline constexpr int kHalfTopExponent = 14;
CS_HD int half_scale_exponent(float max_abs) {
  const int biased = int((float_bits(max_abs) >> 23) & 0xffu);
  const int e = 127 + kHalfTopExponent - biased;
  return e > 127 ? 127 : e;
}
CS_HD float power_of_two(int e) { return bits_float(uint32_t(e + 127) << 23); }  // -126 <= e <= 127
// Integer samples (and correlation's differences of them, 17 bits) are
// multiplied by 1/2 instead: at most 32767.5 in magnitude, high part at most
// 2^15, low part exact (6 bits at most, none below 2^-1).
inline constexpr float kHalfIntegerScale = 0.5f;
// Sid's two pixel operands take fixed scales instead of one per row and
// chunk: its centred logs log v - m lie within 192 of 0 for any positive
// float (log of FLT_MAX over the smallest subnormal), so 2^8 keeps them
// below fp16's 65504, and p = v / sum v is at most 1, so 2^15 does. The
// table's second half (log q - c_k) carries 2^(8 - 15), so that both
// products carry 2^8, which the kernel takes off its sums.
inline constexpr int kSidLogExponent = 8, kSidShareExponent = 15;

// The band (0..31 within its chunk) behind k index `second ? t + 4 : t` of
// step `step` for lane `lane` (t = lane % 4). A matrix product may number its
// k axis in any order as long as both operands agree; this one lets a thread
// fetch bands 4t..4t+3 of a 16-band span with one 16-byte shared-memory load
// (8 bytes for 16-bit samples) and use them in two consecutive steps: step
// 2s + h takes bands 16s + 4t + 2h (k = t) and 16s + 4t + 2h + 1 (k = t + 4).
CS_HD int fragment_band(int step, int lane, int second) {
  return (step / 2) * 16 + 4 * (lane % 4) + 2 * (step % 2) + second;
}
// The reference (0..63 within its group) behind lane `lane` of column `column`.
CS_HD int fragment_reference(int column, int lane) { return column * kColumnReferences + lane / 4; }
// Entry index of (group, chunk, step, column, lane) in the fragment table
// (`steps`: steps per chunk, steps_per_chunk(product)).
CS_HD size_t fragment_index(int group, int chunk, int chunks, int step, int column, int lane,
                            int steps = kStepsPerChunk) {
  return ((((size_t(group) * chunks + chunk) * steps + step) * kColumnsPerGroup + column) * kLanes) + lane;
}

// wgmma: a warp group (4 warps, 128 threads) multiplies a tile of 64 pixels
// by a group of 64 references, 16 bands per instruction, three instructions
// per 16 bands (lo x hi, hi x lo, hi x hi) into 32 float accumulators per
// thread. A thread's pixel registers are those of mma.m16n8k16 (rows g and
// g + 8 of its warp's 16, k = 2t, 2t + 1, 2t + 8, 2t + 9) and hold bands
// 4t..4t+3 of a 16-band span, as fp16x3's fragments: k position j of a span
// is band wgmma_span_band(j). The references' table is the instruction's
// shared-memory operand as it lies in shared memory: per group, the high
// then the low parts of the 64 scaled references, fp16, "K-major" without
// swizzling, i.e. 8 x 8 core matrices (8 references x 8 k positions, 128
// contiguous bytes), the core matrices of a row of 8 references along the
// padded bands (chunks x 32) one after another.
inline constexpr int kWarpgroupPixels = 64;
inline constexpr int kWarpgroupsPerBlock = 3;  // at 168 registers a thread, the register file's limit
CS_HD constexpr int wgmma_span_band(int j) { return j < 8 ? 4 * (j / 2) + j % 2 : 4 * ((j - 8) / 2) + 2 + j % 2; }
CS_HD size_t wgmma_reference_index(int group, int part, int reference, int position, int padded_bands) {
  return (size_t(group) * 2 + part) * kGroupReferences * padded_bands + size_t(reference / 8) * 8 * padded_bands +
         size_t(position / 8) * 64 + (reference % 8) * 8 + position % 8;
}

// What the kernel needs about the references, prepared once per classifier.
// The screen (wgmma builds, f32, i16 and u16 blocks (16-bit samples widened
// to f32 when staged for bandfit, where read for the others), every method
// but sid, K <= 64, no rule images): one TF32 product per term on the
// warp-group instructions, the pixels' operand from registers and the
// references' from shared memory, then every reference the product cannot
// rule out (classify_math.h, screen_operand_error) scored again from
// the staged samples in the fast precision (correlation and bandfit: the
// staged pixels first transformed as load_four does). Layouts, bands padded
// with zeros to a multiple of 32:
//   references (screen_index) as a tile's pixels below, reference k as row
//     k, but each slab's bands in the product's order (screen_product_column):
//     a row's 16-byte blocks lie in different banks, so the lanes that score
//     one (pixel, reference) item read its blocks without conflicts (blocks
//     1 KB apart, the layout before, put all of a reference in the same
//     banks);
//   a tile of 64 pixels: the instruction's 128-byte swizzle, per slab of 32
//     bands (8 KB) row m's 128 bytes at 128 m, its 16-byte block q at
//     (q xor m % 8): a pixel row's bytes stay together, as the asynchronous
//     copies write them (blocks 1 KB apart made every copy take one
//     shared-memory wavefront per lane).
CS_HD constexpr bool screened(Method m) { return m != Method::sid; }
inline constexpr int kScreenRows = 64;
inline constexpr int kScreenBlockBands = 4;
CS_HD constexpr int screen_padded_bands(int bands) { return (bands + 31) / 32 * 32; }
// Where 16-byte block `block` (0-7) of a slab's row `row` lies in the row's
// 128 bytes, in floats: the 128-byte swizzle of the tiles and the table.
CS_HD constexpr int swizzled_block(int row, int block) { return 4 * (block ^ (row % 8)); }
// The same for 16-bit tiles (every screened method but bandfit: the
// samples kept as stored, widened where they are read), in samples: a
// slab's row is 64 bytes, its 8-byte block q at (q xor (row / 2) % 4). The
// product's 4-byte reads of a step (rows g, the words of blocks i and
// i + 4) then meet 32 distinct banks, as
// `BipTensor.SixteenBitTileReadsMeetDistinctBanks` checks.
CS_HD constexpr int swizzled_block_16bit(int row, int block) { return 4 * (block ^ (row / 2 % 4)); }
// A tile's block by the size of the samples it holds (4: floats, 2: 16-bit
// samples as stored), in samples.
template <int kSampleBytes>
CS_HD constexpr int tile_block(int row, int block) {
  static_assert(kSampleBytes == 4 || kSampleBytes == 2, "float or 16-bit tiles");
  return kSampleBytes == 4 ? swizzled_block(row, block) : swizzled_block_16bit(row, block);
}
// The product's column (0-31: column c is column c % 8 of the slab's step
// c / 8) that a slab's band (0-31) takes. Each thread of the product loads its two
// columns c and c + 4 of a step for a pixel row in one 8-byte load, which
// gives it its operand registers (the instruction's fragment: row g, columns
// t and t + 4); so step i of a slab reads the tile's 16-byte blocks i and
// i + 4, their bands as columns (0 4 1 5) and (2 6 3 7), and the table holds
// each reference's bands in that order: pixel band u meets reference band u.
CS_HD constexpr int screen_product_column(int band) {
  const int block = band / kScreenBlockBands, e = band % kScreenBlockBands;
  return 8 * (block % 4) + 2 * (block / 4) + e / 2 + 4 * (e % 2);
}
CS_HD constexpr size_t screen_index(int row, int band) {
  const int column = screen_product_column(band % 32);
  return size_t(band / 32) * kScreenRows * 32 + size_t(row) * 32 +
         size_t(swizzled_block(row, column / kScreenBlockBands) + column % kScreenBlockBands);
}
inline constexpr int kScreenSlabBytes = kScreenRows * 128;  // a tile's 32 bands
inline constexpr int kScreenMostWarpgroups = 3;
// Shared memory of the screen with `warpgroups` tiles of f32 rows (16-bit
// samples widened for bandfit), or of 16-bit rows as stored (`raw_tiles`:
// sam, correlation and euclidean, screen_raw_tiles): the references, their
// key terms, sam's centre (a float per band), the tiles and 1 KB to align
// them (the swizzle's period).
CS_HD constexpr bool screen_raw_tiles(Method method, DataType type) {
  return type != DataType::f32 && method != Method::bandfit;
}
size_t screen_shared_bytes(int bands, int warpgroups, bool raw_tiles = false);
// Warp groups (tiles) per block that fit in `max_shared_bytes`, at most
// kScreenMostWarpgroups; 0 when not even one does.
int screen_warpgroups_for(int bands, size_t max_shared_bytes);
// CS_HSI_BIP_SCREEN=0 turns the screen off (the wgmma kernel then scores
// every reference), for comparison.
bool screen_from_environment();

struct Tables {
  Product product = Product::tf32x3;
  int groups = 0;  // passes of kGroupReferences references
  int chunks = 0;  // chunks of kChunkBands selected bands
  // tf32x3: 4 floats per fragment_index: hi(b0), hi(b1), lo(b0), lo(b1) of
  // the prepared reference values at fragment_band(step, lane, 0 / 1); zero
  // beyond the last band or reference.
  std::vector<float> fragments;
  // fp16x3: 4 words per fragment_index(..., kHalfStepsPerChunk) as described
  // at kHalfStepBands, of the reference values times 2^reference_exponent[k].
  std::vector<uint32_t> half_fragments;
  // wgmma: fp16 bits at wgmma_reference_index(group, 0 = high / 1 = low, k,
  // position, chunks x kChunkBands) of reference k's value at band
  // 16 (position / 16) + wgmma_span_band(position % 16), times
  // 2^reference_exponent[k] as fp16x3's.
  std::vector<uint16_t> wgmma_references;
  // Per reference (groups x kGroupReferences), fp16x3 and wgmma: the exponent of
  // its scale (half_scale_exponent of its largest magnitude), and 2^-that,
  // what the kernel multiplies its dot products by.
  std::vector<int> reference_exponent;
  std::vector<double> dot_scale;
  // Per reference (groups x kGroupReferences): the ranking key of a pixel
  // against reference k is key_scale[k] * dot + key_offset[k], higher is
  // better, for pixels of one method (sam: the dot product; correlation: dot
  // / sqrt(reference constant); euclidean: 2 dot - |r|^2, so |r|^2 =
  // -key_offset). NaN for unusable references.
  std::vector<double> key_scale, key_offset;
  // The screen's references (wgmma, one group, screened methods; else
  // empty): at screen_index(k, u) r_k(u), or for sam the float of
  // key_scale[k] r_k(u) - screen_mean[u], screen_mean the usable references'
  // mean of key_scale r (x . screen_mean is the same for every reference, so
  // such keys order them as the exact keys do; make_screen_references;
  // screen_mean is empty for the other methods), zeros beyond the last band
  // or reference; per reference the bound of the screen's error in its key,
  // |x| screen_weight[k] + screen_offset_slack[k] (classify_math.h,
  // screen_operand_error; 0 for unusable references).
  std::vector<float> screen_references, screen_mean;
  std::vector<double> screen_weight, screen_offset_slack;
  // Per reference, what the screen's kernel reads: its key factor
  // (key_scale, or 1 where the table holds key_scale r) times 1 +
  // screen_operand_centre (classify_math.h), key_offset
  // (-infinity for unusable references), screen_weight and
  // screen_offset_slack, as 4 floats.
  std::vector<float> screen_terms;
  // Per pair of references (kGroupReferences x kGroupReferences, row j,
  // column k, two floats each; zeros on the diagonal and for unusable
  // references): the bound of the screen's error in key_k - key_j is
  // |x| w_jk + s_jk, stored as (w_jk, s_jk) rounded up. The errors that the
  // two keys share cancel in it, so it is far tighter than their own
  // bounds' sum where the references are similar, which is where pixels
  // have two candidates (the screen tests such pixels with it for sam of
  // f32 blocks and for correlation: bip_tensor.cu, kPairTest).
  std::vector<float> screen_pair_weights;
  double screen_largest_norm2 = 0;  // the largest |t_k|^2 of the usable references' table rows
  // Per |x|, what the bounds above leave out because it is the same for
  // every reference (the common term, and for sam the float sums of x . m):
  // key + or - (bound + |x| screen_common_weight) holds the exact key, which
  // settles a lone candidate's label against the threshold.
  double screen_common_weight = 0;
  // Bandfit: each selected band's continuum abscissa (the table's positions),
  // zeros to chunks x kChunkBands, so that a kernel reads 4 at once; else empty.
  std::vector<float> positions;
  // Sid (wgmma): chunks is product_chunks_for, the table holds q over the
  // first half (chunks_for chunks, zeros past the last band) and log q - c_k
  // over the second, c_k the mean of log q_k; per reference (groups x
  // kGroupReferences) c_k, sum q_k and sum q_k log q_k (sid_score), NaN for
  // unusable references; its ranking key is dot + c_k - sum q_k log q_k.
  std::vector<double> sid_terms;
};

// Reference groups and band chunks of a table (what Tables holds).
inline int groups_for(const ReferenceTableShape &shape) {
  return (shape.references + kGroupReferences - 1) / kGroupReferences;
}
inline int chunks_for(const ReferenceTableShape &shape) { return (shape.bands + kChunkBands - 1) / kChunkBands; }
// Chunks of a method's products: sid's two products (the pixel's logs with
// q, then p with log q; classify_math.h, sid_score) run one after the other
// over the bands, as twice the chunks (wgmma only).
inline int product_chunks_for(Method method, const ReferenceTableShape &shape) {
  return chunks_for(shape) * (method == Method::sid ? 2 : 1);
}

// `reading`: how the device's tensor cores read a float operand (tf32_reading), which the screen's bounds
// depend on.
Tables make_tables(Method method, const std::vector<float> &table, const ReferenceTableShape &shape,
                   Product product = Product::tf32x3, Tf32Reading reading = Tf32Reading::unknown);

// First band when `bands` is a contiguous ascending range, else -1.
int contiguous_first_band(const std::vector<int> &bands);

// Bytes per asynchronous copy (16, 8 or 4) the kernel can use for `block`
// with `band_count` bands from `first_band`, or 0 when the block does not
// fit it (not BIP-ordered, another sample type, misaligned).
int copy_bytes_for(const CubeBlock &block, int first_band, int band_count);

// Staging buffers for pixel chunks: with S buffers the kernel keeps S - 2
// chunks in flight while one multiplies and needs no barrier at the end of a
// chunk (the buffer a copy lands in was last read two chunks ago).
inline constexpr int kMostStages = 4, kFewestStages = 3;
// Shared memory the kernel asks for with `chunks` chunks of `type` samples
// and `stages` staging buffers (wgmma: each warp group's; its table holds
// every group of references for the whole kernel).
size_t shared_bytes(DataType type, int chunks, int stages, Product product = Product::tf32x3, int groups = 1);
// The most staging buffers that fit `max_shared_bytes` (kMostStages down to
// kFewestStages), or 0 when the references do not fit with the fewest.
int stages_for(DataType type, int chunks, size_t max_shared_bytes, Product product = Product::tf32x3,
               int groups = 1);

// Device copies of Tables and the launch (bip_tensor.cu). `fragments` is
// 16-byte aligned device memory holding Tables::fragments (tf32x3),
// Tables::half_fragments (fp16x3) or Tables::wgmma_references (wgmma);
// dot_scale: Tables::dot_scale (fp16x3, wgmma).
struct DeviceTables {
  Product product = Product::tf32x3;
  const void *fragments = nullptr;
  const double *dot_scale = nullptr;
  const double *key_scale = nullptr;
  const double *key_offset = nullptr;
  const double *key_inverse = nullptr;  // 1 / key_scale (correlation: sqrt of the reference's constant)
  const float *table = nullptr;  // the classifier's prepared table (per-reference constants)
  ReferenceTableShape shape;
  int groups = 0, chunks = 0;
  const float *screen_references = nullptr, *screen_terms = nullptr, *screen_mean = nullptr,
              *screen_pair_weights = nullptr;
  double screen_largest_norm2 = 0, screen_common_weight = 0;
  int screen_warpgroups = 0;  // 0: no screen
  const float *positions = nullptr;  // Tables::positions (bandfit)
  const double *sid_terms = nullptr; // Tables::sid_terms (sid)
};

// Sid's floor in the block's stored units (kSidFloor / scale). The BIP
// kernel's logs flush subnormal inputs to zero (no rescaling per sample), so
// it serves sid only where that floor is a normal float (a scale below
// ~8.5e25); elsewhere the generic tensor kernel does.
float sid_stored_floor(const CubeBlock &block);
bool sid_floor_is_normal(const CubeBlock &block);

// Whether classify() runs the screen for this method, sample type, block
// (copy_bytes_for's answer) and output: f32 blocks, and 16-bit blocks whose
// rows come in whole aligned 16-byte pieces (bands a multiple of 32).
bool uses_screen(Method method, const DeviceTables &tables, DataType type, int copy_bytes,
                 const ClassificationOutput &output);

// Queues the classification of `block` on `stream`, its labels into
// `class_map` (made from `output`). The caller checked the block with
// copy_bytes_for (returned `copy_bytes`) and chose `stages` with stages_for.
// `sm_count`: the device's multiprocessors (one persistent block each).
void classify(Method method, const DeviceTables &tables, const CubeBlock &block, int first_band, int copy_bytes,
              int stages, float threshold, const ClassificationOutput &output, const ClassMapTarget &class_map,
              int sm_count, StreamHandle stream);

}  // namespace cs::hsi::bip_tensor
