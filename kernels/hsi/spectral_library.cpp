// Reading spectral libraries (ENVI, CSV) and resampling them.
#include "hsi/spectral_library.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>

#include "hsi/convert.h"
#include "hsi/envi.h"
#include "hsi/text_parse.h"

namespace cs::hsi {

size_t SpectralLibrary::missing_samples(size_t i) const {
  const float *e = entry(i);
  return size_t(std::count_if(e, e + channels, [](float v) { return std::isnan(v); }));
}

SpectralLibrary read_envi_library(const std::string &path) {
  EnviReader reader(path);
  const EnviHeader &h = reader.header();
  if (!h.is_spectral_library()) {
    const EnviField *f = h.find("file type");
    throw EnviError(reader.header_path() + (f ? " line " + std::to_string(f->line) : std::string()) +
                    ": key 'file type': '" + h.file_type + "' is not 'ENVI Spectral Library'");
  }
  if (h.bands != 1) {
    throw EnviError(reader.header_path() + " line " + std::to_string(h.find("bands")->line) +
                    ": key 'bands': a spectral library has bands = 1 (samples = channels, lines = spectra), found " +
                    std::to_string(h.bands));
  }
  SpectralLibrary lib;
  lib.source = reader.header_path();
  lib.channels = h.samples;
  lib.wavelengths_nm = h.wavelengths_nm();
  lib.fwhm_nm = h.fwhm_nm();
  lib.names = h.spectra_names;
  if (lib.names.empty())
    for (size_t i = 0; i < h.lines; ++i) lib.names.push_back("spectrum " + std::to_string(i + 1));
  const std::vector<uint8_t> raw = reader.read_lines(0, h.lines);
  lib.spectra.resize(h.lines * h.samples);
  // One band: every interleave stores the entries as rows of channels.
  convert_to_bip_float(make_cube_block(h, raw.data(), h.lines), lib.spectra.data());
  const bool float_samples = h.data_type == DataType::f32 || h.data_type == DataType::f64;
  if (float_samples && h.data_ignore_value && std::fabs(*h.data_ignore_value) >= 1e20) {
    const double sentinel = *h.data_ignore_value;
    // The spectra are already divided by the scale factor.
    const double threshold = std::sqrt(std::fabs(sentinel)) / std::fabs(h.reflectance_scale_factor.value_or(1.0));
    const double sign = sentinel < 0 ? -1.0 : 1.0;
    for (float &v : lib.spectra)
      if (double(v) * sign >= threshold) {  // false for NaN (exact matches are NaN already)
        v = std::numeric_limits<float>::quiet_NaN();
        ++lib.near_ignore_samples;
      }
  }
  return lib;
}

namespace {

// One CSV record split into cells; handles "quoted, cells" and "" escapes.
std::vector<std::string> split_csv_row(const std::string &line, const std::string &source, int line_number) {
  std::vector<std::string> cells;
  std::string cell;
  bool quoted = false, was_quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        cell += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        cell += c;
      }
    } else if (c == '"') {
      quoted = was_quoted = true;
    } else if (c == ',') {
      cells.push_back(was_quoted ? cell : std::string(text::trim(cell)));
      cell.clear();
      was_quoted = false;
    } else {
      cell += c;
    }
  }
  if (quoted) throw EnviError(source + " line " + std::to_string(line_number) + ": a quoted cell is not closed");
  cells.push_back(was_quoted ? cell : std::string(text::trim(cell)));
  return cells;
}

// Nanometres per unit named in a column title such as "wavelength (um)"; 0 if none.
double unit_in_title(const std::string &title) {
  std::string word;
  double found = 0;
  auto flush = [&] {
    if (!word.empty() && found == 0) found = nanometres_per_unit(word);
    word.clear();
  };
  for (char c : text::lower(title)) {
    if ((c >= 'a' && c <= 'z') || c == '\xc2' || c == '\xb5')
      word += c;
    else
      flush();
  }
  flush();
  return found == 1e9 ? 0 : found;  // a lone "m" in a title is not a unit
}

}  // namespace

SpectralLibrary read_csv_library(const std::string &path, const CsvLibraryOptions &options) {
  std::ifstream in(path);
  if (!in) throw EnviError(path + ": cannot open the CSV library");
  SpectralLibrary lib;
  lib.source = path;
  std::vector<std::string> titles;
  int fwhm_column = -1;
  double unit_scale = 0;
  std::vector<std::vector<float>> columns;  // one per entry
  std::vector<double> wavelengths, fwhm;
  std::string line;
  int line_number = 0;
  auto fail = [&](const std::string &message) -> void {
    throw EnviError(path + " line " + std::to_string(line_number) + ": " + message);
  };
  while (std::getline(in, line)) {
    ++line_number;
    const std::string_view trimmed = text::trim(line);
    if (trimmed.empty() || trimmed.front() == '#') continue;
    const std::vector<std::string> cells = split_csv_row(line, path, line_number);
    if (titles.empty()) {
      titles = cells;
      if (titles.size() < 2) fail("the header row needs a wavelength column and at least one spectrum column");
      unit_scale = unit_in_title(titles[0]);
      for (size_t c = 1; c < titles.size(); ++c) {
        if (text::normalise_key(titles[c]).rfind("fwhm", 0) == 0 && fwhm_column < 0) {
          fwhm_column = int(c);
        } else {
          lib.names.push_back(titles[c]);
        }
      }
      if (lib.names.empty()) fail("the header row names no spectrum column");
      columns.resize(lib.names.size());
      continue;
    }
    if (cells.size() != titles.size())
      fail("has " + std::to_string(cells.size()) + " cells but the header row has " + std::to_string(titles.size()));
    const auto wl = text::parse_double(cells[0]);
    if (!wl || !std::isfinite(*wl)) fail("column 1 ('" + titles[0] + "'): '" + cells[0] + "' is not a wavelength");
    wavelengths.push_back(*wl);
    size_t entry = 0;
    for (size_t c = 1; c < cells.size(); ++c) {
      std::optional<double> v;
      const std::string lowered = text::lower(cells[c]);
      const bool missing = cells[c].empty() || lowered == "nan" || lowered == "na";
      if (!missing) {
        v = text::parse_double(cells[c]);
        if (!v)
          fail("column " + std::to_string(c + 1) + " ('" + titles[c] + "'): '" + cells[c] + "' is not a number");
      }
      if (int(c) == fwhm_column) {
        if (!v || !(*v > 0)) fail("column " + std::to_string(c + 1) + " (fwhm): widths must be positive numbers");
        fwhm.push_back(*v);
        continue;
      }
      const bool ignored = v && options.data_ignore_value && *v == *options.data_ignore_value;
      columns[entry++].push_back(missing || ignored ? std::numeric_limits<float>::quiet_NaN() : float(*v));
    }
  }
  if (titles.empty()) throw EnviError(path + ": the CSV library is empty");
  if (wavelengths.empty()) throw EnviError(path + ": the CSV library has a header row but no data rows");
  if (unit_scale == 0)
    unit_scale = *std::max_element(wavelengths.begin(), wavelengths.end()) < 100.0 ? 1e3 : 1.0;
  lib.channels = wavelengths.size();
  for (double w : wavelengths) lib.wavelengths_nm.push_back(w * unit_scale);
  for (double f : fwhm) lib.fwhm_nm.push_back(f * unit_scale);
  lib.spectra.reserve(lib.names.size() * lib.channels);
  for (const std::vector<float> &column : columns) lib.spectra.insert(lib.spectra.end(), column.begin(), column.end());
  return lib;
}

SpectralLibrary read_spectral_library(const std::string &path) {
  const std::string lowered = text::lower(path);
  if (lowered.size() >= 4 && lowered.compare(lowered.size() - 4, 4, ".csv") == 0) return read_csv_library(path);
  return read_envi_library(path);
}

bool same_wavelengths(const std::vector<double> &a, const std::vector<double> &b, double tolerance_nm) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (!(std::fabs(a[i] - b[i]) <= tolerance_nm)) return false;
  return true;
}

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kPi = 3.14159265358979323846;

// The library's channels sorted by wavelength. Channels need not come in
// order: instruments with several spectrometers (AVIRIS) repeat a stretch of
// wavelengths where the spectrometers overlap. Channels at exactly the same
// wavelength become one grid point.
struct ChannelGrid {
  std::vector<double> wavelengths;           // strictly increasing
  std::vector<std::vector<size_t>> sources;  // library channels at each wavelength
};

ChannelGrid channel_grid(const SpectralLibrary &lib) {
  std::vector<size_t> order(lib.channels);
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return lib.wavelengths_nm[a] < lib.wavelengths_nm[b]; });
  ChannelGrid grid;
  for (size_t channel : order) {
    if (grid.wavelengths.empty() || lib.wavelengths_nm[channel] != grid.wavelengths.back()) {
      grid.wavelengths.push_back(lib.wavelengths_nm[channel]);
      grid.sources.emplace_back();
    }
    grid.sources.back().push_back(channel);
  }
  return grid;
}

// An entry's values on the grid: the mean of the channels at a grid
// wavelength that have data; NaN when none has.
void values_on_grid(const ChannelGrid &grid, const float *entry, std::vector<double> &out) {
  out.resize(grid.wavelengths.size());
  for (size_t i = 0; i < grid.sources.size(); ++i) {
    double sum = 0;
    size_t count = 0;
    for (size_t channel : grid.sources[i])
      if (!std::isnan(entry[channel])) {
        sum += entry[channel];
        ++count;
      }
    out[i] = count ? sum / double(count) : kNaN;
  }
}

// Linear interpolation at x, like numpy.interp with NaN outside the range.
double interpolate_linear(const std::vector<double> &w, const std::vector<double> &v, double x) {
  if (!(x >= w.front() && x <= w.back())) return kNaN;
  if (x == w.back()) return v.back();
  const size_t j = size_t(std::upper_bound(w.begin(), w.end(), x) - w.begin()) - 1;
  const double t = (x - w[j]) / (w[j + 1] - w[j]);
  return v[j] + t * (v[j + 1] - v[j]);  // NaN if either neighbour is missing
}

// Integral of the piecewise-linear library against a Gaussian of centre c
// and width sigma over [lo, hi], divided by the Gaussian's integral there.
double integrate_gaussian(const std::vector<double> &w, const std::vector<double> &v, double c, double sigma,
                          double lo, double hi) {
  const double root2_sigma = std::sqrt(2.0) * sigma;
  double weighted = 0, weight = 0;
  size_t j = size_t(std::upper_bound(w.begin(), w.end(), lo) - w.begin());
  j = j > 0 ? j - 1 : 0;
  for (; j + 1 < w.size() && w[j] < hi; ++j) {
    const double a = std::max(w[j], lo), b = std::min(w[j + 1], hi);
    if (!(b > a)) continue;
    const double slope = (v[j + 1] - v[j]) / (w[j + 1] - w[j]);
    // For g(x) = exp(-(x-c)^2 / 2 sigma^2):
    //   int_a^b g dx       = sigma sqrt(pi/2) (erf((b-c)/(sqrt2 sigma)) - erf((a-c)/(sqrt2 sigma)))
    //   int_a^b (x-c) g dx = sigma^2 (g(a) - g(b))
    const double g0 = sigma * std::sqrt(kPi / 2) * (std::erf((b - c) / root2_sigma) - std::erf((a - c) / root2_sigma));
    const double g1 = sigma * sigma *
                      (std::exp(-(a - c) * (a - c) / (2 * sigma * sigma)) - std::exp(-(b - c) * (b - c) / (2 * sigma * sigma)));
    // library(x) = v[j] + slope (x - w[j]) = (v[j] + slope (c - w[j])) + slope (x - c)
    weighted += (v[j] + slope * (c - w[j])) * g0 + slope * g1;
    weight += g0;
  }
  return weight > 0 ? weighted / weight : kNaN;
}

}  // namespace

SpectralLibrary resample_library(const SpectralLibrary &library, const std::vector<double> &target_nm,
                                 const std::vector<double> &target_fwhm_nm, ResampleMethod method) {
  if (library.wavelengths_nm.size() != library.channels || library.channels < 2)
    throw EnviError(library.source + ": the library has no wavelengths for its " + std::to_string(library.channels) +
                    " channels, so it cannot be resampled to other bands");
  if (method == ResampleMethod::gaussian && target_fwhm_nm.size() != target_nm.size())
    throw std::invalid_argument("Gaussian resampling needs one FWHM per target band (" +
                                std::to_string(target_fwhm_nm.size()) + " given for " +
                                std::to_string(target_nm.size()) + " bands)");
  const ChannelGrid grid = channel_grid(library);
  const std::vector<double> &w = grid.wavelengths;
  if (w.size() < 2) throw EnviError(library.source + ": the library's channels are all at one wavelength");
  std::vector<double> v;

  SpectralLibrary out;
  out.source = library.source;
  out.names = library.names;
  out.wavelengths_nm = target_nm;
  if (method == ResampleMethod::gaussian) out.fwhm_nm = target_fwhm_nm;
  out.channels = target_nm.size();
  out.spectra.resize(library.entries() * out.channels);
  constexpr double kFwhmPerSigma = 2.3548200450309493;  // 2 sqrt(2 ln 2)
  for (size_t e = 0; e < library.entries(); ++e) {
    values_on_grid(grid, library.entry(e), v);
    float *dst = out.spectra.data() + e * out.channels;
    for (size_t t = 0; t < target_nm.size(); ++t) {
      double value;
      if (method == ResampleMethod::linear) {
        value = interpolate_linear(w, v, target_nm[t]);
      } else {
        const double half_window = 1.5 * target_fwhm_nm[t];
        const double lo = target_nm[t] - half_window, hi = target_nm[t] + half_window;
        value = (lo >= w.front() && hi <= w.back())
                    ? integrate_gaussian(w, v, target_nm[t], target_fwhm_nm[t] / kFwhmPerSigma, lo, hi)
                    : kNaN;
      }
      dst[t] = float(value);
    }
  }
  return out;
}

}  // namespace cs::hsi
