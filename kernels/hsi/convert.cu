// Native samples -> float BIP on the GPU, with the decoding of sample_decode.h.
#include <algorithm>
#include <cstdint>
#include <stdexcept>

#include "hsi/convert.h"
#include "common/cuda_check.h"

namespace cs::hsi {

namespace {

// One thread per output value: writes are contiguous; reads are contiguous
// for BIP input and strided for BIL/BSQ (each read still moves a whole
// sector shared by neighbouring pixels' threads through L1/L2).
template <DataType T>
__global__ void convert_kernel(const void *data, SampleFormat format, BlockLayout layout, float *dst) {
  const size_t values = layout.values();
  const size_t stride = size_t(gridDim.x) * blockDim.x;
  for (size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < values; i += stride) {
    const size_t pixel = i / layout.bands, band = i % layout.bands;
    dst[i] = decode_sample<T>(data, layout.offset(pixel, band), format);
  }
}

}  // namespace

void convert_to_bip_float_cuda(const CubeBlock &block, float *dst, StreamHandle stream) {
  const size_t values = block.layout.values();
  if (values == 0) return;
  if (reinterpret_cast<uintptr_t>(block.data) % sample_size(block.format.type) != 0)
    throw std::invalid_argument("device block is not aligned to its sample size");
  const int threads = 256;
  const unsigned blocks = unsigned(std::min<size_t>((values + threads - 1) / threads, 1u << 20));
  with_data_type(block.format.type, [&](auto type) {
    convert_kernel<decltype(type)::value><<<blocks, threads, 0, stream>>>(block.data, block.format, block.layout, dst);
  });
  cs::check_cuda(cudaGetLastError(), "convert_to_bip_float_cuda launch");
}

}  // namespace cs::hsi
