// Brute-force matching of byte descriptors (kernels/sift/sift_match.h)
// against features_cpu's match_descriptors (cv::BFMatcher, NORM_L2): the
// host loops on the CPU (CI), the CUDA matcher in Gpu* suites (skipped
// without a device). Equality is exact: same pairs, same float distances,
// because both rank by the float square root of an exact integer sum.
#include <gtest/gtest.h>

#include <opencv2/features2d.hpp>
#include <opencv2/imgproc.hpp>

#include <map>
#include <random>

#include "sift/features_cpu.h"
#include "sift/sift_match.h"
#include "sift_test_util.h"
#include "test_support.h"

namespace {

using cs::sift::DescriptorMatch;
using cs::sift::NearestTwo;
using cs::sift::kMatchDescriptorBytes;

constexpr int kDevice = 0;

struct MatchCase {
  std::string name;
  cv::Mat query, train;  // CV_8U, 128 columns
};

cv::Mat descriptors_of(const cv::Mat &gray) {
  std::vector<cv::KeyPoint> keypoints;
  cv::Mat descriptors;
  cv::SIFT::create(0, 3, 0.04, 10, 1.6, CV_8U)->detectAndCompute(gray, cv::noArray(), keypoints, descriptors);
  return descriptors;
}

// Real features: a picture against its rotated, scaled copy (many true
// matches) and against another picture (few).
std::vector<MatchCase> real_cases() {
  std::vector<MatchCase> cases;
  const cv::Mat astronaut = sift_test::load_skimage("astronaut"), camera = sift_test::load_skimage("camera");
  if (astronaut.empty() || camera.empty()) return cases;
  cv::Mat warped;
  const cv::Mat a = cv::getRotationMatrix2D(cv::Point2f(astronaut.cols / 2.f, astronaut.rows / 2.f), 17.0, 0.85);
  cv::warpAffine(astronaut, warped, a, astronaut.size(), cv::INTER_LINEAR, cv::BORDER_REFLECT);
  cases.push_back({"astronaut vs rotated astronaut", descriptors_of(warped), descriptors_of(astronaut)});
  cases.push_back({"camera vs astronaut", descriptors_of(camera), descriptors_of(astronaut)});
  return cases;
}

// Random rows with exact ties and near ties: train rows repeated, and rows
// one byte step apart (squared distances differing by a little, whose
// square roots can round to the same float).
MatchCase tied_case(int query_rows, int train_rows, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> byte(0, 255), pick(0, std::max(0, train_rows - 1));
  MatchCase c{"random rows with ties, " + std::to_string(query_rows) + " x " + std::to_string(train_rows),
              cv::Mat(query_rows, kMatchDescriptorBytes, CV_8U), cv::Mat(train_rows, kMatchDescriptorBytes, CV_8U)};
  for (int r = 0; r < train_rows; ++r) {
    if (r > 1 && r % 5 == 0) {
      c.train.row(pick(rng) % r).copyTo(c.train.row(r));  // an exact duplicate
    } else if (r > 1 && r % 7 == 0) {
      c.train.row(pick(rng) % r).copyTo(c.train.row(r));
      uint8_t &b = c.train.at<uint8_t>(r, byte(rng) % kMatchDescriptorBytes);
      b = uint8_t(b == 255 ? 254 : b + 1);  // one step away
    } else {
      for (int k = 0; k < kMatchDescriptorBytes; ++k) c.train.at<uint8_t>(r, k) = uint8_t(byte(rng));
    }
  }
  for (int r = 0; r < query_rows; ++r) {
    if (train_rows > 0 && r % 2 == 0) {
      // Near a train row: a few bytes nudged, so the ratio test keeps some.
      c.train.row(pick(rng)).copyTo(c.query.row(r));
      for (int k = 0; k < 6; ++k) {
        uint8_t &b = c.query.at<uint8_t>(r, byte(rng) % kMatchDescriptorBytes);
        b = uint8_t(std::clamp(int(b) + byte(rng) % 21 - 10, 0, 255));
      }
    } else {
      for (int k = 0; k < kMatchDescriptorBytes; ++k) c.query.at<uint8_t>(r, k) = uint8_t(byte(rng));
    }
  }
  return c;
}

void expect_same_matches(const std::vector<DescriptorMatch> &got, const std::vector<sift_cpu::Match> &want,
                         const std::string &what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_EQ(got[i].query, want[i].query) << what << ", match " << i;
    ASSERT_EQ(got[i].train, want[i].train) << what << ", match " << i << " (query " << got[i].query << ")";
    ASSERT_EQ(got[i].distance, want[i].distance) << what << ", match " << i;
  }
}

// Float rows as siftmatch gets them: OpenCV's float descriptors, or
// RootSIFT's (L1-normalised, square-rooted), of the same pictures.
std::vector<MatchCase> real_float_cases(bool root) {
  std::vector<MatchCase> cases = real_cases();
  for (MatchCase &c : cases)
    for (cv::Mat *m : {&c.query, &c.train}) {
      cv::Mat f;
      m->convertTo(f, CV_32F);
      if (root)
        for (int r = 0; r < f.rows; ++r) {
          cv::Mat row = f.row(r);
          row /= std::max(cv::norm(row, cv::NORM_L1), 1e-12);
          cv::sqrt(row, row);
        }
      *m = f;
    }
  return cases;
}

// Random float rows with exact duplicates and rows a little apart, every
// row normalised as RootSIFT's are.
MatchCase float_case(int query_rows, int train_rows, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> value(0.0f, 1.0f), nudge(-0.02f, 0.02f);
  std::uniform_int_distribution<int> pick(0, std::max(0, train_rows - 1));
  MatchCase c{"random float rows, " + std::to_string(query_rows) + " x " + std::to_string(train_rows),
              cv::Mat(query_rows, cs::sift::kMatchDescriptorFloats, CV_32F),
              cv::Mat(train_rows, cs::sift::kMatchDescriptorFloats, CV_32F)};
  auto fill = [&](cv::Mat row) {
    for (int k = 0; k < row.cols; ++k) row.at<float>(0, k) = value(rng);
  };
  for (int r = 0; r < train_rows; ++r) {
    if (r > 1 && r % 5 == 0)
      c.train.row(pick(rng) % r).copyTo(c.train.row(r));  // an exact duplicate
    else
      fill(c.train.row(r));
  }
  for (int r = 0; r < query_rows; ++r) {
    if (train_rows > 0 && r % 2 == 0) {
      c.train.row(pick(rng)).copyTo(c.query.row(r));
      for (int k = 0; k < c.query.cols; ++k) c.query.at<float>(r, k) += nudge(rng);
    } else {
      fill(c.query.row(r));
    }
  }
  for (cv::Mat *m : {&c.query, &c.train})
    for (int r = 0; r < m->rows; ++r) cv::normalize(m->row(r), m->row(r));
  return c;
}

// Float matches against OpenCV's: the same but where a ratio lies within
// float rounding of the threshold (OpenCV sums in another order).
void expect_close_matches(const std::vector<DescriptorMatch> &got, const std::vector<sift_cpu::Match> &want,
                          const std::string &what) {
  std::map<int, DescriptorMatch> by_query;
  for (const DescriptorMatch &m : got) by_query[m.query] = m;
  size_t differing = 0;
  for (const sift_cpu::Match &m : want) {
    const auto other = by_query.find(m.query);
    if (other == by_query.end() || other->second.train != m.train) {
      ++differing;
      continue;
    }
    EXPECT_NEAR(other->second.distance, m.distance, 1e-5 * m.distance) << what << ", query " << m.query;
    by_query.erase(other);
  }
  differing += by_query.size();
  EXPECT_LE(differing, 2u + want.size() / 100) << what << ": " << got.size() << " against " << want.size();
}

std::vector<DescriptorMatch> host_matches(const MatchCase &c, double ratio, bool mutual) {
  if (c.query.type() == CV_32F)
    return cs::sift::match_host(c.query.ptr<float>(), c.query.rows, c.train.ptr<float>(), c.train.rows, ratio,
                                mutual);
  return cs::sift::match_host(c.query.ptr<uint8_t>(), c.query.rows, c.train.ptr<uint8_t>(), c.train.rows, ratio,
                              mutual);
}

// ------------------------------------------------------------------ CPU

TEST(SiftMatchMath, SquaredDistanceIsExact) {
  uint32_t zeros[cs::sift::kMatchDescriptorWords] = {}, full[cs::sift::kMatchDescriptorWords];
  std::fill(std::begin(full), std::end(full), 0xffffffffu);
  EXPECT_EQ(cs::sift::descriptor_distance_squared(zeros, full), 128u * 255u * 255u);
  uint32_t a[cs::sift::kMatchDescriptorWords] = {}, b[cs::sift::kMatchDescriptorWords] = {};
  a[3] = 0x00ff0a01u;  // bytes 1, 10, 255, 0
  b[3] = 0x10000305u;  // bytes 5, 3, 0, 16
  EXPECT_EQ(cs::sift::descriptor_distance_squared(a, b), 16u + 49u + 65025u + 256u);
  EXPECT_EQ(cs::sift::match_distance(2u), std::sqrt(2.0f));
}

TEST(SiftMatchSelect, RatioTestAndMutualCheck) {
  std::vector<NearestTwo> nearest(4);
  nearest[0] = {2, 1, 10.0f, 20.0f};  // 10 < 0.8 * 20: kept
  nearest[1] = {1, 0, 16.0f, 20.0f};  // 16 == 0.8 * 20: not below, rejected
  nearest[2] = {0, -1, 50.0f, 0.0f};  // one train row: no second neighbour, not kept
  nearest[3] = {};                    // no train rows
  std::vector<DescriptorMatch> m = cs::sift::select_matches(nearest, 0.8, {});
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].query, 0);
  EXPECT_EQ(m[0].train, 2);
  EXPECT_EQ(m[0].distance, 10.0f);
  EXPECT_TRUE(cs::sift::select_matches(nearest, 1.0, {}).size() == 2u);  // 16 < 20 passes at 1.0; query 2 never
  // Mutual: train 2's nearest query is 1, not 0.
  m = cs::sift::select_matches(nearest, 0.8, {2, 0, 1});
  EXPECT_TRUE(m.empty());
  m = cs::sift::select_matches(nearest, 0.8, {1, 0, 0});  // train 2's nearest query is 0
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].query, 0);
}

TEST(SiftMatchSelect, NeighboursRankByFloatDistanceThenIndex) {
  NearestTwo n;
  cs::sift::offer_neighbour(n, 5.0f, 7);
  cs::sift::offer_neighbour(n, 5.0f, 3);  // equal distance, lower index: first
  cs::sift::offer_neighbour(n, 5.0f, 9);  // equal, higher index: not among the two
  EXPECT_EQ(n.best, 3);
  EXPECT_EQ(n.second, 7);
  cs::sift::offer_neighbour(n, 4.0f, 11);
  EXPECT_EQ(n.best, 11);
  EXPECT_EQ(n.second, 3);
}

TEST(SiftMatchHost, EqualsOpenCVsMatcherOnRealFeatures) {
  const std::vector<MatchCase> cases = real_cases();
  if (cases.empty()) GTEST_SKIP() << "scikit-image's pictures are absent (python3-skimage; or set CS_SKIMAGE_DATA)";
  for (const MatchCase &c : cases)
    for (bool mutual : {false, true}) {
      const std::string what = c.name + (mutual ? ", mutual" : "");
      const auto want = sift_cpu::match_descriptors(c.query, c.train, 0.8, mutual);
      std::printf("%s: %d x %d descriptors, %zu matches\n", what.c_str(), c.query.rows, c.train.rows, want.size());
      expect_same_matches(host_matches(c, 0.8, mutual), want, what);
    }
}

TEST(SiftMatchHost, TiesAndRoundingFollowOpenCV) {
  for (auto [q, t] : {std::pair{300, 400}, std::pair{7, 1}, std::pair{1, 2}})
    for (bool mutual : {false, true}) {
      const MatchCase c = tied_case(q, t, cs_test::fresh_seed());
      const std::string what = c.name + (mutual ? ", mutual" : "");
      for (double ratio : {0.8, 1.0})
        expect_same_matches(host_matches(c, ratio, mutual),
                            sift_cpu::match_descriptors(c.query, c.train, ratio, mutual),
                            what + ", ratio " + std::to_string(ratio));
    }
}

TEST(SiftMatchHost, FloatRowsAgreeWithOpenCVsMatcher) {
  const std::vector<MatchCase> cases = real_float_cases(false);
  if (cases.empty()) GTEST_SKIP() << "scikit-image's pictures are absent (python3-skimage; or set CS_SKIMAGE_DATA)";
  for (bool root : {false, true})
    for (const MatchCase &c : real_float_cases(root))
      for (bool mutual : {false, true}) {
        const std::string what = c.name + (root ? ", RootSIFT" : ", float") + (mutual ? ", mutual" : "");
        const auto want = sift_cpu::match_descriptors(c.query, c.train, 0.8, mutual);
        std::printf("%s: %d x %d descriptors, %zu matches\n", what.c_str(), c.query.rows, c.train.rows, want.size());
        EXPECT_GT(want.size(), 0u);
        expect_close_matches(host_matches(c, 0.8, mutual), want, what);
      }
}

TEST(SiftMatchHost, FloatDistanceIsTheL2Norm) {
  const MatchCase c = float_case(20, 30, cs_test::fresh_seed());
  const std::vector<NearestTwo> n = cs::sift::nearest_two_host(c.query.ptr<float>(), 20, c.train.ptr<float>(), 30);
  for (int i = 0; i < 20; ++i) {
    double best = INFINITY;
    int best_row = -1;
    for (int j = 0; j < 30; ++j) {
      const double d = cv::norm(c.query.row(i), c.train.row(j), cv::NORM_L2);
      if (d < best) best = d, best_row = j;
    }
    EXPECT_NEAR(n[size_t(i)].best_distance, best, 1e-6) << "query " << i;
    EXPECT_EQ(n[size_t(i)].best, best_row) << "query " << i;
  }
}

TEST(SiftMatchHost, EmptySetsGiveNoMatches) {
  const MatchCase c = tied_case(5, 5, 1);
  EXPECT_TRUE(cs::sift::match_host(c.query.ptr<uint8_t>(), 5, nullptr, 0, 0.8, true).empty());
  EXPECT_TRUE(cs::sift::match_host(nullptr, 0, c.train.ptr<uint8_t>(), 5, 0.8, true).empty());
}

TEST(SiftMatchCuda, WithoutADeviceTheMatcherRefusesClearly) {
  if (cs::device_count() > 0) GTEST_SKIP() << "a CUDA device is present: the GpuSiftMatch suite runs the matcher";
  EXPECT_THROW(cs::sift::CudaMatcher matcher(kDevice), cs::CudaError);
}

// ------------------------------------------------------------------ GPU

TEST(GpuSiftMatch, EqualsOpenCVsMatcherOnRealFeatures) {
  CS_REQUIRE_GPU();
  const std::vector<MatchCase> cases = real_cases();
  if (cases.empty()) GTEST_SKIP() << "scikit-image's pictures are absent (python3-skimage; or set CS_SKIMAGE_DATA)";
  cs::Stream stream(kDevice);
  cs::sift::CudaMatcher matcher(kDevice);
  for (const MatchCase &c : cases) {
    matcher.set_train(c.train.ptr<uint8_t>(), c.train.rows, stream.get());
    for (bool mutual : {false, true}) {
      const std::string what = c.name + (mutual ? ", mutual" : "");
      const auto want = sift_cpu::match_descriptors(c.query, c.train, 0.8, mutual);
      std::printf("%s: %d x %d descriptors, %zu matches\n", what.c_str(), c.query.rows, c.train.rows, want.size());
      expect_same_matches(matcher.match(c.query.ptr<uint8_t>(), c.query.rows, 0.8, mutual, stream.get()), want, what);
    }
  }
}

// Query x train sizes around the kernel's tile (64 rows) and block (64
// queries) edges, one row, and large sets split in chunks.
constexpr std::pair<int, int> kMatcherSizes[] = {{1, 1},   {1, 2},   {63, 65},    {64, 64},
                                                  {65, 129}, {1000, 3001}, {5000, 200}};

void expect_same_nearest_two(const std::vector<NearestTwo> &got, const std::vector<NearestTwo> &want,
                             const std::string &what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_EQ(got[i].best, want[i].best) << what << ", query " << i;
    ASSERT_EQ(got[i].second, want[i].second) << what << ", query " << i;
    ASSERT_EQ(got[i].best_distance, want[i].best_distance) << what << ", query " << i;
    if (want[i].second >= 0) {
      ASSERT_EQ(got[i].second_distance, want[i].second_distance) << what << ", query " << i;
    }
  }
}

TEST(GpuSiftMatch, NearestTwoEqualTheHostLoopsAtEverySize) {
  CS_REQUIRE_GPU();
  cs::Stream stream(kDevice);
  cs::sift::CudaMatcher matcher(kDevice);
  for (auto [q, t] : kMatcherSizes) {
    const MatchCase c = tied_case(q, t, cs_test::fresh_seed());
    matcher.set_train(c.train.ptr<uint8_t>(), c.train.rows, stream.get());
    const std::vector<NearestTwo> got = matcher.nearest_two(c.query.ptr<uint8_t>(), q, stream.get());
    const std::vector<NearestTwo> want =
        cs::sift::nearest_two_host(c.query.ptr<uint8_t>(), q, c.train.ptr<uint8_t>(), t);
    expect_same_nearest_two(got, want, c.name);
    for (bool mutual : {false, true})
      expect_same_matches(matcher.match(c.query.ptr<uint8_t>(), q, 0.8, mutual, stream.get()),
                          sift_cpu::match_descriptors(c.query, c.train, 0.8, mutual),
                          c.name + (mutual ? ", mutual" : ""));
  }
}

// Float rows: the kernel and the host loops sum in the same order, so the
// nearest two and their distances are the same floats.
TEST(GpuSiftMatch, FloatRowsEqualTheHostLoopsAtEverySize) {
  CS_REQUIRE_GPU();
  cs::Stream stream(kDevice);
  cs::sift::CudaMatcher matcher(kDevice);
  for (auto [q, t] : kMatcherSizes) {
    const MatchCase c = float_case(q, t, cs_test::fresh_seed());
    matcher.set_train(c.train.ptr<float>(), c.train.rows, stream.get());
    const std::vector<NearestTwo> got = matcher.nearest_two(c.query.ptr<float>(), q, stream.get());
    const std::vector<NearestTwo> want = cs::sift::nearest_two_host(c.query.ptr<float>(), q, c.train.ptr<float>(), t);
    expect_same_nearest_two(got, want, c.name);
    for (bool mutual : {false, true}) {
      const std::vector<DescriptorMatch> on_device = matcher.match(c.query.ptr<float>(), q, 0.8, mutual, stream.get());
      const std::vector<DescriptorMatch> on_host = host_matches(c, 0.8, mutual);
      ASSERT_EQ(on_device.size(), on_host.size()) << c.name;
      for (size_t i = 0; i < on_host.size(); ++i) {
        ASSERT_EQ(on_device[i].query, on_host[i].query) << c.name;
        ASSERT_EQ(on_device[i].train, on_host[i].train) << c.name;
        ASSERT_EQ(on_device[i].distance, on_host[i].distance) << c.name;
      }
    }
  }
}

TEST(GpuSiftMatch, FloatRowsAgreeWithOpenCVsMatcherOnRealFeatures) {
  CS_REQUIRE_GPU();
  if (real_cases().empty()) GTEST_SKIP() << "scikit-image's pictures are absent";
  cs::Stream stream(kDevice);
  cs::sift::CudaMatcher matcher(kDevice);
  for (bool root : {false, true})
    for (const MatchCase &c : real_float_cases(root)) {
      matcher.set_train(c.train.ptr<float>(), c.train.rows, stream.get());
      for (bool mutual : {false, true})
        expect_close_matches(matcher.match(c.query.ptr<float>(), c.query.rows, 0.8, mutual, stream.get()),
                             sift_cpu::match_descriptors(c.query, c.train, 0.8, mutual),
                             c.name + (root ? ", RootSIFT" : ", float") + (mutual ? ", mutual" : ""));
    }
}

TEST(GpuSiftMatch, RowsOfAnotherKindThanTheTrainSetAreRefused) {
  CS_REQUIRE_GPU();
  cs::Stream stream(kDevice);
  cs::sift::CudaMatcher matcher(kDevice);
  const MatchCase bytes = tied_case(5, 5, 1);
  const MatchCase floats = float_case(5, 5, 1);
  matcher.set_train(bytes.train.ptr<uint8_t>(), 5, stream.get());
  EXPECT_THROW(matcher.match(floats.query.ptr<float>(), 5, 0.8, false, stream.get()), std::invalid_argument);
  matcher.set_train(floats.train.ptr<float>(), 5, stream.get());
  EXPECT_THROW(matcher.match(bytes.query.ptr<uint8_t>(), 5, 0.8, false, stream.get()), std::invalid_argument);
  EXPECT_NO_THROW(matcher.match(floats.query.ptr<float>(), 5, 0.8, false, stream.get()));
}

// Matching each frame against the one before: the last query's rows, kept
// on the device as the train rows, give the matches against those rows.
TEST(GpuSiftMatch, LastQueryKeptAsTrainGivesTheMatchesAgainstIt) {
  CS_REQUIRE_GPU();
  cs::Stream stream(kDevice);
  cs::sift::CudaMatcher matcher(kDevice);
  EXPECT_THROW(matcher.train_on_last_query(), std::logic_error) << "no query yet";
  // Byte rows: the case's train rows go first as a query (against other rows), then its query rows.
  const MatchCase bytes = tied_case(250, 300, cs_test::fresh_seed());
  matcher.set_train(bytes.query.ptr<uint8_t>(), 100, stream.get());
  matcher.match(bytes.train.ptr<uint8_t>(), bytes.train.rows, 0.8, false, stream.get());
  matcher.train_on_last_query();
  EXPECT_EQ(matcher.train_count(), bytes.train.rows);
  EXPECT_THROW(matcher.train_on_last_query(), std::logic_error) << "that query is the train set now";
  for (bool mutual : {false, true})
    expect_same_matches(matcher.match(bytes.query.ptr<uint8_t>(), bytes.query.rows, 0.8, mutual, stream.get()),
                        sift_cpu::match_descriptors(bytes.query, bytes.train, 0.8, mutual),
                        bytes.name + (mutual ? ", mutual" : ""));
  // Float rows, the first of them matched against no train rows at all.
  const MatchCase floats = float_case(180, 200, cs_test::fresh_seed());
  matcher.set_train(static_cast<const float *>(nullptr), 0, stream.get());
  EXPECT_TRUE(matcher.match(floats.train.ptr<float>(), floats.train.rows, 0.8, false, stream.get()).empty());
  matcher.train_on_last_query();
  const std::vector<DescriptorMatch> got =
      matcher.match(floats.query.ptr<float>(), floats.query.rows, 0.8, true, stream.get());
  const std::vector<DescriptorMatch> want = host_matches(floats, 0.8, true);
  ASSERT_EQ(got.size(), want.size()) << floats.name;
  EXPECT_GT(got.size(), 0u) << floats.name;
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].query, want[i].query) << floats.name;
    EXPECT_EQ(got[i].train, want[i].train) << floats.name;
    EXPECT_EQ(got[i].distance, want[i].distance) << floats.name;
  }
}

TEST(GpuSiftMatch, EmptySetsGiveNoMatches) {
  CS_REQUIRE_GPU();
  cs::Stream stream(kDevice);
  cs::sift::CudaMatcher matcher(kDevice);
  const MatchCase c = tied_case(5, 5, 1);
  EXPECT_TRUE(matcher.match(c.query.ptr<uint8_t>(), 5, 0.8, true, stream.get()).empty());  // no train set yet
  matcher.set_train(c.train.ptr<uint8_t>(), 5, stream.get());
  EXPECT_TRUE(matcher.match(static_cast<const uint8_t *>(nullptr), 0, 0.8, true, stream.get()).empty());
  matcher.set_train(static_cast<const uint8_t *>(nullptr), 0, stream.get());
  EXPECT_TRUE(matcher.match(c.query.ptr<uint8_t>(), 5, 0.8, false, stream.get()).empty());
}

}  // namespace
