#include "sar/simulator.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <stdexcept>
#include <string>

namespace cs::sar {

namespace {

double sinc(double u) { return u == 0.0 ? 1.0 : std::sin(M_PI * u) / (M_PI * u); }

void require(bool ok, const std::string &what) {
  if (!ok) throw std::invalid_argument("simulator: " + what);
}

// A sample count: `v` rounded up to even. Counts beyond int64 (a target
// absurdly far from the scene centre) are refused: converting them is
// undefined, and gave negative counts that later sized buffers.
int64_t round_up_even(double v) {
  require(v >= 0 && v < 0x1p62, "the echoes would need more samples per pulse than can be counted (is a target "
                                "too far from the scene centre?)");
  const int64_t n = static_cast<int64_t>(std::ceil(v));
  return n + (n & 1);
}

}  // namespace

PhaseHistorySimulator::PhaseHistorySimulator(const SimulatorConfig &config)
    : config_(config), frame_(config.scene_origin) {
  const SimulatorConfig &c = config_;
  require(c.center_frequency_hz > 0 && std::isfinite(c.center_frequency_hz), "centre frequency must be positive");
  require(c.bandwidth_hz > 0 && c.bandwidth_hz < 2 * c.center_frequency_hz, "bandwidth must be in (0, 2 fc)");
  require(c.pulse_length_s > 0, "pulse length must be positive");
  require(c.prf_hz > 0, "PRF must be positive");
  require(c.num_pulses >= 0, "number of pulses must be >= 0");
  require(c.num_pulses <= kMaxSimulatedPulses, "at most 2^40 pulses (" + std::to_string(kMaxSimulatedPulses) +
                                                   "): beyond, pulse times lose the precision that tells pulses apart");
  require(c.samples_per_pulse >= 0, "samples per pulse must be >= 0");
  require(c.standoff_m > 0 || c.altitude_m > 0, "the platform must not fly over the scene centre");
  if (c.domain == Domain::TOA)
    require(c.sample_rate_hz >= c.bandwidth_hz, "the sample rate must be at least the bandwidth (complex sampling)");
  for (const PointTarget &t : c.targets)
    require(std::isfinite(t.position.x) && std::isfinite(t.position.y) && std::isfinite(t.position.z) &&
                std::isfinite(t.amplitude.real()) && std::isfinite(t.amplitude.imag()),
            "target positions and amplitudes must be finite");

  centre_time_ = c.num_pulses > 0 ? 0.5 * static_cast<double>(c.num_pulses - 1) / c.prf_hz : 0.0;

  // Largest |range - SRP range| any echo can have, to size the sampling.
  double max_offset = 1.0;
  const double slant = std::hypot(c.altitude_m, c.standoff_m);
  const double wavelength = kSpeedOfLight / c.center_frequency_hz;
  for (const PointTarget &t : c.targets) {
    if (c.mode == CollectionMode::Spotlight) {
      max_offset = std::max(max_offset, norm(t.position) + 1.0);
    } else {
      const double beam = std::min(wavelength / c.antenna_length_m, 1.0);
      const double migration = slant * (1.0 / std::cos(beam) - 1.0);
      max_offset = std::max(max_offset, std::fabs(t.position.y) + std::fabs(t.position.z) + migration + 1.0);
    }
  }
  if (c.domain == Domain::TOA) {
    samples_ = c.samples_per_pulse > 0
                   ? c.samples_per_pulse
                   : round_up_even((c.pulse_length_s + 4.0 * max_offset / kSpeedOfLight) * c.sample_rate_hz) + 16;
    scss_ = 1.0 / c.sample_rate_hz;
    sc0_ = -0.5 * static_cast<double>(samples_) * scss_;
  } else {
    // The compressed profile spans c / (2 df); keep it three times the echo spread.
    samples_ = c.samples_per_pulse > 0
                   ? c.samples_per_pulse
                   : std::max<int64_t>(64, round_up_even(c.bandwidth_hz * 6.0 * max_offset / kSpeedOfLight));
    scss_ = c.bandwidth_hz / static_cast<double>(samples_);
    sc0_ = c.center_frequency_hz - 0.5 * static_cast<double>(samples_ - 1) * scss_;
  }
}

Chirp PhaseHistorySimulator::chirp() const {
  return {config_.bandwidth_hz / config_.pulse_length_s, config_.pulse_length_s};
}

Vec3 PhaseHistorySimulator::platform_enu(double t) const {
  return {config_.speed_m_s * (t - centre_time_), -config_.standoff_m, config_.altitude_m};
}

Vec3 PhaseHistorySimulator::srp_enu(double t) const {
  if (config_.mode == CollectionMode::Spotlight) return {0, 0, 0};
  return {platform_enu(t).x, 0, 0};
}

double PhaseHistorySimulator::two_way_gain(const Vec3 &platform, const Vec3 &target) const {
  if (config_.mode == CollectionMode::Spotlight) return 1.0;
  const double wavelength = kSpeedOfLight / config_.center_frequency_hz;
  const double sin_off_broadside = (target.x - platform.x) / norm(target - platform);
  const double one_way = sinc(config_.antenna_length_m * sin_off_broadside / wavelength);
  return one_way * one_way;
}

// 2 (|P-X| - |P-S|) / c without cancellation.
static double delay_difference(const Vec3 &p, const Vec3 &x, const Vec3 &s) {
  const Vec3 px = p - x, ps = p - s;
  const double rx = norm(px), rs = norm(ps);
  const double diff_of_squares = dot(s - x, px + ps);  // |px|^2 - |ps|^2
  return 2.0 * diff_of_squares / ((rx + rs) * kSpeedOfLight);
}

double PhaseHistorySimulator::relative_delay(int64_t index, const Vec3 &target) const {
  const double t = tx_time(index);
  return delay_difference(platform_enu(t), target, srp_enu(t));
}

PulseParameters PhaseHistorySimulator::pulse_parameters(int64_t index) const {
  const SimulatorConfig &c = config_;
  const double t = tx_time(index);
  const Vec3 p = platform_enu(t), s = srp_enu(t);
  const Vec3 velocity{c.speed_m_s, 0, 0};
  PulseParameters v;
  v.tx_time = t;
  v.tx_pos = frame_.to_ecf(p);
  v.tx_vel = frame_.direction_to_ecf(velocity);
  v.rcv_time = t + 2.0 * norm(p - s) / kSpeedOfLight;
  v.rcv_pos = v.tx_pos;  // stop-and-hop
  v.rcv_vel = v.tx_vel;
  v.srp_pos = frame_.to_ecf(s);
  const double range_rate = dot(velocity, unit(p - s));
  v.a_fdop = -2.0 * range_rate / kSpeedOfLight;
  v.fx1 = c.center_frequency_hz - 0.5 * c.bandwidth_hz;
  v.fx2 = c.center_frequency_hz + 0.5 * c.bandwidth_hz;
  v.sc0 = sc0_;
  v.scss = scss_;
  if (c.domain == Domain::TOA) {
    const double rate = chirp().rate_hz_per_s;
    v.a_frr1 = 2.0 * c.center_frequency_hz / (kSpeedOfLight * rate);
    v.a_frr2 = 2.0 / (kSpeedOfLight * rate);
    v.toa1 = sc0_;
    v.toa2 = sc0_ + static_cast<double>(samples_ - 1) * scss_;
  } else {
    v.toa1 = -0.5 / scss_;  // the unambiguous delay extent of the frequency sampling
    v.toa2 = 0.5 / scss_;
  }
  return v;
}

void PhaseHistorySimulator::generate(int64_t first, int64_t count, PulseParameters *pvp,
                                     std::complex<float> *samples) const {
  const SimulatorConfig &c = config_;
  require(first >= 0 && count >= 0, "pulse range must be non-negative");
  if (c.num_pulses > 0) require(first + count <= c.num_pulses, "pulse range past the end of the collection");
  require(first <= kMaxSimulatedPulses - count, "pulses past index 2^40 (" + std::to_string(kMaxSimulatedPulses) +
                                                    "): their times lose the precision that tells pulses apart");
  const double noise_sigma = std::isfinite(c.snr_db) ? std::sqrt(0.5 * std::pow(10.0, -c.snr_db / 10.0)) : 0.0;
  const double rate = chirp().rate_hz_per_s;
  const double half_pulse = 0.5 * c.pulse_length_s;
  std::vector<std::complex<double>> row(static_cast<size_t>(samples_));

  for (int64_t k = 0; k < count; ++k) {
    const int64_t index = first + k;
    if (pvp) pvp[k] = pulse_parameters(index);
    const double t = tx_time(index);
    const Vec3 p = platform_enu(t), s = srp_enu(t);
    std::fill(row.begin(), row.end(), std::complex<double>(0, 0));
    for (const PointTarget &target : c.targets) {
      const double dtau = delay_difference(p, target.position, s);
      const std::complex<double> a = target.amplitude * two_way_gain(p, target.position);
      if (c.domain == Domain::TOA) {
        const double carrier_phase = -2.0 * M_PI * c.center_frequency_hz * dtau;
        // Only the samples inside the echo's pulse.
        const int64_t n0 = std::max<int64_t>(0, static_cast<int64_t>(std::ceil((dtau - half_pulse - sc0_) / scss_)));
        const int64_t n1 =
            std::min<int64_t>(samples_ - 1, static_cast<int64_t>(std::floor((dtau + half_pulse - sc0_) / scss_)));
        for (int64_t n = n0; n <= n1; ++n) {
          const double u = sc0_ + static_cast<double>(n) * scss_ - dtau;
          row[static_cast<size_t>(n)] += a * std::polar(1.0, M_PI * rate * u * u + carrier_phase);
        }
      } else {
        for (int64_t n = 0; n < samples_; ++n) {
          const double f = sc0_ + static_cast<double>(n) * scss_;
          row[static_cast<size_t>(n)] += a * std::polar(1.0, -2.0 * M_PI * std::fmod(f * dtau, 1.0));
        }
      }
    }
    std::complex<float> *out = samples + k * samples_;
    if (noise_sigma > 0) {
      // Noise depends only on (seed, pulse index): blocks can be generated in any order.
      std::seed_seq seq{static_cast<uint32_t>(c.noise_seed), static_cast<uint32_t>(c.noise_seed >> 32),
                        static_cast<uint32_t>(index), static_cast<uint32_t>(static_cast<uint64_t>(index) >> 32)};
      std::mt19937_64 rng(seq);
      std::normal_distribution<double> gauss(0.0, noise_sigma);
      for (int64_t n = 0; n < samples_; ++n) {
        const double re = gauss(rng), im = gauss(rng);
        row[static_cast<size_t>(n)] += std::complex<double>(re, im);
      }
    }
    for (int64_t n = 0; n < samples_; ++n) out[n] = std::complex<float>(row[static_cast<size_t>(n)]);
  }
}

CphdMetadata PhaseHistorySimulator::cphd_metadata(int64_t num_vectors) const {
  const SimulatorConfig &c = config_;
  CphdMetadata m;
  m.core_name = "SARSIM";
  m.radar_mode = c.mode == CollectionMode::Spotlight ? RadarMode::Spotlight : RadarMode::Stripmap;
  m.domain = c.domain;
  m.sgn = -1;
  m.format = SampleFormat::CF8;
  m.pvp = PvpLayout::packed();
  CphdChannel channel;
  channel.identifier = "1";
  channel.num_vectors = num_vectors;
  channel.num_samples = samples_;
  channel.ref_vector_index = num_vectors / 2;
  m.channels.push_back(channel);
  if (c.domain == Domain::TOA) {
    CphdWaveform w;
    w.pulse_length_s = c.pulse_length_s;
    w.rf_bandwidth_hz = c.bandwidth_hz;
    w.freq_center_hz = c.center_frequency_hz;
    w.lfm_rate_hz_per_s = chirp().rate_hz_per_s;
    w.rcv_window_length_s = static_cast<double>(samples_) / c.sample_rate_hz;
    w.sample_rate_hz = c.sample_rate_hz;
    w.if_filter_bw_hz = c.sample_rate_hz;
    m.waveform = w;
  }
  m.scene.iarp_ecf = frame_.origin_ecf();
  m.scene.uiax = frame_.east();
  m.scene.uiay = frame_.north();
  double extent = 50.0;
  for (const PointTarget &t : c.targets)
    extent = std::max(extent, std::max(std::fabs(t.position.x), std::fabs(t.position.y)) + 10.0);
  m.scene.x1 = m.scene.y1 = -extent;
  m.scene.x2 = m.scene.y2 = extent;
  return m;
}

}  // namespace cs::sar
