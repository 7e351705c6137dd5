// MATLAB v5 reading (on files made here, and the real Gotcha files) and the
// Gotcha -> CPHD conversion.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <sstream>

#include "sar/cphd.h"
#include "sar/gotcha.h"
#include "sar/matlab_v5.h"
#include "mat_v5_writer.h"
#include "sar_test_util.h"
#include "test_support.h"

using namespace cs::sar;
using sar_test::TempDir;

namespace {

struct SyntheticData {
  std::vector<float> fp_re, fp_im, freq;
  std::vector<double> x;
};

// A Gotcha-like struct `data` with fields fp (complex single K x P), freq, x.
std::string synthetic_mat(const SyntheticData &s, int32_t k, int32_t p, bool compress) {
  using namespace mat_test;
  const std::string fp = matrix("", 7, true, {k, p}, element(7, raw(s.fp_re)) + element(7, raw(s.fp_im)));
  const std::string freq = matrix("", 7, false, {k, 1}, element(7, raw(s.freq)));
  const std::string x = matrix("", 6, false, {1, p}, element(9, raw(s.x)));
  return mat_file(struct_matrix("data", {{"fp", fp}, {"freq", freq}, {"x", x}}), compress);
}

std::vector<std::string> gotcha_files() {
  const std::string dir = cs_test::shared_data_dir() + "/sar/gotcha";
  std::vector<std::string> files;
  for (int i = 1; i <= 4; ++i) {
    const std::string f = dir + "/data_3dsar_pass1_az00" + std::to_string(i) + "_HH.mat";
    if (std::FILE *fh = std::fopen(f.c_str(), "rb")) {
      std::fclose(fh);
      files.push_back(f);
    }
  }
  return files;
}

}  // namespace

TEST(MatV5, ReadsStructsOfNumericArraysCompressedOrNot) {
  std::mt19937_64 rng(cs_test::fresh_seed());
  std::normal_distribution<float> g(0.f, 1.f);
  const int32_t k = 5 + static_cast<int32_t>(rng() % 20), p = 3 + static_cast<int32_t>(rng() % 9);
  SyntheticData s;
  for (int i = 0; i < k * p; ++i) {
    s.fp_re.push_back(g(rng));
    s.fp_im.push_back(g(rng));
  }
  for (int i = 0; i < k; ++i) s.freq.push_back(9e9f + 1e6f * static_cast<float>(i));
  for (int i = 0; i < p; ++i) s.x.push_back(7000.0 + g(rng));
  TempDir tmp;
  for (bool compress : {false, true}) {
    const std::string path = tmp.file(compress ? "z.mat" : "u.mat");
    sar_test::write_file(path, synthetic_mat(s, k, p, compress));
    const MatArray data = read_mat_variable(path, "data");
    ASSERT_EQ(data.mat_class, MatClass::Struct);
    const MatArray &fp = data.field("fp");
    ASSERT_TRUE(fp.is_complex);
    ASSERT_EQ(fp.dims, (std::vector<int64_t>{k, p}));
    for (int i = 0; i < k * p; ++i) {
      ASSERT_EQ(static_cast<float>(fp.real[i]), s.fp_re[i]);
      ASSERT_EQ(static_cast<float>(fp.imag[i]), s.fp_im[i]);
    }
    EXPECT_EQ(data.field("x").real, s.x);
    EXPECT_EQ(static_cast<float>(data.field("freq").real[k - 1]), s.freq[k - 1]);
    EXPECT_THROW(data.field("nothing"), MatError);
    EXPECT_THROW(read_mat_variable(path, "other"), MatError);
  }
}

TEST(MatV5, MalformedFilesThrowAndNeverCrash) {
  std::mt19937_64 rng(cs_test::fresh_seed());
  SyntheticData s;
  const int32_t k = 16, p = 4;
  s.fp_re.assign(k * p, 1.5f);
  s.fp_im.assign(k * p, -0.5f);
  s.freq.assign(k, 1.f);
  s.x.assign(p, 2.0);
  TempDir tmp;
  const std::string bad = tmp.file("bad.mat");
  for (bool compress : {false, true}) {
    const std::string good = synthetic_mat(s, k, p, compress);
    for (size_t cut : {size_t{0}, size_t{100}, size_t{130}, good.size() / 2, good.size() - 1}) {
      sar_test::write_file(bad, good.substr(0, cut));
      EXPECT_THROW(read_mat_file(bad), MatError) << "cut at " << cut;
    }
    for (int i = 0; i < 200; ++i) {
      std::string bytes = good;
      for (int f = 0; f < 2; ++f) bytes[128 + rng() % (bytes.size() - 128)] = static_cast<char>(rng());
      sar_test::write_file(bad, bytes);
      try {
        read_mat_file(bad);
      } catch (const MatError &) {
      }
    }
  }
}

TEST(Gotcha, ConvertsTheRealDataToCphd) {
  const std::vector<std::string> files = gotcha_files();
  if (files.size() != 4) GTEST_SKIP() << "Gotcha data not found under CS_SHARED_DATA='" << cs_test::shared_data_dir() << "'";
  TempDir tmp;
  const std::string out = tmp.file("gotcha.cphd");
  GotchaOptions options;
  std::mt19937_64 rng(cs_test::fresh_seed());
  options.scene_origin = {std::uniform_real_distribution<double>(-60, 60)(rng),
                          std::uniform_real_distribution<double>(-180, 180)(rng), 200.0};
  const GotchaSummary summary = convert_gotcha_to_cphd(files, out, options);
  // 117 + 117 + 118 + 117: the shared data's README says 117 per file (468),
  // but az003 holds 118 pulses (scipy.io.loadmat agrees).
  EXPECT_EQ(summary.pulses, 469);
  EXPECT_EQ(summary.samples_per_pulse, 424);

  CphdReader reader(out);
  const CphdMetadata &m = reader.metadata();
  EXPECT_EQ(m.domain, Domain::FX);
  ASSERT_EQ(m.channels.size(), 1u);
  EXPECT_EQ(m.channels[0].identifier, "HH");
  EXPECT_EQ(m.channels[0].num_vectors, 469);
  EXPECT_EQ(m.channels[0].num_samples, 424);
  // The data set's band: 9.288 GHz to 9.910 GHz (frequencies stored in single precision).
  EXPECT_NEAR(m.fx_min, 9.28808e9 - 0.5 * summary.frequency_step_hz, 2e3);
  EXPECT_NEAR(m.fx_max, 9.910441e9 + 0.5 * summary.frequency_step_hz, 2e3);
  EXPECT_NEAR(summary.frequency_step_hz, (9.910441e9 - 9.28808e9) / 423, 5.0);

  const EnuFrame frame(options.scene_origin);
  int64_t first = 0;
  for (size_t f = 0; f < files.size(); ++f) {
    const MatArray data = read_mat_variable(files[f], "data");
    const MatArray &fp = data.field("fp");
    const int64_t pulses = fp.dims[1];
    const PulseBlock block = reader.read_block(0, first, pulses);
    ASSERT_EQ(static_cast<int64_t>(block.pvp.size()), pulses);
    for (int64_t p = 0; p < pulses; ++p) {
      const PulseParameters &v = block.pvp[static_cast<size_t>(p)];
      const Vec3 local = frame.to_enu(v.tx_pos);
      EXPECT_NEAR(local.x, data.field("x").real[p], 1e-6);
      EXPECT_NEAR(local.y, data.field("y").real[p], 1e-6);
      EXPECT_NEAR(local.z, data.field("z").real[p], 1e-6);
      // r0 is the range to the scene centre (the SRP), to single precision.
      EXPECT_NEAR(norm(v.tx_pos - v.srp_pos), data.field("r0").real[p], 5e-3);
      EXPECT_NEAR(v.sc0, data.field("freq").real[0], 1e-3);
    }
    for (size_t i = 0; i < fp.real.size(); ++i) {
      ASSERT_EQ(block.samples[i].real(), static_cast<float>(fp.real[i])) << files[f] << " sample " << i;
      ASSERT_EQ(block.samples[i].imag(), static_cast<float>(fp.imag[i])) << files[f] << " sample " << i;
    }
    first += pulses;
  }
  EXPECT_EQ(first, 469);
  // The first pulse of pass 1: about x 7089, y 0.5, z 7276 (the data's README).
  const Vec3 p0 = frame.to_enu(reader.read_pvp(0, 0, 1)[0].tx_pos);
  EXPECT_NEAR(p0.x, 7089.26, 0.05);
  EXPECT_NEAR(p0.z, 7275.67, 0.05);
}

// Our MAT reader against scipy.io.loadmat (when /usr/bin/python3 has scipy).
TEST(Gotcha, MatReaderAgreesWithScipy) {
  const std::vector<std::string> files = gotcha_files();
  if (files.empty()) GTEST_SKIP() << "Gotcha data not found under CS_SHARED_DATA";
  if (std::system("/usr/bin/python3 -c 'import scipy.io' >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "/usr/bin/python3 with scipy is not available";
  std::mt19937_64 rng(cs_test::fresh_seed());
  const std::string &file = files[rng() % files.size()];
  const int k = static_cast<int>(rng() % 424), p = static_cast<int>(rng() % 117);
  const std::string cmd = "/usr/bin/python3 -c \"import scipy.io as s; d = s.loadmat('" + file +
                          "', squeeze_me=True, struct_as_record=False)['data']; "
                          "print(repr(float(d.fp[" + std::to_string(k) + "," + std::to_string(p) + "].real)), "
                          "repr(float(d.fp[" + std::to_string(k) + "," + std::to_string(p) + "].imag)), "
                          "repr(float(d.freq[" + std::to_string(k) + "])), repr(float(d.x[" + std::to_string(p) +
                          "])), repr(float(d.af.r_correct[" + std::to_string(p) + "])))\"";
  std::FILE *pipe = popen(cmd.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  char line[512] = {};
  ASSERT_NE(std::fgets(line, sizeof line, pipe), nullptr);
  pclose(pipe);
  double re, im, freq, x, r_correct;
  ASSERT_EQ(std::sscanf(line, "%lf %lf %lf %lf %lf", &re, &im, &freq, &x, &r_correct), 5) << line;
  const MatArray data = read_mat_variable(file, "data");
  const size_t at = static_cast<size_t>(k + 424 * p);
  EXPECT_EQ(data.field("fp").real[at], re);
  EXPECT_EQ(data.field("fp").imag[at], im);
  EXPECT_EQ(data.field("freq").real[k], freq);
  EXPECT_EQ(data.field("x").real[p], x);
  EXPECT_EQ(data.field("af").field("r_correct").real[p], r_correct);
}
