// nvcodec's memory:CUDAMemory (NVDEC decoders, cudaupload) as input of the
// SIFT elements. Built only with gstreamer-cuda-1.0 and CUDA
// (CS_SIFT_NVCODEC=1); otherwise the caps are not offered and no memory is
// nvcodec's.
//
// GStreamer 1.22's GstCudaMemory lives in the CUDA context its element
// holds: nvcodec's own (made with cuCtxCreate) unless a neighbour offered
// one (answer_cuda_context_query: ours, the CUDA runtime's primary context
// our engine runs in). A kernel may not read another context's allocation;
// a copy between contexts may (cuMemcpy3DPeerAsync). So where nvcodec took
// our context, the elements read (sift) and draw (siftoverlay) its memory in
// place; where it kept its own, they copy the planes device-to-device into
// their own memory on their stream (no trip through the host; a 1080p luma
// plane is 2 MB). 1.22's memory has no stream or fence to wait on: nvcodec
// finishes its writes before it pushes a frame, and mapping it for CUDA
// reads uploads any pending host writes synchronously; in the other
// direction our stream is waited for before the memory is given back.
#pragma once

#include <gst/cudasensing/gstcsbasetransform.h>
#include <gst/video/video.h>

#include <cstddef>
#include <cstdint>

#include "common/cuda_runtime.h"
#include "sift-formats.h"

#ifndef CS_SIFT_NVCODEC
#define CS_SIFT_NVCODEC 0
#endif

#define GST_CAPS_FEATURE_MEMORY_NVCODEC_CUDA "memory:CUDAMemory"

// The caps of `formats` in nvcodec's memory, followed by "; ", or nothing in
// a build without gstcuda: spliced into the elements' pad templates.
#if CS_SIFT_NVCODEC
#define SIFT_NVCODEC_CAPS(formats) GST_VIDEO_CAPS_MAKE_WITH_FEATURES(GST_CAPS_FEATURE_MEMORY_NVCODEC_CUDA, formats) "; "
#else
#define SIFT_NVCODEC_CAPS(formats) ""
#endif

// The frames sift and its stage elements take (the luma plane is used): in
// our device memory or nvcodec's (CUDA backend), or in system memory (both
// backends).
#define SIFT_CAPS                                                                            \
  GST_VIDEO_CAPS_MAKE_WITH_FEATURES(GST_CAPS_FEATURE_MEMORY_CS_DEVICE, SIFT_FORMATS) "; " \
  SIFT_NVCODEC_CAPS(SIFT_FORMATS)                                                          \
  GST_VIDEO_CAPS_MAKE(SIFT_FORMATS)

namespace gstsift {

// Whether caps with these features carry device memory (ours or nvcodec's):
// offered only on the CUDA backend.
bool is_device_memory_feature(const GstCapsFeatures *features);

// Whether `mem` is nvcodec's GstCudaMemory (always false without gstcuda).
bool is_nvcodec_memory(GstMemory *mem);

// nvcodec's memory mapped for CUDA access while this lives: its device
// address, its own video layout (plane offsets and strides) and CUDA context.
class NvcodecFrame {
 public:
  // `access`: GST_MAP_READ, or GST_MAP_READWRITE to write into it on the
  // device. Throws std::runtime_error when the memory is on another device
  // than `device` (naming both) or cannot be mapped.
  NvcodecFrame(GstMemory *mem, int device, GstMapFlags access);
  ~NvcodecFrame();
  NvcodecFrame(const NvcodecFrame &) = delete;
  NvcodecFrame &operator=(const NvcodecFrame &) = delete;
  uint8_t *data() const { return data_; }
  size_t size() const { return map_.size; }
  const GstVideoInfo &info() const { return info_; }
  void *context() const { return context_; }  // nvcodec's CUcontext
  // Whether that context is ours (the runtime's primary context of the
  // device, which nvcodec takes when we offer it): our kernels may then read
  // and write the memory where it is.
  bool in_our_context() const;

 private:
  GstMemory *mem_;
  int device_ = 0;
  GstMapInfo map_{};
  GstVideoInfo info_{};
  void *context_ = nullptr;
  uint8_t *data_ = nullptr;
};

// Answers `query` (true) when it asks for a GST_CUDA_CONTEXT_TYPE context
// and `element` runs (or, before it starts, will run) on the CUDA backend:
// with our CUDA runtime's primary context of its device (device-id, or 0
// for any), wrapped for nvcodec. nvcodec's elements ask their neighbours for
// one before they make their own: decoders when they open (NULL to READY,
// before any element has started), cudaupload and cudadownload when they
// start. Given ours, they allocate their memory in it, and our kernels read
// and draw into their frames where they are. False for other queries, on
// the CPU backend and in builds without gstcuda.
bool answer_cuda_context_query(GstCsBaseTransform *element, GstQuery *query);

// Enqueues on `stream` (of our context on the current device) a copy of
// `rows` rows of `row_bytes` from `src` to `dst`, device memory of the
// CUcontexts `src_context` and `dst_context` (null: ours).
void copy_rows_between_contexts_async(void *dst, size_t dst_pitch, void *dst_context, const void *src,
                                      size_t src_pitch, void *src_context, size_t row_bytes, int rows,
                                      cs::StreamHandle stream);

}  // namespace gstsift
