// hsiclassify: class maps of envisrc streams, against the kernel classifier
// (real data) and against known answers (synthetic cubes); bad input.
#include <gst/check/gstharness.h>
#include <gtest/gtest.h>
#include <gst/video/video.h>

#include <cmath>
#include <iterator>
#include <optional>
#include <random>

#include "gst/cudasensing/gstcsmemory.h"
#include "hsi/classifier.h"
#include "hsi/convert.h"
#include "hsi/references.h"
#include "hsi/spectral_library.h"
#include "play_to_end.h"
#include "test_hsi_support.h"

using namespace cs::hsi;
using hsi_element_test::run_pipeline;
using hsi_element_test::RunResult;
using hsi_element_test::SyntheticCube;
using hsi_element_test::write_small_cube;
using hsi_test::ScratchDir;

namespace {

// Rule-image caps: f32 BSQ hyperspectral blocks of `samples` samples with one
// band per class, named; returns the band names (null, after a failure, when absent).
const GValue *expect_rule_image_caps(const GstCaps *caps, size_t classes, size_t samples) {
  const GstStructure *s = gst_caps_get_structure(caps, 0);
  int bands = 0, width = 0;
  EXPECT_TRUE(gst_structure_has_name(s, "application/x-hyperspectral"));
  EXPECT_TRUE(gst_structure_get_int(s, "bands", &bands) && size_t(bands) == classes);
  EXPECT_TRUE(gst_structure_get_int(s, "samples", &width) && size_t(width) == samples);
  EXPECT_STREQ(gst_structure_get_string(s, "interleave"), "bsq");
  EXPECT_STREQ(gst_structure_get_string(s, "format"), "f32");
  const GValue *names = gst_structure_get_value(s, "band-names");
  EXPECT_NE(names, nullptr);
  if (names) {
    EXPECT_EQ(gst_value_array_get_size(names), classes);
  }
  return names;
}

// The class maps of a run stitched into one lines x samples label image
// (checking caps, strides and the block meta on the way).
::testing::AssertionResult stitch(const RunResult &r, size_t samples, size_t lines, std::vector<uint32_t> *labels,
                                  std::string *format_out = nullptr) {
  labels->assign(samples * lines, 0xDEADBEEF);  // poison
  size_t next = 0;
  for (size_t i = 0; i < r.samples.size(); ++i) {
    GstVideoInfo info;
    if (!gst_video_info_from_caps(&info, r.samples[i].caps))
      return ::testing::AssertionFailure() << "not video caps: " << gst_caps_to_string(r.samples[i].caps);
    const GstVideoFormat f = GST_VIDEO_INFO_FORMAT(&info);
    if (format_out) *format_out = gst_video_format_to_string(f);
    GstHsiBlockMeta *meta = gst_buffer_get_hsi_block_meta(r.samples[i].buffer);
    if (!meta) return ::testing::AssertionFailure() << "class map " << i << " has no block meta";
    if (meta->first_line != next) return ::testing::AssertionFailure() << "block " << i << " starts at " << meta->first_line;
    if (size_t(GST_VIDEO_INFO_WIDTH(&info)) != samples || size_t(GST_VIDEO_INFO_HEIGHT(&info)) != meta->line_count)
      return ::testing::AssertionFailure() << "class map " << i << " is " << GST_VIDEO_INFO_WIDTH(&info) << " x "
                                           << GST_VIDEO_INFO_HEIGHT(&info) << " for " << meta->line_count << " lines";
    const std::vector<uint8_t> bytes = r.bytes(i);
    if (bytes.size() != GST_VIDEO_INFO_SIZE(&info)) return ::testing::AssertionFailure() << "size " << bytes.size();
    const size_t stride = size_t(GST_VIDEO_INFO_PLANE_STRIDE(&info, 0));
    for (size_t l = 0; l < meta->line_count; ++l)
      for (size_t s = 0; s < samples; ++s) {
        uint32_t v;
        if (f == GST_VIDEO_FORMAT_GRAY8)
          v = bytes[l * stride + s];
        else
          v = uint32_t(bytes[l * stride + 2 * s]) | (uint32_t(bytes[l * stride + 2 * s + 1]) << 8);
        (*labels)[(next + l) * samples + s] = v;
      }
    next += meta->line_count;
  }
  if (next != lines) return ::testing::AssertionFailure() << next << " lines classified of " << lines;
  return ::testing::AssertionSuccess();
}

// The kernel classifier's labels for a whole image (read in one block).
std::vector<uint32_t> kernel_labels(const SpectralClassifier &classifier, const EnviReader &reader) {
  const EnviHeader &h = reader.header();
  const std::vector<uint8_t> raw = reader.read_lines(0, h.lines);
  const size_t n = h.samples * h.lines;
  std::vector<uint32_t> labels(n);
  ClassificationOutput out;
  out.class_map_format = classifier.class_map_format();
  if (out.class_map_format == ClassMapFormat::gray8) {
    std::vector<uint8_t> map(n, 0xEE);
    out.class_map = map.data();
    classifier.classify(make_cube_block(h, raw.data(), h.lines), out);
    std::copy(map.begin(), map.end(), labels.begin());
  } else {
    std::vector<uint16_t> map(n, 0xEEEE);
    out.class_map = map.data();
    classifier.classify(make_cube_block(h, raw.data(), h.lines), out);
    std::copy(map.begin(), map.end(), labels.begin());
  }
  return labels;
}

std::string classify_launch(const std::string &cube, size_t lines_per_buffer, const std::string &classify_props) {
  return "envisrc location=\"" + cube + "\" lines-per-buffer=" + std::to_string(lines_per_buffer) +
         " ! hsiclassify name=hsiclassify0 " + classify_props + " ! appsink name=sink";
}

}  // namespace

// The whole USGS library against each AVIRIS-NG tile, as the element does it
// by default (Gaussian resampling with the tile's FWHM, bbl honoured, SAM at
// 0.10 rad), in blocks of 3 lines: the same class as the kernel classifier
// built by hand for every pixel.
TEST(HsiClassifyRealData, DefaultSamEqualsKernelClassifierOnAvirisNg) {
  for (const std::string &t : hsi_test::aviris_ng_tiles()) {
    HSI_REQUIRE_SHARED(tile, t);
  }
  HSI_REQUIRE_SHARED(library_path, hsi_test::kUsgsLibrary);
  const SpectralLibrary usgs = read_envi_library(library_path);
  size_t pixels = 0, classified = 0;
  for (const std::string &t : hsi_test::aviris_ng_tiles()) {
    const std::string tile = hsi_test::shared_file(t);
    SCOPED_TRACE(tile);
    const EnviReader reader(tile);
    const EnviHeader &h = reader.header();
    const SpectralLibrary lib = resample_library(usgs, h.wavelengths_nm(), h.fwhm_nm(), ResampleMethod::gaussian);
    ReferenceRequest request;
    request.bands = select_bands(h.bands, h.bbl);
    const ReferenceChoice choice = choose_references(lib, h.bands, request);
    ClassifierConfig config;
    config.threshold = default_threshold(config.method);
    const SpectralClassifier classifier(config, choice.references, choice.bands, h.wavelengths_nm());
    const std::vector<uint32_t> expected = kernel_labels(classifier, reader);

    const RunResult r = run_pipeline(classify_launch(tile, 3, "backend=cpu library=\"" + library_path + "\""));
    ASSERT_TRUE(r.error.empty()) << r.everything();
    EXPECT_TRUE(r.eos);
    std::vector<uint32_t> labels;
    std::string format;
    ASSERT_TRUE(stitch(r, h.samples, h.lines, &labels, &format));
    EXPECT_EQ(format, classifier.class_count() > 254 ? "GRAY16_LE" : "GRAY8");
    for (size_t p = 0; p < labels.size(); ++p) EXPECT_EQ(labels[p], expected[p]) << "pixel " << p;
    pixels += labels.size();
    for (uint32_t v : labels) classified += v != 0;
  }
  std::printf("[ info     ] %zu pixels, %zu classified within 0.10 rad\n", pixels, classified);
}

// Chosen entries (names and indices), a band range, linear resampling, and
// every method and both precisions: still the kernel's labels.
TEST(HsiClassifyRealData, EveryMethodWithEntriesAndBandRangeEqualsKernel) {
  const std::string t = hsi_test::aviris_ng_tiles()[0];
  HSI_REQUIRE_SHARED(tile, t);
  HSI_REQUIRE_SHARED(library_path, hsi_test::kUsgsLibrary);
  const SpectralLibrary usgs = read_envi_library(library_path);
  const EnviReader reader(tile);
  const EnviHeader &h = reader.header();
  const SpectralLibrary lib = resample_library(usgs, h.wavelengths_nm(), {}, ResampleMethod::linear);
  const std::vector<double> nm = h.wavelengths_nm();
  size_t first = 0, last = nm.size() - 1;
  while (nm[first] < 400) ++first;
  while (nm[last] > 2450) --last;
  // A fresh random set of 40 entries without missing data in that range,
  // some named, some by index.
  std::mt19937 rng(cs_test::fresh_seed());
  ReferenceRequest probe;
  probe.bands = select_bands(h.bands, h.bbl, first, last);
  std::vector<size_t> usable;
  for (size_t e = 2; e < lib.entries(); ++e) {
    if (lib.names[e].find("error bars") != std::string::npos || lib.names[e].find(',') != std::string::npos) continue;
    bool complete = true;
    for (int b : probe.bands) complete &= !std::isnan(lib.entry(e)[b]);
    if (complete) usable.push_back(e);
  }
  ASSERT_GT(usable.size(), 100u);
  std::shuffle(usable.begin(), usable.end(), rng);
  usable.resize(40);
  ReferenceRequest request = probe;
  std::string entries;
  for (size_t i = 0; i < usable.size(); ++i) {
    entries += (i ? "," : "");
    if (i % 2) {
      entries += std::to_string(usable[i]);
      request.indices.push_back(usable[i]);
    } else {
      std::string name = lib.names[usable[i]];
      name = name.substr(0, name.find_last_not_of(' ') + 1);
      entries += name;
      request.names.push_back(name);
    }
  }
  const ReferenceChoice choice = choose_references(lib, h.bands, request);
  ASSERT_EQ(choice.references.count(), 40u);
  for (Method method : kAllMethods)
    for (Precision precision : {Precision::exact, Precision::fast}) {
      SCOPED_TRACE(std::string(method_name(method)) + (precision == Precision::fast ? " fast" : " exact"));
      ClassifierConfig config;
      config.method = method;
      config.precision = precision;
      config.threshold = default_threshold(method);
      const SpectralClassifier classifier(config, choice.references, choice.bands, nm);
      const std::vector<uint32_t> expected = kernel_labels(classifier, reader);
      const RunResult r = run_pipeline(classify_launch(
          tile, 4,
          "backend=cpu resample=linear library=\"" + library_path + "\" entries=\"" + entries + "\" first-band=" +
              std::to_string(first) + " last-band=" + std::to_string(last) + " method=" + method_name(method) +
              " precision=" + (precision == Precision::fast ? "fast" : "exact")));
      ASSERT_TRUE(r.error.empty()) << r.everything();
      std::vector<uint32_t> labels;
      std::string format;
      ASSERT_TRUE(stitch(r, h.samples, h.lines, &labels, &format));
      EXPECT_EQ(format, "GRAY8");
      EXPECT_EQ(labels, expected);
    }
}

// Synthetic cubes with a known answer: each pixel is a random positive
// multiple of one of three CSV references (SAM angle 0), or holds the data
// ignore value in one band (class 0, no effect on its neighbours).
TEST(HsiClassify, SyntheticCubesEveryInterleaveKnownClasses) {
  const uint32_t seed = cs_test::fresh_seed();
  std::mt19937 rng(seed);
  ScratchDir dir;
  const size_t bands = 6;
  const double wl[bands] = {450, 550, 650, 750, 850, 950};
  const double refs[3][bands] = {{0.1, 0.2, 0.3, 0.4, 0.5, 0.6}, {0.6, 0.5, 0.4, 0.3, 0.2, 0.1},
                                 {0.2, 0.8, 0.2, 0.8, 0.2, 0.8}};
  std::string csv = "wavelength (nm), fwhm, grass, soil, stripes\n";
  for (size_t b = 0; b < bands; ++b)
    csv += std::to_string(wl[b]) + ", 10, " + std::to_string(refs[0][b]) + ", " + std::to_string(refs[1][b]) + ", " +
           std::to_string(refs[2][b]) + "\n";
  hsi_test::write_text(dir.file("lib.csv"), csv);
  int n = 0;
  for (Interleave il : {Interleave::bsq, Interleave::bil, Interleave::bip})
    for (DataType type : {DataType::i16, DataType::f32})
      for (ByteOrder order : {ByteOrder::little_endian, ByteOrder::big_endian}) {
        SCOPED_TRACE(std::string(interleave_name(il)) + " " + data_type_name(type) + " order " +
                     std::to_string(int(order)));
        SyntheticCube cube;
        cube.samples = 9;
        cube.lines = 11;
        cube.bands = bands;
        cube.interleave = il;
        cube.type = type;
        cube.order = order;
        cube.extra = "wavelength units = Nanometers\nwavelength = {450, 550, 650, 750, 850, 950}\n"
                     "data ignore value = -9999\n";
        std::vector<uint32_t> expected(cube.samples * cube.lines);
        std::vector<uint8_t> data(cube.samples * cube.lines * bands * cube.sample_bytes());
        const bool swap = order != host_byte_order();
        for (size_t l = 0; l < cube.lines; ++l)
          for (size_t s = 0; s < cube.samples; ++s) {
            const size_t k = rng() % 3;
            const bool no_data = rng() % 7 == 0;
            const size_t bad_band = rng() % bands;
            const double scale = type == DataType::i16 ? 1000.0 * (1 + rng() % 20) : 0.5 + (rng() % 1000) / 100.0;
            expected[l * cube.samples + s] = no_data ? 0 : uint32_t(k + 1);
            for (size_t b = 0; b < bands; ++b) {
              const double v = no_data && b == bad_band ? -9999.0 : refs[k][b] * scale;
              uint8_t *dst = data.data() + cube.index(l, s, b) * cube.sample_bytes();
              if (type == DataType::i16) {
                int16_t x = int16_t(std::lround(v));
                uint16_t u;
                std::memcpy(&u, &x, 2);
                if (swap) u = uint16_t((u >> 8) | (u << 8));
                std::memcpy(dst, &u, 2);
              } else {
                float x = float(v);
                uint32_t u;
                std::memcpy(&u, &x, 4);
                if (swap) u = __builtin_bswap32(u);
                std::memcpy(dst, &u, 4);
              }
            }
          }
        const std::string base = dir.file("cube" + std::to_string(n++));
        cube.write(base, data);
        const RunResult r =
            run_pipeline(classify_launch(base + ".hdr", 4, "backend=cpu library=\"" + dir.file("lib.csv") + "\""));
        ASSERT_TRUE(r.error.empty()) << r.everything();
        std::vector<uint32_t> labels;
        ASSERT_TRUE(stitch(r, cube.samples, cube.lines, &labels));
        EXPECT_EQ(labels, expected);
      }
}

// A push-broom stream (one line per buffer) classifies the same as blocks.
TEST(HsiClassifyRealData, LineStreamEqualsBlocks) {
  const std::string t = hsi_test::aviris_ng_tiles()[1];
  HSI_REQUIRE_SHARED(tile, t);
  HSI_REQUIRE_SHARED(library_path, hsi_test::kUsgsLibrary);
  const EnviReader reader(tile);
  const std::string props = "backend=cpu library=\"" + library_path + "\"";
  const RunResult lines = run_pipeline(classify_launch(tile, 1, props));
  const RunResult whole = run_pipeline(classify_launch(tile, 100, props));
  ASSERT_TRUE(lines.error.empty() && whole.error.empty()) << lines.everything() << whole.everything();
  EXPECT_EQ(lines.samples.size(), reader.header().lines);
  EXPECT_EQ(whole.samples.size(), 1u);
  std::vector<uint32_t> a, b;
  ASSERT_TRUE(stitch(lines, reader.header().samples, reader.header().lines, &a));
  ASSERT_TRUE(stitch(whole, reader.header().samples, reader.header().lines, &b));
  EXPECT_EQ(a, b);
}

// output=rule-images: one f32 BSQ band per class, every block bit-equal to
// the kernel classifier's rule images of the same lines.
TEST(HsiClassifyRealData, RuleImagesEqualKernelRuleImages) {
  const std::string t = hsi_test::aviris_ng_tiles()[2];
  HSI_REQUIRE_SHARED(tile, t);
  HSI_REQUIRE_SHARED(library_path, hsi_test::kUsgsLibrary);
  const EnviReader reader(tile);
  const EnviHeader &h = reader.header();
  const SpectralLibrary lib =
      resample_library(read_envi_library(library_path), h.wavelengths_nm(), h.fwhm_nm(), ResampleMethod::gaussian);
  ReferenceRequest request;
  request.bands = select_bands(h.bands, h.bbl);
  std::vector<size_t> every_third;
  for (size_t e = 2; e < 400; e += 3) every_third.push_back(e);
  request.indices = hsi_test::complete_entries(lib, h.bands, request.bands, every_third);
  const ReferenceChoice choice = choose_references(lib, h.bands, request);
  ClassifierConfig config;
  config.method = Method::sid;
  const SpectralClassifier classifier(config, choice.references, choice.bands, h.wavelengths_nm());
  const size_t K = classifier.class_count();
  ASSERT_GT(K, 10u);
  std::string entries;
  for (size_t e : request.indices) entries += (entries.empty() ? "" : ",") + std::to_string(e);
  const RunResult r = run_pipeline(classify_launch(tile, 4, "backend=cpu output=rule-images method=sid library=\"" +
                                                                library_path + "\" entries=\"" + entries + "\""));
  ASSERT_TRUE(r.error.empty()) << r.everything();
  ASSERT_EQ(r.samples.size(), 3u);
  const GValue *names = expect_rule_image_caps(r.samples[0].caps, K, h.samples);
  ASSERT_NE(names, nullptr);
  size_t finite = 0;
  for (size_t i = 0; i < r.samples.size(); ++i) {
    SCOPED_TRACE("block " + std::to_string(i));
    const size_t first = 4 * i, count = std::min<size_t>(4, h.lines - first);
    GstHsiBlockMeta *meta = gst_buffer_get_hsi_block_meta(r.samples[i].buffer);
    ASSERT_NE(meta, nullptr);
    EXPECT_EQ(meta->first_line, first);
    const std::vector<uint8_t> raw = reader.read_lines(first, count);
    std::vector<uint8_t> map(count * h.samples * 2);
    std::vector<float> rules(K * count * h.samples, -12345.0f);
    ClassificationOutput out;
    out.class_map = map.data();
    out.class_map_format = classifier.class_map_format();
    out.rule_images = rules.data();
    classifier.classify(make_cube_block(h, raw.data(), count), out);
    const std::vector<uint8_t> got = r.bytes(i);
    ASSERT_EQ(got.size(), rules.size() * sizeof(float));
    EXPECT_EQ(std::memcmp(got.data(), rules.data(), got.size()), 0) << "rule images differ from the kernel's";
    for (float v : rules) finite += std::isfinite(v);
  }
  EXPECT_GT(finite, 0u);
}

// --- bad input ---

TEST(HsiClassifyErrors, LibraryWithoutOverlappingBands) {
  ScratchDir dir;
  const std::string cube = write_small_cube(dir);
  hsi_test::write_text(dir.file("far.csv"),
                       "wavelength (nm), a, b\n5000, 0.1, 0.2\n5100, 0.2, 0.3\n5200, 0.3, 0.1\n");
  const RunResult r = run_pipeline(classify_launch(cube, 3, "backend=cpu library=\"" + dir.file("far.csv") + "\""));
  ASSERT_FALSE(r.error.empty());
  EXPECT_EQ(r.error_source, "hsiclassify0") << r.everything();
  EXPECT_EQ(r.samples.size(), 0u);
  std::printf("[ message  ] %s\n", r.everything().c_str());
}

TEST(HsiClassifyErrors, MissingOrMalformedLibrary) {
  ScratchDir dir;
  const std::string cube = write_small_cube(dir);
  RunResult r = run_pipeline(classify_launch(cube, 3, "backend=cpu library=\"" + dir.file("absent.sli") + "\""));
  EXPECT_FALSE(r.error.empty());
  EXPECT_EQ(r.error_source, "hsiclassify0") << r.everything();
  r = run_pipeline(classify_launch(cube, 3, "backend=cpu"));
  EXPECT_NE(r.error.find("No spectral library"), std::string::npos) << r.everything();
  hsi_test::write_text(dir.file("bad.hdr"), "ENVI\nsamples = 5\nlines = x\nbands = 1\ndata type = 4\n"
                                            "file type = ENVI Spectral Library\n");
  hsi_test::write_bytes(dir.file("bad.sli"), "0123456789012345678", 20);
  r = run_pipeline(classify_launch(cube, 3, "backend=cpu library=\"" + dir.file("bad.hdr") + "\""));
  EXPECT_FALSE(r.error.empty());
  EXPECT_NE(r.error_debug.find("lines"), std::string::npos) << r.everything();
}

TEST(HsiClassifyErrors, UnknownEntryAndEmptyBandRange) {
  ScratchDir dir;
  const std::string cube = write_small_cube(dir);
  hsi_test::write_text(dir.file("lib.csv"), "wavelength (nm), a, b\n450, 0.1, 0.2\n550, 0.2, 0.3\n650, 0.3, 0.1\n"
                                            "750, 0.3, 0.1\n850, 0.3, 0.1\n");
  RunResult r = run_pipeline(
      classify_launch(cube, 3, "backend=cpu entries=\"a, nonesuch\" library=\"" + dir.file("lib.csv") + "\""));
  EXPECT_EQ(r.error_source, "hsiclassify0") << r.everything();
  EXPECT_NE(r.error_debug.find("nonesuch"), std::string::npos) << r.everything();
  r = run_pipeline(classify_launch(cube, 3, "backend=cpu first-band=4 last-band=2 library=\"" + dir.file("lib.csv") + "\""));
  EXPECT_EQ(r.error_source, "hsiclassify0") << r.everything();
  r = run_pipeline(classify_launch(cube, 3, "backend=cpu entries=\"a, b, 0\" library=\"" + dir.file("lib.csv") + "\""));
  EXPECT_NE(r.error_debug.find("entry 0 ('a') is listed twice (classes 1 and 3)"), std::string::npos) << r.everything();
  // A clean run with the same library, for contrast.
  r = run_pipeline(classify_launch(cube, 3, "backend=cpu entries=\"b,0\" library=\"" + dir.file("lib.csv") + "\""));
  EXPECT_TRUE(r.error.empty()) << r.everything();
  EXPECT_EQ(r.samples.size(), 4u);
}

// Class k is the k-th entry listed: a listed entry without data (a NaN
// channel, or NaN throughout) is an error that names it, not an entry left out
// and the later classes renumbered. Of all entries, it is skipped.
TEST(HsiClassifyErrors, ListedEntryWithoutDataNamesIt) {
  ScratchDir dir;
  const std::string cube = write_small_cube(dir);
  hsi_test::write_text(dir.file("lib.csv"), "wavelength (nm), a, gap, void, b\n450, 0.1, 0.2, nan, 0.3\n"
                                            "550, 0.2, nan, nan, 0.1\n650, 0.3, 0.1, nan, 0.2\n"
                                            "750, 0.3, 0.1, nan, 0.1\n850, 0.3, 0.1, nan, 0.3\n");
  const std::string library = " library=\"" + dir.file("lib.csv") + "\"";
  for (const char *entries : {"a,gap,b", "a,void,b", "void"}) {
    SCOPED_TRACE(entries);
    const RunResult r = run_pipeline(classify_launch(cube, 3, std::string("backend=cpu entries=\"") + entries + "\"" +
                                                                  library));
    EXPECT_EQ(r.error_source, "hsiclassify0") << r.everything();
    const std::string named = std::string(entries).find("gap") != std::string::npos ? "'gap'" : "'void'";
    EXPECT_NE(r.everything().find(named), std::string::npos) << r.everything();
    EXPECT_EQ(r.samples.size(), 0u);
  }
  const RunResult every = run_pipeline(classify_launch(cube, 3, "backend=cpu" + library));
  EXPECT_TRUE(every.error.empty()) << every.everything();
  EXPECT_EQ(every.samples.size(), 4u);
}

// A threshold that no score meets is refused at start (one that every score
// meets asks for no threshold: pipelines/hsi-jasper.sh's sam 4 rad); so is a
// spectral angle or divergence over a single band (every one is the same),
// as correlation and band fit over too few bands are.
TEST(HsiClassifyErrors, ThresholdOutsideTheMethodsScoresAndTooFewBands) {
  ScratchDir dir;
  const std::string cube = write_small_cube(dir);
  hsi_test::write_text(dir.file("lib.csv"), "wavelength (nm), a, b\n450, 0.1, 0.2\n550, 0.2, 0.3\n650, 0.3, 0.1\n"
                                            "750, 0.3, 0.1\n850, 0.3, 0.4\n");
  const std::string library = " library=\"" + dir.file("lib.csv") + "\"";
  for (const char *settings : {"method=sam threshold=-0.1", "method=sid threshold=-1",
                               "method=euclidean threshold=-0.5", "method=correlation threshold=1.5",
                               "method=bandfit threshold=2"}) {
    SCOPED_TRACE(settings);
    const RunResult r = run_pipeline(classify_launch(cube, 3, std::string("backend=cpu ") + settings + library));
    EXPECT_EQ(r.error_source, "hsiclassify0") << r.everything();
    EXPECT_NE(r.error.find("threshold"), std::string::npos) << r.everything();
    EXPECT_EQ(r.samples.size(), 0u);
  }
  for (const char *settings : {"method=sam first-band=4", "method=sid first-band=4"}) {
    SCOPED_TRACE(settings);
    const RunResult r = run_pipeline(classify_launch(cube, 3, std::string("backend=cpu ") + settings + library));
    EXPECT_EQ(r.error_source, "hsiclassify0") << r.everything();
    EXPECT_NE(r.error_debug.find("needs at least 2 bands"), std::string::npos) << r.everything();
  }
  // The ends of each range, and a distance over one band, are fine.
  for (const char *settings : {"method=sam threshold=0", "method=correlation threshold=-1",
                               "method=bandfit threshold=1", "method=euclidean first-band=4", "method=sam threshold=4",
                               "method=correlation threshold=-1.5"}) {
    SCOPED_TRACE(settings);
    const RunResult r = run_pipeline(classify_launch(cube, 3, std::string("backend=cpu ") + settings + library));
    EXPECT_TRUE(r.error.empty()) << r.everything();
    EXPECT_EQ(r.samples.size(), 4u);
  }
}

// A block of no lines (an empty buffer) passes without a class map or an
// error; the blocks around it are classified as ever.
// The threshold may change while the element runs: the blocks before the
// change are those of a run at the old threshold, the blocks from it on
// those of a run at the new one. One that no score meets is ignored with a
// warning, and the blocks keep the old one.
namespace {
// Class maps of a 10-line cube in blocks of one line, at `first` and, from
// block 5 on, at `then` (the property set by a probe before that block).
RunResult run_with_threshold_change(const std::string &cube, const std::string &library, const std::string &backend,
                                    double first, std::optional<double> then) {
  const std::string launch = classify_launch(cube, 1, backend + " library=\"" + library + "\" threshold=" +
                                                          std::to_string(first));
  return run_pipeline(launch, {}, [then](GstElement *pipeline) {
    if (!then) return;
    GstElement *classify = gst_bin_get_by_name(GST_BIN(pipeline), "hsiclassify0");
    GstPad *pad = gst_element_get_static_pad(classify, "sink");
    auto *at = new std::pair<int, double>(0, *then);
    gst_pad_add_probe(
        pad, GST_PAD_PROBE_TYPE_BUFFER,
        [](GstPad *p, GstPadProbeInfo *, gpointer data) {
          auto *state = static_cast<std::pair<int, double> *>(data);
          if (state->first++ == 5) g_object_set(GST_PAD_PARENT(p), "threshold", state->second, nullptr);
          return GST_PAD_PROBE_OK;
        },
        at, [](gpointer data) { delete static_cast<std::pair<int, double> *>(data); });
    gst_object_unref(pad);
    gst_object_unref(classify);
  });
}

void expect_threshold_follows_the_property(const std::string &backend) {
  ScratchDir dir;
  const std::string cube = write_small_cube(dir);
  hsi_test::write_text(dir.file("lib.csv"), "wavelength (nm), a, b\n450, 0.1, 0.2\n550, 0.2, 0.3\n650, 0.3, 0.1\n"
                                            "750, 0.3, 0.1\n850, 0.3, 0.1\n");
  const std::string library = dir.file("lib.csv");
  // sam: 3.2 rad keeps every pixel classified, 0.05 rad almost none of these random spectra
  const RunResult wide = run_with_threshold_change(cube, library, backend, 3.2, std::nullopt);
  const RunResult narrow = run_with_threshold_change(cube, library, backend, 0.05, std::nullopt);
  const RunResult changed = run_with_threshold_change(cube, library, backend, 3.2, 0.05);
  const RunResult refused = run_with_threshold_change(cube, library, backend, 3.2, -1.0);
  for (const RunResult *r : {&wide, &narrow, &changed, &refused}) {
    ASSERT_EQ(r->error, "") << r->everything();
    ASSERT_EQ(r->samples.size(), 10u);
  }
  // A block's class map is one row of 7 pixels (then the row's padding, which nothing writes).
  auto pixels = [](const RunResult &r, size_t i) {
    std::vector<uint8_t> row = r.bytes(i);
    row.resize(7);
    return row;
  };
  size_t differing = 0;
  for (size_t i = 0; i < 10; ++i) {
    differing += i >= 5 && pixels(wide, i) != pixels(narrow, i);
    EXPECT_EQ(pixels(changed, i), pixels(i < 5 ? wide : narrow, i)) << "block " << i;
    EXPECT_EQ(pixels(refused, i), pixels(wide, i)) << "block " << i;
  }
  EXPECT_GT(differing, 0u) << "the two thresholds should classify the later blocks differently";
  EXPECT_TRUE(changed.warnings.empty());
  ASSERT_EQ(refused.warnings.size(), 1u);
  EXPECT_NE(refused.warnings[0].find("no sam score meets it"), std::string::npos) << refused.warnings[0];
}
}  // namespace

TEST(HsiClassify, ThresholdFollowsThePropertyWhileRunning) { expect_threshold_follows_the_property("backend=cpu"); }

TEST(GpuHsiClassify, ThresholdFollowsThePropertyWhileRunning) {
  CS_REQUIRE_GPU();
  expect_threshold_follows_the_property("backend=cuda");
}

namespace {
// tools/synthetic_hsi.py's scene of five materials in `folder` (scene.hdr,
// materials.hdr, truth.u8): "" when written, else why it cannot be (a reason
// to skip: the tool or numpy missing); a failure of the tool is a test failure.
std::string write_synthetic_scene(const std::string &folder, int lines, int samples) {
  const char *root = std::getenv("CS_SOURCE_ROOT");
  const std::string tool = std::string(root && *root ? root : ".") + "/tools/synthetic_hsi.py";
  if (!std::filesystem::exists(tool)) return tool + " not found (CS_SOURCE_ROOT?)";
  const std::string cmd_python = hsi_test::shell_quote(hsi_test::python());
  if (std::system((cmd_python + " -c 'import numpy' >/dev/null 2>&1").c_str()) != 0)
    return hsi_test::python() + " cannot import numpy (install python3-numpy, or set CS_PYTHON)";
  EXPECT_EQ(std::system((cmd_python + " " + hsi_test::shell_quote(tool) + " " + hsi_test::shell_quote(folder) +
                         " --lines " + std::to_string(lines) + " --samples " + std::to_string(samples) +
                         " >/dev/null 2>&1")
                            .c_str()),
            0);
  return "";
}
}  // namespace

// Stopping a stream while a block is being classified is no error (the
// source pad's caps may be gone before the block's height is set: that is
// flushing, not a negotiation failure). Seen in 1-4 % of random stops before.
TEST(HsiClassify, StoppingMidStreamIsNotAnError) {
  ScratchDir dir;
  const std::string scene = dir.path() + "/scene";
  if (const std::string why = write_synthetic_scene(scene, 200, 60); !why.empty()) GTEST_SKIP() << why;
  const auto errors = element_test::errors_over_random_stops(
      "envisrc location=" + scene + "/scene.hdr lines-per-buffer=16 ! hsiclassify backend=cpu library=" + scene +
          "/materials.hdr ! fakesink sync=false",
      300, cs_test::fresh_seed());
  for (const auto &[what, count] : errors) ADD_FAILURE() << count << " x " << what;
}

TEST(HsiClassify, EmptyBlockPassesWithoutError) {
  ScratchDir dir;
  hsi_test::write_text(dir.file("lib.csv"), "wavelength (nm), a, b\n450, 0.1, 0.2\n550, 0.2, 0.3\n650, 0.3, 0.1\n"
                                            "750, 0.3, 0.1\n850, 0.3, 0.4\n");
  GstHarness *h = gst_harness_new_parse(("hsiclassify backend=cpu library=\"" + dir.file("lib.csv") + "\"").c_str());
  GstBus *bus = gst_bus_new();
  gst_element_set_bus(h->element, bus);
  gst_harness_set_src_caps_str(h, "application/x-hyperspectral, samples=(int)4, bands=(int)5, interleave=(string)bsq, "
                                  "format=(string)f32, endianness=(int)1234, wavelengths=(double)<450.0, 550.0, "
                                  "650.0, 750.0, 850.0>");
  auto block = [](size_t lines) {
    GstBuffer *buf = gst_buffer_new_allocate(nullptr, lines * 4 * 5 * sizeof(float), nullptr);
    GstMapInfo map;
    gst_buffer_map(buf, &map, GST_MAP_WRITE);
    for (size_t i = 0; i < map.size / sizeof(float); ++i) reinterpret_cast<float *>(map.data)[i] = 0.1f + 0.01f * i;
    gst_buffer_unmap(buf, &map);
    return buf;
  };
  EXPECT_EQ(gst_harness_push(h, block(2)), GST_FLOW_OK);
  EXPECT_EQ(gst_harness_push(h, gst_buffer_new()), GST_FLOW_OK) << "no lines";
  EXPECT_EQ(gst_harness_push(h, block(3)), GST_FLOW_OK);
  EXPECT_EQ(gst_harness_buffers_received(h), 2u);
  for (gsize size : {gsize(2 * 4), gsize(3 * 4)}) {
    GstBuffer *map = gst_harness_pull(h);
    ASSERT_NE(map, nullptr);
    EXPECT_EQ(gst_buffer_get_size(map), size) << "GRAY8 class map, 4 samples a line";
    gst_buffer_unref(map);
  }
  GstMessage *error = gst_bus_pop_filtered(bus, GST_MESSAGE_ERROR);
  EXPECT_EQ(error, nullptr);
  if (error) gst_message_unref(error);
  gst_element_set_bus(h->element, nullptr);
  gst_object_unref(bus);
  gst_harness_teardown(h);
}

namespace {

// The kernel classifier of `cube` against every entry of `library` on all
// bands (what hsiclassify builds when the wavelengths agree).
SpectralClassifier kernel_classifier(const EnviHeader &h, const std::string &library, Method method) {
  const SpectralLibrary lib = read_spectral_library(library);
  EXPECT_TRUE(same_wavelengths(lib.wavelengths_nm, h.wavelengths_nm()));
  ReferenceRequest request;
  request.bands = select_bands(h.bands, h.bbl);
  const ReferenceChoice choice = choose_references(lib, h.bands, request);
  ClassifierConfig config;
  config.method = method;
  config.threshold = default_threshold(method);
  return SpectralClassifier(config, choice.references, choice.bands, h.wavelengths_nm());
}

std::string rules_launch(const std::string &cube, const std::string &classify_props) {
  return "envisrc location=\"" + cube + "\" lines-per-buffer=3 ! hsiclassify name=c " + classify_props +
         " ! queue ! appsink name=sink c.rules ! queue ! appsink name=rules";
}

}  // namespace

// On the CPU backend the class maps and the rule images of the request pad
// come from pools rather than a fresh allocation per block (fresh memory is
// mapped and zeroed by the kernel page by page, each time).
TEST(HsiClassify, CpuOutputsAreRecycled) {
  ScratchDir dir;
  const std::string cube = write_small_cube(dir);
  hsi_test::write_text(dir.file("lib.csv"), "wavelength (nm), red, blue\n450, 0.1, 0.9\n550, 0.2, 0.7\n"
                                            "650, 0.4, 0.4\n750, 0.7, 0.2\n850, 0.9, 0.1\n");
  GError *error = nullptr;
  GstElement *p = gst_parse_launch(("envisrc location=\"" + cube + "\" lines-per-buffer=3 ! hsiclassify name=c "
                                    "backend=cpu library=\"" + dir.file("lib.csv") +
                                    "\" ! fakesink name=maps c.rules ! queue ! fakesink name=rules")
                                       .c_str(),
                                   &error);
  ASSERT_EQ(error, nullptr) << error->message;
  struct Count {
    int buffers = 0, pooled = 0;
  } counts[2];
  const char *sinks[2] = {"maps", "rules"};
  for (int i = 0; i < 2; ++i) {
    GstElement *sink = gst_bin_get_by_name(GST_BIN(p), sinks[i]);
    GstPad *pad = gst_element_get_static_pad(sink, "sink");
    gst_pad_add_probe(
        pad, GST_PAD_PROBE_TYPE_BUFFER,
        [](GstPad *, GstPadProbeInfo *info, gpointer data) {
          auto *c = static_cast<Count *>(data);
          ++c->buffers;
          c->pooled += GST_PAD_PROBE_INFO_BUFFER(info)->pool != nullptr;
          return GST_PAD_PROBE_OK;
        },
        &counts[i], nullptr);
    gst_object_unref(pad);
    gst_object_unref(sink);
  }
  const std::string outcome = element_test::play_to_end(p, 30);
  gst_object_unref(p);
  ASSERT_EQ(outcome, "");
  for (int i = 0; i < 2; ++i) {
    SCOPED_TRACE(sinks[i]);
    EXPECT_EQ(counts[i].buffers, 4) << "10 lines in blocks of 3";
    EXPECT_EQ(counts[i].pooled, counts[i].buffers);
  }
}

// The request pad `rules` next to the class map: per block, f32 BSQ planes
// bit-equal to the kernel classifier's rule images of the same lines, with
// the block's meta and the class names as band names; the class map on the
// source pad is unchanged.
TEST(HsiClassify, RulesPadNextToClassMapEqualsKernelScores) {
  ScratchDir dir;
  const std::string cube = write_small_cube(dir);
  hsi_test::write_text(dir.file("lib.csv"), "wavelength (nm), red, bump, blue\n450, 0.1, 0.5, 0.9\n"
                                            "550, 0.2, 0.6, 0.7\n650, 0.4, 0.7, 0.4\n750, 0.7, 0.6, 0.2\n"
                                            "850, 0.9, 0.5, 0.1\n");
  const EnviReader reader(cube);
  const EnviHeader &h = reader.header();
  for (Method method : {Method::sam, Method::euclidean, Method::correlation}) {
    SCOPED_TRACE(method_name(method));
    const SpectralClassifier classifier = kernel_classifier(h, dir.file("lib.csv"), method);
    const size_t K = classifier.class_count();
    ASSERT_EQ(K, 3u);
    const RunResult r = run_pipeline(rules_launch(cube, std::string("backend=cpu method=") + method_name(method) +
                                                            " library=\"" + dir.file("lib.csv") + "\""),
                                     {"rules"});
    ASSERT_TRUE(r.error.empty()) << r.everything();
    const std::vector<hsi_element_test::Received> &rules = r.branches.at("rules");
    ASSERT_EQ(rules.size(), 4u);  // 10 lines in blocks of 3
    ASSERT_EQ(r.samples.size(), 4u);
    std::vector<uint32_t> labels;
    ASSERT_TRUE(stitch(r, h.samples, h.lines, &labels));
    const std::vector<uint32_t> expected_labels = kernel_labels(classifier, reader);
    EXPECT_EQ(labels, expected_labels);
    size_t finite = 0;
    for (size_t i = 0; i < rules.size(); ++i) {
      SCOPED_TRACE("block " + std::to_string(i));
      const size_t first = 3 * i, count = std::min<size_t>(3, h.lines - first);
      const GValue *names = expect_rule_image_caps(rules[i].caps, K, h.samples);
      ASSERT_NE(names, nullptr);
      EXPECT_STREQ(g_value_get_string(gst_value_array_get_value(names, 2)), "blue");
      EXPECT_FALSE(gst_cs_caps_has_device_feature(rules[i].caps)) << "the CPU backend produces system memory";
      GstHsiBlockMeta *meta = gst_buffer_get_hsi_block_meta(rules[i].buffer);
      ASSERT_NE(meta, nullptr);
      EXPECT_EQ(meta->first_line, first);
      EXPECT_EQ(meta->line_count, count);
      const std::vector<uint8_t> raw = reader.read_lines(first, count);
      std::vector<uint8_t> map(count * h.samples, 0xEE);
      std::vector<float> scores(K * count * h.samples, -12345.0f);
      ClassificationOutput out;
      out.class_map = map.data();
      out.class_map_format = classifier.class_map_format();
      out.rule_images = scores.data();
      classifier.classify(make_cube_block(h, raw.data(), count), out);
      const std::vector<uint8_t> got = RunResult::bytes_of(rules[i]);
      ASSERT_EQ(got.size(), scores.size() * sizeof(float));
      EXPECT_EQ(std::memcmp(got.data(), scores.data(), got.size()), 0) << "rule images differ from the kernel's";
      for (float v : scores) finite += std::isfinite(v);
    }
    EXPECT_EQ(finite, K * h.samples * h.lines) << "positive random spectra score everywhere";
  }
}

// One rules pad per element; a pipeline whose rules pad is requested but left
// unlinked still classifies.
TEST(HsiClassify, RulesPadOnlyOnceAndUnlinkedIsHarmless) {
  ScratchDir dir;
  const std::string cube = write_small_cube(dir);
  hsi_test::write_text(dir.file("lib.csv"), "wavelength (nm), a, b\n450, 0.1, 0.2\n550, 0.2, 0.3\n650, 0.3, 0.1\n"
                                            "750, 0.3, 0.1\n850, 0.3, 0.1\n");
  GstElement *element = gst_element_factory_make("hsiclassify", nullptr);
  ASSERT_NE(element, nullptr);
  GstPad *rules = gst_element_request_pad_simple(element, "rules");
  ASSERT_NE(rules, nullptr);
  EXPECT_STREQ(GST_PAD_NAME(rules), "rules");
  GstPadTemplate *templ = gst_element_get_pad_template(element, "rules");
  ASSERT_NE(templ, nullptr);
  EXPECT_EQ(gst_element_request_pad(element, templ, nullptr, nullptr), nullptr) << "a second rules pad";
  gst_element_release_request_pad(element, rules);
  gst_object_unref(rules);
  GstPad *again = gst_element_request_pad_simple(element, "rules");
  EXPECT_NE(again, nullptr) << "a released rules pad can be requested again";
  if (again) gst_object_unref(again);
  gst_object_unref(element);

  GError *error = nullptr;
  GstElement *pipeline = gst_parse_launch(("envisrc location=\"" + cube + "\" lines-per-buffer=4 ! hsiclassify "
                                           "name=c backend=cpu library=\"" + dir.file("lib.csv") +
                                           "\" ! fakesink name=sink").c_str(), &error);
  ASSERT_TRUE(pipeline && !error) << (error ? error->message : "");
  GstElement *classify = gst_bin_get_by_name(GST_BIN(pipeline), "c");
  GstPad *unlinked = gst_element_request_pad_simple(classify, "rules");
  ASSERT_NE(unlinked, nullptr);
  gst_element_set_state(pipeline, GST_STATE_PLAYING);
  GstBus *bus = gst_element_get_bus(pipeline);
  GstMessage *msg = gst_bus_timed_pop_filtered(bus, 30 * GST_SECOND, GstMessageType(GST_MESSAGE_EOS | GST_MESSAGE_ERROR));
  ASSERT_NE(msg, nullptr) << "neither EOS nor an error within 30 s";
  EXPECT_EQ(GST_MESSAGE_TYPE(msg), GST_MESSAGE_EOS) << GST_MESSAGE_TYPE_NAME(msg);
  gst_message_unref(msg);
  gst_object_unref(bus);
  gst_element_set_state(pipeline, GST_STATE_NULL);
  gst_object_unref(unlinked);
  gst_object_unref(classify);
  gst_object_unref(pipeline);
}

// --- CUDA: the same results as the CPU element ---

namespace {

// The rule images of a run (blocks of BSQ planes) as K planes of the scene.
std::vector<float> stitch_rules(const RunResult &r, size_t samples, size_t lines, size_t K) {
  std::vector<float> rules(K * samples * lines, -12345.0f);
  size_t first = 0;
  for (size_t i = 0; i < r.samples.size(); ++i) {
    const std::vector<uint8_t> bytes = r.bytes(i);
    const size_t count = bytes.size() / (K * samples * sizeof(float));
    const auto *f = reinterpret_cast<const float *>(bytes.data());
    for (size_t k = 0; k < K; ++k)
      std::copy(f + k * count * samples, f + (k + 1) * count * samples,
                rules.begin() + long(k * samples * lines + first * samples));
    first += count;
  }
  return rules;
}

// As the kernel tests (tests/kernels/hsi/test_classify_cuda.cpp): GPU and
// CPU run the same code in the same order and differ by FMA contraction and
// the device's logf/acos/sqrt (a few float ulps of the sums).
double rule_tolerance(Method method, float value) {
  double bound = method == Method::bandfit ? 4e-6 : 1e-6;
  const bool relative = method == Method::sid || method == Method::euclidean;
  return relative ? bound * std::fabs(value) + 1e-7 : bound;
}

}  // namespace

// Class maps equal; where they differ, the two classes' CPU scores are a
// near-tie (within 1e-5), as in the kernel tests. Rule images within the
// kernel tests' bounds. Device memory in and out, and system memory in and out.
TEST(GpuHsiClassify, CudaEqualsCpuOnAvirisNgEveryMethod) {
  CS_REQUIRE_GPU();
  const std::string t = hsi_test::aviris_ng_tiles()[0];
  HSI_REQUIRE_SHARED(tile, t);
  HSI_REQUIRE_SHARED(library_path, hsi_test::kUsgsLibrary);
  const EnviReader reader(tile);
  const size_t samples = reader.header().samples, lines = reader.header().lines, n = samples * lines;
  for (Method method : kAllMethods) {
    SCOPED_TRACE(method_name(method));
    const std::string props = "library=\"" + library_path + "\" method=" + method_name(method);
    const RunResult cpu = run_pipeline(classify_launch(tile, 3, "backend=cpu " + props));
    const RunResult cpu_rules = run_pipeline(classify_launch(tile, 3, "backend=cpu output=rule-images " + props));
    const RunResult gpu_rules = run_pipeline(classify_launch(tile, 3, "backend=cuda output=rule-images " + props));
    const RunResult gpu = run_pipeline("envisrc location=\"" + tile + "\" lines-per-buffer=3 ! gpuupload backend=cuda "
                                       "! hsiclassify backend=cuda " + props + " ! gpudownload backend=cuda ! "
                                       "appsink name=sink");
    const RunResult gpu_sys = run_pipeline(classify_launch(tile, 3, "backend=cuda " + props));
    for (const RunResult *r : {&cpu, &cpu_rules, &gpu_rules, &gpu, &gpu_sys}) ASSERT_TRUE(r->error.empty()) << r->everything();
    int K = 0;
    ASSERT_TRUE(gst_structure_get_int(gst_caps_get_structure(cpu_rules.samples[0].caps, 0), "bands", &K));
    const std::vector<float> rules = stitch_rules(cpu_rules, samples, lines, size_t(K));
    const std::vector<float> rules_gpu = stitch_rules(gpu_rules, samples, lines, size_t(K));
    size_t rule_failures = 0;
    for (size_t j = 0; j < rules.size(); ++j) {
      const float a = rules[j], b = rules_gpu[j];
      const bool ok = std::isnan(a) || std::isnan(b) ? std::isnan(a) && std::isnan(b)
                                                    : std::fabs(double(a) - double(b)) <= rule_tolerance(method, a);
      if (!ok && rule_failures++ < 5) ADD_FAILURE() << "rule value " << j << ": cpu " << a << " gpu " << b;
    }
    std::vector<uint32_t> a, b, c;
    ASSERT_TRUE(stitch(cpu, samples, lines, &a));
    ASSERT_TRUE(stitch(gpu, samples, lines, &b));
    ASSERT_TRUE(stitch(gpu_sys, samples, lines, &c));
    EXPECT_EQ(b, c) << "device and system memory paths run the same kernel";
    size_t ties = 0;
    for (size_t p = 0; p < n; ++p) {
      if (a[p] == b[p]) continue;
      const bool tie = a[p] > 0 && b[p] > 0 && b[p] <= uint32_t(K) &&
                       std::fabs(rules[(a[p] - 1) * n + p] - rules[(b[p] - 1) * n + p]) < 1e-5;
      if (tie) {
        ++ties;
        continue;
      }
      ADD_FAILURE() << "pixel " << p << ": cpu class " << a[p] << ", cuda " << b[p];
    }
    if (ties) std::printf("[ info     ] %s: %zu near-ties picked differently\n", method_name(method), ties);
  }
}

// The rules pad on CUDA: the rule images stay in device memory when
// downstream takes it, equal bit for bit to output=rule-images on CUDA (the
// same kernel launch writes both outputs), and within the kernel tests'
// bounds of the CPU's; the class map next to them equals the CUDA class map.
TEST(GpuHsiClassify, RulesPadOnDeviceEqualsRuleImages) {
  CS_REQUIRE_GPU();
  const std::string t = hsi_test::aviris_ng_tiles()[0];
  HSI_REQUIRE_SHARED(tile, t);
  HSI_REQUIRE_SHARED(library_path, hsi_test::kUsgsLibrary);
  const EnviReader reader(tile);
  const size_t samples = reader.header().samples, lines = reader.header().lines;
  for (Method method : {Method::sam, Method::sid}) {
    SCOPED_TRACE(method_name(method));
    const std::string props = "library=\"" + library_path + "\" method=" + method_name(method);
    const RunResult both = run_pipeline(rules_launch(tile, "backend=cuda " + props), {"rules"});
    const RunResult gpu_rules = run_pipeline(classify_launch(tile, 3, "backend=cuda output=rule-images " + props));
    const RunResult cpu_rules = run_pipeline(classify_launch(tile, 3, "backend=cpu output=rule-images " + props));
    const RunResult gpu = run_pipeline(classify_launch(tile, 3, "backend=cuda " + props));
    for (const RunResult *r : {&both, &gpu_rules, &cpu_rules, &gpu}) ASSERT_TRUE(r->error.empty()) << r->everything();
    const std::vector<hsi_element_test::Received> &pad = both.branches.at("rules");
    ASSERT_EQ(pad.size(), gpu_rules.samples.size());
    for (const hsi_element_test::Received &r : pad) {
      EXPECT_TRUE(gst_cs_caps_has_device_feature(r.caps)) << gst_caps_to_string(r.caps);
      EXPECT_TRUE(gst_is_cs_memory(gst_buffer_peek_memory(r.buffer, 0))) << "rule images left the device";
    }
    int K = 0;
    ASSERT_TRUE(gst_structure_get_int(gst_caps_get_structure(pad[0].caps, 0), "bands", &K));
    RunResult pad_only;
    for (const hsi_element_test::Received &r : pad)
      pad_only.samples.push_back({gst_buffer_ref(r.buffer), gst_caps_ref(r.caps)});
    const std::vector<float> a = stitch_rules(pad_only, samples, lines, size_t(K));
    const std::vector<float> b = stitch_rules(gpu_rules, samples, lines, size_t(K));
    const std::vector<float> c = stitch_rules(cpu_rules, samples, lines, size_t(K));
    EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0);
    size_t failures = 0;
    for (size_t j = 0; j < a.size(); ++j) {
      const bool ok = std::isnan(a[j]) || std::isnan(c[j]) ? std::isnan(a[j]) && std::isnan(c[j])
                                                          : std::fabs(double(a[j]) - double(c[j])) <= rule_tolerance(method, c[j]);
      if (!ok && failures++ < 5) ADD_FAILURE() << "rule value " << j << ": cpu " << c[j] << " gpu " << a[j];
    }
    std::vector<uint32_t> x, y;
    ASSERT_TRUE(stitch(both, samples, lines, &x));
    ASSERT_TRUE(stitch(gpu, samples, lines, &y));
    EXPECT_EQ(x, y);
  }
}

// The demo's hyperspectral step: tools/synthetic_hsi.py's scene of five
// materials, classified by spectral angle against the materials' library
// (int16 BIL with a reflectance scale factor, streamed in blocks of lines),
// puts every pure pixel in its true class (the mixed borders go to one of
// their materials or stay unclassified: printed only).
TEST(HsiClassifySyntheticScene, PurePixelsFindTheirTrueClass) {
  ScratchDir dir;
  const std::string scene = dir.path() + "/scene";
  if (const std::string why = write_synthetic_scene(scene, 80, 120); !why.empty()) GTEST_SKIP() << why;
  const RunResult r = run_pipeline("envisrc location=" + scene + "/scene.hdr lines-per-buffer=32 ! hsiclassify library=" +
                                   scene + "/materials.hdr backend=cpu ! appsink name=sink");
  ASSERT_EQ(r.error, "") << r.everything();
  std::vector<uint8_t> classes;
  for (size_t i = 0; i < r.samples.size(); ++i) {
    const std::vector<uint8_t> block = r.bytes(i);
    classes.insert(classes.end(), block.begin(), block.end());
  }
  std::ifstream truth_file(scene + "/truth.u8", std::ios::binary);
  const std::vector<uint8_t> truth((std::istreambuf_iterator<char>(truth_file)), std::istreambuf_iterator<char>());
  ASSERT_EQ(classes.size(), truth.size());
  size_t pure = 0, right = 0, mixed = 0, mixed_unclassified = 0;
  for (size_t i = 0; i < truth.size(); ++i) {
    if (truth[i] > 0) {
      ++pure;
      right += classes[i] == truth[i];
    } else {
      ++mixed;
      mixed_unclassified += classes[i] == 0;
    }
  }
  std::printf("[ measured ] synthetic scene: %zu of %zu pure pixels in their true class, %zu of %zu mixed pixels "
              "unclassified\n",
              right, pure, mixed_unclassified, mixed);
  EXPECT_GT(pure, truth.size() / 2);
  EXPECT_EQ(right, pure);
}
