// sarpulsecompress: simulated point targets land on their range bins, the
// properties reach the kernel, the pulse meta passes through, bad input is a
// clear error; on a GPU the CUDA path equals the CPU path.
#include <gst/check/gstharness.h>
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <cstring>
#include <fstream>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "source_allocation.h"
#include "sar/gotcha.h"
#include "sar/pulse_compressor.h"
#include "sar/simulator.h"
#include "test_sar_support.h"
#include "test_support.h"

using namespace sar_elements;
using cs::sar::Domain;

namespace {

using Profile = std::vector<std::complex<float>>;

struct Peak {
  double bin = 0;  // interpolated
  double pslr_db = 0;
};

// The strongest bin, refined by a parabola through the log magnitudes of
// its neighbours, and the largest sidelobe beyond the first nulls.
Peak find_peak(const std::complex<float> *p, int64_t m) {
  auto mag = [&](int64_t i) { return std::abs(p[((i % m) + m) % m]); };
  int64_t best = 0;
  for (int64_t i = 1; i < m; ++i)
    if (mag(i) > mag(best)) best = i;
  Peak r;
  const double a = std::log(mag(best - 1)), b = std::log(mag(best)), c = std::log(mag(best + 1));
  r.bin = double(best) + 0.5 * (a - c) / (a - 2 * b + c);
  int64_t right = best, left = best;
  while (mag(right + 1) < mag(right)) ++right;
  while (mag(left - 1) < mag(left)) --left;
  double sidelobe = 0;
  for (int64_t i = right; i <= left + m; ++i) sidelobe = std::max(sidelobe, double(mag(i)));
  r.pslr_db = 20 * std::log10(sidelobe / mag(best));
  return r;
}

const cs::sar::Vec3 kTarget{3.7, -25.6, 0.0};
const char *kTargetText = "3.7,-25.6,0,1";

cs::sar::SimulatorConfig sim_config(Domain domain, int64_t pulses) {
  cs::sar::SimulatorConfig c;
  c.domain = domain;
  c.num_pulses = pulses;
  c.targets.push_back({kTarget, {1, 0}});
  return c;
}

std::string sim_launch(Domain domain, int64_t pulses, int per_buffer) {
  return "sarsim num-pulses=" + std::to_string(pulses) + " pulses-per-buffer=" + std::to_string(per_buffer) +
         " domain=" + (domain == Domain::TOA ? "time" : "frequency") + " targets=\"" + kTargetText + "\"";
}

std::vector<std::complex<float>> profiles(const PipelineRun &run) {
  const auto bytes = all_bytes(run);
  std::vector<std::complex<float>> out(bytes.size() / 8);
  std::memcpy(out.data(), bytes.data(), out.size() * 8);
  return out;
}

double relative_rms(const std::vector<std::complex<float>> &got, const std::vector<std::complex<float>> &ref) {
  double err = 0, sum = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    err += std::norm(std::complex<double>(got[i]) - std::complex<double>(ref[i]));
    sum += std::norm(std::complex<double>(ref[i]));
  }
  return std::sqrt(err / sum);
}

}  // namespace

class SarPulseCompress : public ::testing::TestWithParam<Domain> {};

TEST_P(SarPulseCompress, PointTargetPeaksAtItsRangeBin) {
  const Domain domain = GetParam();
  const int upsample = 4, pulses = 6;
  PipelineRun run;
  run_pipeline(sim_launch(domain, pulses, 4) + " ! sarpulsecompress backend=cpu window=hamming upsample=" +
                   std::to_string(upsample) + " ! appsink name=out sync=false",
               &run);
  ASSERT_EQ(run.error, "");
  ASSERT_EQ(run.samples.size(), 2u);

  cs::sar::PhaseHistorySimulator sim(sim_config(domain, pulses));
  cs::sar::PulseCompressionConfig pc;
  pc.domain = domain;
  pc.samples_per_pulse = sim.samples_per_pulse();
  pc.upsample = upsample;
  pc.window.kind = cs::sar::WindowKind::Hamming;
  pc.sample_rate_hz = sim.config().sample_rate_hz;
  pc.chirp = sim.chirp();
  pc.frequency_step_hz = sim.scss();
  const cs::sar::RangeAxis axis = cs::sar::range_axis(pc, sim.sc0());

  GstCaps *caps = run.caps(0);
  EXPECT_TRUE(gst_structure_has_name(gst_caps_get_structure(caps, 0), GST_SAR_RANGE_PROFILES_MEDIA_TYPE));
  const int64_t m = caps_int(caps, "bins-per-pulse");
  EXPECT_EQ(m, sim.samples_per_pulse() * upsample);
  EXPECT_EQ(caps_int(caps, "upsample"), upsample);
  EXPECT_DOUBLE_EQ(caps_double(caps, "bin-spacing"), axis.bin_spacing_m);
  EXPECT_DOUBLE_EQ(caps_double(caps, "first-bin-range"), axis.first_bin_m);
  EXPECT_EQ(caps_double(caps, "center-frequency"), sim.config().center_frequency_hz);
  EXPECT_EQ(caps_double(caps, "bandwidth"), sim.config().bandwidth_hz);

  const auto out = profiles(run);
  ASSERT_EQ(out.size(), size_t(pulses * m));
  for (int k = 0; k < pulses; ++k) {
    const double range = 0.5 * cs::sar::kSpeedOfLight * sim.relative_delay(k, kTarget);
    const double expected_bin = (range - axis.first_bin_m) / axis.bin_spacing_m;
    const Peak peak = find_peak(out.data() + k * m, m);
    std::printf("[ measured ] %s pulse %d: peak at bin %.4f, expected %.4f\n", cs::sar::to_string(domain), k,
                peak.bin, expected_bin);
    EXPECT_NEAR(peak.bin, expected_bin, 0.05) << "pulse " << k << ": target at " << range << " m";
  }

  // The pulse meta and the timestamps pass through.
  bool consecutive = false;
  const auto metas = all_pulses(run, &consecutive);
  EXPECT_TRUE(consecutive);
  ASSERT_EQ(metas.size(), size_t(pulses));
  for (int k = 0; k < pulses; ++k) EXPECT_EQ(metas[k].tx_time, sim.pulse_parameters(k).tx_time);
  EXPECT_EQ(GST_BUFFER_PTS(run.buffer(1)), 4 * GST_SECOND / 1000);

  // The element adds nothing to the kernel: the same numbers as calling it directly.
  std::vector<cs::sar::PulseParameters> pvp(pulses);
  std::vector<std::complex<float>> in(size_t(pulses * sim.samples_per_pulse()));
  sim.generate(0, pulses, pvp.data(), in.data());
  cs::sar::CpuPulseCompressor direct(pc);
  std::vector<std::complex<float>> expected(out.size());
  direct.compress(in.data(), expected.data(), pulses);
  EXPECT_LT(relative_rms(out, expected), 1e-6) << "FFTW plans of other batch sizes may round differently";
}

TEST_P(SarPulseCompress, WindowPropertiesShapeTheResponse) {
  const Domain domain = GetParam();
  struct Case {
    const char *properties;
    double pslr_db;  // the figures (Hann: Harris 1978)
  };
  for (const Case &c : {Case{"window=none", -13.26}, Case{"window=hamming", -42.6}, Case{"window=hann", -31.47},
                        Case{"window=taylor taylor-nbar=4 taylor-sll=-35", -35.2}}) {
    SCOPED_TRACE(c.properties);
    PipelineRun run;
    run_pipeline(sim_launch(domain, 1, 1) + " ! sarpulsecompress backend=cpu upsample=16 " + c.properties +
                     " ! appsink name=out sync=false",
                 &run);
    ASSERT_EQ(run.error, "");
    const auto out = profiles(run);
    const Peak peak = find_peak(out.data(), int64_t(out.size()));
    std::printf("[ measured ] %s %s: PSLR %.2f dB (expected %.2f)\n", cs::sar::to_string(domain), c.properties,
                peak.pslr_db, c.pslr_db);
    EXPECT_NEAR(peak.pslr_db, c.pslr_db, 0.5);
  }
}

TEST(SarPulseCompressReference, WaveformFileReplacesTheChirp) {
  const Domain domain = Domain::TOA;  // a reference waveform applies to time-domain data only
  cs::sar::PhaseHistorySimulator sim(sim_config(domain, 1));
  // The ideal chirp, sampled at the stream's rate, its middle sample at the echo delay.
  const double fs = sim.config().sample_rate_hz, k = sim.chirp().rate_hz_per_s, t = sim.chirp().duration_s;
  const int64_t n = int64_t(std::ceil(t * fs)) + 1;
  std::vector<std::complex<float>> reference(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const double ti = double(i - n / 2) / fs;
    reference[size_t(i)] = std::abs(ti) <= 0.5 * t ? std::complex<float>(std::polar(1.0, M_PI * k * ti * ti))
                                                   : std::complex<float>(0, 0);
  }
  TempFile file("reference.cf32");
  {
    std::ofstream f(file.path(), std::ios::binary);
    f.write(reinterpret_cast<const char *>(reference.data()), std::streamsize(reference.size() * 8));
  }
  PipelineRun run;
  run_pipeline(sim_launch(domain, 1, 1) + " ! sarpulsecompress backend=cpu upsample=8 reference-location=" +
                   file.path() + " ! appsink name=out sync=false",
               &run);
  ASSERT_EQ(run.error, "");
  const auto out = profiles(run);
  const double spacing = caps_double(run.caps(0), "bin-spacing"), first = caps_double(run.caps(0), "first-bin-range");
  const double expected_bin = (0.5 * cs::sar::kSpeedOfLight * sim.relative_delay(0, kTarget) - first) / spacing;
  EXPECT_NEAR(find_peak(out.data(), int64_t(out.size())).bin, expected_bin, 0.05);

  PipelineRun missing;
  run_pipeline(sim_launch(domain, 1, 1) + " ! sarpulsecompress backend=cpu reference-location=/nonexistent.cf32 "
                                          "! fakesink",
               &missing);
  EXPECT_NE(missing.error.find("/nonexistent.cf32"), std::string::npos) << missing.error;
  {
    std::vector<std::complex<float>> broken = reference;
    broken[broken.size() / 2] = {std::numeric_limits<float>::quiet_NaN(), 0.0f};
    std::ofstream f(file.path(), std::ios::binary | std::ios::trunc);
    f.write(reinterpret_cast<const char *>(broken.data()), std::streamsize(broken.size() * 8));
  }
  PipelineRun nan;  // said to be what it is, not an empty waveform
  run_pipeline(sim_launch(domain, 1, 1) + " ! sarpulsecompress backend=cpu reference-location=" + file.path() +
                   " ! fakesink",
               &nan);
  EXPECT_NE(nan.error.find("not finite numbers"), std::string::npos) << nan.error;
  PipelineRun folder;  // a directory opens as a stream of 2^63 - 1 bytes: said to be a directory instead
  run_pipeline(sim_launch(domain, 1, 1) + " ! sarpulsecompress backend=cpu reference-location=/ ! fakesink", &folder);
  EXPECT_NE(folder.error.find("'/' is a directory"), std::string::npos) << folder.error;
}

INSTANTIATE_TEST_SUITE_P(Domains, SarPulseCompress, ::testing::Values(Domain::TOA, Domain::FX),
                         [](const auto &info) { return std::string(cs::sar::to_string(info.param)); });

// ---------------------------------------------------------------- bad input

namespace {
const char *kFxCaps = GST_SAR_PHASE_HISTORY_MEDIA_TYPE
    ", format=(string)CF32, samples-per-pulse=(int)64, domain=(string)frequency, center-frequency=(double)1e10, "
    "bandwidth=(double)1e8, frequency-step=(double)1.5625e6";

struct Harnessed {
  GstHarness *h;
  GstBus *bus;
  explicit Harnessed(const char *caps) {
    h = gst_harness_new_parse("sarpulsecompress backend=cpu window=taylor upsample=2");
    bus = gst_bus_new();
    gst_element_set_bus(h->element, bus);
    if (caps) gst_harness_set_src_caps_str(h, caps);
  }
  ~Harnessed() {
    gst_element_set_bus(h->element, nullptr);
    gst_object_unref(bus);
    gst_harness_teardown(h);
  }
  std::string error() {
    GstMessage *msg = gst_bus_pop_filtered(bus, GST_MESSAGE_ERROR);
    std::string text = msg ? error_text(msg) : "";
    if (msg) gst_message_unref(msg);
    return text;
  }
};

GstBuffer *pulses_buffer(const std::vector<std::complex<float>> &samples, int pulses, bool with_meta,
                         size_t extra_bytes = 0) {
  const size_t bytes = samples.size() * 8 + extra_bytes;
  GstBuffer *buf = gst_buffer_new_allocate(nullptr, bytes, nullptr);
  gst_buffer_memset(buf, 0, 0, bytes);
  gst_buffer_fill(buf, 0, samples.data(), samples.size() * 8);
  if (with_meta) gst_buffer_add_sar_pulse_meta(buf, 0, guint(pulses), nullptr);
  return buf;
}

std::vector<std::complex<float>> random_pulses(int pulses, uint32_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> g;
  std::vector<std::complex<float>> v(size_t(pulses) * 64);
  for (auto &x : v) x = {g(rng), g(rng)};
  return v;
}
}  // namespace

TEST(SarPulseCompressBadInput, BufferWithoutPulseMeta) {
  Harnessed t(kFxCaps);
  EXPECT_EQ(gst_harness_push(t.h, pulses_buffer(random_pulses(2, cs_test::fresh_seed()), 2, false)), GST_FLOW_ERROR);
  const std::string error = t.error();
  EXPECT_NE(error.find("no pulse meta"), std::string::npos) << error;
}

TEST(SarPulseCompressBadInput, MetaOfAnotherLength) {
  Harnessed t(kFxCaps);
  GstBuffer *buf = pulses_buffer(random_pulses(3, cs_test::fresh_seed()), 3, false);
  gst_buffer_add_sar_pulse_meta(buf, 0, 2, nullptr);
  EXPECT_EQ(gst_harness_push(t.h, buf), GST_FLOW_ERROR);
  const std::string error = t.error();
  EXPECT_NE(error.find("another length"), std::string::npos) << error;
}

TEST(SarPulseCompressBadInput, BufferNotAWholeNumberOfPulses) {
  Harnessed t(kFxCaps);
  EXPECT_EQ(gst_harness_push(t.h, pulses_buffer(random_pulses(2, cs_test::fresh_seed()), 2, true, 12)),
            GST_FLOW_ERROR);
  const std::string error = t.error();
  EXPECT_NE(error.find("not a whole number of pulses of 512 bytes"), std::string::npos) << error;
  Harnessed empty(kFxCaps);
  EXPECT_EQ(gst_harness_push(empty.h, gst_buffer_new()), GST_FLOW_ERROR);
}

TEST(SarPulseCompressBadInput, IncompleteCapsNameTheMissingField) {
  Harnessed t(GST_SAR_PHASE_HISTORY_MEDIA_TYPE
              ", format=(string)CF32, samples-per-pulse=(int)64, domain=(string)frequency, "
              "center-frequency=(double)1e10, bandwidth=(double)1e8");
  EXPECT_NE(gst_harness_push(t.h, pulses_buffer(random_pulses(1, 1), 1, true)), GST_FLOW_OK);
  const std::string error = t.error();
  EXPECT_NE(error.find("frequency-step"), std::string::npos) << error;
}

TEST(SarPulseCompressBadInput, TimeDomainWithoutAChirp) {
  Harnessed t(GST_SAR_PHASE_HISTORY_MEDIA_TYPE
              ", format=(string)CF32, samples-per-pulse=(int)64, domain=(string)time, center-frequency=(double)1e10, "
              "bandwidth=(double)1e8, sample-rate=(double)1.2e8, chirp-rate=(double)0, chirp-duration=(double)0, "
              "sample-start=(double)-2.6e-7");
  EXPECT_NE(gst_harness_push(t.h, pulses_buffer(random_pulses(1, 1), 1, true)), GST_FLOW_OK);
  const std::string error = t.error();
  EXPECT_NE(error.find("Pulse compression cannot be set up"), std::string::npos) << error;
}

TEST(SarPulseCompressBadInput, NonFiniteSamplesStayInTheirPulse) {
  // Documented treatment: a NaN or Inf sample makes its own pulse's profile
  // non-finite; the other pulses of the block are exactly as without it.
  const auto clean = random_pulses(3, cs_test::fresh_seed());
  auto dirty = clean;
  dirty[64 + 17] = {NAN, 0.0f};
  dirty[64 + 40] = {0.0f, INFINITY};
  Harnessed t(kFxCaps);
  ASSERT_EQ(gst_harness_push(t.h, pulses_buffer(clean, 3, true)), GST_FLOW_OK);
  ASSERT_EQ(gst_harness_push(t.h, pulses_buffer(dirty, 3, true)), GST_FLOW_OK);
  GstBuffer *a = gst_harness_pull(t.h), *b = gst_harness_pull(t.h);
  ASSERT_TRUE(a && b);
  GstMapInfo ma, mb;
  gst_buffer_map(a, &ma, GST_MAP_READ);
  gst_buffer_map(b, &mb, GST_MAP_READ);
  const size_t m = 128;  // 64 samples x 2
  ASSERT_EQ(mb.size, 3 * m * 8);
  const auto *pa = reinterpret_cast<const std::complex<float> *>(ma.data);
  const auto *pb = reinterpret_cast<const std::complex<float> *>(mb.data);
  EXPECT_EQ(std::memcmp(pa, pb, m * 8), 0) << "pulse 0 untouched";
  EXPECT_EQ(std::memcmp(pa + 2 * m, pb + 2 * m, m * 8), 0) << "pulse 2 untouched";
  bool any_non_finite = false;
  for (size_t i = m; i < 2 * m; ++i) any_non_finite |= !std::isfinite(pb[i].real()) || !std::isfinite(pb[i].imag());
  EXPECT_TRUE(any_non_finite) << "pulse 1 shows that its input was not finite";
  gst_buffer_unmap(a, &ma);
  gst_buffer_unmap(b, &mb);
  gst_buffer_unref(a);
  gst_buffer_unref(b);
  EXPECT_EQ(t.error(), "");
}

// ---------------------------------------------------------------- real data

TEST(SarPulseCompressRealData, GotchaThroughCphdsrc) {
  // The AFRL Gotcha pass 1 HH files, converted to CPHD by the kernels'
  // converter, streamed by cphdsrc and range-compressed.
  std::vector<std::string> files;
  for (int i = 1; i <= 4; ++i) {
    const std::string f = cs_test::shared_data_dir() + "/sar/gotcha/data_3dsar_pass1_az00" + std::to_string(i) +
                          "_HH.mat";
    if (g_file_test(f.c_str(), G_FILE_TEST_IS_REGULAR)) files.push_back(f);
  }
  if (files.size() != 4)
    GTEST_SKIP() << "Gotcha data not found under CS_SHARED_DATA='" << cs_test::shared_data_dir() << "'";
  TempFile cphd("gotcha.cphd");
  const cs::sar::GotchaSummary summary = cs::sar::convert_gotcha_to_cphd(files, cphd.path());
  PipelineRun run;
  run_pipeline("cphdsrc location=" + cphd.path() +
                   " pulses-per-buffer=100 ! sarpulsecompress backend=cpu window=taylor upsample=4 ! appsink "
                   "name=out sync=false",
               &run);
  ASSERT_EQ(run.error, "");
  ASSERT_EQ(run.samples.size(), 5u) << "469 pulses in blocks of 100";
  GstCaps *caps = run.caps(0);
  EXPECT_EQ(caps_string(caps, "domain"), "frequency");
  EXPECT_EQ(caps_int(caps, "bins-per-pulse"), summary.samples_per_pulse * 4);
  EXPECT_NEAR(caps_double(caps, "center-frequency"), 9.6e9, 0.01e9);
  // Unambiguous range extent c / (2 SCSS), spread over the upsampled bins.
  EXPECT_NEAR(caps_double(caps, "bin-spacing") * caps_int(caps, "bins-per-pulse"),
              cs::sar::kSpeedOfLight / (2 * summary.frequency_step_hz), 1e-6);
  bool consecutive = false;
  EXPECT_EQ(all_pulses(run, &consecutive).size(), size_t(summary.pulses));
  EXPECT_TRUE(consecutive);
  const auto out = profiles(run);
  ASSERT_EQ(out.size(), size_t(summary.pulses * summary.samples_per_pulse * 4));
  double energy = 0;
  for (const auto &v : out) {
    ASSERT_TRUE(std::isfinite(v.real()) && std::isfinite(v.imag()));
    energy += std::norm(v);
  }
  EXPECT_GT(energy, 0.0);
}

// ---------------------------------------------------------------- CUDA

TEST(GpuSarPulseCompress, CudaMatchesCpu) {
  CS_REQUIRE_GPU();
  for (Domain domain : {Domain::TOA, Domain::FX}) {
    SCOPED_TRACE(cs::sar::to_string(domain));
    const std::string source = sim_launch(domain, 40, 16) + " snr=10";
    const std::string compress = " sarpulsecompress window=taylor upsample=2 backend=";
    PipelineRun cpu, cuda, uploaded;
    run_pipeline(source + " !" + compress + "cpu ! appsink name=out sync=false", &cpu);
    run_pipeline(source + " !" + compress + "cuda ! appsink name=out sync=false", &cuda);
    run_pipeline(source + " ! gpuupload !" + compress + "cuda ! gpudownload ! appsink name=out sync=false",
                 &uploaded);
    ASSERT_EQ(cpu.error, "");
    ASSERT_EQ(cuda.error, "");
    ASSERT_EQ(uploaded.error, "");
    const auto ref = profiles(cpu), got = profiles(cuda), got_uploaded = profiles(uploaded);
    ASSERT_EQ(got.size(), ref.size());
    ASSERT_EQ(got_uploaded.size(), ref.size());
    // Both are single-precision FFTs of the same data (FFTW and cuFFT round
    // differently by a few ulps per butterfly stage): 1e-5 relative RMS.
    EXPECT_LT(relative_rms(got, ref), 1e-5);
    EXPECT_LT(relative_rms(got_uploaded, ref), 1e-5);
    bool c1 = false, c2 = false;
    EXPECT_EQ(all_pulses(cuda, &c1).size(), 40u);
    EXPECT_EQ(all_pulses(uploaded, &c2).size(), 40u);
    EXPECT_TRUE(c1 && c2) << "the pulse meta survives device memory";
  }
}

// On the CPU backend the range profiles are written into recycled blocks
// from the allocator proposed downstream (a fresh block per buffer is mapped
// and zeroed by the kernel page by page), and are the same bytes either way.
TEST(SarPulseCompress, CpuOutputsComeFromAPoolOfTheProposedAllocator) {
  const std::string launch = sim_launch(Domain::TOA, 10, 4) + " ! sarpulsecompress backend=cpu ! fakesink name=probed";
  const auto proposed = source_allocation_test::count_allocations(launch, true);
  const auto plain = source_allocation_test::count_allocations(launch, false);
  ASSERT_TRUE(proposed.eos) << proposed.error;
  ASSERT_TRUE(plain.eos) << plain.error;
  EXPECT_EQ(proposed.buffers, 3) << "10 pulses in blocks of 4";
  EXPECT_EQ(proposed.from_proposed, 3);
  EXPECT_EQ(plain.from_proposed, 0);
  EXPECT_EQ(proposed.pooled, 3);
  EXPECT_EQ(plain.pooled, 3);
  EXPECT_FALSE(plain.bytes.empty());
  EXPECT_TRUE(proposed.bytes == plain.bytes);
}

// CI16 (sarsim quantises at a stream-wide AmpSF) compresses like the CF32
// stream of the same simulation, up to the int16 quantisation (measured
// about 1e-5 relative RMS; the bound is 1e-3).
TEST(SarPulseCompressCi16, MatchesTheFloatStreamUpToQuantisation) {
  for (Domain domain : {Domain::TOA, Domain::FX}) {
    SCOPED_TRACE(cs::sar::to_string(domain));
    const std::string compress = " ! sarpulsecompress window=hamming backend=cpu ! appsink name=out sync=false";
    PipelineRun from_float, from_ci16;
    run_pipeline(sim_launch(domain, 24, 8) + " format=cf32" + compress, &from_float);
    run_pipeline(sim_launch(domain, 24, 8) + " format=ci16" + compress, &from_ci16);
    ASSERT_EQ(from_float.error, "");
    ASSERT_EQ(from_ci16.error, "");
    const auto ref = profiles(from_float), got = profiles(from_ci16);
    ASSERT_EQ(got.size(), ref.size());
    const double rms = relative_rms(got, ref);
    std::printf("[ measured ] %s CI16 vs CF32 profiles: %.2e relative RMS\n", cs::sar::to_string(domain), rms);
    EXPECT_LT(rms, 1e-3);
    EXPECT_GT(rms, 0.0) << "the CI16 stream should differ by its quantisation";
  }
}

TEST(GpuSarPulseCompress, Ci16CudaMatchesCpu) {
  CS_REQUIRE_GPU();
  for (Domain domain : {Domain::TOA, Domain::FX}) {
    SCOPED_TRACE(cs::sar::to_string(domain));
    const std::string source = sim_launch(domain, 40, 16) + " format=ci16";
    const std::string compress = " sarpulsecompress window=taylor upsample=2 backend=";
    PipelineRun cpu, uploaded;
    run_pipeline(source + " !" + compress + "cpu ! appsink name=out sync=false", &cpu);
    run_pipeline(source + " ! gpuupload !" + compress + "cuda ! gpudownload ! appsink name=out sync=false",
                 &uploaded);
    ASSERT_EQ(cpu.error, "");
    ASSERT_EQ(uploaded.error, "");
    const auto ref = profiles(cpu), got = profiles(uploaded);
    ASSERT_EQ(got.size(), ref.size());
    EXPECT_LT(relative_rms(got, ref), 1e-5);
  }
}
