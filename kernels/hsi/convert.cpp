#include "hsi/convert.h"

#include <cmath>
#include <cstdint>
#include <limits>

namespace cs::hsi {

ByteOrder host_byte_order() {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  return ByteOrder::big_endian;
#else
  return ByteOrder::little_endian;
#endif
}

namespace {

// The ignore value as a value of `type`, when the type can represent it.
std::optional<double> ignore_value_in_type(DataType type, double v) {
  if (std::isnan(v)) return std::nullopt;  // NaN samples are no-data anyway
  switch (type) {
    case DataType::f64: return v;
    case DataType::f32:
      if (std::fabs(v) > double(std::numeric_limits<float>::max()) && !std::isinf(v)) return std::nullopt;
      return double(float(v));  // headers print float ignore values to ~9 digits
    default: break;
  }
  if (v != std::floor(v)) return std::nullopt;
  double lo = 0, hi = 0;
  switch (type) {
    case DataType::u8: lo = 0, hi = 255; break;
    case DataType::i16: lo = -32768, hi = 32767; break;
    case DataType::u16: lo = 0, hi = 65535; break;
    case DataType::i32: lo = -2147483648.0, hi = 2147483647.0; break;
    case DataType::u32: lo = 0, hi = 4294967295.0; break;
    case DataType::i64: lo = -9223372036854775808.0, hi = 9223372036854775807.0; break;
    case DataType::u64: lo = 0, hi = 18446744073709551615.0; break;
    default: break;
  }
  if (v < lo || v > hi) return std::nullopt;
  return v;
}

}  // namespace

SampleFormat make_sample_format(DataType type, ByteOrder order, std::optional<double> data_ignore_value,
                                std::optional<double> reflectance_scale_factor) {
  SampleFormat f;
  f.type = type;
  f.swap_bytes = sample_size(type) > 1 && order != host_byte_order();
  if (data_ignore_value) {
    if (auto in_type = ignore_value_in_type(type, *data_ignore_value)) {
      f.has_ignore = true;
      f.ignore_value = *in_type;
    }
  }
  if (reflectance_scale_factor && *reflectance_scale_factor != 1.0) {
    f.has_scale = true;
    f.scale = 1.0 / *reflectance_scale_factor;
  }
  return f;
}

SampleFormat make_sample_format(const EnviHeader &header) {
  return make_sample_format(header.data_type, header.byte_order, header.data_ignore_value,
                            header.reflectance_scale_factor);
}

CubeBlock make_cube_block(const EnviHeader &header, const void *data, size_t lines) {
  CubeBlock block;
  block.data = data;
  block.format = make_sample_format(header);
  block.layout = block_layout(header.interleave, lines, header.samples, header.bands);
  return block;
}

namespace {

template <DataType T>
void convert_typed(const CubeBlock &block, float *dst) {
  const BlockLayout &l = block.layout;
  for (size_t p = 0; p < l.pixels(); ++p) {
    const size_t base = l.pixel_offset(p);
    float *out = dst + p * l.bands;
    for (size_t b = 0; b < l.bands; ++b) out[b] = decode_sample<T>(block.data, base + b * l.band_stride, block.format);
  }
}

}  // namespace

void convert_to_bip_float(const CubeBlock &block, float *dst) {
  with_data_type(block.format.type, [&](auto type) { convert_typed<decltype(type)::value>(block, dst); });
}

}  // namespace cs::hsi
