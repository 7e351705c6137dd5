// Helpers shared by the SAR kernel tests.
#pragma once

#include <unistd.h>

#include <complex>
#include <cstdio>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace sar_test {

// A file path in a fresh temporary folder, removed with the object.
class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/cs-sar-test-XXXXXX";
    const char *d = mkdtemp(tmpl);
    dir_ = d ? d : "/tmp";
  }
  ~TempDir() {
    for (const std::string &f : files_) std::remove(f.c_str());
    rmdir(dir_.c_str());
  }
  std::string file(const std::string &name) {
    files_.push_back(dir_ + "/" + name);
    return files_.back();
  }

 private:
  std::string dir_;
  std::vector<std::string> files_;
};

inline std::string read_file(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline void write_file(const std::string &path, const std::string &bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

inline std::vector<std::complex<float>> random_complex(size_t n, std::mt19937_64 &rng, float scale = 1.0f) {
  std::normal_distribution<float> g(0.0f, scale);
  std::vector<std::complex<float>> v(n);
  for (auto &x : v) x = {g(rng), g(rng)};
  return v;
}

}  // namespace sar_test
