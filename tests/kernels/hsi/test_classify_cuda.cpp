// The CUDA paths against the CPU paths: native-sample conversion and
// classification for every method, data type, byte order and interleave,
// references in constant memory and in shared-memory tiles, and two
// classifiers taking turns with the constant bank. Suites named Gpu* skip
// without a device (tests/run-suite.sh counts them).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <tuple>
#include <utility>

#include "classify_test_util.h"
#include "common/cuda_runtime.h"
#include "hsi/bip_tensor.h"
#include "hsi/classifier.h"
#include "hsi/convert.h"

using namespace cs::hsi;

namespace {

constexpr int kDevice = 0;

class DeviceBuffer {
 public:
  explicit DeviceBuffer(size_t bytes) : bytes_(bytes), ptr_(cs::device_alloc(std::max<size_t>(bytes, 1), kDevice)) {}
  ~DeviceBuffer() { cs::device_free(ptr_, kDevice); }
  DeviceBuffer(const DeviceBuffer &) = delete;
  DeviceBuffer &operator=(const DeviceBuffer &) = delete;
  void *get() const { return ptr_; }
  template <class T>
  T *as() const {
    return static_cast<T *>(ptr_);
  }
  void upload(const void *src, const cs::Stream &s) { cs::copy_async(ptr_, src, bytes_, s.get()); }
  void download(void *dst, const cs::Stream &s) const { cs::copy_async(dst, ptr_, bytes_, s.get()); }

 private:
  size_t bytes_;
  void *ptr_;
};

// Classifies `block` (host bytes) on the GPU with the same poison as the CPU run.
// Without `with_rules` only the class map is asked for (rules stay empty);
// `kernel`, when given, receives the kernel classify() chose for the block.
hsi_test::Result classify_gpu(CudaSpectralClassifier &gpu, const SpectralClassifier &cpu,
                              const std::vector<uint8_t> &bytes, CubeBlock block, const cs::Stream &stream,
                              bool with_rules = true, CudaSpectralClassifier::Kernel *kernel = nullptr) {
  const size_t pixels = block.layout.pixels(), K = cpu.class_count();
  const size_t label_bytes = class_map_bytes_per_pixel(cpu.class_map_format());
  DeviceBuffer data(bytes.size()), labels(pixels * label_bytes), rules(pixels * K * sizeof(float));
  data.upload(bytes.data(), stream);
  hsi_test::Result r;
  r.rules.assign(pixels * K, hsi_test::kPoison);
  std::vector<uint8_t> raw_labels(pixels * label_bytes, 0xEE);
  rules.upload(r.rules.data(), stream);
  labels.upload(raw_labels.data(), stream);
  block.data = data.get();
  if (kernel) *kernel = gpu.kernel_for(block);
  ClassificationOutput out;
  out.class_map = labels.get();
  out.class_map_format = cpu.class_map_format();
  out.rule_images = with_rules ? rules.as<float>() : nullptr;
  gpu.classify(block, out, stream.get());
  if (with_rules)
    rules.download(r.rules.data(), stream);
  else
    r.rules.clear();
  labels.download(raw_labels.data(), stream);
  stream.synchronize();
  r.labels.resize(pixels);
  for (size_t p = 0; p < pixels; ++p) {
    uint16_t v = raw_labels[p * label_bytes];
    if (label_bytes == 2) std::memcpy(&v, &raw_labels[2 * p], 2);
    r.labels[p] = v;
  }
  return r;
}

// GPU and CPU run the same code in the same order; they differ by nvcc
// contracting multiply-adds into FMAs (one rounding fewer) and by the device
// logf/acos/sqrt (within 2 ulp): differences of a few float ulps of the sums.
// Returns the largest rule-image difference.
// Rule images element by element (`got` may be empty: class map only): NaN
// must meet NaN, other values differ by at most allowed(wanted value, index).
// Counts failures in *failures (the first five reported); returns the
// largest difference.
template <class Allowed>
double compare_rules(const std::vector<float> &want, const std::vector<float> &got, Allowed allowed,
                     const char *want_name, const char *got_name, size_t *failures) {
  double worst = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const float a = want[i], b = got[i];
    if (std::isnan(a) || std::isnan(b)) {
      if (std::isnan(a) != std::isnan(b) && (*failures)++ < 5) ADD_FAILURE() << "rule " << i << ": " << a << " vs " << b;
      continue;
    }
    const double diff = std::fabs(double(a) - double(b));
    worst = std::max(worst, diff);
    if (diff > allowed(a, i) && (*failures)++ < 5)
      ADD_FAILURE() << "rule " << i << ": " << want_name << " " << a << " " << got_name << " " << b;
  }
  return worst;
}

// Class maps equal but for near-ties: two classes whose CPU scores are
// within 1e-5, or (with a `threshold`) a pixel one side leaves unclassified
// whose best CPU score lies within the scores' tolerance of the threshold.
double expect_same(Method method, Precision precision, const hsi_test::Result &cpu, const hsi_test::Result &gpu,
                   size_t pixels, size_t K, std::optional<double> threshold = std::nullopt) {
  size_t failures = 0, ties = 0;
  EXPECT_EQ(cpu.rules.size(), gpu.rules.size());
  auto allowed = [&](float a, size_t = 0) {
    const bool relative = method == Method::sid || method == Method::euclidean;
    // exact: double sums, so only logf (SID) and float rounding of a term differ.
    double bound = precision == Precision::exact ? 1e-6 : 1e-5;
    // fast SAM: float sums carry ~1e-7 relative error in cos(theta), which
    // acos amplifies by 1/sin(theta) at small angles.
    if (precision == Precision::fast && method == Method::sam)
      bound = std::max(bound, 3e-7 / std::max(std::sin(double(a)), 1e-3));
    return relative ? bound * std::fabs(a) + 1e-7 : bound;
  };
  const double worst = compare_rules(cpu.rules, gpu.rules, allowed, "cpu", "gpu", &failures);
  for (size_t p = 0; p < pixels; ++p) {
    if (cpu.labels[p] == gpu.labels[p]) continue;
    if (cpu.labels[p] > 0 && gpu.labels[p] > 0 && gpu.labels[p] <= K &&
        std::fabs(cpu.rules[(cpu.labels[p] - 1) * pixels + p] - cpu.rules[(gpu.labels[p] - 1) * pixels + p]) < 1e-5) {
      ++ties;
      continue;
    }
    const int classified = std::max(cpu.labels[p], gpu.labels[p]);
    if (threshold && std::min(cpu.labels[p], gpu.labels[p]) == 0 && classified <= int(K)) {
      const float best = cpu.rules[size_t(classified - 1) * pixels + p];
      if (std::fabs(double(best) - *threshold) <= allowed(best)) {
        ++ties;
        continue;
      }
    }
    if (failures++ < 5) ADD_FAILURE() << "pixel " << p << ": cpu class " << cpu.labels[p] << ", gpu " << gpu.labels[p];
  }
  EXPECT_EQ(failures, 0u);
  if (ties) std::printf("[ info     ] %s: %zu near-ties picked differently\n", method_name(method), ties);
  return worst;
}

// Largest squared norms of the scene's pixels and references over all bands
// (euclidean's tensor bound).
std::pair<double, double> largest_squared_norms(const hsi_test::Scene &scene) {
  double x2 = 0, r2 = 0;
  for (size_t p = 0; p < scene.lines * scene.samples; ++p) {
    double n2 = 0;
    for (size_t b = 0; b < scene.bands; ++b) n2 += double(scene.pixels[p * scene.bands + b]) * scene.pixels[p * scene.bands + b];
    if (std::isfinite(n2)) x2 = std::max(x2, n2);
  }
  for (size_t k = 0; k < scene.references.count(); ++k) {
    double n2 = 0;
    for (size_t b = 0; b < scene.bands; ++b)
      n2 += double(scene.references.spectrum(k)[b]) * scene.references.spectrum(k)[b];
    r2 = std::max(r2, n2);
  }
  return {x2, r2};
}

// Precision::tensor against the CPU's exact results, within the bounds
// classify_math.h states with a margin of 2: dot products within ~5e-7
// relative, so angles within 1e-6 / sin(angle), coefficients within 1e-5,
// squared distances within 2e-6 (|x|^2 + |r|^2) (x2, r2: the largest squared
// norms). Class maps equal but for pairs of classes whose exact scores lie
// within those bounds, or a best score within them of `threshold` (NaN: none).
// `got.rules` may be empty (class map only). Returns the largest score difference.
// One configuration with tensor and with exact precision (the tensor
// bounds compare the two); the threshold is the method's default unless
// given.
struct TensorAndExact {
  SpectralClassifier tensor, exact;
};
TensorAndExact tensor_and_exact(Method method, std::optional<double> threshold, const hsi_test::Scene &scene,
                                const std::vector<int> &selected) {
  ClassifierConfig config;
  config.method = method;
  if (threshold) config.threshold = *threshold;
  config.precision = Precision::tensor;
  SpectralClassifier tensor(config, scene.references, selected, scene.wavelengths_nm);
  config.precision = Precision::exact;
  return {std::move(tensor), SpectralClassifier(config, scene.references, selected, scene.wavelengths_nm)};
}

// What widens a method's tensor bounds pixel by pixel and reference by
// reference, in units of 2^-20: at(i) for rule i (reference i / pixels).
struct TensorConditioning {
  std::vector<double> pixel, reference;
  double at(size_t i, size_t pixels) const {
    return (pixel.empty() ? 0.0 : pixel[i % pixels]) + (reference.empty() ? 0.0 : reference[i / pixels]);
  }
};

// For `values` ([pixel][band], as decoded) against `c`'s references, over
// its bands:
//   bandfit, per pixel (v its continuum-removed values, d = v - 1, the
//   values it sums; 0 where band fit is undefined):
//     sqrt(sum v^2 / var), var = sum (v - mean v)^2: changing each v by a
//       relative e moves a coefficient by up to ~2e times it; the float
//       decoding and continuum removal of the tensor precision do, with e ~
//       2^-24 each (the exact precision removes it in double);
//     sum d^2 / var: the pixel's float partial sums (8 values, then double)
//       err by ~2^-21 of sum d^2 each, and the variance from them by up to
//       ~2^-19.4 sum d^2, which moves a coefficient by ~2^-20.4 times this;
//   sid (classify_math.h, sid_score): per pixel 1 + the largest |log v - m|,
//     per reference 1 + the largest |log q - c|: the products (3xTF32, float
//     within 8 bands) err by ~2^-21 of sum q |log v - m| + sum p |log q - c|
//     (sum q = sum p = 1), the device's logf by an ulp of log v.
// Empty for the other methods.
TensorConditioning tensor_conditioning(const std::vector<float> &values, size_t bands, const SpectralClassifier &c) {
  const PointerTable table{c.table().data(), c.table_shape()};
  const std::vector<int> &selected = c.bands();
  const size_t n = selected.size(), pixels = values.size() / bands;
  TensorConditioning out;
  if (c.method() == Method::bandfit) {
    out.pixel.assign(pixels, 0.0);
    for (size_t p = 0; p < pixels; ++p) {
      const float *x = values.data() + p * bands;
      const double start = x[selected.front()], end = x[selected.back()];
      if (!(start > 0 && end > 0)) continue;
      double sum = 0, sum2 = 0;
      for (size_t u = 0; u < n; ++u) {
        const double t = table.position(int(u)), v = x[selected[u]] / (start * (1 - t) + end * t);
        sum += v;
        sum2 += v * v;
      }
      const double var = sum2 - sum * sum / double(n), d2 = sum2 - 2 * sum + double(n);  // sum (v - 1)^2
      if (var > 0 && std::isfinite(sum2)) out.pixel[p] = std::sqrt(sum2 / var) + d2 / var;
    }
  } else if (c.method() == Method::sid) {
    out.pixel.assign(pixels, 1.0);
    for (size_t p = 0; p < pixels; ++p) {
      const float *x = values.data() + p * bands;
      const double m = std::log(double(sid_floor(x[selected.front()])));
      for (size_t u = 0; u < n; ++u) {
        const double spread = std::fabs(std::log(double(sid_floor(x[selected[u]]))) - m);
        if (std::isfinite(spread)) out.pixel[p] = std::max(out.pixel[p], 1 + spread);
      }
    }
    out.reference.assign(c.class_count(), 1.0);
    for (size_t k = 0; k < c.class_count(); ++k) {
      double centre = 0;
      for (size_t u = 0; u < n; ++u) centre += table.ref(1, int(k), int(u)) / double(n);
      for (size_t u = 0; u < n; ++u) {
        const double spread = std::fabs(table.ref(1, int(k), int(u)) - centre);
        if (std::isfinite(spread)) out.reference[k] = std::max(out.reference[k], 1 + spread);
      }
    }
  }
  return out;
}

// Whether `method` has a BIP tensor kernel with `gpu`'s product form: sid's
// two products run on wgmma only (elsewhere the generic kernel).
bool has_bip_kernel(Method method, const CudaSpectralClassifier &gpu) {
  return method != Method::sid || std::string(gpu.bip_tensor_product()) == "wgmma";
}

// `conditioning` (tensor_conditioning) widens each rule's bound by 2^-20
// times its value.
double expect_within_tensor_bounds(Method method, const hsi_test::Result &want, const hsi_test::Result &got,
                                   size_t pixels, size_t K, double x2, double r2, double threshold = NAN,
                                   const TensorConditioning &conditioning = {}) {
  auto allowed = [&](float a, size_t i) {
    const double widening = 0x1p-20 * conditioning.at(i, pixels);
    if (method == Method::sam) return 1e-6 / std::max(std::sin(double(a)), 1e-3);
    if (correlation_like(method)) return 1e-5 + widening;  // bandfit: of the continuum-removed spectra
    if (method == Method::sid) return 1e-6 * std::fabs(double(a)) + 1e-7 + widening;  // exact: float logs
    return 2e-6 * (x2 + r2) / std::max(2.0 * double(a), 1e-3);  // |a^2 - b^2| / (a + b)
  };
  size_t failures = 0, ties = 0;
  const double worst = compare_rules(want.rules, got.rules, allowed, "exact", "tensor", &failures);
  for (size_t p = 0; p < pixels; ++p) {
    const uint32_t x = want.labels[p], y = got.labels[p];
    if (x == y) continue;
    if (x > 0 && y > 0 && y <= K) {
      const float sx = want.rules[(x - 1) * pixels + p], sy = want.rules[(y - 1) * pixels + p];
      if (std::fabs(double(sx) - double(sy)) <= 2 * allowed(sx, (x - 1) * pixels + p)) {
        ++ties;
        continue;
      }
    }
    if ((x == 0) != (y == 0) && !std::isnan(threshold) && std::max(x, y) <= K) {
      const float s = want.rules[(std::max(x, y) - 1) * pixels + p];
      if (std::fabs(double(s) - threshold) <= 2 * allowed(s, (std::max(x, y) - 1) * pixels + p)) {
        ++ties;
        continue;
      }
    }
    if (failures++ < 5) ADD_FAILURE() << "pixel " << p << ": exact class " << x << ", tensor " << y;
  }
  EXPECT_EQ(failures, 0u);
  if (ties) std::printf("[ info     ] %s tensor: %zu near-ties picked differently\n", method_name(method), ties);
  return worst;
}

}  // namespace

TEST(GpuConvert, EveryTypeOrderAndInterleaveMatchesCpu) {
  CS_REQUIRE_GPU();
  const uint32_t seed = cs_test::fresh_seed();
  std::mt19937_64 rng(seed);
  cs::Stream stream(kDevice);
  for (DataType type : kAllDataTypes)
    for (ByteOrder order : {ByteOrder::little_endian, ByteOrder::big_endian})
      for (Interleave il : {Interleave::bsq, Interleave::bil, Interleave::bip}) {
        SCOPED_TRACE(std::string(data_type_name(type)) + " " + interleave_name(il) + " " +
                     std::to_string(int(order)));
        const size_t lines = 1 + rng() % 9, samples = 1 + rng() % 300, bands = 1 + rng() % 40;
        const std::vector<uint8_t> bytes =
            cs_test::random_bytes(lines * samples * bands * sample_size(type), uint32_t(rng()));
        CubeBlock block = hsi_test::block_of(bytes, lines, samples, bands, type, il, order, 17.0, 250.0);
        std::vector<float> cpu(lines * samples * bands), gpu(cpu.size(), hsi_test::kPoison);
        convert_to_bip_float(block, cpu.data());
        DeviceBuffer d_in(bytes.size()), d_out(gpu.size() * sizeof(float));
        d_in.upload(bytes.data(), stream);
        d_out.upload(gpu.data(), stream);
        block.data = d_in.get();
        convert_to_bip_float_cuda(block, d_out.as<float>(), stream.get());
        d_out.download(gpu.data(), stream);
        stream.synchronize();
        size_t wrong = 0;
        for (size_t i = 0; i < cpu.size(); ++i)
          if (!hsi_test::same_bits(cpu[i], gpu[i]) && wrong++ < 3)
            ADD_FAILURE() << i << ": cpu " << cpu[i] << " gpu " << gpu[i];
        EXPECT_EQ(wrong, 0u);
      }
}

TEST(GpuClassify, MatchesCpuForEveryMethodTypeAndInterleave) {
  CS_REQUIRE_GPU();
  const uint32_t seed = cs_test::fresh_seed();
  std::mt19937_64 rng(seed);
  cs::Stream stream(kDevice);
  for (Method method : kAllMethods)
    for (Precision precision : {Precision::exact, Precision::fast})
    for (bool large_table : {false, true}) {
      // Large: the prepared table exceeds the constant bank (shared tiles):
      // at least 200 references, since a sixth of the bands marked bad can
      // leave 120 references of 150 bands under its 15872 floats (seed
      // 2100362584 gave 15749).
      const size_t bands = large_table ? 150 + rng() % 100 : 20 + rng() % 150;
      const size_t K = large_table ? 200 + rng() % 120 : 1 + rng() % 40;
      // Enough pixels for several thread blocks; fewer with large tables to
      // keep the CPU side of 27 comparisons quick.
      const size_t lines = 2 + rng() % (large_table ? 4 : 12), samples = 5 + rng() % (large_table ? 100 : 200);
      hsi_test::Scene scene = hsi_test::random_scene(rng, lines, samples, bands, K);
      for (int i = 0; i < 5; ++i) scene.pixels[rng() % scene.pixels.size()] = NAN;
      for (float &v : scene.pixels) v = std::fabs(v);  // unsigned types too
      std::vector<uint8_t> bbl(bands, 1);
      for (size_t b = 0; b < bands; ++b) bbl[b] = rng() % 6 != 0;
      bbl[0] = 1;
      ClassifierConfig config;
      config.method = method;
      config.precision = precision;
      if (method == Method::sam) config.threshold = 0.1;
      const SpectralClassifier cpu(config, scene.references, select_bands(bands, bbl), scene.wavelengths_nm);
      CudaSpectralClassifier gpu(cpu, kDevice);
      EXPECT_EQ(gpu.table_in_constant_memory(), !large_table) << cpu.table().size();
      double worst = 0;
      for (DataType type : kAllDataTypes)
        for (Interleave il : {Interleave::bsq, Interleave::bil, Interleave::bip}) {
          SCOPED_TRACE(std::string(method_name(method)) + " " + data_type_name(type) + " " + interleave_name(il) +
                       " K=" + std::to_string(K) + " bands=" + std::to_string(bands));
          const ByteOrder order = rng() % 2 ? ByteOrder::big_endian : ByteOrder::little_endian;
          const double integer_scale = type == DataType::u8 ? 150 : 10000;
          const auto bytes =
              hsi_test::encode_block(scene.pixels, lines, samples, bands, type, il, order, integer_scale);
          const bool is_float = type == DataType::f32 || type == DataType::f64;
          const CubeBlock block = hsi_test::block_of(bytes, lines, samples, bands, type, il, order,
                                                     is_float ? std::nullopt : std::optional<double>(0.0),
                                                     is_float ? std::nullopt : std::optional<double>(integer_scale));
          const hsi_test::Result on_cpu = hsi_test::classify_cpu(cpu, block);
          const hsi_test::Result on_gpu = classify_gpu(gpu, cpu, bytes, block, stream);
          worst = std::max(worst, expect_same(method, precision, on_cpu, on_gpu, lines * samples, K,
                                              method == Method::sam ? std::optional<double>(config.threshold)
                                                                    : std::nullopt));
        }
      std::printf("[ info     ] %s %s, %s table: worst |cpu - gpu| %.3g over 9 types x 3 interleaves\n",
                  method_name(method), precision == Precision::exact ? "exact" : "fast",
                  large_table ? "shared-memory" : "constant-memory", worst);
    }
}

// Precision::tensor: sam, correlation, bandfit and euclidean as a TF32
// matrix product (operands split into high and low parts) against the CPU's
// exact scores, within the bounds classify_math.h states with a margin of 2:
// dot products within ~5e-7 relative, so angles within 1e-6 / sin(angle),
// coefficients within 1e-5, squared distances within 2e-6 (|x|^2 + |r|^2).
// Class maps equal but for pairs of classes whose exact scores lie within
// those bounds. SID as two such products (classify_math.h, sid_score),
// within 1e-6 relative plus the products' error (tensor_conditioning).
// Several passes of 64 references, band counts that are not multiples of a
// chunk, NaN pixels, every interleave.
TEST(GpuClassify, TensorPrecisionWithinItsBounds) {
  CS_REQUIRE_GPU();
  const uint32_t seed = cs_test::fresh_seed();
  std::mt19937_64 rng(seed);
  cs::Stream stream(kDevice);
  for (Method method : kAllMethods)
    for (size_t K : {size_t(1 + rng() % 20), size_t(65 + rng() % 100)}) {
      const size_t bands = 20 + rng() % 230, lines = 3 + rng() % 6, samples = 50 + rng() % 150;
      hsi_test::Scene scene = hsi_test::random_scene(rng, lines, samples, bands, K);
      for (int i = 0; i < 5; ++i) scene.pixels[rng() % scene.pixels.size()] = NAN;
      for (float &v : scene.pixels) v = std::fabs(v);
      for (int i = 0; i < 5; ++i) scene.pixels[rng() % scene.pixels.size()] = 0;  // sid's floor (i16: no data)
      const auto [tensor, exact] = tensor_and_exact(method, std::nullopt, scene, select_bands(bands, {}));
      CudaSpectralClassifier gpu(tensor, kDevice);
      const auto [x2, r2] = largest_squared_norms(scene);
      double worst = 0;
      for (DataType type : {DataType::f32, DataType::i16, DataType::f64})
        for (Interleave il : {Interleave::bsq, Interleave::bil, Interleave::bip}) {
          SCOPED_TRACE(std::string(method_name(method)) + " " + data_type_name(type) + " " + interleave_name(il) +
                       " K=" + std::to_string(K) + " bands=" + std::to_string(bands));
          const auto bytes = hsi_test::encode_block(scene.pixels, lines, samples, bands, type, il,
                                                    ByteOrder::little_endian, 10000);
          const bool is_float = type != DataType::i16;
          const CubeBlock block = hsi_test::block_of(bytes, lines, samples, bands, type, il, ByteOrder::little_endian,
                                                     is_float ? std::nullopt : std::optional<double>(0.0),
                                                     is_float ? std::nullopt : std::optional<double>(10000));
          const hsi_test::Result on_gpu = classify_gpu(gpu, tensor, bytes, block, stream);
          const hsi_test::Result want = hsi_test::classify_cpu(exact, block);
          worst = std::max(worst, expect_within_tensor_bounds(method, want, on_gpu, lines * samples, K, x2, r2, NAN,
                                                              tensor_conditioning(scene.pixels, bands, tensor)));
        }
      std::printf("[ info     ] %s tensor, K=%zu bands=%zu: worst |exact - tensor| %.3g\n", method_name(method), K,
                  bands, worst);
    }
}

// The tensor kernel specialised for BIP blocks (bip_tensor.cu) against the
// CPU's exact results, with the tensor bounds above: f32, i16 (ignore value
// and reflectance scale) and u16 samples; pixel counts that leave a partial
// last tile, and more tiles than an H200 has multiprocessors (the persistent
// blocks' loop); K below, at and above one group of 64 references and not a
// multiple of it; all bands (16-byte copies) and a band range from band 2
// (8- and 4-byte copies, a partial last chunk); with rule images and with the
// class map alone (the winner picked by ranking key, one score per pixel);
// sam with ENVI's threshold; zeros at the last band (bandfit undefined).
// kernel_for must name the specialised kernel, and with it disabled the
// generic tensor kernel must agree within the same bounds.
TEST(GpuClassify, TensorBipKernelWithinTensorBounds) {
  CS_REQUIRE_GPU();
  const uint32_t seed = cs_test::fresh_seed();
  std::mt19937_64 rng(seed);
  cs::Stream stream(kDevice);
  struct Case {
    size_t lines, samples, bands;
    int first_band, band_count;
  };
  const Case cases[] = {
      {3, 43, 224, 0, 224},   // 129 pixels: a tile and one pixel
      {37, 501, 96, 0, 96},   // 18537 pixels: 145 tiles
      {5, 77, 170, 2, 159},   // bands 2..160: 8-byte (f32) and 4-byte (16-bit) copies, partial chunk
  };
  for (Method method : kAllMethods)
    for (const Case &c : cases)
      for (size_t K : {size_t(1 + rng() % 40), size_t(64), size_t(65 + rng() % 60)}) {
        hsi_test::Scene scene = hsi_test::random_scene(rng, c.lines, c.samples, c.bands, K);
        for (int i = 0; i < 5; ++i) scene.pixels[rng() % scene.pixels.size()] = NAN;
        for (float &v : scene.pixels) v = std::fabs(v);
        // Zeros at the last selected band: bandfit is undefined there (for
        // 16-bit samples, whose ignore value is 0, no data).
        for (int i = 0; i < 3; ++i)
          scene.pixels[(rng() % (c.lines * c.samples)) * c.bands + size_t(c.first_band + c.band_count - 1)] = 0;
        std::vector<int> selected(size_t(c.band_count));
        for (int u = 0; u < c.band_count; ++u) selected[size_t(u)] = c.first_band + u;
        const auto [tensor, exact] = tensor_and_exact(method, default_threshold(method), scene, selected);
        CudaSpectralClassifier gpu(tensor, kDevice);
        const auto [x2, r2] = largest_squared_norms(scene);
        const TensorConditioning conditioning = tensor_conditioning(scene.pixels, c.bands, tensor);
        const size_t pixels = c.lines * c.samples;
        double worst = 0;
        for (DataType type : {DataType::f32, DataType::i16, DataType::u16}) {
          const auto bytes = hsi_test::encode_block(scene.pixels, c.lines, c.samples, c.bands, type, Interleave::bip,
                                                    host_byte_order(), 10000);
          const bool is_float = type == DataType::f32;
          const CubeBlock block = hsi_test::block_of(bytes, c.lines, c.samples, c.bands, type, Interleave::bip,
                                                     host_byte_order(),
                                                     is_float ? std::nullopt : std::optional<double>(0.0),
                                                     is_float ? std::nullopt : std::optional<double>(10000));
          const hsi_test::Result want = hsi_test::classify_cpu(exact, block);
          for (bool with_rules : {true, false})
            for (bool specialised : {true, false}) {
              SCOPED_TRACE(std::string(method_name(method)) + " " + data_type_name(type) + " K=" + std::to_string(K) +
                           " pixels=" + std::to_string(pixels) + " bands " + std::to_string(c.first_band) + "+" +
                           std::to_string(c.band_count) + (with_rules ? " with rules" : " class map only") +
                           (specialised ? "" : " (generic kernel)"));
              gpu.set_bip_tensor_enabled(specialised);
              CudaSpectralClassifier::Kernel kernel;
              const hsi_test::Result got = classify_gpu(gpu, tensor, bytes, block, stream, with_rules, &kernel);
              EXPECT_EQ(kernel, specialised && has_bip_kernel(method, gpu) ? CudaSpectralClassifier::Kernel::tensor_bip
                                                                           : CudaSpectralClassifier::Kernel::tensor);
              worst = std::max(worst, expect_within_tensor_bounds(method, want, got, pixels, K, x2, r2,
                                                                  tensor.threshold(), conditioning));
            }
        }
        std::printf("[ info     ] %s tensor BIP, K=%zu pixels=%zu bands=%d: worst |exact - tensor| %.3g\n",
                    method_name(method), K, pixels, c.band_count, worst);
      }
}

// The BIP tensor kernel (either product: CS_HSI_BIP_KERNEL) on samples that
// stress fp16x3's scaling, against the CPU's exact results with the tensor
// bounds above: f32 pixels whose magnitudes range from 1e-20 to 1e20 from
// pixel to pixel and, within a pixel, over 12 decades from band to band
// (low parts, some high parts, fp16 subnormals after scaling; exact zeros;
// NaN), one pixel of 2e38 at the band range's ends, one of 1e30 but for
// a zero first band, and 16-bit samples at their extremes (-32768, 32767, 65535, 0, +-1:
// correlation's differences of them reach 65535). All bands and a band range
// from band 4 (16-bit rows stay 4-byte aligned, as the kernel needs) with
// a partial chunk; K within one group of references and beyond it.
TEST(GpuClassify, TensorBipKernelWideDynamicRange) {
  CS_REQUIRE_GPU();
  const uint32_t seed = cs_test::fresh_seed();
  std::mt19937_64 rng(seed);
  cs::Stream stream(kDevice);
  std::printf("[ info     ] BIP tensor product: %s (device %s, compute capability %d)\n",
              bip_tensor::product_name(bip_tensor::product_from_environment()), cs::device_name(kDevice).c_str(),
              cs::compute_capability(kDevice));
  const size_t lines = 3, samples = 97, pixels = lines * samples;
  for (Method method : kAllMethods)
    for (const auto &[bands, first_band, band_count] : {std::tuple<size_t, int, int>{224, 0, 224}, {60, 4, 50}})
      for (size_t K : {size_t(13), size_t(70)}) {
        hsi_test::Scene scene = hsi_test::random_scene(rng, lines, samples, bands, K);
        std::vector<int> selected(static_cast<size_t>(band_count));
        for (int u = 0; u < band_count; ++u) selected[size_t(u)] = first_band + u;
        const auto [tensor, exact] = tensor_and_exact(method, default_threshold(method), scene, selected);
        CudaSpectralClassifier gpu(tensor, kDevice);
        // On Hopper the default product is the warp-group one, whatever the
        // table's size here (at most two groups of 224 bands; sid's two
        // products need twice the table, which two groups do not leave).
        if (bip_tensor::product_from_environment() == bip_tensor::Product::wgmma &&
            cs::compute_capability(kDevice) == 90 && (method != Method::sid || K <= 64)) {
          EXPECT_STREQ(gpu.bip_tensor_product(), "wgmma");
        }
        const ByteOrder native = host_byte_order();
        const ByteOrder swapped = native == ByteOrder::little_endian ? ByteOrder::big_endian : ByteOrder::little_endian;
        // Also in the other byte order (the kernels swap the samples' bytes where they read them).
        const std::pair<DataType, ByteOrder> encodings[] = {
            {DataType::f32, native},  {DataType::i16, native},  {DataType::u16, native},
            {DataType::f32, swapped}, {DataType::i16, swapped}, {DataType::u16, swapped}};
        for (const auto &[type, order] : encodings) {
          std::vector<float> values = scene.pixels;
          if (type == DataType::f32) {
            for (size_t p = 0; p < pixels; ++p) {
              const double pixel_scale = std::pow(10.0, double(rng() % 41) - 20.0);
              const bool wide = p % 2 == 1;
              for (size_t b = 0; b < bands; ++b) {
                float &v = values[p * bands + b];
                v = float(v * pixel_scale * (wide ? std::pow(10.0, double(rng() % 13) - 6.0) : 1.0));
                if (rng() % 50 == 0) v = 0;
              }
            }
            for (int i = 0; i < 3; ++i) values[rng() % values.size()] = NAN;
            // A pixel with float's largest values at the selected range's
            // ends (bandfit's continuum beyond 2^126; euclidean distances
            // still finite). Not for the tf32 form, which does not scale.
            for (size_t b = 0; b < bands && bip_tensor::product_from_environment() != bip_tensor::Product::tf32x3;
                 ++b) {
              const bool end = int(b) == first_band || int(b) == first_band + band_count - 1;
              values[2 * bands + b] = end ? 2e38f : 1e36f * (1.5f + std::sin(float(b)));
            }
            // A pixel of 1e30 but for a zero first band (sid: its floor,
            // 1e42 times smaller than the rest).
            for (size_t b = 0; b < bands; ++b)
              values[4 * bands + b] = int(b) == first_band ? 0.0f : 1e30f * (1.5f + std::sin(float(b)));
          } else {
            const bool is_signed = type == DataType::i16;
            const float extremes_i16[] = {-32768, 32767, -1, 1, 0, -32767, 32766};
            const float extremes_u16[] = {65535, 0, 1, 65534, 32768, 2};
            for (size_t i = 0; i < values.size(); ++i) {
              if (rng() % 3 == 0)
                values[i] = is_signed ? extremes_i16[rng() % 7] : extremes_u16[rng() % 6];
              else
                values[i] = is_signed ? float(int(rng() % 65536) - 32768) : float(rng() % 65536);
            }
          }
          hsi_test::Scene decoded = scene;
          decoded.pixels = values;
          for (float &v : decoded.pixels) v = type == DataType::f32 ? v : v / 32768.0f;
          const auto [x2, r2] = largest_squared_norms(decoded);
          const auto bytes = hsi_test::encode_block(values, lines, samples, bands, type, Interleave::bip, order, 1.0);
          // Integers: a reflectance scale of 2^-15 (no ignore value: zeros are data).
          const CubeBlock block = hsi_test::block_of(
              bytes, lines, samples, bands, type, Interleave::bip, order, std::nullopt,
              type == DataType::f32 ? std::nullopt : std::optional<double>(32768.0));
          const hsi_test::Result want = hsi_test::classify_cpu(exact, block);
          const TensorConditioning conditioning = tensor_conditioning(decoded.pixels, bands, tensor);
          double worst = 0;
          for (bool with_rules : {true, false}) {
            SCOPED_TRACE(std::string(method_name(method)) + " " + data_type_name(type) +
                         (order == native ? "" : " swapped") + " K=" + std::to_string(K) + " bands " +
                         std::to_string(first_band) + "+" + std::to_string(band_count) +
                         (with_rules ? " with rules" : " class map only"));
            CudaSpectralClassifier::Kernel kernel;
            const hsi_test::Result got = classify_gpu(gpu, tensor, bytes, block, stream, with_rules, &kernel);
            EXPECT_EQ(kernel, has_bip_kernel(method, gpu) ? CudaSpectralClassifier::Kernel::tensor_bip
                                                          : CudaSpectralClassifier::Kernel::tensor);
            worst = std::max(worst, expect_within_tensor_bounds(method, want, got, pixels, K, x2, r2,
                                                                tensor.threshold(), conditioning));
          }
          std::printf("[ info     ] %s %s%s BIP tensor, K=%zu bands=%d: worst |exact - tensor| %.3g\n",
                      method_name(method), data_type_name(type), order == native ? "" : " swapped", K, band_count,
                      worst);
        }
      }
}

// The BIP kernel's screen (f32, i16 and u16, every method but sid, K <= 64,
// class maps only; bip_tensor.h) on what makes screening hard: references that differ
// from another one by ~1e-6 (the TF32 product cannot tell them apart, so
// both are scored again), pixels equal to a reference, zero pixels, NaN
// pixels, pixels with the ignore value, pixels with a large offset, pixels
// from 1e-30 to 1e30 (scaled sums), and a band range with a partial slab
// (bands padded to 32), as f32 and as i16 samples (both also in the other
// byte order). Class maps within the tensor bounds of the exact CPU ones.
// The screen's bounds assume the tensor cores' reading of float operands
// that the probe finds (bip_tensor.h, tf32_reading); Hopper's drop the low
// bits, which halves the pixel's part of the bound against a device that
// might round. A device that reads otherwise still classifies exactly (with
// the wider bound), but this test says so.
TEST(GpuClassify, TensorCoresTruncateTf32Operands) {
  CS_REQUIRE_GPU();
  if (!bip_tensor::wgmma_available(kDevice)) GTEST_SKIP() << "no wgmma on this device or build";
  EXPECT_EQ(bip_tensor::tf32_reading(kDevice), Tf32Reading::truncates);
  EXPECT_EQ(bip_tensor::tf32_reading(kDevice), Tf32Reading::truncates);  // the cached answer
}

TEST(GpuClassify, TensorBipScreenCandidates) {
  CS_REQUIRE_GPU();
  std::mt19937_64 rng(cs_test::fresh_seed());
  cs::Stream stream(kDevice);
  const size_t lines = 4, samples = 83, pixels = lines * samples;
  for (Method method : {Method::sam, Method::correlation, Method::bandfit, Method::euclidean})
    for (const auto &[bands, first_band, band_count] :
         {std::tuple<size_t, int, int>{224, 0, 224}, {61, 4, 53}, {62, 4, 53}, {64, 0, 53}})
      for (size_t K : {size_t(17), size_t(64)})
        for (float ignore : {-9999.0f, 0.0f}) {  // 0: as the zeros staged past the last band
          SCOPED_TRACE(std::string(method_name(method)) + " K=" + std::to_string(K) + " bands " +
                       std::to_string(first_band) + "+" + std::to_string(band_count) + " ignore value " +
                       std::to_string(ignore));
          hsi_test::Scene scene = hsi_test::random_scene(rng, lines, samples, bands, K);
          std::vector<float> &refs = scene.references.spectra;
          for (size_t k = 1; k < K; k += 3)  // reference k: reference k - 1 within ~1e-6
            for (size_t b = 0; b < bands; ++b)
              refs[k * bands + b] = refs[(k - 1) * bands + b] * float(1 + 1e-6 * (double(rng() % 2001) / 1000 - 1));
          for (size_t p = 0; p < pixels; ++p) {
            float *px = &scene.pixels[p * bands];
            switch (p % 9) {
              case 0: std::copy(&refs[(p % K) * bands], &refs[(p % K + 1) * bands], px); break;  // a reference
              case 1: std::fill(px, px + bands, 0.0f); break;
              case 2: px[rng() % bands] = NAN; break;
              case 3:
                for (size_t b = 0; b < bands; ++b) px[b] *= float(std::pow(10.0, double(rng() % 61) - 30.0));
                break;
              case 4: px[size_t(first_band) + rng() % size_t(band_count)] = ignore; break;  // no-data
              case 5:  // a large offset (correlation does not see it; its shift takes most of it away)
                for (size_t b = 0; b < bands; ++b) px[b] += 100.0f;
                break;
              default: break;
            }
          }
          std::vector<int> selected(static_cast<size_t>(band_count));
          for (int u = 0; u < band_count; ++u) selected[size_t(u)] = first_band + u;
          const auto [tensor, exact] = tensor_and_exact(method, default_threshold(method), scene, selected);
          CudaSpectralClassifier gpu(tensor, kDevice);
          // 16-bit cubes: the scene at 300 per unit (the offset pixels reach ~30000: past TF32's 11 bits),
          // saturated, NaN as 0, with a reflectance scale of 300; the ignore value set on the stored samples.
          const ByteOrder native = host_byte_order();
          const ByteOrder swapped =
              native == ByteOrder::little_endian ? ByteOrder::big_endian : ByteOrder::little_endian;
          const std::pair<DataType, ByteOrder> encodings[] = {
              {DataType::f32, native}, {DataType::i16, native}, {DataType::f32, swapped}, {DataType::i16, swapped}};
          for (const auto &[type, order] : encodings) {
            SCOPED_TRACE(std::string(data_type_name(type)) + (order == native ? "" : " swapped"));
            constexpr float kUnits = 300.0f;
            std::vector<float> stored = scene.pixels;
            if (type == DataType::i16) {
              for (float &v : stored) v = v == v ? std::round(std::clamp(v * kUnits, -32768.0f, 32767.0f)) : 0.0f;
              for (size_t p = 4; p < pixels; p += 9)
                stored[p * bands + size_t(first_band) + rng() % size_t(band_count)] = ignore;
            }
            hsi_test::Scene decoded = scene;
            decoded.pixels = stored;
            if (type == DataType::i16)
              for (float &v : decoded.pixels) v /= kUnits;
            const auto bytes = hsi_test::encode_block(stored, lines, samples, bands, type, Interleave::bip, order,
                                                      1.0);
            const CubeBlock block =
                hsi_test::block_of(bytes, lines, samples, bands, type, Interleave::bip, order, double(ignore),
                                   type == DataType::f32 ? std::nullopt : std::optional<double>(kUnits));
            if (bip_tensor::product_from_environment() == bip_tensor::Product::wgmma &&
                bip_tensor::screen_from_environment() && cs::compute_capability(kDevice) == 90) {
              // 16-bit blocks only in aligned 16-byte pieces (bip_tensor::uses_screen: 224 bands, and 53 of
              // 64, whose last slab is partial); the others take the kernel without the screen (or, i16 rows of
              // 61 bands, 122 bytes, the generic one).
              const bool screened = type == DataType::f32 || (bands * 2 % 16 == 0 && first_band * 2 % 16 == 0);
              ClassificationOutput class_map_only;
              EXPECT_EQ(gpu.screens(block, class_map_only), screened);
            }
            const hsi_test::Result want = hsi_test::classify_cpu(exact, block);
            const hsi_test::Result got = classify_gpu(gpu, tensor, bytes, block, stream, false);
            const auto [x2, r2] = largest_squared_norms(decoded);
            // Bandfit's continuum-removed offset pixels are nearly constant: the kernels without the screen
            // (i16 rows of 61 bands) err as its conditioning says (seed 2992334284: pixel 86, class 30 for 39).
            const double worst = expect_within_tensor_bounds(method, want, got, pixels, K, x2, r2, tensor.threshold(),
                                                             tensor_conditioning(decoded.pixels, bands, tensor));
            size_t same = 0;
            for (size_t p = 0; p < pixels; ++p) same += want.labels[p] == got.labels[p];
            std::printf("[ info     ] %s %s%s screen, K=%zu bands=%d, ignore %g: %zu of %zu labels as exact, "
                        "worst %.3g\n",
                        method_name(method), data_type_name(type), order == native ? "" : " swapped", K, band_count,
                        double(ignore), same, pixels, worst);
          }
        }
}

// The screen's persistent warp groups walk their tiles round after round
// (the other tests' blocks fit in one): on a block of more than eight
// rounds on an H200 (3222 tiles of 64 pixels over 396 warp groups, the last
// tile partial), every pixel, each an exact copy of a reference, gets that
// reference's class, call after call on one stream and on a second stream.
TEST(GpuClassify, TensorBipScreenScoresEveryTileOfManyRounds) {
  CS_REQUIRE_GPU();
  std::mt19937_64 rng(cs_test::fresh_seed());
  cs::Stream stream(kDevice), other_stream(kDevice);
  const size_t lines = 211, samples = 977, pixels = lines * samples, bands = 224, K = 64;
  constexpr double kUnits = 300;  // 16-bit samples: the references on a grid of 1 / 300
  std::vector<int> selected(bands);
  for (size_t u = 0; u < bands; ++u) selected[u] = int(u);
  auto reference_of = [&](size_t p) { return (p * 37) % K; };
  for (DataType type : {DataType::f32, DataType::i16})
    for (Method method : {Method::sam, Method::euclidean}) {
      SCOPED_TRACE(std::string(data_type_name(type)) + " " + method_name(method));
      hsi_test::Scene scene = hsi_test::random_scene(rng, 1, 1, bands, K);
      if (type == DataType::i16)
        for (float &v : scene.references.spectra) v = float(std::round(double(v) * kUnits) / kUnits);
      std::vector<float> values(pixels * bands);
      for (size_t p = 0; p < pixels; ++p) {
        const float *r = scene.references.spectrum(reference_of(p));
        std::copy(r, r + bands, values.begin() + std::ptrdiff_t(p * bands));
      }
      const TensorAndExact both = tensor_and_exact(method, std::nullopt, scene, selected);
      const SpectralClassifier &tensor = both.tensor;
      CudaSpectralClassifier gpu(tensor, kDevice);
      const double integer_scale = type == DataType::f32 ? 1.0 : kUnits;
      const auto bytes = hsi_test::encode_block(values, lines, samples, bands, type, Interleave::bip,
                                                host_byte_order(), integer_scale);
      const CubeBlock block = hsi_test::block_of(bytes, lines, samples, bands, type, Interleave::bip,
                                                 host_byte_order(), std::nullopt,
                                                 type == DataType::f32 ? std::nullopt : std::optional<double>(kUnits));
      if (bip_tensor::product_from_environment() == bip_tensor::Product::wgmma &&
          bip_tensor::screen_from_environment() && cs::compute_capability(kDevice) == 90) {
        EXPECT_TRUE(gpu.screens(block, ClassificationOutput{}));
      }
      for (const cs::Stream *s : {&stream, &stream, &stream, &other_stream}) {
        const hsi_test::Result got = classify_gpu(gpu, tensor, bytes, block, *s, false);
        size_t wrong = 0;
        for (size_t p = 0; p < pixels; ++p)
          if (got.labels[p] != reference_of(p) + 1 && wrong++ < 5)
            ADD_FAILURE() << "pixel " << p << ": class " << got.labels[p] << ", not " << reference_of(p) + 1;
        EXPECT_EQ(wrong, 0u);
      }
    }
}

// The screen takes a pixel's one candidate as its class without scoring it
// again when the key's bound, with the part it shares with every reference,
// puts the score on one side of the threshold (bip_tensor.cu, step 4).
// Thresholds at the quartiles of the pixels' exact best scores (a misplaced
// key would carry many pixels across), and for sam half the pixels built at
// angles within 2e-3 rad of 0.1 rad from a reference (within the TF32
// product's error: a bound too tight would settle some of them wrongly), as
// f32 and as i16 samples; class maps within the tensor bounds of the exact
// CPU ones.
TEST(GpuClassify, TensorBipScreenSettlesLoneCandidatesAtTheThreshold) {
  CS_REQUIRE_GPU();
  std::mt19937_64 rng(cs_test::fresh_seed());
  std::uniform_real_distribution<double> uni(0.0, 1.0);
  std::normal_distribution<double> normal(0.0, 1.0);
  cs::Stream stream(kDevice);
  const size_t lines = 8, samples = 128, pixels = lines * samples, bands = 224, K = 64;
  std::vector<int> selected(bands);
  for (size_t u = 0; u < bands; ++u) selected[u] = int(u);
  for (Method method : {Method::sam, Method::correlation, Method::bandfit, Method::euclidean}) {
    SCOPED_TRACE(method_name(method));
    hsi_test::Scene scene = hsi_test::random_scene(rng, lines, samples, bands, K);
    if (method == Method::sam)
      for (size_t p = 1; p < pixels; p += 2) {
        const float *r = scene.references.spectrum(rng() % K);
        std::vector<double> along(r, r + bands), across(bands);
        double r2 = 0, dot = 0, u2 = 0;
        for (double v : along) r2 += v * v;
        for (double &v : across) v = normal(rng);
        for (size_t b = 0; b < bands; ++b) dot += across[b] * along[b];
        for (size_t b = 0; b < bands; ++b) across[b] -= dot / r2 * along[b], u2 += across[b] * across[b];
        const double angle = 0.1 + 2e-3 * (2 * uni(rng) - 1), gain = 0.5 + uni(rng);
        for (size_t b = 0; b < bands; ++b)
          scene.pixels[p * bands + b] = float(
              gain * (std::cos(angle) * along[b] / std::sqrt(r2) + std::sin(angle) * across[b] / std::sqrt(u2)));
      }
    std::vector<double> thresholds = {0.1};
    if (method != Method::sam) {  // the quartiles of the best scores (no threshold)
      const auto [plain, unused] = tensor_and_exact(method, std::nullopt, scene, selected);
      const auto bytes = hsi_test::encode_block(scene.pixels, lines, samples, bands, DataType::f32, Interleave::bip,
                                                host_byte_order());
      const hsi_test::Result all =
          hsi_test::classify_cpu(plain, hsi_test::block_of(bytes, lines, samples, bands, DataType::f32,
                                                           Interleave::bip, host_byte_order()));
      std::vector<double> best;
      for (size_t p = 0; p < pixels; ++p)
        if (all.labels[p] > 0) best.push_back(all.rules[(all.labels[p] - 1) * pixels + p]);
      ASSERT_GT(best.size(), pixels / 2);
      std::sort(best.begin(), best.end());
      thresholds = {best[best.size() / 4], best[best.size() / 2], best[3 * best.size() / 4]};
    }
    for (double threshold : thresholds)
      for (DataType type : {DataType::f32, DataType::i16}) {
        SCOPED_TRACE(std::string(data_type_name(type)) + " threshold " + std::to_string(threshold));
        const auto [tensor, exact] = tensor_and_exact(method, threshold, scene, selected);
        CudaSpectralClassifier gpu(tensor, kDevice);
        constexpr float kUnits = 3000.0f;
        std::vector<float> stored = scene.pixels;
        if (type == DataType::i16)
          for (float &v : stored) v = std::round(std::clamp(v * kUnits, -32768.0f, 32767.0f));
        hsi_test::Scene decoded = scene;
        decoded.pixels = stored;
        if (type == DataType::i16)
          for (float &v : decoded.pixels) v /= kUnits;
        const auto bytes =
            hsi_test::encode_block(stored, lines, samples, bands, type, Interleave::bip, host_byte_order(), 1.0);
        const CubeBlock block =
            hsi_test::block_of(bytes, lines, samples, bands, type, Interleave::bip, host_byte_order(), std::nullopt,
                               type == DataType::f32 ? std::nullopt : std::optional<double>(kUnits));
        if (bip_tensor::product_from_environment() == bip_tensor::Product::wgmma &&
            bip_tensor::screen_from_environment() && cs::compute_capability(kDevice) == 90) {
          ClassificationOutput class_map_only;
          EXPECT_TRUE(gpu.screens(block, class_map_only));
        }
        const hsi_test::Result want = hsi_test::classify_cpu(exact, block);
        const hsi_test::Result got = classify_gpu(gpu, tensor, bytes, block, stream, false);
        const auto [x2, r2] = largest_squared_norms(decoded);
        expect_within_tensor_bounds(method, want, got, pixels, K, x2, r2, tensor.threshold(),
                                    tensor_conditioning(decoded.pixels, bands, tensor));
        size_t classified = 0;
        for (size_t p = 0; p < pixels; ++p) classified += got.labels[p] > 0;
        // Both sides of the threshold are populated, so a label settled on the wrong side would show.
        EXPECT_GT(classified, pixels / 8);
        EXPECT_LT(classified, pixels - pixels / 8);
      }
  }
}

// Class map lines `stride` bytes apart (GRAY8 and GRAY16 video rows are
// padded to 4 bytes): every kernel writes each label where the packed map
// has it, shifted to its line, and the padding (0xAB before) is zeros.
TEST(GpuClassify, ClassMapStrideZeroesThePadding) {
  CS_REQUIRE_GPU();
  using Kernel = CudaSpectralClassifier::Kernel;
  std::mt19937_64 rng(cs_test::fresh_seed());
  cs::Stream stream(kDevice);
  const size_t lines = 5, samples = 101, pixels = lines * samples;  // tiles of 64 pixels cross the lines
  struct Case {
    Precision precision;
    Interleave interleave;
    size_t bands, classes;
    Kernel kernel;
  };
  for (const Case c : {Case{Precision::tensor, Interleave::bip, 224, 16, Kernel::tensor_bip},
                       Case{Precision::tensor, Interleave::bil, 40, 16, Kernel::tensor},
                       Case{Precision::fast, Interleave::bip, 12, 16, Kernel::per_pixel},
                       Case{Precision::fast, Interleave::bip, 12, 300, Kernel::per_pixel}}) {
    SCOPED_TRACE(std::to_string(c.bands) + " bands, " + std::to_string(c.classes) + " classes");
    hsi_test::Scene scene = hsi_test::random_scene(rng, lines, samples, c.bands, c.classes);
    ClassifierConfig config;
    config.precision = c.precision;
    const SpectralClassifier cpu(config, scene.references, select_bands(c.bands, {}));
    CudaSpectralClassifier gpu(cpu, kDevice);
    const auto bytes = hsi_test::encode_block(scene.pixels, lines, samples, c.bands, DataType::f32, c.interleave,
                                              host_byte_order());
    CubeBlock block = hsi_test::block_of(bytes, lines, samples, c.bands, DataType::f32, c.interleave,
                                         host_byte_order());
    Kernel kernel{};
    const hsi_test::Result packed = classify_gpu(gpu, cpu, bytes, block, stream, false, &kernel);
    EXPECT_EQ(kernel, c.kernel);
    const size_t label_bytes = class_map_bytes_per_pixel(cpu.class_map_format());
    ASSERT_EQ(label_bytes, c.classes > 254 ? 2u : 1u);
    const size_t stride = (samples * label_bytes + 3) / 4 * 4 + 8;
    DeviceBuffer data(bytes.size()), map(lines * stride);
    std::vector<uint8_t> host_map(lines * stride, 0xAB);
    data.upload(bytes.data(), stream);
    map.upload(host_map.data(), stream);
    block.data = data.get();
    ClassificationOutput out;
    out.class_map = map.get();
    out.class_map_stride = stride;
    out.class_map_format = cpu.class_map_format();
    gpu.classify(block, out, stream.get());
    map.download(host_map.data(), stream);
    stream.synchronize();
    size_t wrong = 0, padding_not_zero = 0;
    for (size_t l = 0; l < lines; ++l)
      for (size_t x = 0; x < stride; ++x) {
        const uint8_t got = host_map[l * stride + x];
        if (x < samples * label_bytes) {
          const size_t p = l * samples + x / label_bytes;
          wrong += got != uint8_t(packed.labels[p] >> (8 * (x % label_bytes)));
        } else {
          padding_not_zero += got != 0;
        }
      }
    EXPECT_EQ(wrong, 0u);
    EXPECT_EQ(padding_not_zero, 0u);
    size_t classified = 0;
    for (size_t p = 0; p < pixels; ++p) classified += packed.labels[p] > 0;
    EXPECT_GT(classified, pixels / 2);  // labels to compare, not a map of zeros
  }
}

// Blocks the specialised kernel does not take run the generic one.
TEST(GpuClassify, TensorBipKernelOnlyForBlocksItFits) {
  CS_REQUIRE_GPU();
  std::mt19937_64 rng(cs_test::fresh_seed());
  const size_t lines = 2, samples = 9, bands = 40;
  hsi_test::Scene scene = hsi_test::random_scene(rng, lines, samples, bands, 5);
  ClassifierConfig config;
  config.precision = Precision::tensor;
  const SpectralClassifier contiguous(config, scene.references, select_bands(bands, {}));
  std::vector<uint8_t> bbl(bands, 1);
  bbl[7] = 0;
  const SpectralClassifier gapped(config, scene.references, select_bands(bands, bbl));
  config.precision = Precision::fast;
  const SpectralClassifier fast(config, scene.references, select_bands(bands, {}));
  CudaSpectralClassifier gpu(contiguous, kDevice), gpu_gapped(gapped, kDevice), gpu_fast(fast, kDevice);
  DeviceBuffer data(lines * samples * bands * 8);
  auto block = [&](DataType type, Interleave il, ByteOrder order) {
    CubeBlock b = hsi_test::block_of({}, lines, samples, bands, type, il, order);
    b.data = data.get();
    return b;
  };
  using Kernel = CudaSpectralClassifier::Kernel;
  const ByteOrder native = host_byte_order();
  const ByteOrder swapped = native == ByteOrder::little_endian ? ByteOrder::big_endian : ByteOrder::little_endian;
  EXPECT_EQ(gpu.kernel_for(block(DataType::f32, Interleave::bip, native)), Kernel::tensor_bip);
  EXPECT_EQ(gpu.kernel_for(block(DataType::i16, Interleave::bip, native)), Kernel::tensor_bip);
  EXPECT_EQ(gpu.kernel_for(block(DataType::u16, Interleave::bip, native)), Kernel::tensor_bip);
  EXPECT_EQ(gpu.kernel_for(block(DataType::f32, Interleave::bip, swapped)), Kernel::tensor_bip);  // swapped as read
  EXPECT_EQ(gpu.kernel_for(block(DataType::i16, Interleave::bip, swapped)), Kernel::tensor_bip);
  EXPECT_EQ(gpu.kernel_for(block(DataType::u16, Interleave::bip, swapped)), Kernel::tensor_bip);
  EXPECT_EQ(gpu.kernel_for(block(DataType::f32, Interleave::bil, native)), Kernel::tensor);
  EXPECT_EQ(gpu.kernel_for(block(DataType::f64, Interleave::bip, native)), Kernel::tensor);
  EXPECT_EQ(gpu.kernel_for(block(DataType::u8, Interleave::bip, native)), Kernel::tensor);
  EXPECT_EQ(gpu_gapped.kernel_for(block(DataType::f32, Interleave::bip, native)), Kernel::tensor);
  EXPECT_EQ(gpu_fast.kernel_for(block(DataType::f32, Interleave::bip, native)), Kernel::per_pixel);
}

// Sid's BIP kernel takes its logs without rescaling subnormal inputs, so a
// block whose stored units put sid's floor below float's smallest normal (a
// reflectance scale factor of 1e-30: decoded = 1e30 x stored, the floor
// 1e-42 stored) runs the generic tensor kernel; with a factor of 1e-20 (the
// floor 1e-32 stored) the BIP kernel serves it. Both within the tensor
// bounds of the exact CPU scores, zeros (floored) included.
TEST(GpuClassify, SidSubnormalFloorTakesTheGenericKernel) {
  CS_REQUIRE_GPU();
  std::mt19937_64 rng(cs_test::fresh_seed());
  cs::Stream stream(kDevice);
  const size_t lines = 4, samples = 40, bands = 96, pixels = lines * samples, K = 9;
  hsi_test::Scene scene = hsi_test::random_scene(rng, lines, samples, bands, K);
  for (float &v : scene.pixels) v = std::fabs(v);
  for (int i = 0; i < 20; ++i) scene.pixels[rng() % scene.pixels.size()] = 0;
  const auto [tensor, exact] = tensor_and_exact(Method::sid, std::nullopt, scene, select_bands(bands, {}));
  CudaSpectralClassifier gpu(tensor, kDevice);
  const auto [x2, r2] = largest_squared_norms(scene);
  const TensorConditioning conditioning = tensor_conditioning(scene.pixels, bands, tensor);
  const ByteOrder native = host_byte_order();
  for (double factor : {1e-20, 1e-30}) {
    SCOPED_TRACE("reflectance scale factor " + std::to_string(std::log10(factor)));
    std::vector<float> stored = scene.pixels;
    for (float &v : stored) v = float(double(v) * factor);  // decoded = stored / factor
    const auto bytes = hsi_test::encode_block(stored, lines, samples, bands, DataType::f32, Interleave::bip, native);
    const CubeBlock block = hsi_test::block_of(bytes, lines, samples, bands, DataType::f32, Interleave::bip, native,
                                               std::nullopt, factor);
    using Kernel = CudaSpectralClassifier::Kernel;
    Kernel kernel;
    const hsi_test::Result got = classify_gpu(gpu, tensor, bytes, block, stream, true, &kernel);
    EXPECT_EQ(kernel, factor < 1e-25 || !has_bip_kernel(Method::sid, gpu) ? Kernel::tensor : Kernel::tensor_bip);
    const hsi_test::Result want = hsi_test::classify_cpu(exact, block);
    const double worst = expect_within_tensor_bounds(Method::sid, want, got, pixels, K, x2, r2, NAN, conditioning);
    std::printf("[ info     ] sid, scale factor %g: worst |exact - tensor| %.3g\n", factor, worst);
  }
}

TEST(GpuClassify, TwoClassifiersShareTheConstantBank) {
  CS_REQUIRE_GPU();
  std::mt19937_64 rng(cs_test::fresh_seed());
  cs::Stream first_stream(kDevice), second_stream(kDevice);
  const size_t lines = 64, samples = 256, bands = 100;
  hsi_test::Scene a = hsi_test::random_scene(rng, lines, samples, bands, 12);
  hsi_test::Scene b = hsi_test::random_scene(rng, lines, samples, bands, 30);
  const SpectralClassifier cpu_a(ClassifierConfig{}, a.references, select_bands(bands, {}));
  ClassifierConfig euclid;
  euclid.method = Method::euclidean;
  const SpectralClassifier cpu_b(euclid, b.references, select_bands(bands, {}));
  CudaSpectralClassifier gpu_a(cpu_a, kDevice), gpu_b(cpu_b, kDevice);
  ASSERT_TRUE(gpu_a.table_in_constant_memory() && gpu_b.table_in_constant_memory());
  const auto bytes_a = hsi_test::encode_block(a.pixels, lines, samples, bands, DataType::f32, Interleave::bip,
                                              ByteOrder::little_endian);
  const auto bytes_b = hsi_test::encode_block(b.pixels, lines, samples, bands, DataType::f32, Interleave::bil,
                                              ByteOrder::little_endian);
  const CubeBlock block_a =
      hsi_test::block_of(bytes_a, lines, samples, bands, DataType::f32, Interleave::bip, ByteOrder::little_endian);
  const CubeBlock block_b =
      hsi_test::block_of(bytes_b, lines, samples, bands, DataType::f32, Interleave::bil, ByteOrder::little_endian);
  const hsi_test::Result want_a = hsi_test::classify_cpu(cpu_a, block_a);
  const hsi_test::Result want_b = hsi_test::classify_cpu(cpu_b, block_b);

  // Alternate launches on two streams without synchronising in between.
  const size_t pixels = lines * samples;
  DeviceBuffer in_a(bytes_a.size()), in_b(bytes_b.size());
  in_a.upload(bytes_a.data(), first_stream);
  in_b.upload(bytes_b.data(), second_stream);
  first_stream.synchronize();
  second_stream.synchronize();
  constexpr int kRounds = 6;
  std::vector<std::unique_ptr<DeviceBuffer>> maps, rules;
  for (int round = 0; round < kRounds; ++round) {
    const bool use_a = round % 2 == 0;
    const SpectralClassifier &cpu = use_a ? cpu_a : cpu_b;
    maps.push_back(std::make_unique<DeviceBuffer>(pixels));
    rules.push_back(std::make_unique<DeviceBuffer>(pixels * cpu.class_count() * sizeof(float)));
    const cs::Stream &s = use_a ? first_stream : second_stream;
    cs::fill_random_async(maps.back()->get(), pixels, uint32_t(rng()), s.get());  // poison
    cs::fill_random_async(rules.back()->get(), pixels * cpu.class_count() * sizeof(float), uint32_t(rng()), s.get());
    CubeBlock block = use_a ? block_a : block_b;
    block.data = use_a ? in_a.get() : in_b.get();
    ClassificationOutput out;
    out.class_map = maps.back()->get();
    out.rule_images = rules.back()->as<float>();
    (use_a ? gpu_a : gpu_b).classify(block, out, s.get());
  }
  for (int round = 0; round < kRounds; ++round) {
    const bool use_a = round % 2 == 0;
    const cs::Stream &s = use_a ? first_stream : second_stream;
    hsi_test::Result got;
    std::vector<uint8_t> map(pixels);
    got.rules.resize(pixels * (use_a ? cpu_a : cpu_b).class_count());
    maps[round]->download(map.data(), s);
    rules[round]->download(got.rules.data(), s);
    s.synchronize();
    got.labels.assign(map.begin(), map.end());
    SCOPED_TRACE(round);
    expect_same(use_a ? Method::sam : Method::euclidean, Precision::exact, use_a ? want_a : want_b, got, pixels,
                (use_a ? cpu_a : cpu_b).class_count());
  }
}

TEST(Classify, CudaClassifierWithoutDeviceThrows) {
  if (cs::device_count() > 0) GTEST_SKIP() << "a CUDA device is present: this checks the no-device path";
  std::mt19937_64 rng(cs_test::fresh_seed());
  hsi_test::Scene scene = hsi_test::random_scene(rng, 2, 2, 5, 2);
  const SpectralClassifier cpu(ClassifierConfig{}, scene.references, select_bands(5, {}));
  EXPECT_THROW(CudaSpectralClassifier(cpu, 0), cs::CudaError);
}
