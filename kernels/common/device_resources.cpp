#include "common/device_resources.h"

#include <map>
#include <mutex>

namespace cs {

DeviceResources::DeviceResources(int device) : device_(device) {
  if (device < 0 || device >= device_count())
    throw CudaError(-1, "CUDA device " + std::to_string(device) + " does not exist (" +
                            std::to_string(device_count()) + " device(s) present" +
                            (device_count() == 0 ? ": " + no_device_reason() : std::string()) + ")");
  // Cache up to an eighth of the card: enough for every pipeline's pools,
  // small enough that a large single allocation still fits.
  const size_t cache_limit = memory_info(device).total_bytes / 8;
  device_cache_ = std::make_unique<BlockCache>(
      [device](size_t n) { return device_alloc(n, device); }, [device](void *p) { device_free(p, device); },
      cache_limit);
  mirror_stream_ = Stream(device);
}

DeviceResources &DeviceResources::get(int device) {
  static std::mutex mutex;
  // Never destroyed: buffers may outlive static destruction order at exit.
  static auto *devices = new std::map<int, std::unique_ptr<DeviceResources>>();
  std::lock_guard<std::mutex> lock(mutex);
  auto it = devices->find(device);
  if (it == devices->end())
    it = devices->emplace(device, std::unique_ptr<DeviceResources>(new DeviceResources(device))).first;
  return *it->second;
}

BlockCache &pinned_cache() {
  static auto *cache = new BlockCache([](size_t n) { return pinned_alloc(n); }, [](void *p) { pinned_free(p); },
                                      size_t(2) << 30);
  return *cache;
}

}  // namespace cs
