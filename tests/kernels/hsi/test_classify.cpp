// The CPU classifier: every method against a plain numpy implementation of
// its published formula, SAM against Spectral Python on the real AVIRIS-NG
// tiles and the USGS library, and the behaviour around no-data, thresholds,
// band subsets, class counts and block shapes.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "classify_test_util.h"
#include "hsi/class_map_target.h"
#include "hsi/classifier.h"
#include "hsi/convert.h"
#include "hsi/envi.h"
#include "hsi/references.h"
#include "hsi/spectral_library.h"

using namespace cs::hsi;
using hsi_test::ScratchDir;

namespace {

struct NumpyResult {
  std::vector<double> scores;  // N x K
  std::vector<int32_t> best;   // N, -1 = no data
};

NumpyResult numpy_scores(Method method, const std::vector<float> &pixels, size_t n, size_t bands,
                         const ReferenceSet &refs, const std::vector<int> &selected,
                         const std::vector<double> &wavelengths, const ScratchDir &dir) {
  hsi_test::write_raw(dir.file("pixels.f32"), pixels);
  hsi_test::write_raw(dir.file("refs.f32"), refs.spectra);
  hsi_test::write_raw(dir.file("bands.i32"), std::vector<int32_t>(selected.begin(), selected.end()));
  hsi_test::write_raw(dir.file("wl.f64"), wavelengths);
  NumpyResult r;
  if (!hsi_test::run_reference({"scores", method_name(method), dir.file("pixels.f32"), std::to_string(n),
                                std::to_string(bands), dir.file("refs.f32"), std::to_string(refs.count()),
                                dir.file("bands.i32"), dir.file("wl.f64"), dir.file("scores.f64"),
                                dir.file("best.i32")},
                               dir.file("log.txt")))
    return r;
  r.scores = hsi_test::read_raw<double>(dir.file("scores.f64"), n * refs.count());
  r.best = hsi_test::read_raw<int32_t>(dir.file("best.i32"), n);
  return r;
}

// Allowed |ours - numpy| for a score of size `expected`, with the reason.
// numpy works in float64 throughout; ours reads float32 inputs and stores the
// prepared references as float32 (relative rounding 6e-8 per value).
//   exact: every term is summed in double, so what remains is the float32
//          reference table and float32 logs (SID): ~1e-7 relative (for an
//          angle, over its sine, as below).
//   fast:  float sums over chunks of 32 bands, relative error ~3e-7 of the
//          sum of |terms|; an angle from acos(cos) then errs by that over
//          sin(angle), large only near 0 and pi.
double tolerance(Method method, Precision precision, double expected) {
  const bool exact = precision == Precision::exact;
  switch (method) {
    case Method::sam:
      // exact's unit references are float32: |r| is 1 within ~1e-7, and the
      // angle's acos magnifies that cosine error by 1 / sin (a seed with
      // angles of 0.014 rad erred by 1.4e-6).
      return 1e-6 + (exact ? 1.2e-7 : 5e-7) / std::max(1e-3, std::sin(expected));
    case Method::correlation:  // r in [-1, 1]
      return exact ? 1e-6 : 1e-5;
    case Method::bandfit:
      // exact removes the continuum in double; fast in float: ~1e-7
      // relative per term, which a near-flat feature amplifies.
      return exact ? 1e-6 : 1e-5;
    case Method::euclidean:
      return (exact ? 2e-7 : 1e-6) * std::fabs(expected) + 1e-7;
    case Method::sid:  // float logs of p and q in both precisions
      return 1e-5 * std::fabs(expected) + 1e-7;
  }
  return 0;
}

// Compares rule images and labels; ties (numpy's best two within
// `tie_margin`) may pick either class.
void expect_matches_numpy(Method method, Precision precision, const hsi_test::Result &ours, const NumpyResult &ref,
                          size_t n, size_t K, double tie_margin = 1e-6) {
  ASSERT_EQ(ref.scores.size(), n * K);
  size_t score_failures = 0, label_failures = 0, ties = 0;
  double worst = 0;
  for (size_t p = 0; p < n; ++p) {
    for (size_t k = 0; k < K; ++k) {
      const double expected = ref.scores[p * K + k];
      const float got = ours.rules[k * n + p];
      if (std::isnan(expected) || std::isnan(got)) {
        if (std::isnan(expected) != std::isnan(got) && score_failures++ < 5)
          ADD_FAILURE() << "pixel " << p << " reference " << k << ": " << got << " vs numpy " << expected;
        continue;
      }
      const double diff = std::fabs(double(got) - expected);
      worst = std::max(worst, diff);
      if (diff > tolerance(method, precision, expected) && score_failures++ < 5)
        ADD_FAILURE() << "pixel " << p << " reference " << k << ": " << got << " vs numpy " << expected
                      << " (difference " << diff << ")";
    }
    const int expected_label = ref.best[p] + 1;
    if (ours.labels[p] == expected_label) continue;
    // A different pick is fine only when numpy's own margin is below the tie margin.
    bool tie = false;
    if (ref.best[p] >= 0 && ours.labels[p] > 0) {
      const double a = ref.scores[p * K + size_t(ref.best[p])], b = ref.scores[p * K + ours.labels[p] - 1];
      tie = std::fabs(a - b) <= tie_margin;
    }
    if (tie) {
      ++ties;
    } else if (label_failures++ < 5) {
      ADD_FAILURE() << "pixel " << p << ": class " << ours.labels[p] << ", numpy " << expected_label;
    }
  }
  EXPECT_EQ(score_failures, 0u);
  EXPECT_EQ(label_failures, 0u);
  std::printf("[ info     ] %s %s: %zu pixels x %zu references, worst |difference| %.3g, %zu ties\n",
              method_name(method), precision == Precision::exact ? "exact" : "fast", n, K, worst, ties);
}

std::vector<float> decoded(const CubeBlock &block) {
  std::vector<float> bip(block.layout.values());
  convert_to_bip_float(block, bip.data());
  return bip;
}

}  // namespace

TEST(Classify, EveryMethodMatchesNumpyOnRandomSpectra) {
  HSI_REQUIRE_PYTHON("numpy");
  const uint32_t seed = cs_test::fresh_seed();
  std::mt19937_64 rng(seed);
  ScratchDir dir;
  for (Method method : kAllMethods) {
    SCOPED_TRACE(method_name(method));
    const size_t lines = 5 + rng() % 10, samples = 7 + rng() % 20, bands = 40 + rng() % 150,
                 K = 1 + rng() % 40;
    hsi_test::Scene scene = hsi_test::random_scene(rng, lines, samples, bands, K);
    // No-data pixels and negative values (SID's floor, bandfit's end points).
    for (int i = 0; i < 3; ++i) scene.pixels[(rng() % (lines * samples)) * bands + rng() % bands] = NAN;
    for (int i = 0; i < 20; ++i) scene.pixels[rng() % scene.pixels.size()] *= -1;
    std::vector<uint8_t> bbl(bands, 1);
    for (size_t b = 0; b < bands; ++b) bbl[b] = rng() % 8 != 0;
    bbl[0] = bbl[bands - 1] = 1;
    const std::vector<int> selected = select_bands(bands, bbl, rng() % 4, bands - 1 - rng() % 4);
    // Bandfit: end points 1e6 apart (a float continuum of the form start +
    // (end - start) t would cancel to zero at the last band).
    if (method == Method::bandfit)
      for (int i = 0; i < 3; ++i)
        scene.pixels[(rng() % (lines * samples)) * bands + size_t(selected.front())] *= 1e6f;

    const auto bytes = hsi_test::encode_block(scene.pixels, lines, samples, bands, DataType::f32, Interleave::bip,
                                              ByteOrder::little_endian);
    const CubeBlock block =
        hsi_test::block_of(bytes, lines, samples, bands, DataType::f32, Interleave::bip, ByteOrder::little_endian);
    const NumpyResult ref =
        numpy_scores(method, scene.pixels, lines * samples, bands, scene.references, selected, scene.wavelengths_nm, dir);
    for (Precision precision : {Precision::exact, Precision::fast}) {
      ClassifierConfig config;
      config.method = method;
      config.precision = precision;
      const SpectralClassifier classifier(config, scene.references, selected, scene.wavelengths_nm);
      expect_matches_numpy(method, precision, hsi_test::classify_cpu(classifier, block), ref, lines * samples, K);
    }
  }
}

namespace {

// The real tiles, the USGS library resampled (linear) to their bands, the
// bands both cover (bbl good, 400-2450 nm so that more entries are
// complete), and the entries that are material spectra (not the wavelength
// and bandpass records, not "error bars") with data at every chosen band.
struct RealSetup {
  std::vector<std::string> tiles;
  SpectralLibrary library;  // on the cube's bands
  ReferenceChoice choice;
  EnviHeader header;
};

RealSetup real_setup() {
  RealSetup s;
  for (const std::string &t : hsi_test::aviris_ng_tiles()) s.tiles.push_back(hsi_test::shared_file(t));
  s.header = read_envi_header(s.tiles[0]);
  const SpectralLibrary usgs = read_envi_library(hsi_test::shared_file(hsi_test::kUsgsLibrary));
  s.library = resample_library(usgs, s.header.wavelengths_nm(), {}, ResampleMethod::linear);
  const std::vector<double> nm = s.header.wavelengths_nm();
  size_t first = 0, last = nm.size() - 1;
  while (nm[first] < 400) ++first;
  while (nm[last] > 2450) --last;
  ReferenceRequest request;
  request.bands = select_bands(s.header.bands, s.header.bbl, first, last);
  std::vector<size_t> materials;
  for (size_t e = 2; e < usgs.entries(); ++e)
    if (usgs.names[e].find("error bars") == std::string::npos) materials.push_back(e);
  request.indices = hsi_test::complete_entries(s.library, s.header.bands, request.bands, materials);
  s.choice = choose_references(s.library, s.header.bands, request);
  return s;
}

}  // namespace

TEST(ClassifyRealData, SamMatchesSpectralPythonOnAvirisNg) {
  for (const std::string &t : hsi_test::aviris_ng_tiles()) {
    HSI_REQUIRE_SHARED(tile, t);
  }
  HSI_REQUIRE_SHARED(library_path, hsi_test::kUsgsLibrary);
  HSI_REQUIRE_PYTHON("numpy, spectral");
  const RealSetup setup = real_setup();
  const ReferenceSet &refs = setup.choice.references;
  std::printf("[ info     ] %zu bands, %zu references, %zu entries skipped (no data at a chosen band), %zu bands "
              "uncovered\n",
              setup.choice.bands.size(), refs.count(), setup.choice.skipped.size(),
              setup.choice.uncovered_bands.size());
  ASSERT_GT(refs.count(), 1000u);
  ClassifierConfig config;  // SAM, exact sums, no threshold: every pixel gets its best match
  const SpectralClassifier classifier(config, refs, setup.choice.bands, setup.header.wavelengths_nm());
  EXPECT_EQ(classifier.class_map_format(), ClassMapFormat::gray16);
  ScratchDir dir;
  hsi_test::write_raw(dir.file("entries.i32"),
                      std::vector<int32_t>(refs.library_indices.begin(), refs.library_indices.end()));
  hsi_test::write_raw(dir.file("bands.i32"), std::vector<int32_t>(setup.choice.bands.begin(), setup.choice.bands.end()));
  size_t pixels = 0, same_class = 0;
  double worst = 0;
  for (const std::string &tile : setup.tiles) {
    SCOPED_TRACE(tile);
    EnviReader reader(tile);
    const EnviHeader &h = reader.header();
    const size_t K = refs.count(), n = h.samples * h.lines;
    // Classified in blocks of 3 lines, as a stream would.
    hsi_test::Result ours;
    ours.labels.resize(n);
    ours.rules.resize(n * K);
    for (size_t first = 0; first < h.lines; first += 3) {
      const size_t count = std::min<size_t>(3, h.lines - first);
      const std::vector<uint8_t> raw = reader.read_lines(first, count);
      const hsi_test::Result block = hsi_test::classify_cpu(classifier, make_cube_block(h, raw.data(), count));
      const size_t offset = first * h.samples, block_pixels = count * h.samples;
      std::copy(block.labels.begin(), block.labels.end(), ours.labels.begin() + long(offset));
      for (size_t k = 0; k < K; ++k)
        std::copy(block.rules.begin() + long(k * block_pixels), block.rules.begin() + long((k + 1) * block_pixels),
                  ours.rules.begin() + long(k * n + offset));
    }
    ASSERT_TRUE(hsi_test::run_reference({"sam-spectral", tile, hsi_test::shared_file(hsi_test::kUsgsLibrary),
                                         dir.file("entries.i32"), dir.file("bands.i32"), dir.file("angles.f64"),
                                         dir.file("classes.i32")},
                                        dir.file("log.txt")));
    const std::vector<double> angles = hsi_test::read_raw<double>(dir.file("angles.f64"), n * K);
    const std::vector<int32_t> classes = hsi_test::read_raw<int32_t>(dir.file("classes.i32"), n);
    for (size_t p = 0; p < n; ++p) {
      ++pixels;
      same_class += ours.labels[p] == classes[p] + 1;
      for (size_t k = 0; k < K; ++k) worst = std::max(worst, std::fabs(double(ours.rules[k * n + p]) - angles[p * K + k]));
    }
  }
  std::printf("[ info     ] %zu pixels: %zu same class, worst angle difference %.3g rad\n", pixels, same_class, worst);
  EXPECT_GE(double(same_class), 0.9999 * double(pixels));
  EXPECT_LE(worst, 1e-5);
}

TEST(ClassifyRealData, EveryMethodMatchesNumpyOnAvirisNg) {
  for (const std::string &t : hsi_test::aviris_ng_tiles()) {
    HSI_REQUIRE_SHARED(tile, t);
  }
  HSI_REQUIRE_SHARED(library_path, hsi_test::kUsgsLibrary);
  HSI_REQUIRE_PYTHON("numpy");
  std::mt19937_64 rng(cs_test::fresh_seed());
  const RealSetup setup = real_setup();
  // A fresh random set of 64 references.
  ReferenceSet refs;
  refs.bands = setup.choice.references.bands;
  for (int i = 0; i < 64; ++i) {
    const size_t k = rng() % setup.choice.references.count();
    refs.names.push_back(setup.choice.references.names[k]);
    refs.library_indices.push_back(setup.choice.references.library_indices[k]);
    refs.spectra.insert(refs.spectra.end(), setup.choice.references.spectrum(k),
                        setup.choice.references.spectrum(k) + refs.bands);
  }
  ScratchDir dir;
  for (const std::string &tile : {setup.tiles[0], setup.tiles[2]}) {  // tile 1 is one constant fill value
    EnviReader reader(tile);
    const EnviHeader &h = reader.header();
    const std::vector<uint8_t> raw = reader.read_lines(0, h.lines);
    const CubeBlock block = make_cube_block(h, raw.data(), h.lines);
    for (Method method : kAllMethods) {
      SCOPED_TRACE(std::string(method_name(method)) + " " + tile);
      const NumpyResult ref = numpy_scores(method, decoded(block), h.samples * h.lines, h.bands, refs,
                                           setup.choice.bands, h.wavelengths_nm(), dir);
      for (Precision precision : {Precision::exact, Precision::fast}) {
        ClassifierConfig config;
        config.method = method;
        config.precision = precision;
        const SpectralClassifier classifier(config, refs, setup.choice.bands, h.wavelengths_nm());
        expect_matches_numpy(method, precision, hsi_test::classify_cpu(classifier, block), ref, h.samples * h.lines,
                             refs.count());
      }
    }
  }
}

TEST(Classify, NoDataPixelsAreClassZeroAndDoNotSpread) {
  std::mt19937_64 rng(cs_test::fresh_seed());
  const size_t lines = 9, samples = 13, bands = 37, K = 6;
  hsi_test::Scene scene = hsi_test::random_scene(rng, lines, samples, bands, K);
  const double scale = 10000;
  const int16_t ignore = -9999;
  for (Method method : kAllMethods) {
    SCOPED_TRACE(method_name(method));
    ClassifierConfig config;
    config.method = method;
    const std::vector<int> bands_used = select_bands(bands, {});
    const SpectralClassifier classifier(config, scene.references, bands_used, scene.wavelengths_nm);
    // int16 BSQ big endian with a scale factor: decoded on the fly.
    std::vector<uint8_t> clean = hsi_test::encode_block(scene.pixels, lines, samples, bands, DataType::i16,
                                                        Interleave::bsq, ByteOrder::big_endian, scale);
    const hsi_test::Result before = hsi_test::classify_cpu(
        classifier, hsi_test::block_of(clean, lines, samples, bands, DataType::i16, Interleave::bsq,
                                       ByteOrder::big_endian, double(ignore), scale));
    // Mark some pixels no-data in one band (the ignore value) or in all.
    std::vector<size_t> spoiled;
    std::vector<uint8_t> dirty = clean;
    for (int i = 0; i < 7; ++i) {
      const size_t p = rng() % (lines * samples);
      spoiled.push_back(p);
      const size_t l = p / samples, x = p % samples;
      for (size_t b = 0; b < bands; ++b)
        if (i % 2 == 0 || b == size_t(i)) {
          const size_t at = hsi_test::file_index(Interleave::bsq, lines, samples, bands, l, x, b) * 2;
          hsi_test::put_sample(dirty, at, uint16_t(ignore), 2, ByteOrder::big_endian);
        }
    }
    const hsi_test::Result after = hsi_test::classify_cpu(
        classifier, hsi_test::block_of(dirty, lines, samples, bands, DataType::i16, Interleave::bsq,
                                       ByteOrder::big_endian, double(ignore), scale));
    for (size_t p = 0; p < lines * samples; ++p) {
      const bool is_spoiled = std::find(spoiled.begin(), spoiled.end(), p) != spoiled.end();
      if (is_spoiled) {
        EXPECT_EQ(after.labels[p], 0) << p;
        for (size_t k = 0; k < K; ++k) EXPECT_TRUE(std::isnan(after.rules[k * lines * samples + p])) << p;
      } else {
        EXPECT_EQ(after.labels[p], before.labels[p]) << p;
        for (size_t k = 0; k < K; ++k)
          EXPECT_TRUE(hsi_test::same_bits(after.rules[k * lines * samples + p], before.rules[k * lines * samples + p]));
      }
    }
  }
}

TEST(Classify, UnselectedBandsDoNotMatter) {
  std::mt19937_64 rng(cs_test::fresh_seed());
  const size_t lines = 4, samples = 11, bands = 50, K = 5;
  hsi_test::Scene scene = hsi_test::random_scene(rng, lines, samples, bands, K);
  std::vector<uint8_t> bbl(bands, 1);
  for (size_t b = 0; b < bands; b += 3) bbl[b] = 0;
  const std::vector<int> selected = select_bands(bands, bbl, 2, 45);
  for (Method method : kAllMethods) {
    ClassifierConfig config;
    config.method = method;
    const SpectralClassifier classifier(config, scene.references, selected, scene.wavelengths_nm);
    auto run = [&](const std::vector<float> &pixels) {
      const auto bytes = hsi_test::encode_block(pixels, lines, samples, bands, DataType::f32, Interleave::bil,
                                                ByteOrder::little_endian);
      return hsi_test::classify_cpu(classifier, hsi_test::block_of(bytes, lines, samples, bands, DataType::f32,
                                                                   Interleave::bil, ByteOrder::little_endian));
    };
    const hsi_test::Result a = run(scene.pixels);
    std::vector<float> garbage = scene.pixels;
    for (size_t p = 0; p < lines * samples; ++p)
      for (size_t b = 0; b < bands; ++b)
        if (!std::binary_search(selected.begin(), selected.end(), int(b)))
          garbage[p * bands + b] = (p + b) % 2 ? NAN : -1e30f;
    const hsi_test::Result b = run(garbage);
    EXPECT_EQ(a.labels, b.labels) << method_name(method);
    EXPECT_EQ(std::memcmp(a.rules.data(), b.rules.data(), a.rules.size() * 4), 0) << method_name(method);
  }
}

TEST(Classify, ThresholdLeavesWorseMatchesUnclassified) {
  std::mt19937_64 rng(cs_test::fresh_seed());
  const size_t lines = 8, samples = 16, bands = 60, K = 7;
  hsi_test::Scene scene = hsi_test::random_scene(rng, lines, samples, bands, K, 0.05);
  const auto bytes = hsi_test::encode_block(scene.pixels, lines, samples, bands, DataType::f32, Interleave::bip,
                                            ByteOrder::little_endian);
  const CubeBlock block =
      hsi_test::block_of(bytes, lines, samples, bands, DataType::f32, Interleave::bip, ByteOrder::little_endian);
  const std::vector<int> all = select_bands(bands, {});
  for (Method method : kAllMethods) {
    SCOPED_TRACE(method_name(method));
    ClassifierConfig config;
    config.method = method;
    const hsi_test::Result free = hsi_test::classify_cpu(SpectralClassifier(config, scene.references, all), block);
    // A threshold between the pixels' best scores: some pass, some fail.
    std::vector<float> best;
    for (size_t p = 0; p < lines * samples; ++p)
      if (free.labels[p] > 0) best.push_back(free.rules[(free.labels[p] - 1) * lines * samples + p]);
    ASSERT_GT(best.size(), 10u);
    std::nth_element(best.begin(), best.begin() + long(best.size() / 2), best.end());
    config.threshold = best[best.size() / 2];
    const hsi_test::Result limited = hsi_test::classify_cpu(SpectralClassifier(config, scene.references, all), block);
    size_t unclassified = 0;
    for (size_t p = 0; p < lines * samples; ++p) {
      if (free.labels[p] == 0) {
        EXPECT_EQ(limited.labels[p], 0);
        continue;
      }
      const float s = free.rules[(free.labels[p] - 1) * lines * samples + p];
      const bool passes = higher_is_better(method) ? s >= config.threshold : s <= config.threshold;
      EXPECT_EQ(limited.labels[p], passes ? free.labels[p] : 0) << p << " score " << s;
      unclassified += limited.labels[p] == 0;
    }
    EXPECT_GT(unclassified, 0u);
  }
  EXPECT_DOUBLE_EQ(default_threshold(Method::sam), 0.10);
}

TEST(Classify, ManyClassesUseSixteenBitLabels) {
  std::mt19937_64 rng(cs_test::fresh_seed());
  const size_t lines = 6, samples = 10, bands = 24, K = 300;
  hsi_test::Scene scene = hsi_test::random_scene(rng, lines, samples, bands, K);
  // Every pixel is a scaled copy of one reference: SAM must find exactly it.
  std::vector<size_t> truth(lines * samples);
  for (size_t p = 0; p < truth.size(); ++p) {
    truth[p] = p == 0 ? K - 1 : rng() % K;
    const float gain = 0.5f + float(rng() % 100) / 100.0f;
    for (size_t b = 0; b < bands; ++b)
      scene.pixels[p * bands + b] = gain * scene.references.spectrum(truth[p])[b];
  }
  const SpectralClassifier classifier(ClassifierConfig{}, scene.references, select_bands(bands, {}));
  ASSERT_EQ(classifier.class_map_format(), ClassMapFormat::gray16);
  const auto bytes = hsi_test::encode_block(scene.pixels, lines, samples, bands, DataType::f64, Interleave::bip,
                                            ByteOrder::big_endian);
  const hsi_test::Result r = hsi_test::classify_cpu(
      classifier, hsi_test::block_of(bytes, lines, samples, bands, DataType::f64, Interleave::bip, ByteOrder::big_endian));
  for (size_t p = 0; p < truth.size(); ++p) {
    EXPECT_EQ(r.labels[p], truth[p] + 1) << p;
    EXPECT_LT(r.rules[truth[p] * truth.size() + p], 1e-3f);
  }
  ClassificationOutput narrow;
  std::vector<uint8_t> map(truth.size());
  narrow.class_map = map.data();
  narrow.class_map_format = ClassMapFormat::gray8;
  EXPECT_THROW(classifier.classify(hsi_test::block_of(bytes, lines, samples, bands, DataType::f64, Interleave::bip,
                                                      ByteOrder::big_endian),
                                   narrow),
               std::invalid_argument);
}

TEST(Classify, LineStreamAndEveryInterleaveGiveTheSameResult) {
  std::mt19937_64 rng(cs_test::fresh_seed());
  const size_t lines = 17, samples = 9, bands = 45, K = 20;
  hsi_test::Scene scene = hsi_test::random_scene(rng, lines, samples, bands, K);
  const std::vector<int> selected = select_bands(bands, {}, 1, 43);
  for (Method method : kAllMethods) {
    SCOPED_TRACE(method_name(method));
    ClassifierConfig config;
    config.method = method;
    const SpectralClassifier classifier(config, scene.references, selected, scene.wavelengths_nm);
    const auto bip = hsi_test::encode_block(scene.pixels, lines, samples, bands, DataType::f32, Interleave::bip,
                                            ByteOrder::little_endian);
    const hsi_test::Result whole = hsi_test::classify_cpu(
        classifier, hsi_test::block_of(bip, lines, samples, bands, DataType::f32, Interleave::bip,
                                       ByteOrder::little_endian));
    for (Interleave il : {Interleave::bil, Interleave::bsq}) {
      for (size_t lines_per_block : {size_t(1), size_t(7), lines}) {
        SCOPED_TRACE(std::string(interleave_name(il)) + " blocks of " + std::to_string(lines_per_block));
        for (size_t first = 0; first < lines; first += lines_per_block) {
          const size_t count = std::min(lines_per_block, lines - first);
          const std::vector<float> part(scene.pixels.begin() + long(first * samples * bands),
                                        scene.pixels.begin() + long((first + count) * samples * bands));
          const auto bytes = hsi_test::encode_block(part, count, samples, bands, DataType::f32, il,
                                                    ByteOrder::big_endian);
          const hsi_test::Result r = hsi_test::classify_cpu(
              classifier, hsi_test::block_of(bytes, count, samples, bands, DataType::f32, il, ByteOrder::big_endian));
          for (size_t p = 0; p < count * samples; ++p) {
            ASSERT_EQ(r.labels[p], whole.labels[first * samples + p]);
            for (size_t k = 0; k < K; ++k)
              ASSERT_TRUE(hsi_test::same_bits(r.rules[k * count * samples + p],
                                              whole.rules[k * lines * samples + first * samples + p]));
          }
        }
      }
    }
  }
}

TEST(Classify, IntegerCubesEqualTheirFloatConversion) {
  std::mt19937_64 rng(cs_test::fresh_seed());
  const size_t lines = 5, samples = 12, bands = 33, K = 9;
  hsi_test::Scene scene = hsi_test::random_scene(rng, lines, samples, bands, K);
  for (float &v : scene.pixels) v = std::fabs(v);  // unsigned types too
  for (DataType type : kAllDataTypes) {
    if (type == DataType::f32 || type == DataType::f64) continue;
    SCOPED_TRACE(data_type_name(type));
    const double integer_scale = type == DataType::u8 ? 200 : 10000;
    const auto bytes = hsi_test::encode_block(scene.pixels, lines, samples, bands, type, Interleave::bil,
                                              ByteOrder::big_endian, integer_scale);
    const CubeBlock native =
        hsi_test::block_of(bytes, lines, samples, bands, type, Interleave::bil, ByteOrder::big_endian, std::nullopt,
                           integer_scale);
    const std::vector<float> as_float = decoded(native);
    const auto float_bytes = hsi_test::encode_block(as_float, lines, samples, bands, DataType::f32, Interleave::bip,
                                                    ByteOrder::little_endian);
    const CubeBlock converted = hsi_test::block_of(float_bytes, lines, samples, bands, DataType::f32, Interleave::bip,
                                                   ByteOrder::little_endian);
    ClassifierConfig config;
    config.method = Method(rng() % 5);
    const SpectralClassifier classifier(config, scene.references, select_bands(bands, {}), scene.wavelengths_nm);
    const hsi_test::Result a = hsi_test::classify_cpu(classifier, native);
    const hsi_test::Result b = hsi_test::classify_cpu(classifier, converted);
    EXPECT_EQ(a.labels, b.labels);
    EXPECT_EQ(std::memcmp(a.rules.data(), b.rules.data(), a.rules.size() * 4), 0);
  }
}

// Precision::tensor is a CUDA kernel of its own; the CPU (and the CUDA
// per-pixel kernel, for sid) runs it as fast: the same bits.
TEST(Classify, TensorPrecisionRunsAsFastOnTheCpu) {
  std::mt19937_64 rng(cs_test::fresh_seed());
  const size_t lines = 4, samples = 11, bands = 70, K = 7;
  const hsi_test::Scene scene = hsi_test::random_scene(rng, lines, samples, bands, K);
  const auto bytes = hsi_test::encode_block(scene.pixels, lines, samples, bands, DataType::f32, Interleave::bip,
                                            ByteOrder::little_endian);
  const CubeBlock block =
      hsi_test::block_of(bytes, lines, samples, bands, DataType::f32, Interleave::bip, ByteOrder::little_endian);
  for (Method method : kAllMethods) {
    SCOPED_TRACE(method_name(method));
    ClassifierConfig config;
    config.method = method;
    config.precision = Precision::fast;
    const SpectralClassifier fast(config, scene.references, select_bands(bands, {}), scene.wavelengths_nm);
    config.precision = Precision::tensor;
    const SpectralClassifier tensor(config, scene.references, select_bands(bands, {}), scene.wavelengths_nm);
    EXPECT_EQ(tensor.precision(), Precision::tensor);
    const hsi_test::Result a = hsi_test::classify_cpu(fast, block), b = hsi_test::classify_cpu(tensor, block);
    EXPECT_EQ(a.labels, b.labels);
    EXPECT_EQ(std::memcmp(a.rules.data(), b.rules.data(), a.rules.size() * sizeof(float)), 0);
  }
}

// A padded class map's padding is written as zeros (whatever the buffer held
// before), so the map's bytes are the same on every run.
TEST(Classify, ClassMapStrideZeroesThePadding) {
  std::mt19937_64 rng(cs_test::fresh_seed());
  const size_t lines = 5, samples = 10, bands = 12, K = 3;
  hsi_test::Scene scene = hsi_test::random_scene(rng, lines, samples, bands, K);
  const auto bytes = hsi_test::encode_block(scene.pixels, lines, samples, bands, DataType::f32, Interleave::bip,
                                            ByteOrder::little_endian);
  const CubeBlock block =
      hsi_test::block_of(bytes, lines, samples, bands, DataType::f32, Interleave::bip, ByteOrder::little_endian);
  const SpectralClassifier classifier(ClassifierConfig{}, scene.references, select_bands(bands, {}));
  const hsi_test::Result packed = hsi_test::classify_cpu(classifier, block);
  const size_t stride = 12;  // GRAY8 rows are padded to 4 bytes
  std::vector<uint8_t> map(lines * stride, 0xAB);
  ClassificationOutput out;
  out.class_map = map.data();
  out.class_map_stride = stride;
  classifier.classify(block, out);
  for (size_t l = 0; l < lines; ++l)
    for (size_t x = 0; x < stride; ++x)
      EXPECT_EQ(map[l * stride + x], x < samples ? packed.labels[l * samples + x] : 0);
}

// Where the CUDA kernels write labels (ClassMapTarget::of): a stride of 0
// means packed lines, a stride of exactly one line is packed too (labels at
// the pixel's own index), a longer one is not; 16-bit maps take two bytes a
// label.
TEST(Classify, ClassMapTargetFromTheOutput) {
  ClassificationOutput padded_output;
  padded_output.class_map_stride = 12;
  EXPECT_EQ(class_map_padding(padded_output, 10).offset, 10u);
  EXPECT_EQ(class_map_padding(padded_output, 10).bytes, 2u);
  EXPECT_EQ(class_map_padding(padded_output, 12).bytes, 0u);
  padded_output.class_map_stride = 0;
  EXPECT_EQ(class_map_padding(padded_output, 10).bytes, 0u);
  padded_output.class_map_format = ClassMapFormat::gray16;
  padded_output.class_map_stride = 24;
  EXPECT_EQ(class_map_padding(padded_output, 10).offset, 20u);
  EXPECT_EQ(class_map_padding(padded_output, 10).bytes, 4u);

  uint8_t map[64];
  ClassificationOutput out;
  out.class_map = map;
  const ClassMapTarget packed = ClassMapTarget::of(out, 10);
  EXPECT_EQ(packed.data, map);
  EXPECT_EQ(packed.stride, 10u);
  EXPECT_EQ(packed.samples, 10u);
  EXPECT_TRUE(packed.packed);
  EXPECT_FALSE(packed.sixteen_bit);
  out.class_map_stride = 10;
  EXPECT_TRUE(ClassMapTarget::of(out, 10).packed);
  out.class_map_stride = 12;  // GRAY8 rows padded to 4 bytes
  const ClassMapTarget padded = ClassMapTarget::of(out, 10);
  EXPECT_FALSE(padded.packed);
  EXPECT_EQ(padded.stride, 12u);
  out.class_map_format = ClassMapFormat::gray16;
  out.class_map_stride = 0;
  const ClassMapTarget wide = ClassMapTarget::of(out, 10);
  EXPECT_TRUE(wide.sixteen_bit);
  EXPECT_EQ(wide.stride, 20u);
  EXPECT_TRUE(wide.packed);
  out.class_map_stride = 20;
  EXPECT_TRUE(ClassMapTarget::of(out, 10).packed);
  out.class_map_stride = 24;
  EXPECT_FALSE(ClassMapTarget::of(out, 10).packed);
}

TEST(Classify, UnusableReferencesNeverMatchAndAreReported) {
  std::mt19937_64 rng(cs_test::fresh_seed());
  const size_t lines = 3, samples = 8, bands = 20, K = 4;
  hsi_test::Scene scene = hsi_test::random_scene(rng, lines, samples, bands, K);
  // Every reference usable (positive: bandfit's end points) except number 2.
  for (float &v : scene.references.spectra) v = std::fabs(v) + 0.01f;
  std::fill(scene.references.spectra.begin() + 2 * bands, scene.references.spectra.begin() + 3 * bands, 0.0f);
  const auto bytes = hsi_test::encode_block(scene.pixels, lines, samples, bands, DataType::f32, Interleave::bip,
                                            ByteOrder::little_endian);
  const CubeBlock block =
      hsi_test::block_of(bytes, lines, samples, bands, DataType::f32, Interleave::bip, ByteOrder::little_endian);
  for (Method method : {Method::sam, Method::correlation, Method::bandfit}) {
    ClassifierConfig config;
    config.method = method;
    const SpectralClassifier classifier(config, scene.references, select_bands(bands, {}), scene.wavelengths_nm);
    ASSERT_EQ(classifier.unusable_references().size(), 1u) << method_name(method);
    EXPECT_EQ(classifier.unusable_references()[0].index, 2u);
    const hsi_test::Result r = hsi_test::classify_cpu(classifier, block);
    for (size_t p = 0; p < lines * samples; ++p) {
      EXPECT_NE(r.labels[p], 3);
      EXPECT_TRUE(std::isnan(r.rules[2 * lines * samples + p]));
    }
  }
}

TEST(Classify, BadInputsAreErrors) {
  std::mt19937_64 rng(cs_test::fresh_seed());
  hsi_test::Scene scene = hsi_test::random_scene(rng, 2, 3, 10, 2);
  ClassifierConfig config;
  config.method = Method::bandfit;
  EXPECT_THROW(SpectralClassifier(config, scene.references, {1, 2}), std::invalid_argument);  // too few bands
  EXPECT_THROW(SpectralClassifier(config, scene.references, {1, 2, 10}), std::invalid_argument);
  EXPECT_THROW(SpectralClassifier(config, ReferenceSet{}, {1, 2, 3}), std::invalid_argument);
  // Over one band every angle and divergence is the same; a distance still means something.
  for (Method method : {Method::sam, Method::sid, Method::euclidean}) {
    config.method = method;
    if (method == Method::euclidean)
      EXPECT_NO_THROW(SpectralClassifier(config, scene.references, {4}));
    else
      EXPECT_THROW(SpectralClassifier(config, scene.references, {4}), std::invalid_argument) << method_name(method);
  }
  // Thresholds that no score meets; those every score meets mean no threshold.
  const std::pair<Method, double> outside[] = {{Method::sam, -0.01}, {Method::sid, -1}, {Method::euclidean, -1},
                                               {Method::correlation, 1.01}, {Method::bandfit, 2}};
  for (const auto &[method, threshold] : outside) {
    config.method = method;
    config.threshold = threshold;
    EXPECT_NE(threshold_problem(method, threshold), "") << method_name(method) << " " << threshold;
    EXPECT_THROW(SpectralClassifier(config, scene.references, {1, 2, 3}), std::invalid_argument);
  }
  EXPECT_EQ(threshold_problem(Method::correlation, -1.0), "");
  EXPECT_EQ(threshold_problem(Method::bandfit, -1.01), "");
  EXPECT_EQ(threshold_problem(Method::sam, 4.0), "") << "above any angle: every pixel gets its nearest class";
  EXPECT_EQ(threshold_problem(Method::sam, NAN), "") << "no threshold";
  const SpectralClassifier ok(ClassifierConfig{}, scene.references, {0, 1, 2});
  const std::vector<uint8_t> bytes = cs_test::random_bytes(2 * 3 * 11 * 4, cs_test::fresh_seed());
  const CubeBlock wrong_bands =
      hsi_test::block_of(bytes, 2, 3, 11, DataType::f32, Interleave::bip, ByteOrder::little_endian);
  std::vector<uint8_t> map(6);
  ClassificationOutput out;
  out.class_map = map.data();
  EXPECT_THROW(ok.classify(wrong_bands, out), std::invalid_argument);
  EXPECT_EQ(parse_method("SAM"), Method::sam);
  EXPECT_EQ(parse_method("bandfit"), Method::bandfit);
  EXPECT_FALSE(parse_method("angle").has_value());
}
