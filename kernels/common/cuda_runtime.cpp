#include "common/cuda_runtime.h"

#include <cstdio>
#include <mutex>

#if CS_HAVE_CUDA
#include "common/cuda_check.h"
#endif

namespace cs {

std::string format_bytes(size_t bytes) {
  const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024.0 && u < 5) {
    v /= 1024.0;
    ++u;
  }
  char buf[64];
  if (u == 0)
    std::snprintf(buf, sizeof buf, "%zu B", bytes);
  else
    std::snprintf(buf, sizeof buf, "%.2f %s (%zu bytes)", v, units[u], bytes);
  return buf;
}


Stream &Stream::operator=(Stream &&o) noexcept {
  if (this != &o) {
    reset();
    handle_ = o.handle_;
    device_ = o.device_;
    o.handle_ = nullptr;
  }
  return *this;
}

void Stream::reset() noexcept {
  if (handle_) stream_destroy(handle_);
  handle_ = nullptr;
}

Event &Event::operator=(Event &&o) noexcept {
  if (this != &o) {
    reset();
    handle_ = o.handle_;
    o.handle_ = nullptr;
  }
  return *this;
}

void Event::reset() noexcept {
  if (handle_) event_destroy(handle_);
  handle_ = nullptr;
}

#if CS_HAVE_CUDA

void throw_cuda_error(cudaError_t err, const char *what) {
  // Clear a non-sticky error so the next call on this thread starts clean.
  cudaGetLastError();
  throw CudaError(static_cast<int>(err),
                  std::string(what) + ": " + cudaGetErrorName(err) + " (" + cudaGetErrorString(err) + ")");
}

namespace {

inline void check(cudaError_t err, const char *what) { check_cuda(err, what); }

struct DeviceCountCache {
  std::once_flag once;
  int count = 0;
  std::string reason;
};

DeviceCountCache &device_count_cache() {
  static DeviceCountCache cache;
  std::call_once(cache.once, [] {
    int n = 0;
    cudaError_t err = cudaGetDeviceCount(&n);
    if (err != cudaSuccess) {
      cache.reason = std::string(cudaGetErrorName(err)) + ": " + cudaGetErrorString(err);
      cudaGetLastError();
      n = 0;
    } else if (n == 0) {
      cache.reason = "the CUDA driver reports no device";
    }
    cache.count = n;
  });
  return cache;
}

}  // namespace

static_assert(CudaError::kOutOfMemory == cudaErrorMemoryAllocation, "CUDA renumbered its out-of-memory error");

bool cuda_compiled() { return true; }
int device_count() { return device_count_cache().count; }
std::string no_device_reason() { return device_count_cache().reason; }

std::string device_name(int device) {
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties");
  return prop.name;
}

int compute_capability(int device) {
  int major = 0, minor = 0;
  check(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device), "cudaDeviceGetAttribute");
  check(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device), "cudaDeviceGetAttribute");
  return 10 * major + minor;
}

MemoryInfo memory_info(int device) {
  DeviceGuard guard(device);
  MemoryInfo info;
  check(cudaMemGetInfo(&info.free_bytes, &info.total_bytes), "cudaMemGetInfo");
  return info;
}

DeviceGuard::DeviceGuard(int device) {
  check(cudaGetDevice(&previous_), "cudaGetDevice");
  if (previous_ != device) check(cudaSetDevice(device), "cudaSetDevice");
}

DeviceGuard::~DeviceGuard() {
  int current = -1;
  if (cudaGetDevice(&current) == cudaSuccess && current != previous_) cudaSetDevice(previous_);
}

void *device_alloc(size_t bytes, int device) {
  DeviceGuard guard(device);
  void *ptr = nullptr;
  cudaError_t err = cudaMalloc(&ptr, bytes);
  if (err == cudaErrorMemoryAllocation) {
    cudaGetLastError();
    size_t free_b = 0, total_b = 0;
    cudaMemGetInfo(&free_b, &total_b);
    throw CudaError(static_cast<int>(err),
                    "out of device memory on CUDA device " + std::to_string(device) + ": asked for " +
                        format_bytes(bytes) + ", " + format_bytes(free_b) + " free of " + format_bytes(total_b));
  }
  check(err, "cudaMalloc");
  return ptr;
}

void device_free(void *ptr, int device) noexcept {
  if (!ptr) return;
  int previous = -1;
  cudaGetDevice(&previous);
  cudaSetDevice(device);
  cudaFree(ptr);
  cudaSetDevice(previous);
}

void *pinned_alloc(size_t bytes) {
  void *ptr = nullptr;
  cudaError_t err = cudaHostAlloc(&ptr, bytes, cudaHostAllocPortable);
  if (err == cudaErrorMemoryAllocation) {
    cudaGetLastError();
    throw CudaError(static_cast<int>(err), "out of page-locked host memory: asked for " + format_bytes(bytes));
  }
  check(err, "cudaHostAlloc");
  return ptr;
}

void pinned_free(void *ptr) noexcept {
  if (ptr) cudaFreeHost(ptr);
}

bool is_pinned_host(const void *ptr) {
  if (!ptr || device_count() == 0) return false;
  cudaPointerAttributes attr{};
  if (cudaPointerGetAttributes(&attr, ptr) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  return attr.type == cudaMemoryTypeHost;
}

StreamHandle stream_create(int device) {
  DeviceGuard guard(device);
  cudaStream_t s = nullptr;
  check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
  return s;
}

StreamHandle stream_create_urgent(int device) {
  DeviceGuard guard(device);
  int least = 0, greatest = 0;
  check(cudaDeviceGetStreamPriorityRange(&least, &greatest), "cudaDeviceGetStreamPriorityRange");
  cudaStream_t s = nullptr;
  check(cudaStreamCreateWithPriority(&s, cudaStreamNonBlocking, greatest), "cudaStreamCreateWithPriority");
  return s;
}

void stream_destroy(StreamHandle stream) noexcept { cudaStreamDestroy(stream); }
void stream_synchronize(StreamHandle stream) { check(cudaStreamSynchronize(stream), "cudaStreamSynchronize"); }

EventHandle event_create(int device) {
  DeviceGuard guard(device);
  cudaEvent_t e = nullptr;
  check(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreateWithFlags");
  return e;
}

EventHandle timing_event_create(int device) {
  DeviceGuard guard(device);
  cudaEvent_t e = nullptr;
  check(cudaEventCreate(&e), "cudaEventCreate");
  return e;
}

float event_elapsed_ms(EventHandle start, EventHandle stop) {
  float ms = 0.f;
  check(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
  return ms;
}

void event_destroy(EventHandle event) noexcept { cudaEventDestroy(event); }
void launch_host_func(StreamHandle stream, void (*fn)(void *), void *data) {
  check(cudaLaunchHostFunc(stream, fn, data), "cudaLaunchHostFunc");
}
void event_record(EventHandle event, StreamHandle stream) { check(cudaEventRecord(event, stream), "cudaEventRecord"); }
void event_synchronize(EventHandle event) { check(cudaEventSynchronize(event), "cudaEventSynchronize"); }

bool event_done(EventHandle event) {
  cudaError_t err = cudaEventQuery(event);
  if (err == cudaErrorNotReady) {
    cudaGetLastError();
    return false;
  }
  check(err, "cudaEventQuery");
  return true;
}

void stream_wait(StreamHandle stream, EventHandle event) {
  check(cudaStreamWaitEvent(stream, event, 0), "cudaStreamWaitEvent");
}

void copy_async(void *dst, const void *src, size_t bytes, StreamHandle stream) {
  if (bytes == 0) return;
  check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, stream), "cudaMemcpyAsync");
}

void memset_async(void *dst, int value, size_t bytes, StreamHandle stream) {
  if (bytes == 0) return;
  check(cudaMemsetAsync(dst, value, bytes, stream), "cudaMemsetAsync");
}

#else  // no CUDA in this build

namespace {
[[noreturn]] void no_cuda() { throw CudaError(-1, "this build of gst-cuda-sensing has no CUDA support"); }
}  // namespace

bool cuda_compiled() { return false; }
int device_count() { return 0; }
std::string no_device_reason() { return "built without CUDA"; }
std::string device_name(int) { no_cuda(); }
int compute_capability(int) { no_cuda(); }
MemoryInfo memory_info(int) { no_cuda(); }
DeviceGuard::DeviceGuard(int) { no_cuda(); }
DeviceGuard::~DeviceGuard() = default;
void *device_alloc(size_t, int) { no_cuda(); }
void device_free(void *, int) noexcept {}
void *pinned_alloc(size_t) { no_cuda(); }
void pinned_free(void *) noexcept {}
bool is_pinned_host(const void *) { return false; }
StreamHandle stream_create(int) { no_cuda(); }
StreamHandle stream_create_urgent(int) { no_cuda(); }
void stream_destroy(StreamHandle) noexcept {}
void stream_synchronize(StreamHandle) { no_cuda(); }
EventHandle event_create(int) { no_cuda(); }
EventHandle timing_event_create(int) { no_cuda(); }
float event_elapsed_ms(EventHandle, EventHandle) { no_cuda(); }
void event_destroy(EventHandle) noexcept {}
void event_record(EventHandle, StreamHandle) { no_cuda(); }
void event_synchronize(EventHandle) { no_cuda(); }
bool event_done(EventHandle) { no_cuda(); }
void stream_wait(StreamHandle, EventHandle) { no_cuda(); }
void launch_host_func(StreamHandle, void (*)(void *), void *) { no_cuda(); }
void copy_async(void *, const void *, size_t, StreamHandle) { no_cuda(); }
void memset_async(void *, int, size_t, StreamHandle) { no_cuda(); }
void copy_from_page_locked_async(void *, const void *, size_t, StreamHandle) { no_cuda(); }
void fill_random_async(void *, size_t, unsigned, StreamHandle) { no_cuda(); }

#endif

}  // namespace cs
