// Per-pixel math of time-domain backprojection, shared by the CPU loop
// (backprojection.cpp) and the CUDA kernel (backprojection_cuda.cu).
//
// A pixel X receives from each pulse the range profile sampled at the pixel's
// differential range and phase-compensated:
//
//   dr(X)    = (|T - X| + |R - X|) / 2 - r_ref,  r_ref = (|T - S| + |R - S|) / 2
//   I(X)    += P(dr) * exp(+j 2 pi t(dr)),      t(dr) = -SGN * 2 fc dr / c  (turns)
//
// T, R the transmit and receive antenna phase centres, S the pulse's scene
// reference point; for a monostatic pulse (T == R) dr = |T - X| - |T - S|.
// P is the pulse compressor's output (pulse_compressor.h): bin m holds the
// range first_bin_m + m * bin_spacing_m relative to r_ref, and a point target
// at dr0 appears there as a * exp(+j SGN 4 pi fc dr0 / c) * (real lobe), so the
// compensation above leaves a * lobe: every pulse adds in phase at the target.
//
// Precision modes (what each one computes in which type):
//  Double  dr, the bin position, the interpolation, the phasor and the sums in
//          double: the fp64 reference.
//  Mixed   dr in double (positions relative to the grid centre, so no large
//          coordinates meet), the bin position split into an integer and a
//          fraction and the phase reduced modulo one turn in double; then the
//          interpolation, the phasor and the sums in float.
//  Fast    float per pixel, with ranges taken relative to a reference: the
//          image is cut into tiles of kTileColumns x kTileRows pixels and for
//          every (tile, pulse) a FastTileRecord is made in double at the tile's
//          reference pixel (its range, bin and phase, reduced). A pixel then
//          adds in float its offset from that reference: a linear part whose
//          phase uses per-pixel-step increments already reduced modulo one
//          turn (so integer pixel offsets keep the phase exact to float
//          rounding), and the small curvature term
//              q = p / (s + sqrt(s^2 + p)),  s = R_ref + l,  p = |v|^2 - l^2,
//          the exact remainder of |d - v| - |d| for a pixel offset v and the
//          linear term l = -(d/|d|).v, evaluated without cancellation.
//          CUDA uses its fast sin/cos/exp/divide intrinsics in this mode.
//          The precision holds while the curvature over a tile stays small
//          (tile radius^2 / (2 range) well under a metre: any SAR geometry
//          with pixels up to a few metres).
#pragma once

#include <math.h>
#include <stdint.h>

#include "common/hd.h"
#include "sar/pulse_compression_math.h"  // Cf32, the sample type of range profiles

namespace cs::sar {

enum class Interpolation : int { Nearest, Linear, Knab };
enum class Precision : int { Fast, Mixed, Double };

// Knab (windowed sinc) interpolation: taps are even, 2..kMaxKnabTaps.
constexpr int kMaxKnabTaps = 16;

// The tiles of the fast mode, which are also the CUDA thread blocks' tiles:
// one warp spans a tile row. The reference pixel of the tile whose first
// pixel is (c0, r0) is (c0 + kTileColumns / 2, r0 + kTileRows / 2).
constexpr int kTileColumns = 32;
constexpr int kTileRows = 16;

// Pulses whose records are staged together (shared memory on the GPU, a
// scratch array on the CPU) and summed into one partial sum per pixel.
constexpr int kPulseChunk = 256;

// Bin positions further out than this are outside any profile; they are
// clamped before conversion to int so that nothing overflows.
constexpr double kFarBins = 1073741824.0;  // 2^30

// ---------------------------------------------------------------- plain data
// (no default member initialisers: these also live in CUDA shared memory)

struct Pos3 {
  double x, y, z;
};
CS_HD Pos3 operator+(Pos3 a, Pos3 b) { return {a.x + b.x, a.y + b.y, a.z + b.z}; }
CS_HD Pos3 operator-(Pos3 a, Pos3 b) { return {a.x - b.x, a.y - b.y, a.z - b.z}; }
CS_HD Pos3 operator*(double s, Pos3 a) { return {s * a.x, s * a.y, s * a.z}; }
CS_HD double dot(Pos3 a, Pos3 b) { return a.x * b.x + a.y * b.y + a.z * b.z; }
CS_HD double norm(Pos3 a) { return sqrt(dot(a, a)); }

template <class Real>
struct Complex {
  Real re, im;
};

// The image grid as the math needs it (backprojection.h builds it from an ImageGrid).
struct GridGeometry {
  int32_t width, height;               // pixels
  int32_t centre_column, centre_row;   // the pixel at the grid centre: (width / 2, height / 2)
  Pos3 column_step, row_step;          // metres from a pixel to its next column / row neighbour
  double column_spacing_m, row_spacing_m;
};

// Position of pixel (column, row) relative to the grid centre.
CS_HD Pos3 pixel_offset(const GridGeometry &g, int column, int row) {
  return static_cast<double>(column - g.centre_column) * g.column_step +
         static_cast<double>(row - g.centre_row) * g.row_step;
}

// One pulse, as every precision mode receives it (made on the host in double).
// 80 bytes, 16-aligned for vector loads from shared memory.
struct alignas(16) PulseGeometry {
  Pos3 tx, rcv;              // antenna phase centres relative to the grid centre (m)
  double reference_range_m;  // r_ref = (|T - S| + |R - S|) / 2
  double first_bin_m;        // range of bin 0 relative to r_ref
  double bins_per_metre;     // 1 / bin spacing
  double turns_per_metre;    // -SGN * 2 fc / c: phase compensation per metre of dr
};

// Fast mode: one pulse seen from one tile's reference pixel (see the top).
// 64 bytes, 16-aligned: the GPU reads it from shared memory in 4 vector loads.
struct alignas(16) FastTileRecord {
  int32_t bin_base;        // floor of the reference pixel's bin position
  float bin_fraction;      // the rest, in [0, 1)
  float bins_per_column;   // linear change of the bin position per pixel step
  float bins_per_row;
  float turns;             // the reference pixel's phase, reduced to [-1/2, 1/2]
  float turns_per_column;  // linear phase change per pixel step, reduced modulo one turn
  float turns_per_row;
  float bins_per_metre;
  float turns_per_metre;
  // Per leg (transmit, receive): range from the antenna to the reference
  // pixel, and the linear change of that range per column and per row step.
  float leg_range_m[2];
  float leg_metres_per_column[2];
  float leg_metres_per_row[2];
};

// Fast mode: a pixel's offset from its tile's reference pixel.
struct FastPixel {
  float columns, rows;  // small integers
  float offset_sq_m2;   // |v|^2 (the grid axes are orthonormal)
};

CS_HD FastPixel fast_pixel(const GridGeometry &g, int column_offset, int row_offset) {
  const float x = static_cast<float>(column_offset * g.column_spacing_m);
  const float y = static_cast<float>(row_offset * g.row_spacing_m);
  return {static_cast<float>(column_offset), static_cast<float>(row_offset), x * x + y * y};
}

// Knab's sampling window (Knab 1979; the approximate prolate kernel):
//   h(x) = sinc(x) * cosh(beta sqrt(1 - (2x/N)^2)) / cosh(beta),
//   beta = pi v N / 2,  v = 1 - 1/oversampling (the unused fraction of the band).
struct KnabKernel {
  int taps;                 // N, even
  double beta;
  double two_over_taps;     // 2 / N
  double window_norm;       // 1 / (1 + exp(-2 beta)): cosh(a)/cosh(beta) = (e^(a-beta) + e^(-a-beta)) * window_norm
  float beta_f, two_over_taps_f, window_norm_f;
};

// Host or device: the kernel for `taps` and a profile oversampled `oversampling` times.
CS_HD KnabKernel make_knab_kernel(int taps, double oversampling) {
  KnabKernel k;
  k.taps = taps;
  k.beta = 3.14159265358979323846 * (1.0 - 1.0 / oversampling) * 0.5 * taps;
  k.two_over_taps = 2.0 / taps;
  k.window_norm = 1.0 / (1.0 + exp(-2.0 * k.beta));
  k.beta_f = static_cast<float>(k.beta);
  k.two_over_taps_f = static_cast<float>(k.two_over_taps);
  k.window_norm_f = static_cast<float>(k.window_norm);
  return k;
}

// ---------------------------------------------------------------- scalar helpers
// kFastMath selects CUDA's fast intrinsics (fast mode only); the host always
// uses the C library. On the device, fma is explicit; on the host a plain
// multiply-add (x86-64 without -mfma would make fma a slow library call), so
// CPU and CUDA results differ by rounding: tests state that tolerance.

CS_HD float fma_hd(float a, float b, float c) {
#if defined(__CUDA_ARCH__)
  return __fmaf_rn(a, b, c);
#else
  return a * b + c;
#endif
}
CS_HD double fma_hd(double a, double b, double c) {
#if defined(__CUDA_ARCH__)
  return __fma_rn(a, b, c);
#else
  return a * b + c;
#endif
}

CS_HD float floor_hd(float x) { return floorf(x); }
CS_HD double floor_hd(double x) { return floor(x); }

// A phase in turns reduced to [-1/2, 1/2] (exact in floating point).
CS_HD double reduce_turns(double t) { return t - rint(t); }
CS_HD float reduce_turns(float t) { return t - rintf(t); }

// exp(+j 2 pi t) for |t| <= 1/2.
template <bool kFastMath>
CS_HD Complex<float> phasor_of_turns(float t) {
  float s, c;
#if defined(__CUDA_ARCH__)
  if (kFastMath)
    __sincosf(6.28318530717958647692f * t, &s, &c);
  else
    sincospif(2.0f * t, &s, &c);
#else
  sincosf(6.28318530717958647692f * t, &s, &c);
#endif
  return {c, s};
}
template <bool kFastMath>
CS_HD Complex<double> phasor_of_turns(double t) {
  double s, c;
#if defined(__CUDA_ARCH__)
  sincospi(2.0 * t, &s, &c);
#else
  sincos(6.283185307179586476925286766559 * t, &s, &c);
#endif
  return {c, s};
}

// sin(pi x) for 0 <= x < 1 with a small relative error also near x = 1
// (the nearest Knab tap's sinc depends on it): sin(pi x) = sin(pi (1 - x)),
// and 1 - x is exact. CUDA's sinpi is accurate and cheap; its __sinf has
// only an absolute error bound, so no mode uses it here.
CS_HD float sin_pi_fraction(float x) {
#if defined(__CUDA_ARCH__)
  return sinpif(x);
#else
  return sinf(3.14159265358979323846f * (x > 0.5f ? 1.0f - x : x));
#endif
}
CS_HD double sin_pi_fraction(double x) {
#if defined(__CUDA_ARCH__)
  return sinpi(x);
#else
  return sin(3.14159265358979323846 * (x > 0.5 ? 1.0 - x : x));
#endif
}

template <bool kFastMath>
CS_HD float exp_hd(float x) {
#if defined(__CUDA_ARCH__)
  return kFastMath ? __expf(x) : expf(x);
#else
  return expf(x);
#endif
}
template <bool kFastMath>
CS_HD double exp_hd(double x) { return exp(x); }

template <bool kFastMath>
CS_HD float divide_hd(float a, float b) {
#if defined(__CUDA_ARCH__)
  return kFastMath ? __fdividef(a, b) : a / b;
#else
  return a / b;
#endif
}
template <bool kFastMath>
CS_HD double divide_hd(double a, double b) { return a / b; }

CS_HD float sqrt_hd(float x) { return sqrtf(x); }
CS_HD double sqrt_hd(double x) { return sqrt(x); }

// sqrt(x) for x > 0 (not 0): in fast mode on the GPU x * rsqrt(x), two
// instructions instead of the correctly rounded sequence, within 2 ulp.
template <bool kFastMath>
CS_HD float sqrt_positive(float x) {
#if defined(__CUDA_ARCH__)
  return kFastMath ? x * rsqrtf(x) : sqrtf(x);
#else
  return sqrtf(x);
#endif
}

// ---------------------------------------------------------------- interpolation

// A profile sample (unchecked), through the read-only cache on the GPU.
template <class Real>
CS_HD Complex<Real> load_sample(const Cf32 *sample) {
#if defined(__CUDA_ARCH__)
  const float2 v = __ldg(reinterpret_cast<const float2 *>(sample));
  return {Real(v.x), Real(v.y)};
#else
  return {Real(sample->re), Real(sample->im)};
#endif
}

// Profile sample `index`, zero outside [0, bins): the profile is empty beyond its extent.
template <class Real>
CS_HD Complex<Real> profile_sample(const Cf32 *profile, int bins, int index) {
  if (index < 0 || index >= bins) return {Real(0), Real(0)};
  return load_sample<Real>(profile + index);
}

template <class Real>
CS_HD void add_scaled(Complex<Real> &acc, Complex<Real> v, Real w) {
  acc.re = fma_hd(v.re, w, acc.re);
  acc.im = fma_hd(v.im, w, acc.im);
}

// Knab weight of the sample at distance x (|x| < taps / 2) from the position,
// given sin(pi f) for the position's fraction f: sin(pi (f - n)) = (-1)^n sin(pi f).
template <class Real, bool kFastMath>
CS_HD Real knab_weight(Real x, int n, Real sin_pi_f, const KnabKernel &k) {
  const Real pi = Real(3.14159265358979323846);
  const Real sinc = x == Real(0) ? Real(1) : divide_hd<kFastMath>((n & 1) ? -sin_pi_f : sin_pi_f, pi * x);
  const Real beta = sizeof(Real) == sizeof(float) ? Real(k.beta_f) : Real(k.beta);
  const Real two_over_taps = sizeof(Real) == sizeof(float) ? Real(k.two_over_taps_f) : Real(k.two_over_taps);
  const Real norm = sizeof(Real) == sizeof(float) ? Real(k.window_norm_f) : Real(k.window_norm);
  const Real u = x * two_over_taps;
  const Real inside = Real(1) - u * u;
  const Real a = beta * sqrt_hd(inside > Real(0) ? inside : Real(0));
  const Real window = (exp_hd<kFastMath>(a - beta) + exp_hd<kFastMath>(-a - beta)) * norm;
  return sinc * window;
}

// The profile at bin position base + fraction (0 <= fraction < 1).
template <Interpolation I, class Real, bool kFastMath>
CS_HD Complex<Real> interpolate_profile(const Cf32 *profile, int bins, int base, Real fraction, const KnabKernel &knab) {
  if (I == Interpolation::Nearest) return profile_sample<Real>(profile, bins, fraction >= Real(0.5) ? base + 1 : base);
  if (I == Interpolation::Linear) {
    const bool both_inside = base >= 0 && base < bins - 1;  // the common case: one check
    const Complex<Real> a = both_inside ? load_sample<Real>(profile + base) : profile_sample<Real>(profile, bins, base);
    const Complex<Real> b =
        both_inside ? load_sample<Real>(profile + base + 1) : profile_sample<Real>(profile, bins, base + 1);
    return {fma_hd(fraction, b.re - a.re, a.re), fma_hd(fraction, b.im - a.im, a.im)};
  }
  Complex<Real> acc = {Real(0), Real(0)};
  const Real sin_pi_f = sin_pi_fraction(fraction);
  for (int n = 1 - knab.taps / 2; n <= knab.taps / 2; ++n) {
    const Complex<Real> s = profile_sample<Real>(profile, bins, base + n);
    add_scaled(acc, s, knab_weight<Real, kFastMath>(fraction - Real(n), n, sin_pi_f, knab));
  }
  return acc;
}

// acc += s * p (complex).
template <class Real>
CS_HD void multiply_accumulate(Complex<Real> &acc, Complex<Real> s, Complex<Real> p) {
  acc.re = fma_hd(s.re, p.re, fma_hd(-s.im, p.im, acc.re));
  acc.im = fma_hd(s.re, p.im, fma_hd(s.im, p.re, acc.im));
}

// ---------------------------------------------------------------- mixed and double

// dr of a pixel at `x` (relative to the grid centre) for a pulse; kLegs = 1
// for a monostatic pulse (T == R), 2 otherwise.
template <int kLegs>
CS_HD double differential_range(const PulseGeometry &p, Pos3 x) {
  if (kLegs == 1) return norm(p.tx - x) - p.reference_range_m;
  return 0.5 * (norm(p.tx - x) + norm(p.rcv - x)) - p.reference_range_m;
}

// Mixed (Real = float) and double (Real = double): acc += this pulse's contribution.
template <class Real, Interpolation I, int kLegs>
CS_HD void accumulate_precise(Complex<Real> &acc, const PulseGeometry &p, Pos3 pixel, const Cf32 *profile, int bins,
                              const KnabKernel &knab) {
  const double dr = differential_range<kLegs>(p, pixel);
  const double position = (dr - p.first_bin_m) * p.bins_per_metre;
  // Outside the profile, with room for the widest stencil (also false for NaN).
  if (!(position > -kMaxKnabTaps && position < static_cast<double>(bins) + kMaxKnabTaps)) return;
  const double whole = floor(position);
  const Complex<Real> sample = interpolate_profile<I, Real, false>(profile, bins, static_cast<int>(whole),
                                                                   static_cast<Real>(position - whole), knab);
  const Complex<Real> phasor = phasor_of_turns<false>(static_cast<Real>(reduce_turns(dr * p.turns_per_metre)));
  multiply_accumulate(acc, sample, phasor);
}

// ---------------------------------------------------------------- fast

// The record of pulse `p` for the tile whose reference pixel lies at
// `reference` (relative to the grid centre). All in double, once per (tile, pulse).
template <int kLegs>
CS_HD FastTileRecord make_fast_tile_record(const PulseGeometry &p, Pos3 reference, const GridGeometry &g) {
  FastTileRecord r;
  const double weight = kLegs == 1 ? 1.0 : 0.5;
  double range = 0, per_column = 0, per_row = 0;
  for (int leg = 0; leg < 2; ++leg) {
    if (leg >= kLegs) {
      r.leg_range_m[leg] = r.leg_metres_per_column[leg] = r.leg_metres_per_row[leg] = 0.0f;
      continue;
    }
    const Pos3 to_antenna = (leg == 0 ? p.tx : p.rcv) - reference;
    const double distance = norm(to_antenna);
    const Pos3 line_of_sight = (1.0 / distance) * to_antenna;
    // Moving the pixel by a step moves it away from the antenna by -los.step.
    const double column_m = -dot(line_of_sight, g.column_step);
    const double row_m = -dot(line_of_sight, g.row_step);
    range += weight * distance;
    per_column += weight * column_m;
    per_row += weight * row_m;
    r.leg_range_m[leg] = static_cast<float>(distance);
    r.leg_metres_per_column[leg] = static_cast<float>(column_m);
    r.leg_metres_per_row[leg] = static_cast<float>(row_m);
  }
  const double dr = range - p.reference_range_m;
  double position = (dr - p.first_bin_m) * p.bins_per_metre;
  position = position < -kFarBins ? -kFarBins : (position > kFarBins ? kFarBins : position);
  const double whole = floor(position);
  r.bin_base = static_cast<int32_t>(whole);
  r.bin_fraction = static_cast<float>(position - whole);
  r.bins_per_column = static_cast<float>(per_column * p.bins_per_metre);
  r.bins_per_row = static_cast<float>(per_row * p.bins_per_metre);
  r.turns = static_cast<float>(reduce_turns(dr * p.turns_per_metre));
  r.turns_per_column = static_cast<float>(reduce_turns(per_column * p.turns_per_metre));
  r.turns_per_row = static_cast<float>(reduce_turns(per_row * p.turns_per_metre));
  r.bins_per_metre = static_cast<float>(p.bins_per_metre);
  r.turns_per_metre = static_cast<float>(p.turns_per_metre);
  return r;
}

// Fast mode: acc += the contribution of the pulse behind `r` to pixel `px`.
template <Interpolation I, int kLegs, bool kFastMath>
CS_HD void accumulate_fast(Complex<float> &acc, const FastTileRecord &r, const FastPixel &px, const Cf32 *profile,
                           int bins, const KnabKernel &knab) {
  // Curvature: the part of the range offset beyond the linear term.
  float curvature = 0.0f;
  for (int leg = 0; leg < kLegs; ++leg) {
    const float along = fma_hd(px.columns, r.leg_metres_per_column[leg], px.rows * r.leg_metres_per_row[leg]);
    const float across_sq = fmaxf(fma_hd(-along, along, px.offset_sq_m2), 0.0f);
    const float s = r.leg_range_m[leg] + along;
    const float q = divide_hd<kFastMath>(across_sq, s + sqrt_positive<kFastMath>(fma_hd(s, s, across_sq)));
    curvature += kLegs == 1 ? q : 0.5f * q;
  }
  const float offset_bins = r.bin_fraction + fma_hd(px.columns, r.bins_per_column,
                                                    fma_hd(px.rows, r.bins_per_row, curvature * r.bins_per_metre));
  const float whole = floor_hd(offset_bins);
  const float turns = r.turns + fma_hd(px.columns, r.turns_per_column,
                                       fma_hd(px.rows, r.turns_per_row, curvature * r.turns_per_metre));
  const Complex<float> sample = interpolate_profile<I, float, kFastMath>(
      profile, bins, r.bin_base + static_cast<int>(whole), offset_bins - whole, knab);
  multiply_accumulate(acc, sample, phasor_of_turns<kFastMath>(reduce_turns(turns)));
}

}  // namespace cs::sar
