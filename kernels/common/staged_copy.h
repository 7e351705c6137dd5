// Copies from ordinary (pageable) host memory to the device at close to the
// page-locked DMA rate. A plain cudaMemcpy from pageable memory is staged by
// the driver one small block at a time (about a tenth of the PCIe rate);
// here the source is copied into page-locked chunks by several threads while
// the previous chunks are already travelling on the stream.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#include "common/block_cache.h"
#include "common/cuda_runtime.h"

namespace cs {

// How a copy writes its destination: through the caches (memcpy), or with
// non-temporal (streaming) stores that go straight to memory, so that a DMA
// reading the destination right after does not find it dirty in the CPU's
// caches. Streaming needs x86-64 (SSE2, AVX2 when present); elsewhere it is
// a plain memcpy.
//
// `automatic` streams copies below kStreamingBelowBytes and caches larger
// ones. Measured on the H200's host (Xeon, 2026-11-29): a 1 MiB DMA from
// page-locked memory just written through the caches took 53 us instead of
// 24 us (the lines are still dirty in the writing cores' private caches),
// so staged 1 MiB uploads ran at 20 GB/s cached and 41 GB/s streamed; from
// 4 MiB on, the cached copy of one chunk has left those caches by the time
// its DMA runs, and it is the cheaper copy (48 against 44 GB/s at 4 MiB).
enum class CopyStores { cached, streaming, automatic };
constexpr size_t kStreamingBelowBytes = size_t(4) << 20;

// Copies `bytes` with the given stores (the streaming stores are fenced
// before return; `automatic` is resolved on `bytes`).
void copy_bytes(void *dst, const void *src, size_t bytes, CopyStores stores);

// A fixed team of threads that share one memcpy, each thread taking at
// least kMinBytesPerThread (fewer threads for small copies: they finish as
// soon, and leave the memory bus to a DMA running at the same time). Between
// jobs the workers spin briefly before sleeping: a stream of buffers hands
// them a job every few tens of microseconds, and waking sleeping threads
// costs about as much as copying a megabyte.
class ParallelCopier {
 public:
  explicit ParallelCopier(int threads, CopyStores stores = CopyStores::cached);
  ~ParallelCopier();
  ParallelCopier(const ParallelCopier &) = delete;
  ParallelCopier &operator=(const ParallelCopier &) = delete;
  static constexpr size_t kMinBytesPerThread = size_t(256) << 10;
  // The team's stores, `automatic` resolved on the whole copy's size.
  void copy(void *dst, const void *src, size_t bytes);
  int threads() const { return int(workers_.size()) + 1; }
  CopyStores stores() const { return stores_; }

 private:
  void worker(int index);
  void copy_part(size_t index);  // the index-th share of the current job
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
  size_t parts_ = 1;
  CopyStores job_stores_ = CopyStores::cached;
};

// The host copies run on the uploader's own thread (leading its copy team),
// so the caller only enqueues: its thread is free for the next buffer while
// this one is copied, and the copy of chunk N+1 overlaps the DMA of chunk N.
// Each chunk's DMA waits, in stream order, for its copy: a host function on
// the uploader's side stream, released when the copy thread is done.
class StagedUploader {
 public:
  // chunk_bytes: the unit of overlap; slots: chunks in flight at once;
  // threads: host copy threads (0 = half the usable cores, at most 8); stores: how
  // they write the page-locked chunks.
  static constexpr size_t kDefaultChunkBytes = size_t(8) << 20;
  static constexpr int kDefaultSlots = 4;
  StagedUploader(int device, size_t chunk_bytes = kDefaultChunkBytes, int slots = kDefaultSlots, int threads = 0,
                 CopyStores stores = CopyStores::automatic);
  ~StagedUploader();
  StagedUploader(const StagedUploader &) = delete;
  StagedUploader &operator=(const StagedUploader &) = delete;

  // Enqueues the copy of `bytes` from pageable `src` to device `dst` on
  // `stream` and returns (it blocks only while every page-locked chunk is
  // still in use). `src` must stay valid and unchanged until work enqueued
  // on `stream` after this call has completed: hold the source until an
  // event recorded there afterwards is done.
  void upload(void *dst, const void *src, size_t bytes, StreamHandle stream);
  // Blocks until every chunk handed over has reached the device.
  void synchronize();

 private:
  struct Job {
    StagedUploader *owner;
    unsigned char *staging;
    const unsigned char *src;
    size_t bytes;
    std::atomic<bool> copied{false};
  };
  struct Slot {
    BlockCache::Block block;
    Event copied;  // on the side stream: the chunk's copy is done
    Event done;    // on the caller's stream: the chunk has reached the device
  };
  static void release_dma(void *job);  // host function: sleeps until the job's copy is done
  void run_copies();                   // the copy thread

  int device_;
  size_t chunk_bytes_;
  std::vector<Slot> slots_;
  size_t next_slot_ = 0;
  ParallelCopier copier_;
  Stream side_stream_;
  std::mutex queue_mutex_;
  std::condition_variable queue_cv_;
  std::deque<Job *> queue_;       // guarded by queue_mutex_
  std::atomic<size_t> queued_{0};  // queue_.size(), for spinning without the lock
  std::atomic<bool> quit_{false};
  std::mutex copied_mutex_;  // with copied_cv_: a job's copy is done
  std::condition_variable copied_cv_;
  std::thread copy_thread_;
};

}  // namespace cs
