// The CUDA side of a processing element, shared by every element of the
// project so that each one handles memory the same way:
//   - its own stream (kernels of consecutive buffers queue up on it, and
//     transfers of other elements overlap on theirs);
//   - input in either memory: device memory is read in place (the stream
//     waits for the producer's event), system memory is copied into a
//     scratch device block, by DMA from its own pages when they are
//     page-locked, else staged up through page-locked chunks by the
//     staging thread; either way the input is held until it is copied;
//   - output in device memory. Downstream that negotiated system memory gets
//     the same buffer: GstCsMemory maps for the CPU by downloading itself.
#pragma once

#include <gst/base/gstbasetransform.h>
#include <gst/cudasensing/gstcsbasetransform.h>
#include <gst/cudasensing/gstcsmemory.h>

#include <deque>
#include <memory>

#include "common/cuda_runtime.h"
#include "common/mirrored_buffer.h"
#include "common/staged_copy.h"

namespace gstcs {

// Whether the device may DMA straight from `map`, a read mapping of `mem`
// (page-locked memory), rather than staging it.
bool direct_dma_source(GstMemory *mem, const GstMapInfo &map);

class ElementGpu {
 public:
  // Throws cs::CudaError when the device cannot be used.
  explicit ElementGpu(int device);
  ~ElementGpu();
  ElementGpu(const ElementGpu &) = delete;
  ElementGpu &operator=(const ElementGpu &) = delete;

  int device() const { return device_; }
  cs::StreamHandle stream() const { return stream_.get(); }

  // A read-only device view of a whole buffer for work enqueued on stream().
  // Keep it alive until that work is enqueued; on destruction it records the
  // read, so the memory is not reused before the work completes.
  class Input {
   public:
    Input(Input &&) noexcept;
    ~Input();
    const void *data() const { return data_; }
    size_t size() const { return size_; }

   private:
    friend class ElementGpu;
    Input() = default;
    const void *data_ = nullptr;
    size_t size_ = 0;
    cs::StreamHandle stream_ = nullptr;
    std::shared_ptr<cs::MirroredBuffer> buffer_;  // the memory read from
  };
  Input read(GstBuffer *buffer);

  // A new buffer of `size` bytes of device memory.
  GstBuffer *new_output(size_t size);
  // Device pointer of an output for writing on stream() (old contents
  // discarded); end_output() marks it ready once the writes are enqueued.
  void *begin_output(GstBuffer *output);
  void end_output(GstBuffer *output);

  // Output allocation for GstBaseTransform::prepare_output_buffer: a device
  // buffer of `size` bytes carrying `input`'s metadata.
  GstFlowReturn prepare_output(GstBaseTransform *trans, GstBuffer *input, size_t size, GstBuffer **output);

  void synchronize() { stream_.synchronize(); }

 private:
  // Input buffers whose pages are still being read (by DMA or the staging thread).
  struct HeldInput {
    cs::Event copied;
    GstBuffer *buffer;
  };
  void release_held_inputs(bool wait);

  int device_;
  cs::Stream stream_;
  std::deque<HeldInput> held_;
  GstAllocator *allocator_ = nullptr;
  std::unique_ptr<cs::StagedUploader> stager_;  // created on first system-memory input
};

// A device block an element reuses from buffer to buffer for work on its
// stream, grown when a buffer needs more (after the stream's earlier work,
// which may still use it). Declare it after the ElementGpu it serves: it is
// freed once that stream has finished with it.
class DeviceScratch {
 public:
  explicit DeviceScratch(ElementGpu &gpu) : gpu_(gpu) {}
  ~DeviceScratch();
  DeviceScratch(const DeviceScratch &) = delete;
  DeviceScratch &operator=(const DeviceScratch &) = delete;
  // At least `bytes` of device memory (contents undefined when it grows).
  void *reserve(size_t bytes);

 private:
  ElementGpu &gpu_;
  void *ptr_ = nullptr;
  size_t bytes_ = 0;
};

// Start and stop of an element's CUDA side, the same in every element:
// start_gpu makes `gpu` for the element's device-id (posting the driver's
// reason on the element and returning FALSE when it cannot); finish_gpu
// (gpu may be null) waits for the work still queued before the element's
// state goes; a failure is logged, since stopping cannot fail.
gboolean start_gpu(GstCsBaseTransform *element, const char *doing, std::unique_ptr<ElementGpu> *gpu);
void finish_gpu(GstCsBaseTransform *element, ElementGpu *gpu);

}  // namespace gstcs
