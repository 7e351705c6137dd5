// Frames that `sift` holds in flight, on either backend: enqueue() starts a
// frame's extraction and holds the frame; once frames_in_flight() frames are
// held, finish_oldest() returns the oldest one with its features meta. Frames
// leave in the order they came, with the features they would have had one at
// a time. The element's holding logic (latency, draining before events,
// dropping on flush) is written once against this interface.
#pragma once

#include <gst/gst.h>
#include <gst/video/video.h>

#include <deque>
#include <future>
#include <memory>

#include <opencv2/core.hpp>

#include "gst/cudasensing/sift/gstsiftfeaturesmeta.h"
#include "sift/features_cpu.h"
#include "sift/sift_cuda.h"

namespace gstsift {

// frames-in-flight=0 (auto): 2 on CUDA (a second frame's kernels while the
// first one's results come down; more gain nothing at 1080p); on the CPU
// half the usable cores, 2 to `most` (OpenCV's SIFT keeps about 1.3 cores
// busy on one frame; on 16 cores 8 frames ran 3.3 times as fast as 1), and
// no more frames than a quarter of `host_memory` holds the pyramids of
// (`pyramid_bytes` a frame; 0 = not known yet), at least 1.
int auto_frames_in_flight(bool cuda, unsigned cores, int most, size_t pyramid_bytes = 0, size_t host_memory = 0);

class FramesInFlight {
 public:
  virtual ~FramesInFlight() = default;
  virtual int frames_in_flight() const = 0;
  virtual size_t held() const = 0;
  // Every slot has a frame: finish_oldest() before the next enqueue().
  bool full() const { return held() == size_t(frames_in_flight()); }
  // Starts the extraction from `frame` (taken; writable) with the output
  // settings of `params` (descriptor format, grid filter) and holds the
  // frame. Throws (the frame is dropped then); not when full().
  virtual void enqueue(GstBuffer *frame, const GstVideoInfo &info, const sift_cpu::Params &params) = 0;
  // The oldest held frame with its features meta attached (the caller's
  // reference); waits for its extraction. Throws what the extraction threw
  // (the frame is dropped then); not when held() == 0.
  virtual GstBuffer *finish_oldest(GstElement *element) = 0;
  // Drops the held frames (flush, stop) once nothing reads them any more.
  virtual void drop_held() = 0;
};

// The frame's luma as an 8-bit gray image (sift-formats.h): a view of the
// mapped frame where plane 0 is the luma, OpenCV's gray of RGB frames, else
// the Y samples' 8 most significant bits.
cv::Mat frame_luma(const GstVideoFrame &frame);

// OpenCV's SIFT on the luma of `frame` (mapped for reading here). Throws
// std::runtime_error when the buffer is too small for `info`.
sift_cpu::Features extract_on_cpu(GstBuffer *frame, const GstVideoInfo &info, const sift_cpu::Params &params);

// The CPU backend with more than one frame in flight: each frame's OpenCV
// SIFT runs on a thread of its own while the element reads the next frames
// (OpenCV's SIFT keeps only part of a multi-core host busy on one image).
class CpuFramesInFlight : public FramesInFlight {
 public:
  explicit CpuFramesInFlight(int frames_in_flight) : frames_in_flight_(frames_in_flight) {}
  ~CpuFramesInFlight() override { drop_held(); }
  CpuFramesInFlight(const CpuFramesInFlight &) = delete;
  CpuFramesInFlight &operator=(const CpuFramesInFlight &) = delete;

  int frames_in_flight() const override { return frames_in_flight_; }
  // A new count, once no frame is held (at a caps change: the held frames
  // have left before it); false, keeping the count, while frames are held.
  bool set_frames_in_flight(int frames_in_flight);
  size_t held() const override { return held_.size(); }
  void enqueue(GstBuffer *frame, const GstVideoInfo &info, const sift_cpu::Params &params) override;
  GstBuffer *finish_oldest(GstElement *element) override;
  void drop_held() override;

 private:
  struct HeldFrame {
    GstBuffer *frame;
    guint width, height;
    GstSiftDescriptorFormat format;
    std::future<sift_cpu::Features> features;
  };
  int frames_in_flight_;
  std::deque<HeldFrame> held_;  // oldest first
};

class CudaFramePipeline;

// The CUDA backend's engines (CudaFramePipeline, sift-cuda.h) behind the
// same interface.
class CudaFramesInFlight : public FramesInFlight {
 public:
  // Throws as CudaFramePipeline's constructor.
  CudaFramesInFlight(const cs::sift::Params &params, int device, int frames_in_flight);
  ~CudaFramesInFlight() override;
  CudaFramesInFlight(const CudaFramesInFlight &) = delete;
  CudaFramesInFlight &operator=(const CudaFramesInFlight &) = delete;

  int device() const;
  int frames_in_flight() const override;
  size_t held() const override;
  void enqueue(GstBuffer *frame, const GstVideoInfo &info, const sift_cpu::Params &params) override;
  GstBuffer *finish_oldest(GstElement *element) override;
  void drop_held() override;

 private:
  std::unique_ptr<CudaFramePipeline> engines_;
};

}  // namespace gstsift
