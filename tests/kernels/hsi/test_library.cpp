// Spectral libraries: ENVI .sli and CSV reading, missing samples, resampling
// (against numpy), and choosing references and bands.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "hsi/envi.h"
#include "hsi/references.h"
#include "hsi/spectral_library.h"
#include "hsi_test_util.h"

using namespace cs::hsi;
using hsi_test::ScratchDir;

TEST(SpectralLibrary, EnviLibraryWithIgnoreValuesAndScale) {
  const uint32_t seed = cs_test::fresh_seed();
  std::mt19937_64 rng(seed);
  ScratchDir dir;
  const size_t channels = 5 + rng() % 20, entries = 4 + rng() % 6;
  const int16_t ignore = -9999;
  std::vector<int16_t> values(entries * channels);
  std::vector<size_t> expected_missing(entries, 0);
  for (size_t e = 0; e < entries; ++e)
    for (size_t c = 0; c < channels; ++c) {
      int16_t v = int16_t(rng() % 10000);
      if (e % 2 == 1 && rng() % 4 == 0) {
        v = ignore;
        ++expected_missing[e];
      }
      values[e * channels + c] = v;
    }
  // Big endian int16, as some libraries are written.
  std::vector<uint8_t> file(values.size() * 2);
  for (size_t i = 0; i < values.size(); ++i) hsi_test::put_sample(file, 2 * i, uint16_t(values[i]), 2, ByteOrder::big_endian);
  hsi_test::write_bytes(dir.file("lib.sli"), file.data(), file.size());
  std::ostringstream h;
  h << "ENVI\nsamples = " << channels << "\nlines = " << entries
    << "\nbands = 1\nheader offset = 0\nfile type = ENVI Spectral Library\ndata type = 2\ninterleave = bsq\n"
       "byte order = 1\nwavelength units = Micrometers\nreflectance scale factor = 10000\n"
       "data ignore value = -9999\nwavelength = {";
  for (size_t c = 0; c < channels; ++c) h << (c ? ", " : "") << 0.4 + 0.1 * double(c);
  h << "}\nspectra names = {";
  for (size_t e = 0; e < entries; ++e) h << (e ? ",\n  " : "") << "Mineral " << e;
  h << "}\n";
  hsi_test::write_text(dir.file("lib.hdr"), h.str());

  const SpectralLibrary lib = read_envi_library(dir.file("lib.sli"));
  ASSERT_EQ(lib.entries(), entries);
  ASSERT_EQ(lib.channels, channels);
  EXPECT_EQ(lib.names[3], "Mineral 3");
  EXPECT_DOUBLE_EQ(lib.wavelengths_nm[1], 500.0);
  for (size_t e = 0; e < entries; ++e) {
    EXPECT_EQ(lib.missing_samples(e), expected_missing[e]);
    for (size_t c = 0; c < channels; ++c) {
      const int16_t raw = values[e * channels + c];
      if (raw == ignore)
        EXPECT_TRUE(std::isnan(lib.entry(e)[c]));
      else
        EXPECT_EQ(lib.entry(e)[c], float(double(raw) * (1.0 / 10000.0)));
    }
  }
}

TEST(SpectralLibrary, EnviImageIsNotALibrary) {
  ScratchDir dir;
  hsi_test::write_text(dir.file("img.hdr"),
                       "ENVI\nsamples = 2\nlines = 2\nbands = 1\nfile type = ENVI Standard\ndata type = 1\n");
  hsi_test::write_text(dir.file("img"), "abcd");
  try {
    read_envi_library(dir.file("img.hdr"));
    FAIL();
  } catch (const EnviError &e) {
    EXPECT_NE(std::string(e.what()).find("key 'file type'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("line 5"), std::string::npos) << e.what();
  }
  hsi_test::write_text(dir.file("names.hdr"),
                       "ENVI\nsamples = 2\nlines = 2\nbands = 1\nfile type = ENVI Spectral Library\ndata type = 1\n"
                       "spectra names = {only one}\n");
  hsi_test::write_text(dir.file("names"), "abcd");
  try {
    read_envi_library(dir.file("names.hdr"));
    FAIL();
  } catch (const EnviError &e) {
    EXPECT_NE(std::string(e.what()).find("key 'spectra names'"), std::string::npos) << e.what();
  }
}

TEST(SpectralLibrary, CsvLibrary) {
  ScratchDir dir;
  hsi_test::write_text(dir.file("lib.csv"),
                       "# comment line\n"
                       "Wavelength (um),FWHM,\"Kaolinite, CM9\",Alunite,Calcite\n"
                       "0.40, 0.01, 0.5, 0.25, -1\n"
                       "\n"
                       "0.50, 0.01, 0.6, , 0.125\n"
                       "0.60, 0.02, 0.7, nan, 0.75\n");
  CsvLibraryOptions options;
  options.data_ignore_value = -1;
  const SpectralLibrary lib = read_csv_library(dir.file("lib.csv"), options);
  ASSERT_EQ(lib.entries(), 3u);
  ASSERT_EQ(lib.channels, 3u);
  EXPECT_EQ(lib.names[0], "Kaolinite, CM9");
  EXPECT_EQ(lib.wavelengths_nm, (std::vector<double>{400, 500, 600}));
  EXPECT_EQ(lib.fwhm_nm, (std::vector<double>{10, 10, 20}));
  EXPECT_EQ(lib.entry(0)[2], 0.7f);
  EXPECT_EQ(lib.missing_samples(0), 0u);
  EXPECT_EQ(lib.missing_samples(1), 2u);  // empty and nan
  EXPECT_EQ(lib.missing_samples(2), 1u);  // the ignore value
  EXPECT_EQ(lib.entry(2)[1], 0.125f);

  // Without a unit in the title, values below 100 are micrometres.
  hsi_test::write_text(dir.file("plain.csv"), "wl,a\n350,1\n2500,2\n");
  EXPECT_EQ(read_spectral_library(dir.file("plain.csv")).wavelengths_nm, (std::vector<double>{350, 2500}));
}

TEST(SpectralLibrary, MalformedCsvNamesLineAndColumn) {
  ScratchDir dir;
  const std::vector<std::pair<std::string, std::vector<std::string>>> cases = {
      {"wl,a,b\n400,1,2\n500,1\n", {"line 3", "2 cells", "3"}},
      {"wl,a,b\n400,1,x2\n", {"line 2", "column 3", "'b'", "x2"}},
      {"wl,a\nfour hundred,1\n", {"line 2", "column 1", "wavelength"}},
      {"wl,a\n", {"no data rows"}},
      {"wl,\"a\n400,1\n", {"line 1", "quoted"}},
  };
  for (const auto &[text, needles] : cases) {
    hsi_test::write_text(dir.file("bad.csv"), text);
    try {
      read_csv_library(dir.file("bad.csv"));
      ADD_FAILURE() << "accepted: " << text;
    } catch (const EnviError &e) {
      for (const std::string &n : needles)
        EXPECT_NE(std::string(e.what()).find(n), std::string::npos) << "'" << n << "' not in: " << e.what();
    }
  }
}

TEST(Resample, LinearAndGaussianReproduceAStraightLine) {
  // A straight line is reproduced exactly by linear interpolation, and by a
  // symmetric Gaussian window wholly inside the library.
  std::mt19937_64 rng(cs_test::fresh_seed());
  std::uniform_real_distribution<double> uni(0.0, 1.0);
  SpectralLibrary lib;
  lib.source = "line";
  double w = 400;
  while (w < 1000) {
    lib.wavelengths_nm.push_back(w);
    w += 1 + 9 * uni(rng);  // irregular spacing
  }
  lib.channels = lib.wavelengths_nm.size();
  const double a = uni(rng), b = uni(rng) / 1000;
  lib.names = {"line"};
  for (double x : lib.wavelengths_nm) lib.spectra.push_back(float(a + b * x));
  std::vector<double> targets, fwhm;
  for (int i = 0; i < 50; ++i) {
    targets.push_back(380 + 640 * uni(rng));
    fwhm.push_back(2 + 20 * uni(rng));
  }
  const SpectralLibrary linear = resample_library(lib, targets, {}, ResampleMethod::linear);
  const SpectralLibrary gauss = resample_library(lib, targets, fwhm, ResampleMethod::gaussian);
  for (size_t t = 0; t < targets.size(); ++t) {
    const double expected = a + b * targets[t];
    const bool inside = targets[t] >= lib.wavelengths_nm.front() && targets[t] <= lib.wavelengths_nm.back();
    if (inside)
      EXPECT_NEAR(linear.entry(0)[t], expected, 2e-6) << targets[t];
    else
      EXPECT_TRUE(std::isnan(linear.entry(0)[t])) << targets[t];
    const bool window_inside = targets[t] - 1.5 * fwhm[t] >= lib.wavelengths_nm.front() &&
                               targets[t] + 1.5 * fwhm[t] <= lib.wavelengths_nm.back();
    if (window_inside)
      EXPECT_NEAR(gauss.entry(0)[t], expected, 2e-6) << targets[t];
    else
      EXPECT_TRUE(std::isnan(gauss.entry(0)[t])) << targets[t];
  }
}

TEST(Resample, UsgsToAvirisNgMatchesNumpy) {
  HSI_REQUIRE_SHARED(library_path, hsi_test::kUsgsLibrary);
  HSI_REQUIRE_SHARED(cube_path, hsi_test::aviris_ng_tiles()[0]);
  HSI_REQUIRE_PYTHON("numpy");
  std::mt19937_64 rng(cs_test::fresh_seed());
  const SpectralLibrary lib = read_envi_library(library_path);
  const EnviHeader cube = read_envi_header(cube_path);
  EXPECT_EQ(lib.entries(), 3139u);
  EXPECT_EQ(lib.channels, 224u);
  EXPECT_NEAR(lib.wavelengths_nm[0], 383.15, 1e-9);  // micrometres in the header
  // Missing: the exact sentinel, and its blends (magnitude >= 1e20) counted apart.
  const std::vector<float> raw = hsi_test::read_raw<float>(library_path.substr(0, library_path.size() - 4) + ".sli",
                                                           3139 * 224);
  size_t exact = 0, blended = 0, missing = 0;
  for (float v : raw) {
    exact += v == -1.23000002e34f;
    blended += v != -1.23000002e34f && v <= -1e20f;
  }
  for (float v : lib.spectra) missing += std::isnan(v);
  EXPECT_GT(blended, 0u);
  EXPECT_EQ(lib.near_ignore_samples, blended);
  EXPECT_EQ(missing, exact + blended);

  // Gaussian numerics in numpy are slow: a fresh random subset of entries.
  SpectralLibrary subset = lib;
  subset.names.clear();
  subset.spectra.clear();
  for (int i = 0; i < 40; ++i) {
    const size_t e = 2 + rng() % (lib.entries() - 2);
    subset.names.push_back(lib.names[e]);
    subset.spectra.insert(subset.spectra.end(), lib.entry(e), lib.entry(e) + lib.channels);
  }
  ScratchDir dir;
  hsi_test::write_raw(dir.file("wl.f64"), lib.wavelengths_nm);
  hsi_test::write_raw(dir.file("target.f64"), cube.wavelengths_nm());
  hsi_test::write_raw(dir.file("fwhm.f64"), cube.fwhm_nm());
  const size_t targets = cube.bands;
  struct Case {
    const SpectralLibrary *library;
    ResampleMethod method;
    const char *name;
    double tolerance;  // relative to max(1, |value|)
  };
  // Linear: the same formula in double; the only difference is the float32
  // storage of the result (half an ulp: 6e-8 relative).
  // Gaussian: numpy integrates numerically on 6001 points (trapezoid error
  // at the library's kinks ~1e-7) against our closed form.
  for (const Case &c : {Case{&lib, ResampleMethod::linear, "linear", 1.2e-7},
                        Case{&subset, ResampleMethod::gaussian, "gaussian", 1e-6}}) {
    SCOPED_TRACE(c.name);
    const SpectralLibrary out = resample_library(*c.library, cube.wavelengths_nm(), cube.fwhm_nm(), c.method);
    hsi_test::write_raw(dir.file("lib.f32"), c.library->spectra);
    ASSERT_TRUE(hsi_test::run_reference({"resample", c.name, dir.file("lib.f32"), std::to_string(c.library->entries()),
                                         std::to_string(c.library->channels), dir.file("wl.f64"),
                                         dir.file("target.f64"), std::to_string(targets), dir.file("fwhm.f64"),
                                         dir.file("out.f64")},
                                        dir.file("log.txt")));
    const std::vector<double> expected = hsi_test::read_raw<double>(dir.file("out.f64"), out.spectra.size());
    size_t nan_mismatch = 0, finite = 0;
    double worst = 0;
    for (size_t i = 0; i < expected.size(); ++i) {
      if (std::isnan(expected[i]) != std::isnan(out.spectra[i])) {
        if (nan_mismatch++ < 3) ADD_FAILURE() << "NaN differs at " << i << ": " << out.spectra[i] << " vs " << expected[i];
        continue;
      }
      if (std::isnan(expected[i])) continue;
      ++finite;
      worst = std::max(worst, std::fabs(double(out.spectra[i]) - expected[i]) / std::max(1.0, std::fabs(expected[i])));
    }
    EXPECT_EQ(nan_mismatch, 0u);
    EXPECT_GT(finite, expected.size() / 2);
    EXPECT_LE(worst, c.tolerance);
    std::printf("[ info     ] %s: %zu values, %zu finite, worst |difference| %.3g\n", c.name, expected.size(), finite,
                worst);
  }
}

TEST(References, SelectBandsHonoursBblAndRange) {
  const std::vector<uint8_t> bbl = {0, 1, 1, 0, 1, 1, 1};
  EXPECT_EQ(select_bands(7, bbl), (std::vector<int>{1, 2, 4, 5, 6}));
  EXPECT_EQ(select_bands(7, bbl, 2, 5), (std::vector<int>{2, 4, 5}));
  EXPECT_EQ(select_bands(7, bbl, 2, 5, false), (std::vector<int>{2, 3, 4, 5}));
  EXPECT_EQ(select_bands(7, {}, 5), (std::vector<int>{5, 6}));
  EXPECT_THROW(select_bands(7, bbl, 6, 2), std::invalid_argument);
  EXPECT_THROW(select_bands(7, bbl, 3, 3), std::invalid_argument);  // only a bad band
  EXPECT_THROW(select_bands(7, {1, 1}), std::invalid_argument);
}

TEST(References, MissingSamplesSkipEntriesAndUncoveredBandsAreDropped) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  SpectralLibrary lib;
  lib.source = "lib";
  lib.channels = 6;
  lib.names = {"a", "b", "c", "d"};
  lib.spectra = {
      nan, 0.1f, 0.2f, 0.3f, 0.4f, nan,   // a: fine on 1..4
      nan, 0.5f, nan,  0.5f, 0.5f, nan,   // b: missing band 2
      nan, 0.3f, 0.3f, 0.2f, 0.1f, 0.9f,  // c: fine
      nan, 0.7f, 0.6f, 0.5f, 0.4f, nan,   // d: fine on 1..4
  };
  ReferenceRequest request;
  request.bands = {0, 1, 2, 3, 4};
  const ReferenceChoice choice = choose_references(lib, 6, request);
  EXPECT_EQ(choice.bands, (std::vector<int>{1, 2, 3, 4}));
  EXPECT_EQ(choice.uncovered_bands, (std::vector<int>{0}));
  ASSERT_EQ(choice.skipped.size(), 1u);
  EXPECT_EQ(choice.skipped[0].name, "b");
  EXPECT_NE(choice.skipped[0].reason.find("band 2"), std::string::npos) << choice.skipped[0].reason;
  EXPECT_EQ(choice.references.names, (std::vector<std::string>{"a", "c", "d"}));
  EXPECT_EQ(choice.references.library_indices, (std::vector<size_t>{0, 2, 3}));
  EXPECT_EQ(choice.references.spectrum(1)[5], 0.9f);

  request.names = {" d "};
  request.indices = {0};
  const ReferenceChoice picked = choose_references(lib, 6, request);
  EXPECT_EQ(picked.references.names, (std::vector<std::string>{"d", "a"}));

  // A listed entry keeps its place: without data it is an error naming it, not skipped.
  request.names = {"a", "b"};
  request.indices = {};
  try {
    choose_references(lib, 6, request);
    ADD_FAILURE() << "listed entry b has no data at band 2";
  } catch (const std::invalid_argument &e) {
    EXPECT_NE(std::string(e.what()).find("'b'"), std::string::npos) << e.what();
  }

  request.names = {"nope"};
  EXPECT_THROW(choose_references(lib, 6, request), std::invalid_argument);
  request.names = {};
  request.indices = {9};
  EXPECT_THROW(choose_references(lib, 6, request), std::invalid_argument);
  request.indices = {};
  EXPECT_THROW(choose_references(lib, 7, request), std::invalid_argument);  // bands mismatch
  request.indices = {1};
  request.bands = {2};
  try {
    choose_references(lib, 6, request);
    ADD_FAILURE() << "nothing has data";
  } catch (const std::invalid_argument &e) {
    EXPECT_NE(std::string(e.what()).find("'b'"), std::string::npos) << "the listed entry is named: " << e.what();
  }
}
