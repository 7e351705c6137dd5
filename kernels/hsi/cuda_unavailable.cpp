// The CUDA entry points in a build without CUDA: same API, every use throws
// (callers check cs::device_count() first, which is 0 here).
#include "common/cuda_runtime.h"
#include "hsi/bip_tensor.h"
#include "hsi/classifier.h"
#include "hsi/convert.h"

namespace cs::hsi {

namespace {
[[noreturn]] void unavailable(const char *what) {
  throw CudaError(0, std::string(what) + ": this build has no CUDA support (configured with -Dgpu=disabled or without nvcc)");
}
}  // namespace

void convert_to_bip_float_cuda(const CubeBlock &, float *, StreamHandle) { unavailable("convert_to_bip_float_cuda"); }

struct CudaSpectralClassifier::Impl {};

CudaSpectralClassifier::CudaSpectralClassifier(const SpectralClassifier &, int) {
  unavailable("CudaSpectralClassifier");
}
CudaSpectralClassifier::~CudaSpectralClassifier() = default;
void CudaSpectralClassifier::classify(const CubeBlock &, const ClassificationOutput &, StreamHandle) {
  unavailable("CudaSpectralClassifier::classify");
}
void CudaSpectralClassifier::set_threshold(double) { unavailable("CudaSpectralClassifier::set_threshold"); }
bool CudaSpectralClassifier::table_in_constant_memory() const { return false; }
int CudaSpectralClassifier::device() const { return -1; }
CudaSpectralClassifier::Kernel CudaSpectralClassifier::kernel_for(const CubeBlock &) const {
  return Kernel::per_pixel;
}
void CudaSpectralClassifier::set_bip_tensor_enabled(bool) {}
const char *CudaSpectralClassifier::bip_tensor_product() const { return ""; }
bool CudaSpectralClassifier::screens(const CubeBlock &, const ClassificationOutput &) const { return false; }

// No device runs wgmma here, so none has a TF32 reading to find.
bool bip_tensor::wgmma_available(int) { return false; }
Tf32Reading bip_tensor::tf32_reading(int) { return Tf32Reading::unknown; }

}  // namespace cs::hsi
