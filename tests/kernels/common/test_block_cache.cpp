// The block cache's policy, checked on the CPU with a counting allocator.
#include <gtest/gtest.h>

#include <cstdlib>
#include <set>

#include "common/block_cache.h"
#include "common/cuda_runtime.h"
#include "test_support.h"

namespace {

struct CountingHeap {
  size_t allocs = 0, frees = 0;
  std::set<void *> live;
  size_t fail_after = SIZE_MAX;  // throw out-of-memory from this allocation on
  cs::BlockCache make(size_t limit) {
    return cs::BlockCache(
        [this](size_t n) -> void * {
          if (allocs >= fail_after) throw cs::CudaError(cs::CudaError::kOutOfMemory, "fake out of memory");
          ++allocs;
          void *p = std::malloc(n);
          live.insert(p);
          return p;
        },
        [this](void *p) {
          ++frees;
          live.erase(p);
          std::free(p);
        },
        limit);
  }
};

TEST(BlockCache, RoundsToSizeClasses) {
  EXPECT_EQ(cs::BlockCache::round_size(0), 512u);
  EXPECT_EQ(cs::BlockCache::round_size(1), 512u);
  EXPECT_EQ(cs::BlockCache::round_size(513), 1024u);
  // Large sizes: at most 1/16 of the next power of two of slack.
  for (size_t n : {size_t(1000003), size_t(256) << 20, (size_t(256) << 20) + 1, size_t(3) << 30}) {
    size_t r = cs::BlockCache::round_size(n);
    EXPECT_GE(r, n);
    EXPECT_LE(r - n, n / 8 + 512) << n;
  }
}

TEST(BlockCache, ReusesReleasedBlocksOfTheSameClass) {
  CountingHeap heap;
  auto cache = heap.make(size_t(1) << 30);
  auto a = cache.acquire(1000000);
  void *first = a.ptr;
  cache.release(a);
  auto b = cache.acquire(999999);  // same class
  EXPECT_EQ(b.ptr, first);
  EXPECT_EQ(heap.allocs, 1u);
  auto c = cache.acquire(4000000);  // different class: new block
  EXPECT_NE(c.ptr, first);
  EXPECT_EQ(heap.allocs, 2u);
  cache.release(b);
  cache.release(c);
  auto s = cache.stats();
  EXPECT_EQ(s.hits, 1u);
  EXPECT_EQ(s.misses, 2u);
  EXPECT_EQ(s.cached_blocks, 2u);
  EXPECT_EQ(s.live_bytes, 0u);
  cache.trim();
  EXPECT_TRUE(heap.live.empty());
}

TEST(BlockCache, EvictsOldestBeyondTheLimit) {
  CountingHeap heap;
  const size_t block = cs::BlockCache::round_size(1 << 20);
  auto cache = heap.make(2 * block);
  auto a = cache.acquire(1 << 20), b = cache.acquire(1 << 20), c = cache.acquire(1 << 20);
  cache.release(a);
  cache.release(b);
  cache.release(c);  // over the limit: a (the oldest) goes
  EXPECT_EQ(heap.frees, 1u);
  EXPECT_EQ(heap.live.count(a.ptr), 0u);
  EXPECT_EQ(cache.stats().cached_bytes, 2 * block);
}

TEST(BlockCache, OutOfMemoryTrimsAndRetries) {
  CountingHeap heap;
  auto cache = heap.make(size_t(1) << 30);
  auto a = cache.acquire(1 << 20);
  cache.release(a);  // cached, not freed
  heap.fail_after = 1;
  // A different size misses; the first attempt fails, the cache is trimmed,
  // the retry fails again and its error reaches the caller.
  EXPECT_THROW(cache.acquire(8 << 20), cs::CudaError);
  EXPECT_EQ(heap.frees, 1u) << "the cached block must have been freed before the retry";
  heap.fail_after = SIZE_MAX;
  auto b = cache.acquire(8 << 20);
  EXPECT_NE(b.ptr, nullptr);
  cache.release(b);
}

TEST(CudaRuntime, DeviceCountNeverThrows) {
  int n = -1;
  EXPECT_NO_THROW(n = cs::device_count());
  EXPECT_GE(n, 0);
  if (n == 0) {
    EXPECT_FALSE(cs::no_device_reason().empty());
    EXPECT_THROW(cs::device_alloc(16, 0), cs::CudaError);
  }
}

}  // namespace
