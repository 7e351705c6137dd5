// Luma of packed 8-bit RGB frames (RGBA, BGRA, BGRx) for the CUDA backend of
// sift. The per-pixel formula is OpenCV's own for 8-bit RGB-to-gray
// (cv::cvtColor of 8-bit images: BT.601 weights 0.299/0.587/0.114 as 15-bit
// fixed point, rounded), so the CUDA backend sees the same gray image as the CPU backend
// and as cv::SIFT given the colour image. The CPU tests check the formula
// against cv::cvtColor; the kernel (sift-luma.cu) calls the same function.
#pragma once

#include <cstddef>
#include <cstdint>

#include "common/cuda_runtime.h"
#include "common/hd.h"

namespace gstsift {

CS_HD uint8_t luma_bt601(uint32_t r, uint32_t g, uint32_t b) {
  constexpr uint32_t kShift = 15, kR = 9798, kG = 19235, kB = 3735;  // round(w * 2^15), summing to 2^15
  return static_cast<uint8_t>((r * kR + g * kG + b * kB + (1u << (kShift - 1))) >> kShift);
}

// Byte positions of red, green and blue within a 4-byte pixel.
struct PackedOrder {
  int r, g, b;
};
constexpr PackedOrder kRgbaOrder{0, 1, 2};
constexpr PackedOrder kBgraOrder{2, 1, 0};  // also BGRx

// Enqueues on `stream` the luma of a width x height packed frame (`src`,
// rows `src_pitch` bytes apart, device memory) into `dst` (device memory,
// rows `dst_pitch` bytes apart). Throws cs::CudaError (also in a build
// without CUDA).
void packed_luma_async(const void *src, size_t src_pitch, void *dst, size_t dst_pitch, int width, int height,
                       PackedOrder order, cs::StreamHandle stream);

}  // namespace gstsift
