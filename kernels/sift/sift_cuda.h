// SIFT on the GPU: OpenCV 4.6's cv::SIFT (see sift_math.h for the algorithm
// and its conventions), device-resident from a luma plane to keypoints and
// descriptors, in three stages that can be timed or chained separately:
//
//   build_pyramid  Gaussian and DoG pyramids (one fused kernel per level:
//                  separable blur from the previous level in shared memory,
//                  the DoG written by the same kernel);
//   detect         extrema -> dense candidate list -> refinement and tests
//                  -> dense list -> orientation (one warp per keypoint) ->
//                  canonical order, duplicates removed, n-features kept;
//   describe       descriptors of the final list (one warp per keypoint).
//
// Every call only enqueues work on the given stream; nothing synchronises the
// host except download(). Buffers are allocated when the image size or the
// parameters change and reused for every later frame of that size; so are
// the CUDA graphs that the launches are replayed from (captured on the
// first frame of a size, a few host milliseconds; CS_SIFT_GRAPHS=0 in the
// environment when the engine is made launches every kernel directly). Keypoint
// lists have fixed capacities; what does not fit is dropped and counted
// (Result::overflowed, Counts), never written out of bounds.
//
// Output order is deterministic: features_cpu's canonical order (response
// descending, then y, x, size, angle, octave). Descriptor histograms are
// summed with shared-memory atomics, so a descriptor's float sums can differ
// in their last bits from run to run (a byte by one, rarely); keypoints and
// their order do not.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/cuda_runtime.h"
#include "sift/sift_math.h"

namespace cs::sift {

// cv::SIFT::create's parameters plus the doubling of the first octave.
struct Params {
  int n_features = 0;  // 0: all
  int n_octave_layers = 3;
  double contrast_threshold = 0.04;
  double edge_threshold = 10.0;
  double sigma = 1.6;
  bool upsample = true;  // OpenCV always doubles
};

// Throws std::invalid_argument naming the bad parameter.
void validate(const Params &p);

// The descriptor formats of features_cpu (same numbering): OpenCV's bytes,
// the same values as float32, RootSIFT (float / L1 norm, element-wise sqrt).
enum class DescriptorFormat { opencv = 0, float32 = 1, rootsift = 2 };
size_t descriptor_bytes(DescriptorFormat f);  // per keypoint: 128 or 512

enum class PixelType { u8, f32 };  // f32 luma at the same scale as 8-bit (0..255)

// A luma plane in device memory.
struct DeviceImage {
  const void *data = nullptr;
  size_t pitch_bytes = 0;
  int width = 0, height = 0;
  PixelType type = PixelType::u8;
};

// Capacities of the device lists (0: a default from the image size).
struct Capacity {  // 0: from the frame size; each below 2^30 (the constructor refuses more)
  int candidates = 0;  // extrema before refinement
  int keypoints = 0;   // keypoints after orientation (and before duplicates are removed)
};

// Device-side counters of one frame (how many were found, before clamping
// to the capacities).
struct Counts {
  int candidates, refined, oriented, final_count;
};

struct Result {
  std::vector<Keypoint> keypoints;
  DescriptorFormat format = DescriptorFormat::opencv;
  // keypoints.size() rows of descriptor_bytes(format); empty when describe()
  // has not run since the last detect().
  std::vector<uint8_t> descriptors;
  Counts counts{};
  bool overflowed = false;  // a list was full: some extrema or keypoints were dropped
};

// The pyramid of the last build_pyramid (a test and debugging aid), each
// level packed width x height: `gauss` holds the n_octave_layers + 3
// Gaussian levels of an octave (DoG level i is G(i + 1) - G(i); the engine
// stores no DoG level).
struct PyramidLevels {
  struct Octave {
    int width = 0, height = 0;
    std::vector<float> gauss;
  };
  std::vector<Octave> octaves;
  int fused_from = 0;           // first octave built by the one-launch small-octave kernel (octaves.size(): none)
  bool fused_possible = false;  // the engine may use that kernel (sm_90+, unrolled radii, CS_SIFT_FUSED not 0)
  int fused_blocks = 0;         // blocks of its cluster (16, or 8 where 16 cannot run or CS_SIFT_CLUSTER=8)
};

// When a kernel of the last run() ended (CS_SIFT_TRACE=1 when the engine
// is made: a timing event after each kernel, which also keeps kernels from
// overlapping the one before them). A tuning aid for the critical path.
struct TraceMark {
  std::string kernel;
  std::string branch;  // the stream it was enqueued on: main, chain, upper, side
  double end_ms;       // from the frame's start (before its first kernel)
};

// One engine serves one stream of frames at a time (not thread-safe); the
// rank sort is quadratic in the keypoint count (a few microseconds for the
// thousands of a video frame, far more for hundreds of thousands).
class CudaSift {
 public:
  // Throws CudaError when CUDA is absent or `device` does not exist, and
  // std::invalid_argument for bad parameters.
  CudaSift(const Params &params, int device, Capacity capacity = {});
  ~CudaSift();
  CudaSift(const CudaSift &) = delete;
  CudaSift &operator=(const CudaSift &) = delete;

  const Params &params() const;
  int device() const;

  // Stage 1: pyramids of `image` (the image may be reused once the stream
  // has passed this call). The first octave's sides are limited to 32767
  // (inputs up to 16383 pixels a side when doubling); larger images throw
  // std::invalid_argument.
  void build_pyramid(const DeviceImage &image, StreamHandle stream);
  // Stage 2: keypoints of the last pyramid, final list in canonical order.
  void detect(StreamHandle stream);
  // Stage 3: descriptors of the final list in `format`.
  void describe(DescriptorFormat format, StreamHandle stream);
  // All three, in one graph per frame size and format. Its kernels can be
  // ordered on the engine's streams in three ways, and the small octaves'
  // one-launch cluster can start at two octaves, the same results every
  // way; which plan is fastest depends on the size and the GPU, so the
  // first frames of each size time each in turn (FramePlanTuner::kTimedFrames
  // of each) and the fastest is kept (CS_SIFT_ORDER=0, 1 or 2 and
  // CS_SIFT_CLUSTER_START=0 or 1, when the engine is made, fix them).
  void run(const DeviceImage &image, DescriptorFormat format, StreamHandle stream);
  // The frame order run() uses for the current size: 0, 1 or 2, -1 while
  // the plans are still being timed.
  int frame_order() const;
  // The first octave run()'s cluster builds for the current size (the
  // octave count: none), -1 while the plans are still being timed.
  int small_octaves_from() const;

  // Where the next frame of a stream on another engine is best started:
  // an event recorded by each run() once the frame's first octave is built,
  // or null (start at once). Two frames building first octaves at once
  // share the L2, which holds about one such octave's levels at a time from
  // 1080p up (with the doubling): there the next frame's pyramid starts as
  // this frame's first octave is done, beside its smaller octaves, extrema
  // and descriptors. The caller's stream for the next frame waits on it.
  EventHandle next_frame_start() const;

  // Device results of the last stages (valid once the stream has run them):
  // final_count() points at one int; keypoints() at keypoint_capacity()
  // entries of which the first *final_count() are the result; descriptors()
  // at as many rows of descriptor_bytes(format).
  const int *device_final_count() const;
  const Keypoint *device_keypoints() const;
  const void *device_descriptors() const;
  int keypoint_capacity() const;
  int candidate_capacity() const;

  // Waits for the stream and copies the results to the host.
  Result download(StreamHandle stream);
  // Waits for the stream and copies the last pyramid to the host (tests, debugging).
  PyramidLevels download_pyramid(StreamHandle stream);
  // Waits for the last run() and gives its timeline (empty unless tracing).
  std::vector<TraceMark> trace();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace cs::sift
