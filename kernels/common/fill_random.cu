// Device-side pseudo-random fill: tests and benchmarks poison or seed device
// buffers without a host round trip.
#include <cuda_runtime.h>

#include "common/cuda_check.h"

namespace cs {
namespace {

__device__ __forceinline__ unsigned mix(unsigned x) {
  // lowbias32 integer hash: cheap and well distributed.
  x ^= x >> 16;
  x *= 0x7feb352dU;
  x ^= x >> 15;
  x *= 0x846ca68bU;
  x ^= x >> 16;
  return x;
}

__global__ void fill_random_kernel(unsigned char *dst, size_t bytes, unsigned seed) {
  const size_t words = bytes / 4;
  const size_t stride = size_t(gridDim.x) * blockDim.x;
  for (size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < words; i += stride) {
    const unsigned v = mix(unsigned(i) ^ mix(seed + unsigned(i >> 32)));
    // Byte stores keep any alignment of dst legal.
    dst[4 * i + 0] = v & 0xff;
    dst[4 * i + 1] = (v >> 8) & 0xff;
    dst[4 * i + 2] = (v >> 16) & 0xff;
    dst[4 * i + 3] = v >> 24;
  }
  const size_t tail = words * 4 + (size_t(blockIdx.x) * blockDim.x + threadIdx.x);
  if (tail < bytes) dst[tail] = mix(seed ^ unsigned(tail)) & 0xff;
}

}  // namespace

void fill_random_async(void *dst, size_t bytes, unsigned seed, StreamHandle stream) {
  if (bytes == 0) return;
  const int threads = 256;
  const size_t words = bytes / 4 + 1;
  const unsigned blocks = unsigned(std::min<size_t>((words + threads - 1) / threads, 65535));
  fill_random_kernel<<<blocks, threads, 0, stream>>>(static_cast<unsigned char *>(dst), bytes, seed);
  check_launch("fill_random_kernel launch");
}

}  // namespace cs
