// Jasper Ridge (../shared/data/hsi/jasper): the scene converted to ENVI by
// tools/jasper_to_envi.py, classified against the class means and the file's
// endmembers, scored against the abundance labels (argmax of A).
//
// Reference figures (../shared/data/README.md, float64 over all 10000 pixels):
// SAM with class means OA 93.90%, AA 92.78%; SAM with the endmembers M OA
// 94.16%, AA 92.85%; Euclidean minimum distance with class means OA 91.40%.
// We get the same numbers (to the two decimals quoted) because we compute the
// same thing: no threshold (ENVI's usual 0.10 rad would leave pixels
// unclassified and lower OA), every one of the 198 bands, class means over
// the argmax labels, ties impossible in practice. The library is stored as
// float32 and the cube as its original uint16 counts; rounding the means to
// float32 moves angles by ~1e-8 rad, far below the margins between classes.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "common/cuda_runtime.h"
#include "hsi/classifier.h"
#include "hsi/convert.h"
#include "hsi/references.h"
#include "hsi/spectral_library.h"
#include "hsi_test_util.h"

using namespace cs::hsi;

namespace {

constexpr const char *kJasperMat = "hsi/jasper/jasperRidge2_R198.mat";

struct Accuracy {
  double overall = 0;  // percent of pixels whose class equals the label
  double average = 0;  // mean over classes of the percent of that class's pixels found
};

Accuracy accuracy(const std::vector<uint8_t> &predicted, const std::vector<uint8_t> &truth, size_t classes) {
  std::vector<size_t> hits(classes + 1, 0), totals(classes + 1, 0);
  size_t correct = 0;
  for (size_t p = 0; p < truth.size(); ++p) {
    ++totals[truth[p]];
    if (predicted[p] == truth[p]) {
      ++hits[truth[p]];
      ++correct;
    }
  }
  Accuracy a;
  a.overall = 100.0 * double(correct) / double(truth.size());
  for (size_t k = 1; k <= classes; ++k) a.average += 100.0 * double(hits[k]) / double(totals[k]) / double(classes);
  return a;
}

// The converted scene, labels and libraries in a scratch folder.
struct Jasper {
  hsi_test::ScratchDir dir;
  std::string cube, labels, means, endmembers;
};

// The converter's outputs in a folder.
void name_outputs(const std::string &folder, Jasper *j) {
  j->cube = folder + "/jasper_ridge.hdr";
  j->labels = folder + "/jasper_labels.hdr";
  j->means = folder + "/jasper_class_means.hdr";
  j->endmembers = folder + "/jasper_endmembers.hdr";
}

// Runs the converter; fails the test with its output when it fails.
bool convert(const std::string &mat, Jasper *j) {
  const char *root = std::getenv("CS_SOURCE_ROOT");
  const std::string tool = std::string(root && *root ? root : ".") + "/tools/jasper_to_envi.py";
  const std::string log = j->dir.file("convert.log");
  const std::string cmd = hsi_test::shell_quote(hsi_test::python()) + " " + hsi_test::shell_quote(tool) + " " +
                          hsi_test::shell_quote(mat) + " " + hsi_test::shell_quote(j->dir.path()) + " >" +
                          hsi_test::shell_quote(log) + " 2>&1";
  if (std::system(cmd.c_str()) != 0) {
    std::ifstream in(log);
    std::stringstream text;
    text << in.rdbuf();
    ADD_FAILURE() << cmd << "\n" << text.str();
    return false;
  }
  name_outputs(j->dir.path(), j);
  return true;
}

// CS_JASPER_ENVI names a folder the converter has already written (a machine
// without numpy and scipy then runs these tests on a scene converted
// elsewhere). False when it is unset; set, every file must be there.
bool use_converted(Jasper *j) {
  const char *folder = std::getenv("CS_JASPER_ENVI");
  if (!folder || !*folder) return false;
  name_outputs(folder, j);
  for (const std::string *header : {&j->cube, &j->labels, &j->means, &j->endmembers})
    EXPECT_TRUE(std::ifstream(*header).good()) << "CS_JASPER_ENVI=" << folder << " lacks " << *header;
  return true;
}

#define JASPER_REQUIRE(j)                                                                               \
  Jasper j;                                                                                            \
  if (!use_converted(&j)) {                                                                            \
    HSI_REQUIRE_SHARED(mat, kJasperMat);                                                               \
    HSI_REQUIRE_PYTHON("numpy, scipy.io");                                                             \
    ASSERT_TRUE(convert(mat, &j));                                                                     \
  }                                                                                                    \
  ASSERT_FALSE(::testing::Test::HasFailure());

SpectralClassifier make_classifier(const std::string &library, const EnviHeader &h, Method method,
                                   Precision precision = Precision::exact) {
  const SpectralLibrary lib = read_spectral_library(library);
  EXPECT_EQ(lib.channels, h.bands) << "no wavelengths: library channel i is cube band i";
  ReferenceRequest request;
  request.bands = select_bands(h.bands, h.bbl);
  const ReferenceChoice choice = choose_references(lib, h.bands, request);
  EXPECT_TRUE(choice.skipped.empty());
  ClassifierConfig config;
  config.method = method;
  config.precision = precision;  // threshold NaN: every pixel gets its best class
  return SpectralClassifier(config, choice.references, choice.bands, h.wavelengths_nm());
}

std::vector<uint8_t> classify_cpu(const SpectralClassifier &classifier, const EnviReader &cube) {
  const EnviHeader &h = cube.header();
  const std::vector<uint8_t> raw = cube.read_lines(0, h.lines);
  std::vector<uint8_t> map(h.samples * h.lines, 0xEE);
  ClassificationOutput out;
  out.class_map = map.data();
  out.class_map_format = classifier.class_map_format();
  classifier.classify(make_cube_block(h, raw.data(), h.lines), out);
  return map;
}

std::vector<uint8_t> read_labels(const std::string &path) {
  const EnviReader labels(path);
  EXPECT_EQ(labels.header().data_type, DataType::u8);
  return labels.read_lines(0, labels.header().lines);
}

}  // namespace

TEST(Jasper, ConverterWritesSceneLabelsAndLibraries) {
  JASPER_REQUIRE(j);
  const EnviReader cube(j.cube);
  const EnviHeader &h = cube.header();
  EXPECT_EQ(h.samples, 100u);
  EXPECT_EQ(h.lines, 100u);
  EXPECT_EQ(h.bands, 198u);
  EXPECT_EQ(h.data_type, DataType::u16);
  const SpectralLibrary means = read_spectral_library(j.means);
  ASSERT_EQ(means.entries(), 4u);
  EXPECT_EQ(means.names, (std::vector<std::string>{"tree", "water", "dirt", "road"}));
  const std::vector<uint8_t> labels = read_labels(j.labels);
  std::array<size_t, 5> counts{};
  for (uint8_t l : labels) ++counts.at(l);
  // Class sizes of the argmax labels (tree, water, dirt, road).
  EXPECT_EQ(counts, (std::array<size_t, 5>{0, 3493, 3326, 2428, 753}));
}

TEST(Jasper, SamWithClassMeansMatchesReferenceAccuracy) {
  JASPER_REQUIRE(j);
  const EnviReader cube(j.cube);
  const std::vector<uint8_t> truth = read_labels(j.labels);
  for (Precision precision : {Precision::exact, Precision::fast}) {
    SCOPED_TRACE(precision == Precision::exact ? "exact" : "fast");
    const SpectralClassifier classifier = make_classifier(j.means, cube.header(), Method::sam, precision);
    const Accuracy a = accuracy(classify_cpu(classifier, cube), truth, 4);
    std::printf("[ jasper   ] SAM, class means: OA %.2f%%, AA %.2f%%\n", a.overall, a.average);
    EXPECT_NEAR(a.overall, 93.90, 0.005);
    EXPECT_NEAR(a.average, 92.78, 0.005);
  }
}

TEST(Jasper, SamWithEndmembersAndEuclideanMatchReferenceAccuracy) {
  JASPER_REQUIRE(j);
  const EnviReader cube(j.cube);
  const std::vector<uint8_t> truth = read_labels(j.labels);
  const Accuracy sam = accuracy(classify_cpu(make_classifier(j.endmembers, cube.header(), Method::sam), cube), truth, 4);
  std::printf("[ jasper   ] SAM, endmembers M: OA %.2f%%, AA %.2f%%\n", sam.overall, sam.average);
  EXPECT_NEAR(sam.overall, 94.16, 0.005);
  EXPECT_NEAR(sam.average, 92.85, 0.005);
  const Accuracy euclid =
      accuracy(classify_cpu(make_classifier(j.means, cube.header(), Method::euclidean), cube), truth, 4);
  std::printf("[ jasper   ] Euclidean, class means: OA %.2f%%\n", euclid.overall);
  EXPECT_NEAR(euclid.overall, 91.40, 0.005);
}

// The CUDA classifier on the same scene: the same class for every pixel, so
// the same accuracy.
TEST(GpuJasper, CudaSamEqualsCpuLabels) {
  CS_REQUIRE_GPU();
  JASPER_REQUIRE(j);
  const EnviReader cube(j.cube);
  const EnviHeader &h = cube.header();
  const SpectralClassifier classifier = make_classifier(j.means, h, Method::sam);
  const std::vector<uint8_t> expected = classify_cpu(classifier, cube);
  const std::vector<uint8_t> raw = cube.read_lines(0, h.lines);
  CudaSpectralClassifier gpu(classifier, 0);
  cs::Stream stream(0);
  void *data = cs::device_alloc(raw.size(), 0);
  void *map = cs::device_alloc(expected.size(), 0);
  std::vector<uint8_t> got(expected.size(), 0xEE);
  cs::copy_async(map, got.data(), got.size(), stream.get());
  cs::copy_async(data, raw.data(), raw.size(), stream.get());
  ClassificationOutput out;
  out.class_map = map;
  out.class_map_format = classifier.class_map_format();
  gpu.classify(make_cube_block(h, data, h.lines), out, stream.get());
  cs::copy_async(got.data(), map, got.size(), stream.get());
  stream.synchronize();
  cs::device_free(data, 0);
  cs::device_free(map, 0);
  EXPECT_EQ(got, expected);
  const Accuracy a = accuracy(got, read_labels(j.labels), 4);
  EXPECT_NEAR(a.overall, 93.90, 0.005);
}
