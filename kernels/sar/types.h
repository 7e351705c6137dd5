// Basic SAR types shared by CPHD I/O, the simulator and pulse compression.
// Names follow NGA CPHD 1.0/1.1 so that a reader of the spec finds them.
#pragma once

#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>

namespace cs::sar {

constexpr double kSpeedOfLight = 299792458.0;  // m/s, exact by definition

struct Vec3 {
  double x = 0, y = 0, z = 0;
};
inline Vec3 operator+(Vec3 a, Vec3 b) { return {a.x + b.x, a.y + b.y, a.z + b.z}; }
inline Vec3 operator-(Vec3 a, Vec3 b) { return {a.x - b.x, a.y - b.y, a.z - b.z}; }
inline Vec3 operator*(double s, Vec3 a) { return {s * a.x, s * a.y, s * a.z}; }
inline double dot(Vec3 a, Vec3 b) { return a.x * b.x + a.y * b.y + a.z * b.z; }
inline Vec3 cross(Vec3 a, Vec3 b) {
  return {a.y * b.z - a.z * b.y, a.z * b.x - a.x * b.z, a.x * b.y - a.y * b.x};
}
inline double norm(Vec3 a) { return std::sqrt(dot(a, a)); }
inline Vec3 unit(Vec3 a) { return (1.0 / norm(a)) * a; }
inline bool operator==(Vec3 a, Vec3 b) { return a.x == b.x && a.y == b.y && a.z == b.z; }

// What a signal vector's samples are indexed by (CPHD Global/DomainType).
//  FX:  frequency samples, SC0 + n * SCSS in Hz (deramped / frequency-domain data).
//  TOA: fast-time samples, SC0 + n * SCSS in seconds relative to the scene
//       reference point's time of arrival.
enum class Domain { FX, TOA };

// Sample formats of a CPHD signal array (Data/SignalArrayFormat): complex
// pairs of float32 (CF8), int16 (CI4) or int8 (CI2), big-endian in the file.
enum class SampleFormat { CF8, CI4, CI2 };

inline size_t bytes_per_sample(SampleFormat f) {
  switch (f) {
    case SampleFormat::CF8: return 8;
    case SampleFormat::CI4: return 4;
    case SampleFormat::CI2: return 2;
  }
  return 0;
}
const char *to_string(SampleFormat f);
const char *to_string(Domain d);

// Linear-FM chirp p(t) = exp(j*pi*rate*t^2), |t| <= duration/2, centred on
// its delay: a point echo with delay tau is p(t - tau).
struct Chirp {
  double rate_hz_per_s = 0;  // signed: up-chirp > 0
  double duration_s = 0;
  double bandwidth_hz() const { return std::fabs(rate_hz_per_s) * duration_s; }
};

// Per-vector parameters of one pulse (CPHD PVP). Times in seconds from the
// collection start, positions/velocities in ECF metres (m/s), frequencies in
// Hz. Optional parameters keep their default when a file lacks them.
struct PulseParameters {
  double tx_time = 0;
  Vec3 tx_pos, tx_vel;
  double rcv_time = 0;
  Vec3 rcv_pos, rcv_vel;
  Vec3 srp_pos;
  double amp_sf = 1.0;  // optional: sample scale factor
  double a_fdop = 0, a_frr1 = 0, a_frr2 = 0;
  double fx1 = 0, fx2 = 0;
  double fxn1 = 0, fxn2 = 0;  // optional
  double toa1 = 0, toa2 = 0;
  double toae1 = 0, toae2 = 0;  // optional
  double td_tropo_srp = 0;
  double td_iono_srp = 0;  // optional
  double sc0 = 0, scss = 0;
  int64_t signal = 1;  // optional: 0 = this vector holds no valid signal
  // CPHD 1.1 antenna pointing (optional, nested under TxAntenna/RcvAntenna).
  Vec3 tx_acx, tx_acy, rcv_acx, rcv_acy;
  std::array<double, 2> tx_eb{0, 0}, rcv_eb{0, 0};  // DCX, DCY

  // Two-way delay from the antenna phase centres to the scene reference point.
  double srp_delay_s() const {
    return (norm(tx_pos - srp_pos) + norm(rcv_pos - srp_pos)) / kSpeedOfLight;
  }
};

}  // namespace cs::sar
