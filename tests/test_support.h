// Helpers shared by the test suites.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "common/cuda_runtime.h"

// Skips the current test, with the reason, when there is no CUDA device.
#define CS_REQUIRE_GPU()                                                          \
  do {                                                                            \
    if (cs::device_count() == 0)                                                  \
      GTEST_SKIP() << "no CUDA device (" << cs::no_device_reason() << ")";        \
  } while (0)

namespace cs_test {

// Fresh random bytes for every run; the seed is printed so a failure can be replayed.
inline std::vector<uint8_t> random_bytes(size_t n, uint32_t seed) {
  std::vector<uint8_t> v(n);
  std::mt19937_64 rng(seed);
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t r = rng();
    for (int k = 0; k < 8; ++k) v[i + k] = uint8_t(r >> (8 * k));
  }
  for (; i < n; ++i) v[i] = uint8_t(rng());
  return v;
}

// A fresh random seed, printed so that a failure can be replayed:
// CS_TEST_SEED=<seed> makes every fresh_seed() return it.
inline uint32_t fresh_seed() {
  static std::random_device rd;
  const char *fixed = std::getenv("CS_TEST_SEED");
  const uint32_t seed = fixed ? static_cast<uint32_t>(std::strtoul(fixed, nullptr, 10)) : rd();
  std::printf("[ seed     ] %u\n", seed);
  return seed;
}

// Path of the shared real-data folder, or "" when it is absent.
inline std::string shared_data_dir() {
  const char *d = std::getenv("CS_SHARED_DATA");
  return d ? d : "";
}

// Device memory of `bytes` bytes on device 0 seen as T, for GPU tests;
// freed at scope exit.
template <class T>
class DeviceArray {
 public:
  explicit DeviceArray(size_t bytes) : ptr_(cs::device_alloc(bytes > 0 ? bytes : 1, 0)) {}
  ~DeviceArray() { cs::device_free(ptr_, 0); }
  DeviceArray(const DeviceArray &) = delete;
  DeviceArray &operator=(const DeviceArray &) = delete;
  T *get() const { return static_cast<T *>(ptr_); }

 private:
  void *ptr_;
};

}  // namespace cs_test
