// A cache of equally sized memory blocks, so that streaming code never calls
// cudaMalloc/cudaHostAlloc per buffer: a freed block waits here for the next
// request of the same rounded size. Used for device memory (one cache per
// GPU) and for page-locked host staging (one cache per process).
#pragma once

#include <cstddef>
#include <functional>
#include <list>
#include <mutex>

namespace cs {

class BlockCache {
 public:
  using AllocFn = std::function<void *(size_t)>;
  using FreeFn = std::function<void(void *)>;

  struct Block {
    void *ptr = nullptr;
    size_t size = 0;  // rounded size actually allocated
  };

  struct Stats {
    size_t hits = 0;
    size_t misses = 0;
    size_t cached_bytes = 0;
    size_t cached_blocks = 0;
    size_t live_bytes = 0;
  };

  // Keeps at most `max_cached_bytes` of released blocks; beyond that the
  // least recently released blocks are freed.
  BlockCache(AllocFn alloc, FreeFn free, size_t max_cached_bytes);
  ~BlockCache();
  BlockCache(const BlockCache &) = delete;
  BlockCache &operator=(const BlockCache &) = delete;

  // A block of at least `bytes`. When the allocation fails with out of
  // memory, cached blocks are freed and the allocation is tried once more.
  Block acquire(size_t bytes);
  void release(Block block);
  // Frees every cached block.
  void trim();
  Stats stats() const;

  // Size classes: multiples of 1/16 of the next power of two (at most 6.25%
  // slack) and of 512 bytes, so slightly different sizes share blocks.
  static size_t round_size(size_t bytes);

 private:
  AllocFn alloc_;
  FreeFn free_;
  size_t max_cached_bytes_;
  mutable std::mutex mutex_;
  std::list<Block> free_blocks_;  // oldest release first
  Stats stats_;
};

}  // namespace cs
