// Spectral libraries (reference spectra): ENVI .sli + .hdr and CSV, and
// resampling a library onto a cube's bands.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace cs::hsi {

struct SpectralLibrary {
  std::string source;                  // file, for messages
  std::vector<std::string> names;      // one per entry
  std::vector<double> wavelengths_nm;  // band centres, nanometres (may be empty)
  std::vector<double> fwhm_nm;         // band widths, nanometres (may be empty)
  size_t channels = 0;                 // values per entry
  // entries x channels, entry-major. A sample the file marks with its data
  // ignore value (or leaves empty in CSV) is NaN here: missing, never zero.
  std::vector<float> spectra;
  // Samples that were not exactly the ignore value but part of it, also made
  // missing (see read_envi_library).
  size_t near_ignore_samples = 0;

  size_t entries() const { return names.size(); }
  const float *entry(size_t i) const { return spectra.data() + i * channels; }
  // Number of missing (NaN) samples of entry i.
  size_t missing_samples(size_t i) const;
};

// An ENVI spectral library: `file type = ENVI Spectral Library`, samples =
// channels, lines = entries, bands = 1, `spectra names`. Any data type, byte
// order and reflectance scale factor. A huge ignore value (a sentinel of
// magnitude >= 1e20, like USGS's -1.23e+34) also marks float samples of its
// sign whose magnitude is at least its square root (on a log scale, nearer
// the sentinel than any reflectance): libraries convolved to an instrument's
// bands blend the sentinel into neighbouring channels (splib07 holds values
// from -1.7e+25 to -1.2300006e+34 there). Throws EnviError.
SpectralLibrary read_envi_library(const std::string &path);

// CSV: a header row, then one row per channel:
//     wavelength (nm), fwhm, Name A, Name B, ...
//     400.0, 10.0, 0.12, 0.31, ...
// The first column holds the wavelengths; its title may name the unit
// (nm, nanometers, um, micrometers, microns), else values below 100 are
// micrometres. An optional column titled `fwhm` holds band widths. Cells
// that are empty, `nan`, or equal to `data_ignore_value` are missing. Lines
// starting with '#' are comments. Cells may be double-quoted.
struct CsvLibraryOptions {
  std::optional<double> data_ignore_value;
};
SpectralLibrary read_csv_library(const std::string &path, const CsvLibraryOptions &options = {});

// By extension: .csv (any case) is CSV, anything else ENVI.
SpectralLibrary read_spectral_library(const std::string &path);

enum class ResampleMethod {
  linear,    // linear interpolation between the library's channels
  gaussian,  // the library (piecewise linear) weighted by each target band's
             // Gaussian response of the given FWHM
};

// True when both lists name the same bands (within tolerance_nm).
bool same_wavelengths(const std::vector<double> &a, const std::vector<double> &b, double tolerance_nm = 0.01);

// The library resampled onto target bands (nanometres). The library's
// channels are taken in wavelength order whatever order they are stored in
// (multi-spectrometer instruments overlap); channels at the same wavelength
// are averaged. A target band the
// library does not cover is NaN in every entry: for linear, a centre outside
// the library's range; for gaussian, a response window (centre +- 1.5 FWHM)
// not wholly inside it. A target band whose interpolation touches a missing
// sample is NaN in that entry. Gaussian needs target_fwhm_nm (one per band).
SpectralLibrary resample_library(const SpectralLibrary &library, const std::vector<double> &target_nm,
                                 const std::vector<double> &target_fwhm_nm, ResampleMethod method);

}  // namespace cs::hsi
