// Complex SAR image -> grey levels for people: magnitude in dB, a window of
// `dynamic_range_db` below a reference level mapped linearly onto 0..max.
//
//   level(z) = max * clamp((20 log10 |z| - (reference_db - dynamic_range_db)) / dynamic_range_db, 0, 1)
//
// rounded to the nearest integer. The reference is the image's peak (its
// brightest pixel is full scale) or a fixed level, so that the frames of a
// video keep one scale. Zero maps to 0; a non-finite pixel maps to 0 too and
// is not taken as the peak.
#pragma once

#include <math.h>
#include <stdint.h>

#include <cmath>
#include <complex>
#include <cstddef>

#include "common/hd.h"

namespace cs::sar {

struct DisplayScale {
  float reference_db;      // dB of full scale (20 log10 of a magnitude)
  float dynamic_range_db;  // > 0: dB below the reference that map to 0
  float max_level;         // 255 (GRAY8) or 65535 (GRAY16)
};

CS_HD float display_level(float re, float im, const DisplayScale &s) {
  const float power = re * re + im * im;
  if (!(power > 0.0f) || !isfinite(power)) return 0.0f;
  const float db = 10.0f * log10f(power);
  float t = (db - (s.reference_db - s.dynamic_range_db)) / s.dynamic_range_db;
  t = t < 0.0f ? 0.0f : (t > 1.0f ? 1.0f : t);
  return floorf(t * s.max_level + 0.5f);
}

// dB of the brightest finite pixel (-inf for an image of zeros).
inline float peak_db(const std::complex<float> *image, size_t count) {
  float peak = 0.0f;
  for (size_t i = 0; i < count; ++i) {
    const float p = std::norm(image[i]);
    if (std::isfinite(p) && p > peak) peak = p;
  }
  return 10.0f * std::log10(peak);
}

// Host: the grey levels of `count` pixels into `out` (uint8_t or uint16_t).
template <class Level>
void to_display_levels(const std::complex<float> *image, size_t count, const DisplayScale &s, Level *out) {
  for (size_t i = 0; i < count; ++i) out[i] = static_cast<Level>(display_level(image[i].real(), image[i].imag(), s));
}

}  // namespace cs::sar
