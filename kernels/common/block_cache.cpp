#include "common/block_cache.h"

#include <vector>

#include "common/cuda_runtime.h"

namespace cs {

BlockCache::BlockCache(AllocFn alloc, FreeFn free, size_t max_cached_bytes)
    : alloc_(std::move(alloc)), free_(std::move(free)), max_cached_bytes_(max_cached_bytes) {}

BlockCache::~BlockCache() { trim(); }

size_t BlockCache::round_size(size_t bytes) {
  if (bytes == 0) bytes = 1;
  size_t pow2 = 1;
  while (pow2 < bytes) pow2 <<= 1;
  size_t granule = pow2 / 16;
  if (granule < 512) granule = 512;
  return (bytes + granule - 1) / granule * granule;
}

BlockCache::Block BlockCache::acquire(size_t bytes) {
  const size_t size = round_size(bytes);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    // Most recently released first: its pages are likeliest to be warm.
    for (auto it = free_blocks_.rbegin(); it != free_blocks_.rend(); ++it) {
      if (it->size == size) {
        Block b = *it;
        free_blocks_.erase(std::next(it).base());
        stats_.hits++;
        stats_.cached_bytes -= size;
        stats_.cached_blocks--;
        stats_.live_bytes += size;
        return b;
      }
    }
    stats_.misses++;
  }
  void *ptr = nullptr;
  try {
    ptr = alloc_(size);
  } catch (const CudaError &e) {
    if (!e.out_of_memory()) throw;
    trim();
    ptr = alloc_(size);  // a second failure carries its own message
  }
  std::lock_guard<std::mutex> lock(mutex_);
  stats_.live_bytes += size;
  return Block{ptr, size};
}

void BlockCache::release(Block block) {
  if (!block.ptr) return;
  std::vector<Block> to_free;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stats_.live_bytes -= block.size;
    free_blocks_.push_back(block);
    stats_.cached_bytes += block.size;
    stats_.cached_blocks++;
    while (stats_.cached_bytes > max_cached_bytes_ && !free_blocks_.empty()) {
      to_free.push_back(free_blocks_.front());
      stats_.cached_bytes -= free_blocks_.front().size;
      stats_.cached_blocks--;
      free_blocks_.pop_front();
    }
  }
  for (const Block &b : to_free) free_(b.ptr);
}

void BlockCache::trim() {
  std::list<Block> all;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    all.swap(free_blocks_);
    stats_.cached_bytes = 0;
    stats_.cached_blocks = 0;
  }
  for (const Block &b : all) free_(b.ptr);
}

BlockCache::Stats BlockCache::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

}  // namespace cs
