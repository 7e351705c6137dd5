#include "gstcs-gpu.h"

#include <stdexcept>

#include "common/device_resources.h"
#include "gstcs-cxx.h"

namespace gstcs {

bool direct_dma_source(GstMemory *mem, const GstMapInfo &map) {
  return gst_is_cs_pinned_memory(mem) || cs::is_pinned_host(map.data);
}

ElementGpu::ElementGpu(int device) : device_(device), stream_(device) {
  GError *error = nullptr;
  allocator_ = gst_cs_allocator_get(device, &error);
  if (!allocator_) {
    std::string why = error ? error->message : "no allocator";
    g_clear_error(&error);
    throw cs::CudaError(-1, why);
  }
}

DeviceScratch::~DeviceScratch() {
  if (!ptr_) return;
  try {
    gpu_.synchronize();  // nothing may still use the block when it is freed
  } catch (const std::exception &) {
  }
  cs::device_free(ptr_, gpu_.device());
}

void *DeviceScratch::reserve(size_t bytes) {
  if (bytes_ >= bytes) return ptr_;
  gpu_.synchronize();  // the previous buffers' work may still use it
  cs::device_free(ptr_, gpu_.device());
  ptr_ = nullptr;
  bytes_ = 0;
  ptr_ = cs::device_alloc(bytes, gpu_.device());
  bytes_ = bytes;
  return ptr_;
}

ElementGpu::~ElementGpu() {
  try {
    stream_.synchronize();
    release_held_inputs(true);
  } catch (const std::exception &) {
  }
  stager_.reset();
  gst_object_unref(allocator_);
}

ElementGpu::Input::Input(Input &&o) noexcept
    : data_(o.data_), size_(o.size_), stream_(o.stream_), buffer_(std::move(o.buffer_)) {}

ElementGpu::Input::~Input() {
  if (!buffer_) return;
  try {
    buffer_->end_device_read(stream_);
  } catch (const std::exception &) {
    // The device failed; the element reports the error from its own call.
  }
}

void ElementGpu::release_held_inputs(bool wait) {
  while (!held_.empty()) {
    HeldInput &front = held_.front();
    if (wait)
      front.copied.synchronize();
    else if (!front.copied.done())
      break;
    gst_buffer_unref(front.buffer);
    cs::DeviceResources::get(device_).return_event(std::move(front.copied));
    held_.pop_front();
  }
}

ElementGpu::Input ElementGpu::read(GstBuffer *buffer) {
  release_held_inputs(false);
  Input in;
  in.stream_ = stream_.get();
  in.size_ = gst_buffer_get_size(buffer);
  cs::DeviceGuard guard(device_);
  GstMemory *first = gst_buffer_n_memory(buffer) > 0 ? gst_buffer_peek_memory(buffer, 0) : nullptr;
  if (gst_buffer_n_memory(buffer) == 1 && gst_is_cs_memory(first) && gst_cs_memory_get_device_id(first) == device_) {
    in.buffer_ = mirrored_shared(first);
    in.data_ = static_cast<const guint8 *>(in.buffer_->begin_device_read(in.stream_)) + first->offset;
    return in;
  }
  // Anything else is gathered into one scratch block, on this stream.
  auto scratch = std::make_shared<cs::MirroredBuffer>(device_, in.size_ > 0 ? in.size_ : 1);
  auto *dst = static_cast<guint8 *>(scratch->begin_device_write(in.stream_, true));
  gsize offset = 0;
  bool reads_host_pages = false;
  for (guint i = 0; i < gst_buffer_n_memory(buffer); ++i) {
    GstMemory *mem = gst_buffer_peek_memory(buffer, i);
    if (gst_is_cs_memory(mem) && gst_cs_memory_get_device_id(mem) == device_) {
      cs::MirroredBuffer &src = mirrored(mem);
      cs::copy_async(dst + offset, static_cast<const guint8 *>(src.begin_device_read(in.stream_)) + mem->offset,
                     mem->size, in.stream_);
      src.end_device_read(in.stream_);
      offset += mem->size;
      continue;
    }
    GstMapInfo map;
    if (!gst_memory_map(mem, &map, GST_MAP_READ)) throw std::runtime_error("cannot map an input buffer");
    if (direct_dma_source(mem, map)) {
      cs::copy_async(dst + offset, map.data, map.size, in.stream_);
    } else {
      if (!stager_) stager_ = std::make_unique<cs::StagedUploader>(device_);
      stager_->upload(dst + offset, map.data, map.size, in.stream_);
    }
    reads_host_pages = true;
    offset += map.size;
    gst_memory_unmap(mem, &map);
  }
  if (reads_host_pages) {
    // The DMA (or the staging thread) reads the input's pages after this
    // returns: they are held until the copy is done.
    cs::Event copied = cs::DeviceResources::get(device_).take_event();
    copied.record(in.stream_);
    held_.push_back({std::move(copied), gst_buffer_ref(buffer)});
  }
  scratch->end_device_write(in.stream_);
  in.data_ = scratch->begin_device_read(in.stream_);
  in.buffer_ = std::move(scratch);
  return in;
}

GstBuffer *ElementGpu::new_output(size_t size) {
  GError *error = nullptr;
  GstMemory *mem = gst_cs_allocator_alloc(allocator_, size, &error);
  if (!mem) {
    cs::CudaError failure(cs::CudaError::kOutOfMemory, error ? error->message : "device allocation failed");
    g_clear_error(&error);
    throw failure;
  }
  GstBuffer *buffer = gst_buffer_new();
  gst_buffer_append_memory(buffer, mem);
  return buffer;
}

void *ElementGpu::begin_output(GstBuffer *output) {
  GstMemory *mem = gst_buffer_peek_memory(output, 0);
  if (gst_buffer_n_memory(output) != 1 || !gst_is_cs_memory(mem))
    throw std::logic_error("output buffer is not a single block of device memory");
  return static_cast<guint8 *>(mirrored(mem).begin_device_write(stream_.get(), true)) + mem->offset;
}

void ElementGpu::end_output(GstBuffer *output) {
  mirrored(gst_buffer_peek_memory(output, 0)).end_device_write(stream_.get());
}

GstFlowReturn ElementGpu::prepare_output(GstBaseTransform *trans, GstBuffer *input, size_t size,
                                         GstBuffer **output) {
  return guard_flow(GST_ELEMENT(trans), "Allocating device memory", [&] {
    *output = new_output(size);
    GST_BASE_TRANSFORM_GET_CLASS(trans)->copy_metadata(trans, input, *output);
    return GST_FLOW_OK;
  });
}

gboolean start_gpu(GstCsBaseTransform *element, const char *doing, std::unique_ptr<ElementGpu> *gpu) {
  return guard_bool(GST_ELEMENT(element), doing, [&] {
    *gpu = std::make_unique<ElementGpu>(gst_cs_base_transform_get_device_id(element));
    return TRUE;
  });
}

void finish_gpu(GstCsBaseTransform *element, ElementGpu *gpu) {
  if (!gpu) return;
  try {
    gpu->synchronize();
  } catch (const std::exception &e) {
    GST_WARNING_OBJECT(element, "while stopping: %s", e.what());
  }
}

}  // namespace gstcs
