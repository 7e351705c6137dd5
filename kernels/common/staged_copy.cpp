#include "common/staged_copy.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>

#if defined(__x86_64__)
#include <emmintrin.h>
#endif

#include "common/device_resources.h"

namespace cs {

namespace {
int default_copy_threads() {
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  return int(std::clamp(cores / 2, 1u, 8u));
}
// Below this a single thread is faster than waking the team.
constexpr size_t kParallelThreshold = size_t(256) << 10;
}  // namespace

namespace {
inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}
// How long an idle worker spins before it sleeps.
constexpr auto kSpinBeforeSleep = std::chrono::microseconds(200);
}  // namespace

void copy_bytes(void *dst, const void *src, size_t bytes, CopyStores stores) {
#if defined(__x86_64__)
  if (stores == CopyStores::streaming && bytes >= 256) {
    auto *d = static_cast<unsigned char *>(dst);
    const auto *s = static_cast<const unsigned char *>(src);
    // Up to the first 16-byte boundary of the destination, then 64 bytes per
    // step in four streaming stores, then the rest.
    const size_t head = (16 - (reinterpret_cast<uintptr_t>(d) & 15)) & 15;
    std::memcpy(d, s, head);
    d += head;
    s += head;
    size_t n = bytes - head;
    for (; n >= 64; n -= 64, d += 64, s += 64) {
      const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i *>(s));
      const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i *>(s + 16));
      const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i *>(s + 32));
      const __m128i e = _mm_loadu_si128(reinterpret_cast<const __m128i *>(s + 48));
      _mm_stream_si128(reinterpret_cast<__m128i *>(d), a);
      _mm_stream_si128(reinterpret_cast<__m128i *>(d + 16), b);
      _mm_stream_si128(reinterpret_cast<__m128i *>(d + 32), c);
      _mm_stream_si128(reinterpret_cast<__m128i *>(d + 48), e);
    }
    std::memcpy(d, s, n);
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
  if (workers_.empty() || bytes < kParallelThreshold) {
    copy_bytes(dst, src, bytes, stores_);
    return;
  }
  dst_ = static_cast<unsigned char *>(dst);
  src_ = static_cast<const unsigned char *>(src);
  bytes_ = bytes;
  pending_ = int(workers_.size());
  generation_.fetch_add(1);  // publishes the job
  if (sleepers_.load() > 0) {
    std::lock_guard<std::mutex> lock(mutex_);
    start_cv_.notify_all();
  }
  // The calling thread does part 0.
  const size_t parts = workers_.size() + 1;
  const size_t part = (bytes / parts + 63) & ~size_t(63);
  copy_bytes(dst, src, std::min(part, bytes), stores_);
  while (pending_.load() != 0) cpu_relax();
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
    const size_t bytes = bytes_;
    const size_t parts = workers_.size() + 1;
    const size_t part = (bytes / parts + 63) & ~size_t(63);
    const size_t begin = std::min(bytes, part * size_t(index));
    const size_t end = index + 1 == int(parts) ? bytes : std::min(bytes, begin + part);
    if (end > begin) copy_bytes(dst_ + begin, src_ + begin, end - begin, stores_);
    pending_.fetch_sub(1);
  }
}

StagedUploader::StagedUploader(int device, size_t chunk_bytes, int slots, int threads, CopyStores stores)
    : device_(device), chunk_bytes_(chunk_bytes), copier_(threads > 0 ? threads : default_copy_threads(), stores) {
  DeviceGuard guard(device);
  slots_.resize(size_t(std::max(2, slots)));
  for (auto &slot : slots_) {
    slot.block = pinned_cache().acquire(chunk_bytes_);
    slot.done = Event(device);
  }
}

StagedUploader::~StagedUploader() {
  try {
    synchronize();
  } catch (const CudaError &) {
  }
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
    copier_.copy(slot.block.ptr, s + offset, n);
    copy_async(d + offset, slot.block.ptr, n, stream);
    slot.done.record(stream);
  }
}

void StagedUploader::synchronize() {
  for (auto &slot : slots_) slot.done.synchronize();
}

}  // namespace cs
