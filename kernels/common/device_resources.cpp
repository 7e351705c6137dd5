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

BlockCache::Block DeviceResources::acquire_device_block(size_t bytes) {
  reap(false);
  try {
    return device_cache_->acquire(bytes);
  } catch (const CudaError &e) {
    if (!e.out_of_memory()) throw;
    reap(true);  // memory held by releases still in flight may be enough
    return device_cache_->acquire(bytes);
  }
}

void DeviceResources::release_after(BlockCache::Block device_block, BlockCache::Block host_block,
                                    std::vector<Event> pending) {
  bool all_done = true;
  try {
    for (const Event &e : pending) all_done = all_done && e.done();
  } catch (const CudaError &) {
    all_done = true;  // a failed device runs nothing more: nothing to wait for
  }
  if (all_done) {
    device_cache_->release(device_block);
    if (host_block.ptr) pinned_cache().release(host_block);
    for (Event &e : pending) return_event(std::move(e));
    return;
  }
  std::lock_guard<std::mutex> lock(deferred_mutex_);
  deferred_.push_back(Deferred{device_block, host_block, std::move(pending)});
}

void DeviceResources::reap(bool wait) {
  std::deque<Deferred> finished;
  {
    std::lock_guard<std::mutex> lock(deferred_mutex_);
    // Releases complete in roughly the order they were made.
    while (!deferred_.empty()) {
      Deferred &d = deferred_.front();
      bool done = true;
      for (const Event &e : d.pending) {
        if (wait)
          e.synchronize();
        else if (!e.done()) {
          done = false;
          break;
        }
      }
      if (!done) break;
      finished.push_back(std::move(d));
      deferred_.pop_front();
    }
  }
  for (Deferred &d : finished) {
    device_cache_->release(d.device_block);
    if (d.host_block.ptr) pinned_cache().release(d.host_block);
    for (Event &e : d.pending) return_event(std::move(e));
  }
}

Event DeviceResources::take_event() {
  {
    std::lock_guard<std::mutex> lock(deferred_mutex_);
    if (!spare_events_.empty()) {
      Event e = std::move(spare_events_.back());
      spare_events_.pop_back();
      return e;
    }
  }
  return Event(device_);
}

void DeviceResources::return_event(Event event) {
  if (!event.get()) return;
  std::lock_guard<std::mutex> lock(deferred_mutex_);
  // Enough for every buffer of a few busy pipelines; the rest are destroyed.
  if (spare_events_.size() < 1024) spare_events_.push_back(std::move(event));
}

BlockCache &pinned_cache() {
  static auto *cache = new BlockCache([](size_t n) { return pinned_alloc(n); }, [](void *p) { pinned_free(p); },
                                      size_t(2) << 30);
  return *cache;
}

}  // namespace cs
