// Choosing what to classify with: the cube's bands (bad band list, a band
// range) and the library entries (by name or index), with every entry that
// cannot be used reported rather than silently changed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "hsi/spectral_library.h"

namespace cs::hsi {

// Bands first_band..last_band (inclusive, 0-based; last_band beyond the cube
// means the last band), without the bands `bbl` marks bad when honour_bbl.
// Throws std::invalid_argument when the range is empty or outside the cube.
std::vector<int> select_bands(size_t band_count, const std::vector<uint8_t> &bbl, size_t first_band = 0,
                              size_t last_band = std::numeric_limits<size_t>::max(), bool honour_bbl = true);

// K reference spectra over all of a cube's bands.
struct ReferenceSet {
  std::vector<std::string> names;
  std::vector<size_t> library_indices;  // where each came from in the library
  size_t bands = 0;
  std::vector<float> spectra;  // K x bands

  size_t count() const { return names.size(); }
  const float *spectrum(size_t k) const { return spectra.data() + k * bands; }
};

struct SkippedEntry {
  size_t library_index = 0;
  std::string name;
  std::string reason;
};

struct ReferenceRequest {
  // Entries by name (exact match after trimming spaces) and by 0-based
  // index, in this order; both empty = every entry.
  std::vector<std::string> names;
  std::vector<size_t> indices;
  // Candidate bands (select_bands).
  std::vector<int> bands;
};

struct ReferenceChoice {
  ReferenceSet references;
  std::vector<int> bands;             // the bands to classify with
  std::vector<int> uncovered_bands;   // candidates no chosen entry has data for (dropped)
  std::vector<SkippedEntry> skipped;  // entries without data at some of `bands`
};

// `library` must already be on the cube's bands (resample_library), so its
// channel count is the cube's band count. Bands where none of the chosen
// entries has data (outside the library's range) are dropped; then, with
// every entry chosen (an empty request), an entry missing any remaining band
// is skipped and reported, never zero-filled. Entries the request lists keep
// their order and places: one missing a remaining band is an error naming it.
// Throws std::invalid_argument for unknown names, bad indices, a listed entry
// without data, a channel count that differs from the cube's, or nothing left
// to classify with (naming the listed entries).
ReferenceChoice choose_references(const SpectralLibrary &library, size_t cube_bands, const ReferenceRequest &request);

}  // namespace cs::hsi
