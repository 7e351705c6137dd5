// The host side of the contiguous-BIP tensor kernel (bip_tensor.h), checked
// without a GPU: the TF32 split, the fragment table's layout (every reference
// value of every selected band exactly once, where the kernel's lanes read
// it), the ranking keys that pick the winner without computing every score,
// and which blocks the kernel accepts.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <set>

#include "classify_test_util.h"
#include "hsi/bip_tensor.h"

using namespace cs::hsi;
namespace bt = cs::hsi::bip_tensor;

namespace {

bool is_tf32(float x) { return (float_bits(x) & 0x1fffu) == 0; }

}  // namespace

TEST(BipTensor, Tf32SplitLeavesOutAtMostTwoToTheMinus22) {
  std::mt19937_64 rng(cs_test::fresh_seed());
  std::uniform_real_distribution<double> mantissa(1.0, 2.0);
  std::uniform_int_distribution<int> exponent(-60, 60);
  for (int i = 0; i < 100000; ++i) {
    const float x = float((rng() % 2 ? -1 : 1) * std::ldexp(mantissa(rng), exponent(rng)));
    const float hi = tf32_round(x), lo = tf32_low(x, hi);
    ASSERT_TRUE(is_tf32(hi) && is_tf32(lo)) << x;
    ASSERT_LE(std::fabs(double(x) - double(hi) - double(lo)), std::ldexp(std::fabs(double(x)), -22)) << x;
  }
  // Integers of up to 17 bits: lo is exact without rounding (the kernel relies on it).
  for (int v = -70000; v <= 70000; v += 7) {
    const float x = float(v), hi = tf32_round(x);
    EXPECT_TRUE(is_tf32(x - hi)) << v;
    EXPECT_EQ(double(hi) + double(x - hi), double(v));
  }
  EXPECT_TRUE(std::isnan(tf32_round(NAN)));
  EXPECT_EQ(tf32_round(INFINITY), INFINITY);
}

TEST(BipTensor, FragmentBandsCoverEachChunkOnce) {
  for (int step = 0; step < bt::kStepsPerChunk; ++step) {
    std::set<int> step_bands;
    for (int lane = 0; lane < bt::kLanes; ++lane)
      for (int second = 0; second < 2; ++second) {
        const int band = bt::fragment_band(step, lane, second);
        // Lanes of one quad position t see the same bands (k = t, t + 4).
        EXPECT_EQ(band, bt::fragment_band(step, lane % 4, second));
        step_bands.insert(band);
      }
    EXPECT_EQ(step_bands.size(), 8u) << "step " << step;
  }
  std::set<int> all;
  for (int step = 0; step < bt::kStepsPerChunk; ++step)
    for (int t = 0; t < 4; ++t)
      for (int second = 0; second < 2; ++second) all.insert(bt::fragment_band(step, t, second));
  EXPECT_EQ(all.size(), size_t(bt::kChunkBands));
  EXPECT_EQ(*all.rbegin(), bt::kChunkBands - 1);
  // A thread's four bands of a span are adjacent: one 16-byte load.
  for (int t = 0; t < 4; ++t)
    for (int span = 0; span < 2; ++span) {
      EXPECT_EQ(bt::fragment_band(2 * span, t, 0), 16 * span + 4 * t);
      EXPECT_EQ(bt::fragment_band(2 * span, t, 1), 16 * span + 4 * t + 1);
      EXPECT_EQ(bt::fragment_band(2 * span + 1, t, 0), 16 * span + 4 * t + 2);
      EXPECT_EQ(bt::fragment_band(2 * span + 1, t, 1), 16 * span + 4 * t + 3);
    }
}

// Rebuilds every pixel-reference dot product from the fragment table the way
// the kernel's lanes combine it (3 x TF32 products, pixel split as the kernel
// does) and checks it against the double dot product: each (reference, band)
// must be present exactly once, padding must be zero.
TEST(BipTensor, FragmentTableHoldsEveryReferenceValueOnce) {
  std::mt19937_64 rng(cs_test::fresh_seed());
  for (const auto &[K, bands] : {std::pair<size_t, size_t>{1, 7}, {37, 45}, {64, 224}, {100, 70}}) {
    SCOPED_TRACE("K=" + std::to_string(K) + " bands=" + std::to_string(bands));
    hsi_test::Scene scene = hsi_test::random_scene(rng, 1, 3, bands, K);
    ClassifierConfig config;
    config.method = Method::euclidean;  // raw reference values
    config.precision = Precision::tensor;
    const SpectralClassifier c(config, scene.references, select_bands(bands, {}));
    const bt::Tables t = bt::make_tables(c.method(), c.table(), c.table_shape());
    ASSERT_EQ(t.groups, int((K + 63) / 64));
    ASSERT_EQ(t.chunks, int((bands + 31) / 32));
    ASSERT_EQ(t.fragments.size(), 4 * bt::fragment_index(t.groups, 0, t.chunks, 0, 0, 0));
    std::vector<int> seen(size_t(t.groups) * 64 * size_t(t.chunks) * 32, 0);
    for (size_t p = 0; p < 3; ++p) {
      const float *x = scene.pixels.data() + p * bands;
      std::vector<double> dot(size_t(t.groups) * 64, 0.0);
      for (int group = 0; group < t.groups; ++group)
        for (int chunk = 0; chunk < t.chunks; ++chunk)
          for (int step = 0; step < bt::kStepsPerChunk; ++step)
            for (int column = 0; column < bt::kColumnsPerGroup; ++column)
              for (int lane = 0; lane < bt::kLanes; ++lane) {
                const float *e = &t.fragments[4 * bt::fragment_index(group, chunk, t.chunks, step, column, lane)];
                const int k = group * 64 + bt::fragment_reference(column, lane);
                for (int second = 0; second < 2; ++second) {
                  const int u = chunk * 32 + bt::fragment_band(step, lane, second);
                  const float r_hi = e[second], r_lo = e[2 + second];
                  ASSERT_TRUE(is_tf32(r_hi) && is_tf32(r_lo));
                  if (size_t(k) >= K || size_t(u) >= bands) {
                    ASSERT_EQ(r_hi, 0.0f);
                    ASSERT_EQ(r_lo, 0.0f);
                    continue;
                  }
                  if (p == 0) ++seen[(size_t(k) * t.chunks + chunk) * 32 + (u - chunk * 32)];
                  const float x_hi = tf32_round(x[u]), x_lo = tf32_low(x[u], x_hi);
                  dot[k] += double(x_lo) * r_hi + double(x_hi) * r_lo + double(x_hi) * r_hi;
                }
              }
      for (size_t k = 0; k < K; ++k) {
        double want = 0, scale = 0;
        for (size_t u = 0; u < bands; ++u) {
          const double r = c.table()[c.table_shape().index(0, int(k), int(u))];
          want += double(x[u]) * r;
          scale += std::fabs(double(x[u]) * r);
        }
        // each product within ~2^-21 relative (both operands ~2^-22)
        EXPECT_NEAR(dot[k], want, 1e-6 * scale) << "pixel " << p << " reference " << k;
      }
    }
    for (size_t k = 0; k < K; ++k)
      for (size_t u = 0; u < bands; ++u)
        ASSERT_EQ(seen[(k * t.chunks + u / 32) * 32 + u % 32], 1) << "reference " << k << " band " << u;
  }
}

// The kernel without rule images ranks references by key_scale * dot +
// key_offset and scores only the winner: the same winner as the best score,
// but for references whose scores tie in float.
TEST(BipTensor, RankingKeysPickTheBestScore) {
  std::mt19937_64 rng(cs_test::fresh_seed());
  for (Method method : {Method::sam, Method::correlation, Method::bandfit, Method::euclidean}) {
    SCOPED_TRACE(method_name(method));
    const size_t bands = 60, K = 23, pixels = 400;
    hsi_test::Scene scene = hsi_test::random_scene(rng, 1, pixels, bands, K);
    ClassifierConfig config;
    config.method = method;
    config.precision = Precision::tensor;
    const SpectralClassifier c(config, scene.references, select_bands(bands, {}));
    const bt::Tables t = bt::make_tables(method, c.table(), c.table_shape());
    const PointerTable table{c.table().data(), c.table_shape()};
    size_t ties = 0;
    for (size_t p = 0; p < pixels; ++p) {
      const float *x = scene.pixels.data() + p * bands;
      // The values the kernels multiply: correlation's shifted pixel,
      // bandfit's continuum-removed one (classify_math.h), else the pixel.
      const PixelContext px = pixel_context<Method::bandfit>(x[0], x[bands - 1], 0.0);
      if (method == Method::bandfit && !px.defined) continue;
      std::vector<double> d(bands);
      double sum = 0, sum2 = 0;
      for (size_t u = 0; u < bands; ++u) {
        if (method == Method::bandfit)
          d[u] = band_value<Method::bandfit>(x[u], table.position(int(u)), px) - px.shift;
        else
          d[u] = double(x[u] - (method == Method::correlation ? x[0] : 0.0f));
        sum += d[u];
        sum2 += d[u] * d[u];
      }
      BestMatch by_score;
      // From minus infinity, as the kernels: a reference whose key is NaN
      // (bandfit's, where its continuum is undefined) is never taken.
      int by_key = -1;
      double best_key = -std::numeric_limits<double>::infinity();
      std::vector<float> scores(K);
      for (size_t k = 0; k < K; ++k) {
        double dot = 0;
        for (size_t u = 0; u < bands; ++u) dot += d[u] * table.ref(0, int(k), int(u));
        float score;
        if (method == Method::sam)
          score = sam_score(dot, sum2);
        else if (correlation_like(method))
          score = correlation_score(dot, sum, sum2, int(bands), table.constant(int(k)));
        else
          score = euclidean_score(sum2 - 2 * dot - t.key_offset[k]);
        scores[k] = score;
        by_score.offer(score, int(k), higher_is_better(method));
        const double key = t.key_scale[k] * dot + t.key_offset[k];
        if (key > best_key) {
          by_key = int(k);
          best_key = key;
        }
      }
      if (by_key == by_score.index) continue;
      ++ties;
      EXPECT_NEAR(scores[by_key], scores[by_score.index], 1e-6) << "pixel " << p;
    }
    EXPECT_LE(ties, pixels / 100);
  }
}

// Bandfit's tables carry the band positions (its continuum abscissae),
// padded with zeros to whole chunks for the kernels' 16-byte loads; the
// other methods' carry none.
TEST(BipTensor, BandfitTablesHoldTheBandPositions) {
  std::mt19937_64 rng(cs_test::fresh_seed());
  const size_t bands = 70, K = 5;
  hsi_test::Scene scene = hsi_test::random_scene(rng, 1, 2, bands, K);
  for (Method method : {Method::bandfit, Method::correlation}) {
    SCOPED_TRACE(method_name(method));
    ClassifierConfig config;
    config.method = method;
    config.precision = Precision::tensor;
    const SpectralClassifier c(config, scene.references, select_bands(bands, {}), scene.wavelengths_nm);
    const bt::Tables t = bt::make_tables(method, c.table(), c.table_shape());
    if (method != Method::bandfit) {
      EXPECT_TRUE(t.positions.empty());
      continue;
    }
    const PointerTable table{c.table().data(), c.table_shape()};
    ASSERT_EQ(t.positions.size(), size_t(t.chunks) * bt::kChunkBands);
    EXPECT_EQ(t.positions.front(), 0.0f);
    EXPECT_EQ(t.positions[bands - 1], 1.0f);
    for (size_t u = 0; u < t.positions.size(); ++u)
      EXPECT_EQ(t.positions[u], u < bands ? table.position(int(u)) : 0.0f) << u;
  }
}

TEST(BipTensor, AcceptsOnlyContiguousNativeBipBlocks) {
  EXPECT_EQ(bt::contiguous_first_band({3, 4, 5, 6}), 3);
  EXPECT_EQ(bt::contiguous_first_band({0}), 0);
  EXPECT_EQ(bt::contiguous_first_band({0, 1, 3}), -1);
  EXPECT_EQ(bt::contiguous_first_band({}), -1);

  alignas(64) static unsigned char storage[64];
  auto block = [&](DataType type, Interleave il, size_t bands, size_t offset = 0, ByteOrder order = host_byte_order()) {
    CubeBlock b;
    b.data = storage + offset;
    b.format = make_sample_format(type, order, std::nullopt, std::nullopt);
    b.layout = block_layout(il, 4, 5, bands);
    return b;
  };
  EXPECT_EQ(bt::copy_bytes_for(block(DataType::f32, Interleave::bip, 224), 0, 224), 16);
  EXPECT_EQ(bt::copy_bytes_for(block(DataType::i16, Interleave::bip, 224), 0, 224), 16);
  EXPECT_EQ(bt::copy_bytes_for(block(DataType::u16, Interleave::bip, 224), 8, 200), 16);
  EXPECT_EQ(bt::copy_bytes_for(block(DataType::f32, Interleave::bip, 224), 2, 100), 8);   // 8-byte start
  EXPECT_EQ(bt::copy_bytes_for(block(DataType::f32, Interleave::bip, 223), 0, 223), 4);   // 892-byte pixels
  EXPECT_EQ(bt::copy_bytes_for(block(DataType::i16, Interleave::bip, 224), 2, 100), 4);
  EXPECT_EQ(bt::copy_bytes_for(block(DataType::i16, Interleave::bip, 223), 0, 223), 0);   // 2-byte aligned only
  EXPECT_EQ(bt::copy_bytes_for(block(DataType::i16, Interleave::bip, 224), 1, 100), 0);
  EXPECT_EQ(bt::copy_bytes_for(block(DataType::f32, Interleave::bip, 224, 4), 0, 224), 4);  // 4-byte base
  EXPECT_EQ(bt::copy_bytes_for(block(DataType::f32, Interleave::bip, 224), 200, 30), 0);   // past the last band
  EXPECT_EQ(bt::copy_bytes_for(block(DataType::f32, Interleave::bil, 224), 0, 224), 0);
  EXPECT_EQ(bt::copy_bytes_for(block(DataType::f32, Interleave::bsq, 224), 0, 224), 0);
  EXPECT_EQ(bt::copy_bytes_for(block(DataType::f64, Interleave::bip, 224), 0, 224), 0);
  EXPECT_EQ(bt::copy_bytes_for(block(DataType::u8, Interleave::bip, 224), 0, 224), 0);
  const ByteOrder other =
      host_byte_order() == ByteOrder::little_endian ? ByteOrder::big_endian : ByteOrder::little_endian;
  // The other byte order: the kernels swap the samples' bytes where they read them.
  EXPECT_EQ(bt::copy_bytes_for(block(DataType::f32, Interleave::bip, 224, 0, other), 0, 224), 16);
  EXPECT_EQ(bt::copy_bytes_for(block(DataType::i16, Interleave::bip, 224, 0, other), 0, 224), 16);
  EXPECT_EQ(bt::copy_bytes_for(block(DataType::u16, Interleave::bip, 224, 0, other), 2, 100), 4);
  CubeBlock padded = block(DataType::f32, Interleave::bip, 224);
  padded.layout.line_stride += 4;  // lines not packed: pixel p is not at p * sample_stride
  EXPECT_EQ(bt::copy_bytes_for(padded, 0, 224), 0);
  // On a part with 227 KiB per block (H100, H200): 224 bands of f32 with
  // four staging buffers (two chunks in flight), up to 288 with three.
  const size_t hopper = 227 * 1024;
  EXPECT_EQ(bt::stages_for(DataType::f32, 7, hopper), 4);
  EXPECT_EQ(bt::stages_for(DataType::f32, 9, hopper), 3);
  EXPECT_EQ(bt::stages_for(DataType::f32, 10, hopper), 0);
  EXPECT_EQ(bt::stages_for(DataType::i16, 11, hopper), 3);
  EXPECT_LE(bt::shared_bytes(DataType::f32, 7, 4), hopper);
}

// fp16x3 (the default product): the host's fp16 rounding (the reference
// table; the kernel's cvt.rn.f16x2.f32 rounds pixels alike): every fp16 value
// converts back to itself, other floats to the nearest fp16 (ties to even).
TEST(BipTensor, HalfBitsRoundToNearestEven) {
  for (uint32_t h = 0; h < 0x10000u; ++h) {
    const float v = bt::half_value(uint16_t(h));
    if (std::isnan(v)) {
      ASSERT_TRUE(((h >> 10) & 0x1f) == 0x1f && (h & 0x3ff) != 0) << h;
      ASSERT_TRUE(std::isnan(bt::half_value(bt::half_bits(v))));
      continue;
    }
    ASSERT_EQ(bt::half_bits(v), h) << h << " " << v;
  }
  EXPECT_EQ(bt::half_value(0x3c00), 1.0f);
  EXPECT_EQ(bt::half_value(0x7bff), 65504.0f);
  EXPECT_EQ(bt::half_value(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(bt::half_bits(65519.0f), 0x7bff);
  EXPECT_EQ(bt::half_bits(65520.0f), 0x7c00);  // the tie rounds to even: infinity
  EXPECT_EQ(bt::half_bits(-1e9f), 0xfc00);
  EXPECT_EQ(bt::half_bits(std::ldexp(1.0f, -25)), 0x0000);  // tie between 0 and 2^-24: 0
  EXPECT_EQ(bt::half_bits(std::ldexp(1.5f, -25)), 0x0001);
  EXPECT_EQ(bt::half_bits(std::ldexp(3.0f, -25)), 0x0002);  // 1.5 x 2^-24: tie, to even 2
  EXPECT_EQ(bt::half_bits(std::ldexp(1.0f, -14)), 0x0400);
  EXPECT_EQ(bt::half_bits(-0.0f), 0x8000);
  EXPECT_TRUE(std::isnan(bt::half_value(bt::half_bits(NAN))));
  std::mt19937_64 rng(cs_test::fresh_seed());
  std::uniform_real_distribution<double> mantissa(1.0, 2.0);
  std::uniform_int_distribution<int> exponent(-30, 17);
  for (int i = 0; i < 200000; ++i) {
    const float x = float((rng() % 2 ? -1 : 1) * std::ldexp(mantissa(rng), exponent(rng)));
    const uint16_t h = bt::half_bits(x);
    const double v = bt::half_value(h);
    if (std::isinf(v)) {
      ASSERT_GE(std::fabs(x), 65520.0f) << x;
      continue;
    }
    // The neighbours of h in magnitude (same sign).
    const uint16_t magnitude = h & 0x7fffu, sign = h & 0x8000u;
    const double err = std::fabs(double(x) - v);
    if (magnitude > 0) {
      const double below = std::fabs(double(x) - double(bt::half_value(uint16_t(sign | (magnitude - 1)))));
      ASSERT_TRUE(err < below || (err == below && (magnitude & 1u) == 0)) << x;
    }
    if (magnitude < 0x7bffu) {
      const double above = std::fabs(double(x) - double(bt::half_value(uint16_t(sign | (magnitude + 1)))));
      ASSERT_TRUE(err < above || (err == above && (magnitude & 1u) == 0)) << x;
    }
  }
}

// The scales that keep fp16's parts in range: largest magnitude times 2^e in
// [2^14, 2^15) for every float from the smallest normal up (the clamp keeps
// 2^e a normal float below that).
TEST(BipTensor, HalfScaleExponentPutsTheLargestSampleUnder2To15) {
  std::mt19937_64 rng(cs_test::fresh_seed());
  std::uniform_real_distribution<double> mantissa(1.0, 2.0);
  std::uniform_int_distribution<int> exponent(-126, 127);
  for (int i = 0; i < 100000; ++i) {
    const float m = float(std::ldexp(mantissa(rng), exponent(rng)));
    if (std::isinf(m)) continue;
    const int e = bt::half_scale_exponent(m);
    ASSERT_LE(e, 127);
    ASSERT_GE(e, -126);
    ASSERT_EQ(bt::power_of_two(e), float(std::ldexp(1.0, e)));
    const double scaled = std::ldexp(double(m), e);
    if (e < 127) {
      ASSERT_GE(scaled, 16384.0) << m;
      ASSERT_LT(scaled, 32768.0) << m;
    } else {
      ASSERT_LT(scaled, 32768.0) << m;
    }
  }
  EXPECT_EQ(bt::half_scale_exponent(0.0f), 127);
  EXPECT_EQ(bt::half_scale_exponent(1.0f), 14);
  EXPECT_EQ(bt::half_scale_exponent(-1.0f), 14);
  EXPECT_EQ(bt::half_scale_exponent(32767.0f), 0);
  EXPECT_EQ(bt::half_scale_exponent(INFINITY), -114);
}

// Sid's fixed operand scales (kSidLogExponent, kSidShareExponent): the
// centred log log v - m of any two positive floats (v and the first band's
// value, floored samples down to the smallest subnormal) and any p in
// [0, 1] stay finite and normal-sized in fp16 high parts, and the table's
// log q half takes the difference of the two exponents, so both products
// carry 2^kSidLogExponent.
TEST(BipTensor, SidFixedScalesKeepEveryOperandInHalfRange) {
  const float kLogScale = std::ldexp(1.0f, bt::kSidLogExponent);
  const float kShareScale = std::ldexp(1.0f, bt::kSidShareExponent);
  const float extremes[] = {std::numeric_limits<float>::denorm_min(), std::numeric_limits<float>::min(), 1e-12f, 1.0f,
                            65535.0f, std::numeric_limits<float>::max()};
  float widest = 0;
  for (float v : extremes)
    for (float first : extremes) {
      const float m = std::log(first);
      const float operand = std::fma(std::log2(v), float(M_LN2) * kLogScale, -m * kLogScale);
      widest = std::max(widest, std::fabs(operand));
      const uint16_t hi = bt::half_bits(operand);
      ASSERT_TRUE(std::isfinite(bt::half_value(hi))) << v << " over " << first;
      ASSERT_TRUE(std::isfinite(bt::half_value(bt::half_bits(operand - bt::half_value(hi))))) << v;
    }
  EXPECT_GT(widest, 0.5f * 65504.0f) << "the log scale could be larger";  // 192 x 2^8: the range is used
  EXPECT_LT(widest, 65504.0f);
  // p = v / sum v <= 1, rounded up by at most an ulp of float.
  EXPECT_TRUE(std::isfinite(bt::half_value(bt::half_bits(std::nextafter(1.0f, 2.0f) * kShareScale))));
  EXPECT_GT(2.0f * kShareScale, 65504.0f) << "the share scale could be larger";
}

// The BIP kernel takes sid's logs without rescaling subnormal inputs, so it
// serves a block only where the floor (kSidFloor decoded, in stored units)
// is a normal float: with a reflectance scale factor (decoded = stored /
// factor) down to ~1.2e-26.
TEST(BipTensor, SidFloorIsNormalUnlessTheScaleIsAbsurd) {
  auto block = [](std::optional<double> factor) {
    CubeBlock b;
    b.format = make_sample_format(DataType::f32, host_byte_order(), std::nullopt, factor);
    return b;
  };
  EXPECT_FLOAT_EQ(bt::sid_stored_floor(block(std::nullopt)), kSidFloor);
  EXPECT_FLOAT_EQ(bt::sid_stored_floor(block(10000.0)), kSidFloor * 10000.0f);
  EXPECT_TRUE(bt::sid_floor_is_normal(block(std::nullopt)));
  EXPECT_TRUE(bt::sid_floor_is_normal(block(10000.0)));
  EXPECT_TRUE(bt::sid_floor_is_normal(block(1e-20)));   // 1e-32 stored
  EXPECT_FALSE(bt::sid_floor_is_normal(block(1e-30)));  // 1e-42 stored: subnormal
}

// fp16x3's split of scaled operands, as the kernel forms it (x = hi + lo,
// both fp16, lo from x - hi): what it leaves out is at most 2^-22 |x|, or
// 2^-25 (half of fp16's smallest subnormal) where lo is subnormal, which is
// 2^-39 of the largest magnitude (>= 2^14) of the row. Integer samples times
// 1/2, and correlation's differences of them, split exactly.
TEST(BipTensor, HalfSplitLeavesOutAtMostTwoToTheMinus22) {
  std::mt19937_64 rng(cs_test::fresh_seed());
  std::uniform_real_distribution<double> mantissa(1.0, 2.0);
  std::uniform_int_distribution<int> spread(-40, 0), magnitude(-120, 120);
  for (int row = 0; row < 20000; ++row) {
    float x[32];
    const int top = magnitude(rng);
    float largest = 0;
    for (float &v : x) {
      v = float((rng() % 2 ? -1 : 1) * std::ldexp(mantissa(rng), top + spread(rng)));
      if (rng() % 16 == 0) v = 0;
      largest = std::fmax(largest, std::fabs(v));
    }
    const int e = bt::half_scale_exponent(largest);
    for (float v : x) {
      const float s = v * bt::power_of_two(e);
      ASSERT_EQ(double(s), std::ldexp(double(v), e));  // exact
      const uint16_t hi = bt::half_bits(s), lo = bt::half_bits(s - bt::half_value(hi));
      ASSERT_FALSE(std::isinf(bt::half_value(hi))) << v;
      const double left = std::fabs(double(s) - double(bt::half_value(hi)) - double(bt::half_value(lo)));
      ASSERT_LE(left, std::max(std::ldexp(std::fabs(double(s)), -22), std::ldexp(1.0, -25))) << v << " " << largest;
    }
  }
  for (int v = -65535; v <= 65535; ++v) {
    const float s = float(v) * bt::kHalfIntegerScale;
    const uint16_t hi = bt::half_bits(s), lo = bt::half_bits(s - bt::half_value(hi));
    ASSERT_FALSE(std::isinf(bt::half_value(hi))) << v;
    ASSERT_EQ(double(bt::half_value(hi)) + double(bt::half_value(lo)), 0.5 * v) << v;
  }
}

TEST(BipTensor, HalfFragmentBandsCoverEachChunkOnce) {
  std::set<int> all;
  for (int step = 0; step < bt::kHalfStepsPerChunk; ++step)
    for (int lane = 0; lane < bt::kLanes; ++lane)
      for (int j = 0; j < 4; ++j) {
        const int band = bt::half_fragment_band(step, lane, j);
        EXPECT_EQ(band, bt::half_fragment_band(step, lane % 4, j));
        // The four bands of a thread are adjacent (one 16-byte load) and, for
        // step s, in the span s that the thread's pixel registers come from.
        EXPECT_EQ(band, 16 * step + 4 * (lane % 4) + j);
        all.insert(band);
      }
  EXPECT_EQ(all.size(), size_t(bt::kChunkBands));
  EXPECT_EQ(*all.rbegin(), bt::kChunkBands - 1);
}

// Calls visit(k, u, hi_bits, lo_bits) for every value the kernel reads from
// fp16x3's table in chunk `chunk`: reference k (padding included) at
// selected band u (chunk * 32 + 0..31), found the way the kernel finds it.
template <typename Visit>
void visit_half_fragments(const bt::Tables &t, int chunk, Visit &&visit) {
  for (int group = 0; group < t.groups; ++group)
    for (int step = 0; step < bt::kHalfStepsPerChunk; ++step)
      for (int column = 0; column < bt::kColumnsPerGroup; ++column)
        for (int lane = 0; lane < bt::kLanes; ++lane) {
          const uint32_t *entry = &t.half_fragments[4 * bt::fragment_index(group, chunk, t.chunks, step, column,
                                                                            lane, bt::kHalfStepsPerChunk)];
          for (int j = 0; j < 4; ++j)
            visit(group * 64 + bt::fragment_reference(column, lane), chunk * 32 + bt::half_fragment_band(step, lane, j),
                  uint16_t(entry[j / 2] >> (16 * (j % 2))), uint16_t(entry[2 + j / 2] >> (16 * (j % 2))));
        }
}

// The same for wgmma's table, addressed as its shared-memory descriptors
// address it: per (group, part) a 64 x padded-bands operand, 8 x 8 core
// matrices of 128 bytes, 128 bytes between core matrices along k, 16 x
// padded bands between rows of 8 references; an instruction of chunk c and
// span s starts 512 c + 256 s bytes in. Lane t's pixel registers hold bands
// 4t..4t+3 of the span at k = 2t, 2t + 1, 2t + 8, 2t + 9.
template <typename Visit>
void visit_wgmma_references(const bt::Tables &t, int chunk, Visit &&visit) {
  const size_t padded = size_t(t.chunks) * 32, part_bytes = 64 * padded * 2, stride_bytes = 8 * padded * 2;
  auto at = [&](int group, int part, int span, int n, int k) {
    const size_t byte = (size_t(group) * 2 + part) * part_bytes + size_t(chunk) * 512 + size_t(span) * 256 +
                        size_t(n / 8) * stride_bytes + size_t(k / 8) * 128 + (n % 8) * 16 + (k % 8) * 2;
    return t.wgmma_references.at(byte / 2);
  };
  for (int group = 0; group < t.groups; ++group)
    for (int span = 0; span < 2; ++span)
      for (int n = 0; n < 64; ++n)
        for (int lane_t = 0; lane_t < 4; ++lane_t)
          for (int j = 0; j < 4; ++j) {
            const int k = j < 2 ? 2 * lane_t + j : 2 * lane_t + 8 + (j - 2);
            visit(group * 64 + n, chunk * 32 + span * 16 + 4 * lane_t + j, at(group, 0, span, n, k),
                  at(group, 1, span, n, k));
          }
}

// The fp16 tables (fp16x3's fragments, wgmma's operand) rebuilt into every
// dot product the way the kernels combine them: the pixel scaled per chunk
// of 32 bands, both operands split into fp16 parts, lo x hi + hi x lo + hi x
// hi, the scales undone. Pixels of ordinary magnitudes and pixels spanning
// 12 decades (some bands' low parts, some high parts fp16 subnormals after
// scaling).
TEST(BipTensor, HalfTablesHoldEveryReferenceValueOnce) {
  std::mt19937_64 rng(cs_test::fresh_seed());
  for (bt::Product product : {bt::Product::fp16x3, bt::Product::wgmma})
    for (const auto &[K, bands] : {std::pair<size_t, size_t>{1, 7}, {37, 45}, {64, 224}, {100, 70}}) {
      SCOPED_TRACE(std::string(bt::product_name(product)) + " K=" + std::to_string(K) +
                   " bands=" + std::to_string(bands));
      const size_t pixels = 6;
      hsi_test::Scene scene = hsi_test::random_scene(rng, 1, pixels, bands, K);
      for (size_t p = 3; p < pixels; ++p)  // wide dynamic range within a pixel
        for (size_t u = 0; u < bands; ++u)
          scene.pixels[p * bands + u] *= float(std::pow(10.0, double(rng() % 13) - 6.0));
      ClassifierConfig config;
      config.method = Method::euclidean;  // raw reference values
      config.precision = Precision::tensor;
      const SpectralClassifier c(config, scene.references, select_bands(bands, {}));
      const bt::Tables t = bt::make_tables(c.method(), c.table(), c.table_shape(), product);
      ASSERT_EQ(t.product, product);
      ASSERT_EQ(t.groups, int((K + 63) / 64));
      ASSERT_EQ(t.chunks, int((bands + 31) / 32));
      ASSERT_TRUE(t.fragments.empty());
      if (product == bt::Product::fp16x3) {
        ASSERT_EQ(t.half_fragments.size(),
                  4 * bt::fragment_index(t.groups, 0, t.chunks, 0, 0, 0, bt::kHalfStepsPerChunk));
        ASSERT_TRUE(t.wgmma_references.empty());
      } else {
        ASSERT_EQ(t.wgmma_references.size(), size_t(t.groups) * 2 * 64 * size_t(t.chunks) * 32);
        ASSERT_TRUE(t.half_fragments.empty());
      }
      ASSERT_EQ(t.dot_scale.size(), size_t(t.groups) * 64);
      std::vector<int> seen(size_t(t.groups) * 64 * size_t(t.chunks) * 32, 0);
      for (size_t p = 0; p < pixels; ++p) {
        const float *x = scene.pixels.data() + p * bands;
        std::vector<double> dot(size_t(t.groups) * 64, 0.0);
        float largest_sample = 0;
        for (int chunk = 0; chunk < t.chunks; ++chunk) {
          float largest = 0;
          for (size_t u = size_t(chunk) * 32; u < std::min(bands, size_t(chunk + 1) * 32); ++u)
            largest = std::fmax(largest, std::fabs(x[u]));
          largest_sample = std::fmax(largest_sample, largest);
          const int e = bt::half_scale_exponent(largest);
          std::vector<double> chunk_dot(dot.size(), 0.0);
          auto combine = [&](int k, int u, uint16_t hi_bits, uint16_t lo_bits) {
            if (size_t(k) >= K || size_t(u) >= bands) {
              ASSERT_EQ(hi_bits, 0u);
              ASSERT_EQ(lo_bits, 0u);
              return;
            }
            if (p == 0) ++seen[(size_t(k) * t.chunks + chunk) * 32 + (u - chunk * 32)];
            const double r_hi = bt::half_value(hi_bits), r_lo = bt::half_value(lo_bits);
            const float s = x[u] * bt::power_of_two(e);
            const uint16_t h = bt::half_bits(s);
            const double x_hi = bt::half_value(h), x_lo = bt::half_value(bt::half_bits(s - float(x_hi)));
            chunk_dot[size_t(k)] += x_lo * r_hi + x_hi * r_lo + x_hi * r_hi;
          };
          if (product == bt::Product::fp16x3)
            visit_half_fragments(t, chunk, combine);
          else
            visit_wgmma_references(t, chunk, combine);
          for (size_t k = 0; k < dot.size(); ++k) dot[k] += std::ldexp(chunk_dot[k], -e);
        }
        for (size_t k = 0; k < K; ++k) {
          double want = 0, scale = 0, r1 = 0;
          for (size_t u = 0; u < bands; ++u) {
            const double r = c.table()[c.table_shape().index(0, int(k), int(u))];
            want += double(x[u]) * r;
            scale += std::fabs(double(x[u]) * r);
            r1 += std::fabs(r);
          }
          EXPECT_EQ(t.dot_scale[k], std::ldexp(1.0, -t.reference_exponent[k]));
          // each product within ~3 x 2^-22 relative; subnormal low parts add
          // at most 2^-39 of the largest sample (or reference value) per band
          const double got = dot[k] * t.dot_scale[k];
          EXPECT_NEAR(got, want, 1e-6 * scale + 1e-11 * largest_sample * r1) << "pixel " << p << " reference " << k;
        }
      }
      for (size_t k = 0; k < K; ++k)
        for (size_t u = 0; u < bands; ++u)
          ASSERT_EQ(seen[(k * t.chunks + u / 32) * 32 + u % 32], 1) << "reference " << k << " band " << u;
    }
}

TEST(BipTensor, HalfProductSharedMemory) {
  const size_t hopper = 227 * 1024;
  // Half the reference bytes of tf32x3: 224 bands of f32 with four staging
  // buffers and room to spare, up to 480 bands with four, 576 with three.
  EXPECT_EQ(bt::shared_bytes(DataType::f32, 7, 4, bt::Product::fp16x3) + 7 * 8192,
            bt::shared_bytes(DataType::f32, 7, 4, bt::Product::tf32x3));
  EXPECT_EQ(bt::stages_for(DataType::f32, 7, hopper, bt::Product::fp16x3), 4);
  EXPECT_EQ(bt::stages_for(DataType::f32, 15, hopper, bt::Product::fp16x3), 4);
  EXPECT_EQ(bt::stages_for(DataType::f32, 16, hopper, bt::Product::fp16x3), 3);
  EXPECT_EQ(bt::stages_for(DataType::f32, 18, hopper, bt::Product::fp16x3), 3);
  EXPECT_EQ(bt::stages_for(DataType::f32, 19, hopper, bt::Product::fp16x3), 0);
  EXPECT_EQ(bt::stages_for(DataType::i16, 23, hopper, bt::Product::fp16x3), 3);
  EXPECT_STREQ(bt::product_name(bt::Product::fp16x3), "fp16");
  EXPECT_STREQ(bt::product_name(bt::Product::tf32x3), "tf32");
}

TEST(BipTensor, WgmmaSharedMemory) {
  const size_t hopper = 227 * 1024;
  // Every group's table (2 x 64 x padded bands of fp16) and ranking terms (64
  // x 3 doubles) and, per warp group, staging buffers of 64 rows of 48 samples.
  const size_t groups = bt::kWarpgroupsPerBlock;
  EXPECT_EQ(bt::shared_bytes(DataType::f32, 7, 4, bt::Product::wgmma, 1),
            size_t(2 * 64 * 224 * 2 + 64 * 24) + groups * 4 * 64 * 48 * 4);
  EXPECT_EQ(bt::shared_bytes(DataType::i16, 7, 3, bt::Product::wgmma, 2),
            size_t(2 * (2 * 64 * 224 * 2 + 64 * 24)) + groups * 3 * 64 * 48 * 2);
  // Three warp groups: 224 bands of f32 with K <= 64 and four staging
  // buffers, K <= 128 with three; 16-bit samples up to K = 192.
  ASSERT_EQ(groups, 3u);
  EXPECT_EQ(bt::stages_for(DataType::f32, 7, hopper, bt::Product::wgmma, 1), 4);
  EXPECT_EQ(bt::stages_for(DataType::f32, 7, hopper, bt::Product::wgmma, 2), 3);
  EXPECT_EQ(bt::stages_for(DataType::f32, 7, hopper, bt::Product::wgmma, 3), 0);
  EXPECT_EQ(bt::stages_for(DataType::i16, 7, hopper, bt::Product::wgmma, 3), 3);
  EXPECT_EQ(bt::stages_for(DataType::i16, 7, hopper, bt::Product::wgmma, 4), 0);
  EXPECT_STREQ(bt::product_name(bt::Product::wgmma), "wgmma");
  EXPECT_EQ(bt::groups_for(ReferenceTableShape{70, 224, 1}), 2);
  EXPECT_EQ(bt::chunks_for(ReferenceTableShape{70, 224, 1}), 7);
}

// The screen's table: every usable reference's value (sam: times its key
// scale, less the usable references' mean of those) at screen_index (the
// layout its wgmma steps and its rescoring read), zeros elsewhere; no table
// for more than 64 references or for sid.
TEST(BipTensor, ScreenTableHoldsEveryReferenceValueOnce) {
  std::mt19937_64 rng(cs_test::fresh_seed());
  for (Method method : {Method::sam, Method::euclidean, Method::correlation, Method::bandfit, Method::sid})
    for (const auto &[K, bands] : {std::pair<size_t, size_t>{1, 7}, {37, 45}, {64, 224}, {100, 70}}) {
      SCOPED_TRACE(std::string(method_name(method)) + " K=" + std::to_string(K) + " bands=" + std::to_string(bands));
      hsi_test::Scene scene = hsi_test::random_scene(rng, 1, 4, bands, K);
      ClassifierConfig config;
      config.method = method;
      config.precision = Precision::tensor;
      const SpectralClassifier c(config, scene.references, select_bands(bands, {}));
      const bt::Tables t = bt::make_tables(c.method(), c.table(), c.table_shape(), bt::Product::wgmma);
      if (K > 64 || !bt::screened(method)) {  // more than one group, or a method the screen does not take
        EXPECT_TRUE(t.screen_references.empty());
        continue;
      }
      const int padded = bt::screen_padded_bands(int(bands));
      ASSERT_EQ(padded % 32, 0);
      ASSERT_EQ(t.screen_references.size(), size_t(bt::kScreenRows) * padded);
      ASSERT_EQ(t.screen_weight.size(), size_t(bt::kGroupReferences));
      ASSERT_EQ(t.screen_offset_slack.size(), size_t(bt::kGroupReferences));
      const bool centred = method == Method::sam;
      ASSERT_EQ(t.screen_mean.size(), centred ? size_t(padded) : 0u);
      const PointerTable refs{c.table().data(), c.table_shape()};
      std::vector<double> mean(size_t(padded), 0.0);
      int usable_count = 0;
      for (size_t k = 0; k < K; ++k)
        if (std::isfinite(t.key_scale[k])) {
          ++usable_count;
          for (size_t u = 0; u < bands; ++u) mean[u] += t.key_scale[k] * double(refs.ref(0, int(k), int(u)));
        }
      for (size_t u = 0; centred && u < bands; ++u) EXPECT_EQ(t.screen_mean[u], float(mean[u] / usable_count)) << u;
      std::vector<int> seen(t.screen_references.size(), 0);
      for (int k = 0; k < bt::kScreenRows; ++k)
        for (int u = 0; u < padded; ++u) {
          const size_t at = bt::screen_index(k, u);
          ASSERT_LT(at, t.screen_references.size());
          ++seen[at];
          const bool usable = k < int(K) && std::isfinite(t.key_scale[size_t(k)]);
          float expected = 0.0f;
          if (usable && u < int(bands))
            expected = centred ? float(t.key_scale[size_t(k)] * double(refs.ref(0, k, u)) - t.screen_mean[u])
                               : refs.ref(0, k, u);
          EXPECT_EQ(t.screen_references[at], expected) << k << " " << u;
        }
      for (int n : seen) ASSERT_EQ(n, 1);
      for (int k = 0; k < bt::kGroupReferences; ++k)
        EXPECT_EQ(t.screen_weight[k] > 0, k < int(K) && std::isfinite(t.key_scale[size_t(k)])) << k;
      // The tile's swizzle: rows 128 B apart, a row's block q at q xor
      // (row % 8); slabs 8 KB apart. Within a slab the product's order: step
      // i's columns (0 4 1 5) are bands 4 i .. 4 i + 3, (2 6 3 7) bands
      // 16 + 4 i .. 16 + 4 i + 3.
      for (const auto &[band, column] : std::vector<std::pair<int, int>>{
               {0, 0}, {1, 4}, {2, 1}, {3, 5}, {4, 8}, {16, 2}, {17, 6}, {18, 3}, {19, 7}, {31, 31}, {28, 26}})
        EXPECT_EQ(bt::screen_product_column(band), column) << band;
      std::vector<int> columns_seen(32, 0);
      for (int band = 0; band < 32; ++band) ++columns_seen[size_t(bt::screen_product_column(band))];
      for (int n : columns_seen) ASSERT_EQ(n, 1);
      EXPECT_EQ(bt::screen_index(0, 1) - bt::screen_index(0, 0), 4u);
      EXPECT_EQ(bt::screen_index(0, 2) - bt::screen_index(0, 0), 1u);
      EXPECT_EQ(bt::screen_index(0, 16) - bt::screen_index(0, 0), 2u);
      EXPECT_EQ(bt::screen_index(1, 0) - bt::screen_index(0, 0), 32u + 4u);
      EXPECT_EQ(bt::screen_index(3, 8), 3u * 32 + 4 * (4 ^ 3));
      EXPECT_EQ(bt::screen_index(8, 0) - bt::screen_index(0, 0), 256u);
      EXPECT_EQ(bt::screen_index(0, 32) - bt::screen_index(0, 0), 2048u);
    }
}

// The 16-bit tiles' swizzle (every screened method but bandfit keeps 16-bit
// samples as stored): within a slab's row each 8-byte block has its own place, and a
// product step's reads (lane 4 g + t: rows g, or g + 8, of a warp's 16, the
// word of the two bands the instruction takes as columns t and t + 4, in
// block i + 4 (t / 2)) meet 32 distinct banks, for every warp and step.
TEST(BipTensor, SixteenBitTileReadsMeetDistinctBanks) {
  for (int row = 0; row < bt::kScreenRows; ++row) {
    std::vector<int> places(8, 0);
    for (int block = 0; block < 8; ++block) {
      const int at = bt::swizzled_block_16bit(row, block);
      ASSERT_EQ(at % 4, 0);
      ASSERT_LT(at, 32);
      ++places[size_t(at / 4)];
    }
    for (int n : places) ASSERT_EQ(n, 1) << row;
  }
  for (int warp = 0; warp < 4; ++warp)
    for (int half = 0; half < 2; ++half)
      for (int step = 0; step < 4; ++step) {
        std::vector<int> banks(32, 0);
        for (int lane = 0; lane < 32; ++lane) {
          const int g = lane / 4, t = lane % 4, row = 16 * warp + 8 * half + g;
          const int sample = row * 32 + bt::swizzled_block_16bit(row, step + 4 * (t / 2)) + 2 * (t % 2);
          ++banks[size_t(sample * 2 / 4 % 32)];
        }
        for (int n : banks) EXPECT_EQ(n, 1) << warp << " " << half << " " << step;
      }
}

// The screen's bounds against an emulation of its product (tables for
// tensor cores known to truncate float operands to TF32: both operands read
// by truncation; tables for an unknown reading: each operand truncated or
// rounded, all four ways; products exact; each 8-band step added to a float
// accumulator truncating; keys in float as the kernel forms them): for every
// pair of references the screen's key difference (sam's keys leave out
// x . m, the same for every reference) is within their bounds' sum of the
// exact one, and within their pair's bound (Tables::screen_pair_weights),
// so the exact best is always a candidate by either rule. Similar and
// near-duplicate references (what makes the bound matter), pixels over many
// decades, some negative samples; correlation's (and bandfit's) centred
// references with unequal key scales (1 / |r_k|).
TEST(BipTensor, ScreenBoundsCoverTf32Products) {
  std::mt19937_64 rng(cs_test::fresh_seed());
  auto truncate_float = [](double v) {  // toward zero
    float f = float(v);
    if (std::fabs(double(f)) > std::fabs(v)) f = std::nextafter(f, 0.0f);
    return f;
  };
  using Reading = float (*)(float);
  for (Method method : {Method::sam, Method::correlation, Method::bandfit, Method::euclidean})
    for (const auto &[K, bands] : {std::pair<size_t, size_t>{64, 224}, {20, 53}, {9, 425}})
      for (Tf32Reading reading : {Tf32Reading::truncates, Tf32Reading::unknown}) {
        const bool truncates = reading == Tf32Reading::truncates;
        SCOPED_TRACE(std::string(method_name(method)) + " K=" + std::to_string(K) + " bands=" + std::to_string(bands) +
                     (truncates ? " truncating tensor cores" : " either reading"));
        hsi_test::Scene scene = hsi_test::random_scene(rng, 1, 300, bands, K);
        std::vector<float> &spectra = scene.references.spectra;
        if (method == Method::correlation)  // key scales from 1 / |r| to 1 / (4 |r|)
          for (size_t k = 0; k < K; ++k)
            for (size_t b = 0; b < bands; ++b) spectra[k * bands + b] *= float(1 + k % 4);
        for (size_t k = 1; k < K; k += 4)
          for (size_t b = 0; b < bands; ++b)
            spectra[k * bands + b] =
                spectra[(k - 1) * bands + b] * float(1 + 1e-5 * (double(rng() % 2001) / 1000 - 1));
        ClassifierConfig config;
        config.method = method;
        config.precision = Precision::tensor;
        const SpectralClassifier c(config, scene.references, select_bands(bands, {}));
        const bt::Tables t = bt::make_tables(c.method(), c.table(), c.table_shape(), bt::Product::wgmma, reading);
        const PointerTable refs{c.table().data(), c.table_shape()};
        const int padded = bt::screen_padded_bands(int(bands));
        // (pixel's reading, table's reading)
        std::vector<std::pair<Reading, Reading>> emulated{{&tf32_truncate, &tf32_truncate}};
        if (!truncates)
          emulated.insert(emulated.end(), {{&tf32_truncate, &tf32_round},
                                           {&tf32_round, &tf32_truncate},
                                           {&tf32_round, &tf32_round}});
        // The product's columns, in its order: step c / 8 of slab c / 32.
        std::vector<int> band_of_column(size_t(padded), 0);
        for (int u = 0; u < padded; ++u) band_of_column[size_t(u / 32 * 32 + bt::screen_product_column(u % 32))] = u;
        // Unusable references are never candidates.
        std::vector<size_t> usable;
        for (size_t k = 0; k < K; ++k)
          if (std::isfinite(t.key_scale[k])) usable.push_back(k);
        ASSERT_FALSE(usable.empty());
        // The first pixels the worst cases of the reading's error: along a
        // key difference's direction (f_j t_j - f_k t_k, a near duplicate and a
        // distant pair) or a reference's distance from the table's mean, each
        // sample that direction's nearest power of two with its 13 low
        // fraction bits all set, all clear, or just below or at half a TF32
        // unit, so that every band's reading errs alike and as far as it can
        // relative to the sample (the centring's extremes).
        std::vector<std::vector<float>> worst_cases;
        {
          std::vector<double> mean(bands, 0.0);
          for (size_t k : usable)
            for (size_t u = 0; u < bands; ++u)
              mean[u] += double(t.screen_references[bt::screen_index(int(k), int(u))]) / double(usable.size());
          auto row = [&](size_t k, size_t u) {
            return double(t.screen_terms[4 * k]) * t.screen_references[bt::screen_index(int(k), int(u))];
          };
          std::vector<std::vector<double>> directions;
          for (size_t k : {usable[1 % usable.size()], usable.back()}) {
            std::vector<double> pair(bands), alone(bands);
            for (size_t u = 0; u < bands; ++u) {
              pair[u] = row(usable[0], u) - row(k, u);
              alone[u] = double(t.screen_references[bt::screen_index(int(k), int(u))]) - mean[u];
            }
            directions.push_back(pair);
            directions.push_back(alone);
          }
          for (const std::vector<double> &direction : directions)
            for (uint32_t low : {0x1fffu, 0x0000u, 0x0fffu, 0x1000u}) {
              std::vector<float> x(bands);
              for (size_t u = 0; u < bands; ++u) {
                const double d = direction[u];
                const double power_of_two = std::exp2(std::round(std::log2(std::fabs(d))));
                const float power = d == 0 ? 0.0f : float(std::copysign(power_of_two, d));
                x[u] = power == 0 ? 0.0f : bits_float(float_bits(power) | low);
              }
              worst_cases.push_back(x);
            }
        }
        double worst = 0, worst_alone = 0, worst_pair = 0, candidates = 0, pair_candidates = 0;
        for (size_t p = 0; p < 300; ++p) {
          std::vector<float> x(scene.pixels.begin() + p * bands, scene.pixels.begin() + (p + 1) * bands);
          const double magnitude = std::pow(10.0, double(rng() % 21) - 10.0);
          for (float &v : x) v = float(v * magnitude * (rng() % 10 == 0 ? -1 : 1));
          if (p < worst_cases.size()) {  // scaled by a power of two, which keeps the low bits
            x = worst_cases[p];
            const float scale = std::ldexp(1.0f, int(rng() % 41) - 20);
            for (float &v : x) v *= scale;
          }
          double norm2 = 0;
          for (float v : x) norm2 += double(v) * v;
          const float norm = std::sqrt(float(norm2));
          std::vector<double> exact(K), bound(K);
          for (size_t k = 0; k < K; ++k) {
            double dot = 0;
            for (size_t u = 0; u < bands; ++u) dot += double(x[u]) * refs.ref(0, int(k), int(u));
            exact[k] = t.key_scale[k] * dot + t.key_offset[k];
            bound[k] = std::fma(norm, float(t.screen_weight[k]), float(t.screen_offset_slack[k]));
          }
          size_t best = usable[0];
          for (size_t k : usable) best = exact[k] > exact[best] ? k : best;
          for (const auto &[read_pixel, read_table] : emulated) {
            std::vector<double> screened(K);
            for (size_t k = 0; k < K; ++k) {
              double step = 0;
              float accumulator = 0;
              for (int c = 0; c < padded; ++c) {
                const int u = band_of_column[size_t(c)];
                const float xu = u < int(bands) ? x[u] : 0.0f, r = t.screen_references[bt::screen_index(int(k), u)];
                step += double(read_pixel(xu)) * read_table(r);
                if (c % 8 == 7) accumulator = truncate_float(step), step = accumulator;
              }
              screened[k] = std::fma(accumulator, t.screen_terms[4 * k], t.screen_terms[4 * k + 1]);
            }
            double lower = -INFINITY;
            for (size_t k : usable) lower = std::max(lower, screened[k] - bound[k]);
            for (size_t k : usable) {
              candidates += screened[k] + bound[k] >= lower;
              for (size_t j : usable) {
                const double error = std::fabs((exact[k] - exact[j]) - (screened[k] - screened[j]));
                ASSERT_LE(error, bound[k] + bound[j]) << "pixel " << p << " references " << k << ", " << j;
                if (bound[k] + bound[j] > 0) worst = std::max(worst, error / (bound[k] + bound[j]));
              }
            }
            ASSERT_GE(screened[best] + bound[best], lower) << "pixel " << p;
            // The pair bounds (which the kernel applies to rows left with two candidates): every key
            // difference within its pair's bound; the candidates of the rule they allow (the largest
            // screened key's reference j, and every k whose key plus the pair's bound reaches j's) hold
            // the exact best.
            auto pair_bound = [&](size_t j, size_t k) {
              const float *w = &t.screen_pair_weights[2 * (j * bt::kGroupReferences + k)];
              return double(std::fma(norm, w[0], w[1]));
            };
            size_t pivot = usable[0];
            for (size_t k : usable) pivot = screened[k] > screened[pivot] ? k : pivot;
            for (size_t k : usable) {
              pair_candidates += k == pivot || screened[k] + pair_bound(pivot, k) >= screened[pivot];
              for (size_t j : usable) {
                if (j == k) continue;
                const double error = std::fabs((exact[k] - exact[j]) - (screened[k] - screened[j]));
                ASSERT_LE(error, pair_bound(j, k)) << "pixel " << p << " references " << j << ", " << k;
                worst_pair = std::max(worst_pair, error / pair_bound(j, k));
              }
            }
            ASSERT_TRUE(best == pivot || screened[best] + pair_bound(pivot, best) >= screened[pivot])
                << "pixel " << p;
            // Each key on its own: within its bound and |x| screen_common_weight of the exact key (sam's
            // keys with x . m added, as the kernel adds it), what settles a lone candidate against the
            // threshold.
            double centre_dot = 0;
            for (size_t u = 0; u < t.screen_mean.size() && u < bands; ++u)
              centre_dot += double(x[u]) * t.screen_mean[u];
            for (size_t k : usable) {
              const double error = std::fabs(exact[k] - (screened[k] + centre_dot));
              ASSERT_LE(error, bound[k] + double(norm) * t.screen_common_weight) << "pixel " << p << " reference " << k;
              if (bound[k] > 0)
                worst_alone = std::max(worst_alone, error / (bound[k] + norm * t.screen_common_weight));
            }
          }
        }
        const double screened_pixels = 300.0 * double(emulated.size());
        std::printf("[ info     ] %s K=%zu bands=%zu%s: worst error %.3g of its bound (%.3g alone, %.3g of a pair's), "
                    "%.2f candidates per pixel (%.2f by the pair bounds)\n",
                    method_name(method), K, bands, truncates ? " (truncating)" : " (either reading)", worst,
                    worst_alone, worst_pair, candidates / screened_pixels, pair_candidates / screened_pixels);
      }
}

// Which blocks take the screen: f32 ones, and 16-bit ones only in aligned
// 16-byte pieces, the rows it widens fast; class maps only, every method
// but sid, and only when the screen was made.
TEST(BipTensor, ScreenTakesF32AndAligned16BitPieces) {
  static const float references[1] = {0};
  float rules[1] = {0};
  bt::DeviceTables t;
  t.screen_warpgroups = 3;
  t.screen_references = references;
  ClassificationOutput map_only, with_rules;
  with_rules.rule_images = rules;
  auto screens = [&](Method m, DataType type, int bands, int copy_bytes, const ClassificationOutput &out) {
    t.shape.bands = bands;
    return bt::uses_screen(m, t, type, copy_bytes, out);
  };
  EXPECT_TRUE(screens(Method::sam, DataType::f32, 224, 16, map_only));
  EXPECT_TRUE(screens(Method::euclidean, DataType::f32, 53, 4, map_only));
  EXPECT_TRUE(screens(Method::sam, DataType::i16, 224, 16, map_only));
  EXPECT_TRUE(screens(Method::bandfit, DataType::u16, 64, 16, map_only));
  EXPECT_TRUE(screens(Method::sam, DataType::i16, 200, 16, map_only));  // the last slab sample by sample
  EXPECT_FALSE(screens(Method::sam, DataType::i16, 224, 8, map_only));   // rows off the 16-byte alignment
  EXPECT_FALSE(screens(Method::sam, DataType::f32, 224, 16, with_rules));
  EXPECT_FALSE(screens(Method::sid, DataType::f32, 224, 16, map_only));
  EXPECT_FALSE(screens(Method::sam, DataType::f64, 224, 16, map_only));
  t.screen_warpgroups = 0;
  EXPECT_FALSE(screens(Method::sam, DataType::f32, 224, 16, map_only));
}

TEST(BipTensor, ScreenSharedMemory) {
  const size_t hopper = 227 * 1024;
  // The references and per warp group a tile, each 64 rows of the bands
  // padded to 32, 64 x 4 floats of key terms, a float per padded band (sam's
  // centre) and 1 KB of alignment.
  EXPECT_EQ(bt::screen_shared_bytes(224, 3), size_t(4 * 64 * 224 * 4 + 1024 + 224 * 4 + 1024));
  EXPECT_EQ(bt::screen_shared_bytes(225, 1), size_t(2 * 64 * 256 * 4 + 1024 + 256 * 4 + 1024));
  EXPECT_EQ(bt::screen_warpgroups_for(224, hopper), 3);  // the benchmark's cube: three tiles per SM
  EXPECT_EQ(bt::screen_warpgroups_for(256, hopper), 2);
  EXPECT_EQ(bt::screen_warpgroups_for(288, hopper), 2);
  EXPECT_EQ(bt::screen_warpgroups_for(416, hopper), 1);
  EXPECT_EQ(bt::screen_warpgroups_for(448, hopper), 0);
  // 16-bit tiles as stored (sam, correlation, euclidean) take half a float tile.
  EXPECT_TRUE(bt::screen_raw_tiles(Method::sam, DataType::i16));
  EXPECT_TRUE(bt::screen_raw_tiles(Method::euclidean, DataType::u16));
  EXPECT_FALSE(bt::screen_raw_tiles(Method::bandfit, DataType::i16));
  EXPECT_FALSE(bt::screen_raw_tiles(Method::sam, DataType::f32));
  EXPECT_EQ(bt::screen_shared_bytes(224, 3, true), size_t(64 * 224 * 4 + 3 * 64 * 224 * 2 + 1024 + 224 * 4 + 1024));
}
