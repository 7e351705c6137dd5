// CudaMatcher in a build without CUDA: constructing it throws (callers check
// cs::device_count() first, which is 0 here); match_host is the CPU path.
#include <string>

#include "sift/sift_match.h"

namespace cs::sift {

struct CudaMatcher::Impl {};

CudaMatcher::CudaMatcher(int) {
  throw CudaError(0, "CudaMatcher: this build has no CUDA support (configured with -Dgpu=disabled or without nvcc)");
}
CudaMatcher::~CudaMatcher() = default;
int CudaMatcher::device() const { return -1; }
int CudaMatcher::train_count() const { return 0; }
void CudaMatcher::set_train(const uint8_t *, int, StreamHandle) {}
void CudaMatcher::set_train(const float *, int, StreamHandle) {}
void CudaMatcher::train_on_last_query() {}
std::vector<NearestTwo> CudaMatcher::nearest_two(const uint8_t *, int, StreamHandle) { return {}; }
std::vector<NearestTwo> CudaMatcher::nearest_two(const float *, int, StreamHandle) { return {}; }
std::vector<DescriptorMatch> CudaMatcher::match(const uint8_t *, int, double, bool, StreamHandle) { return {}; }
std::vector<DescriptorMatch> CudaMatcher::match(const float *, int, double, bool, StreamHandle) { return {}; }

}  // namespace cs::sift
