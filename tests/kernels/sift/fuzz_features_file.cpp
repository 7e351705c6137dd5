// libFuzzer target for the features files that siftmatch takes as its
// reference (featuresink's binary records, OpenCV YAML or XML): any byte
// string must read or throw; never crash, hang or read out of bounds. Built
// and run by tests/run-fuzzer.sh features (clang -fsanitize=fuzzer,address,undefined).
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <exception>
#include <string>

#include "sift/features_cpu.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const std::string path = "/tmp/cs-fuzz-features-" + std::to_string(getpid());
  if (FILE *f = std::fopen(path.c_str(), "wb")) {
    std::fwrite(data, 1, size, f);
    std::fclose(f);
  }
  try {
    for (const sift_cpu::Record &r : sift_cpu::read_records(path))
      if (!r.features.descriptors.empty() && size_t(r.features.descriptors.rows) != r.features.keypoints.size())
        __builtin_trap();  // the reader promises one row per keypoint
  } catch (const std::exception &) {
  }
  return 0;
}
