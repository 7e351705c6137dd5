// The luma kernel of sift's CUDA backend: one thread per output pixel, the
// per-pixel function from sift-luma.h.
#include "sift-luma.h"

#include "common/cuda_check.h"

namespace gstsift {

__global__ void luma_kernel(const uint8_t *src, size_t src_pitch, uint8_t *dst, size_t dst_pitch, int width,
                            int height, LumaLayout layout) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= width || y >= height) return;
  dst[y * dst_pitch + x] = luma_at(src + y * src_pitch, x, layout);
}

void luma_async(const void *src, size_t src_pitch, void *dst, size_t dst_pitch, int width, int height,
                const LumaLayout &layout, cs::StreamHandle stream) {
  if (width <= 0 || height <= 0) return;
  const dim3 block(32, 8), grid((width + 31) / 32, (height + 7) / 8);
  luma_kernel<<<grid, block, 0, reinterpret_cast<cudaStream_t>(stream)>>>(
      static_cast<const uint8_t *>(src), src_pitch, static_cast<uint8_t *>(dst), dst_pitch, width, height, layout);
  cs::check_launch("luma_kernel");
}

}  // namespace gstsift
