// SAR streams in: the pulse meta, sarsim, cphdsrc and cphdsink.
#include <glib/gstdio.h>
#include <gst/check/gstharness.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cmath>
#include <complex>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "sar/cphd.h"
#include "sar/simulator.h"
#include "source_allocation.h"
#include "test_sar_support.h"
#include "test_support.h"

using namespace sar_elements;
using cs::sar::Domain;

namespace {

const char *kTargets = "12.5,-20,0,1;-30,40,2,0.5@45";

cs::sar::SimulatorConfig config_for(Domain domain, int64_t pulses) {
  cs::sar::SimulatorConfig c;
  c.domain = domain;
  c.num_pulses = pulses;
  c.targets.push_back({{12.5, -20, 0}, {1, 0}});
  c.targets.push_back({{-30, 40, 2}, std::polar(0.5, 45 * M_PI / 180)});
  return c;
}

std::string sarsim(Domain domain, int64_t pulses, int per_buffer, const char *extra = "") {
  return std::string("sarsim num-pulses=") + std::to_string(pulses) + " pulses-per-buffer=" +
         std::to_string(per_buffer) + " domain=" + (domain == Domain::TOA ? "time" : "frequency") + " targets=\"" +
         kTargets + "\" " + extra;
}

GstSarPulseParameters random_pulse(std::mt19937_64 &rng) {
  std::uniform_real_distribution<double> u(-1e6, 1e6);
  GstSarPulseParameters p;
  auto *d = reinterpret_cast<double *>(&p);
  for (size_t i = 0; i < sizeof(p) / sizeof(double); ++i) d[i] = u(rng);
  p.signal = int64_t(rng() % 2);
  return p;
}

bool same_pulses(const GstSarPulseMeta *a, const GstSarPulseMeta *b) {
  return a && b && a->first_pulse == b->first_pulse && a->n_pulses == b->n_pulses &&
         std::memcmp(a->pulses, b->pulses, sizeof(GstSarPulseParameters) * a->n_pulses) == 0;
}

}  // namespace

// ---------------------------------------------------------------- the meta

TEST(SarPulseMeta, CopiesWithItsBuffer) {
  std::mt19937_64 rng(cs_test::fresh_seed());
  GstSarPulseParameters pulses[3] = {random_pulse(rng), random_pulse(rng), random_pulse(rng)};
  GstBuffer *buf = gst_buffer_new_allocate(nullptr, 3 * 16, nullptr);
  GstSarPulseMeta *meta = gst_buffer_add_sar_pulse_meta(buf, 1234, 3, pulses);
  ASSERT_NE(meta, nullptr);
  EXPECT_NE(meta->pulses, pulses) << "the meta owns a copy";
  EXPECT_EQ(std::memcmp(meta->pulses, pulses, sizeof(pulses)), 0);

  GstBuffer *copy = gst_buffer_copy(buf);
  const GstSarPulseMeta *copied = gst_buffer_get_sar_pulse_meta(copy);
  EXPECT_TRUE(same_pulses(meta, copied));
  EXPECT_NE(copied->pulses, meta->pulses) << "a deep copy, freed with its own buffer";
  // Part of a buffer does not hold the rows the meta names.
  GstBuffer *part = gst_buffer_copy_region(buf, GST_BUFFER_COPY_ALL, 16, 16);
  EXPECT_EQ(gst_buffer_get_sar_pulse_meta(part), nullptr);
  gst_buffer_unref(part);
  gst_buffer_unref(buf);
  EXPECT_EQ(copied->pulses[2].tx_time, pulses[2].tx_time) << "the copy outlives the original";
  gst_buffer_unref(copy);

  GstBuffer *defaults = gst_buffer_new();
  GstSarPulseMeta *d = gst_buffer_add_sar_pulse_meta(defaults, 0, 2, nullptr);
  EXPECT_EQ(d->pulses[1].amp_sf, 1.0);
  EXPECT_EQ(d->pulses[1].signal, 1);
  EXPECT_EQ(d->pulses[1].tx_time, 0.0);
  gst_buffer_unref(defaults);
}

static void meta_through(const char *launch) {
  GstHarness *h = gst_harness_new_parse(launch);
  gst_harness_set_src_caps_str(h, GST_SAR_PHASE_HISTORY_MEDIA_TYPE ", format=(string)CF32");
  std::mt19937_64 rng(cs_test::fresh_seed());
  std::vector<GstSarPulseParameters> pulses = {random_pulse(rng), random_pulse(rng)};
  GstBuffer *buf = gst_buffer_new_allocate(nullptr, 2 * 64 * 8, nullptr);
  gst_buffer_memset(buf, 0, 0x5a, 2 * 64 * 8);
  GstSarPulseMeta *sent = gst_buffer_add_sar_pulse_meta(buf, 77, 2, pulses.data());
  GstSarPulseMeta expected = *sent;
  ASSERT_EQ(gst_harness_push(h, buf), GST_FLOW_OK);
  ASSERT_TRUE(gst_harness_push_event(h, gst_event_new_eos()));
  GstBuffer *out = gst_harness_pull(h);
  ASSERT_NE(out, nullptr);
  const GstSarPulseMeta *got = gst_buffer_get_sar_pulse_meta(out);
  ASSERT_NE(got, nullptr) << "the pulse meta was lost";
  EXPECT_EQ(got->first_pulse, expected.first_pulse);
  ASSERT_EQ(got->n_pulses, 2u);
  EXPECT_EQ(std::memcmp(got->pulses, pulses.data(), 2 * sizeof(GstSarPulseParameters)), 0);
  gst_buffer_unref(out);
  gst_harness_teardown(h);
}

TEST(SarPulseMeta, SurvivesUploadAndDownload) {
  // Without a GPU both pass system memory through; with one the buffer goes to the device and back.
  meta_through("gpuupload ! gpudownload");
}

TEST(GpuSarPulseMeta, SurvivesDeviceMemory) {
  CS_REQUIRE_GPU();
  meta_through("gpuupload ! capsfilter caps=\"" GST_SAR_PHASE_HISTORY_MEDIA_TYPE
               "(memory:CudaSensing)\" ! gpudownload");
}

// ---------------------------------------------------------------- sarsim

class SarSim : public ::testing::TestWithParam<Domain> {};

TEST_P(SarSim, StreamsTheSimulatorsPulsesWithCapsMetaAndTimes) {
  const Domain domain = GetParam();
  PipelineRun run;
  run_pipeline(sarsim(domain, 10, 4, "prf=500 seed=9 snr=20") + " ! appsink name=out sync=false", &run);
  ASSERT_EQ(run.error, "");
  ASSERT_EQ(run.samples.size(), 3u) << "10 pulses in blocks of 4: 4 + 4 + 2";

  cs::sar::SimulatorConfig c = config_for(domain, 10);
  c.prf_hz = 500;
  c.noise_seed = 9;
  c.snr_db = 20;
  cs::sar::PhaseHistorySimulator sim(c);
  const int64_t n = sim.samples_per_pulse();
  std::vector<cs::sar::PulseParameters> pvp(10);
  std::vector<std::complex<float>> samples(static_cast<size_t>(10 * n));
  sim.generate(0, 10, pvp.data(), samples.data());

  GstCaps *caps = run.caps(0);
  EXPECT_TRUE(gst_structure_has_name(gst_caps_get_structure(caps, 0), GST_SAR_PHASE_HISTORY_MEDIA_TYPE));
  EXPECT_EQ(caps_string(caps, "format"), "CF32");
  EXPECT_EQ(caps_int(caps, "samples-per-pulse"), n);
  EXPECT_EQ(caps_string(caps, "domain"), domain == Domain::TOA ? "time" : "frequency");
  EXPECT_EQ(caps_double(caps, "center-frequency"), c.center_frequency_hz);
  EXPECT_EQ(caps_double(caps, "bandwidth"), c.bandwidth_hz);
  EXPECT_EQ(caps_int(caps, "phase-sign"), -1);
  if (domain == Domain::TOA) {
    EXPECT_EQ(caps_double(caps, "sample-rate"), c.sample_rate_hz);
    EXPECT_EQ(caps_double(caps, "chirp-rate"), sim.chirp().rate_hz_per_s);
    EXPECT_EQ(caps_double(caps, "chirp-duration"), sim.chirp().duration_s);
    EXPECT_EQ(caps_double(caps, "sample-start"), sim.sc0());
  } else {
    EXPECT_EQ(caps_double(caps, "frequency-step"), sim.scss());
  }

  const std::vector<uint8_t> bytes = all_bytes(run);
  ASSERT_EQ(bytes.size(), samples.size() * sizeof(samples[0]));
  EXPECT_EQ(std::memcmp(bytes.data(), samples.data(), bytes.size()), 0) << "samples differ from the simulator's";
  bool consecutive = false;
  const auto pulses = all_pulses(run, &consecutive);
  EXPECT_TRUE(consecutive);
  ASSERT_EQ(pulses.size(), 10u);
  for (size_t k = 0; k < 10; ++k) {
    EXPECT_EQ(pulses[k].tx_time, pvp[k].tx_time);
    EXPECT_EQ(pulses[k].rcv_time, pvp[k].rcv_time);
    EXPECT_EQ(pulses[k].tx_pos[0], pvp[k].tx_pos.x);
    EXPECT_EQ(pulses[k].srp_pos[2], pvp[k].srp_pos.z);
    EXPECT_EQ(pulses[k].sc0, pvp[k].sc0);
    EXPECT_EQ(pulses[k].scss, pvp[k].scss);
    EXPECT_EQ(pulses[k].fx2, pvp[k].fx2);
  }
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(GST_BUFFER_PTS(run.buffer(i)), i * 4 * GST_SECOND / 500) << "pulse k is sent at k / prf";
    EXPECT_EQ(GST_BUFFER_DURATION(run.buffer(i)), (i < 2 ? 4 : 2) * GST_SECOND / 500);
  }
}

TEST_P(SarSim, Ci16SamplesTimesAmpSfAreTheSignal) {
  const Domain domain = GetParam();
  PipelineRun run, reference;
  run_pipeline(sarsim(domain, 5, 5, "format=ci16") + " ! appsink name=out sync=false", &run);
  run_pipeline(sarsim(domain, 5, 5) + " ! appsink name=out sync=false", &reference);
  ASSERT_EQ(run.error, "");
  ASSERT_EQ(reference.error, "");
  EXPECT_EQ(caps_string(run.caps(0), "format"), "CI16");
  const auto q = all_bytes(run), f = all_bytes(reference);
  ASSERT_EQ(q.size() * 2, f.size());
  bool consecutive = false;
  const auto pulses = all_pulses(run, &consecutive);
  const double amp_sf = pulses.at(0).amp_sf;
  EXPECT_GT(amp_sf, 0.0);
  EXPECT_NEAR(amp_sf, 1.5 / 32000, 1e-12) << "full scale at the sum of the amplitudes (1.5), no noise";
  const auto *qi = reinterpret_cast<const int16_t *>(q.data());
  const auto *fv = reinterpret_cast<const float *>(f.data());
  double worst = 0;
  for (size_t i = 0; i < q.size() / 2; ++i) worst = std::max(worst, std::fabs(qi[i] * amp_sf - fv[i]));
  EXPECT_LE(worst, 0.5 * amp_sf * (1 + 1e-6)) << "rounded to the nearest step";
}

INSTANTIATE_TEST_SUITE_P(Domains, SarSim, ::testing::Values(Domain::TOA, Domain::FX),
                         [](const auto &info) { return std::string(cs::sar::to_string(info.param)); });

TEST(SarSimSettings, EndlessStreamKeepsGoing) {
  PipelineRun run;
  run_pipeline("sarsim num-pulses=-1 pulses-per-buffer=2 num-buffers=7 ! appsink name=out sync=false", &run);
  ASSERT_EQ(run.error, "");
  ASSERT_EQ(run.samples.size(), 7u);
  EXPECT_EQ(gst_buffer_get_sar_pulse_meta(run.buffer(6))->first_pulse, 12u);
}

// An endless stream whose times would pass GStreamer's clock (2^63 ns, here
// after 9.2 million pulses at 0.001 Hz) ends with an error there, instead of
// timestamps stuck at the clock's end.
TEST(SarSimSettings, TimesBeyondTheClockEndTheStream) {
  PipelineRun run;
  run_pipeline("sarsim num-pulses=-1 pulses-per-buffer=1048576 samples-per-pulse=2 prf=0.001 ! "
               "appsink name=out sync=false",
               &run);
  EXPECT_NE(run.error.find("clock range"), std::string::npos) << run.error;
  ASSERT_EQ(run.samples.size(), 8u) << "the blocks before it";
  EXPECT_LT(GST_BUFFER_PTS(run.buffer(7)), GstClockTime(G_MAXINT64));
}

// More pulses than their times can tell apart are refused at the start.
TEST(SarSimSettings, TooManyPulsesIsAClearError) {
  PipelineRun run;
  run_pipeline("sarsim num-pulses=1099511627777 ! appsink name=out sync=false", &run);
  EXPECT_NE(run.error.find("2^40"), std::string::npos) << run.error;
  EXPECT_EQ(run.samples.size(), 0u);
}

TEST(SarSimSettings, StripmapReferencePointFollowsThePlatform) {
  PipelineRun spot, strip;
  run_pipeline(sarsim(Domain::FX, 3, 3) + " ! appsink name=out sync=false", &spot);
  run_pipeline(sarsim(Domain::FX, 3, 3, "mode=stripmap speed=200") + " ! appsink name=out sync=false", &strip);
  ASSERT_EQ(spot.error, "");
  ASSERT_EQ(strip.error, "");
  bool c = false;
  const auto a = all_pulses(spot, &c), b = all_pulses(strip, &c);
  ASSERT_EQ(b.size(), 3u);
  auto moved = [](const GstSarPulseParameters &p, const GstSarPulseParameters &q) {
    return std::sqrt(std::pow(p.srp_pos[0] - q.srp_pos[0], 2) + std::pow(p.srp_pos[1] - q.srp_pos[1], 2) +
                     std::pow(p.srp_pos[2] - q.srp_pos[2], 2));
  };
  EXPECT_EQ(moved(a[0], a[2]), 0.0) << "spotlight: one scene reference point";
  EXPECT_NEAR(moved(b[0], b[2]), 2 * 200.0 / 1000, 1e-6) << "stripmap: the point abeam the platform, 0.2 m a pulse";
}

TEST(SarSimSettings, BadTargetListIsAClearError) {
  PipelineRun run;
  run_pipeline("sarsim targets=\"1,2,3\" ! appsink name=out", &run);
  EXPECT_NE(run.error.find("four numbers"), std::string::npos) << run.error;
  PipelineRun run2;
  run_pipeline("sarsim targets=\"1,2,x,1\" ! appsink name=out", &run2);
  EXPECT_NE(run2.error.find("'x' is not a number"), std::string::npos) << run2.error;
  PipelineRun huge;
  run_pipeline("sarsim targets=\"0,0,0,1e300\" ! appsink name=out", &huge);
  EXPECT_NE(huge.error.find("float32"), std::string::npos) << huge.error;
  PipelineRun run3;
  run_pipeline("sarsim sample-rate=1e6 ! appsink name=out", &run3);  // below the 150 MHz bandwidth
  EXPECT_NE(run3.error.find("simulation"), std::string::npos) << run3.error;
}

// A block larger than the memory the process may use is refused at the start, saying how
// much was asked and what to change (before downstream sets up for it).
TEST(SarSimSettings, BlockTooLargeForMemoryIsAnError) {
  PipelineRun run;
  run_pipeline("sarsim num-pulses=1048576 pulses-per-buffer=1048576 samples-per-pulse=2147483647 ! "
               "appsink name=out sync=false",
               &run);
  const std::string bytes = std::to_string(uint64_t(1048576) * 2147483647 * 8);
  EXPECT_NE(run.error.find("a block of 1048576 pulses of 2147483647 samples needs"), std::string::npos) << run.error;
  EXPECT_NE(run.error.find(bytes + " bytes), more than the memory this process may use"), std::string::npos)
      << run.error;
  EXPECT_TRUE(run.samples.empty());
  PipelineRun long_pulse;  // a 1 s chirp at 180 MHz: 1.8e8 samples a pulse
  run_pipeline("sarsim num-pulses=128 pulses-per-buffer=512 pulse-length=1 ! appsink name=out sync=false", &long_pulse);
  EXPECT_NE(long_pulse.error.find("pulse-length"), std::string::npos) << long_pulse.error;
}

// A block the host could hold but the process cannot allocate (a limit on
// its address space) is an element error saying how much was asked. Runs in
// a child process (the limit would hold the rest of the tests back).
namespace {
[[noreturn]] void allocate_a_block_beyond_the_address_space() {
  gst_object_unref(gst_element_factory_make("sarsim", nullptr));  // the plugin (and cuFFT) loaded first
  std::ifstream statm("/proc/self/statm");
  size_t pages = 0;
  statm >> pages;
  const rlim_t room = rlim_t(pages) * rlim_t(sysconf(_SC_PAGESIZE)) + (rlim_t(256) << 20);
  const rlimit limit{room, room};
  setrlimit(RLIMIT_AS, &limit);
  PipelineRun run;  // 64 pulses of 4 Mi CF32 samples: a 2 GiB block
  run_pipeline("sarsim num-pulses=64 pulses-per-buffer=64 samples-per-pulse=4194304 ! appsink name=out", &run);
  std::fprintf(stderr, "%s\n", run.error.c_str());
  std::exit(run.error.find("Cannot allocate a buffer of 2147483648 bytes") != std::string::npos ? 0 : 1);
}
}  // namespace

TEST(SarSimSettings, BlockTheProcessCannotAllocateIsAnError) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(allocate_a_block_beyond_the_address_space(), ::testing::ExitedWithCode(0), "Cannot allocate");
}

// ---------------------------------------------------------------- CPHD

struct RoundTripCase {
  Domain domain;
  const char *format;
};
void PrintTo(const RoundTripCase &c, std::ostream *os) { *os << cs::sar::to_string(c.domain) << " " << c.format; }

class CphdRoundTrip : public ::testing::TestWithParam<RoundTripCase> {};

TEST_P(CphdRoundTrip, SarsimToCphdsinkToCphdsrcIsBitExact) {
  const RoundTripCase rc = GetParam();
  TempFile file("roundtrip.cphd");
  const std::string sim =
      sarsim(rc.domain, 23, 4, (std::string("snr=10 seed=5 format=") + rc.format).c_str());
  PipelineRun write, direct, read;
  run_pipeline(sim + " ! cphdsink location=" + file.path(), &write);
  ASSERT_EQ(write.error, "");
  run_pipeline(sim + " ! appsink name=out sync=false", &direct);
  ASSERT_EQ(direct.error, "");
  run_pipeline("cphdsrc location=" + file.path() + " pulses-per-buffer=5 ! appsink name=out sync=false", &read);
  ASSERT_EQ(read.error, "");
  ASSERT_EQ(read.samples.size(), 5u) << "23 pulses in blocks of 5";

  EXPECT_TRUE(all_bytes(read) == all_bytes(direct)) << "samples differ after the round trip";
  bool c1 = false, c2 = false;
  const auto written = all_pulses(direct, &c1), back = all_pulses(read, &c2);
  EXPECT_TRUE(c1 && c2);
  ASSERT_EQ(back.size(), 23u);
  ASSERT_EQ(written.size(), 23u);
  for (size_t k = 0; k < 23; ++k)
    EXPECT_EQ(std::memcmp(&back[k], &written[k], sizeof(GstSarPulseParameters)), 0) << "pulse " << k;

  GstCaps *a = direct.caps(0), *b = read.caps(0);
  EXPECT_EQ(caps_string(b, "format"), caps_string(a, "format"));
  EXPECT_EQ(caps_string(b, "domain"), caps_string(a, "domain"));
  EXPECT_EQ(caps_int(b, "samples-per-pulse"), caps_int(a, "samples-per-pulse"));
  EXPECT_EQ(caps_int(b, "phase-sign"), caps_int(a, "phase-sign"));
  // Centre and bandwidth come back from FxC/FxBW (computed from FX1/FX2): equal up to rounding.
  EXPECT_NEAR(caps_double(b, "center-frequency"), caps_double(a, "center-frequency"), 1e-6);
  EXPECT_NEAR(caps_double(b, "bandwidth"), caps_double(a, "bandwidth"), 1e-6);
  const std::vector<const char *> fields = rc.domain == Domain::TOA
      ? std::vector<const char *>{"sample-rate", "chirp-rate", "chirp-duration", "sample-start"}
      : std::vector<const char *>{"frequency-step"};
  for (const char *f : fields) EXPECT_DOUBLE_EQ(caps_double(b, f), caps_double(a, f)) << f;
  EXPECT_EQ(GST_BUFFER_PTS(read.buffer(1)), 5 * GST_SECOND / 1000) << "times from the file's TxTime";
  // Each block lasts until the next one's time; the last, its 3 pulses' worth.
  for (size_t i = 0; i < 5; ++i)
    EXPECT_EQ(GST_BUFFER_DURATION(read.buffer(i)), (i < 4 ? 5 : 3) * GST_SECOND / 1000) << "block " << i;
  PipelineRun single;
  run_pipeline("cphdsrc location=" + file.path() + " pulses-per-buffer=1 ! appsink name=out sync=false", &single);
  ASSERT_EQ(single.error, "");
  ASSERT_EQ(single.samples.size(), 23u);
  for (size_t i = 0; i < 23; ++i)
    EXPECT_EQ(GST_BUFFER_DURATION(single.buffer(i)), GST_SECOND / 1000) << "a block of one pulse, pulse " << i;
}

INSTANTIATE_TEST_SUITE_P(Formats, CphdRoundTrip,
                         ::testing::Values(RoundTripCase{Domain::TOA, "cf32"}, RoundTripCase{Domain::FX, "cf32"},
                                           RoundTripCase{Domain::TOA, "ci16"}, RoundTripCase{Domain::FX, "ci16"}),
                         [](const auto &info) {
                           return std::string(cs::sar::to_string(info.param.domain)) + "_" + info.param.format;
                         });

// sarsim and cphdsrc fill their buffers from the allocator negotiated
// downstream (page-locked memory before gpuupload), pooled, with
// the same samples as in system memory, where nothing downstream proposes one.
namespace {
// `sim` and a cphdsrc reading what it wrote to `file`, in blocks of `per_buffer`.
std::vector<std::string> simulated_sources(const std::string &sim, const TempFile &file, int per_buffer) {
  PipelineRun write;
  run_pipeline(sim + " ! cphdsink location=" + file.path(), &write);
  EXPECT_EQ(write.error, "");
  return {sim, "cphdsrc location=" + file.path() + " pulses-per-buffer=" + std::to_string(per_buffer)};
}
}  // namespace

// custom-meta: each block's pulses also as a GstStructure (for language
// bindings), the same bytes as the struct meta's, kept through pulse
// compression; none without the property.
TEST(SarSources, CustomMetaHoldsThePulsesThroughPulseCompression) {
  TempFile file("custom.cphd");
  const std::vector<std::string> sources =
      simulated_sources(sarsim(Domain::TOA, 11, 4, "seed=3"), file, 4);
  for (const std::string &source : sources) {
    for (const char *after : {"", " ! sarpulsecompress backend=cpu"}) {
      SCOPED_TRACE(source + after);
      PipelineRun run;
      run_pipeline(source + " custom-meta=true" + after + " ! appsink name=out sync=false", &run);
      ASSERT_EQ(run.error, "");
      ASSERT_EQ(run.samples.size(), 3u) << "11 pulses in blocks of 4";
      for (size_t i = 0; i < run.samples.size(); ++i) {
        const GstSarPulseMeta *m = gst_buffer_get_sar_pulse_meta(run.buffer(i));
        GstCustomMeta *custom = gst_buffer_get_custom_meta(run.buffer(i), GST_SAR_PULSE_CUSTOM_META);
        ASSERT_TRUE(m && custom) << "block " << i;
        const GstStructure *st = gst_custom_meta_get_structure(custom);
        guint64 first = 0;
        guint n = 0, record = 0;
        ASSERT_TRUE(gst_structure_get_uint64(st, "first-pulse", &first));
        ASSERT_TRUE(gst_structure_get_uint(st, "n-pulses", &n));
        ASSERT_TRUE(gst_structure_get_uint(st, "record-size", &record));
        EXPECT_EQ(first, 4 * i);
        EXPECT_EQ(first, m->first_pulse);
        EXPECT_EQ(n, m->n_pulses);
        EXPECT_EQ(record, sizeof(GstSarPulseParameters));
        const GValue *v = gst_structure_get_value(st, "pulses");
        ASSERT_TRUE(v && G_VALUE_HOLDS(v, G_TYPE_BYTES));
        gsize size = 0;
        const void *bytes = g_bytes_get_data(static_cast<GBytes *>(g_value_get_boxed(v)), &size);
        ASSERT_EQ(size, sizeof(GstSarPulseParameters) * m->n_pulses);
        EXPECT_EQ(std::memcmp(bytes, m->pulses, size), 0) << "block " << i;
      }
      PipelineRun plain;
      run_pipeline(source + after + " ! appsink name=out sync=false", &plain);
      ASSERT_EQ(plain.error, "");
      ASSERT_FALSE(plain.samples.empty());
      EXPECT_EQ(gst_buffer_get_custom_meta(plain.buffer(0), GST_SAR_PULSE_CUSTOM_META), nullptr);
    }
  }
}

TEST(SarSources, FillTheAllocatorProposedDownstream) {
  TempFile file("allocation.cphd");
  const std::string sim = sarsim(Domain::TOA, 10, 4, "snr=10 seed=3");
  for (const std::string &source : simulated_sources(sim, file, 4)) {
    SCOPED_TRACE(source);
    const auto proposed = source_allocation_test::count_allocations(source + " ! fakesink name=probed", true);
    const auto plain = source_allocation_test::count_allocations(source + " ! fakesink name=probed", false);
    ASSERT_TRUE(proposed.eos) << proposed.error;
    ASSERT_TRUE(plain.eos) << plain.error;
    EXPECT_EQ(proposed.buffers, 3) << "10 pulses in blocks of 4";
    EXPECT_EQ(proposed.from_proposed, 3);
    EXPECT_EQ(plain.from_proposed, 0);
    EXPECT_EQ(proposed.pooled + plain.pooled, 6) << "the blocks come from a pool";
    EXPECT_FALSE(plain.bytes.empty());
    EXPECT_TRUE(proposed.bytes == plain.bytes) << "the samples depend on where they were written";
  }
}

TEST(GpuSarSources, GpuUploadReceivesPageLockedPulses) {
  CS_REQUIRE_GPU();
  TempFile file("allocation.cphd");
  for (const std::string &source : simulated_sources(sarsim(Domain::FX, 9, 3, "seed=4 format=ci16"), file, 3)) {
    SCOPED_TRACE(source);
    const auto count =
        source_allocation_test::count_allocations(source + " ! gpuupload name=probed ! fakesink", false);
    ASSERT_TRUE(count.eos) << count.error;
    EXPECT_EQ(count.buffers, 3);
    EXPECT_EQ(count.page_locked, 3) << "gpuupload offers page-locked memory upstream";
  }
}

TEST(CphdErrors, MissingFile) {
  PipelineRun run;
  run_pipeline("cphdsrc location=/nonexistent/x.cphd ! appsink name=out", &run);
  EXPECT_NE(run.error.find("does not exist"), std::string::npos) << run.error;
}

TEST(CphdErrors, MalformedFilesNameTheFieldAndOffset) {
  TempFile file("good.cphd");
  PipelineRun write;
  run_pipeline(sarsim(Domain::FX, 12, 4) + " ! cphdsink location=" + file.path(), &write);
  ASSERT_EQ(write.error, "");
  std::string bytes;
  {
    std::ifstream in(file.path(), std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  ASSERT_GT(bytes.size(), 1000u);
  struct Case {
    const char *what;
    std::string contents;
    const char *expected;
  };
  std::string bad_magic = bytes;
  bad_magic[0] = 'X';
  std::string bad_xml = bytes;
  const size_t cphd_tag = bad_xml.find("<CPHD");
  ASSERT_NE(cphd_tag, std::string::npos);
  bad_xml.replace(cphd_tag, 5, "<QQQQ");
  const std::vector<Case> cases = {
      {"truncated in the signal block", bytes.substr(0, bytes.size() - 100), "offset"},
      {"truncated in the header", bytes.substr(0, 40), "offset"},
      {"not CPHD", bad_magic, "not a CPHD file"},
      {"broken XML", bad_xml, "XML"},
  };
  for (const Case &c : cases) {
    SCOPED_TRACE(c.what);
    TempFile bad("bad.cphd");
    {
      std::ofstream out(bad.path(), std::ios::binary);
      out.write(c.contents.data(), std::streamsize(c.contents.size()));
    }
    PipelineRun run;
    run_pipeline("cphdsrc location=" + bad.path() + " ! fakesink", &run);
    EXPECT_NE(run.error.find(c.expected), std::string::npos) << run.error;
    EXPECT_NE(run.error.find(bad.path()), std::string::npos) << "the message names the file: " << run.error;
  }
}

TEST(CphdErrors, UnknownChannel) {
  TempFile file("one-channel.cphd");
  PipelineRun write;
  run_pipeline(sarsim(Domain::TOA, 3, 4) + " ! cphdsink location=" + file.path(), &write);
  ASSERT_EQ(write.error, "");
  PipelineRun run;
  run_pipeline("cphdsrc channel=7 location=" + file.path() + " ! fakesink", &run);
  EXPECT_NE(run.error.find("7"), std::string::npos) << run.error;
  PipelineRun by_id;
  run_pipeline("cphdsrc channel=1 location=" + file.path() + " ! appsink name=out sync=false", &by_id);
  EXPECT_EQ(by_id.error, "") << "channel by its Identifier";
  EXPECT_EQ(by_id.samples.size(), 1u);
}

// A harness around cphdsink, without the asynchronous state change of a sink
// (the harness expects its element to reach PLAYING at once).
static GstHarness *sink_harness(const std::string &location) {
  GstElement *sink = gst_element_factory_make("cphdsink", nullptr);
  g_object_set(sink, "location", location.c_str(), "async", FALSE, nullptr);
  GstHarness *h = gst_harness_new_with_element(sink, "sink", nullptr);
  gst_object_unref(sink);
  return h;
}

static std::string harness_error(GstHarness *h, GstBus *bus) {
  (void)h;
  GstMessage *msg = gst_bus_pop_filtered(bus, GST_MESSAGE_ERROR);
  std::string text = msg ? error_text(msg) : "";
  if (msg) gst_message_unref(msg);
  return text;
}

// A location that cannot be written fails at the state change, with the
// reason, before any pulses arrive; nothing is created.
TEST(CphdErrors, SinkRefusesAnUnwritableLocationAtStart) {
  TempFile file("folder.cphd");
  ASSERT_EQ(g_mkdir(file.path().c_str(), 0755), 0);
  // /proc takes no new files, whatever access() says (to root, say).
  const std::pair<std::string, std::string> cases[] = {{"/nonexistent-folder/pulses.cphd", "folder does not exist"},
                                                       {file.path(), "is a directory"},
                                                       {"/proc/pulses.cphd", "pulses.cphd"}};
  for (const auto &[location, reason] : cases) {
    SCOPED_TRACE(location);
    GstElement *sink = gst_element_factory_make("cphdsink", nullptr);
    g_object_set(sink, "location", location.c_str(), nullptr);
    GstBus *bus = gst_bus_new();
    gst_element_set_bus(sink, bus);
    EXPECT_EQ(gst_element_set_state(sink, GST_STATE_PAUSED), GST_STATE_CHANGE_FAILURE);
    GstMessage *msg = gst_bus_pop_filtered(bus, GST_MESSAGE_ERROR);
    const std::string error = msg ? error_text(msg) : "";
    if (msg) gst_message_unref(msg);
    EXPECT_NE(error.find(location), std::string::npos) << error;
    EXPECT_NE(error.find(reason), std::string::npos) << error;
    gst_element_set_state(sink, GST_STATE_NULL);
    gst_element_set_bus(sink, nullptr);
    gst_object_unref(bus);
    gst_object_unref(sink);
  }
  EXPECT_FALSE(g_file_test("/nonexistent-folder", G_FILE_TEST_EXISTS));
  g_rmdir(file.path().c_str());
}

// A stream with no pulses ends normally, with a warning that names the
// location, and leaves no file (a CPHD file holds at least one vector).
TEST(CphdErrors, SinkWarnsThatAStreamWithoutPulsesWritesNothing) {
  TempFile file("empty.cphd");
  GError *error = nullptr;
  GstElement *p = gst_parse_launch(("sarsim num-pulses=0 ! cphdsink location=" + file.path()).c_str(), &error);
  ASSERT_EQ(error, nullptr) << error->message;
  std::string warnings;
  EXPECT_EQ(element_test::play_to_end(p, 10, &warnings), "");
  gst_object_unref(p);
  EXPECT_NE(warnings.find("No pulses"), std::string::npos) << warnings;
  EXPECT_NE(warnings.find(file.path()), std::string::npos) << warnings;
  EXPECT_FALSE(g_file_test(file.path().c_str(), G_FILE_TEST_EXISTS));
}

TEST(CphdErrors, SinkRejectsBuffersWithoutPulses) {
  TempFile file("rejected.cphd");
  GstHarness *h = sink_harness(file.path());
  GstBus *bus = gst_bus_new();
  gst_element_set_bus(h->element, bus);
  gst_harness_set_src_caps_str(h, GST_SAR_PHASE_HISTORY_MEDIA_TYPE
                               ", format=(string)CF32, samples-per-pulse=(int)16, domain=(string)frequency, "
                               "center-frequency=(double)1e10, bandwidth=(double)1e8, frequency-step=(double)1e6");
  GstBuffer *no_meta = gst_buffer_new_allocate(nullptr, 2 * 16 * 8, nullptr);
  EXPECT_EQ(gst_harness_push(h, no_meta), GST_FLOW_ERROR);
  std::string error = harness_error(h, bus);
  EXPECT_NE(error.find("no pulse meta"), std::string::npos) << error;
  GstBuffer *short_buf = gst_buffer_new_allocate(nullptr, 16 * 8 + 3, nullptr);
  gst_buffer_add_sar_pulse_meta(short_buf, 0, 1, nullptr);
  EXPECT_EQ(gst_harness_push(h, short_buf), GST_FLOW_ERROR);
  error = harness_error(h, bus);
  EXPECT_NE(error.find("not a whole number of pulses"), std::string::npos) << error;
  gst_element_set_bus(h->element, nullptr);
  gst_object_unref(bus);
  gst_harness_teardown(h);
}

TEST(CphdErrors, SinkRefusesIncompleteCaps) {
  TempFile file("refused.cphd");
  GstHarness *h = sink_harness(file.path());
  GstBus *bus = gst_bus_new();
  gst_element_set_bus(h->element, bus);
  gst_harness_set_src_caps_str(h, GST_SAR_PHASE_HISTORY_MEDIA_TYPE ", format=(string)CF32, domain=(string)time");
  GstBuffer *buf = gst_buffer_new_allocate(nullptr, 64, nullptr);
  EXPECT_NE(gst_harness_push(h, buf), GST_FLOW_OK);
  const std::string error = harness_error(h, bus);
  EXPECT_NE(error.find("samples-per-pulse"), std::string::npos) << error;
  gst_element_set_bus(h->element, nullptr);
  gst_object_unref(bus);
  gst_harness_teardown(h);
}

// Pulses beyond max-pulses are an error; the file keeps the pulses that fit
// (those of a buffer that straddles the limit too) and is a valid file.
TEST(CphdErrors, SinkSaysWhenTheReservedRoomIsFull) {
  for (int per_buffer : {4, 20}) {
    SCOPED_TRACE(std::to_string(per_buffer) + " pulses per buffer");
    TempFile file("small.cphd");
    PipelineRun run;
    run_pipeline(sarsim(Domain::FX, 12, per_buffer) + " ! cphdsink max-pulses=5 location=" + file.path(), &run);
    EXPECT_NE(run.error.find("max-pulses=5"), std::string::npos) << run.error;
    EXPECT_NE(run.error.find("pulses 5.." + std::to_string(per_buffer == 4 ? 7 : 11) + " are not written"),
              std::string::npos)
        << run.error;
    PipelineRun read;
    run_pipeline("cphdsrc location=" + file.path() + " ! appsink name=out sync=false", &read);
    EXPECT_EQ(read.error, "");
    bool consecutive = false;
    const std::vector<GstSarPulseParameters> pulses = all_pulses(read, &consecutive);
    EXPECT_TRUE(consecutive);
    ASSERT_EQ(pulses.size(), 5u);
    PipelineRun direct;
    run_pipeline(sarsim(Domain::FX, 5, 5) + " ! appsink name=out sync=false", &direct);
    const std::vector<GstSarPulseParameters> expected = all_pulses(direct, &consecutive);
    ASSERT_EQ(expected.size(), 5u);
    for (size_t i = 0; i < 5; ++i) EXPECT_EQ(pulses[i].tx_time, expected[i].tx_time) << i;
  }
}

// Files written by the kernels' writer in each stored format, with AmpSF:
// CI4 comes out as CI16 as stored (AmpSF in the meta), CF8 and CI2 as CF32
// with AmpSF applied (the meta's amp_sf is then 1); CPHD 1.1 reads the same.
TEST(CphdSrcFormats, StoredFormatsAndAmpSf) {
  struct Case {
    cs::sar::SampleFormat format;
    const char *version;
  };
  std::mt19937_64 rng(cs_test::fresh_seed());
  for (const Case &c : {Case{cs::sar::SampleFormat::CF8, "1.0.1"}, Case{cs::sar::SampleFormat::CI4, "1.0.1"},
                        Case{cs::sar::SampleFormat::CI2, "1.1.0"}}) {
    SCOPED_TRACE(cs::sar::to_string(c.format));
    cs::sar::PhaseHistorySimulator sim(config_for(Domain::FX, 9));
    const int64_t n = sim.samples_per_pulse(), pulses = 9;
    cs::sar::CphdMetadata m = sim.cphd_metadata(pulses);
    m.version = c.version;
    m.format = c.format;
    m.pvp = cs::sar::PvpLayout::packed({cs::sar::Pvp::AmpSF});
    std::vector<cs::sar::PulseParameters> pvp(static_cast<size_t>(pulses));
    std::vector<std::complex<float>> samples(static_cast<size_t>(pulses * n));
    sim.generate(0, pulses, pvp.data(), samples.data());
    std::uniform_real_distribution<double> scale(0.5, 2.0);
    std::normal_distribution<float> g(0.0f, 15.0f);  // int8 full scale is 8.5 deviations away
    for (auto &p : pvp) p.amp_sf = scale(rng);
    for (auto &s : samples) s = {std::round(g(rng)), std::round(g(rng))};  // representable in every format
    TempFile file("formats.cphd");
    {
      cs::sar::CphdWriter writer(file.path(), m);
      writer.write(0, pvp, samples.data());
      writer.close();
    }
    PipelineRun run;
    run_pipeline("cphdsrc location=" + file.path() + " pulses-per-buffer=4 ! appsink name=out sync=false", &run);
    ASSERT_EQ(run.error, "");
    bool consecutive = false;
    const auto metas = all_pulses(run, &consecutive);
    ASSERT_EQ(metas.size(), size_t(pulses));
    const auto bytes = all_bytes(run);
    if (c.format == cs::sar::SampleFormat::CI4) {
      EXPECT_EQ(caps_string(run.caps(0), "format"), "CI16");
      ASSERT_EQ(bytes.size(), samples.size() * 4);
      const auto *q = reinterpret_cast<const int16_t *>(bytes.data());
      for (size_t i = 0; i < samples.size(); ++i) {
        ASSERT_EQ(q[2 * i], samples[i].real()) << i;
        ASSERT_EQ(q[2 * i + 1], samples[i].imag()) << i;
      }
      for (int64_t k = 0; k < pulses; ++k) EXPECT_EQ(metas[k].amp_sf, pvp[k].amp_sf);
    } else {
      EXPECT_EQ(caps_string(run.caps(0), "format"), "CF32");
      ASSERT_EQ(bytes.size(), samples.size() * 8);
      const auto *f = reinterpret_cast<const std::complex<float> *>(bytes.data());
      for (size_t i = 0; i < samples.size(); ++i) {
        const float s = static_cast<float>(pvp[i / size_t(n)].amp_sf);
        ASSERT_EQ(f[i], samples[i] * s) << i;
      }
      for (int64_t k = 0; k < pulses; ++k) EXPECT_EQ(metas[k].amp_sf, 1.0) << "applied to the samples";
    }
    for (int64_t k = 0; k < pulses; ++k) EXPECT_EQ(metas[k].tx_time, pvp[k].tx_time);
  }
}

namespace {

// A CPHD file of 40 pulses at 1 kHz read by "cphdsrc ! appsink" in blocks of
// 4, paused: seeks and queries go to `pipeline` or `src`, then blocks()
// plays to the end.
class PausedCphd {
 public:
  using Block = std::tuple<guint64, guint, GstClockTime>;  // first pulse, pulses, PTS

  PausedCphd() : file_("seek.cphd") {
    PipelineRun write;
    run_pipeline(sarsim(Domain::FX, 40, 8, "prf=1000") + " ! cphdsink location=" + file_.path(), &write);
    written = write.error.empty();
    pipeline = gst_parse_launch(
        ("cphdsrc name=src location=" + file_.path() + " pulses-per-buffer=4 ! appsink name=out sync=false").c_str(),
        nullptr);
    src = gst_bin_get_by_name(GST_BIN(pipeline), "src");
    sink_ = gst_bin_get_by_name(GST_BIN(pipeline), "out");
    g_object_set(sink_, "wait-on-eos", FALSE, nullptr);
    gst_element_set_state(pipeline, GST_STATE_PAUSED);
    paused = gst_element_get_state(pipeline, nullptr, nullptr, 10 * GST_SECOND) == GST_STATE_CHANGE_SUCCESS;
  }
  ~PausedCphd() {
    gst_element_set_state(pipeline, GST_STATE_NULL);
    gst_object_unref(sink_);
    gst_object_unref(src);
    gst_object_unref(pipeline);
  }
  // Plays to EOS (an error fails the test): every block pushed.
  std::vector<Block> blocks() {
    gst_element_set_state(pipeline, GST_STATE_PLAYING);
    GstBus *bus = gst_element_get_bus(pipeline);
    GstMessage *msg =
        gst_bus_timed_pop_filtered(bus, 30 * GST_SECOND, GstMessageType(GST_MESSAGE_ERROR | GST_MESSAGE_EOS));
    gst_object_unref(bus);
    EXPECT_NE(msg, nullptr);
    if (msg) {
      EXPECT_EQ(GST_MESSAGE_TYPE(msg), GST_MESSAGE_EOS)
          << (GST_MESSAGE_TYPE(msg) == GST_MESSAGE_ERROR ? error_text(msg) : "");
      gst_message_unref(msg);
    }
    std::vector<Block> out;
    while (GstSample *s = gst_app_sink_try_pull_sample(GST_APP_SINK(sink_), 0)) {
      GstBuffer *b = gst_sample_get_buffer(s);
      const GstSarPulseMeta *m = gst_buffer_get_sar_pulse_meta(b);
      out.emplace_back(m->first_pulse, m->n_pulses, GST_BUFFER_PTS(b));
      gst_sample_unref(s);
    }
    return out;
  }

  bool written = false, paused = false;
  GstElement *pipeline = nullptr, *src = nullptr;

 private:
  TempFile file_;
  GstElement *sink_ = nullptr;
};

}  // namespace

// Vectors are the pad's unit (GST_FORMAT_DEFAULT): a seek by vector starts
// at that vector (the segment at its transmit time) and its stop ends the
// stream before the stop vector; position, duration and conversions answer
// in vectors; no rate reads vectors backwards.
TEST(CphdSrcSeeking, SeekByVector) {
  PausedCphd c;
  ASSERT_TRUE(c.written && c.paused);
  gint64 value = -1;
  EXPECT_TRUE(gst_element_query_duration(c.src, GST_FORMAT_DEFAULT, &value));
  EXPECT_EQ(value, 40);
  EXPECT_TRUE(gst_element_query_convert(c.src, GST_FORMAT_DEFAULT, 11, GST_FORMAT_TIME, &value));
  EXPECT_EQ(value, gint64(11 * GST_MSECOND));
  EXPECT_TRUE(gst_element_query_convert(c.src, GST_FORMAT_TIME, gint64(10 * GST_MSECOND + 400 * GST_USECOND),
                                        GST_FORMAT_DEFAULT, &value));
  EXPECT_EQ(value, 11) << "the first vector at or after that time";
  const auto flush = GstSeekFlags(GST_SEEK_FLAG_FLUSH | GST_SEEK_FLAG_ACCURATE);
  EXPECT_FALSE(
      gst_element_seek(c.pipeline, -1.0, GST_FORMAT_DEFAULT, flush, GST_SEEK_TYPE_SET, 0, GST_SEEK_TYPE_SET, 9))
      << "vectors are read forwards only";
  ASSERT_TRUE(
      gst_element_seek(c.pipeline, 1.0, GST_FORMAT_DEFAULT, flush, GST_SEEK_TYPE_SET, 11, GST_SEEK_TYPE_SET, 30));
  const GstClockTime ms = GST_MSECOND;
  EXPECT_EQ(c.blocks(), (std::vector<PausedCphd::Block>{
                            {11, 4, 11 * ms}, {15, 4, 15 * ms}, {19, 4, 19 * ms}, {23, 4, 23 * ms}, {27, 3, 27 * ms}}));
  EXPECT_TRUE(gst_element_query_position(c.src, GST_FORMAT_DEFAULT, &value));
  EXPECT_EQ(value, 30) << "the vector after the last one pushed";
}

// A seek whose start is after its stop is refused before anything is
// flushed: the stream goes on as it was, every vector from the first.
TEST(CphdSrcSeeking, StartAfterStopIsRefused) {
  PausedCphd c;
  ASSERT_TRUE(c.written && c.paused);
  const auto flush = GstSeekFlags(GST_SEEK_FLAG_FLUSH | GST_SEEK_FLAG_ACCURATE);
  EXPECT_FALSE(
      gst_element_seek(c.pipeline, 1.0, GST_FORMAT_DEFAULT, flush, GST_SEEK_TYPE_SET, 30, GST_SEEK_TYPE_SET, 10));
  EXPECT_FALSE(gst_element_seek(c.pipeline, 1.0, GST_FORMAT_TIME, flush, GST_SEEK_TYPE_SET, 30 * GST_MSECOND,
                                GST_SEEK_TYPE_SET, 10 * GST_MSECOND));
  const std::vector<PausedCphd::Block> blocks = c.blocks();
  ASSERT_EQ(blocks.size(), 10u);
  for (guint64 i = 0; i < blocks.size(); ++i) EXPECT_EQ(std::get<0>(blocks[i]), 4 * i);
}

TEST(CphdSrcSeeking, DurationAndSeekByTransmitTime) {
  PausedCphd c;
  ASSERT_TRUE(c.written && c.paused);
  gint64 duration = -1;
  EXPECT_TRUE(gst_element_query_duration(c.pipeline, GST_FORMAT_TIME, &duration));
  EXPECT_EQ(duration, 40 * GST_MSECOND) << "40 pulses at 1 kHz";
  // 10.0004 ms: the first pulse at or after it is pulse 11.
  ASSERT_TRUE(gst_element_seek_simple(c.pipeline, GST_FORMAT_TIME, GstSeekFlags(GST_SEEK_FLAG_FLUSH),
                                      10 * GST_MSECOND + 400 * GST_USECOND));
  const std::vector<PausedCphd::Block> blocks = c.blocks();
  ASSERT_FALSE(blocks.empty());
  EXPECT_EQ(std::get<0>(blocks.front()), 11u);
  EXPECT_EQ(std::get<2>(blocks.front()), 11 * GST_MSECOND);
  EXPECT_EQ(std::get<0>(blocks.back()), 39u) << "11, 15, ... 35, 39";
}

// A seek in time with a stop ends the stream before the first vector at or
// after the stop, the last block cut there, as a seek by vector does.
TEST(CphdSrcSeeking, SeekByTransmitTimeWithAStop) {
  PausedCphd c;
  ASSERT_TRUE(c.written && c.paused);
  const auto flush = GstSeekFlags(GST_SEEK_FLAG_FLUSH | GST_SEEK_FLAG_ACCURATE);
  ASSERT_TRUE(gst_element_seek(c.pipeline, 1.0, GST_FORMAT_TIME, flush, GST_SEEK_TYPE_SET, 11 * GST_MSECOND,
                               GST_SEEK_TYPE_SET, 20 * GST_MSECOND + 500 * GST_USECOND));
  const GstClockTime ms = GST_MSECOND;
  EXPECT_EQ(c.blocks(), (std::vector<PausedCphd::Block>{{11, 4, 11 * ms}, {15, 4, 15 * ms}, {19, 2, 19 * ms}}))
      << "vectors 11 to 20: vector 21 is the first at or after 20.5 ms";
}

// TxTime out of order (vector 0 sent at vector 5's time; every vector earlier
// than the one before): the stream starts at vector 0 and holds every vector,
// and a seek in time, which would bisect on TxTime, is refused with a warning.
TEST(CphdSrcSeeking, TxTimeOutOfOrderKeepsEveryVectorAndRefusesTimeSeeks) {
  const int64_t pulses = 12;
  cs::sar::PhaseHistorySimulator sim(config_for(Domain::FX, pulses));
  std::vector<cs::sar::PulseParameters> pvp(static_cast<size_t>(pulses));
  std::vector<std::complex<float>> samples(static_cast<size_t>(pulses * sim.samples_per_pulse()));
  sim.generate(0, pulses, pvp.data(), samples.data());
  const std::vector<cs::sar::PulseParameters> in_order = pvp;
  std::vector<cs::sar::PulseParameters> first_late = in_order, reversed = in_order;
  first_late[0].tx_time = in_order[5].tx_time;
  for (size_t i = 0; i < reversed.size(); ++i) reversed[i].tx_time = in_order[reversed.size() - 1 - i].tx_time;
  for (const auto *order : {&first_late, &reversed}) {
    SCOPED_TRACE(order == &first_late ? "vector 0 at vector 5's time" : "reversed");
    TempFile file("disorder.cphd");
    {
      cs::sar::CphdWriter writer(file.path(), sim.cphd_metadata(pulses));
      writer.write(0, *order, samples.data());
      writer.close();
    }
    GstElement *pipeline = gst_parse_launch(
        ("cphdsrc location=" + file.path() + " pulses-per-buffer=4 ! appsink name=out sync=false").c_str(), nullptr);
    ASSERT_NE(pipeline, nullptr);
    GstElement *sink = gst_bin_get_by_name(GST_BIN(pipeline), "out");
    g_object_set(sink, "wait-on-eos", FALSE, nullptr);
    gst_element_set_state(pipeline, GST_STATE_PAUSED);
    ASSERT_EQ(gst_element_get_state(pipeline, nullptr, nullptr, 10 * GST_SECOND), GST_STATE_CHANGE_SUCCESS);
    for (GstFormat format : {GST_FORMAT_TIME, GST_FORMAT_DEFAULT}) {  // the SEEKING query says what a seek will do
      GstQuery *seeking = gst_query_new_seeking(format);
      ASSERT_TRUE(gst_element_query(pipeline, seeking));
      gboolean seekable = FALSE;
      gst_query_parse_seeking(seeking, nullptr, &seekable, nullptr, nullptr);
      EXPECT_EQ(bool(seekable), format == GST_FORMAT_DEFAULT) << gst_format_get_name(format);
      gst_query_unref(seeking);
    }
    EXPECT_FALSE(gst_element_seek_simple(pipeline, GST_FORMAT_TIME, GST_SEEK_FLAG_FLUSH, 2 * GST_MSECOND));
    GstBus *bus = gst_element_get_bus(pipeline);
    GstMessage *warning = gst_bus_pop_filtered(bus, GST_MESSAGE_WARNING);
    std::string text;
    if (warning) {
      GError *error = nullptr;
      gst_message_parse_warning(warning, &error, nullptr);
      text = error ? error->message : "";
      g_clear_error(&error);
      gst_message_unref(warning);
    }
    EXPECT_NE(text.find("TxTime"), std::string::npos) << text;
    gst_element_set_state(pipeline, GST_STATE_PLAYING);
    GstMessage *end =
        gst_bus_timed_pop_filtered(bus, 30 * GST_SECOND, GstMessageType(GST_MESSAGE_ERROR | GST_MESSAGE_EOS));
    ASSERT_NE(end, nullptr);
    EXPECT_EQ(GST_MESSAGE_TYPE(end), GST_MESSAGE_EOS)
        << (GST_MESSAGE_TYPE(end) == GST_MESSAGE_ERROR ? error_text(end) : "");
    gst_message_unref(end);
    gst_object_unref(bus);
    std::vector<double> times;
    guint64 next = 0;
    while (GstSample *sample = gst_app_sink_try_pull_sample(GST_APP_SINK(sink), 0)) {
      const GstSarPulseMeta *m = gst_buffer_get_sar_pulse_meta(gst_sample_get_buffer(sample));
      EXPECT_EQ(m->first_pulse, next);
      next = m->first_pulse + m->n_pulses;
      for (guint i = 0; i < m->n_pulses; ++i) times.push_back(m->pulses[i].tx_time);
      gst_sample_unref(sample);
    }
    ASSERT_EQ(times.size(), size_t(pulses)) << "every vector, from vector 0";
    for (size_t i = 0; i < times.size(); ++i) EXPECT_EQ(times[i], (*order)[i].tx_time) << i;
    gst_element_set_state(pipeline, GST_STATE_NULL);
    gst_object_unref(sink);
    gst_object_unref(pipeline);
    // Recorded again, every vector is kept in arrival order, and cphdsink says
    // once that the file's TxTime goes back.
    TempFile copy("copy.cphd");
    GstElement *recording = gst_parse_launch(
        ("cphdsrc location=" + file.path() + " pulses-per-buffer=4 ! cphdsink location=" + copy.path()).c_str(),
        nullptr);
    ASSERT_NE(recording, nullptr);
    std::string warnings;
    EXPECT_EQ(element_test::play_to_end(recording, 30, &warnings), "");
    gst_object_unref(recording);
    EXPECT_NE(warnings.find("records its vectors in arrival order"), std::string::npos) << warnings;
    EXPECT_EQ(std::count(warnings.begin(), warnings.end(), '\n'), 1) << warnings;
    EXPECT_EQ(cs::sar::CphdReader(copy.path()).metadata().channels.at(0).num_vectors, pulses);
  }
}
