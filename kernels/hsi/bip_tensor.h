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
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "common/cuda_runtime.h"
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
// Entry index of (group, chunk, step, column, lane) in the fragment table.
CS_HD size_t fragment_index(int group, int chunk, int chunks, int step, int column, int lane) {
  return ((((size_t(group) * chunks + chunk) * kStepsPerChunk + step) * kColumnsPerGroup + column) * kLanes) + lane;
}

// What the kernel needs about the references, prepared once per classifier.
struct Tables {
  int groups = 0;  // passes of kGroupReferences references
  int chunks = 0;  // chunks of kChunkBands selected bands
  // 4 floats per fragment_index: hi(b0), hi(b1), lo(b0), lo(b1) of the
  // prepared reference values at fragment_band(step, lane, 0 / 1); zero
  // beyond the last band or reference.
  std::vector<float> fragments;
  // Per reference (groups x kGroupReferences): the ranking key of a pixel
  // against reference k is key_scale[k] * dot + key_offset[k], higher is
  // better, for pixels of one method (sam: the dot product; correlation: dot
  // / sqrt(reference constant); euclidean: 2 dot - |r|^2, so |r|^2 =
  // -key_offset). NaN for unusable references.
  std::vector<double> key_scale, key_offset;
};

Tables make_tables(Method method, const std::vector<float> &table, const ReferenceTableShape &shape);

// First band when `bands` is a contiguous ascending range, else -1.
int contiguous_first_band(const std::vector<int> &bands);

// Bytes per asynchronous copy (16, 8 or 4) the kernel can use for `block`
// with `band_count` bands from `first_band`, or 0 when the block does not
// fit it (not BIP-ordered, swapped bytes, another sample type, misaligned).
int copy_bytes_for(const CubeBlock &block, int first_band, int band_count);

// Staging buffers for pixel chunks: with S buffers the kernel keeps S - 2
// chunks in flight while one multiplies and needs no barrier at the end of a
// chunk (the buffer a copy lands in was last read two chunks ago).
inline constexpr int kMostStages = 4, kFewestStages = 3;
// Shared memory the kernel asks for with `chunks` chunks of `type` samples
// and `stages` staging buffers.
size_t shared_bytes(DataType type, int chunks, int stages);
// The most staging buffers that fit `max_shared_bytes` (kMostStages down to
// kFewestStages), or 0 when the references do not fit with the fewest.
int stages_for(DataType type, int chunks, size_t max_shared_bytes);

// Device copies of Tables and the launch (bip_tensor.cu). `fragments` is
// 16-byte aligned device memory holding Tables::fragments.
struct DeviceTables {
  const float *fragments = nullptr;
  const double *key_scale = nullptr;
  const double *key_offset = nullptr;
  const float *table = nullptr;  // the classifier's prepared table (per-reference constants)
  ReferenceTableShape shape;
  int groups = 0, chunks = 0;
};

// Queues the classification of `block` on `stream`. The caller checked the
// block with copy_bytes_for (returned `copy_bytes`) and chose `stages` with
// stages_for. `sm_count`: the device's multiprocessors (one persistent block
// each).
void classify(Method method, const DeviceTables &tables, const CubeBlock &block, int first_band, int copy_bytes,
              int stages, float threshold, const ClassificationOutput &output, size_t class_map_stride, int sm_count,
              StreamHandle stream);

}  // namespace cs::hsi::bip_tensor
