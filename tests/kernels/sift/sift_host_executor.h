// Test-only executor of the CUDA SIFT engine's math on the CPU: the same
// functions of kernels/sift/sift_math.h the kernels call, run by plain loops
// over the whole image instead of launches (the pyramid, extrema, refinement,
// orientation, ordering and descriptors). CI has no GPU: checking this
// executor against OpenCV checks the algorithm the GPU runs. Not a product
// backend (the CPU backend of the elements is OpenCV itself).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "sift/sift_cuda.h"
#include "sift/sift_math.h"

namespace sift_test {

struct HostSiftResult {
  std::vector<cs::sift::Keypoint> keypoints;  // canonical order, duplicates removed, n-features kept
  std::vector<float> descriptors;             // 128 per keypoint, in the requested format
  int candidates = 0, refined = 0, oriented = 0;
};

// How descriptor histograms are summed: fixed point (the engine's default)
// or float (the engine's CS_SIFT_DESCRIPTOR=float).
enum class DescriptorSums { fixed, floating };

// `data` is a luma plane of `type` (uint8_t or float at the 0..255 scale).
HostSiftResult host_sift(const void *data, size_t pitch_bytes, int width, int height, cs::sift::PixelType type,
                         const cs::sift::Params &params, cs::sift::DescriptorFormat format,
                         DescriptorSums sums = DescriptorSums::fixed);

}  // namespace sift_test
