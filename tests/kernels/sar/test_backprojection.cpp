// Backprojection: the double mode against a direct long-double evaluation of
// the model; point targets from the simulator, compressed by the CPU pulse
// compressor, focus at their true positions with the impulse response the
// range window and the aperture predict (airborne and spaceborne); the fast
// and mixed modes against the fp64 reference on random clutter; incremental
// (video-SAR) frames against recomputation; bad input; and (suites Gpu*, skipped
// without a device) the CUDA path against the CPU path of the same mode.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "backprojection_test_util.h"
#include "common/cuda_runtime.h"
#include "sar/backprojection.h"
#include "sar/geodesy.h"
#include "sar_test_util.h"
#include "test_support.h"

using namespace cs::sar;
using namespace bp_test;

namespace {

// Issue 4's precision targets, against the fp64 CPU reference.
constexpr double kFastSerTargetDb = 90.0;
constexpr double kMixedSerTargetDb = 100.0;

double uniform(std::mt19937_64 &rng, double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(rng); }

// A grid of `width` x `height` pixels around the scene centre of `frame`,
// shifted by up to `shift_m` and turned by a random angle in the ground plane.
ImageGrid random_ground_grid(const EnuFrame &frame, int64_t width, int64_t height, double spacing_m, double shift_m,
                             std::mt19937_64 &rng) {
  const double angle = uniform(rng, -M_PI, M_PI);
  ImageGrid g;
  g.width = width;
  g.height = height;
  g.spacing_x_m = spacing_m;
  g.spacing_y_m = spacing_m * uniform(rng, 0.8, 1.25);
  g.centre = frame.to_ecf({uniform(rng, -shift_m, shift_m), uniform(rng, -shift_m, shift_m), 0.0});
  g.axis_x = std::cos(angle) * frame.east() + std::sin(angle) * frame.north();
  g.axis_y = -std::sin(angle) * frame.east() + std::cos(angle) * frame.north();
  return g;
}

// The phase history of random clutter over a scene of about +-50 m, compressed
// (Hamming, 4x upsampling): band-limited random profiles like a real scene's.
CompressedCollection clutter_collection(Geometry geometry, std::mt19937_64 &rng) {
  SimulatorConfig sc = collection(geometry);
  sc.samples_per_pulse = geometry == Geometry::Airborne ? 512 : 128;  // profiles span ~ +-200 m / +-64 m
  WindowSpec hamming;
  hamming.kind = WindowKind::Hamming;
  return compress_collection(sc, hamming, 4, &rng);
}

// Every pulse made bistatic: the receive antenna is where the platform is
// when the scene centre's echo returns (not stop-and-hop).
void make_bistatic(CompressedCollection &cc, double speed_m_s) {
  const Vec3 velocity = speed_m_s * cc.frame().east();
  for (BackprojectionPulse &p : cc.pulses) p.rcv_pos = p.tx_pos + (2.0 * norm(p.tx_pos - p.srp_pos) / kSpeedOfLight) * velocity;
}

bool all_finite(const std::vector<std::complex<float>> &v) {
  for (const auto &x : v)
    if (!std::isfinite(x.real()) || !std::isfinite(x.imag())) return false;
  return true;
}

// ------------------------------------------------------------ a direct evaluation

using Ld = long double;
using Cld = std::complex<long double>;

struct LdVec {
  Ld x, y, z;
};
LdVec ld(const Vec3 &v) { return {v.x, v.y, v.z}; }
Ld distance(LdVec a, LdVec b) { return std::sqrt((a.x - b.x) * (a.x - b.x) + (a.y - b.y) * (a.y - b.y) + (a.z - b.z) * (a.z - b.z)); }

// The model of backprojection_math.h, written plainly in long double.
Cld direct_pixel(const BackprojectionConfig &c, const RangeProfileBlock &b, int64_t column, int64_t row) {
  const ImageGrid &g = c.grid;
  const Ld u = static_cast<Ld>(column - g.width / 2) * g.spacing_x_m, v = static_cast<Ld>(row - g.height / 2) * g.spacing_y_m;
  const LdVec x = {g.centre.x + u * g.axis_x.x + v * g.axis_y.x, g.centre.y + u * g.axis_x.y + v * g.axis_y.y,
                   g.centre.z + u * g.axis_x.z + v * g.axis_y.z};
  Cld sum = 0;
  for (int64_t k = 0; k < b.pulses; ++k) {
    const BackprojectionPulse &p = b.pulse_info[k];
    const LdVec t = ld(p.tx_pos), r = ld(p.rcv_pos), s = ld(p.srp_pos);
    const Ld dr = 0.5L * (distance(t, x) + distance(r, x)) - 0.5L * (distance(t, s) + distance(r, s));
    const Ld position = (dr - p.axis.first_bin_m) / p.axis.bin_spacing_m;
    auto sample = [&](int64_t m) -> Cld {
      if (m < 0 || m >= b.bins) return 0;
      return Cld(b.samples[k * b.bins + m]);
    };
    const int64_t whole = static_cast<int64_t>(std::floor(position));
    const Ld f = position - static_cast<Ld>(whole);
    Cld value = 0;
    if (c.interpolation == Interpolation::Nearest) {
      value = sample(f >= 0.5L ? whole + 1 : whole);
    } else if (c.interpolation == Interpolation::Linear) {
      value = (1 - f) * sample(whole) + f * sample(whole + 1);
    } else {
      const int n_taps = c.knab_taps;
      const Ld beta = M_PIl * (1 - 1 / static_cast<Ld>(c.knab_oversampling)) * n_taps / 2;
      for (int n = 1 - n_taps / 2; n <= n_taps / 2; ++n) {
        const Ld xi = f - n;
        const Ld sinc = xi == 0 ? 1 : std::sin(M_PIl * xi) / (M_PIl * xi);
        const Ld w = std::cosh(beta * std::sqrt(std::max<Ld>(0, 1 - (2 * xi / n_taps) * (2 * xi / n_taps)))) / std::cosh(beta);
        value += sample(whole + n) * (sinc * w);
      }
    }
    const Ld turns = -c.sgn * 2 * p.centre_frequency_hz * dr / kSpeedOfLight;
    sum += value * std::polar<Ld>(1, 2 * M_PIl * (turns - std::round(turns)));
  }
  return sum;
}

}  // namespace

// ------------------------------------------------------------ the model

TEST(Backprojection, DoubleModeMatchesADirectEvaluationOfTheModel) {
  std::mt19937_64 rng(cs_test::fresh_seed());
  for (bool bistatic : {false, true}) {
    const EnuFrame frame(Llh{uniform(rng, -60, 60), uniform(rng, -180, 180), uniform(rng, 0, 500)});
    BackprojectionConfig c;
    c.grid = random_ground_grid(frame, 37, 29, uniform(rng, 0.2, 1.0), 5.0, rng);
    c.precision = Precision::Double;
    c.sgn = (rng() & 1) ? 1 : -1;
    c.knab_taps = 2 * static_cast<int>(1 + rng() % 8);
    c.knab_oversampling = uniform(rng, 1.0, 4.0);
    const int64_t pulses = 40, bins = 2048;
    std::vector<BackprojectionPulse> info(pulses);
    const double spacing = uniform(rng, 0.05, 0.2);
    for (BackprojectionPulse &p : info) {
      p.tx_pos = frame.to_ecf({uniform(rng, -500, 500), uniform(rng, -9000, -7000), uniform(rng, 3000, 6000)});
      p.rcv_pos = bistatic ? p.tx_pos + Vec3{uniform(rng, -50, 50), uniform(rng, -50, 50), uniform(rng, -50, 50)}
                           : p.tx_pos;
      p.srp_pos = frame.to_ecf({uniform(rng, -3, 3), uniform(rng, -3, 3), 0});
      p.axis = {-0.5 * bins * spacing + uniform(rng, -1, 1), spacing};
      p.centre_frequency_hz = uniform(rng, 1e9, 10e9);
    }
    const auto samples = sar_test::random_complex(static_cast<size_t>(pulses * bins), rng);
    RangeProfileBlock b{samples.data(), pulses, bins, info.data(), pulses};
    for (Interpolation interpolation : {Interpolation::Nearest, Interpolation::Linear, Interpolation::Knab}) {
      SCOPED_TRACE(std::string(to_string(interpolation)) + (bistatic ? " bistatic" : " monostatic"));
      c.interpolation = interpolation;
      const auto image = backproject(c, b);
      double rms = 0;
      for (const auto &v : image) rms += std::norm(std::complex<double>(v));
      rms = std::sqrt(rms / static_cast<double>(image.size()));
      for (int i = 0; i < 25; ++i) {
        const int64_t column = static_cast<int64_t>(rng() % c.grid.width), row = static_cast<int64_t>(rng() % c.grid.height);
        const Cld expected = direct_pixel(c, b, column, row);
        const std::complex<double> got = image[static_cast<size_t>(row * c.grid.width + column)];
        // The image is float: one rounding of each part (6e-8 relative) plus
        // the double sums; 1e-6 of the image's RMS leaves room for both.
        EXPECT_LT(std::abs(std::complex<double>(static_cast<double>(expected.real()), static_cast<double>(expected.imag())) - got),
                  1e-6 * rms)
            << "pixel (" << column << ", " << row << ")";
      }
    }
  }
}

// The double mode's phasor (polynomials on an eighth of a turn, then whole
// quarter turns) against long double sine and cosine, from a millionth of a
// turn to 10^5 turns, a quarter of the draws within 1e-9 of an eighth-turn
// boundary (where the reduction changes quarter).
TEST(Backprojection, DoublePhasorIsAccurateToAFewUnitsInTheLastPlace) {
  std::mt19937_64 rng(cs_test::fresh_seed());
  constexpr long double kTwoPi = 6.283185307179586476925286766559005768L;
  double worst = 0;
  for (int i = 0; i < 200000; ++i) {
    double t = uniform(rng, -1.0, 1.0) * std::pow(10.0, uniform(rng, -6.0, 5.0));
    if (i % 4 == 0) t = std::nearbyint(t * 8) / 8 + uniform(rng, -1e-9, 1e-9);
    const Complex<double> phasor = phasor_of_any_turns(t);
    const long double angle = kTwoPi * static_cast<long double>(t - std::rint(t));  // t - rint(t) is exact
    worst = std::max({worst, static_cast<double>(std::fabs(phasor.re - std::cos(angle))),
                      static_cast<double>(std::fabs(phasor.im - std::sin(angle)))});
  }
  std::printf("[ measured ] double phasor: largest error %.3g\n", worst);
  EXPECT_LT(worst, 3e-16);
}

// ------------------------------------------------------------ point targets

class PointTargets : public ::testing::TestWithParam<Geometry> {};

// Three targets across a 256 x 256 scene of 0.25 m pixels, each a little off
// its nominal spot (fresh random), with random amplitudes. On the image: the
// peak within 0.1 pixel of the target. Through each target, cuts along its
// ground range and azimuth (16 samples per resolution cell, +-8 cells, formed
// by the same backprojector on 1-pixel-high grids, from the target alone): 3 dB width within 3% and
// PSLR and ISLR within 0.5 dB of the theory (range: the compression window,
// ground-projected; azimuth: the uniformly weighted aperture, a sinc).
TEST_P(PointTargets, FocusWhereTheTargetsAreWithTheTheoreticalResponse) {
  const Geometry geometry = GetParam();
  std::mt19937_64 rng(cs_test::fresh_seed());
  SimulatorConfig sc = collection(geometry);
  for (Vec3 nominal : {Vec3{0, 0, 0}, Vec3{-20, 15, 0}, Vec3{20, -15, 0}}) {
    const Vec3 position = nominal + Vec3{uniform(rng, -0.5, 0.5), uniform(rng, -0.5, 0.5), 0};
    sc.targets.push_back({position, std::polar(uniform(rng, 1, 2), uniform(rng, -M_PI, M_PI))});
  }
  WindowSpec range_window;
  BackprojectionConfig c;
  c.precision = Precision::Mixed;
  int upsample = 16;
  if (geometry == Geometry::Airborne) {
    range_window.kind = WindowKind::Taylor;  // nbar 4, -35 dB
    c.interpolation = Interpolation::Linear;
  } else {
    range_window.kind = WindowKind::Hamming;
    c.interpolation = Interpolation::Knab;
    upsample = 4;
  }
  const CompressedCollection cc = compress_collection(sc, range_window, upsample);
  c.knab_oversampling = profile_oversampling(cc.compression);
  c.grid = north_up_ground_grid(cc.frame().origin_ecf(), 256, 256, 0.25);
  const auto image = backproject(c, cc.block());
  auto magnitude = [&](int64_t column, int64_t row) {
    return std::abs(image[static_cast<size_t>(row * c.grid.width + column)]);
  };

  const int64_t pulses = static_cast<int64_t>(cc.pulses.size());
  const Vec3 up = cc.frame().up();
  for (const PointTarget &t : sc.targets) {
    SCOPED_TRACE("target at (" + std::to_string(t.position.x) + ", " + std::to_string(t.position.y) + ") m");
    // Peak on the image: the largest pixel near the target, refined by a
    // parabola through the log magnitudes in each direction.
    const double expected_column = c.grid.width / 2 + t.position.x / c.grid.spacing_x_m;
    const double expected_row = c.grid.height / 2 - t.position.y / c.grid.spacing_y_m;
    int64_t best_column = 0, best_row = 0;
    double best = -1;
    for (int64_t r = std::llround(expected_row) - 4; r <= std::llround(expected_row) + 4; ++r)
      for (int64_t col = std::llround(expected_column) - 4; col <= std::llround(expected_column) + 4; ++col)
        if (magnitude(col, r) > best) best = magnitude(col, r), best_column = col, best_row = r;
    auto refine = [](double a, double b, double c2) {
      const double la = std::log(a), lb = std::log(b), lc = std::log(c2);
      return 0.5 * (la - lc) / (la - 2 * lb + lc);
    };
    const double column = best_column + refine(magnitude(best_column - 1, best_row), best,
                                                magnitude(best_column + 1, best_row));
    const double row = best_row + refine(magnitude(best_column, best_row - 1), best, magnitude(best_column, best_row + 1));
    std::printf("[ measured ] %s target (%.2f, %.2f) m: peak off by (%.3f, %.3f) pixels\n", to_string(geometry),
                t.position.x, t.position.y, column - expected_column, row - expected_row);
    EXPECT_NEAR(column, expected_column, 0.1);
    EXPECT_NEAR(row, expected_row, 0.1);

    // The target's ground-range and azimuth directions, seen from the aperture centre.
    const Vec3 target = cc.frame().to_ecf(t.position);
    const Vec3 line_of_sight = unit(target - cc.pulses[static_cast<size_t>(pulses / 2)].tx_pos);
    const Vec3 ground_range = unit(line_of_sight - dot(line_of_sight, up) * up);
    const Vec3 azimuth = cross(up, ground_range);
    const double range_cell_m = kSpeedOfLight / (2 * sc.bandwidth_hz) / dot(line_of_sight, ground_range);
    double sin_min = 1, sin_max = -1;
    for (const BackprojectionPulse &p : cc.pulses) {
      const double s = dot(unit(target - p.tx_pos), azimuth);
      sin_min = std::min(sin_min, s);
      sin_max = std::max(sin_max, s);
    }
    const double spread = (sin_max - sin_min) * pulses / (pulses - 1);
    const double azimuth_cell_m = kSpeedOfLight / sc.center_frequency_hz / (2 * spread);

    // The cuts see the target alone: the other targets' azimuth sidelobes,
    // tens of metres away, still reach about -45 dB there (with random
    // amplitudes), enough to bend a -42.7 dB Hamming sidelobe by a dB or two.
    SimulatorConfig alone_config = sc;
    alone_config.targets = {t};
    const CompressedCollection alone = compress_collection(alone_config, range_window, upsample);
    const double half_extent = 8, step = 1.0 / 16;
    WindowSpec uniform_aperture;
    struct Cut {
      const char *name;
      Vec3 axis, across;
      double cell_m;
      WindowSpec window;
    };
    for (const Cut &cut : {Cut{"range", ground_range, azimuth, range_cell_m, range_window},
                           Cut{"azimuth", azimuth, ground_range, azimuth_cell_m, uniform_aperture}}) {
      BackprojectionConfig cc_cut = c;
      cc_cut.grid.width = 2 * static_cast<int64_t>(half_extent / step) + 1;
      cc_cut.grid.height = 1;
      cc_cut.grid.spacing_x_m = cc_cut.grid.spacing_y_m = cut.cell_m * step;
      cc_cut.grid.centre = target;
      cc_cut.grid.axis_x = cut.axis;
      cc_cut.grid.axis_y = cut.across;
      const auto samples = backproject(cc_cut, alone.block());
      std::vector<double> mag;
      for (const auto &v : samples) mag.push_back(std::abs(v));
      const ResponseFigures m = measure_response(mag, step);
      const ResponseFigures th = measure_response(theoretical_response(cut.window, half_extent, step), step);
      std::printf("[ measured ] %s %s (%s): 3 dB width %.4f cells (theory %.4f), PSLR %.2f dB (%.2f), "
                  "ISLR %.2f dB (%.2f), peak %+.3f cells off\n",
                  to_string(geometry), cut.name, to_string(cut.window.kind), m.width_3db, th.width_3db, m.pslr_db,
                  th.pslr_db, m.islr_db, th.islr_db, m.peak_position - half_extent);
      EXPECT_NEAR(m.width_3db, th.width_3db, 0.03 * th.width_3db) << cut.name;
      EXPECT_NEAR(m.pslr_db, th.pslr_db, 0.5) << cut.name;
      EXPECT_NEAR(m.islr_db, th.islr_db, 0.5) << cut.name;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Geometries, PointTargets, ::testing::Values(Geometry::Airborne, Geometry::Spaceborne),
                         [](const auto &info) { return std::string(to_string(info.param)); });

// ------------------------------------------------------------ precision

class PrecisionModes : public ::testing::TestWithParam<Geometry> {};

// Random clutter (the hardest case: no coherent gain hides errors) on a
// randomly placed and turned 128 x 128 grid of 0.5 m pixels: signal-to-error
// ratio of each mode against the double-precision CPU image with the same
// interpolation. Nearest is printed only: its output jumps when a position
// crosses a half bin, so any rounding flips whole samples.
TEST_P(PrecisionModes, SignalToErrorAgainstTheFp64Reference) {
  const Geometry geometry = GetParam();
  std::mt19937_64 rng(cs_test::fresh_seed());
  const CompressedCollection cc = clutter_collection(geometry, rng);
  BackprojectionConfig c;
  c.grid = random_ground_grid(cc.frame(), 128, 128, 0.5, 5.0, rng);
  c.knab_oversampling = profile_oversampling(cc.compression);
  for (Interpolation interpolation : {Interpolation::Linear, Interpolation::Knab, Interpolation::Nearest}) {
    c.interpolation = interpolation;
    c.precision = Precision::Double;
    const auto reference = backproject(c, cc.block());
    for (Precision precision : {Precision::Fast, Precision::Mixed}) {
      c.precision = precision;
      const double ser = signal_to_error_db(backproject(c, cc.block()), reference);
      std::printf("[ measured ] %s %s %s: SER %.1f dB against fp64\n", to_string(geometry), to_string(interpolation),
                  to_string(precision), ser);
      if (interpolation == Interpolation::Nearest) continue;
      EXPECT_GE(ser, precision == Precision::Fast ? kFastSerTargetDb : kMixedSerTargetDb)
          << to_string(interpolation) << " " << to_string(precision);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Geometries, PrecisionModes, ::testing::Values(Geometry::Airborne, Geometry::Spaceborne),
                         [](const auto &info) { return std::string(to_string(info.param)); });

// Pulses whose receive position differs from the transmit position take the
// two-leg path; it keeps the same precision.
TEST(Backprojection, BistaticPulsesKeepThePrecision) {
  std::mt19937_64 rng(cs_test::fresh_seed());
  CompressedCollection cc = clutter_collection(Geometry::Airborne, rng);
  make_bistatic(cc, collection(Geometry::Airborne).speed_m_s);
  BackprojectionConfig c;
  c.grid = random_ground_grid(cc.frame(), 96, 80, 0.5, 5.0, rng);
  c.precision = Precision::Double;
  const auto reference = backproject(c, cc.block());
  for (Precision precision : {Precision::Fast, Precision::Mixed}) {
    c.precision = precision;
    const double ser = signal_to_error_db(backproject(c, cc.block()), reference);
    std::printf("[ measured ] bistatic airborne linear %s: SER %.1f dB against fp64\n", to_string(precision), ser);
    EXPECT_GE(ser, precision == Precision::Fast ? kFastSerTargetDb : kMixedSerTargetDb);
  }
}

// ------------------------------------------------------------ video SAR

// An aperture of 128 pulses slides by 32 pulses per frame: each frame adds
// the 32 new pulses and subtracts the 32 oldest. After every frame the image
// equals a full recomputation of its window within the float rounding that
// the extra calls add: at least 110 dB signal-to-error after 5 frames.
TEST(Backprojection, IncrementalFramesEqualRecomputation) {
  std::mt19937_64 rng(cs_test::fresh_seed());
  const CompressedCollection cc = clutter_collection(Geometry::Airborne, rng);
  const int64_t aperture = 128, stride = 32, frames = 5;
  BackprojectionConfig c;
  c.grid = random_ground_grid(cc.frame(), 128, 128, 0.5, 5.0, rng);
  for (Precision precision : {Precision::Fast, Precision::Mixed, Precision::Double}) {
    c.precision = precision;
    CpuBackprojector bp(c);
    std::vector<std::complex<float>> image(static_cast<size_t>(bp.pixels()), {NAN, NAN});
    bp.backproject(cc.block(0, aperture), image.data(), Accumulate::Replace);
    for (int64_t f = 1; f <= frames; ++f) {
      bp.backproject(cc.block(aperture + (f - 1) * stride, stride), image.data(), Accumulate::Add);
      bp.backproject(cc.block((f - 1) * stride, stride), image.data(), Accumulate::Subtract);
      const auto full = backproject(c, cc.block(f * stride, aperture));
      const double ser = signal_to_error_db(image, full);
      if (f == frames)
        std::printf("[ measured ] incremental %s: SER %.1f dB against recomputation after %lld frames\n",
                    to_string(precision), ser, static_cast<long long>(frames));
      EXPECT_GE(ser, 110.0) << to_string(precision) << " frame " << f;
    }
  }
}

// ------------------------------------------------------------ plumbing

// Partial tiles, more pulses than one chunk, any thread count: the same bits.
TEST(Backprojection, ThreadCountAndOddSizesGiveIdenticalImages) {
  std::mt19937_64 rng(cs_test::fresh_seed());
  const CompressedCollection cc = clutter_collection(Geometry::Airborne, rng);
  BackprojectionConfig c;
  c.grid = random_ground_grid(cc.frame(), 45, 37, 0.7, 5.0, rng);
  c.interpolation = Interpolation::Knab;
  for (Precision precision : {Precision::Fast, Precision::Mixed, Precision::Double}) {
    c.precision = precision;
    c.cpu_threads = 1;
    const auto one = backproject(c, cc.block());
    c.cpu_threads = 3;
    const auto three = backproject(c, cc.block());
    EXPECT_TRUE(all_finite(one)) << to_string(precision);
    EXPECT_TRUE(one == three) << to_string(precision);
  }
}

// A grid centred on ImageGrid::pixel_position of another grid's pixel gives
// that grid's pixels: the public grid and the math's pixel offsets agree.
// (The fast mode would differ by rounding: its tiles start elsewhere.)
TEST(Backprojection, ACropGridReproducesThePixelsOfTheFullGrid) {
  std::mt19937_64 rng(cs_test::fresh_seed());
  const CompressedCollection cc = clutter_collection(Geometry::Spaceborne, rng);
  BackprojectionConfig full;
  full.grid = random_ground_grid(cc.frame(), 71, 53, 0.5, 5.0, rng);
  full.precision = Precision::Double;
  const auto image = backproject(full, cc.block());
  BackprojectionConfig crop = full;
  crop.grid.width = 16;
  crop.grid.height = 9;
  const int64_t c0 = 40, r0 = 31;
  crop.grid.centre = full.grid.pixel_position(c0 + crop.grid.width / 2, r0 + crop.grid.height / 2);
  const auto part = backproject(crop, cc.block());
  double worst = 0, rms = 0;
  for (int64_t r = 0; r < crop.grid.height; ++r)
    for (int64_t c = 0; c < crop.grid.width; ++c) {
      const std::complex<float> expected = image[static_cast<size_t>((r0 + r) * full.grid.width + c0 + c)];
      worst = std::max(worst, static_cast<double>(std::abs(part[static_cast<size_t>(r * crop.grid.width + c)] - expected)));
      rms += std::norm(expected);
    }
  rms = std::sqrt(rms / static_cast<double>(part.size()));
  EXPECT_LT(worst, 1e-6 * rms);  // the pixel positions differ by double rounding only
}

TEST(Backprojection, NamesParse) {
  EXPECT_EQ(parse_precision("Fast"), Precision::Fast);
  EXPECT_EQ(parse_precision("mixed"), Precision::Mixed);
  EXPECT_EQ(parse_precision("DOUBLE"), Precision::Double);
  EXPECT_FALSE(parse_precision("single").has_value());
  EXPECT_EQ(parse_interpolation("knab"), Interpolation::Knab);
  EXPECT_EQ(parse_interpolation("Nearest"), Interpolation::Nearest);
  EXPECT_FALSE(parse_interpolation("cubic").has_value());
}

namespace {

template <class F>
void expect_invalid(F &&f, const std::string &fragment) {
  try {
    f();
    ADD_FAILURE() << "no exception; expected one mentioning \"" << fragment << "\"";
  } catch (const std::invalid_argument &e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

}  // namespace

TEST(Backprojection, BadGridsAndSettingsAreRejected) {
  const EnuFrame frame(Llh{45, 7, 100});
  BackprojectionConfig good;
  good.grid = north_up_ground_grid(frame.origin_ecf(), 64, 64, 0.5);
  EXPECT_NO_THROW(CpuBackprojector{good});
  auto with = [&](auto change) {
    BackprojectionConfig c = good;
    change(c);
    return [c] { CpuBackprojector bp(c); };
  };
  expect_invalid(with([](auto &c) { c.grid.width = 0; }), "at least one pixel");
  expect_invalid(with([](auto &c) { c.grid.height = -3; }), "at least one pixel");
  expect_invalid(with([](auto &c) { c.grid.width = 100000; }), "limited to 65536");
  expect_invalid(with([](auto &c) { c.grid.width = c.grid.height = 60000; }), "pixels, more than");
  expect_invalid(with([](auto &c) { c.grid.spacing_x_m = 0; }), "spacings");
  expect_invalid(with([](auto &c) { c.grid.spacing_y_m = NAN; }), "spacings");
  expect_invalid(with([](auto &c) { c.grid.width = 20000, c.grid.spacing_x_m = 100; }), "extends more than");
  expect_invalid(with([](auto &c) { c.grid.centre.x = INFINITY; }), "centre");
  expect_invalid(with([&](auto &c) { c.grid.axis_y = frame.east(); }), "orthogonal unit");
  expect_invalid(with([](auto &c) { c.grid.axis_x = 2.0 * c.grid.axis_x; }), "orthogonal unit");
  expect_invalid(with([](auto &c) { c.interpolation = Interpolation::Knab, c.knab_taps = 7; }), "Knab taps");
  expect_invalid(with([](auto &c) { c.interpolation = Interpolation::Knab, c.knab_taps = 18; }), "Knab taps");
  expect_invalid(with([](auto &c) { c.interpolation = Interpolation::Knab, c.knab_oversampling = 0.5; }),
                 "oversampling");
  expect_invalid(with([](auto &c) { c.sgn = 0; }), "SGN");
  expect_invalid(with([](auto &c) { c.cpu_threads = -1; }), "threads");
}

TEST(Backprojection, BadBlocksAreRejectedAndLeaveTheImage) {
  std::mt19937_64 rng(cs_test::fresh_seed());
  const CompressedCollection cc = clutter_collection(Geometry::Airborne, rng);
  BackprojectionConfig c;
  c.grid = random_ground_grid(cc.frame(), 40, 30, 0.5, 5.0, rng);
  const CpuBackprojector bp(c);
  const std::vector<std::complex<float>> original = sar_test::random_complex(static_cast<size_t>(bp.pixels()), rng);
  std::vector<std::complex<float>> image = original;
  const int64_t pulses = 8;
  auto run = [&](RangeProfileBlock b) { return [&bp, &image, b] { bp.backproject(b, image.data(), Accumulate::Add); }; };

  // Non-finite samples: the pulse and bin are named.
  std::vector<std::complex<float>> bad(cc.profiles.begin(), cc.profiles.begin() + pulses * cc.bins);
  const int64_t bad_pulse = 3, bad_bin = static_cast<int64_t>(rng() % cc.bins);
  bad[static_cast<size_t>(bad_pulse * cc.bins + bad_bin)] = {NAN, 0.0f};
  RangeProfileBlock b = cc.block(0, pulses);
  b.samples = bad.data();
  expect_invalid(run(b), "pulse 3, bin " + std::to_string(bad_bin) + ": non-finite");
  bad[static_cast<size_t>(bad_pulse * cc.bins + bad_bin)] = {0.0f, -INFINITY};
  expect_invalid(run(b), "pulse 3, bin " + std::to_string(bad_bin) + ": non-finite");

  // Missing or broken per-pulse facts.
  b = cc.block(0, pulses);
  b.pulse_info = nullptr;
  expect_invalid(run(b), "per-pulse facts missing");
  b = cc.block(0, pulses);
  b.pulse_info_count = pulses - 1;
  expect_invalid(run(b), "per-pulse facts missing");
  std::vector<BackprojectionPulse> info(cc.pulses.begin(), cc.pulses.begin() + pulses);
  b = cc.block(0, pulses);
  b.pulse_info = info.data();
  info[2].tx_pos.y = NAN;
  expect_invalid(run(b), "pulse 2: non-finite position");
  info[2].tx_pos.y = 1e300;  // finite, but every range from it overflows
  expect_invalid(run(b), "pulse 2: a position lies more than 1e9 m from the origin");
  info[2] = cc.pulses[2];
  info[5].axis.bin_spacing_m = 0;
  expect_invalid(run(b), "pulse 5: the range axis");
  info[5] = cc.pulses[5];
  info[6].centre_frequency_hz = -1;
  expect_invalid(run(b), "pulse 6: the centre frequency");
  info[6] = cc.pulses[6];
  info[1].srp_pos = info[1].tx_pos;
  expect_invalid(run(b), "pulse 1: an antenna sits on the scene reference point");

  b = cc.block(0, pulses);
  b.samples = nullptr;
  expect_invalid(run(b), "no samples");
  b = cc.block(0, pulses);
  b.bins = 0;
  expect_invalid(run(b), "need 1..");
  expect_invalid([&] { bp.backproject(cc.block(0, pulses), nullptr); }, "no image");
  EXPECT_TRUE(image == original) << "a rejected block changed the image";

  // No pulses: Add leaves the image, Replace clears it.
  bp.backproject(cc.block(0, 0), image.data(), Accumulate::Add);
  EXPECT_TRUE(image == original);
  bp.backproject(cc.block(0, 0), image.data(), Accumulate::Replace);
  for (const auto &v : image) ASSERT_EQ(v, std::complex<float>(0, 0));
}

TEST(Backprojection, CudaPathWithoutADeviceSaysSo) {
  if (cs::device_count() > 0) GTEST_SKIP() << "a CUDA device is present";
  BackprojectionConfig c;
  c.grid = north_up_ground_grid(EnuFrame(Llh{45, 7, 100}).origin_ecf(), 64, 64, 0.5);
  EXPECT_THROW(CudaBackprojector(c, 0), cs::CudaError);
}

// ------------------------------------------------------------ CUDA

namespace {

using DeviceArray = cs_test::DeviceArray<std::complex<float>>;

// `start` uploaded, the backprojection run with `mode`, the result downloaded.
std::vector<std::complex<float>> backproject_on_gpu(const BackprojectionConfig &c, RangeProfileBlock block,
                                                    const std::vector<std::complex<float>> &start, Accumulate mode) {
  cs::Stream stream(0);
  CudaBackprojector gpu(c, 0);
  const size_t sample_bytes = static_cast<size_t>(block.pulses * block.bins) * sizeof(std::complex<float>);
  const size_t image_bytes = start.size() * sizeof(std::complex<float>);
  DeviceArray samples(sample_bytes), image(image_bytes);
  cs::copy_async(samples.get(), block.samples, sample_bytes, stream.get());
  cs::copy_async(image.get(), start.data(), image_bytes, stream.get());
  block.samples = samples.get();
  gpu.backproject(block, image.get(), mode, stream.get());
  std::vector<std::complex<float>> out(start.size());
  cs::copy_async(out.data(), image.get(), image_bytes, stream.get());
  stream.synchronize();
  return out;
}

}  // namespace

// Every mode and interpolation, monostatic and bistatic, an image of partial
// tiles and two pulse chunks; the device image is poisoned with NaN first.
// CUDA uses fma, its own sin/cos and (fast mode) its intrinsics where the
// CPU rounds a multiply and an add apart, so the images differ by rounding:
// at least the mode's own target (fast 90 dB, mixed 100 dB) and 140 dB for
// double (two double sums rounded to float). Mixed and fast with nearest: a
// position within rounding of a half bin may take the neighbouring sample: 50 dB.
TEST(GpuBackprojection, CudaMatchesCpuForEveryModeAndInterpolation) {
  CS_REQUIRE_GPU();
  std::mt19937_64 rng(cs_test::fresh_seed());
  for (bool bistatic : {false, true}) {
    CompressedCollection cc = clutter_collection(Geometry::Airborne, rng);
    if (bistatic) make_bistatic(cc, collection(Geometry::Airborne).speed_m_s);
    BackprojectionConfig c;
    c.grid = random_ground_grid(cc.frame(), 77, 45, 0.5, 5.0, rng);
    c.knab_oversampling = profile_oversampling(cc.compression);
    const std::vector<std::complex<float>> poison(static_cast<size_t>(c.grid.width * c.grid.height), {NAN, NAN});
    for (Precision precision : {Precision::Fast, Precision::Mixed, Precision::Double})
      for (Interpolation interpolation : {Interpolation::Nearest, Interpolation::Linear, Interpolation::Knab}) {
        c.precision = precision;
        c.interpolation = interpolation;
        SCOPED_TRACE(std::string(to_string(precision)) + " " + to_string(interpolation) +
                     (bistatic ? " bistatic" : ""));
        const auto cpu = backproject(c, cc.block());
        const auto gpu = backproject_on_gpu(c, cc.block(), poison, Accumulate::Replace);
        ASSERT_TRUE(all_finite(gpu)) << "a pixel was not written";
        const double ser = signal_to_error_db(gpu, cpu);
        std::printf("[ measured ] CUDA vs CPU %s %s%s: SER %.1f dB\n", to_string(precision), to_string(interpolation),
                    bistatic ? " bistatic" : "", ser);
        double floor_db = precision == Precision::Fast ? kFastSerTargetDb
                          : precision == Precision::Mixed ? kMixedSerTargetDb
                                                          : 140.0;
        if (precision != Precision::Double && interpolation == Interpolation::Nearest) floor_db = 50.0;
        EXPECT_GE(ser, floor_db);
      }
  }
}

// Adding and subtracting on the device does what the CPU does.
TEST(GpuBackprojection, AddAndSubtractMatchTheCpu) {
  CS_REQUIRE_GPU();
  std::mt19937_64 rng(cs_test::fresh_seed());
  const CompressedCollection cc = clutter_collection(Geometry::Airborne, rng);
  BackprojectionConfig c;
  c.grid = random_ground_grid(cc.frame(), 64, 48, 0.5, 5.0, rng);
  c.precision = Precision::Mixed;
  const CpuBackprojector cpu(c);
  const auto start = sar_test::random_complex(static_cast<size_t>(cpu.pixels()), rng, 10.0f);
  for (Accumulate mode : {Accumulate::Add, Accumulate::Subtract}) {
    std::vector<std::complex<float>> expected = start;
    cpu.backproject(cc.block(40, 100), expected.data(), mode);
    const auto got = backproject_on_gpu(c, cc.block(40, 100), start, mode);
    EXPECT_GE(signal_to_error_db(got, expected), kMixedSerTargetDb);
  }
}
