// The simulator's echo model against independent long-double evaluations of
// the documented formulas, its geometry, noise level and determinism.
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <random>

#include "sar/simulator.h"
#include "test_support.h"

using namespace cs::sar;

namespace {

using LVec = std::array<long double, 3>;
long double distance(const LVec &a, const LVec &b) {
  const long double dx = a[0] - b[0], dy = a[1] - b[1], dz = a[2] - b[2];
  return std::sqrt(dx * dx + dy * dy + dz * dz);
}

SimulatorConfig random_config(std::mt19937_64 &rng, Domain domain, CollectionMode mode) {
  std::uniform_real_distribution<double> u(0, 1);
  SimulatorConfig c;
  c.domain = domain;
  c.mode = mode;
  c.num_pulses = 64;
  c.center_frequency_hz = 9.0e9 + 1e9 * u(rng);
  c.bandwidth_hz = 50e6 + 100e6 * u(rng);
  c.pulse_length_s = 2e-6 + 3e-6 * u(rng);
  c.sample_rate_hz = 1.25 * c.bandwidth_hz;
  c.prf_hz = 500 + 500 * u(rng);
  c.altitude_m = 3000 + 2000 * u(rng);
  c.standoff_m = 5000 + 5000 * u(rng);
  c.speed_m_s = 80 + 80 * u(rng);
  c.scene_origin = {-60 + 120 * u(rng), -180 + 360 * u(rng), 500 * u(rng)};
  for (int i = 0; i < 2; ++i)
    c.targets.push_back({{-50 + 100 * u(rng), -50 + 100 * u(rng), 5 * u(rng)}, std::polar(0.5 + u(rng), 6.0 * u(rng))});
  return c;
}

// Platform and SRP per the header's description, in long double.
LVec platform(const SimulatorConfig &c, int64_t k) {
  const long double t = static_cast<long double>(k) / c.prf_hz;
  const long double centre = 0.5L * static_cast<long double>(c.num_pulses - 1) / c.prf_hz;
  return {c.speed_m_s * (t - centre), -static_cast<long double>(c.standoff_m), c.altitude_m};
}
LVec srp(const SimulatorConfig &c, int64_t k) {
  if (c.mode == CollectionMode::Spotlight) return {0, 0, 0};
  return {platform(c, k)[0], 0, 0};
}
LVec as_l(const Vec3 &v) { return {v.x, v.y, v.z}; }

}  // namespace

TEST(Simulator, DelaysAndGeometryFollowTheModel) {
  std::mt19937_64 rng(cs_test::fresh_seed());
  for (CollectionMode mode : {CollectionMode::Spotlight, CollectionMode::Stripmap}) {
    const SimulatorConfig c = random_config(rng, Domain::FX, mode);
    PhaseHistorySimulator sim(c);
    for (int64_t k : {int64_t{0}, c.num_pulses / 3, c.num_pulses - 1}) {
      const LVec p = platform(c, k), s = srp(c, k);
      for (const PointTarget &t : c.targets) {
        const long double expected = 2.0L * (distance(p, as_l(t.position)) - distance(p, s)) / kSpeedOfLight;
        EXPECT_NEAR(sim.relative_delay(k, t.position), static_cast<double>(expected), 1e-18);  // 0.3 nm
      }
      const PulseParameters v = sim.pulse_parameters(k);
      const Vec3 p_enu = sim.frame().to_enu(v.tx_pos);
      EXPECT_NEAR(p_enu.x, static_cast<double>(p[0]), 1e-6);
      EXPECT_NEAR(p_enu.y, static_cast<double>(p[1]), 1e-6);
      EXPECT_NEAR(p_enu.z, static_cast<double>(p[2]), 1e-6);
      EXPECT_EQ(v.rcv_pos, v.tx_pos);  // stop-and-hop
      EXPECT_EQ(v.tx_time, static_cast<double>(k) / c.prf_hz);
      EXPECT_NEAR(v.rcv_time - v.tx_time, static_cast<double>(2.0L * distance(p, s) / kSpeedOfLight), 1e-15);
      EXPECT_NEAR(norm(sim.frame().to_enu(v.srp_pos) - Vec3{double(s[0]), double(s[1]), double(s[2])}), 0.0, 1e-6);
      EXPECT_NEAR(norm(v.tx_vel), c.speed_m_s, 1e-9);
      EXPECT_NEAR(v.srp_delay_s(), v.rcv_time - v.tx_time, 1e-15);
    }
  }
}

TEST(Simulator, FrequencyDomainSamplesAreTheDeclaredPhaseHistory) {
  std::mt19937_64 rng(cs_test::fresh_seed());
  SimulatorConfig c = random_config(rng, Domain::FX, CollectionMode::Spotlight);
  PhaseHistorySimulator sim(c);
  const int64_t k = static_cast<int64_t>(rng() % c.num_pulses);
  std::vector<std::complex<float>> s(static_cast<size_t>(sim.samples_per_pulse()));
  PulseParameters v;
  sim.generate(k, 1, &v, s.data());
  EXPECT_NEAR(v.sc0 + 0.5 * static_cast<double>(sim.samples_per_pulse() - 1) * v.scss, c.center_frequency_hz, 1e-3);
  EXPECT_NEAR(v.scss * static_cast<double>(sim.samples_per_pulse()), c.bandwidth_hz, 1e-3);
  for (int64_t n = 0; n < sim.samples_per_pulse(); ++n) {
    std::complex<long double> expected = 0;
    const long double f = static_cast<long double>(v.sc0) + n * static_cast<long double>(v.scss);
    for (const PointTarget &t : c.targets) {
      const long double dtau =
          2.0L * (distance(platform(c, k), as_l(t.position)) - distance(platform(c, k), srp(c, k))) / kSpeedOfLight;
      const long double phase = -2.0L * M_PIl * f * dtau;
      expected += std::complex<long double>(t.amplitude.real(), t.amplitude.imag()) *
                  std::complex<long double>(std::cos(phase), std::sin(phase));
    }
    EXPECT_NEAR(s[n].real(), static_cast<double>(expected.real()), 2e-5) << n;
    EXPECT_NEAR(s[n].imag(), static_cast<double>(expected.imag()), 2e-5) << n;
  }
}

TEST(Simulator, TimeDomainSamplesAreDelayedChirps) {
  std::mt19937_64 rng(cs_test::fresh_seed());
  SimulatorConfig c = random_config(rng, Domain::TOA, CollectionMode::Spotlight);
  c.targets.resize(1);
  PhaseHistorySimulator sim(c);
  const int64_t k = static_cast<int64_t>(rng() % c.num_pulses);
  std::vector<std::complex<float>> s(static_cast<size_t>(sim.samples_per_pulse()));
  PulseParameters v;
  sim.generate(k, 1, &v, s.data());
  const PointTarget &t = c.targets[0];
  const long double dtau =
      2.0L * (distance(platform(c, k), as_l(t.position)) - distance(platform(c, k), srp(c, k))) / kSpeedOfLight;
  const long double rate = c.bandwidth_hz / c.pulse_length_s;
  int inside = 0;
  for (int64_t n = 0; n < sim.samples_per_pulse(); ++n) {
    const long double u = static_cast<long double>(v.sc0) + n * static_cast<long double>(v.scss) - dtau;
    std::complex<long double> expected = 0;
    if (std::fabs(u) <= 0.5L * c.pulse_length_s - 1e-12L) {
      const long double phase = M_PIl * rate * u * u - 2.0L * M_PIl * c.center_frequency_hz * dtau;
      expected = std::complex<long double>(t.amplitude.real(), t.amplitude.imag()) *
                 std::complex<long double>(std::cos(phase), std::sin(phase));
      ++inside;
    } else if (std::fabs(u) < 0.5L * c.pulse_length_s + 1e-12L) {
      continue;  // on the pulse edge: either is right
    }
    EXPECT_NEAR(s[n].real(), static_cast<double>(expected.real()), 2e-5) << n;
    EXPECT_NEAR(s[n].imag(), static_cast<double>(expected.imag()), 2e-5) << n;
  }
  EXPECT_NEAR(inside, c.pulse_length_s * c.sample_rate_hz, 2.0);
}

TEST(Simulator, NoiseHasTheRequestedPowerAndIsDeterministicPerPulse) {
  std::mt19937_64 rng(cs_test::fresh_seed());
  SimulatorConfig c = random_config(rng, Domain::FX, CollectionMode::Spotlight);
  c.targets.clear();
  c.snr_db = 5 + 20 * std::uniform_real_distribution<double>(0, 1)(rng);
  c.noise_seed = rng();
  c.samples_per_pulse = 512;
  PhaseHistorySimulator sim(c);
  std::vector<std::complex<float>> all(static_cast<size_t>(c.num_pulses * 512));
  sim.generate(0, c.num_pulses, nullptr, all.data());
  double power = 0;
  for (const auto &x : all) power += std::norm(x);
  power /= static_cast<double>(all.size());
  // 32768 samples: the estimate's standard error is 1/sqrt(32768) = 0.55 %.
  EXPECT_NEAR(power, std::pow(10.0, -c.snr_db / 10), 0.03 * std::pow(10.0, -c.snr_db / 10));
  std::vector<std::complex<float>> part(3 * 512);
  sim.generate(5, 3, nullptr, part.data());
  for (size_t i = 0; i < part.size(); ++i) ASSERT_EQ(part[i], all[5 * 512 + i]);
}

TEST(Simulator, StripmapBeamWeightsTargets) {
  std::mt19937_64 rng(cs_test::fresh_seed());
  SimulatorConfig c = random_config(rng, Domain::FX, CollectionMode::Stripmap);
  c.num_pulses = 2001;
  c.antenna_length_m = 2.0;
  c.targets = {{{0, 0, 0}, {1, 0}}};
  c.snr_db = INFINITY;
  PhaseHistorySimulator sim(c);
  std::vector<std::complex<float>> s(static_cast<size_t>(sim.samples_per_pulse()));
  // Abeam of the target (the middle pulse): full amplitude.
  sim.generate(c.num_pulses / 2, 1, nullptr, s.data());
  EXPECT_NEAR(std::abs(s[0]), 1.0, 1e-4);
  // Where the target sits at the beam's first null, sin(theta) = lambda / L: nothing.
  const double lambda = kSpeedOfLight / c.center_frequency_hz;
  const double slant = std::hypot(c.altitude_m, c.standoff_m);
  const double offset = slant * std::tan(std::asin(lambda / c.antenna_length_m));
  const int64_t k = c.num_pulses / 2 + static_cast<int64_t>(std::llround(offset / c.speed_m_s * c.prf_hz));
  if (k < c.num_pulses) {
    sim.generate(k, 1, nullptr, s.data());
    EXPECT_LT(std::abs(s[0]), 0.01);
  }
}

TEST(Simulator, RejectsBadConfigurations) {
  SimulatorConfig c;
  c.bandwidth_hz = -1;
  EXPECT_THROW(PhaseHistorySimulator{c}, std::invalid_argument);
  c = SimulatorConfig{};
  c.sample_rate_hz = c.bandwidth_hz / 2;
  EXPECT_THROW(PhaseHistorySimulator{c}, std::invalid_argument);
  c = SimulatorConfig{};
  c.targets = {{{NAN, 0, 0}, {1, 0}}};
  EXPECT_THROW(PhaseHistorySimulator{c}, std::invalid_argument);
  c = SimulatorConfig{};
  c.num_pulses = kMaxSimulatedPulses + 1;
  EXPECT_THROW(PhaseHistorySimulator{c}, std::invalid_argument);
}

// Pulse times stay distinct up to the last pulse the simulator makes; an
// endless stream stops there rather than repeating positions.
TEST(Simulator, PulsesUpToTheLimitHaveDistinctTimes) {
  SimulatorConfig c;
  c.num_pulses = kMaxSimulatedPulses;
  c.samples_per_pulse = 4;
  c.prf_hz = 1e6;
  const PhaseHistorySimulator collection(c);
  std::vector<PulseParameters> pvp(2);
  std::vector<std::complex<float>> samples(8);
  collection.generate(kMaxSimulatedPulses - 2, 2, pvp.data(), samples.data());
  EXPECT_GT(pvp[1].tx_time - pvp[0].tx_time, 0.999 / c.prf_hz);
  EXPECT_LT(pvp[1].tx_time - pvp[0].tx_time, 1.001 / c.prf_hz);
  c.num_pulses = 0;
  const PhaseHistorySimulator endless(c);
  EXPECT_NO_THROW(endless.generate(kMaxSimulatedPulses - 2, 2, pvp.data(), samples.data()));
  EXPECT_THROW(endless.generate(kMaxSimulatedPulses - 1, 2, pvp.data(), samples.data()), std::invalid_argument);
}

// A target so far away that its echoes' sample count is beyond any integer is
// refused, in both domains and modes, instead of wrapping to a negative count.
TEST(Simulator, RejectsTargetsTooFarToSample) {
  for (Domain domain : {Domain::TOA, Domain::FX}) {
    for (CollectionMode mode : {CollectionMode::Spotlight, CollectionMode::Stripmap}) {
      SimulatorConfig c;
      c.domain = domain;
      c.mode = mode;
      c.targets = {{{0, 1e300, 0}, {1, 0}}};
      EXPECT_THROW(PhaseHistorySimulator{c}, std::invalid_argument)
          << (domain == Domain::TOA ? "TOA" : "FX") << (mode == CollectionMode::Spotlight ? " spotlight" : " stripmap");
      c.targets = {{{0, 1e3, 0}, {1, 0}}};
      EXPECT_GT(PhaseHistorySimulator{c}.samples_per_pulse(), 0);
    }
  }
}
