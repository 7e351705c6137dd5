#include "common/staged_copy.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "common/device_resources.h"
#include "common/host_resources.h"

namespace cs {

namespace {
inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}
// How long an idle worker spins before it sleeps.
constexpr auto kSpinBeforeSleep = std::chrono::microseconds(200);
}  // namespace

#if defined(__x86_64__)
namespace {
// 64 bytes per step; `d` is 16-byte aligned (32 for the AVX2 version).
void stream_sse2(unsigned char *d, const unsigned char *s, size_t blocks) {
  for (; blocks > 0; --blocks, d += 64, s += 64)
    for (int k = 0; k < 64; k += 16)
      _mm_stream_si128(reinterpret_cast<__m128i *>(d + k), _mm_loadu_si128(reinterpret_cast<const __m128i *>(s + k)));
}
__attribute__((target("avx2"))) void stream_avx2(unsigned char *d, const unsigned char *s, size_t blocks) {
  for (; blocks > 0; --blocks, d += 64, s += 64) {
    const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(s));
    const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(s + 32));
    _mm256_stream_si256(reinterpret_cast<__m256i *>(d), a);
    _mm256_stream_si256(reinterpret_cast<__m256i *>(d + 32), b);
  }
}
const bool kHasAvx2 = __builtin_cpu_supports("avx2");
}  // namespace
#endif

namespace {
CopyStores resolved(CopyStores stores, size_t bytes) {
  if (stores != CopyStores::automatic) return stores;
  return bytes < kStreamingBelowBytes ? CopyStores::streaming : CopyStores::cached;
}
}  // namespace

void copy_bytes(void *dst, const void *src, size_t bytes, CopyStores stores) {
  stores = resolved(stores, bytes);
#if defined(__x86_64__)
  if (stores == CopyStores::streaming && bytes >= 256) {
    auto *d = static_cast<unsigned char *>(dst);
    const auto *s = static_cast<const unsigned char *>(src);
    // Up to the destination's first vector boundary, then 64 bytes per step,
    // then the rest.
    const uintptr_t align = kHasAvx2 ? 32 : 16;
    const size_t head = (align - (reinterpret_cast<uintptr_t>(d) & (align - 1))) & (align - 1);
    std::memcpy(d, s, head);
    const size_t blocks = (bytes - head) / 64;
    if (kHasAvx2)
      stream_avx2(d + head, s + head, blocks);
    else
      stream_sse2(d + head, s + head, blocks);
    const size_t done = head + blocks * 64;
    std::memcpy(d + done, s + done, bytes - done);
    _mm_sfence();  // the streaming stores are visible before anyone is told the copy is done
    return;
  }
#else
  (void)stores;
#endif
  std::memcpy(dst, src, bytes);
}

ParallelCopier::ParallelCopier(int threads, CopyStores stores) : stores_(stores) {
  for (int i = 1; i < threads; ++i) workers_.emplace_back(&ParallelCopier::worker, this, i);
}

ParallelCopier::~ParallelCopier() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    quit_ = true;
  }
  start_cv_.notify_all();
  for (auto &t : workers_) t.join();
}

void ParallelCopier::copy(void *dst, const void *src, size_t bytes) {
  const CopyStores stores = resolved(stores_, bytes);  // on the whole copy, not each thread's part
  const size_t parts = std::min(workers_.size() + 1, std::max<size_t>(1, bytes / kMinBytesPerThread));
  if (parts == 1) {
    copy_bytes(dst, src, bytes, stores);
    return;
  }
  dst_ = static_cast<unsigned char *>(dst);
  src_ = static_cast<const unsigned char *>(src);
  bytes_ = bytes;
  parts_ = parts;
  job_stores_ = stores;
  pending_ = int(workers_.size());
  generation_.fetch_add(1);  // publishes the job
  if (sleepers_.load() > 0) {
    std::lock_guard<std::mutex> lock(mutex_);
    start_cv_.notify_all();
  }
  copy_part(0);  // the calling thread's share
  while (pending_.load() != 0) cpu_relax();
}

void ParallelCopier::copy_part(size_t index) {
  if (index >= parts_) return;
  const size_t part = (bytes_ / parts_ + 63) & ~size_t(63);
  const size_t begin = std::min(bytes_, part * index);
  const size_t end = index + 1 == parts_ ? bytes_ : std::min(bytes_, begin + part);
  if (end > begin) copy_bytes(dst_ + begin, src_ + begin, end - begin, job_stores_);
}

void ParallelCopier::worker(int index) {
  unsigned long seen = 0;
  for (;;) {
    auto spin_until = std::chrono::steady_clock::now() + kSpinBeforeSleep;
    for (unsigned n = 0; generation_.load() == seen && !quit_.load(); ++n) {
      cpu_relax();
      if ((n & 255) == 255 && std::chrono::steady_clock::now() > spin_until) {
        std::unique_lock<std::mutex> lock(mutex_);
        ++sleepers_;
        start_cv_.wait(lock, [&] { return quit_.load() || generation_.load() != seen; });
        --sleepers_;
        break;
      }
    }
    if (quit_.load()) return;
    seen = generation_.load();
    copy_part(size_t(index));
    pending_.fetch_sub(1);
  }
}

StagedUploader::StagedUploader(int device, size_t chunk_bytes, int slots, int threads, CopyStores stores)
    : device_(device),
      chunk_bytes_(chunk_bytes),
      copier_(threads > 0 ? threads : half_the_cores(), stores),
      side_stream_(device) {
  DeviceGuard guard(device);
  slots_.resize(size_t(std::max(2, slots)));
  for (auto &slot : slots_) {
    slot.block = pinned_cache().acquire(chunk_bytes_);
    slot.copied = Event(device);
    slot.done = Event(device);
  }
  copy_thread_ = std::thread(&StagedUploader::run_copies, this);
}

StagedUploader::~StagedUploader() {
  try {
    synchronize();
    side_stream_.synchronize();  // no host function is left to touch this uploader
  } catch (const CudaError &) {
  }
  {
    std::lock_guard<std::mutex> lock(queue_mutex_);
    quit_ = true;
  }
  queue_cv_.notify_all();
  copy_thread_.join();  // after the queue has drained
  for (auto &slot : slots_) pinned_cache().release(slot.block);
}

void StagedUploader::upload(void *dst, const void *src, size_t bytes, StreamHandle stream) {
  DeviceGuard guard(device_);
  auto *d = static_cast<unsigned char *>(dst);
  auto *s = static_cast<const unsigned char *>(src);
  // Fixed-size chunks: smaller ones (tried: a quarter of the buffer) lost
  // more to per-chunk synchronisation than they gained in overlap.
  for (size_t offset = 0; offset < bytes; offset += chunk_bytes_) {
    const size_t n = std::min(chunk_bytes_, bytes - offset);
    Slot &slot = slots_[next_slot_];
    next_slot_ = (next_slot_ + 1) % slots_.size();
    slot.done.synchronize();  // its previous chunk has left for the device
    auto *job = new Job{this, static_cast<unsigned char *>(slot.block.ptr), s + offset, n};
    {
      std::lock_guard<std::mutex> lock(queue_mutex_);
      queue_.push_back(job);
      queued_.fetch_add(1);
    }
    queue_cv_.notify_one();
    try {
      launch_host_func(side_stream_.get(), &StagedUploader::release_dma, job);  // which deletes the job
    } catch (...) {
      release_dma(job);  // the copy thread must be done with `src` before the caller lets it go
      throw;
    }
    slot.copied.record(side_stream_.get());
    stream_wait(stream, slot.copied.get());
    copy_async(d + offset, slot.block.ptr, n, stream);
    slot.done.record(stream);
  }
}

void StagedUploader::release_dma(void *data) {
  auto *job = static_cast<Job *>(data);
  {
    std::unique_lock<std::mutex> lock(job->owner->copied_mutex_);
    job->owner->copied_cv_.wait(lock, [&] { return job->copied.load(); });
  }
  delete job;
}

void StagedUploader::run_copies() {
  for (;;) {
    // Spin briefly (buffers of a stream arrive every few tens of
    // microseconds), then sleep until there is work or the end.
    const auto spin_until = std::chrono::steady_clock::now() + kSpinBeforeSleep;
    for (unsigned n = 0; queued_.load() == 0 && !quit_.load(); ++n) {
      cpu_relax();
      if ((n & 255) == 255 && std::chrono::steady_clock::now() > spin_until) break;
    }
    Job *job = nullptr;
    {
      std::unique_lock<std::mutex> lock(queue_mutex_);
      queue_cv_.wait(lock, [&] { return quit_.load() || !queue_.empty(); });
      if (queue_.empty()) return;  // quitting, and nothing left to copy
      job = queue_.front();
      queue_.pop_front();
      queued_.fetch_sub(1);
    }
    copier_.copy(job->staging, job->src, job->bytes);
    {
      std::lock_guard<std::mutex> lock(copied_mutex_);
      job->copied = true;  // the job's last use here
    }
    copied_cv_.notify_all();
  }
}

void StagedUploader::synchronize() {
  for (auto &slot : slots_) slot.done.synchronize();
}

}  // namespace cs
