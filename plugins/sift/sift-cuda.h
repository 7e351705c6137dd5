// The CUDA side shared by sift and the staged elements (siftpyramid,
// siftdetect, siftdescribe): one cs::sift::CudaSift engine on one element's
// stream, fed from a video frame in either memory, and its results turned
// into a GstSiftFeaturesMeta (with the grid filter of features_cpu, so that
// both backends filter alike).
#pragma once

#include <gst/video/video.h>

#include <cstdint>
#include <memory>

#include "gst/cudasensing/sift/gstsiftfeaturesmeta.h"
#include "gstcs-gpu.h"
#include "sift/sift_cuda.h"

namespace gstsift {

struct PlaneLayout;

// The grid filter's properties (off when any is 0).
struct GridFilter {
  int cols = 0, rows = 0, max_per_cell = 0;
};

class CudaEngine {
 public:
  // Throws cs::CudaError (no device, no memory) and std::invalid_argument
  // (parameters the engine refuses, named).
  CudaEngine(const cs::sift::Params &params, int device);
  ~CudaEngine();
  CudaEngine(const CudaEngine &) = delete;
  CudaEngine &operator=(const CudaEngine &) = delete;

  int device() const { return gpu_.device(); }
  cs::StreamHandle stream() const { return gpu_.stream(); }
  cs::sift::CudaSift &sift() { return sift_; }

  // Enqueues the pyramid of the frame's luma (GRAY8, NV12, I420: the Y plane
  // in place; RGBA, BGRA, BGRx: luma computed on the device first). The
  // buffer may be in system memory (plane 0 only is uploaded) or in the
  // project's device memory (read where it is). Throws std::runtime_error for a buffer too
  // small for `info`.
  void build_pyramid(GstBuffer *frame, const GstVideoInfo &info);
  // All three stages on the frame.
  void run(GstBuffer *frame, const GstVideoInfo &info, cs::sift::DescriptorFormat format);
  // Waits for the stream and copies the results to the host: the one
  // synchronisation of a frame.
  cs::sift::Result download() { return sift_.download(gpu_.stream()); }

 private:
  // Reads the frame's plane 0 onto the device and calls stage(luma image)
  // while the read is held.
  template <class Stage>
  void with_luma(GstBuffer *frame, const GstVideoInfo &info, Stage &&stage);
  cs::sift::DeviceImage luma_of(const uint8_t *plane, const PlaneLayout &layout, const GstVideoInfo &info);

  gstcs::ElementGpu gpu_;
  cs::sift::CudaSift sift_;
  // Luma of packed RGB frames: one plane of the frame's size, reused.
  void *luma_ = nullptr;
  size_t luma_bytes_ = 0;
};

// Adds the features meta for a width x height frame: the result's keypoints
// and descriptors (canonical order, as the engine gives them), the grid
// filter applied; logs for `element` (a warning when the engine's lists
// overflowed). Returns the number of keypoints attached.
size_t attach_features(GstElement *element, GstBuffer *frame, guint width, guint height,
                       const cs::sift::Result &result, const GridFilter &grid);

// The element formats and the engine's are numbered alike.
inline cs::sift::DescriptorFormat engine_format(GstSiftDescriptorFormat f) {
  return cs::sift::DescriptorFormat(int(f));
}

}  // namespace gstsift
