// Per-GPU resources shared by everything in the process that uses that GPU:
// the device-memory block cache and a stream for lazy host<->device mirroring.
// Page-locked host staging is one cache for the process (portable pinned
// memory is usable from every device).
#pragma once

#include <memory>

#include "common/block_cache.h"
#include "common/cuda_runtime.h"

namespace cs {

class DeviceResources {
 public:
  // The resources of `device` (created on first use; throws CudaError when
  // the device does not exist or CUDA is absent).
  static DeviceResources &get(int device);

  int device() const { return device_; }
  BlockCache &device_cache() { return *device_cache_; }
  // Stream used when a buffer is mirrored on demand (CPU map of device data).
  StreamHandle mirror_stream() const { return mirror_stream_.get(); }

 private:
  explicit DeviceResources(int device);
  int device_;
  std::unique_ptr<BlockCache> device_cache_;
  Stream mirror_stream_;
};

// Process-wide cache of page-locked host blocks.
BlockCache &pinned_cache();

}  // namespace cs
