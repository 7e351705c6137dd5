// Native ENVI samples -> float, pixel-interleaved (BIP): the form the rest
// of a pipeline wants, on the CPU or on the GPU after the native samples
// were transferred. Both paths decode with sample_decode.h.
#pragma once

#include <optional>

#include "common/cuda_runtime.h"
#include "hsi/envi.h"
#include "hsi/sample_decode.h"

namespace cs::hsi {

ByteOrder host_byte_order();

// Decoding rules for samples of `type` stored in `order`. The ignore value
// is kept only when the type can hold it exactly (an int16 file cannot
// contain -1.5, so nothing there is "no data").
SampleFormat make_sample_format(DataType type, ByteOrder order, std::optional<double> data_ignore_value,
                                std::optional<double> reflectance_scale_factor);
SampleFormat make_sample_format(const EnviHeader &header);

// A block of `lines` lines as EnviReader::read_lines returned it.
CubeBlock make_cube_block(const EnviHeader &header, const void *data, size_t lines);

// dst[pixel * bands + band] = decoded sample, for every pixel of the block.
void convert_to_bip_float(const CubeBlock &block, float *dst);

// The same on the GPU: block.data and dst are device pointers; the work is
// queued on `stream`. Throws cs::CudaError in a build without CUDA.
void convert_to_bip_float_cuda(const CubeBlock &device_block, float *device_dst, StreamHandle stream);

}  // namespace cs::hsi
