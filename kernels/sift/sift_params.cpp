// Parameter checks and sizes shared by the CUDA engine and its host users.
#include <stdexcept>
#include <string>

#include "sift/sift_cuda.h"

namespace cs::sift {

void validate(const Params &p) {
  if (p.n_features < 0) throw std::invalid_argument("n-features must be >= 0");
  // The layer index is packed into 8 bits of cv::KeyPoint::octave.
  if (p.n_octave_layers < 1 || p.n_octave_layers > 32)
    throw std::invalid_argument("n-octave-layers must be 1..32, got " + std::to_string(p.n_octave_layers));
  if (!(p.contrast_threshold >= 0.0)) throw std::invalid_argument("contrast-threshold must be >= 0");
  if (!(p.edge_threshold > 0.0)) throw std::invalid_argument("edge-threshold must be > 0");
  if (!(p.sigma > 0.0)) throw std::invalid_argument("sigma must be > 0");
  int widest = blur_radius(initial_sigma(p.sigma, p.upsample));
  for (int i = 1; i < p.n_octave_layers + 3; ++i) {
    const int r = blur_radius(level_sigma(i, p.n_octave_layers, p.sigma));
    widest = r > widest ? r : widest;
  }
  if (widest > kMaxBlurRadius)
    throw std::invalid_argument("sigma " + std::to_string(p.sigma) + " needs Gaussian kernels of radius " +
                                std::to_string(widest) + ", more than the supported " +
                                std::to_string(kMaxBlurRadius));
}

size_t descriptor_bytes(DescriptorFormat f) {
  return f == DescriptorFormat::opencv ? size_t(kDescriptorLength) : size_t(kDescriptorLength) * sizeof(float);
}

}  // namespace cs::sift
