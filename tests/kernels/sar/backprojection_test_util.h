// Helpers for the backprojection tests: collection scenarios (simulated
// point targets or random clutter, pulse-compressed by the CPU compressor),
// image comparison (signal-to-error ratio), and 1-D impulse-response
// measurements that are applied alike to image cuts and to the theory.
#pragma once

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdint>
#include <memory>
#include <random>
#include <vector>

#include "sar/backprojection.h"
#include "sar/pulse_compressor.h"
#include "sar/simulator.h"
#include "sar/window.h"

namespace bp_test {

using namespace cs::sar;

enum class Geometry { Airborne, Spaceborne };

inline const char *to_string(Geometry g) { return g == Geometry::Airborne ? "airborne" : "spaceborne"; }

// X band, 150 MHz, spotlight on the scene centre; straight-line flight.
//  Airborne:   5 km up, 8 km stand-off (9.4 km slant range), 100 m/s, PRF 200 Hz
//              (0.5 m between pulses), 300 pulses: a 150 m aperture, ~1 m
//              azimuth resolution; time-domain (TOA) chirp of 2 us.
//  Spaceborne: 600 km up, 480 km stand-off (768 km slant range), 7.5 km/s,
//              PRF 100 Hz (75 m between pulses), 160 pulses: a 12 km
//              aperture, ~1 m azimuth resolution; frequency-domain (FX) data.
inline SimulatorConfig collection(Geometry g) {
  SimulatorConfig c;
  c.center_frequency_hz = 9.6e9;
  c.bandwidth_hz = 150e6;
  c.mode = CollectionMode::Spotlight;
  if (g == Geometry::Airborne) {
    c.domain = Domain::TOA;
    c.pulse_length_s = 2e-6;
    c.sample_rate_hz = 180e6;
    c.altitude_m = 5000;
    c.standoff_m = 8000;
    c.speed_m_s = 100;
    c.prf_hz = 200;
    c.num_pulses = 300;
  } else {
    c.domain = Domain::FX;
    c.altitude_m = 600e3;
    c.standoff_m = 480e3;
    c.speed_m_s = 7500;
    c.prf_hz = 100;
    c.num_pulses = 160;
  }
  return c;
}

// A simulated collection after pulse compression.
struct CompressedCollection {
  std::unique_ptr<PhaseHistorySimulator> simulator;
  PulseCompressionConfig compression;
  std::vector<std::complex<float>> profiles;  // pulses x bins
  std::vector<BackprojectionPulse> pulses;
  int64_t bins = 0;

  RangeProfileBlock block(int64_t first = 0, int64_t count = -1) const {
    if (count < 0) count = static_cast<int64_t>(pulses.size()) - first;
    RangeProfileBlock b;
    b.samples = profiles.data() + first * bins;
    b.pulses = count;
    b.bins = bins;
    b.pulse_info = pulses.data() + first;
    b.pulse_info_count = count;
    return b;
  }
  const EnuFrame &frame() const { return simulator->frame(); }
};

// Simulates `config` (its targets), or, with `clutter_rng`, replaces the
// phase history by complex Gaussian noise (a random scene, band-limited by
// the compression like real clutter), then compresses every pulse.
inline CompressedCollection compress_collection(const SimulatorConfig &config, const WindowSpec &window, int upsample,
                                                std::mt19937_64 *clutter_rng = nullptr) {
  CompressedCollection out;
  out.simulator = std::make_unique<PhaseHistorySimulator>(config);
  const PhaseHistorySimulator &sim = *out.simulator;
  const int64_t pulses = config.num_pulses, samples = sim.samples_per_pulse();
  std::vector<std::complex<float>> history(static_cast<size_t>(pulses * samples));
  std::vector<PulseParameters> pvp(static_cast<size_t>(pulses));
  sim.generate(0, pulses, pvp.data(), history.data());
  if (clutter_rng) {
    std::normal_distribution<float> gauss(0.0f, 1.0f);
    for (auto &v : history) v = {gauss(*clutter_rng), gauss(*clutter_rng)};
  }
  PulseCompressionConfig &pc = out.compression;
  pc.domain = config.domain;
  pc.samples_per_pulse = samples;
  pc.upsample = upsample;
  pc.window = window;
  pc.sample_rate_hz = config.sample_rate_hz;
  pc.chirp = sim.chirp();
  pc.frequency_step_hz = sim.scss();
  pc.max_pulses_per_block = 64;
  CpuPulseCompressor compressor(pc);
  out.bins = compressor.output_length();
  out.profiles.resize(static_cast<size_t>(pulses * out.bins));
  compressor.compress(history.data(), out.profiles.data(), pulses);
  for (const PulseParameters &p : pvp) out.pulses.push_back(backprojection_pulse(p, pc));
  return out;
}

// 10 log10(sum |ref|^2 / sum |img - ref|^2); +inf when identical.
inline double signal_to_error_db(const std::vector<std::complex<float>> &image,
                                 const std::vector<std::complex<float>> &reference) {
  double signal = 0, error = 0;
  for (size_t i = 0; i < image.size(); ++i) {
    signal += std::norm(std::complex<double>(reference[i]));
    error += std::norm(std::complex<double>(image[i]) - std::complex<double>(reference[i]));
  }
  return 10.0 * std::log10(signal / error);
}

inline std::vector<std::complex<float>> backproject(const BackprojectionConfig &config, const RangeProfileBlock &block) {
  CpuBackprojector bp(config);
  std::vector<std::complex<float>> image(static_cast<size_t>(bp.pixels()), {NAN, NAN});
  bp.backproject(block, image.data());
  return image;
}

// ---------------------------------------------------------------- impulse responses

// Figures of a 1-D response sampled every `step` (any unit): the peak
// (interpolated), the 3 dB width, the peak sidelobe ratio beyond the first
// nulls, and the integrated sidelobe ratio (energy outside the first nulls
// over the energy between them, within the samples given).
struct ResponseFigures {
  double peak_position = 0;
  double width_3db = 0;
  double pslr_db = 0;
  double islr_db = 0;
};

inline ResponseFigures measure_response(const std::vector<double> &magnitude, double step) {
  const int64_t n = static_cast<int64_t>(magnitude.size());
  auto mag = [&](int64_t i) { return magnitude[static_cast<size_t>(std::clamp<int64_t>(i, 0, n - 1))]; };
  int64_t best = 0;
  for (int64_t i = 1; i < n; ++i)
    if (mag(i) > mag(best)) best = i;
  ResponseFigures f;
  const double a = std::log(mag(best - 1)), b = std::log(mag(best)), c = std::log(mag(best + 1));
  f.peak_position = (static_cast<double>(best) + 0.5 * (a - c) / (a - 2 * b + c)) * step;
  const double half_power = 0.5 * mag(best) * mag(best);
  auto crossing = [&](int64_t dir) {
    int64_t i = best;
    while (mag(i + dir) * mag(i + dir) > half_power) i += dir;
    const double p0 = mag(i) * mag(i), p1 = mag(i + dir) * mag(i + dir);
    return static_cast<double>(i) + static_cast<double>(dir) * (p0 - half_power) / (p0 - p1);
  };
  f.width_3db = (crossing(1) - crossing(-1)) * step;
  int64_t right = best, left = best;
  while (right + 1 < n && mag(right + 1) < mag(right)) ++right;
  while (left > 0 && mag(left - 1) < mag(left)) --left;
  double sidelobe = 0, main_energy = 0, side_energy = 0;
  for (int64_t i = 0; i < n; ++i) {
    const bool main_lobe = i > left && i < right;
    if (!main_lobe) sidelobe = std::max(sidelobe, mag(i));
    (main_lobe ? main_energy : side_energy) += mag(i) * mag(i);
  }
  f.pslr_db = 20 * std::log10(sidelobe / mag(best));
  f.islr_db = 10 * std::log10(side_energy / main_energy);
  return f;
}

// The response of a window spread over a band, h(x) = integral_0^1 w(u)
// cos(2 pi (u - 1/2) x) du with x in resolution cells, sampled like a cut:
// `half_extent` cells either side of the peak every `step` cells.
inline std::vector<double> theoretical_response(const WindowSpec &spec, double half_extent, double step) {
  const WindowParams w = make_window(spec);
  const int steps = 2000;
  std::vector<double> weights(steps);
  for (int i = 0; i < steps; ++i) weights[static_cast<size_t>(i)] = window_value(w, (i + 0.5) / steps);
  const int64_t half = static_cast<int64_t>(std::llround(half_extent / step));
  std::vector<double> out;
  for (int64_t k = -half; k <= half; ++k) {
    const double x = static_cast<double>(k) * step;
    double sum = 0;
    for (int i = 0; i < steps; ++i) sum += weights[static_cast<size_t>(i)] * std::cos(2 * M_PI * ((i + 0.5) / steps - 0.5) * x);
    out.push_back(std::fabs(sum / steps));
  }
  return out;
}

}  // namespace bp_test
