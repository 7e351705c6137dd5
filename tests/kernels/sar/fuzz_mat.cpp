// libFuzzer target for the MATLAB v5 reader and the Gotcha conversion behind
// tools/gotcha-to-cphd: any byte string, as a MAT-file, must read or throw,
// and its conversion to CPHD must finish or throw; never crash, hang or read
// out of bounds. Built and run by tests/run-fuzzer.sh mat (clang
// -fsanitize=fuzzer,address,undefined).
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

#include "mat_v5_writer.h"
#include "memory_file.h"
#include "sar/gotcha.h"
#include "sar/matlab_v5.h"

using namespace cs::sar;

namespace {

const std::string cphd_path = "/tmp/cs-fuzz-mat-" + std::to_string(getpid()) + ".cphd";

// A small Gotcha-like file: struct `data` with fp (complex single K x P), freq, x, y, z and r0.
std::string gotcha_like_file(bool compress) {
  using namespace mat_test;
  constexpr int32_t k = 8, p = 4;
  std::vector<float> re(k * p), im(k * p), freq(k);
  for (int i = 0; i < k * p; ++i) {
    re[i] = static_cast<float>(i % 5) - 2.0f;
    im[i] = static_cast<float>(i % 3) - 1.0f;
  }
  for (int i = 0; i < k; ++i) freq[i] = 9.6e9f + 1e6f * static_cast<float>(i);
  auto row = [](double first, double step) {
    std::vector<double> v(p);
    for (int i = 0; i < p; ++i) v[i] = first + step * i;
    return matrix("", 6, false, {1, p}, element(9, raw(v)));
  };
  const std::string fp = matrix("", 7, true, {k, p}, element(7, raw(re)) + element(7, raw(im)));
  return mat_file(struct_matrix("data", {{"fp", fp},
                                         {"freq", matrix("", 7, false, {k, 1}, element(7, raw(freq)))},
                                         {"x", row(7000.0, 0.5)},
                                         {"y", row(-100.0, 1.0)},
                                         {"z", row(5000.0, 0.0)},
                                         {"r0", row(8602.3, 0.1)}}),
                  compress);
}

}  // namespace

// With CS_FUZZ_WRITE_SEED=<folder>, writes the seed corpus there (the file stored and compressed) and exits.
extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  if (const char *folder = std::getenv("CS_FUZZ_WRITE_SEED")) {
    for (bool compress : {false, true}) {
      const std::string bytes = gotcha_like_file(compress);
      const std::string path = std::string(folder) + (compress ? "/compressed.mat" : "/stored.mat");
      if (std::FILE *f = std::fopen(path.c_str(), "wb")) {
        std::fwrite(bytes.data(), 1, bytes.size(), f);
        std::fclose(f);
      }
    }
    std::exit(0);
  }
  std::atexit([] { std::remove(cphd_path.c_str()); });
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const MemoryFile file(data, size);
  if (!file.ok()) return 0;
  try {
    (void)read_mat_file(file.path());
    (void)convert_gotcha_to_cphd({file.path()}, cphd_path);
  } catch (const std::exception &) {
  }
  return 0;
}
