// Copies from page-locked host memory by the GPU's cores (see
// copy_from_page_locked_async in cuda_runtime.h).
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "common/cuda_check.h"

namespace cs {
namespace {

// Each thread moves 16-byte words while both ends are 16-byte aligned, then
// bytes: the host arrays are small, what matters is that every read is in
// flight at once (each crosses PCIe).
__global__ void copy_from_host_kernel(unsigned char *dst, const unsigned char *src, size_t bytes) {
  const size_t stride = size_t(gridDim.x) * blockDim.x;
  const size_t first = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  const bool aligned = (reinterpret_cast<uintptr_t>(dst) | reinterpret_cast<uintptr_t>(src)) % 16 == 0;
  const size_t words = aligned ? bytes / 16 : 0;
  for (size_t i = first; i < words; i += stride)
    reinterpret_cast<uint4 *>(dst)[i] = reinterpret_cast<const uint4 *>(src)[i];
  for (size_t i = words * 16 + first; i < bytes; i += stride) dst[i] = src[i];
}

}  // namespace

void copy_from_page_locked_async(void *device_dst, const void *page_locked_src, size_t bytes, StreamHandle stream) {
  if (bytes == 0) return;
  // Under unified addressing (as copy_async assumes) page-locked host memory
  // is read by kernels at its host address: no lookup per call.
  const int threads = 256;
  const size_t pieces = (bytes + 15) / 16;
  const unsigned blocks = unsigned(std::min<size_t>((pieces + threads - 1) / threads, 64));
  copy_from_host_kernel<<<blocks, threads, 0, stream>>>(static_cast<unsigned char *>(device_dst),
                                                        static_cast<const unsigned char *>(page_locked_src), bytes);
  check_launch("copy_from_host_kernel launch");
}

}  // namespace cs
