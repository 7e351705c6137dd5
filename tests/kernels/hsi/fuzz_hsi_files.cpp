// libFuzzer target for the hyperspectral text formats: any byte string, as
// an ENVI header (with its derived values) or as a CSV spectral library,
// must parse or throw; never crash, hang or read out of bounds. Built and
// run by tests/run-fuzzer.sh hsi (clang -fsanitize=fuzzer,address,undefined).
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <exception>
#include <string>

#include "hsi/envi.h"
#include "hsi/spectral_library.h"

using namespace cs::hsi;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0) return 0;
  const std::string text(reinterpret_cast<const char *>(data) + 1, size - 1);
  if (data[0] & 1) {  // a CSV library, from a file as the element reads it
    static const std::string path = "/tmp/cs-fuzz-hsi-" + std::to_string(getpid()) + ".csv";
    if (FILE *f = std::fopen(path.c_str(), "wb")) {
      std::fwrite(text.data(), 1, text.size(), f);
      std::fclose(f);
    }
    try {
      const SpectralLibrary library = read_csv_library(path);
      (void)library;
    } catch (const std::exception &) {
    }
    return 0;
  }
  try {
    const EnviHeader h = parse_envi_header(text, "fuzz.hdr");
    (void)h.data_bytes();
    (void)h.spectral_channels();
    (void)h.wavelengths_nm();
    (void)h.fwhm_nm();
    for (size_t b = 0; b < h.bands && b < 4096; ++b) (void)h.band_is_good(b);
  } catch (const std::exception &) {
  }
  return 0;
}
