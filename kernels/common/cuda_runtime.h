// Thin, checked C++ layer over the CUDA runtime: device queries, raw
// allocation, streams and events. Every call is checked and failures become
// cs::CudaError carrying the CUDA error text. Built without CUDA, the same
// API reports zero devices and throws on any use, so callers need no #ifdefs.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>

struct CUstream_st;
struct CUevent_st;

namespace cs {

using StreamHandle = CUstream_st *;  // same type as cudaStream_t
using EventHandle = CUevent_st *;    // same type as cudaEvent_t

class CudaError : public std::runtime_error {
 public:
  // cudaErrorMemoryAllocation, spelled here so CPU-only builds share the code.
  static constexpr int kOutOfMemory = 2;
  CudaError(int code, const std::string &what) : std::runtime_error(what), code_(code) {}
  int code() const { return code_; }
  bool out_of_memory() const { return code_ == kOutOfMemory; }

 private:
  int code_;
};

// True when this build contains the CUDA paths.
bool cuda_compiled();
// Number of usable CUDA devices; 0 when there is no driver, no device, or no
// CUDA in this build. Never throws.
int device_count();
// Why device_count() is 0 (driver message), for logs and error text.
std::string no_device_reason();
std::string device_name(int device);
// 10 x major + minor (90 for Hopper's H100 and H200).
int compute_capability(int device);

struct MemoryInfo {
  size_t free_bytes = 0;
  size_t total_bytes = 0;
};
MemoryInfo memory_info(int device);

// Makes `device` current for this thread and restores the previous one.
class DeviceGuard {
 public:
  explicit DeviceGuard(int device);
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard &) = delete;
  DeviceGuard &operator=(const DeviceGuard &) = delete;

 private:
  int previous_ = -1;
};

// Raw allocations. Out of device memory throws a CudaError that says how
// much was asked for and how much is free.
void *device_alloc(size_t bytes, int device);
void device_free(void *ptr, int device) noexcept;
void *pinned_alloc(size_t bytes);
void pinned_free(void *ptr) noexcept;
// True for page-locked or registered host memory (DMA-able without staging).
bool is_pinned_host(const void *ptr);

StreamHandle stream_create(int device);
// A stream whose work the GPU schedules before that of ordinary streams
// (the device's greatest stream priority): for a critical path of small
// kernels beside large ones.
StreamHandle stream_create_urgent(int device);
void stream_destroy(StreamHandle stream) noexcept;
void stream_synchronize(StreamHandle stream);
EventHandle event_create(int device);
void event_destroy(EventHandle event) noexcept;
void event_record(EventHandle event, StreamHandle stream);
void event_synchronize(EventHandle event);
bool event_done(EventHandle event);
// Elapsed milliseconds between two events recorded with timing enabled.
EventHandle timing_event_create(int device);
float event_elapsed_ms(EventHandle start, EventHandle stop);
void stream_wait(StreamHandle stream, EventHandle event);
// Runs `fn(data)` on a driver thread once `stream` reaches this point; the
// stream waits for it to return. `fn` must not call CUDA.
void launch_host_func(StreamHandle stream, void (*fn)(void *), void *data);

// Asynchronous copy; direction inferred from the pointers (unified addressing).
void copy_async(void *dst, const void *src, size_t bytes, StreamHandle stream);
void memset_async(void *dst, int value, size_t bytes, StreamHandle stream);
// Copies `bytes` from page-locked host memory (pinned_alloc) to the device by
// a small kernel in stream order rather than by a copy engine: a small array
// copied beside a stream of large uploads would otherwise queue behind them
// on the engine, and the work that needs it would wait for those uploads.
void copy_from_page_locked_async(void *device_dst, const void *page_locked_src, size_t bytes, StreamHandle stream);
// Fills device memory with pseudo-random bytes from `seed` (tests, benchmarks).
void fill_random_async(void *dst, size_t bytes, unsigned seed, StreamHandle stream);

// Owning wrappers.
class Stream {
 public:
  Stream() = default;
  explicit Stream(int device) : handle_(stream_create(device)), device_(device) {}
  struct Urgent {};
  Stream(int device, Urgent) : handle_(stream_create_urgent(device)), device_(device) {}
  ~Stream() { reset(); }
  Stream(Stream &&o) noexcept : handle_(o.handle_), device_(o.device_) { o.handle_ = nullptr; }
  Stream &operator=(Stream &&o) noexcept;
  Stream(const Stream &) = delete;
  Stream &operator=(const Stream &) = delete;
  StreamHandle get() const { return handle_; }
  int device() const { return device_; }
  void synchronize() const { stream_synchronize(handle_); }
  void reset() noexcept;

 private:
  StreamHandle handle_ = nullptr;
  int device_ = -1;
};

class Event {
 public:
  Event() = default;
  explicit Event(int device) : handle_(event_create(device)) {}
  ~Event() { reset(); }
  Event(Event &&o) noexcept : handle_(o.handle_) { o.handle_ = nullptr; }
  Event &operator=(Event &&o) noexcept;
  Event(const Event &) = delete;
  Event &operator=(const Event &) = delete;
  EventHandle get() const { return handle_; }
  void record(StreamHandle stream) const { event_record(handle_, stream); }
  void synchronize() const { event_synchronize(handle_); }
  bool done() const { return event_done(handle_); }
  void reset() noexcept;

 private:
  EventHandle handle_ = nullptr;
};

// "1.50 GiB" style sizes for messages.
std::string format_bytes(size_t bytes);

}  // namespace cs
