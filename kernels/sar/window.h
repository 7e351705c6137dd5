// Spectral weighting windows for range compression, evaluated on a
// normalised position u in [0, 1] across the band (0 outside). The functions
// are CS_HD: the CPU path, the CUDA path and the tests evaluate the same code.
#pragma once

#include <cmath>

#include "common/hd.h"

namespace cs::sar {

enum class WindowKind : int { None, Hamming, Hann, Taylor, Kaiser };

// User-facing description of a window.
struct WindowSpec {
  WindowKind kind = WindowKind::None;
  int taylor_nbar = 4;           // Taylor: number of nearly equal sidelobes
  double taylor_sll_db = -35.0;  // Taylor: peak sidelobe level (the sign is ignored)
  double kaiser_beta = 6.0;      // Kaiser: shape parameter
};

constexpr int kMaxTaylorTerms = 64;

// Plain data ready for evaluation anywhere (host or device, by value).
struct WindowParams {
  WindowKind kind = WindowKind::None;
  int taylor_terms = 0;                       // nbar - 1 coefficients F_1..F_{nbar-1}
  double taylor_coefficients[kMaxTaylorTerms] = {};
  double kaiser_beta = 0;
  double kaiser_inv_i0_beta = 1;
};

// Modified Bessel function of the first kind, order 0 (power series; converges
// for all x used by Kaiser windows, beta up to ~50).
CS_HD double bessel_i0(double x) {
  const double q = 0.25 * x * x;
  double term = 1.0, sum = 1.0;
  for (int k = 1; k < 200; ++k) {
    term *= q / (static_cast<double>(k) * static_cast<double>(k));
    sum += term;
    if (term < 1e-17 * sum) break;
  }
  return sum;
}

CS_HD double window_value(const WindowParams &w, double u) {
  if (u < 0.0 || u > 1.0) return 0.0;
  const double two_pi = 6.283185307179586476925286766559;
  switch (w.kind) {
    case WindowKind::None: return 1.0;
    case WindowKind::Hamming: return 0.54 - 0.46 * cos(two_pi * u);
    case WindowKind::Hann: return 0.5 - 0.5 * cos(two_pi * u);
    case WindowKind::Taylor: {
      const double x = u - 0.5;
      double sum = 1.0;
      for (int m = 1; m <= w.taylor_terms; ++m) sum += 2.0 * w.taylor_coefficients[m - 1] * cos(two_pi * m * x);
      return sum;
    }
    case WindowKind::Kaiser: {
      const double r = 2.0 * u - 1.0;
      const double s = 1.0 - r * r;
      return bessel_i0(w.kaiser_beta * sqrt(s > 0.0 ? s : 0.0)) * w.kaiser_inv_i0_beta;
    }
  }
  return 0.0;
}

// Host: computes Taylor coefficients and Kaiser normalisation; validates the spec
// (throws std::invalid_argument for nbar outside 1..kMaxTaylorTerms, a
// non-positive sidelobe level, or a negative beta).
WindowParams make_window(const WindowSpec &spec);
const char *to_string(WindowKind k);

}  // namespace cs::sar
