// What every benchmark program needs: its command line, device arrays, CUDA
// event timing and medians. Header-only; the programs link the CUDA layer.
#pragma once

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "common/cuda_runtime.h"

namespace bench {

inline double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// "--name value" options with defaults; anything else prints the usage and exits 2.
class Options {
 public:
  // `defaults`: every accepted option name (without "--") and its default value.
  Options(int argc, char **argv, std::map<std::string, std::string> defaults) : values_(std::move(defaults)) {
    for (int i = 1; i < argc; ++i) {
      const std::string a = argv[i];
      const auto it = a.rfind("--", 0) == 0 ? values_.find(a.substr(2)) : values_.end();
      if (it == values_.end() || i + 1 >= argc) usage(argv[0]);
      it->second = argv[++i];
    }
  }
  std::string text(const std::string &name) const { return values_.at(name); }
  long long integer(const std::string &name) const { return std::stoll(values_.at(name)); }

 private:
  [[noreturn]] void usage(const char *program) const {
    std::fprintf(stderr, "usage: %s", program);
    for (const auto &kv : values_) std::fprintf(stderr, " [--%s %s]", kv.first.c_str(), kv.second.empty() ? "VALUE" : kv.second.c_str());
    std::fprintf(stderr, "\n");
    std::exit(2);
  }
  std::map<std::string, std::string> values_;
};

// A device allocation for the length of a scope.
class DeviceArray {
 public:
  DeviceArray(size_t bytes, int device) : device_(device), ptr_(cs::device_alloc(std::max<size_t>(bytes, 1), device)) {}
  ~DeviceArray() { cs::device_free(ptr_, device_); }
  DeviceArray(const DeviceArray &) = delete;
  DeviceArray &operator=(const DeviceArray &) = delete;
  template <class T = void>
  T *get() const {
    return static_cast<T *>(ptr_);
  }

 private:
  int device_;
  void *ptr_;
};

// CUDA-event timing of the work between start() and stop_ms() on a stream.
class EventTimer {
 public:
  explicit EventTimer(int device) : start_(cs::timing_event_create(device)), stop_(cs::timing_event_create(device)) {}
  ~EventTimer() {
    cs::event_destroy(start_);
    cs::event_destroy(stop_);
  }
  EventTimer(const EventTimer &) = delete;
  EventTimer &operator=(const EventTimer &) = delete;
  void start(cs::StreamHandle s) { cs::event_record(start_, s); }
  double stop_ms(cs::StreamHandle s) {
    cs::event_record(stop_, s);
    cs::event_synchronize(stop_);
    return cs::event_elapsed_ms(start_, stop_);
  }

 private:
  cs::EventHandle start_, stop_;
};

// Milliseconds of the work `enqueue` puts on `stream` (CUDA events): one
// untimed warm-up call (plans, caches, first allocations), then the median of
// `repeats` timed calls.
template <class Enqueue>
double timed_ms(cs::StreamHandle stream, int device, int repeats, Enqueue enqueue) {
  EventTimer timer(device);
  enqueue();
  cs::stream_synchronize(stream);
  std::vector<double> ms;
  for (int r = 0; r < std::max(1, repeats); ++r) {
    timer.start(stream);
    enqueue();
    ms.push_back(timer.stop_ms(stream));
  }
  return median(ms);
}

// Milliseconds of the work `enqueue` puts on `stream` when calls follow one
// another, as a pipeline's blocks do: one untimed warm-up call, then
// `repeats` calls queued behind it with an event between each two, and the
// median of those intervals. The GPU is busy when each call's work is
// queued, so the host's launch latency, which a call on an idle GPU would
// wait for, is not counted.
template <class Enqueue>
double queued_ms(cs::StreamHandle stream, int device, int repeats, Enqueue enqueue) {
  std::vector<cs::EventHandle> events(size_t(std::max(1, repeats)) + 1);
  for (cs::EventHandle &e : events) e = cs::timing_event_create(device);
  enqueue();
  cs::event_record(events[0], stream);
  for (size_t r = 1; r < events.size(); ++r) {
    enqueue();
    cs::event_record(events[r], stream);
  }
  cs::event_synchronize(events.back());
  std::vector<double> ms;
  for (size_t r = 1; r < events.size(); ++r) ms.push_back(cs::event_elapsed_ms(events[r - 1], events[r]));
  for (cs::EventHandle e : events) cs::event_destroy(e);
  return median(ms);
}

}  // namespace bench
