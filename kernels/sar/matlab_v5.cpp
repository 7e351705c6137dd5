#include "sar/matlab_v5.h"

#include <zlib.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <limits>

namespace cs::sar {

namespace {

enum DataType : uint32_t {
  miINT8 = 1, miUINT8 = 2, miINT16 = 3, miUINT16 = 4, miINT32 = 5, miUINT32 = 6, miSINGLE = 7, miDOUBLE = 9,
  miINT64 = 12, miUINT64 = 13, miMATRIX = 14, miCOMPRESSED = 15, miUTF8 = 16, miUTF16 = 17, miUTF32 = 18
};

constexpr size_t kHeaderBytes = 128;
constexpr int kMaxDepth = 64;
constexpr size_t kMaxInflatedBytes = size_t{2} << 30;

size_t type_size(uint32_t t) {
  switch (t) {
    case miINT8: case miUINT8: case miUTF8: return 1;
    case miINT16: case miUINT16: case miUTF16: return 2;
    case miINT32: case miUINT32: case miSINGLE: case miUTF32: return 4;
    case miDOUBLE: case miINT64: case miUINT64: return 8;
    default: return 0;
  }
}

// A view of bytes that knows its offset in the file (for messages) and the byte order.
struct Cursor {
  const uint8_t *data;
  size_t size;
  uint64_t file_offset;  // of data[0]; for inflated data, of the compressed element
  bool swap;
  std::string file;

  [[noreturn]] void fail(size_t at, const std::string &what) const {
    throw MatError("MAT file '" + file + "' (byte offset " + std::to_string(file_offset + at) + "): " + what);
  }
  uint32_t u32(size_t at) const {
    if (at + 4 > size) fail(at, "truncated (need 4 bytes)");
    uint32_t v;
    std::memcpy(&v, data + at, 4);
    return swap ? __builtin_bswap32(v) : v;
  }
};

struct Element {
  uint32_t type = 0;
  size_t data_begin = 0, data_size = 0, next = 0;
};

Element read_tag(const Cursor &c, size_t at, size_t end) {
  if (at + 8 > end) c.fail(at, "truncated data element tag");
  Element e;
  const uint32_t first = c.u32(at);
  if (first >> 16) {  // small data element: 2-byte size and type, data in the tag's second half
    e.type = first & 0xffff;
    e.data_size = first >> 16;
    if (e.data_size > 4) c.fail(at, "small data element claims " + std::to_string(e.data_size) + " bytes");
    e.data_begin = at + 4;
    e.next = at + 8;
    return e;
  }
  e.type = first;
  e.data_size = c.u32(at + 4);
  e.data_begin = at + 8;
  if (e.data_size > end - e.data_begin)
    c.fail(at, "data element of " + std::to_string(e.data_size) + " bytes runs past its container (" +
                   std::to_string(end - e.data_begin) + " bytes left)");
  const size_t padded = e.type == miCOMPRESSED ? e.data_size : (e.data_size + 7) / 8 * 8;
  e.next = std::min(end, e.data_begin + padded);
  return e;
}

double load_value(const Cursor &c, uint32_t type, size_t at) {
  uint8_t b[8];
  const size_t n = type_size(type);
  std::memcpy(b, c.data + at, n);
  if (c.swap)
    for (size_t i = 0; i < n / 2; ++i) std::swap(b[i], b[n - 1 - i]);
  switch (type) {
    case miINT8: { int8_t v; std::memcpy(&v, b, 1); return v; }
    case miUINT8: case miUTF8: return b[0];
    case miINT16: { int16_t v; std::memcpy(&v, b, 2); return v; }
    case miUINT16: case miUTF16: { uint16_t v; std::memcpy(&v, b, 2); return v; }
    case miINT32: { int32_t v; std::memcpy(&v, b, 4); return v; }
    case miUINT32: case miUTF32: { uint32_t v; std::memcpy(&v, b, 4); return v; }
    case miSINGLE: { float v; std::memcpy(&v, b, 4); return v; }
    case miDOUBLE: { double v; std::memcpy(&v, b, 8); return v; }
    case miINT64: { int64_t v; std::memcpy(&v, b, 8); return static_cast<double>(v); }
    case miUINT64: { uint64_t v; std::memcpy(&v, b, 8); return static_cast<double>(v); }
  }
  return 0;
}

std::vector<double> read_numbers(const Cursor &c, const Element &e, int64_t expected, const char *what) {
  const size_t size = type_size(e.type);
  if (size == 0) c.fail(e.data_begin - 8, std::string(what) + ": unsupported data type " + std::to_string(e.type));
  if (e.data_size % size != 0) c.fail(e.data_begin - 8, std::string(what) + ": size not a multiple of its type");
  const size_t count = e.data_size / size;
  if (expected >= 0 && count != static_cast<size_t>(expected))
    c.fail(e.data_begin - 8, std::string(what) + ": " + std::to_string(count) + " values for " +
                                 std::to_string(expected) + " elements");
  std::vector<double> v(count);
  for (size_t i = 0; i < count; ++i) v[i] = load_value(c, e.type, e.data_begin + i * size);
  return v;
}

MatArray parse_matrix(const Cursor &c, const Element &outer, int depth);

std::vector<uint8_t> inflate_element(const Cursor &c, const Element &e) {
  std::vector<uint8_t> out;
  z_stream z{};
  if (inflateInit(&z) != Z_OK) c.fail(e.data_begin, "zlib initialisation failed");
  z.next_in = const_cast<Bytef *>(c.data + e.data_begin);
  z.avail_in = static_cast<uInt>(e.data_size);
  int rc = Z_OK;
  while (rc != Z_STREAM_END) {
    if (out.size() >= kMaxInflatedBytes) {
      inflateEnd(&z);
      c.fail(e.data_begin, "compressed element inflates past 2 GiB");
    }
    const size_t chunk = std::max<size_t>(e.data_size * 4, 1 << 16);
    const size_t before = out.size();
    out.resize(before + chunk);
    z.next_out = out.data() + before;
    z.avail_out = static_cast<uInt>(chunk);
    rc = inflate(&z, Z_NO_FLUSH);
    out.resize(before + chunk - z.avail_out);
    if (rc != Z_OK && rc != Z_STREAM_END) {
      inflateEnd(&z);
      c.fail(e.data_begin, std::string("corrupt compressed data (zlib: ") + (z.msg ? z.msg : "error") + ")");
    }
    if (rc == Z_OK && z.avail_in == 0 && z.avail_out != 0) {
      inflateEnd(&z);
      c.fail(e.data_begin, "compressed data ends early");
    }
  }
  inflateEnd(&z);
  return out;
}

// A top-level (or compressed) element: a matrix, or nothing we read.
bool parse_top(const Cursor &c, const Element &e, std::vector<MatArray> &out) {
  if (e.type == miMATRIX) {
    out.push_back(parse_matrix(c, e, 0));
    return true;
  }
  if (e.type == miCOMPRESSED) {
    const std::vector<uint8_t> inflated = inflate_element(c, e);
    const Cursor inner{inflated.data(), inflated.size(), c.file_offset + e.data_begin, c.swap, c.file};
    const Element m = read_tag(inner, 0, inner.size);
    return parse_top(inner, m, out);
  }
  return false;
}

MatArray parse_matrix(const Cursor &c, const Element &outer, int depth) {
  if (depth > kMaxDepth) c.fail(outer.data_begin, "arrays nested too deeply");
  MatArray a;
  const size_t end = outer.data_begin + outer.data_size;
  if (outer.data_size == 0) return a;  // an empty array (e.g. an unset field)
  size_t at = outer.data_begin;
  const Element flags = read_tag(c, at, end);
  if (flags.type != miUINT32 || flags.data_size != 8) c.fail(at, "array flags missing");
  const uint32_t word = c.u32(flags.data_begin);
  const uint32_t cls = word & 0xff;
  if (cls < 1 || cls > 15) c.fail(at, "unknown array class " + std::to_string(cls));
  a.mat_class = static_cast<MatClass>(cls);
  a.is_complex = (word >> 8) & 0x08;
  a.is_logical = (word >> 8) & 0x02;
  at = flags.next;

  const Element dims = read_tag(c, at, end);
  if (dims.type != miINT32 || dims.data_size < 8 || dims.data_size % 4) c.fail(at, "dimensions missing");
  int64_t numel = 1;
  for (size_t i = 0; i < dims.data_size / 4; ++i) {
    const int32_t d = static_cast<int32_t>(c.u32(dims.data_begin + 4 * i));
    if (d < 0) c.fail(dims.data_begin + 4 * i, "negative dimension");
    a.dims.push_back(d);
    if (d != 0 && numel > std::numeric_limits<int64_t>::max() / d) c.fail(dims.data_begin, "dimensions overflow");
    numel *= d;
  }
  // Every element needs at least one byte (struct/cell elements 8): anything
  // larger than the enclosing element is a lie.
  if (numel > static_cast<int64_t>(outer.data_size)) c.fail(dims.data_begin, "dimensions exceed the element's size");
  at = dims.next;

  const Element name = read_tag(c, at, end);
  if (name.type != miINT8) c.fail(at, "array name missing");
  a.name.assign(reinterpret_cast<const char *>(c.data + name.data_begin), name.data_size);
  at = name.next;

  switch (a.mat_class) {
    case MatClass::Struct: {
      const Element len = read_tag(c, at, end);
      if (len.type != miINT32 || len.data_size != 4) c.fail(at, "struct field name length missing");
      const uint32_t name_len = c.u32(len.data_begin);
      at = len.next;
      const Element names = read_tag(c, at, end);
      if (names.type != miINT8 || name_len == 0 || names.data_size % name_len)
        c.fail(at, "struct field names malformed");
      for (size_t i = 0; i < names.data_size / name_len; ++i) {
        const char *p = reinterpret_cast<const char *>(c.data + names.data_begin + i * name_len);
        a.field_names.emplace_back(p, strnlen(p, name_len));
      }
      at = names.next;
      const int64_t count = numel * static_cast<int64_t>(a.field_names.size());
      for (int64_t i = 0; i < count; ++i) {
        const Element f = read_tag(c, at, end);
        if (f.type != miMATRIX) c.fail(at, "struct field is not an array");
        a.fields.push_back(parse_matrix(c, f, depth + 1));
        at = f.next;
      }
      break;
    }
    case MatClass::Cell:
      for (int64_t i = 0; i < numel; ++i) {
        const Element f = read_tag(c, at, end);
        if (f.type != miMATRIX) c.fail(at, "cell element is not an array");
        a.fields.push_back(parse_matrix(c, f, depth + 1));
        at = f.next;
      }
      break;
    case MatClass::Sparse:
    case MatClass::Object: c.fail(outer.data_begin, "sparse and object arrays are not supported");
    default: {
      const Element re = read_tag(c, at, end);
      const bool is_char = a.mat_class == MatClass::Char;
      a.real = read_numbers(c, re, is_char && re.type == miUTF8 ? -1 : numel, "real part");
      at = re.next;
      if (a.is_complex) {
        const Element im = read_tag(c, at, end);
        a.imag = read_numbers(c, im, numel, "imaginary part");
      }
    }
  }
  return a;
}

}  // namespace

int64_t MatArray::numel() const {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return dims.empty() ? 0 : n;
}

bool MatArray::has_field(const std::string &field_name) const {
  for (const std::string &f : field_names)
    if (f == field_name) return true;
  return false;
}

const MatArray &MatArray::field(const std::string &field_name, int64_t element) const {
  for (size_t i = 0; i < field_names.size(); ++i)
    if (field_names[i] == field_name) {
      const size_t at = static_cast<size_t>(element) * field_names.size() + i;
      if (element < 0 || at >= fields.size())
        throw MatError("MAT: element " + std::to_string(element) + " of struct '" + name + "' does not exist");
      return fields[at];
    }
  throw MatError("MAT: struct '" + name + "' has no field '" + field_name + "'");
}

std::string MatArray::text() const {
  std::string s;
  for (double v : real) s += static_cast<char>(static_cast<int>(v));
  return s;
}

std::vector<MatArray> read_mat_file(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw MatError("MAT file '" + path + "': cannot open");
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const Cursor probe{bytes.data(), bytes.size(), 0, false, path};
  if (bytes.size() < kHeaderBytes) probe.fail(bytes.size(), "shorter than the 128-byte header");
  if (std::memcmp(bytes.data(), "MATLAB 5.0 MAT-file", 19) != 0)
    probe.fail(0, "not a MATLAB 5 MAT-file (v4 and v7.3/HDF5 files are not supported)");
  bool swap;
  if (bytes[126] == 'I' && bytes[127] == 'M') swap = false;
  else if (bytes[126] == 'M' && bytes[127] == 'I') swap = true;
  else probe.fail(126, "bad endian indicator");
  const Cursor c{bytes.data(), bytes.size(), 0, swap, path};
  std::vector<MatArray> out;
  for (size_t at = kHeaderBytes; at < bytes.size();) {
    const Element e = read_tag(c, at, bytes.size());
    parse_top(c, e, out);
    at = e.next;
  }
  return out;
}

MatArray read_mat_variable(const std::string &path, const std::string &name) {
  for (MatArray &a : read_mat_file(path))
    if (a.name == name) return std::move(a);
  throw MatError("MAT file '" + path + "': no variable '" + name + "'");
}

}  // namespace cs::sar
