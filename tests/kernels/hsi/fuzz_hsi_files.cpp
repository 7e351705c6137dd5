// libFuzzer target for the hyperspectral file formats: any byte string must
// parse (or read) or throw; never crash, hang or read out of bounds. Built and
// run by tests/run-fuzzer.sh hsi (clang -fsanitize=fuzzer,address,undefined).
// The first byte chooses what the rest is, modulo 4:
//   0  ENVI header text (with its derived values)
//   1  a CSV spectral library
//   2  an ENVI image: header text, a NUL, the data file; every line is read and converted to float
//   3  an ENVI spectral library: header text, a NUL, the data file
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "hsi/convert.h"
#include "hsi/envi.h"
#include "hsi/spectral_library.h"

using namespace cs::hsi;

namespace {

const std::string base = "/tmp/cs-fuzz-hsi-" + std::to_string(getpid());

void write_file(const std::string &path, const std::string &bytes) {
  if (FILE *f = std::fopen(path.c_str(), "wb")) {
    std::fwrite(bytes.data(), 1, bytes.size(), f);
    std::fclose(f);
  }
}

void read_image(const std::string &header_path) {
  const EnviReader reader(header_path);
  const EnviHeader &h = reader.header();
  const size_t lines = h.lines;
  const std::vector<uint8_t> block = reader.read_lines(0, lines);
  const CubeBlock cube = make_cube_block(h, block.data(), lines);
  std::vector<float> values(lines * h.samples * h.bands);
  convert_to_bip_float(cube, values.data());
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  std::atexit([] {
    for (const char *suffix : {".csv", ".hdr", ".img"}) std::remove((base + suffix).c_str());
  });
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0) return 0;
  const int mode = data[0] % 4;
  const std::string text(reinterpret_cast<const char *>(data) + 1, size - 1);
  try {
    if (mode == 0) {
      const EnviHeader h = parse_envi_header(text, "fuzz.hdr");
      (void)h.data_bytes();
      (void)h.spectral_channels();
      (void)h.wavelengths_nm();
      (void)h.fwhm_nm();
      for (size_t b = 0; b < h.bands && b < 4096; ++b) (void)h.band_is_good(b);
    } else if (mode == 1) {  // from a file, as the element reads it
      write_file(base + ".csv", text);
      (void)read_csv_library(base + ".csv");
    } else {
      const size_t split = text.find('\0');
      if (split == std::string::npos) return 0;
      write_file(base + ".hdr", text.substr(0, split));
      write_file(base + ".img", text.substr(split + 1));
      if (mode == 2)
        read_image(base + ".hdr");
      else
        (void)read_envi_library(base + ".hdr");
    }
  } catch (const std::exception &) {
  }
  return 0;
}
