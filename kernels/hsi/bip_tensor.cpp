// Host side of the contiguous-BIP tensor kernel: the reference fragment
// table, the ranking keys and whether a block fits the kernel.
#include "hsi/bip_tensor.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <stdexcept>

namespace cs::hsi::bip_tensor {

namespace {

// Bytes of one staged pixel row (kChunkBands samples plus padding that keeps
// the fragment loads free of shared-memory bank conflicts; bip_tensor.cu).
constexpr size_t kRowElements = 48;

}  // namespace

const char *product_name(Product product) {
  switch (product) {
    case Product::fp16x3: return "fp16";
    case Product::wgmma: return "wgmma";
    default: return "tf32";
  }
}

bool screen_from_environment() {
  static const bool on = [] {
    const char *v = std::getenv("CS_HSI_BIP_SCREEN");
    return !(v && std::strcmp(v, "0") == 0);
  }();
  return on;
}

Product product_from_environment() {
  static const Product product = [] {
    const char *v = std::getenv("CS_HSI_BIP_KERNEL");
    if (!v || !*v || std::strcmp(v, "wgmma") == 0) return Product::wgmma;
    if (std::strcmp(v, "fp16") == 0) return Product::fp16x3;
    if (std::strcmp(v, "tf32") == 0) return Product::tf32x3;
    std::fprintf(stderr, "CS_HSI_BIP_KERNEL=%s: not wgmma, fp16 or tf32, using wgmma\n", v);
    return Product::wgmma;
  }();
  return product;
}

namespace {

// tf32x3's reference fragments: each reference value split into TF32 high
// and low parts.
void make_tf32_fragments(Tables &t, const PointerTable &refs, const ReferenceTableShape &shape) {
  t.fragments.assign(fragment_index(t.groups, 0, t.chunks, 0, 0, 0) * 4, 0.0f);
  for (int group = 0; group < t.groups; ++group)
    for (int chunk = 0; chunk < t.chunks; ++chunk)
      for (int step = 0; step < kStepsPerChunk; ++step)
        for (int column = 0; column < kColumnsPerGroup; ++column)
          for (int lane = 0; lane < kLanes; ++lane) {
            float *entry = &t.fragments[4 * fragment_index(group, chunk, t.chunks, step, column, lane)];
            const int k = group * kGroupReferences + fragment_reference(column, lane);
            for (int second = 0; second < 2; ++second) {
              const int u = chunk * kChunkBands + fragment_band(step, lane, second);
              const float r = k < shape.references && u < shape.bands ? refs.ref(0, k, u) : 0.0f;
              const float hi = tf32_round(r);
              entry[second] = hi;
              entry[2 + second] = tf32_low(r, hi);
            }
          }
}

// fp16x3's and wgmma's scales: each reference times 2^e, e from its largest
// magnitude over the selected bands (exact).
void scale_references(Tables &t, const PointerTable &refs, const ReferenceTableShape &shape) {
  const size_t padded = size_t(t.groups) * kGroupReferences;
  t.reference_exponent.assign(padded, 0);
  t.dot_scale.assign(padded, 1.0);
  for (int k = 0; k < shape.references; ++k) {
    float largest = 0;
    for (int u = 0; u < shape.bands; ++u) largest = std::fmax(largest, std::fabs(refs.ref(0, k, u)));
    t.reference_exponent[k] = half_scale_exponent(largest);
    t.dot_scale[k] = std::ldexp(1.0, -t.reference_exponent[k]);
  }
}

// Reference k's scaled value at selected band u, split into fp16 high and
// low parts; zeros beyond the last band or reference.
void half_parts(const Tables &t, const PointerTable &refs, const ReferenceTableShape &shape, int k, int u,
                uint16_t &hi, uint16_t &lo) {
  const float r =
      k < shape.references && u < shape.bands ? refs.ref(0, k, u) * power_of_two(t.reference_exponent[k]) : 0.0f;
  hi = half_bits(r);
  lo = half_bits(r - half_value(hi));
}

// fp16x3's reference fragments.
void make_half_fragments(Tables &t, const PointerTable &refs, const ReferenceTableShape &shape) {
  scale_references(t, refs, shape);
  t.half_fragments.assign(fragment_index(t.groups, 0, t.chunks, 0, 0, 0, kHalfStepsPerChunk) * 4, 0u);
  for (int group = 0; group < t.groups; ++group)
    for (int chunk = 0; chunk < t.chunks; ++chunk)
      for (int step = 0; step < kHalfStepsPerChunk; ++step)
        for (int column = 0; column < kColumnsPerGroup; ++column)
          for (int lane = 0; lane < kLanes; ++lane) {
            uint32_t *entry =
                &t.half_fragments[4 * fragment_index(group, chunk, t.chunks, step, column, lane, kHalfStepsPerChunk)];
            const int k = group * kGroupReferences + fragment_reference(column, lane);
            for (int j = 0; j < 4; ++j) {
              uint16_t hi, lo;
              half_parts(t, refs, shape, k, chunk * kChunkBands + half_fragment_band(step, lane, j), hi, lo);
              const int shift = 16 * (j % 2);
              entry[j / 2] |= uint32_t(hi) << shift;
              entry[2 + j / 2] |= uint32_t(lo) << shift;
            }
          }
}

// wgmma's table: the shared-memory operand of its instructions.
void make_wgmma_references(Tables &t, const PointerTable &refs, const ReferenceTableShape &shape) {
  scale_references(t, refs, shape);
  const int padded_bands = t.chunks * kChunkBands;
  t.wgmma_references.assign(size_t(t.groups) * 2 * kGroupReferences * padded_bands, 0);
  for (int group = 0; group < t.groups; ++group)
    for (int reference = 0; reference < kGroupReferences; ++reference)
      for (int position = 0; position < padded_bands; ++position) {
        uint16_t hi, lo;
        half_parts(t, refs, shape, group * kGroupReferences + reference,
                   16 * (position / 16) + wgmma_span_band(position % 16), hi, lo);
        t.wgmma_references[wgmma_reference_index(group, 0, reference, position, padded_bands)] = hi;
        t.wgmma_references[wgmma_reference_index(group, 1, reference, position, padded_bands)] = lo;
      }
}

// The screen's table (bip_tensor.h) and the bounds of its error in each key
// (classify_math.h, screen_operand_error) for the device's TF32 reading;
// after the keys.
//
// For sam (`centred`) the table holds t_k = s_k r_k - m rounded to float
// (s_k the key scale, m the usable references' mean of s_k r_k, as float):
// s_k x.r_k = x.t_k + x.m + x.rho_k, rho_k = s_k r_k - m - t_k, and x.m is
// the same for every reference, so the keys x.t_k + o_k order the
// references as the exact ones do, and the operands' part of the bound is
// in |t_k| (how far r_k lies from the others) instead of |r_k|: the TF32
// readings of similar references no longer leave an error of ~2^-12 |r_k|
// each. The benchmark's references: 1.6 -> 1.25 candidates per pixel, sam's
// f32 cube 1924-1929 -> 2029-2042 GB/s (H200, same run). The other methods keep
// t_k = r_k and their key scales in the key terms: centred, they read
// x.m as well and were slower (correlation 1936-1979 -> 1853-1860 GB/s,
// euclidean 2141-2172 -> 2048-2075, bandfit 2% slower).
void make_screen_references(Tables &t, const PointerTable &refs, const ReferenceTableShape &shape, bool centred,
                            Tf32Reading reading) {
  const double centring = screen_operand_centre(reading), operand_error = screen_operand_error(reading);
  const int padded_bands = screen_padded_bands(shape.bands), steps = padded_bands / kStepBands;
  t.screen_references.assign(size_t(kScreenRows) * padded_bands, 0.0f);
  t.screen_mean.assign(centred ? size_t(padded_bands) : 0, 0.0f);
  t.screen_weight.assign(kGroupReferences, 0.0);
  t.screen_offset_slack.assign(kGroupReferences, 0.0);
  // What the table holds for reference k and band u, exactly, before its rounding to float; and the key
  // factor the kernel multiplies the product by.
  auto scaled = [&](int k, int u) { return t.key_scale[k] * double(refs.ref(0, k, u)); };  // s_k r_k
  auto exact_value = [&](int k, int u) {
    return centred ? scaled(k, u) - double(t.screen_mean[u]) : double(refs.ref(0, k, u));
  };
  auto factor = [&](int k) { return centred ? 1.0 : t.key_scale[k]; };
  // The others (NaN samples, say) stay zeros and are never candidates: no
  // NaN enters the product or the mean.
  std::vector<int> usable;
  std::vector<bool> is_usable(kGroupReferences, false);
  for (int k = 0; k < shape.references; ++k) {
    bool finite = std::isfinite(t.key_scale[k]);
    for (int u = 0; u < shape.bands && finite; ++u) finite = std::isfinite(scaled(k, u));
    if (finite) usable.push_back(k);
    is_usable[size_t(k)] = finite;
  }
  for (int u = 0; centred && u < shape.bands && !usable.empty(); ++u) {
    double mean = 0;
    for (int k : usable) mean += scaled(k, u);
    t.screen_mean[u] = float(mean / double(usable.size()));
  }
  // Per reference: |rho_k| (with 2^-50 |s_k r_k| for the double arithmetic) and |t_k|.
  std::vector<double> residual(size_t(shape.references), 0.0), table_norm(size_t(shape.references), 0.0);
  for (int k : usable) {
    double rho2 = 0, scaled2 = 0, norm2 = 0;
    for (int u = 0; u < shape.bands; ++u) {
      const double v = exact_value(k, u);
      const float tk = float(v);
      t.screen_references[screen_index(k, u)] = tk;
      rho2 += (v - double(tk)) * (v - double(tk));
      scaled2 += scaled(k, u) * scaled(k, u);
      norm2 += double(tk) * tk;
    }
    residual[k] = centred ? std::sqrt(rho2) + 0x1p-50 * std::sqrt(scaled2) : 0.0;
    table_norm[k] = std::sqrt(norm2);
    t.screen_largest_norm2 = std::max(t.screen_largest_norm2, norm2);
  }
  // Per reference and reading of the table (truncated; rounded too unless
  // the device is known to truncate), with t_hk the reading times 1 + a (the
  // table's reading centred as the pixel's) and d_k the table's float minus
  // that: E |t_hk - c| + |d_k - e|; and the common term's bound per |x|,
  // E |c| + |e|. Per pair j, k and reading, the same for the difference of
  // their keys, whose shared parts cancel: E |f_j t_hj - f_k t_hk| +
  // |f_j d_j - f_k d_k|.
  std::vector<double> operand(size_t(shape.references), 0.0);
  std::vector<double> pair_operand(size_t(kGroupReferences) * kGroupReferences, 0.0);
  double common = 0;
  std::vector<float (*)(float)> readings{&tf32_truncate};
  if (reading == Tf32Reading::unknown) readings.push_back(&tf32_round);
  for (float (*reading_of)(float) : readings) {
    auto read = [&](float v) { return (1 + centring) * double(reading_of(v)); };
    for (int j : usable)
      for (int k : usable) {
        double spread2 = 0, residual2 = 0;
        for (int u = 0; u < shape.bands; ++u) {
          const float vj = t.screen_references[screen_index(j, u)], vk = t.screen_references[screen_index(k, u)];
          const double spread = factor(j) * read(vj) - factor(k) * read(vk);
          const double residual = factor(j) * (double(vj) - read(vj)) - factor(k) * (double(vk) - read(vk));
          spread2 += spread * spread, residual2 += residual * residual;
        }
        double &pair = pair_operand[size_t(j) * kGroupReferences + size_t(k)];
        pair = std::max(pair, operand_error * std::sqrt(spread2) + std::sqrt(residual2));
      }
    std::vector<double> c(size_t(shape.bands), 0.0), e(size_t(shape.bands), 0.0);
    for (int k : usable)
      for (int u = 0; u < shape.bands; ++u) {
        const float v = t.screen_references[screen_index(k, u)];
        c[u] += read(v);
        e[u] += double(v) - read(v);
      }
    double c2 = 0, e2 = 0;
    for (int u = 0; u < shape.bands; ++u) {
      c[u] /= double(usable.size()), e[u] /= double(usable.size());
      c2 += c[u] * c[u], e2 += e[u] * e[u];
    }
    common = std::max(common, operand_error * std::sqrt(c2) + std::sqrt(e2));
    for (int k : usable) {
      double spread2 = 0, residual2 = 0;
      for (int u = 0; u < shape.bands; ++u) {
        const float v = t.screen_references[screen_index(k, u)];
        spread2 += (read(v) - c[u]) * (read(v) - c[u]);
        residual2 += (double(v) - read(v) - e[u]) * (double(v) - read(v) - e[u]);
      }
      operand[k] = std::max(operand[k], operand_error * std::sqrt(spread2) + std::sqrt(residual2));
    }
  }
  // The common term orders the references as x.r_k does only where their key
  // factors are equal (sam, euclidean); correlation's and bandfit's differ
  // (1 / |r_k|): each reference's factor f_k is f + (f_k - f) with f the
  // middle of them, f times the common term is common, the rest is bounded.
  double least_factor = INFINITY, most_factor = -INFINITY;
  for (int k : usable) {
    least_factor = std::min(least_factor, factor(k));
    most_factor = std::max(most_factor, factor(k));
  }
  const double middle_factor = (least_factor + most_factor) / 2;
  const double own_per_norm = steps * kScreenStepError + centring * 0x1p-10 + 0x1p-21;
  for (int k : usable) {
    // Per |x|: the operands' part, the steps' accumulation, the centring's
    // a 2^-10 |t_k|, and the kernel's float keys (2^-21 |f_k| |x| |t_k|;
    // 2^-22 |offset| apart), rho_k, the common term's unequal part, with a
    // margin for the rounding of all these sums.
    const double weight = (std::fabs(factor(k)) * (operand[k] + own_per_norm * table_norm[k] + residual[k]) +
                           std::fabs(factor(k) - middle_factor) * common) *
                          (1 + 0x1p-8);
    t.screen_weight[k] = std::isfinite(weight) ? weight : 0.0;
    t.screen_offset_slack[k] = 0x1p-22 * std::fabs(t.key_offset[k]);
  }
  // Per pair: its operands' part and both keys' own accumulation, float and
  // rho terms, with the same margin; never more than the two keys' own
  // weights together (which hold for differences too: what they leave out
  // is common). Rounded up to float, as the kernel reads them.
  auto rounded_up = [](double v) {
    float f = float(v);
    if (double(f) < v) f = std::nextafter(f, std::numeric_limits<float>::infinity());
    return std::isnan(v) ? std::numeric_limits<float>::infinity() : f;
  };
  auto own = [&](int m) {
    return std::fabs(factor(m)) * (own_per_norm * table_norm[m] + residual[m]);
  };
  t.screen_pair_weights.assign(2 * size_t(kGroupReferences) * kGroupReferences, 0.0f);
  for (int j : usable)
    for (int k : usable) {
      if (j == k) continue;
      const size_t at = size_t(j) * kGroupReferences + size_t(k);
      const double pair = (pair_operand[at] + own(j) + own(k)) * (1 + 0x1p-8);
      t.screen_pair_weights[2 * at] = rounded_up(std::min(pair, t.screen_weight[j] + t.screen_weight[k]));
      t.screen_pair_weights[2 * at + 1] = rounded_up(t.screen_offset_slack[j] + t.screen_offset_slack[k]);
    }
  // What a key's own bound leaves out: the middle factor times the common
  // term, and sam's x . m, which the kernel sums in float over 16 bands
  // (at most 2^-20 |x| |m|).
  double mean2 = 0;
  for (float m : t.screen_mean) mean2 += double(m) * m;
  const double common_weight = (std::fabs(middle_factor) * common + 0x1p-20 * std::sqrt(mean2)) * (1 + 0x1p-8);
  t.screen_common_weight = std::isfinite(common_weight) ? common_weight : INFINITY;  // infinite: nothing settled
  t.screen_terms.assign(4 * size_t(kGroupReferences), 0.0f);
  for (int k = 0; k < kGroupReferences; ++k) {
    const bool use = is_usable[size_t(k)];
    float *terms = &t.screen_terms[4 * size_t(k)];
    // The product centred on both operands' readings (classify_math.h).
    terms[0] = use ? float(factor(k) * (1 + centring) * (1 + centring)) : 0.0f;
    terms[1] = use ? float(t.key_offset[k]) : -std::numeric_limits<float>::infinity();
    terms[2] = float(t.screen_weight[k]);
    terms[3] = float(t.screen_offset_slack[k]);
  }
}

// Sid's tables (Tables::sid_terms): wgmma's table of a one-plane table whose
// bands are q's, padded to whole chunks, then log q - c_k's likewise, times
// 2^(kSidLogExponent - kSidShareExponent) (the pixel operands' scales).
Tables make_sid_tables(const std::vector<float> &table, const ReferenceTableShape &shape) {
  const PointerTable refs{table.data(), shape};
  const int half_bands = chunks_for(shape) * kChunkBands;
  ReferenceTableShape products_shape;
  products_shape.references = shape.references;
  products_shape.bands = 2 * half_bands;
  std::vector<float> products(products_shape.size(), 0.0f);
  Tables t;
  t.product = Product::wgmma;
  t.groups = groups_for(shape);
  t.chunks = product_chunks_for(Method::sid, shape);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const size_t padded = size_t(t.groups) * kGroupReferences;
  t.sid_terms.assign(3 * padded, nan);
  t.key_scale.assign(padded, nan);
  t.key_offset.assign(padded, nan);
  for (int k = 0; k < shape.references; ++k) {
    double log_q_sum = 0, q_sum = 0, q_log_q = 0;
    for (int u = 0; u < shape.bands; ++u) {
      log_q_sum += refs.ref(1, k, u);
      q_sum += refs.ref(0, k, u);
      q_log_q += double(refs.ref(0, k, u)) * refs.ref(1, k, u);
    }
    const float centre = float(log_q_sum / shape.bands);
    for (int u = 0; u < shape.bands; ++u) {
      products[products_shape.index(0, k, u)] = refs.ref(0, k, u);
      products[products_shape.index(0, k, half_bands + u)] =
          std::ldexp(refs.ref(1, k, u) - centre, kSidLogExponent - kSidShareExponent);
    }
    t.sid_terms[3 * size_t(k)] = centre;
    t.sid_terms[3 * size_t(k) + 1] = q_sum;
    t.sid_terms[3 * size_t(k) + 2] = q_log_q;
    const double offset = double(centre) - q_log_q;
    if (std::isfinite(offset)) {  // else unusable: NaN key
      t.key_scale[k] = 1;
      t.key_offset[k] = offset;
    }
  }
  make_wgmma_references(t, PointerTable{products.data(), products_shape}, products_shape);
  return t;
}

}  // namespace

Tables make_tables(Method method, const std::vector<float> &table, const ReferenceTableShape &shape,
                   Product product, Tf32Reading reading) {
  if (method == Method::sid) {
    if (product != Product::wgmma) throw std::invalid_argument("sid's BIP tensor tables are wgmma's only");
    return make_sid_tables(table, shape);
  }
  Tables t;
  t.product = product;
  t.groups = groups_for(shape);
  t.chunks = chunks_for(shape);
  const PointerTable refs{table.data(), shape};
  if (product == Product::fp16x3)
    make_half_fragments(t, refs, shape);
  else if (product == Product::wgmma)
    make_wgmma_references(t, refs, shape);
  else
    make_tf32_fragments(t, refs, shape);
  const size_t padded = size_t(t.groups) * kGroupReferences;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  t.key_scale.assign(padded, nan);
  t.key_offset.assign(padded, nan);
  for (int k = 0; k < shape.references; ++k) {
    switch (method) {
      case Method::correlation:
      case Method::bandfit:
        t.key_scale[k] = 1.0 / std::sqrt(double(refs.constant(k)));  // NaN for unusable references
        t.key_offset[k] = 0;
        break;
      case Method::euclidean: {
        double norm2 = 0;  // from the stored floats, as the generic kernel
        for (int u = 0; u < shape.bands; ++u) norm2 += double(refs.ref(0, k, u)) * refs.ref(0, k, u);
        t.key_scale[k] = 2;
        t.key_offset[k] = -norm2;
        break;
      }
      default:  // sam: unit references, the dot product orders the angles
        t.key_scale[k] = 1;
        t.key_offset[k] = 0;
        if (!std::isfinite(refs.ref(0, k, 0))) t.key_scale[k] = nan;
    }
  }
  if (method == Method::bandfit) {
    t.positions.assign(size_t(t.chunks) * kChunkBands, 0.0f);
    for (int u = 0; u < shape.bands; ++u) t.positions[size_t(u)] = refs.position(u);
  }
  if (product == Product::wgmma && t.groups == 1 && screened(method))
    make_screen_references(t, refs, shape, method == Method::sam, reading);
  return t;
}

int contiguous_first_band(const std::vector<int> &bands) {
  if (bands.empty()) return -1;
  for (size_t u = 1; u < bands.size(); ++u)
    if (bands[u] != bands[0] + int(u)) return -1;
  return bands[0];
}

int copy_bytes_for(const CubeBlock &block, int first_band, int band_count) {
  const DataType type = block.format.type;
  if (type != DataType::f32 && type != DataType::i16 && type != DataType::u16) return 0;
  // Samples in the other byte order are swapped where the kernels read them (one byte permute each).
  if (first_band < 0) return 0;
  const BlockLayout &l = block.layout;
  // Pixel p's bands start at p * sample_stride: BIP, lines packed.
  if (l.band_stride != 1 || l.line_stride != l.samples * l.sample_stride) return 0;
  if (size_t(first_band) + size_t(band_count) > l.sample_stride) return 0;
  const size_t size = sample_size(type);
  const uintptr_t first = reinterpret_cast<uintptr_t>(block.data) + first_band * size;
  const size_t pixel_bytes = l.sample_stride * size;
  for (int bytes : {16, 8, 4})
    if (first % bytes == 0 && pixel_bytes % bytes == 0) return bytes;
  return 0;
}

float sid_stored_floor(const CubeBlock &block) {
  return float(double(kSidFloor) / (block.format.has_scale ? block.format.scale : 1.0));
}
bool sid_floor_is_normal(const CubeBlock &block) {
  return sid_stored_floor(block) >= std::numeric_limits<float>::min();
}

bool uses_screen(Method method, const DeviceTables &tables, DataType type, int copy_bytes,
                 const ClassificationOutput &output) {
  if (tables.screen_warpgroups == 0 || !tables.screen_references || output.rule_images || !screened(method))
    return false;
  if (type == DataType::f32) return true;
  // 16-bit rows are widened as they are staged (copied raw, converted in shared memory; every method but bandfit
  // keeps them as stored, in 8-byte blocks), fast only in aligned
  // 16-byte pieces (the slabs the bands fill; a last partial slab sample by sample): rows off that alignment,
  // staged sample by sample throughout, took i16 sam to 554 GB/s at 200 bands, where the kernel without the screen
  // reads whole chunks.
  const bool sixteen_bit = type == DataType::i16 || type == DataType::u16;
  return sixteen_bit && copy_bytes == 16;
}

size_t shared_bytes(DataType type, int chunks, int stages, Product product, int groups) {
  if (product == Product::wgmma)  // every group's table and ranking terms; staging per warp group
    return size_t(groups) * kGroupReferences * (2 * chunks * kChunkBands * sizeof(uint16_t) + 3 * sizeof(double)) +
           size_t(kWarpgroupsPerBlock) * stages * kWarpgroupPixels * kRowElements * sample_size(type);
  const size_t references = size_t(chunks) * fragments_per_chunk(product) * 4 * sizeof(float);
  const size_t pixel_buffers = size_t(stages) * kTilePixels * kRowElements * sample_size(type);
  // per pixel: two sums, and per warp column a candidate (key, dot, index)
  const size_t epilogue = kTilePixels * (2 * sizeof(double) + 2 * (2 * sizeof(double) + sizeof(int)));
  return references + pixel_buffers + epilogue;
}

int stages_for(DataType type, int chunks, size_t max_shared_bytes, Product product, int groups) {
  for (int stages = kMostStages; stages >= kFewestStages; --stages)
    if (shared_bytes(type, chunks, stages, product, groups) <= max_shared_bytes) return stages;
  return 0;
}

size_t screen_shared_bytes(int bands, int warpgroups, bool raw_tiles) {
  const size_t operand = size_t(screen_padded_bands(bands)) * kScreenRows * sizeof(float);
  const size_t centre = size_t(screen_padded_bands(bands)) * sizeof(float);
  const size_t tile = raw_tiles ? operand / 2 : operand;
  return operand + kGroupReferences * 4 * sizeof(float) + centre + 1024 + size_t(warpgroups) * tile;
}

int screen_warpgroups_for(int bands, size_t max_shared_bytes) {
  for (int warpgroups = kScreenMostWarpgroups; warpgroups > 0; --warpgroups)
    if (screen_shared_bytes(bands, warpgroups) <= max_shared_bytes) return warpgroups;
  return 0;
}

}  // namespace cs::hsi::bip_tensor
