// The plugin's own kernels in a build without CUDA: the CUDA paths cannot
// start there (no device), so these are only reached by mistake, and say why.
#include "sift-draw.h"
#include "sift-luma.h"

namespace gstsift {

void luma_async(const void *, size_t, void *, size_t, int, int, const LumaLayout &, cs::StreamHandle) {
  throw cs::CudaError(0, "luma_async: this build has no CUDA support");
}

void draw_marks_async(const DrawTarget &, const KeypointMark *, int, cs::StreamHandle) {
  throw cs::CudaError(0, "draw_marks_async: this build has no CUDA support");
}

}  // namespace gstsift
