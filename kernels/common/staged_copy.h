// Copies from ordinary (pageable) host memory to the device at close to the
// page-locked DMA rate. A plain cudaMemcpy from pageable memory is staged by
// the driver one small block at a time (about a tenth of the PCIe rate);
// here the source is copied into page-locked chunks by several threads while
// the previous chunks are already travelling on the stream.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <thread>
#include <vector>

#include "common/block_cache.h"
#include "common/cuda_runtime.h"

namespace cs {

// How a copy writes its destination: through the caches (memcpy), or with
// non-temporal (streaming) stores that go straight to memory, so that a DMA
// reading the destination right after does not find it dirty in the CPU's
// caches. Streaming needs x86-64 (SSE2); elsewhere it is a plain memcpy.
enum class CopyStores { cached, streaming };

// Copies `bytes` with the given stores (the streaming stores are fenced
// before return).
void copy_bytes(void *dst, const void *src, size_t bytes, CopyStores stores);

// A fixed team of threads that share one memcpy. Between jobs the workers
// spin briefly before sleeping: a stream of buffers hands them a job every
// few tens of microseconds, and waking sleeping threads costs about as much
// as copying a megabyte.
class ParallelCopier {
 public:
  explicit ParallelCopier(int threads, CopyStores stores = CopyStores::cached);
  ~ParallelCopier();
  ParallelCopier(const ParallelCopier &) = delete;
  ParallelCopier &operator=(const ParallelCopier &) = delete;
  void copy(void *dst, const void *src, size_t bytes);
  int threads() const { return int(workers_.size()) + 1; }
  CopyStores stores() const { return stores_; }

 private:
  void worker(int index);
  CopyStores stores_;
  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable start_cv_;
  std::atomic<unsigned long> generation_{0};
  std::atomic<int> pending_{0};
  std::atomic<int> sleepers_{0};
  std::atomic<bool> quit_{false};
  // The job; written before generation_ is bumped, read after it is seen.
  unsigned char *dst_ = nullptr;
  const unsigned char *src_ = nullptr;
  size_t bytes_ = 0;
};

class StagedUploader {
 public:
  // chunk_bytes: the unit of overlap; slots: chunks in flight at once;
  // threads: host copy threads (0 = half the cores, at most 8); stores: how
  // they write the page-locked chunks.
  StagedUploader(int device, size_t chunk_bytes = size_t(8) << 20, int slots = 4, int threads = 0,
                 CopyStores stores = CopyStores::cached);
  ~StagedUploader();
  StagedUploader(const StagedUploader &) = delete;
  StagedUploader &operator=(const StagedUploader &) = delete;

  // Enqueues the copy of `bytes` from pageable `src` to device `dst` on
  // `stream`. On return `src` has been read completely and may be reused;
  // the device side completes in stream order.
  void upload(void *dst, const void *src, size_t bytes, StreamHandle stream);
  // Blocks until every chunk handed to the device has been copied.
  void synchronize();

 private:
  struct Slot {
    BlockCache::Block block;
    Event done;
  };
  int device_;
  size_t chunk_bytes_;
  std::vector<Slot> slots_;
  size_t next_slot_ = 0;
  ParallelCopier copier_;
};

}  // namespace cs
