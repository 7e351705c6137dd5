// The luma kernel of sift's CUDA backend: one thread per output pixel, the
// per-pixel formula from sift-luma.h.
#include "sift-luma.h"

#include "common/cuda_check.h"

namespace gstsift {

__global__ void packed_luma_kernel(const uint8_t *src, size_t src_pitch, uint8_t *dst, size_t dst_pitch, int width,
                                   int height, PackedOrder order) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= width || y >= height) return;
  const uchar4 p = reinterpret_cast<const uchar4 *>(src + y * src_pitch)[x];
  const uint8_t c[4] = {p.x, p.y, p.z, p.w};
  dst[y * dst_pitch + x] = luma_bt601(c[order.r], c[order.g], c[order.b]);
}

void packed_luma_async(const void *src, size_t src_pitch, void *dst, size_t dst_pitch, int width, int height,
                       PackedOrder order, cs::StreamHandle stream) {
  if (width <= 0 || height <= 0) return;
  // uchar4 loads need 4-byte aligned rows; device allocations and video strides are.
  if (reinterpret_cast<uintptr_t>(src) % 4 != 0 || src_pitch % 4 != 0)
    throw cs::CudaError(-1, "packed frame rows are not 4-byte aligned");
  const dim3 block(32, 8), grid((width + 31) / 32, (height + 7) / 8);
  packed_luma_kernel<<<grid, block, 0, reinterpret_cast<cudaStream_t>(stream)>>>(
      static_cast<const uint8_t *>(src), src_pitch, static_cast<uint8_t *>(dst), dst_pitch, width, height, order);
  cs::check_launch("packed_luma_kernel");
}

}  // namespace gstsift
