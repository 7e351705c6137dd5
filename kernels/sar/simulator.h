// Point-target SAR phase-history simulator (the engine behind sarsim).
//
// Model
// -----
// * Geometry, in a local east-north-up frame (metres) whose origin is the
//   scene centre at geodetic `scene_origin`: the platform flies a straight
//   line along +x (east) at `speed_m_s`, at height `altitude_m`, displaced by
//   `standoff_m` to -y (south) of the scene line y = 0, so it looks north,
//   to its left. Pulse k is transmitted at TxTime t_k = k / PRF; the platform
//   is at x = speed * (t_k - t_centre), where t_centre is the aperture centre
//   (the middle pulse for a finite collection, t = 0 for an endless one).
// * Spotlight: the scene reference point (SRP) is the scene centre for every
//   pulse and every target is illuminated. Stripmap: the SRP is the ground
//   point abeam the platform, (x_platform, 0, 0), and a target's echo is
//   weighted by the two-way pattern of a uniform aperture of length
//   `antenna_length_m`, sinc^2(L sin(theta) / lambda), theta the angle off
//   broadside.
// * Stop-and-hop: the antenna does not move while a pulse is in flight.
//   TxPos = RcvPos = platform position at t_k; RcvTime = t_k + (SRP delay).
//   A target at X has the exact two-way delay tau = 2 |P - X| / c, computed in
//   double precision; its delay relative to the SRP, dtau = tau - tau_srp, is
//   formed without cancellation as 2 (|P-X|^2 - |P-S|^2) / (c (|P-X| + |P-S|)).
// * Signals are compensated to the SRP (CPHD's convention): time and phase are
//   relative to the SRP echo, as if the receiver's LO and sampling window
//   tracked the SRP delay.
//     TOA domain (raw fast-time samples of the linear-FM chirp):
//       x(t) = sum_targets a * g * exp(-j 2 pi fc dtau) * p(t - dtau),
//       p(t) = exp(j pi K t^2) for |t| <= T/2 (centred on the echo delay),
//       sampled at t_n = SC0 + n / fs, SC0 = -(N/2) / fs.
//     FX domain (deramped, frequency samples f_n = SC0 + n * SCSS, centred on fc):
//       S(f_n) = sum_targets a * g * exp(-j 2 pi f_n dtau)       (SGN = -1).
// * Receiver noise: circular complex Gaussian added per sample with variance
//   10^(-snr_db / 10), i.e. `snr_db` is the per-sample SNR of a unit-amplitude
//   target (infinite SNR: no noise).
// Positions written to PulseParameters are ECF (CPHD's frame).
#pragma once

#include <complex>
#include <cstdint>
#include <limits>
#include <vector>

#include "sar/cphd.h"
#include "sar/geodesy.h"
#include "sar/types.h"

namespace cs::sar {

enum class CollectionMode { Spotlight, Stripmap };

struct PointTarget {
  Vec3 position;                     // local east-north-up metres from the scene centre
  std::complex<double> amplitude{1, 0};
};

// Pulse times are index / PRF in double precision: up to 2^40 pulses (35
// years at 1 kHz) a time is within 2^-12 of a pulse interval, so positions
// are within 2^-12 of the along-track spacing; far beyond, consecutive pulses
// would share a time and a position. Collections and endless streams stop
// there.
inline constexpr int64_t kMaxSimulatedPulses = int64_t(1) << 40;

struct SimulatorConfig {
  double center_frequency_hz = 9.6e9;  // X band
  double bandwidth_hz = 150e6;
  double pulse_length_s = 10e-6;
  double sample_rate_hz = 180e6;  // TOA: complex sample rate
  double prf_hz = 1000;
  double altitude_m = 5000;
  double speed_m_s = 100;
  double standoff_m = 8000;  // ground distance from the flight line to the scene line
  double antenna_length_m = 1.0;  // stripmap beam
  CollectionMode mode = CollectionMode::Spotlight;
  Domain domain = Domain::TOA;
  int64_t num_pulses = 1024;  // 0: endless; at most kMaxSimulatedPulses
  // Samples per pulse; 0 derives them from the targets' extent: enough fast
  // time (TOA) or a fine enough frequency step (FX) for every echo.
  int64_t samples_per_pulse = 0;
  double snr_db = std::numeric_limits<double>::infinity();
  std::vector<PointTarget> targets;
  Llh scene_origin{45.0, 0.0, 0.0};  // arbitrary geodetic anchor of the local frame
  uint64_t noise_seed = 1;
};

class PhaseHistorySimulator {
 public:
  explicit PhaseHistorySimulator(const SimulatorConfig &config);

  const SimulatorConfig &config() const { return config_; }
  const EnuFrame &frame() const { return frame_; }
  int64_t samples_per_pulse() const { return samples_; }
  Chirp chirp() const;
  // SC0 and SCSS of every pulse (seconds for TOA, Hz for FX).
  double sc0() const { return sc0_; }
  double scss() const { return scss_; }
  // Delay of a target's echo relative to the SRP's for pulse `index` (seconds).
  double relative_delay(int64_t index, const Vec3 &target_enu) const;

  PulseParameters pulse_parameters(int64_t index) const;
  // Pulses [first, first + count): parameters and samples (count x samples_per_pulse).
  // Noise for pulse k depends only on (noise_seed, k), so blocks can be made in any order.
  void generate(int64_t first, int64_t count, PulseParameters *pvp, std::complex<float> *samples) const;

  // CPHD metadata describing this collection (for recording with CphdWriter).
  CphdMetadata cphd_metadata(int64_t num_vectors) const;

 private:
  Vec3 platform_enu(double t) const;
  Vec3 srp_enu(double t) const;
  double tx_time(int64_t index) const { return static_cast<double>(index) / config_.prf_hz; }
  double two_way_gain(const Vec3 &platform, const Vec3 &target) const;

  SimulatorConfig config_;
  EnuFrame frame_;
  int64_t samples_ = 0;
  double sc0_ = 0, scss_ = 0;
  double centre_time_ = 0;
};

}  // namespace cs::sar
