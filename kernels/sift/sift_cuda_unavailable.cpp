// CudaSift in a build without CUDA: same API, every use throws (callers
// check cs::device_count() first, which is 0 here).
#include <string>

#include "common/cuda_runtime.h"
#include "sift/sift_cuda.h"

namespace cs::sift {

namespace {
[[noreturn]] void unavailable(const char *what) {
  throw CudaError(0, std::string(what) + ": this build has no CUDA support (configured with -Dgpu=disabled or without nvcc)");
}
}  // namespace

struct CudaSift::Impl {};

CudaSift::CudaSift(const Params &, int, Capacity) { unavailable("CudaSift"); }
CudaSift::~CudaSift() = default;
const Params &CudaSift::params() const { unavailable("CudaSift::params"); }
int CudaSift::device() const { return -1; }
void CudaSift::build_pyramid(const DeviceImage &, StreamHandle) { unavailable("CudaSift::build_pyramid"); }
void CudaSift::detect(StreamHandle) { unavailable("CudaSift::detect"); }
void CudaSift::describe(DescriptorFormat, StreamHandle) { unavailable("CudaSift::describe"); }
void CudaSift::run(const DeviceImage &, DescriptorFormat, StreamHandle) { unavailable("CudaSift::run"); }
const int *CudaSift::device_final_count() const { return nullptr; }
const Keypoint *CudaSift::device_keypoints() const { return nullptr; }
EventHandle CudaSift::next_frame_start() const { return nullptr; }
const void *CudaSift::device_descriptors() const { return nullptr; }
int CudaSift::keypoint_capacity() const { return 0; }
int CudaSift::candidate_capacity() const { return 0; }
int CudaSift::frame_order() const { return -1; }
int CudaSift::small_octaves_from() const { return -1; }
Result CudaSift::download(StreamHandle) { unavailable("CudaSift::download"); }
PyramidLevels CudaSift::download_pyramid(StreamHandle) { unavailable("CudaSift::download_pyramid"); }
std::vector<TraceMark> CudaSift::trace() { unavailable("CudaSift::trace"); }

}  // namespace cs::sift
