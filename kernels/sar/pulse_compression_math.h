// Per-sample math of pulse compression, shared by the CPU (FFTW) and CUDA
// (cuFFT) paths. Both run the same three steps around their FFT library:
//
// Time domain (TOA), N fast-time samples -> M = U * N range bins:
//   X = FFT_N(x);  Y[pad(k)] = X[k] * H[k];  y = IFFT_M(Y)
//   H[k] = conj(R[k]) * w(f_k / B + 1/2) * g[k] * scale: the matched filter
//   (R the reference chirp's spectrum; g = 1, or 1/|R|^2 when equalized),
//   band-limited to the chirp band and weighted by the window; `scale` makes
//   a point target of amplitude a peak at a * mean(w) over the band.
//   Output bin m is the delay SC0 + m / (U fs)
//   relative to the reference point: the input's own time axis, finer.
// Frequency domain (FX), K frequency samples -> M = U * K range bins:
//   Y[k] = S[k] * W[k] (k < K, zeros after),
//   W[k] = w((k + 1/2) / K) * exp(-j s 2 pi k h / M) / K,  h = floor(M / 2)
//   y = DFT_M^(s)(Y) * rot(m),  rot(m) = exp(-j s pi (K - 1)(m - h) / M)
//   with s = -SGN and DFT^(s) the DFT with kernel exp(+j s 2 pi k m / M) (for
//   SGN = -1 the inverse FFT). This evaluates
//   P(dr_m) = 1/K sum_k S[k] w_k exp(j s 2 pi (f_k - f_c) 2 dr_m / c),
//   dr_m = (m - h) c / (2 SCSS M), f_c the centre of the sampled band:
//   a target at dr0 gives a * exp(-j s 4 pi f_c dr0 / c) * (real, even lobe in dr - dr0),
//   the same form as the TOA output, so backprojection treats both alike.
#pragma once

#include <cstdint>

#include "common/hd.h"

namespace cs::sar {

// Layout-compatible with std::complex<float>, float2 and cufftComplex.
struct Cf32 {
  float re, im;
};

CS_HD Cf32 cmul(Cf32 a, Cf32 b) { return {a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re}; }

// Complex int16 input (CPHD CI4, ADC data): the signal is the integer pair
// times the pulse's scale (CPHD AmpSF). Layout-compatible with std::complex<int16_t>.
struct Ci16 {
  int16_t re, im;
};

// A sample as complex float: the input formats' one conversion.
CS_HD Cf32 sample_value(Cf32 s, float) { return s; }
CS_HD Cf32 sample_value(Ci16 s, float scale) {
  return {static_cast<float>(s.re) * scale, static_cast<float>(s.im) * scale};
}

// Where spectrum bin k of an n-point FFT goes in the m-point zero-padded
// spectrum (m >= n): non-negative frequencies stay at the front, negative
// frequencies move to the back, zeros fill the middle.
CS_HD int64_t padded_spectrum_index(int64_t k, int64_t n, int64_t m) { return k < (n + 1) / 2 ? k : k + (m - n); }

// Inverse of padded_spectrum_index: the input bin feeding padded bin j, or -1 for a zero.
CS_HD int64_t spectrum_source_index(int64_t j, int64_t n, int64_t m) {
  if (j < (n + 1) / 2) return j;
  if (j >= m - n / 2) return j - (m - n);
  return -1;
}

// Signed frequency index of FFT bin k of n (k for the first half, k - n after).
CS_HD int64_t signed_bin(int64_t k, int64_t n) { return k < (n + 1) / 2 ? k : k - n; }

// exp(-j s pi a b / M) for integers a, b: the product is reduced modulo 2M
// exactly before the trigonometry, so the phase stays accurate for any size.
CS_HD Cf32 exact_phase_rotation(int64_t a, int64_t b, int64_t big_m, int s) {
  const int64_t two_m = 2 * big_m;
  int64_t q = ((a % two_m) * (b % two_m)) % two_m;
  if (q < 0) q += two_m;
  const double pi = 3.14159265358979323846;
  const double phase = -static_cast<double>(s) * pi * static_cast<double>(q) / static_cast<double>(big_m);
  return {static_cast<float>(cos(phase)), static_cast<float>(sin(phase))};
}

// rot(m) of the FX path: exp(-j s pi (K-1)(m - h) / M).
CS_HD Cf32 fx_output_rotation(int64_t m, int64_t big_m, int64_t k, int s) {
  return exact_phase_rotation(k - 1, m - big_m / 2, big_m, s);
}

// The twiddle in W[k] of the FX path: exp(-j s 2 pi k h / M).
CS_HD Cf32 fx_input_twiddle(int64_t k, int64_t big_m, int s) {
  return exact_phase_rotation(2 * k, big_m / 2, big_m, s);
}

// Window position of FX sample k of K: the centre of its cell across the band.
CS_HD double fx_window_position(int64_t k, int64_t count) {
  return (static_cast<double>(k) + 0.5) / static_cast<double>(count);
}

}  // namespace cs::sar
