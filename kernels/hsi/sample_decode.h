// Per-sample decoding of native ENVI samples and the addressing of a block of
// lines in any interleave. Compiled by both nvcc and g++ (CS_HD): the CPU
// conversion and classification loops and the CUDA kernels call these same
// functions, so the GPU can receive native samples (int16 moves half the
// bytes of float) and decode them itself, and CI tests that decoding.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include "common/hd.h"
#include "hsi/envi.h"

namespace cs::hsi {

// How to turn one stored sample into a float.
struct SampleFormat {
  DataType type = DataType::f32;
  bool swap_bytes = false;   // file byte order differs from the machine's
  bool has_ignore = false;   // `data ignore value` present and representable in `type`
  double ignore_value = 0;   // the ignore value in the file's own type (exact)
  bool has_scale = false;    // `reflectance scale factor` present and not 1
  double scale = 1;          // multiplier: 1 / reflectance scale factor
};

// Where sample (pixel, band) of a block lives, in samples from the block
// start. Pixels are numbered line-major within the block: line * samples + s.
struct BlockLayout {
  size_t lines = 0;
  size_t samples = 0;
  size_t bands = 0;
  size_t line_stride = 0;
  size_t sample_stride = 0;
  size_t band_stride = 0;

  CS_HD size_t pixels() const { return lines * samples; }
  CS_HD size_t values() const { return lines * samples * bands; }
  CS_HD size_t pixel_offset(size_t pixel) const {
    return (pixel / samples) * line_stride + (pixel % samples) * sample_stride;
  }
  CS_HD size_t offset(size_t pixel, size_t band) const { return pixel_offset(pixel) + band * band_stride; }
};

// Layout of a block of `lines` whole lines as EnviReader returns it (a BSQ
// block holds one plane of `lines` x `samples` per band).
inline BlockLayout block_layout(Interleave interleave, size_t lines, size_t samples, size_t bands) {
  BlockLayout l;
  l.lines = lines;
  l.samples = samples;
  l.bands = bands;
  switch (interleave) {
    case Interleave::bip:
      l.line_stride = samples * bands;
      l.sample_stride = bands;
      l.band_stride = 1;
      break;
    case Interleave::bil:
      l.line_stride = samples * bands;
      l.sample_stride = 1;
      l.band_stride = samples;
      break;
    case Interleave::bsq:
      l.line_stride = samples;
      l.sample_stride = 1;
      l.band_stride = lines * samples;
      break;
  }
  return l;
}

// A block of native samples (host or device memory, aligned to the sample
// size) and how to read it.
struct CubeBlock {
  const void *data = nullptr;
  SampleFormat format;
  BlockLayout layout;
};

CS_HD float quiet_nan() {
#if defined(__CUDA_ARCH__)
  return __int_as_float(0x7fc00000);
#else
  return std::numeric_limits<float>::quiet_NaN();
#endif
}

CS_HD bool is_finite(float v) {
#if defined(__CUDA_ARCH__)
  return isfinite(v);
#else
  return v - v == 0.0f;  // false for NaN and +-inf
#endif
}

namespace detail {

template <DataType T>
struct SampleTraits;
// Value: the C++ type of a sample; Bits: an unsigned integer of its width.
template <> struct SampleTraits<DataType::u8> { using Value = uint8_t; using Bits = uint8_t; };
template <> struct SampleTraits<DataType::i16> { using Value = int16_t; using Bits = uint16_t; };
template <> struct SampleTraits<DataType::u16> { using Value = uint16_t; using Bits = uint16_t; };
template <> struct SampleTraits<DataType::i32> { using Value = int32_t; using Bits = uint32_t; };
template <> struct SampleTraits<DataType::u32> { using Value = uint32_t; using Bits = uint32_t; };
template <> struct SampleTraits<DataType::f32> { using Value = float; using Bits = uint32_t; };
template <> struct SampleTraits<DataType::i64> { using Value = int64_t; using Bits = uint64_t; };
template <> struct SampleTraits<DataType::u64> { using Value = uint64_t; using Bits = uint64_t; };
template <> struct SampleTraits<DataType::f64> { using Value = double; using Bits = uint64_t; };

CS_HD uint8_t byte_swap(uint8_t v) { return v; }
CS_HD uint16_t byte_swap(uint16_t v) { return uint16_t((v >> 8) | (v << 8)); }
CS_HD uint32_t byte_swap(uint32_t v) {
  return (v >> 24) | ((v >> 8) & 0x0000ff00u) | ((v << 8) & 0x00ff0000u) | (v << 24);
}
CS_HD uint64_t byte_swap(uint64_t v) {
  return (uint64_t(byte_swap(uint32_t(v))) << 32) | byte_swap(uint32_t(v >> 32));
}

template <class Bits>
CS_HD Bits load_bits(const void *data, size_t index) {
#if defined(__CUDA_ARCH__)
  return static_cast<const Bits *>(data)[index];  // device buffers are aligned (checked at launch)
#else
  Bits v;
  std::memcpy(&v, static_cast<const unsigned char *>(data) + index * sizeof(Bits), sizeof(Bits));
  return v;
#endif
}

template <class Value, class Bits>
CS_HD Value from_bits(Bits bits) {
  if constexpr (std::is_same_v<Value, float>) {
#if defined(__CUDA_ARCH__)
    return __uint_as_float(bits);
#else
    float f;
    std::memcpy(&f, &bits, sizeof f);
    return f;
#endif
  } else if constexpr (std::is_same_v<Value, double>) {
#if defined(__CUDA_ARCH__)
    return __longlong_as_double((long long)bits);
#else
    double d;
    std::memcpy(&d, &bits, sizeof d);
    return d;
#endif
  } else {
    return static_cast<Value>(bits);  // two's complement reinterpretation for signed types
  }
}

}  // namespace detail

// Sample `index` (in samples from `data`) as a float: byte order fixed, the
// data ignore value mapped to NaN (no data), the reflectance scale applied.
template <DataType T>
CS_HD float decode_sample(const void *data, size_t index, const SampleFormat &format) {
  using Traits = detail::SampleTraits<T>;
  typename Traits::Bits bits = detail::load_bits<typename Traits::Bits>(data, index);
  if (format.swap_bytes) bits = detail::byte_swap(bits);
  const typename Traits::Value value = detail::from_bits<typename Traits::Value>(bits);
  if (format.has_ignore && double(value) == format.ignore_value) return quiet_nan();
  if (format.has_scale) return float(double(value) * format.scale);
  return float(value);
}

// The same, with the type chosen at run time.
CS_HD float decode_sample(const void *data, size_t index, const SampleFormat &format) {
  switch (format.type) {
    case DataType::u8: return decode_sample<DataType::u8>(data, index, format);
    case DataType::i16: return decode_sample<DataType::i16>(data, index, format);
    case DataType::u16: return decode_sample<DataType::u16>(data, index, format);
    case DataType::i32: return decode_sample<DataType::i32>(data, index, format);
    case DataType::u32: return decode_sample<DataType::u32>(data, index, format);
    case DataType::f32: return decode_sample<DataType::f32>(data, index, format);
    case DataType::i64: return decode_sample<DataType::i64>(data, index, format);
    case DataType::u64: return decode_sample<DataType::u64>(data, index, format);
    case DataType::f64: return decode_sample<DataType::f64>(data, index, format);
  }
  return quiet_nan();
}

// Calls f(std::integral_constant<DataType, T>{}) for the run-time type `type`
// (host code: picks the kernel or loop instantiated for that type).
template <class F>
decltype(auto) with_data_type(DataType type, F &&f) {
  switch (type) {
    case DataType::u8: return f(std::integral_constant<DataType, DataType::u8>{});
    case DataType::i16: return f(std::integral_constant<DataType, DataType::i16>{});
    case DataType::u16: return f(std::integral_constant<DataType, DataType::u16>{});
    case DataType::i32: return f(std::integral_constant<DataType, DataType::i32>{});
    case DataType::u32: return f(std::integral_constant<DataType, DataType::u32>{});
    case DataType::f32: return f(std::integral_constant<DataType, DataType::f32>{});
    case DataType::i64: return f(std::integral_constant<DataType, DataType::i64>{});
    case DataType::u64: return f(std::integral_constant<DataType, DataType::u64>{});
    case DataType::f64: break;
  }
  return f(std::integral_constant<DataType, DataType::f64>{});
}

}  // namespace cs::hsi
