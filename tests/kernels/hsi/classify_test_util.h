// Synthetic cubes and references for the classification tests.
#pragma once

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "hsi/classifier.h"
#include "hsi/convert.h"
#include "hsi_test_util.h"

namespace hsi_test {

// A smooth, mostly positive reflectance-like spectrum: a sloped baseline with
// a few absorption and emission bumps.
inline std::vector<float> smooth_spectrum(std::mt19937_64 &rng, size_t bands) {
  std::uniform_real_distribution<double> uni(0.0, 1.0);
  const double base = 0.1 + 0.5 * uni(rng), slope = 0.4 * (uni(rng) - 0.5);
  struct Bump {
    double centre, width, depth;
  };
  std::vector<Bump> bumps(2 + rng() % 3);
  for (Bump &b : bumps) b = {uni(rng), 0.02 + 0.15 * uni(rng), 0.3 * (uni(rng) - 0.3)};
  std::vector<float> s(bands);
  for (size_t i = 0; i < bands; ++i) {
    const double t = bands > 1 ? double(i) / double(bands - 1) : 0.0;
    double v = base + slope * t;
    for (const Bump &b : bumps) v -= b.depth * std::exp(-0.5 * std::pow((t - b.centre) / b.width, 2));
    s[i] = float(v);
  }
  return s;
}

struct Scene {
  size_t lines = 0, samples = 0, bands = 0;
  std::vector<float> pixels;  // [line][sample][band]
  cs::hsi::ReferenceSet references;
  std::vector<double> wavelengths_nm;
};

// Pixels are noisy mixtures of the references (so classes mean something),
// with some pure noise pixels, and references drawn by smooth_spectrum.
inline Scene random_scene(std::mt19937_64 &rng, size_t lines, size_t samples, size_t bands, size_t classes,
                          double noise = 0.01) {
  Scene s;
  s.lines = lines;
  s.samples = samples;
  s.bands = bands;
  s.references.bands = bands;
  std::uniform_real_distribution<double> uni(0.0, 1.0);
  std::normal_distribution<double> normal(0.0, 1.0);
  for (size_t k = 0; k < classes; ++k) {
    s.references.names.push_back("ref " + std::to_string(k));
    s.references.library_indices.push_back(k);
    const std::vector<float> r = smooth_spectrum(rng, bands);
    s.references.spectra.insert(s.references.spectra.end(), r.begin(), r.end());
  }
  double w = 400 + 10 * uni(rng);
  for (size_t b = 0; b < bands; ++b) {
    s.wavelengths_nm.push_back(w);
    w += 5 + 10 * uni(rng);
  }
  s.pixels.resize(lines * samples * bands);
  for (size_t p = 0; p < lines * samples; ++p) {
    float *px = s.pixels.data() + p * bands;
    if (rng() % 10 == 0) {
      const std::vector<float> other = smooth_spectrum(rng, bands);
      std::copy(other.begin(), other.end(), px);
      continue;
    }
    const size_t main = rng() % classes, second = rng() % classes;
    const double a = 0.6 + 0.4 * uni(rng), gain = 0.5 + uni(rng);
    for (size_t b = 0; b < bands; ++b)
      px[b] = float(gain * (a * s.references.spectrum(main)[b] + (1 - a) * s.references.spectrum(second)[b]) +
                    noise * normal(rng));
  }
  return s;
}

// Encodes logical [line][sample][band] values as a native block of `type`,
// `interleave` and `order` (whole-cube block: BSQ planes hold every line).
// Integer types take round(value * integer_scale).
inline std::vector<uint8_t> encode_block(const std::vector<float> &values, size_t lines, size_t samples, size_t bands,
                                         cs::hsi::DataType type, cs::hsi::Interleave il, cs::hsi::ByteOrder order,
                                         double integer_scale = 1.0) {
  using cs::hsi::DataType;
  const size_t size = cs::hsi::sample_size(type);
  std::vector<uint8_t> out(values.size() * size);
  for (size_t l = 0; l < lines; ++l)
    for (size_t x = 0; x < samples; ++x)
      for (size_t b = 0; b < bands; ++b) {
        const float v = values[(l * samples + x) * bands + b];
        // NaN has no integer form: 0 (the tests use 0 as the ignore value).
        const double scaled = std::isnan(v) ? 0.0 : std::round(double(v) * integer_scale);
        uint64_t bits = 0;
        switch (type) {
          case DataType::f32: {
            uint32_t u;
            std::memcpy(&u, &v, 4);
            bits = u;
            break;
          }
          case DataType::f64: {
            const double d = v;
            std::memcpy(&bits, &d, 8);
            break;
          }
          case DataType::u8: bits = uint8_t(scaled); break;
          case DataType::i16: bits = uint16_t(int16_t(scaled)); break;
          case DataType::u16: bits = uint16_t(scaled); break;
          case DataType::i32: bits = uint32_t(int32_t(scaled)); break;
          case DataType::u32: bits = uint32_t(scaled); break;
          case DataType::i64: bits = uint64_t(int64_t(scaled)); break;
          case DataType::u64: bits = uint64_t(scaled); break;
        }
        put_sample(out, file_index(il, lines, samples, bands, l, x, b) * size, bits, size, order);
      }
  return out;
}

inline cs::hsi::CubeBlock block_of(const std::vector<uint8_t> &bytes, size_t lines, size_t samples, size_t bands,
                                   cs::hsi::DataType type, cs::hsi::Interleave il, cs::hsi::ByteOrder order,
                                   std::optional<double> ignore = std::nullopt,
                                   std::optional<double> scale_factor = std::nullopt) {
  cs::hsi::CubeBlock block;
  block.data = bytes.data();
  block.format = cs::hsi::make_sample_format(type, order, ignore, scale_factor);
  block.layout = cs::hsi::block_layout(il, lines, samples, bands);
  return block;
}

// Written into outputs before a run: a value no classifier produces.
inline constexpr float kPoison = -7777.0f;

// Labels and rule images of one classification of a block.
struct Result {
  std::vector<uint16_t> labels;
  std::vector<float> rules;
};

inline Result classify_cpu(const cs::hsi::SpectralClassifier &c, const cs::hsi::CubeBlock &block) {
  const size_t pixels = block.layout.pixels();
  Result r;
  r.rules.assign(pixels * c.class_count(), kPoison);
  std::vector<uint8_t> map8(pixels, 0xEE);
  std::vector<uint16_t> map16(pixels, 0xEEEE);
  cs::hsi::ClassificationOutput out;
  out.class_map_format = c.class_map_format();
  out.class_map = out.class_map_format == cs::hsi::ClassMapFormat::gray8 ? static_cast<void *>(map8.data())
                                                                          : static_cast<void *>(map16.data());
  out.rule_images = r.rules.data();
  c.classify(block, out);
  r.labels.resize(pixels);
  for (float v : r.rules)
    if (v == kPoison) {
      ADD_FAILURE() << "a rule image value was not written";
      break;
    }
  for (size_t p = 0; p < pixels; ++p)
    r.labels[p] = out.class_map_format == cs::hsi::ClassMapFormat::gray8 ? map8[p] : map16[p];
  return r;
}

inline bool same_bits(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0 || (std::isnan(a) && std::isnan(b)); }

}  // namespace hsi_test
