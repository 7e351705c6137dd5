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
//  Mixed and Fast: the image is cut into tiles of kTileColumns x kTileRows
//          pixels and for every (tile, pulse) a TileRecord is made in double
//          at the tile's reference pixel: its range, bin and phase (reduced),
//          and their linear change per pixel step, with the phase steps
//          already reduced modulo one turn. A pixel then adds in float its
//          offset from that reference: the linear part, and the small
//          curvature term
//              q = sqrt(s^2 + p) - s  ~  h / sqrt(s^2 + h),
//              s = R_ref + l,  p = |v|^2 - l^2,  h = p / 2,
//          the remainder of |d - v| - |d| beyond the linear term l = -(d/|d|).v
//          for a pixel offset v. The approximation's error is p^3 / (64 s^5):
//          under 0.05 um for tiles of 2 m pixels at 1 km range, so it stays far
//          below float rounding in any SAR geometry with pixels up to a few
//          metres. Double precision matters only in the per-(tile, pulse)
//          record; no large coordinates meet in float. On the GPU both modes
//          take the hardware's reciprocal square root, and the sine and
//          cosine of the phase once it is reduced to half a turn (absolute
//          error 2^-20.5, near the float rounding of the phase itself), and
//          split numbers into integer and fraction with additions instead of
//          conversions.
//  Mixed   keeps the pixel's phase exact to the float rounding of numbers
//          under one turn: each step product c * turns_per_column is reduced
//          modulo one turn exactly, with a fused multiply-add.
//  Fast    sums the phase terms before one reduction (a pixel's phase is then
//          exact to the float rounding of a few turns) and, with Knab
//          interpolation, takes the hardware's approximate exponential and
//          division for the kernel weights.
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

// Mixed and fast: one pulse seen from one tile's reference pixel (see the top).
// 64 bytes, 16-aligned: the GPU reads it from shared memory in 4 vector loads.
struct alignas(16) TileRecord {
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
  // pixel, and the linear change of that range per column and per row step
  // divided by sqrt(2) (the curvature term needs half its square).
  float leg_range_m[2];
  float leg_scaled_per_column[2];
  float leg_scaled_per_row[2];
  // 1 when every pixel of the tile, with the widest interpolation stencil,
  // reads inside the profile: the pixels then skip their bounds checks (the
  // same for the whole tile, so a GPU warp takes one branch).
  int32_t tile_inside;
};

// Mixed and fast: a pixel's offset from its tile's reference pixel.
struct TilePixel {
  float columns, rows;       // small integers
  float half_offset_sq_m2;   // |v|^2 / 2 (the grid axes are orthonormal)
};

CS_HD TilePixel tile_pixel(const GridGeometry &g, int column_offset, int row_offset) {
  const float x = static_cast<float>(column_offset * g.column_spacing_m);
  const float y = static_cast<float>(row_offset * g.row_spacing_m);
  return {static_cast<float>(column_offset), static_cast<float>(row_offset), 0.5f * (x * x + y * y)};
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
// kFastMath selects CUDA's fast intrinsics (where the modes above say); the host always
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

// Adding 1.5 * 2^23 to a float under 2^22 in magnitude puts its rounded
// integer part in the low mantissa bits (the sum's unit in the last place is
// one). On the GPU two additions do what a conversion instruction does at a
// quarter of the rate; the host uses the C library (same results).
constexpr float kRoundingShift = 12582912.0f;  // 1.5 * 2^23, bit pattern 0x4B400000
constexpr int32_t kRoundingShiftBits = 0x4B400000;
constexpr float kSplitLimit = 4194304.0f;      // 2^22: |x| below it for split_floor

// A phase in turns reduced to [-1/2, 1/2] (exact in floating point).
CS_HD double reduce_turns(double t) { return t - rint(t); }
CS_HD float reduce_turns(float t) {
#if defined(__CUDA_ARCH__)
  return t - __fsub_rn(__fadd_rn(t, kRoundingShift), kRoundingShift);  // round half to even, as rintf
#else
  return t - rintf(t);
#endif
}

// x = whole + fraction with whole = floor(x), 0 <= fraction < 1, for |x| < kSplitLimit.
CS_HD void split_floor(float x, int32_t &whole, float &fraction) {
#if defined(__CUDA_ARCH__)
  const float shifted = __fadd_rd(x, kRoundingShift);  // rounded down: floor(x) + shift
  whole = __float_as_int(shifted) - kRoundingShiftBits;
  fraction = x - __fsub_rn(shifted, kRoundingShift);   // exact
#else
  const float w = floorf(x);
  whole = static_cast<int32_t>(w);
  fraction = x - w;
#endif
}

// The same split in double, for |x| < 2^31: adding 1.5 * 2^52 rounded down
// leaves floor(x) in the low mantissa bits. On the GPU three additions
// replace a rounding and a conversion instruction, both of which run on the
// unit that the double mode's sample conversions and square roots also need.
constexpr double kRoundingShiftDouble = 6755399441055744.0;  // 1.5 * 2^52
CS_HD void split_floor(double x, int32_t &whole, double &fraction) {
#if defined(__CUDA_ARCH__)
  const double shifted = __dadd_rd(x, kRoundingShiftDouble);
  whole = __double2loint(shifted);                      // floor(x) as two's complement
  fraction = x - __dsub_rn(shifted, kRoundingShiftDouble);  // exact, as x - floor(x)
#else
  const double w = floor(x);
  whole = static_cast<int32_t>(w);
  fraction = x - w;
#endif
}

// x * y reduced modulo one turn, exactly up to the final rounding: the fused
// multiply-add subtracts the integer nearest the product from the exact product.
// (The host computes the product in double, where it is exact.)
CS_HD float product_turns(float x, float y) {
#if defined(__CUDA_ARCH__)
  const float rounded = x * y;
  return __fmaf_rn(x, y, -(rounded - reduce_turns(rounded)));
#else
  const double exact = static_cast<double>(x) * static_cast<double>(y);
  return static_cast<float>(exact - rint(exact));
#endif
}

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
// sin(2 pi r) = r P(r^2) and cos(2 pi r) = Q(r^2) on |r| <= 1/8: the
// coefficients of P, then those of Q, each from the lowest power;
// least-squares fits at Chebyshev nodes (tools/fit_turn_polynomials.py),
// relative error under 5e-17 once rounded to double.
#define CS_TURN_POLYNOMIALS                                                                         \
  6.283185307179586, -41.341702240399634, 81.60524927594447, -76.70585970330443, 42.05868490074138, \
      -15.093797430936103, 3.780724593736123, 1.0, -19.739208802178716, 64.93939402266793,          \
      -85.45681720650954, 60.24464132647551, -26.426250685390002, 7.903081346641373, -1.6966611364753763
constexpr int kTurnSineTerms = 7, kTurnCosineTerms = 8;
constexpr double kTurnPolynomialsHost[kTurnSineTerms + kTurnCosineTerms] = {CS_TURN_POLYNOMIALS};
#if defined(__CUDACC__)
// On the GPU in constant memory, where the double multiply-adds take them as
// operands: as literals each was first built in registers by two moves, a
// fifth of the double mode's instructions.
static __constant__ double kTurnPolynomialsDevice[kTurnSineTerms + kTurnCosineTerms] = {CS_TURN_POLYNOMIALS};
#endif
CS_HD double turn_polynomial_coefficient(int i) {
#if defined(__CUDA_ARCH__)
  return kTurnPolynomialsDevice[i];
#else
  return kTurnPolynomialsHost[i];
#endif
}

// exp(+j 2 pi t) in double for any t under 2^50 turns: t = q / 4 + r with q
// an integer and |r| <= 1/8 (r exact), the polynomials above at r, then q
// quarter turns. On the GPU, q comes from adding 1.5 * 2^52 (in the low
// mantissa bits, with no rounding or conversion instruction: those run at a
// quarter of the double rate on the unit the sample conversions need).
// Absolute error about 1.5e-16 (test_backprojection.cpp checks it).
CS_HD Complex<double> phasor_of_any_turns(double t) {
  int quarter;
  double r;
#if defined(__CUDA_ARCH__)
  const double shifted = __fma_rn(t, 4.0, kRoundingShiftDouble);
  quarter = __double2loint(shifted) & 3;
  r = __fma_rn(__dsub_rn(shifted, kRoundingShiftDouble), -0.25, t);
#else
  const double whole_quarters = rint(4.0 * t);
  quarter = static_cast<int>(static_cast<int64_t>(whole_quarters) & 3);
  r = t - 0.25 * whole_quarters;
#endif
  const double u = r * r;
  constexpr int kLastSine = kTurnSineTerms - 1, kLastCosine = kTurnSineTerms + kTurnCosineTerms - 1;
  double p = turn_polynomial_coefficient(kLastSine);
  for (int i = kLastSine - 1; i >= 0; --i) p = fma_hd(p, u, turn_polynomial_coefficient(i));
  double q = turn_polynomial_coefficient(kLastCosine);
  for (int i = kLastCosine - 1; i > kLastSine; --i) q = fma_hd(q, u, turn_polynomial_coefficient(i));
  const double sin_r = r * p, cos_r = q;
  // Each quarter turn takes (sin, cos) to (cos, -sin).
  double s = quarter & 1 ? cos_r : sin_r;
  double c = quarter & 1 ? sin_r : cos_r;
  s = quarter & 2 ? -s : s;
  c = (quarter + 1) & 2 ? -c : c;
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

// 1 / sqrt(x) for x > 0: in fast mode on the GPU the hardware approximation
// alone (flush-to-zero: no handling of subnormal inputs, which never occur
// here), within 2 ulp as the library's.
template <bool kFastMath>
CS_HD float rsqrt_hd(float x) {
#if defined(__CUDA_ARCH__)
  if (kFastMath) {
    float r;
    asm("rsqrt.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));
    return r;
  }
  return rsqrtf(x);
#else
  return 1.0f / sqrtf(x);
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

// The profile at bin position base + fraction (0 <= fraction < 1). kChecked
// false: the caller knows the whole stencil lies inside the profile.
template <Interpolation I, class Real, bool kFastMath, bool kChecked = true>
CS_HD Complex<Real> interpolate_profile(const Cf32 *profile, int bins, int base, Real fraction, const KnabKernel &knab) {
  if (I == Interpolation::Nearest) {
    const int index = fraction >= Real(0.5) ? base + 1 : base;
    return kChecked ? profile_sample<Real>(profile, bins, index) : load_sample<Real>(profile + index);
  }
  if (I == Interpolation::Linear) {
    const bool both_inside = !kChecked || (base >= 0 && base < bins - 1);  // the common case: one check
    const Complex<Real> a = both_inside ? load_sample<Real>(profile + base) : profile_sample<Real>(profile, bins, base);
    const Complex<Real> b =
        both_inside ? load_sample<Real>(profile + base + 1) : profile_sample<Real>(profile, bins, base + 1);
    return {fma_hd(fraction, b.re - a.re, a.re), fma_hd(fraction, b.im - a.im, a.im)};
  }
  Complex<Real> acc = {Real(0), Real(0)};
  const Real sin_pi_f = sin_pi_fraction(fraction);
  for (int n = 1 - knab.taps / 2; n <= knab.taps / 2; ++n) {
    const Complex<Real> s =
        kChecked ? profile_sample<Real>(profile, bins, base + n) : load_sample<Real>(profile + base + n);
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

// ---------------------------------------------------------------- double

// dr of a pixel at `x` (relative to the grid centre) for a pulse; kLegs = 1
// for a monostatic pulse (T == R), 2 otherwise.
template <int kLegs>
CS_HD double differential_range(const PulseGeometry &p, Pos3 x) {
  if (kLegs == 1) return norm(p.tx - x) - p.reference_range_m;
  return 0.5 * (norm(p.tx - x) + norm(p.rcv - x)) - p.reference_range_m;
}

// Double: acc += this pulse's contribution. kKnownInside: the caller knows
// that the pixel's whole stencil lies inside the profile (a GPU chunk of
// pulses whose tile records all say tile_inside), so nothing is checked.
template <Interpolation I, int kLegs, bool kKnownInside = false>
CS_HD void accumulate_double(Complex<double> &acc, const PulseGeometry &p, Pos3 pixel, const Cf32 *profile, int bins,
                              const KnabKernel &knab) {
  const double dr = differential_range<kLegs>(p, pixel);
  const double position = (dr - p.first_bin_m) * p.bins_per_metre;
  // Outside the profile, with room for the widest stencil (also false for NaN).
  if (!kKnownInside && !(position > -kMaxKnabTaps && position < static_cast<double>(bins) + kMaxKnabTaps)) return;
  int32_t whole;
  double fraction;
  split_floor(position, whole, fraction);
  const Complex<double> sample =
      interpolate_profile<I, double, false, !kKnownInside>(profile, bins, whole, fraction, knab);
  const Complex<double> phasor = phasor_of_any_turns(dr * p.turns_per_metre);
  multiply_accumulate(acc, sample, phasor);
}

// ---------------------------------------------------------------- mixed and fast

// Offsets of a tile's pixels from its reference pixel: columns in
// [-kTileColumns/2, kTileColumns/2), rows in [-kTileRows/2, kTileRows/2).
constexpr int kTileHalfColumns = kTileColumns / 2;
constexpr int kTileHalfRows = kTileRows / 2;

constexpr double kInverseRoot2 = 0.70710678118654752440;
constexpr float kRoot2 = 1.41421356237309504880f;

// The record of pulse `p` for the tile whose reference pixel lies at
// `reference` (relative to the grid centre), for profiles of `bins` samples.
// All in double, once per (tile, pulse).
template <int kLegs>
CS_HD TileRecord make_tile_record(const PulseGeometry &p, Pos3 reference, const GridGeometry &g, int bins) {
  TileRecord r;
  const double weight = kLegs == 1 ? 1.0 : 0.5;
  const double tile_radius_sq = (kTileHalfColumns * g.column_spacing_m) * (kTileHalfColumns * g.column_spacing_m) +
                                (kTileHalfRows * g.row_spacing_m) * (kTileHalfRows * g.row_spacing_m);
  double range = 0, per_column = 0, per_row = 0, curvature_bound = 0;
  for (int leg = 0; leg < 2; ++leg) {
    if (leg >= kLegs) {
      r.leg_range_m[leg] = r.leg_scaled_per_column[leg] = r.leg_scaled_per_row[leg] = 0.0f;
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
    // q <= p / (2 (R - radius)); an antenna inside the tile: no bound.
    const double nearest = distance - sqrt(tile_radius_sq);
    curvature_bound += nearest > 0 ? weight * tile_radius_sq / (2.0 * nearest) : kFarBins;
    r.leg_range_m[leg] = static_cast<float>(distance);
    r.leg_scaled_per_column[leg] = static_cast<float>(column_m * kInverseRoot2);
    r.leg_scaled_per_row[leg] = static_cast<float>(row_m * kInverseRoot2);
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
  // The farthest any pixel's bin position strays from the reference's, plus
  // the widest stencil and a margin for float rounding.
  const double spread = kTileHalfColumns * fabs(per_column * p.bins_per_metre) +
                        kTileHalfRows * fabs(per_row * p.bins_per_metre) +
                        curvature_bound * fabs(p.bins_per_metre) + kMaxKnabTaps / 2 + 2;
  r.tile_inside = position - spread >= 0.0 && position + spread < static_cast<double>(bins) - 1.0 &&
                  spread < kSplitLimit / 2;
  return r;
}

// Mixed (kFastMath false) and fast (true): acc += the contribution of the
// pulse behind `r` to pixel `px`. kKnownInside: the caller knows that
// r.tile_inside holds (a GPU chunk of pulses where it holds for all). The
// host uses the C library where the GPU takes its hardware functions.
template <Interpolation I, int kLegs, bool kFastMath, bool kKnownInside = false>
CS_HD void accumulate_tile(Complex<float> &acc, const TileRecord &r, const TilePixel &px, const Cf32 *profile,
                           int bins, const KnabKernel &knab) {
  // Curvature: the part of the range offset beyond the linear term.
  float curvature = 0.0f;
  for (int leg = 0; leg < kLegs; ++leg) {
    const float scaled_along = fma_hd(px.columns, r.leg_scaled_per_column[leg], px.rows * r.leg_scaled_per_row[leg]);
    const float half_across_sq = fma_hd(-scaled_along, scaled_along, px.half_offset_sq_m2);
    const float s = fma_hd(scaled_along, kRoot2, r.leg_range_m[leg]);
    const float q = half_across_sq * rsqrt_hd<true>(fma_hd(s, s, half_across_sq));
    curvature += kLegs == 1 ? q : 0.5f * q;
  }
  float offset_bins =
      fma_hd(curvature, r.bins_per_metre, fma_hd(px.columns, r.bins_per_column, fma_hd(px.rows, r.bins_per_row, r.bin_fraction)));
  float turns;
  if (kFastMath) {
    turns = fma_hd(curvature, r.turns_per_metre,
                   fma_hd(px.columns, r.turns_per_column, fma_hd(px.rows, r.turns_per_row, r.turns)));
  } else {
    turns = fma_hd(curvature, r.turns_per_metre,
                   r.turns + (product_turns(px.columns, r.turns_per_column) + product_turns(px.rows, r.turns_per_row)));
  }
  Complex<float> sample;
  if (kKnownInside || r.tile_inside) {
    int32_t whole;
    float fraction;
    split_floor(offset_bins, whole, fraction);
    // Never negative here: unsigned indexing spares the GPU a sign extension.
    const Cf32 *at = profile + static_cast<uint32_t>(r.bin_base + whole);
    sample = interpolate_profile<I, float, kFastMath, false>(at, bins, 0, fraction, knab);
  } else {
    // Far outside (or NaN): clamped so that the split stays valid; the bounds checks do the rest.
    offset_bins = fminf(fmaxf(offset_bins, -kSplitLimit / 2), kSplitLimit / 2);
    int32_t whole;
    float fraction;
    split_floor(offset_bins, whole, fraction);
    const int64_t base = static_cast<int64_t>(r.bin_base) + whole;
    const int32_t clamped = base < -kMaxKnabTaps ? -kMaxKnabTaps : (base > bins ? bins : static_cast<int32_t>(base));
    sample = interpolate_profile<I, float, kFastMath, true>(profile, bins, clamped, fraction, knab);
  }
  multiply_accumulate(acc, sample, phasor_of_turns<true>(reduce_turns(turns)));
}

}  // namespace cs::sar
