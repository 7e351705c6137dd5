// The host side of the contiguous-BIP tensor kernel (bip_tensor.h), checked
// without a GPU: the TF32 split, the fragment table's layout (every reference
// value of every selected band exactly once, where the kernel's lanes read
// it), the ranking keys that pick the winner without computing every score,
// and which blocks the kernel accepts.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
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
  for (Method method : {Method::sam, Method::correlation, Method::euclidean}) {
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
      const float shift = method == Method::correlation ? x[0] : 0.0f;
      double sum = 0, sum2 = 0;
      for (size_t u = 0; u < bands; ++u) {
        const double d = double(x[u] - shift);
        sum += d;
        sum2 += d * d;
      }
      BestMatch by_score;
      int by_key = -1;
      double best_key = 0;
      std::vector<float> scores(K);
      for (size_t k = 0; k < K; ++k) {
        double dot = 0;
        for (size_t u = 0; u < bands; ++u) dot += double(x[u] - shift) * table.ref(0, int(k), int(u));
        float score;
        if (method == Method::sam)
          score = sam_score(dot, sum2);
        else if (method == Method::correlation)
          score = correlation_score(dot, sum, sum2, int(bands), table.constant(int(k)));
        else
          score = euclidean_score(sum2 - 2 * dot - t.key_offset[k]);
        scores[k] = score;
        by_score.offer(score, int(k), higher_is_better(method));
        const double key = t.key_scale[k] * dot + t.key_offset[k];
        if (by_key < 0 || key > best_key) {
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
  EXPECT_EQ(bt::copy_bytes_for(block(DataType::f32, Interleave::bip, 224, 0, other), 0, 224), 0);
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
