// Helpers for the hyperspectral kernel tests: scratch folders, raw files,
// synthetic ENVI files, and running the Python reference script.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "hsi/envi.h"
#include "hsi/references.h"
#include "test_support.h"

namespace hsi_test {

namespace fs = std::filesystem;

// A scratch folder removed at the end of the test.
class ScratchDir {
 public:
  ScratchDir() {
    const char *tmp = std::getenv("TMPDIR");
    std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/cs-hsi-XXXXXX";
    std::vector<char> buf(pattern.begin(), pattern.end());
    buf.push_back('\0');
    if (!mkdtemp(buf.data())) throw std::runtime_error("mkdtemp failed");
    path_ = buf.data();
  }
  ~ScratchDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  std::string file(const std::string &name) const { return path_ + "/" + name; }
  const std::string &path() const { return path_; }

 private:
  std::string path_;
};

inline void write_text(const std::string &path, const std::string &text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  if (!out) throw std::runtime_error("cannot write " + path);
}

inline void write_bytes(const std::string &path, const void *data, size_t bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(static_cast<const char *>(data), std::streamsize(bytes));
  if (!out) throw std::runtime_error("cannot write " + path);
}

template <class T>
void write_raw(const std::string &path, const std::vector<T> &values) {
  write_bytes(path, values.data(), values.size() * sizeof(T));
}

template <class T>
std::vector<T> read_raw(const std::string &path, size_t count) {
  std::vector<T> values(count);
  std::ifstream in(path, std::ios::binary);
  in.read(reinterpret_cast<char *>(values.data()), std::streamsize(count * sizeof(T)));
  if (!in || in.gcount() != std::streamsize(count * sizeof(T)))
    throw std::runtime_error("cannot read " + std::to_string(count) + " values from " + path);
  return values;
}

// The real data folder's file, or "" when the data is absent.
inline std::string shared_file(const std::string &relative) {
  const std::string dir = cs_test::shared_data_dir();
  if (dir.empty()) return "";
  const std::string path = dir + "/" + relative;
  return fs::exists(path) ? path : "";
}

inline const std::vector<std::string> &aviris_ng_tiles() {
  static const std::vector<std::string> tiles = {
      "hsi/aviris-ng/ang20140912t192359_corr_v1c_img_2580-2590_540-550.hdr",
      "hsi/aviris-ng/ang20140912t192359_corr_v1c_img_400-410_10-20.hdr",
      "hsi/aviris-ng/ang20150420t182808_corr_v1e_img_4200-4210_70-80.hdr",
  };
  return tiles;
}
inline const char *kUsgsLibrary = "hsi/usgs/s07_AV95_envi.hdr";

#define HSI_REQUIRE_SHARED(var, relative)                                                             \
  const std::string var = hsi_test::shared_file(relative);                                           \
  if (var.empty())                                                                                   \
    GTEST_SKIP() << "real data " << (relative) << " is absent (CS_SHARED_DATA="                      \
                 << cs_test::shared_data_dir() << "; see ../shared/data/README.md)";                   \
  (void)var;

// --- Python reference (Debian's python3-numpy and python3-spectral) ---

inline std::string python() {
  const char *p = std::getenv("CS_PYTHON");
  return p && *p ? p : "/usr/bin/python3";
}

inline std::string reference_script() {
  const char *root = std::getenv("CS_SOURCE_ROOT");
  const std::string base = root && *root ? root : ".";
  return base + "/tests/kernels/hsi/hsi_reference.py";
}

inline std::string shell_quote(const std::string &s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// Empty when `modules` import; otherwise why not.
inline std::string python_missing(const std::string &modules) {
  const std::string cmd = shell_quote(python()) + " -c " + shell_quote("import " + modules) + " >/dev/null 2>&1";
  if (std::system(cmd.c_str()) != 0) return python() + " cannot import " + modules;
  if (!fs::exists(reference_script())) return "reference script " + reference_script() + " not found (CS_SOURCE_ROOT?)";
  return "";
}

#define HSI_REQUIRE_PYTHON(modules)                                                                         \
  do {                                                                                                      \
    const std::string why = hsi_test::python_missing(modules);                                              \
    if (!why.empty())                                                                                       \
      GTEST_SKIP() << why << " (install python3-numpy python3-spectral python3-scipy, or set CS_PYTHON)";  \
  } while (0)

// Runs the reference script with `args`; fails the test with its output on error.
inline bool run_reference(const std::vector<std::string> &args, const std::string &log_path) {
  std::string cmd = shell_quote(python()) + " " + shell_quote(reference_script());
  for (const std::string &a : args) cmd += " " + shell_quote(a);
  cmd += " >" + shell_quote(log_path) + " 2>&1";
  const int rc = std::system(cmd.c_str());
  if (rc != 0) {
    std::ifstream in(log_path);
    std::stringstream log;
    log << in.rdbuf();
    ADD_FAILURE() << "reference script failed (" << rc << "): " << cmd << "\n" << log.str();
    return false;
  }
  return true;
}

// --- synthetic ENVI files ---

// Stores `value` (held in a uint64 as its bit pattern) as `size` bytes in `order`.
inline void put_sample(std::vector<uint8_t> &out, size_t at, uint64_t bits, size_t size, cs::hsi::ByteOrder order) {
  for (size_t i = 0; i < size; ++i) {
    const uint8_t byte = uint8_t(bits >> (8 * i));  // least significant first
    out[at + (order == cs::hsi::ByteOrder::little_endian ? i : size - 1 - i)] = byte;
  }
}

// Offset, in samples, of (line, sample, band) in a whole ENVI file.
inline size_t file_index(cs::hsi::Interleave il, size_t lines, size_t samples, size_t bands, size_t line,
                         size_t sample, size_t band) {
  switch (il) {
    case cs::hsi::Interleave::bip: return (line * samples + sample) * bands + band;
    case cs::hsi::Interleave::bil: return (line * bands + band) * samples + sample;
    case cs::hsi::Interleave::bsq: return (band * lines + line) * samples + sample;
  }
  return 0;
}

inline std::string basic_header(size_t samples, size_t lines, size_t bands, cs::hsi::DataType type,
                                cs::hsi::Interleave il, cs::hsi::ByteOrder order, size_t header_offset = 0) {
  std::ostringstream h;
  h << "ENVI\ndescription = {synthetic test cube}\nsamples = " << samples << "\nlines   = " << lines
    << "\nbands = " << bands << "\nheader offset = " << header_offset << "\nfile type = ENVI Standard\ndata type = "
    << int(type) << "\ninterleave = " << cs::hsi::interleave_name(il) << "\nbyte order = " << int(order) << "\n";
  return h.str();
}

// Of `candidates`, the entries of `library` (on the cube's bands) with data
// at every one of `bands` that some entry covers: those a request may list
// (choose_references refuses a listed entry with gaps; unlisted, it skips it).
inline std::vector<size_t> complete_entries(const cs::hsi::SpectralLibrary &library, size_t cube_bands,
                                            const std::vector<int> &bands, const std::vector<size_t> &candidates) {
  cs::hsi::ReferenceRequest every;
  every.bands = bands;
  std::vector<bool> gaps(library.entries(), false);
  for (const cs::hsi::SkippedEntry &s : cs::hsi::choose_references(library, cube_bands, every).skipped)
    gaps[s.library_index] = true;
  std::vector<size_t> complete;
  for (size_t e : candidates)
    if (!gaps[e]) complete.push_back(e);
  return complete;
}

}  // namespace hsi_test
