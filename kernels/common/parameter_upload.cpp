#include "common/parameter_upload.h"

#include <algorithm>
#include <cstring>

namespace cs {

namespace {
constexpr size_t kMinimumCapacity = 4096;  // bytes: most calls never grow a slot
}

ParameterUploader::ParameterUploader(int device) : device_(device) {
  for (Slot &s : slots_) s.uploaded = Event(device);
}

ParameterUploader::~ParameterUploader() {
  for (Slot &s : slots_) {
    if (s.pending) {
      try {
        s.uploaded.synchronize();
      } catch (const CudaError &) {  // no throw from a destructor
      }
    }
    pinned_free(s.staging);
    device_free(s.device, device_);
  }
}

void *ParameterUploader::upload(const void *src, size_t bytes, StreamHandle stream) {
  DeviceGuard guard(device_);
  Slot &slot = slots_[next_slot_];
  next_slot_ ^= 1;
  if (slot.pending) slot.uploaded.synchronize();  // its staging may be rewritten now
  slot.pending = false;
  if (bytes > slot.capacity) {
    // Rare (the arrays grew): the work that read the old device copy must be
    // done before it goes.
    stream_synchronize(stream);
    pinned_free(slot.staging);
    device_free(slot.device, device_);
    slot.staging = slot.device = nullptr;
    slot.capacity = 0;
    const size_t capacity = std::max(bytes, kMinimumCapacity);
    slot.staging = pinned_alloc(capacity);
    slot.device = device_alloc(capacity, device_);
    slot.capacity = capacity;
  }
  if (bytes > 0) {
    std::memcpy(slot.staging, src, bytes);
    copy_from_page_locked_async(slot.device, slot.staging, bytes, stream);
    slot.uploaded.record(stream);
    slot.pending = true;
  }
  return slot.device;
}

}  // namespace cs
