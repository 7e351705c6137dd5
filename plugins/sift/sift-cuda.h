// The CUDA side shared by sift and the staged elements (siftpyramid,
// siftdetect, siftdescribe): one cs::sift::CudaSift engine on one element's
// stream, fed from a video frame in either memory, and its results turned
// into a GstSiftFeaturesMeta (with the grid filter of features_cpu, so that
// both backends filter alike).
#pragma once

#include <gst/video/video.h>

#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

#include "gst/cudasensing/sift/gstsiftfeaturesmeta.h"
#include "gstcs-gpu.h"
#include "sift/sift_cuda.h"

namespace gstsift {

struct PlaneLayout;
class NvcodecFrame;

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

  // Enqueues the pyramid of the frame's luma (sift-formats.h: GRAY8, NV12,
  // I420 and the other formats whose plane 0 is the 8-bit luma are read in
  // place; RGB, packed YUV and wider samples give their luma on the device
  // first). The
  // buffer may be in system memory (plane 0 only is uploaded), in the
  // project's device memory (read where it is) or in nvcodec's
  // memory:CUDAMemory (plane 0 copied on the device, sift-nvcodec.h; the
  // frame may leave as soon as this returns). Throws std::runtime_error for
  // a buffer too small for `info`, or nvcodec memory on another device.
  void build_pyramid(GstBuffer *frame, const GstVideoInfo &info);
  // All three stages on the frame, which the caller holds until download()
  // or wait_for_reads() has returned: nvcodec's memory in our CUDA context
  // is read where it is then (no copy, no wait). With `after` (the engine
  // whose run() came last), the kernels start where it says the next frame
  // of a stream should (CudaSift::next_frame_start; a wait on the GPU).
  void run(GstBuffer *frame, const GstVideoInfo &info, cs::sift::DescriptorFormat format,
           const CudaEngine *after = nullptr);
  // Waits for the stream and copies the results to the host: the one
  // synchronisation of a frame.
  cs::sift::Result download() { return sift_.download(gpu_.stream()); }
  // Waits until the stream is past the frame given to run() (so that it can
  // be dropped without its results); errors are left to the next call.
  void wait_for_reads() noexcept;

 private:
  // Whether the caller holds the frame until the stream is past it.
  enum class FrameHold { none, until_download };
  // Reads the frame's plane 0 onto the device and calls stage(luma image)
  // while the read is held.
  template <class Stage>
  void with_luma(GstBuffer *frame, const GstVideoInfo &info, FrameHold hold, Stage &&stage);
  cs::sift::DeviceImage luma_of(const uint8_t *plane, const PlaneLayout &layout, const GstVideoInfo &info);
  // `rows` rows of a plane in nvcodec's memory (`from`, its layout there)
  // copied into nvcodec_plane_ (`to`); waits for the copy.
  const uint8_t *copy_nvcodec_plane(const NvcodecFrame &source, const PlaneLayout &from, const PlaneLayout &to,
                                    int rows);

  enum class NvcodecRead { none, in_place, copied };
  NvcodecRead nvcodec_read_ = NvcodecRead::none;  // how the last frame in nvcodec's memory was read (logged on change)
  gstcs::ElementGpu gpu_;
  cs::sift::CudaSift sift_;
  gstcs::DeviceScratch luma_{gpu_};           // luma of frames whose plane 0 is not the 8-bit luma
  gstcs::DeviceScratch nvcodec_plane_{gpu_};  // plane 0 of frames in nvcodec's memory
};

// The CUDA backend of `sift`: frames_in_flight engines, each on its own
// stream, used in turn, so that one frame's upload and kernels run while the
// element finishes an earlier frame. enqueue() enqueues a frame's work on the
// next engine and holds the frame; finish_oldest() downloads the oldest
// frame's results (its stream has had the enqueueing of the later frames to
// run, so the wait is short) and attaches the meta. Frames leave in the order
// they came. With one engine every frame is finished right after it is
// enqueued (no overlap, no added latency).
class CudaFramePipeline {
 public:
  // Throws as CudaEngine's constructor.
  CudaFramePipeline(const cs::sift::Params &params, int device, int frames_in_flight);
  ~CudaFramePipeline();  // drops the frames still held
  CudaFramePipeline(const CudaFramePipeline &) = delete;
  CudaFramePipeline &operator=(const CudaFramePipeline &) = delete;

  int device() const { return engines_.front()->device(); }
  int frames_in_flight() const { return int(engines_.size()); }
  size_t held() const { return held_.size(); }
  // Every engine has a frame: finish_oldest() before the next enqueue().
  bool full() const { return held_.size() == engines_.size(); }

  // Enqueues SIFT of `frame` (taken; writable) on the next engine and holds
  // it. Throws as CudaEngine::run (the frame is dropped then); not when full().
  void enqueue(GstBuffer *frame, const GstVideoInfo &info, cs::sift::DescriptorFormat format,
               const GridFilter &grid);
  // The oldest held frame with its features meta attached (the caller's
  // reference); waits for its engine's stream. Throws on a CUDA error (the
  // frame is dropped then); not when held() == 0.
  GstBuffer *finish_oldest(GstElement *element);
  // Drops the held frames (flush, stop), each once its engine's stream is
  // past it (nvcodec's memory has nothing to record our reads on).
  void drop_held();

 private:
  struct HeldFrame {
    GstBuffer *frame;
    CudaEngine *engine;  // where its work was enqueued
    guint width, height;
    GridFilter grid;
  };
  std::vector<std::unique_ptr<CudaEngine>> engines_;
  size_t next_engine_ = 0;
  std::deque<HeldFrame> held_;  // oldest first
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
