// Per-pixel spectral matching math, shared by the CPU classifier and the CUDA
// kernel (CS_HD: both compilers see the same code, so CI tests what the GPU
// computes). Both loops walk a pixel's selected bands in the same order and
// call the functions here; only how values reach them differs (the GPU stages
// chunks of bands in shared memory for coalesced loads).
//
// Methods (score of pixel x against reference r over the selected bands):
//   sam          spectral angle, acos(x.r / |x||r|), radians; lower is better
//                (Kruse et al. 1993).
//   sid          spectral information divergence, sum (p - q)(log p - log q)
//                with p = x / sum x, q = r / sum r; lower is better (Chang
//                2000). SID needs positive spectra: values below kSidFloor are
//                raised to it (reflectance is sometimes <= 0 in noisy bands).
//   correlation  Pearson correlation of x and r (spectral correlation mapper,
//                de Carvalho & Meneses 2000); higher is better.
//   bandfit      Clark's band fit (Clark et al. 1990, 2003): x and r are each
//                divided by a straight-line continuum between the first and the
//                last selected band, and the fit is the correlation of the two
//                continuum-removed spectra (the correlation coefficient of the
//                least-squares fit of one to the other); higher is better. The
//                selected band range is the absorption feature. Undefined (no
//                class) when a continuum end point is <= 0.
//   euclidean    minimum distance, sqrt(sum (x - r)^2); lower is better.
//
// Precision (ClassifierConfig::precision):
//   exact  every per-band term is accumulated in double. SAM angles then
//          agree with float64 references to ~1e-7 rad even where acos is
//          ill-conditioned (angles near 0 or pi); SID is limited by its float
//          logarithms (~1e-6 relative); bandfit removes the continuum in
//          double too (band_value says why). On the GPU a double add
//          costs two float operations on data-centre parts (H100/H200) and far
//          more on consumer parts.
//   fast   terms are summed in float over a chunk of kBandChunk bands and the
//          chunk sums in double: relative error of a sum ~1e-7, so an angle
//          is good to ~1e-7 / sin(angle) rad.
//   tensor on CUDA, sam, correlation, bandfit and euclidean become one
//          matrix product (pixels x bands times bands x references; bandfit's
//          pixels continuum-removed in float first, as band_value does) on
//          the tensor cores:
//          TF32 with each operand split into a high and a low TF32 part
//          (three products; what the two parts leave out is ~2^-22 of each
//          operand), float accumulation within a chunk of kBandChunk bands
//          (the tensor cores truncate when they add into an accumulator, so
//          the generic kernel adds each 8-band step's products with
//          rounding), chunk sums in double, then rounded to float once: dot products
//          within ~5e-7 relative of exact. An angle is then good to ~5e-7 /
//          sin(angle) rad (1e-5 rad for angles above ~0.05 rad; ENVI's
//          threshold is 0.1). Euclidean distances are formed from norms,
//          d^2 = |x|^2 - 2 x.r + |r|^2, so their absolute error is ~5e-7
//          (|x|^2 + |r|^2) / d: small distances between bright spectra lose
//          digits. Bandfit's coefficients are correlation's, of the
//          continuum-removed spectra, which are formed in float first (as
//          fast does): their rounding adds up to ~2^-22 sqrt(sum v^2 / var v)
//          (band_value), large for spectra that follow their continuum
//          closely. SID becomes two products, the pixel's logs times q and
//          p times log q, each centred (sid_score; the BIP kernel with
//          wgmma only): its scores are differences of sums of size ~|log|, so
//          they err by ~2^-21 times the logs' spread (a few 1e-6) rather
//          than relative to themselves. The CPU runs tensor as fast. Two CUDA
//          kernels compute this: a generic one (any block) and one for
//          contiguous native BIP blocks (bip_tensor.h); same products,
//          float sums over at most 32 consecutive bands (its windows are
//          staggered per column of references), double beyond: the same
//          bounds. By default that kernel splits into fp16
//          high and low parts instead (11 significant bits each, as TF32),
//          operands scaled by powers of two into fp16's range, float sums
//          per chunk of 32 bands (on Hopper as warp-group instructions):
//          the same bounds; its pixel sums (|x|^2, and sum x for
//          correlation) are float over 8 samples, double beyond, as fast.
//          On Hopper, f32 class maps of every method but sid (K <= 64)
//          are screened instead: one TF32 product per term rules
//          references out within a rigorous bound (screen_operand_error
//          below), and the remaining ones are scored in the fast precision.
//          The BIP kernel, when no rule images are
//          asked for, picks each pixel's class by a key that orders the
//          references as the score does (the dot product for sam, dot /
//          sqrt(reference constant) for correlation, 2 dot - |r|^2 for
//          euclidean, all in double) and scores only the winner: where two
//          references' float scores tie it may keep the higher index.
// In every mode, sums are formed so that they do not cancel: correlation uses
// references centred on the host and pixel values shifted by their first
// band; SID sums its non-negative terms directly once the pixel's total is
// known (one extra pass over the pixel). CPU and GPU accumulate in the same
// order with the same types.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "common/hd.h"
#include "hsi/sample_decode.h"

#if defined(__CUDA_ARCH__)
#define CS_UNROLL _Pragma("unroll")
#elif defined(__CUDACC__)
#define CS_UNROLL  // nvcc's host pass: its front end rejects GCC's pragma
#else
#define CS_UNROLL _Pragma("GCC unroll 16")
#endif

namespace cs::hsi {

enum class Method : int { sam = 0, sid = 1, correlation = 2, bandfit = 3, euclidean = 4 };

inline constexpr Method kAllMethods[] = {Method::sam, Method::sid, Method::correlation, Method::bandfit,
                                         Method::euclidean};

// Bands per chunk: the GPU stages a chunk of every pixel's bands in shared
// memory; in fast precision a chunk's terms are summed in float.
inline constexpr int kBandChunk = 32;
// References scored together in one pass over a pixel's bands (registers).
inline constexpr int kReferenceGroup = 16;
// SID's floor for non-positive values.
inline constexpr float kSidFloor = 1e-12f;

CS_HD constexpr bool higher_is_better(Method m) { return m == Method::correlation || m == Method::bandfit; }
// Planes of prepared reference values per method (SID keeps q and log q).
CS_HD constexpr int table_planes(Method m) { return m == Method::sid ? 2 : 1; }
// Fewest selected bands for which the method means something (over one band
// every spectral angle and divergence is the same).
CS_HD constexpr int minimum_bands(Method m) {
  return m == Method::bandfit ? 3 : (m == Method::euclidean ? 1 : 2);
}

// The prepared references, one flat float array (host, device or constant
// memory):
//   planes x references x bands  per-method values (classifier.cpp, prepare_reference)
//   references                   per-reference constant (correlation, bandfit:
//                                the centred reference's sum of squares)
//   bands                        band position in [0, 1] along the selected
//                                range (bandfit's continuum abscissa)
// An unusable reference (e.g. all zeros for SAM) holds NaN and never matches.
struct ReferenceTableShape {
  int references = 0;
  int bands = 0;
  int planes = 1;

  CS_HD size_t index(int plane, int k, int u) const { return (size_t(plane) * references + k) * bands + u; }
  CS_HD size_t constant_index(int k) const { return size_t(planes) * references * bands + k; }
  CS_HD size_t position_index(int u) const { return size_t(planes) * references * bands + references + u; }
  CS_HD size_t size() const { return size_t(planes) * references * bands + references + bands; }
};

// Table access straight from memory (host arrays; device global memory).
struct PointerTable {
  const float *data;
  ReferenceTableShape shape;
  CS_HD float ref(int plane, int k, int u) const { return data[shape.index(plane, k, u)]; }
  CS_HD float constant(int k) const { return data[shape.constant_index(k)]; }
  CS_HD float position(int u) const { return data[shape.position_index(u)]; }
};

// What the reference pass needs to know about a pixel before it starts.
struct PixelContext {
  float shift = 0;            // correlation, bandfit: subtracted before summing
  float continuum_start = 0;  // bandfit: continuum at position 0 ...
  float continuum_end = 0;    // ... and at position 1
  float inv_sum = 0;          // sid: 1 / sum of floored values
  float log_sum = 0;          // sid: log of that sum
  bool defined = true;        // false: the method is undefined for this pixel
};

CS_HD float sid_floor(float x) { return x < kSidFloor ? kSidFloor : x; }  // NaN stays NaN

enum class Precision : int { exact = 0, fast = 1, tensor = 2 };

// Methods whose sums are dot products of the pixel (bandfit: its
// continuum-removed values) with each reference, so that a block of pixels
// against the references is one matrix product.
CS_HD constexpr bool dot_product_method(Method m) { return m != Method::sid; }
// Methods scored as a correlation: of the pixel shifted by its first band
// (correlation) or of its continuum-removed values shifted by 1 (bandfit),
// with a centred reference; both sum the shifted values and their squares.
CS_HD constexpr bool correlation_like(Method m) { return m == Method::correlation || m == Method::bandfit; }

// Scores from finished sums: the one place of each formula, for the per-pixel
// loops below and the CUDA matrix-product kernel.
// sam: `dot` with the unit reference, `norm2` = sum of the pixel's squares.
CS_HD float sam_score(double dot, double norm2) {
  const double norm = sqrt(norm2);
  if (!(norm > 0)) return quiet_nan();
  double c = dot / norm;  // references are unit vectors
  c = c > 1.0 ? 1.0 : (c < -1.0 ? -1.0 : c);
  return float(acos(c));
}
// correlation, bandfit: `dot` of the shifted pixel with the centred
// reference, `sum`/`sum2` of the shifted pixel, `reference_constant` the
// centred reference's sum of squares.
CS_HD float correlation_score(double dot, double sum, double sum2, int bands, float reference_constant) {
  const double variance = sum2 - sum * sum / bands;
  if (!(variance > 0)) return quiet_nan();
  double r = dot / sqrt(variance * double(reference_constant));
  r = r > 1.0 ? 1.0 : (r < -1.0 ? -1.0 : r);
  return float(r);
}
// euclidean: the squared distance (negative only by rounding when it is
// formed from norms).
CS_HD float euclidean_score(double distance2) { return float(sqrt(distance2 > 0 ? distance2 : 0.0)); }

// sid from its matrix-product form (the tensor precision). With p = v
// inv_sum and log p = log v - log_sum as the per-pixel loops form them,
//   SID_k = sum p log p - sum p log q_k - sum q_k log p + sum q_k log q_k.
// The kernels' `total` is T0 + T1, T0 = sum (log v - m) q_k and T1 = sum p
// (log q_k - c_k), m the pixel's log at its first band and c_k the mean of
// log q_k: centred, so that the products' error scales with the logs'
// spread, not their size. Then sum p log q_k = T1 + c_k sum p and sum q_k
// log p = T0 + (m - log_sum) Q_k, Q_k = sum q_k (1 but for rounding).
// `p_log_p`, `p_sum`: the pixel's sum p log p and sum p; `q_log_q`: sum
// q_k log q_k.
CS_HD float sid_score_of_p(double total, double p_log_p, double p_sum, float log_sum, float m, float c_k,
                           double q_sum, double q_log_q) {
  return float(p_log_p - total - double(c_k) * p_sum - (double(m) - double(log_sum)) * q_sum + q_log_q);
}
// The same from the pixel's sum v and sum v log v (`sum`, `sum_v_log_v`; v floored).
CS_HD float sid_score(double total, double sum, double sum_v_log_v, float inv_sum, float log_sum, float m,
                      float c_k, double q_sum, double q_log_q) {
  const double p_log_p = inv_sum * (sum_v_log_v - double(log_sum) * sum), p_sum = inv_sum * sum;
  return sid_score_of_p(total, p_log_p, p_sum, log_sum, m, c_k, q_sum, q_log_q);
}

// A running sum. Sum<double> adds every term in double; Sum<float> adds in
// float and folds into a double at the end of each chunk of bands.
template <class Acc>
struct Sum;

template <>
struct Sum<double> {
  double total = 0;
  CS_HD void add(double v) { total += v; }
  CS_HD void fold() {}
};

template <>
struct Sum<float> {
  float part = 0;
  double total = 0;
  CS_HD void add(float v) { part += v; }
  CS_HD void fold() {
    total += part;
    part = 0;
  }
};

// The accumulator type of a precision.
template <Precision P>
using AccumulatorOf = std::conditional_t<P == Precision::exact, double, float>;

// first, last: the pixel's values at the first and last selected band;
// floored_sum: sid's pass over the pixel (sum of sid_floor of every value).
template <Method M>
CS_HD PixelContext pixel_context(float first, float last, double floored_sum) {
  PixelContext px;
  if constexpr (M == Method::correlation) {
    px.shift = first;
  } else if constexpr (M == Method::bandfit) {
    px.continuum_start = first;
    px.continuum_end = last;
    px.shift = 1.0f;  // continuum-removed spectra are 1 at both ends
    px.defined = first > 0 && last > 0;
  } else if constexpr (M == Method::sid) {
    px.inv_sum = float(1.0 / floored_sum);
    px.log_sum = float(log(floored_sum));
    px.defined = floored_sum > 0;
  }
  return px;
}

// A product the GPU does not fuse into a multiply-add (so that CPU and GPU
// round alike).
template <class T>
CS_HD T unfused_product(T a, T b) {
#if defined(__CUDA_ARCH__)
  if constexpr (std::is_same_v<T, float>)
    return __fmul_rn(a, b);
  else
    return __dmul_rn(a, b);
#else
  return a * b;
#endif
}

// Bandfit's continuum of a pixel at band position t: start (1 - t) + end t.
// Both terms are positive, so it never cancels (start + (end - start) t lost
// all of a small end next to a large start: a zero continuum at t = 1).
template <class Acc>
CS_HD Acc continuum(float t, const PixelContext &px) {
  const Acc start = px.continuum_start, end = px.continuum_end;
  return unfused_product(start, Acc(1) - Acc(t)) + unfused_product(end, Acc(t));
}

// The value summed for a band, in the accumulator's type: sid floors it,
// bandfit removes the continuum (in double for the exact precision: a float
// quotient's rounding, up to 2^-23 of each value with the continuum's, moves
// a coefficient by up to ~2^-22 sqrt(sum v^2 / variance of v), 1e-5 and more
// for spectra that follow their continuum closely).
template <Method M, class Acc = float>
CS_HD Acc band_value(float x, float position, const PixelContext &px) {
  if constexpr (M == Method::sid) {
    return sid_floor(x);
  } else if constexpr (M == Method::bandfit) {
    return Acc(x) / continuum<Acc>(position, px);
  } else {
    return x;
  }
}

// Sums for a group of up to G references over one pixel's bands, each term
// formed and accumulated in Acc (float or double).
template <Method M, int G, class Acc>
struct ReferenceSums {
  Sum<Acc> ref[G];
  Sum<Acc> pixel[2];  // sam: sum v^2; correlation, bandfit: sum d, sum d^2
  bool finite;

  CS_HD void clear() {
    CS_UNROLL
    for (int j = 0; j < G; ++j) ref[j] = Sum<Acc>();
    pixel[0] = Sum<Acc>();
    pixel[1] = Sum<Acc>();
    finite = true;
  }

  // Band u (index into the selected bands) with raw value x, for references
  // k0 .. k0 + count - 1.
  template <class Table>
  CS_HD void add_band(float x, int u, int k0, int count, const PixelContext &px, const Table &table) {
    const Acc v = band_value<M, Acc>(x, table.position(u), px);
    finite = finite && is_finite(float(v));
    if constexpr (M == Method::sam) {
      pixel[0].add(v * v);
      CS_UNROLL
      for (int j = 0; j < G; ++j)
        if (j < count) ref[j].add(v * Acc(table.ref(0, k0 + j, u)));
    } else if constexpr (M == Method::euclidean) {
      CS_UNROLL
      for (int j = 0; j < G; ++j)
        if (j < count) {
          const Acc diff = v - Acc(table.ref(0, k0 + j, u));
          ref[j].add(diff * diff);
        }
    } else if constexpr (correlation_like(M)) {
      const Acc d = v - Acc(px.shift);
      pixel[0].add(d);
      pixel[1].add(d * d);
      CS_UNROLL
      for (int j = 0; j < G; ++j)
        if (j < count) ref[j].add(d * Acc(table.ref(0, k0 + j, u)));  // references are centred
    } else {  // sid: every term (p - q)(log p - log q) is >= 0
      const Acc p = v * Acc(px.inv_sum);
      const Acc log_p = Acc(logf(float(v))) - Acc(px.log_sum);
      CS_UNROLL
      for (int j = 0; j < G; ++j)
        if (j < count) ref[j].add((p - Acc(table.ref(0, k0 + j, u))) * (log_p - Acc(table.ref(1, k0 + j, u))));
    }
  }

  // End of a chunk of bands.
  CS_HD void fold() {
    CS_UNROLL
    for (int j = 0; j < G; ++j) ref[j].fold();
    pixel[0].fold();
    pixel[1].fold();
  }

  // Score against reference k = k0 + j after all `bands` bands were added
  // (NaN when the pixel has no data or the method is undefined for it).
  template <class Table>
  CS_HD float score(int j, int k, int bands, const PixelContext &px, const Table &table) const {
    if (!finite || !px.defined) return quiet_nan();
    if constexpr (M == Method::sam) {
      return sam_score(ref[j].total, pixel[0].total);
    } else if constexpr (M == Method::euclidean) {
      return euclidean_score(ref[j].total);
    } else if constexpr (correlation_like(M)) {
      return correlation_score(ref[j].total, pixel[0].total, pixel[1].total, bands, table.constant(k));
    } else {
      return float(ref[j].total);
    }
  }
};

// TF32 (the tensor cores' 19-bit float: float's sign and exponent, 10 of its
// 23 fraction bits). The tensor precision writes each operand x as hi + lo,
// hi = x rounded to TF32 and lo = x - hi (exact in float) rounded to TF32:
// what the pair leaves out is at most 2^-22 |x|. Integer operations on the
// bits, so the host's table preparation and the kernels round alike.
CS_HD uint32_t float_bits(float x) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(x);
#else
  uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  return u;
#endif
}
CS_HD float bits_float(uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float x;
  std::memcpy(&x, &u, sizeof x);
  return x;
#endif
}
// Nearest TF32 value, ties away from zero (as cvt.rna.tf32.f32); NaN and
// infinities stay what they are.
CS_HD float tf32_round(float x) { return bits_float((float_bits(x) + 0x1000u) & 0xffffe000u); }
// TF32 by dropping float's 13 low fraction bits (how the tensor cores may
// read a float operand; the screen's bound covers this and tf32_round).
CS_HD float tf32_truncate(float x) { return bits_float(float_bits(x) & 0xffffe000u); }
// lo part of x once hi = tf32_round(x) is known.
CS_HD float tf32_low(float x, float hi) { return tf32_round(x - hi); }

// The BIP screen (bip_tensor.h) forms x_h.r_h with one TF32 product per
// term, x_h and r_h the pixel and reference as the tensor cores read their
// float bits (TF32 keeps 10 of float's 23 fraction bits, truncated or
// rounded). With dx = x - x_h, d_k = r_k - r_hk, c and e the usable
// references' means of r_h and d, exactly
//   x.r_k = x_h.r_hk + dx.c + x.e + dx.(r_hk - c) + x.(d_k - e),
// where dx.c + x.e is the same for every reference, so it orders them as
// x.r_k does. Each dx_b is a known fraction of x_b up to a spread:
// truncated, dx_b / x_b lies in [0, 2^-10); rounded, in [-2^-11, 2^-11].
// The screen multiplies its product by 1 + a, a the middle of the reading's
// range (screen_operand_centre), so that
//   (1 + a) x_h.r_hk = x.r_hk - (dx - a x).r_hk - a dx.r_hk
// with |dx_b - a x_b| <= E |x_b| (screen_operand_error: 2^-11 where the
// device is known to truncate, 3 2^-12 where either reading may occur,
// against 2^-10 without the centring); then the rest is at most
// |x| (E |r_hk - c| + |d_k - e| + a 2^-10 |r_hk|). The table's reading is
// centred alike (the product times (1 + a)^2): r_hk is then 1 + a times the
// reading and d_k = r_k - r_hk, computed exactly on the host, which halves
// |d_k - e| where the reading truncates. Each 8-band step's
// sum into the float accumulator errs by at most kScreenStepError
// sum |x_h r_h| (products exact, additions truncating: counted generously).
// For similar references both norms are small fractions of |r_k|: the
// screen separates them far better than a bound on x.r_k itself would.
// Keys s_k x.r_k with unequal scales (correlation): s_k ((dx - a x).c + x.e)
// = s ((dx - a x).c + x.e) + (s_k - s) ((dx - a x).c + x.e), the first common
// for any s, the second at most |s_k - s| |x| (E |c| + |e|).
// Sam's table holds t_k = s_k r_k - m instead (m the references' mean, as
// float; bip_tensor.cpp, make_screen_references): the same holds with t_k
// for r_k, x.m is common too, and d_k, the TF32 reading's residual, is then
// a fraction of |t_k|, small for similar references, where with r_k it is
// ~2^-12 |r_k| whatever the references.
enum class Tf32Reading {
  truncates,  // the device drops the 13 low fraction bits (bip_tensor.h, tf32_reading)
  unknown,    // truncates or rounds to nearest
};
constexpr double screen_operand_centre(Tf32Reading reading) {
  return reading == Tf32Reading::truncates ? 0x1p-11 : 0x1p-12;
}
constexpr double screen_operand_error(Tf32Reading reading) {
  return reading == Tf32Reading::truncates ? 0x1p-11 : 0x3p-12;
}
inline constexpr double kScreenStepError = 0x1p-19;

// The best reference so far. Ties keep the lower index; NaN never wins.
struct BestMatch {
  float score = 0;
  int index = -1;

  CS_HD void offer(float s, int k, bool higher_better) {
    if (!(s == s)) return;
    if (index < 0 || (higher_better ? s > score : s < score)) {
      score = s;
      index = k;
    }
  }
  // Class label: 0 = unclassified or no data, k + 1 = reference k. A NaN
  // threshold means none.
  CS_HD int label(float threshold, bool higher_better) const {
    if (index < 0) return 0;
    if (threshold == threshold && (higher_better ? score < threshold : score > threshold)) return 0;
    return index + 1;
  }
};

// Calls f(std::integral_constant<Method, M>{}) for the run-time method (host
// code: picks the loop or kernel instantiated for it).
template <class F>
decltype(auto) with_method(Method method, F &&f) {
  switch (method) {
    case Method::sam: return f(std::integral_constant<Method, Method::sam>{});
    case Method::sid: return f(std::integral_constant<Method, Method::sid>{});
    case Method::correlation: return f(std::integral_constant<Method, Method::correlation>{});
    case Method::bandfit: return f(std::integral_constant<Method, Method::bandfit>{});
    case Method::euclidean: break;
  }
  return f(std::integral_constant<Method, Method::euclidean>{});
}

// Calls f(std::integral_constant<Precision, P>{}) for the run-time precision
// of the per-pixel loops (tensor, which only the CUDA matrix-product kernel
// has, runs them as fast).
template <class F>
decltype(auto) with_precision(Precision precision, F &&f) {
  if (precision != Precision::exact) return f(std::integral_constant<Precision, Precision::fast>{});
  return f(std::integral_constant<Precision, Precision::exact>{});
}

}  // namespace cs::hsi
