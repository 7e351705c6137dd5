// Per-GPU resources shared by everything in the process that uses that GPU:
// the device-memory block cache and a stream for lazy host<->device mirroring.
// Page-locked host staging is one cache for the process (portable pinned
// memory is usable from every device).
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <vector>

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

  // A device block (and its page-locked mirror, if any) from the cache;
  // blocks whose deferred release has completed are reclaimed first.
  BlockCache::Block acquire_device_block(size_t bytes);
  // Returns the blocks to their caches once every event in `pending` has
  // completed, without blocking the caller: a buffer dropped while a kernel
  // still reads it must not be handed out again before the kernel is done.
  void release_after(BlockCache::Block device_block, BlockCache::Block host_block, std::vector<Event> pending);
  // Reclaims finished deferred releases (all of them, waiting, when `wait`).
  void reap(bool wait);

  // Events are recycled too (creating one per buffer is measurable at small
  // buffer sizes). A returned event must have completed or never been used.
  Event take_event();
  void return_event(Event event);

 private:
  explicit DeviceResources(int device);
  struct Deferred {
    BlockCache::Block device_block, host_block;
    std::vector<Event> pending;
  };
  int device_;
  std::unique_ptr<BlockCache> device_cache_;
  Stream mirror_stream_;
  std::mutex deferred_mutex_;
  std::deque<Deferred> deferred_;
  std::vector<Event> spare_events_;
};

// Process-wide cache of page-locked host blocks.
BlockCache &pinned_cache();

// A block of the process's page-locked staging, given back when it goes: its
// owner waits for the copies that use it first.
struct StagingBlock {
  explicit StagingBlock(size_t bytes) : block(pinned_cache().acquire(bytes)) {}
  ~StagingBlock() { pinned_cache().release(block); }
  StagingBlock(const StagingBlock &) = delete;
  StagingBlock &operator=(const StagingBlock &) = delete;
  uint8_t *bytes() const { return static_cast<uint8_t *>(block.ptr); }
  BlockCache::Block block;
};

}  // namespace cs
