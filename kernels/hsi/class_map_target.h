#pragma once
// Where the CUDA kernels write a pixel's class: the block's class map
// (ClassificationOutput), lines of `samples` labels `stride` bytes apart,
// 8 or 16 bits a label. One place for the address arithmetic of every kernel.

#include <cstddef>
#include <cstdint>

#include "hsi/classifier.h"

namespace cs::hsi {

struct ClassMapTarget {
  void *data = nullptr;
  size_t stride = 0;   // bytes from one line to the next
  size_t samples = 1;  // labels per line
  bool sixteen_bit = false;
  // Lines back to back: a pixel's label sits at the pixel's own index, with
  // no 64-bit division and remainder per pixel (which the screen kernel's
  // per-tile tail paid for every pixel).
  bool packed = false;

  static ClassMapTarget of(const ClassificationOutput &output, size_t samples) {
    ClassMapTarget t;
    t.data = output.class_map;
    t.sixteen_bit = output.class_map_format == ClassMapFormat::gray16;
    const size_t line_bytes = samples * class_map_bytes_per_pixel(output.class_map_format);
    t.stride = output.class_map_stride ? output.class_map_stride : line_bytes;
    t.samples = samples;
    t.packed = t.stride == line_bytes;
    return t;
  }

#ifdef __CUDACC__
  __device__ __forceinline__ void write(size_t pixel, int label) const {
    auto *line = static_cast<unsigned char *>(data);
    size_t at = pixel;
    if (!packed) {
      line += (pixel / samples) * stride;
      at = pixel % samples;
    }
    if (sixteen_bit)
      reinterpret_cast<uint16_t *>(line)[at] = uint16_t(label);
    else
      line[at] = uint8_t(label);
  }
#endif
};

}  // namespace cs::hsi
