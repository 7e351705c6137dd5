// Reference preparation and the CPU classifier.
#include "hsi/classifier.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <exception>
#include <stdexcept>
#include <thread>

#include "common/host_resources.h"
#include "hsi/text_parse.h"

namespace cs::hsi {

const char *method_name(Method method) {
  switch (method) {
    case Method::sam: return "sam";
    case Method::sid: return "sid";
    case Method::correlation: return "correlation";
    case Method::bandfit: return "bandfit";
    case Method::euclidean: return "euclidean";
  }
  return "?";
}

std::optional<Method> parse_method(const std::string &name) {
  const std::string n = text::lower(text::trim(name));
  for (Method m : kAllMethods)
    if (n == method_name(m)) return m;
  return std::nullopt;
}

double default_threshold(Method method) {
  return method == Method::sam ? 0.10 : std::numeric_limits<double>::quiet_NaN();
}

std::string threshold_problem(Method method, double threshold) {
  if (std::isnan(threshold)) return "";
  // Only a threshold that no score can meet is refused (every pixel would be
  // unclassified); one that every score meets (an angle above pi, a
  // coefficient below -1) is how a user asks for no threshold.
  const bool maximum = method == Method::sam || method == Method::sid || method == Method::euclidean;
  const double unreachable_beyond = maximum ? 0.0 : 1.0;
  if (maximum ? threshold >= unreachable_beyond : threshold <= unreachable_beyond) return "";
  const char *what = method == Method::sam           ? "an angle in [0, pi] rad"
                     : method == Method::sid         ? "a divergence, not negative"
                     : method == Method::euclidean   ? "a distance, not negative"
                                                     : "a coefficient in [-1, 1]";
  char text[200];
  std::snprintf(text, sizeof text, "threshold %g: no %s score meets it (%s), every pixel would be unclassified",
                threshold, method_name(method), what);
  return text;
}

ClassMapFormat class_map_format_for(size_t classes) {
  return classes <= 254 ? ClassMapFormat::gray8 : ClassMapFormat::gray16;
}

size_t class_map_bytes_per_pixel(ClassMapFormat format) { return format == ClassMapFormat::gray8 ? 1 : 2; }

namespace {

// Band positions in [0, 1] along the selected bands: by wavelength when known.
std::vector<double> band_positions(const std::vector<int> &bands, const std::vector<double> &wavelengths_nm) {
  const size_t n = bands.size();
  std::vector<double> t(n, 0.0);
  if (n < 2) return t;
  const bool by_wavelength = !wavelengths_nm.empty() &&
                             wavelengths_nm[size_t(bands.back())] != wavelengths_nm[size_t(bands.front())];
  for (size_t u = 0; u < n; ++u) {
    t[u] = by_wavelength ? (wavelengths_nm[size_t(bands[u])] - wavelengths_nm[size_t(bands[0])]) /
                               (wavelengths_nm[size_t(bands.back())] - wavelengths_nm[size_t(bands[0])])
                         : double(u) / double(n - 1);
  }
  return t;
}

// Writes reference k's prepared values into the table (see classify_math.h),
// or returns why the reference can never match.
std::string prepare_reference(Method method, const std::vector<double> &r, const std::vector<float> &positions,
                              const ReferenceTableShape &shape, int k, float *table) {
  const int n = int(r.size());
  auto plane = [&](int p, int u) -> float & { return table[shape.index(p, k, u)]; };
  // Stores centred values and, as the constant, their sum of squares as
  // stored (so the kernel's normalisation matches the floats it multiplies).
  auto store_centred = [&](const std::vector<double> &values) -> std::string {
    double mean = 0;
    for (double v : values) mean += v;
    mean /= n;
    double sum_squares = 0;
    for (int u = 0; u < n; ++u) {
      plane(0, u) = float(values[u] - mean);
      sum_squares += double(plane(0, u)) * plane(0, u);
    }
    if (!(sum_squares > 0)) return "it is constant over the selected bands (no correlation is defined)";
    table[shape.constant_index(k)] = float(sum_squares);
    return "";
  };
  switch (method) {
    case Method::sam: {
      double norm = 0;
      for (double v : r) norm += v * v;
      norm = std::sqrt(norm);
      if (!(norm > 0)) return "it is zero at every selected band (no spectral angle is defined)";
      for (int u = 0; u < n; ++u) plane(0, u) = float(r[u] / norm);
      return "";
    }
    case Method::euclidean:
      for (int u = 0; u < n; ++u) plane(0, u) = float(r[u]);
      return "";
    case Method::correlation:
      return store_centred(r);
    case Method::bandfit: {
      const double start = r.front(), end = r.back();
      if (!(start > 0 && end > 0)) return "its continuum end points are not positive (band fit is undefined)";
      std::vector<double> removed(n);
      for (int u = 0; u < n; ++u) {  // as band_value: no cancellation
        const double t = positions[u];
        removed[u] = r[u] / (start * (1 - t) + end * t);
      }
      return store_centred(removed);
    }
    case Method::sid: {
      double sum = 0;
      for (double v : r) sum += double(sid_floor(float(v)));
      for (int u = 0; u < n; ++u) {
        const double q = double(sid_floor(float(r[u]))) / sum;
        plane(0, u) = float(q);
        plane(1, u) = float(std::log(q));
      }
      return "";
    }
  }
  return "unknown method";
}

}  // namespace

void SpectralClassifier::set_threshold(double threshold) {
  if (const std::string problem = threshold_problem(config_.method, threshold); !problem.empty())
    throw std::invalid_argument(problem);
  config_.threshold = threshold;
}

SpectralClassifier::SpectralClassifier(const ClassifierConfig &config, const ReferenceSet &references,
                                       std::vector<int> bands, const std::vector<double> &wavelengths_nm)
    : config_(config), names_(references.names), cube_bands_(references.bands), bands_(std::move(bands)) {
  const size_t K = references.count();
  if (K == 0) throw std::invalid_argument("no reference spectra to classify with");
  if (K > 65535) throw std::invalid_argument(std::to_string(K) + " references: a class map holds at most 65535");
  if (references.spectra.size() != K * cube_bands_)
    throw std::invalid_argument("reference set holds " + std::to_string(references.spectra.size()) +
                                " values, expected " + std::to_string(K) + " x " + std::to_string(cube_bands_));
  if (const std::string problem = threshold_problem(config.method, config.threshold); !problem.empty())
    throw std::invalid_argument(problem);
  if (bands_.size() < size_t(minimum_bands(config.method)))
    throw std::invalid_argument(std::string(method_name(config.method)) + " needs at least " +
                                std::to_string(minimum_bands(config.method)) + " bands, " +
                                std::to_string(bands_.size()) + " selected");
  for (int b : bands_)
    if (b < 0 || size_t(b) >= cube_bands_)
      throw std::invalid_argument("band " + std::to_string(b) + " is outside the " + std::to_string(cube_bands_) +
                                  " bands of the references");
  if (!wavelengths_nm.empty() && wavelengths_nm.size() != cube_bands_)
    throw std::invalid_argument(std::to_string(wavelengths_nm.size()) + " wavelengths for " +
                                std::to_string(cube_bands_) + " bands");

  shape_.references = int(K);
  shape_.bands = int(bands_.size());
  shape_.planes = table_planes(config.method);
  table_.assign(shape_.size(), 0.0f);
  const std::vector<double> t = band_positions(bands_, wavelengths_nm);
  std::vector<float> positions(t.size());
  for (size_t u = 0; u < t.size(); ++u) {
    positions[u] = float(t[u]);
    table_[shape_.position_index(int(u))] = positions[u];
  }
  std::vector<double> r(bands_.size());
  for (size_t k = 0; k < K; ++k) {
    for (size_t u = 0; u < bands_.size(); ++u) r[u] = references.spectrum(k)[bands_[u]];
    for (double v : r)
      if (!std::isfinite(v))
        throw std::invalid_argument("reference '" + names_[k] +
                                    "' has missing or non-finite values at selected bands (use choose_references)");
    std::string reason = prepare_reference(config.method, r, positions, shape_, int(k), table_.data());
    if (!reason.empty()) {
      for (int p = 0; p < shape_.planes; ++p)
        for (int u = 0; u < shape_.bands; ++u) table_[shape_.index(p, int(k), u)] = quiet_nan();
      table_[shape_.constant_index(int(k))] = quiet_nan();
      unusable_.push_back({k, names_[k], reason});
    }
  }
}

ClassMapPadding class_map_padding(const ClassificationOutput &output, size_t samples) {
  const size_t row = samples * class_map_bytes_per_pixel(output.class_map_format);
  if (output.class_map_stride <= row) return {};
  return {row, output.class_map_stride - row};
}

void SpectralClassifier::check_block(const CubeBlock &block, const ClassificationOutput &output) const {
  const BlockLayout &l = block.layout;
  if (l.bands != cube_bands_)
    throw std::invalid_argument("block has " + std::to_string(l.bands) + " bands but the references have " +
                                std::to_string(cube_bands_));
  if (l.pixels() == 0) return;
  if (!block.data) throw std::invalid_argument("block has no data");
  if (!output.class_map) throw std::invalid_argument("no class map to write");
  const size_t K = class_count();
  if (output.class_map_format == ClassMapFormat::gray8 && K > 255)
    throw std::invalid_argument(std::to_string(K) + " classes do not fit an 8-bit class map");
  const size_t row = l.samples * class_map_bytes_per_pixel(output.class_map_format);
  if (output.class_map_stride != 0 && output.class_map_stride < row)
    throw std::invalid_argument("class map stride " + std::to_string(output.class_map_stride) + " is below a row of " +
                                std::to_string(row) + " bytes");
}

namespace {

struct CpuJob {
  PointerTable table;
  const int *bands;
  int band_count;
  float threshold;
  Method method;
};

void write_label(const ClassificationOutput &out, size_t samples, size_t pixel, int label) {
  const size_t bpp = class_map_bytes_per_pixel(out.class_map_format);
  const size_t stride = out.class_map_stride ? out.class_map_stride : samples * bpp;
  auto *row = static_cast<unsigned char *>(out.class_map) + (pixel / samples) * stride;
  if (out.class_map_format == ClassMapFormat::gray8) {
    row[pixel % samples] = uint8_t(label);
  } else {
    const uint16_t value = uint16_t(label);
    std::memcpy(row + 2 * (pixel % samples), &value, sizeof value);
  }
}

// The CPU loop: the same chunking and the same calls as the CUDA kernel.
template <Method M, DataType T, class Acc>
void classify_pixels(const CpuJob &job, const CubeBlock &block, const ClassificationOutput &out, size_t first,
                     size_t end) {
  const BlockLayout &l = block.layout;
  const int nb = job.band_count, K = job.table.shape.references;
  const size_t pixels = l.pixels();
  std::vector<float> values(static_cast<size_t>(nb));
  for (size_t p = first; p < end; ++p) {
    const size_t base = l.pixel_offset(p);
    for (int u = 0; u < nb; ++u)
      values[u] = decode_sample<T>(block.data, base + size_t(job.bands[u]) * l.band_stride, block.format);
    Sum<Acc> floored;
    if constexpr (M == Method::sid) {
      for (int c0 = 0; c0 < nb; c0 += kBandChunk) {
        for (int u = c0; u < std::min(nb, c0 + kBandChunk); ++u) floored.add(sid_floor(values[u]));
        floored.fold();
      }
    }
    const PixelContext px = pixel_context<M>(values[0], values[nb - 1], floored.total);
    BestMatch best;
    for (int k0 = 0; k0 < K; k0 += kReferenceGroup) {
      const int count = std::min(kReferenceGroup, K - k0);
      ReferenceSums<M, kReferenceGroup, Acc> sums;
      sums.clear();
      for (int c0 = 0; c0 < nb; c0 += kBandChunk) {
        for (int u = c0; u < std::min(nb, c0 + kBandChunk); ++u) sums.add_band(values[u], u, k0, count, px, job.table);
        sums.fold();
      }
      for (int j = 0; j < count; ++j) {
        const float s = sums.score(j, k0 + j, nb, px, job.table);
        if (out.rule_images) out.rule_images[size_t(k0 + j) * pixels + p] = s;
        best.offer(s, k0 + j, higher_is_better(M));
      }
    }
    write_label(out, l.samples, p, best.label(job.threshold, higher_is_better(M)));
  }
}

}  // namespace

void SpectralClassifier::classify(const CubeBlock &block, const ClassificationOutput &output) const {
  check_block(block, output);
  const size_t pixels = block.layout.pixels();
  if (pixels == 0) return;
  if (const ClassMapPadding padding = class_map_padding(output, block.layout.samples); padding.bytes)
    for (size_t line = 0; line < block.layout.lines; ++line)
      std::memset(static_cast<unsigned char *>(output.class_map) + line * output.class_map_stride + padding.offset, 0,
                  padding.bytes);
  const CpuJob job{PointerTable{table_.data(), shape_}, bands_.data(), int(bands_.size()), float(config_.threshold),
                   config_.method};
  auto run = [&](size_t first, size_t end) {
    with_method(config_.method, [&](auto method) {
      with_data_type(block.format.type, [&](auto type) {
        with_precision(config_.precision, [&](auto precision) {
          classify_pixels<decltype(method)::value, decltype(type)::value, AccumulatorOf<decltype(precision)::value>>(
              job, block, output, first, end);
        });
      });
    });
  };
  // Enough work per thread to pay for starting it.
  const size_t work = pixels * bands_.size() * (class_count() + 1);
  size_t threads = config_.cpu_threads > 0 ? size_t(config_.cpu_threads) : size_t(cs::usable_cores());
  threads = std::max<size_t>(1, std::min({threads, pixels, work / (size_t(1) << 18) + 1}));
  if (threads == 1) {
    run(0, pixels);
    return;
  }
  std::vector<std::thread> team;
  std::vector<std::exception_ptr> failures(threads);
  for (size_t i = 0; i < threads; ++i) {
    const size_t first = pixels * i / threads, end = pixels * (i + 1) / threads;
    team.emplace_back([&, i, first, end] {
      try {
        run(first, end);
      } catch (...) {
        failures[i] = std::current_exception();
      }
    });
  }
  for (std::thread &t : team) t.join();
  for (const std::exception_ptr &f : failures)
    if (f) std::rethrow_exception(f);
}

}  // namespace cs::hsi
