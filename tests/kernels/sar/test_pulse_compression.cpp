// Pulse compression of simulated point targets: the peak lands on the
// target's range, the impulse response has the width and peak sidelobe
// ratio that the window's continuous Fourier transform predicts (computed
// here by numerical integration) and that the literature quotes; the
// CUDA path matches the CPU path.
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <random>
#include <vector>

#include "sar/pulse_compressor.h"
#include "sar/simulator.h"
#include "sar_test_util.h"
#include "test_support.h"

using namespace cs::sar;

namespace {

// Impulse response of a window spread over the band, from first principles:
// h(x) = integral_0^1 w(u) cos(2 pi (u - 1/2) x) du, x in resolution cells c/(2B).
struct TheoreticalResponse {
  double width_3db = 0;   // in cells
  double pslr_db = 0;
};

TheoreticalResponse theory(const WindowSpec &spec) {
  const WindowParams w = make_window(spec);
  const int steps = 4000;
  std::vector<double> weights(steps);
  for (int i = 0; i < steps; ++i) weights[i] = window_value(w, (i + 0.5) / steps);
  auto h = [&](double x) {
    double sum = 0;
    for (int i = 0; i < steps; ++i) sum += weights[i] * std::cos(2 * M_PI * ((i + 0.5) / steps - 0.5) * x);
    return sum / steps;
  };
  const double peak = h(0);
  double lo = 0, hi = 2;  // |h|^2 = peak^2 / 2 between
  for (int i = 0; i < 60; ++i) {
    const double mid = 0.5 * (lo + hi);
    (h(mid) * h(mid) > 0.5 * peak * peak ? lo : hi) = mid;
  }
  TheoreticalResponse r;
  r.width_3db = 2 * lo;
  // First null, then the largest sidelobe out to 20 cells.
  double x = lo, previous = std::fabs(h(x));
  for (x += 0.005;; x += 0.005) {
    const double v = std::fabs(h(x));
    if (v > previous) break;
    previous = v;
  }
  double sidelobe = 0;
  for (; x < 20; x += 0.002) sidelobe = std::max(sidelobe, std::fabs(h(x)));
  r.pslr_db = 20 * std::log10(sidelobe / std::fabs(peak));
  return r;
}

struct MeasuredResponse {
  double peak_bin = 0;     // interpolated
  double width_bins = 0;   // 3 dB
  double pslr_db = 0;
  std::complex<float> peak_value;
};

// Measures the response around the strongest bin of a profile (circular).
MeasuredResponse measure(const std::vector<std::complex<float>> &profile) {
  const int64_t m = static_cast<int64_t>(profile.size());
  auto mag = [&](int64_t i) { return std::abs(profile[static_cast<size_t>(((i % m) + m) % m)]); };
  int64_t best = 0;
  for (int64_t i = 1; i < m; ++i)
    if (mag(i) > mag(best)) best = i;
  MeasuredResponse r;
  r.peak_value = profile[static_cast<size_t>(best)];
  // Parabola through the log magnitudes of the three top bins.
  const double a = std::log(mag(best - 1)), b = std::log(mag(best)), c = std::log(mag(best + 1));
  r.peak_bin = static_cast<double>(best) + 0.5 * (a - c) / (a - 2 * b + c);
  const double peak_power = mag(best) * mag(best);
  // 3 dB crossings by linear interpolation of power.
  auto crossing = [&](int step) {
    int64_t i = best;
    while (mag(i + step) * mag(i + step) > 0.5 * peak_power) i += step;
    const double p0 = mag(i) * mag(i), p1 = mag(i + step) * mag(i + step);
    return static_cast<double>(i) + step * (p0 - 0.5 * peak_power) / (p0 - p1);
  };
  r.width_bins = crossing(1) - crossing(-1);
  // Beyond the first nulls on both sides, the largest sidelobe.
  int64_t right = best, left = best;
  while (mag(right + 1) < mag(right)) ++right;
  while (mag(left - 1) < mag(left)) --left;
  double sidelobe = 0;
  for (int64_t i = right; i <= left + m; ++i) sidelobe = std::max(sidelobe, static_cast<double>(mag(i)));
  r.pslr_db = 20 * std::log10(sidelobe / mag(best));
  return r;
}

struct WindowCase {
  const char *name;
  WindowSpec spec;
  double literature_pslr_db;   // the figures (Harris 1978; Carrara et al. 1995)
  double literature_width;     // 3 dB width in c / (2B)
};

std::vector<WindowCase> window_cases() {
  WindowSpec none, hamming, taylor;
  hamming.kind = WindowKind::Hamming;
  taylor.kind = WindowKind::Taylor;
  taylor.taylor_nbar = 4;
  taylor.taylor_sll_db = -35;
  return {{"none", none, -13.26, 0.886}, {"hamming", hamming, -42.6, 1.30}, {"taylor", taylor, -35.2, 1.184}};
}

SimulatorConfig one_target(Domain domain, std::mt19937_64 &rng, double &target_y) {
  SimulatorConfig c;
  c.domain = domain;
  c.num_pulses = 9;
  c.bandwidth_hz = 150e6;
  c.pulse_length_s = 8e-6;  // time-bandwidth product 1200
  c.sample_rate_hz = 180e6;
  std::uniform_real_distribution<double> offset(-60.0, 60.0), phase(-M_PI, M_PI);
  target_y = offset(rng);
  c.targets.push_back({{offset(rng) * 0.1, target_y, 0.0}, std::polar(1.0 + 0.5 * (phase(rng) + M_PI), phase(rng))});
  // A second, distant and weaker target: it must not disturb the first.
  c.targets.push_back({{0.0, target_y > 0 ? -90.0 : 90.0, 0.0}, {1e-3, 0.0}});
  return c;
}

}  // namespace

class PointTargetResponse : public ::testing::TestWithParam<Domain> {};

TEST_P(PointTargetResponse, MatchesTheoryForEveryWindow) {
  const Domain domain = GetParam();
  std::mt19937_64 rng(cs_test::fresh_seed());
  double target_y = 0;
  const SimulatorConfig sc = one_target(domain, rng, target_y);
  PhaseHistorySimulator sim(sc);
  const int64_t pulse = static_cast<int64_t>(rng() % sc.num_pulses);
  std::vector<std::complex<float>> samples(static_cast<size_t>(sim.samples_per_pulse()));
  PulseParameters pvp;
  sim.generate(pulse, 1, &pvp, samples.data());
  const double dtau = sim.relative_delay(pulse, sc.targets[0].position);

  std::vector<ReferenceFilter> filters = {ReferenceFilter::Equalized};
  if (domain == Domain::TOA) filters.push_back(ReferenceFilter::Matched);
  for (const WindowCase &wc : window_cases()) {
    for (ReferenceFilter filter : filters)
    for (int upsample : {16, 4}) {
      const bool matched = filter == ReferenceFilter::Matched;
      SCOPED_TRACE(std::string(wc.name) + " x" + std::to_string(upsample) + (matched ? " matched" : ""));
      PulseCompressionConfig pc;
      pc.reference_filter = filter;
      pc.domain = domain;
      pc.samples_per_pulse = sim.samples_per_pulse();
      pc.upsample = upsample;
      pc.window = wc.spec;
      pc.sample_rate_hz = sc.sample_rate_hz;
      pc.chirp = sim.chirp();
      pc.frequency_step_hz = sim.scss();
      CpuPulseCompressor compressor(pc);
      std::vector<std::complex<float>> profile(static_cast<size_t>(compressor.output_length()),
                                               std::complex<float>(NAN, NAN));  // poisoned
      compressor.compress(samples.data(), profile.data(), 1);
      const MeasuredResponse r = measure(profile);
      const RangeAxis axis = range_axis(pc, pvp.sc0);
      const double expected_bin = (0.5 * kSpeedOfLight * dtau - axis.first_bin_m) / axis.bin_spacing_m;
      EXPECT_NEAR(r.peak_bin, expected_bin, 0.05) << "peak off the target's range";

      // Phase at the peak: a * exp(-j 2 pi fc dtau) (the lobe is real there).
      const std::complex<double> expected_phasor =
          sc.targets[0].amplitude * std::polar(1.0, -2 * M_PI * std::fmod(sc.center_frequency_hz * dtau, 1.0));
      EXPECT_NEAR(std::arg(std::complex<double>(r.peak_value) / expected_phasor), 0.0, 0.05);

      if (upsample != 16) continue;  // widths and sidelobes measured on the finer grid
      const double cell = bandwidth_resolution_m(pc);
      const double width_cells = r.width_bins * axis.bin_spacing_m / cell;
      const TheoreticalResponse t = theory(wc.spec);
      std::printf("[ measured ] %s %s%s: PSLR %.2f dB (theory %.2f), 3 dB width %.4f cells (theory %.4f), "
                  "peak %.4f bins off\n",
                  to_string(domain), wc.name, matched ? " matched" : "", r.pslr_db, t.pslr_db, width_cells,
                  t.width_3db, r.peak_bin - expected_bin);
      // The window itself agrees with the literature...
      EXPECT_NEAR(t.pslr_db, wc.literature_pslr_db, 0.5);
      EXPECT_NEAR(t.width_3db, wc.literature_width, 0.03 * wc.literature_width);
      // ...and the compressed point target agrees with the window's theory.
      EXPECT_NEAR(width_cells, t.width_3db, 0.03 * t.width_3db);
      // The plain matched filter's response is IFFT(|R|^2 w): the chirp's
      // Fresnel ripple (time-bandwidth 1200 here) may lift the low sidelobes
      // of a weighted response by up to ~1 dB; equalized is held to 0.5 dB.
      EXPECT_NEAR(r.pslr_db, t.pslr_db, matched ? 1.5 : 0.5);
      // Amplitude: the peak is |a| times the window's mean over the band.
      double mean = 0;
      const WindowParams w = make_window(wc.spec);
      for (int i = 0; i < 1000; ++i) mean += window_value(w, (i + 0.5) / 1000) / 1000;
      EXPECT_NEAR(std::abs(r.peak_value), std::abs(sc.targets[0].amplitude) * mean,
                  0.03 * std::abs(sc.targets[0].amplitude) * mean);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Domains, PointTargetResponse, ::testing::Values(Domain::FX, Domain::TOA),
                         [](const auto &info) { return std::string(to_string(info.param)); });

TEST(PulseCompression, KaiserAndHannResponsesFollowTheirWindows) {
  std::mt19937_64 rng(cs_test::fresh_seed());
  double target_y = 0;
  const SimulatorConfig sc = one_target(Domain::FX, rng, target_y);
  PhaseHistorySimulator sim(sc);
  std::vector<std::complex<float>> samples(static_cast<size_t>(sim.samples_per_pulse()));
  sim.generate(0, 1, nullptr, samples.data());
  for (WindowKind kind : {WindowKind::Hann, WindowKind::Kaiser}) {
    PulseCompressionConfig pc;
    pc.domain = Domain::FX;
    pc.samples_per_pulse = sim.samples_per_pulse();
    pc.upsample = 16;
    pc.window.kind = kind;
    pc.window.kaiser_beta = 2.0 + 6.0 * std::uniform_real_distribution<double>(0, 1)(rng);
    pc.frequency_step_hz = sim.scss();
    CpuPulseCompressor compressor(pc);
    std::vector<std::complex<float>> profile(static_cast<size_t>(compressor.output_length()));
    compressor.compress(samples.data(), profile.data(), 1);
    const MeasuredResponse r = measure(profile);
    const TheoreticalResponse t = theory(pc.window);
    const double width_cells = r.width_bins * range_axis(pc, 0).bin_spacing_m / bandwidth_resolution_m(pc);
    EXPECT_NEAR(width_cells, t.width_3db, 0.03 * t.width_3db) << to_string(kind);
    EXPECT_NEAR(r.pslr_db, t.pslr_db, 0.5) << to_string(kind);
  }
  // Known figures: Hann -31.5 dB, 1.44 cells (Harris 1978).
  WindowSpec hann;
  hann.kind = WindowKind::Hann;
  EXPECT_NEAR(theory(hann).pslr_db, -31.5, 0.2);
  EXPECT_NEAR(theory(hann).width_3db, 1.44, 0.02);
}

TEST(PulseCompression, RejectsBadConfigurations) {
  PulseCompressionConfig pc;
  pc.domain = Domain::FX;
  pc.samples_per_pulse = 64;
  pc.frequency_step_hz = 1e6;
  pc.upsample = 17;
  EXPECT_THROW(CpuPulseCompressor{pc}, std::invalid_argument);
  pc.upsample = 2;
  pc.window.kind = WindowKind::Taylor;
  pc.window.taylor_nbar = 0;
  EXPECT_THROW(CpuPulseCompressor{pc}, std::invalid_argument);
  pc.window.kind = WindowKind::None;
  pc.domain = Domain::TOA;
  pc.sample_rate_hz = 100e6;
  pc.chirp = {1e13, 20e-6};  // 200 MHz > sample rate
  EXPECT_THROW(CpuPulseCompressor{pc}, std::invalid_argument);
}

// Blocks of several pulses give the same result as one pulse at a time, and
// odd lengths work (no power-of-two assumption).
TEST(PulseCompression, BatchingAndOddLengths) {
  std::mt19937_64 rng(cs_test::fresh_seed());
  for (Domain domain : {Domain::FX, Domain::TOA}) {
    PulseCompressionConfig pc;
    pc.domain = domain;
    pc.samples_per_pulse = 301;
    pc.upsample = 3;
    pc.window.kind = WindowKind::Hamming;
    pc.sample_rate_hz = 100e6;
    pc.chirp = {80e6 / 1e-6, 1e-6};
    pc.frequency_step_hz = 1e6;
    pc.max_pulses_per_block = 4;
    CpuPulseCompressor batched(pc);
    pc.max_pulses_per_block = 1;
    CpuPulseCompressor single(pc);
    const int64_t pulses = 11;
    const auto in = sar_test::random_complex(static_cast<size_t>(pulses * pc.samples_per_pulse), rng);
    std::vector<std::complex<float>> a(static_cast<size_t>(pulses * batched.output_length())), b(a.size());
    batched.compress(in.data(), a.data(), pulses);
    single.compress(in.data(), b.data(), pulses);
    for (size_t i = 0; i < a.size(); ++i) ASSERT_EQ(a[i], b[i]) << i;
  }
}

// A non-finite sample spoils its own pulse only (the documented treatment).
TEST(PulseCompression, NonFiniteSamplesStayInTheirPulse) {
  std::mt19937_64 rng(cs_test::fresh_seed());
  for (Domain domain : {Domain::FX, Domain::TOA}) {
    PulseCompressionConfig pc;
    pc.domain = domain;
    pc.samples_per_pulse = 256;
    pc.upsample = 2;
    pc.sample_rate_hz = 100e6;
    pc.chirp = {80e6 / 1e-6, 1e-6};
    pc.frequency_step_hz = 1e6;
    CpuPulseCompressor compressor(pc);
    auto in = sar_test::random_complex(4 * 256, rng);
    in[2 * 256 + rng() % 256] = {NAN, 0.f};
    in[3 * 256 + rng() % 256] = {0.f, INFINITY};
    std::vector<std::complex<float>> out(static_cast<size_t>(4 * compressor.output_length()));
    compressor.compress(in.data(), out.data(), 4);
    for (size_t i = 0; i < out.size(); ++i) {
      const bool spoiled_pulse = i >= static_cast<size_t>(2 * compressor.output_length());
      if (!spoiled_pulse) {
        ASSERT_TRUE(std::isfinite(out[i].real()) && std::isfinite(out[i].imag())) << i;
      }
    }
  }
}

// Random complex int16 samples (the full range) and a scale per pulse, as
// CPHD CI4 data with a varying AmpSF; and the same signal as complex float.
struct Ci16Block {
  std::vector<std::complex<int16_t>> samples;
  std::vector<float> scales;
  std::vector<std::complex<float>> as_float;
};

Ci16Block random_ci16(int64_t pulses, int64_t samples_per_pulse, std::mt19937_64 &rng) {
  Ci16Block b;
  std::uniform_int_distribution<int> value(-32767, 32767);
  std::uniform_real_distribution<float> scale(1e-6f, 1e-3f);
  for (int64_t p = 0; p < pulses; ++p) b.scales.push_back(scale(rng));
  for (int64_t i = 0; i < pulses * samples_per_pulse; ++i) {
    const std::complex<int16_t> s(static_cast<int16_t>(value(rng)), static_cast<int16_t>(value(rng)));
    const float k = b.scales[static_cast<size_t>(i / samples_per_pulse)];
    b.samples.push_back(s);
    b.as_float.emplace_back(static_cast<float>(s.real()) * k, static_cast<float>(s.imag()) * k);
  }
  return b;
}

double relative_rms(const std::vector<std::complex<float>> &got, const std::vector<std::complex<float>> &expected) {
  double err = 0, ref = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    err += std::norm(std::complex<double>(got[i]) - std::complex<double>(expected[i]));
    ref += std::norm(std::complex<double>(expected[i]));
  }
  return std::sqrt(err / ref);
}

PulseCompressionConfig small_config(Domain domain, int upsample) {
  PulseCompressionConfig pc;
  pc.domain = domain;
  pc.samples_per_pulse = 1000;
  pc.upsample = upsample;
  pc.window.kind = upsample == 2 ? WindowKind::Taylor : WindowKind::Hamming;
  pc.sample_rate_hz = 120e6;
  pc.chirp = {100e6 / 2e-6, 2e-6};
  pc.frequency_step_hz = 1.5e6;
  pc.max_pulses_per_block = 16;
  return pc;
}

// Complex int16 input with per-pulse scales compresses exactly as the same
// signal given as complex float (the conversion is exact in float).
TEST(PulseCompression, Ci16InputEqualsItsFloatSignal) {
  std::mt19937_64 rng(cs_test::fresh_seed());
  for (Domain domain : {Domain::FX, Domain::TOA}) {
    SCOPED_TRACE(to_string(domain));
    const PulseCompressionConfig pc = small_config(domain, 2);
    const int64_t pulses = 37;
    const Ci16Block in = random_ci16(pulses, pc.samples_per_pulse, rng);
    CpuPulseCompressor compressor(pc);
    std::vector<std::complex<float>> from_float(static_cast<size_t>(pulses * compressor.output_length()));
    std::vector<std::complex<float>> from_ci16(from_float.size());
    compressor.compress(in.as_float.data(), from_float.data(), pulses);
    compressor.compress(in.samples.data(), in.scales.data(), from_ci16.data(), pulses);
    for (size_t i = 0; i < from_float.size(); ++i) ASSERT_EQ(from_float[i], from_ci16[i]) << i;
    EXPECT_THROW(compressor.compress(in.samples.data(), nullptr, from_ci16.data(), pulses), std::invalid_argument);
  }
}

// Runs `compress(device_input, device_output, stream)` on a fresh device copy
// of `input` (bytes) into a poisoned (NaN) output of `out_count` samples; returns the output.
template <class Compress>
std::vector<std::complex<float>> on_device(const void *input, size_t in_bytes, size_t out_count, Compress compress) {
  cs::Stream stream(0);
  const size_t out_bytes = out_count * sizeof(std::complex<float>);
  void *d_in = cs::device_alloc(in_bytes, 0);
  auto *d_out = static_cast<std::complex<float> *>(cs::device_alloc(out_bytes, 0));
  cs::memset_async(d_out, 0xff, out_bytes, stream.get());
  cs::copy_async(d_in, input, in_bytes, stream.get());
  compress(d_in, d_out, stream.get());
  std::vector<std::complex<float>> got(out_count);
  cs::copy_async(got.data(), d_out, out_bytes, stream.get());
  stream.synchronize();
  cs::device_free(d_in, 0);
  cs::device_free(d_out, 0);
  return got;
}

TEST(GpuPulseCompression, CudaMatchesCpu) {
  CS_REQUIRE_GPU();
  std::mt19937_64 rng(cs_test::fresh_seed());
  for (Domain domain : {Domain::FX, Domain::TOA}) {
    for (int upsample : {1, 2, 16}) {
      SCOPED_TRACE(std::string(to_string(domain)) + " x" + std::to_string(upsample));
      const PulseCompressionConfig pc = small_config(domain, upsample);
      const int64_t pulses = 37;  // two full blocks and a short one
      const auto in = sar_test::random_complex(static_cast<size_t>(pulses * pc.samples_per_pulse), rng);
      CpuPulseCompressor cpu(pc);
      std::vector<std::complex<float>> expected(static_cast<size_t>(pulses * cpu.output_length()));
      cpu.compress(in.data(), expected.data(), pulses);

      CudaPulseCompressor gpu(pc, 0);
      const auto got = on_device(in.data(), in.size() * sizeof(in[0]), expected.size(),
                                 [&](void *d_in, std::complex<float> *d_out, cs::StreamHandle stream) {
                                   gpu.compress(static_cast<const std::complex<float> *>(d_in), d_out, pulses, stream);
                                 });
      // Both are single-precision FFTs of the same data; their rounding
      // differs by a few float ulps per butterfly stage: 1e-5 relative RMS.
      EXPECT_LT(relative_rms(got, expected), 1e-5);
    }
  }
}

// CI16 on the device (widened there, scales uploaded per call) equals the
// CPU's CI16 path.
TEST(GpuPulseCompression, Ci16CudaMatchesCpu) {
  CS_REQUIRE_GPU();
  std::mt19937_64 rng(cs_test::fresh_seed());
  for (Domain domain : {Domain::FX, Domain::TOA}) {
    for (int upsample : {1, 2}) {
      SCOPED_TRACE(std::string(to_string(domain)) + " x" + std::to_string(upsample));
      const PulseCompressionConfig pc = small_config(domain, upsample);
      const int64_t pulses = 37;  // two full blocks and a short one
      const Ci16Block in = random_ci16(pulses, pc.samples_per_pulse, rng);
      CpuPulseCompressor cpu(pc);
      std::vector<std::complex<float>> expected(static_cast<size_t>(pulses * cpu.output_length()));
      cpu.compress(in.samples.data(), in.scales.data(), expected.data(), pulses);

      CudaPulseCompressor gpu(pc, 0);
      // Twice, the first time with other scales: each call's scales are its own.
      const std::vector<float> other_scales(in.scales.size(), 1.0f);
      const auto got = on_device(in.samples.data(), in.samples.size() * sizeof(in.samples[0]), expected.size(),
                                 [&](void *d_in, std::complex<float> *d_out, cs::StreamHandle stream) {
                                   const auto *samples = static_cast<const std::complex<int16_t> *>(d_in);
                                   gpu.compress(samples, other_scales.data(), d_out, pulses, stream);
                                   gpu.compress(samples, in.scales.data(), d_out, pulses, stream);
                                 });
      EXPECT_LT(relative_rms(got, expected), 1e-5);
    }
  }
}
