// The 8-bit luma that sift's backends read from plane 0 of a frame, one
// per-pixel function for the CPU backend and the CUDA kernel (sift-luma.cu).
// Packed RGB pixels give OpenCV's own 8-bit RGB-to-gray (cv::cvtColor: BT.601
// weights 0.299/0.587/0.114 as 15-bit fixed point, rounded), so the CUDA
// backend sees the same gray image as the CPU backend and as cv::SIFT given
// the colour image; the CPU tests check the formula against cv::cvtColor.
// YUV and gray pixels give their Y sample, reduced to its 8 most significant
// bits where it is wider (P010's 10 bits at bits 6..15: the high byte). Which
// layout a video format has: sift-formats.h.
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

// Byte positions of red, green and blue within a packed RGB pixel.
struct PackedOrder {
  int r, g, b;
};
constexpr PackedOrder kRgbaOrder{0, 1, 2};
constexpr PackedOrder kBgraOrder{2, 1, 0};

// Where a frame keeps its luma in plane 0: each pixel is `pixel_bytes`
// bytes; RGB pixels have their colours at `order`; YUV and gray pixels their
// Y sample at byte `offset`, 8 bits, or 16 bits in the given byte order,
// shifted right by `right_shift` to its 8 most significant bits of depth.
struct LumaLayout {
  int pixel_bytes = 1;
  bool rgb = false;
  PackedOrder order{};
  int offset = 0;
  bool wide = false;  // 16-bit samples
  bool big_endian = false;
  int right_shift = 0;

  // Plane 0 is the 8-bit luma itself (GRAY8, NV12, I420, ...): read in place.
  CS_HD bool is_luma_plane() const { return !rgb && pixel_bytes == 1 && offset == 0 && !wide; }
};

// The luma of pixel x of a row of plane 0.
CS_HD uint8_t luma_at(const uint8_t *row, int x, const LumaLayout &l) {
  const uint8_t *p = row + size_t(x) * size_t(l.pixel_bytes);
  if (l.rgb) return luma_bt601(p[l.order.r], p[l.order.g], p[l.order.b]);
  p += l.offset;
  if (!l.wide) return *p;
  const uint32_t sample = l.big_endian ? (uint32_t(p[0]) << 8 | p[1]) : (uint32_t(p[1]) << 8 | p[0]);
  return static_cast<uint8_t>(sample >> l.right_shift);
}

// Enqueues on `stream` the luma of a width x height plane 0 (`src`, rows
// `src_pitch` bytes apart, device memory) into `dst` (device memory, rows
// `dst_pitch` bytes apart). Throws cs::CudaError (also in a build without
// CUDA).
void luma_async(const void *src, size_t src_pitch, void *dst, size_t dst_pitch, int width, int height,
                const LumaLayout &layout, cs::StreamHandle stream);

}  // namespace gstsift
