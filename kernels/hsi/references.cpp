#include "hsi/references.h"

#include <cmath>
#include <stdexcept>

#include "hsi/text_parse.h"

namespace cs::hsi {

std::vector<int> select_bands(size_t band_count, const std::vector<uint8_t> &bbl, size_t first_band, size_t last_band,
                              bool honour_bbl) {
  if (band_count == 0) throw std::invalid_argument("the cube has no bands");
  if (!bbl.empty() && bbl.size() != band_count)
    throw std::invalid_argument("bad band list has " + std::to_string(bbl.size()) + " entries for " +
                                std::to_string(band_count) + " bands");
  const size_t last = std::min(last_band, band_count - 1);
  if (first_band > last)
    throw std::invalid_argument("band range " + std::to_string(first_band) + ".." + std::to_string(last) +
                                " selects no band of the cube's " + std::to_string(band_count) + " (0.." +
                                std::to_string(band_count - 1) + ")");
  std::vector<int> bands;
  for (size_t b = first_band; b <= last; ++b)
    if (!honour_bbl || bbl.empty() || bbl[b]) bands.push_back(int(b));
  if (bands.empty())
    throw std::invalid_argument("every band in " + std::to_string(first_band) + ".." + std::to_string(last) +
                                " is marked bad in the bad band list");
  return bands;
}

namespace {

std::vector<size_t> requested_entries(const SpectralLibrary &library, const ReferenceRequest &request) {
  std::vector<size_t> entries;
  for (const std::string &wanted : request.names) {
    const std::string_view w = text::trim(wanted);
    size_t found = library.entries();
    for (size_t i = 0; i < library.entries() && found == library.entries(); ++i)
      if (text::trim(library.names[i]) == w) found = i;
    if (found == library.entries())
      throw std::invalid_argument(library.source + ": no entry named '" + wanted + "'");
    entries.push_back(found);
  }
  for (size_t index : request.indices) {
    if (index >= library.entries())
      throw std::invalid_argument(library.source + ": entry index " + std::to_string(index) + " is beyond its " +
                                  std::to_string(library.entries()) + " entries");
    entries.push_back(index);
  }
  if (request.names.empty() && request.indices.empty())
    for (size_t i = 0; i < library.entries(); ++i) entries.push_back(i);
  // The later of two equal classes could never be a pixel's: a listing mistake.
  for (size_t k = 0; k < entries.size(); ++k)
    for (size_t j = 0; j < k; ++j)
      if (entries[j] == entries[k])
        throw std::invalid_argument(library.source + ": entry " + std::to_string(entries[k]) + " ('" +
                                    library.names[entries[k]] + "') is listed twice (classes " +
                                    std::to_string(j + 1) + " and " + std::to_string(k + 1) + ")");
  return entries;
}

}  // namespace

ReferenceChoice choose_references(const SpectralLibrary &library, size_t cube_bands, const ReferenceRequest &request) {
  if (library.channels != cube_bands)
    throw std::invalid_argument(library.source + " has " + std::to_string(library.channels) +
                                " channels but the cube has " + std::to_string(cube_bands) +
                                " bands: resample the library to the cube's wavelengths first");
  const std::vector<size_t> entries = requested_entries(library, request);
  if (entries.empty()) throw std::invalid_argument(library.source + ": the library has no entries");
  for (int b : request.bands)
    if (b < 0 || size_t(b) >= cube_bands)
      throw std::invalid_argument("band " + std::to_string(b) + " is outside the cube's " + std::to_string(cube_bands));

  const bool listed = !request.names.empty() || !request.indices.empty();
  ReferenceChoice choice;
  for (int b : request.bands) {
    bool any_data = false;
    for (size_t e : entries) any_data = any_data || !std::isnan(library.entry(e)[b]);
    (any_data ? choice.bands : choice.uncovered_bands).push_back(b);
  }
  if (choice.bands.empty()) {
    std::string which = library.source;
    if (listed) {  // name them: all NaN there is as likely as ranges that miss each other
      which += ": ";
      for (size_t i = 0; i < entries.size(); ++i) which += (i ? ", '" : "'") + library.names[entries[i]] + "'";
    }
    throw std::invalid_argument(which + " has no data at any of the " + std::to_string(request.bands.size()) +
                                " selected bands (NaN there, or wavelength ranges that do not overlap?)");
  }

  ReferenceSet &refs = choice.references;
  refs.bands = cube_bands;
  for (size_t e : entries) {
    const float *spectrum = library.entry(e);
    size_t missing = 0;
    int first_missing = -1;
    for (int b : choice.bands)
      if (std::isnan(spectrum[b])) {
        if (missing++ == 0) first_missing = b;
      }
    if (missing > 0) {
      std::string reason = "no data at " + std::to_string(missing) + " of the " + std::to_string(choice.bands.size()) +
                           " selected bands (first: band " + std::to_string(first_missing);
      if (size_t(first_missing) < library.wavelengths_nm.size())
        reason += ", " + std::to_string(library.wavelengths_nm[first_missing]) + " nm";
      reason += ")";
      // A listed entry left out would shift every later one's place.
      if (listed)
        throw std::invalid_argument(library.source + ": listed entry '" + library.names[e] + "' has " + reason +
                                    "; only entries with data at every selected band can be listed");
      choice.skipped.push_back({e, library.names[e], reason});
      continue;
    }
    refs.names.push_back(library.names[e]);
    refs.library_indices.push_back(e);
    refs.spectra.insert(refs.spectra.end(), spectrum, spectrum + cube_bands);
  }
  if (refs.count() == 0)
    throw std::invalid_argument(library.source + ": every chosen entry lacks data at some selected band (" +
                                std::to_string(choice.skipped.size()) + " skipped; first: '" +
                                choice.skipped.front().name + "': " + choice.skipped.front().reason + ")");
  return choice;
}

}  // namespace cs::hsi
