// A small MATLAB v5 writer, for files with known contents: the MAT reader's
// tests and the seeds of its fuzz target.
#pragma once

#include <zlib.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

namespace mat_test {

inline void put32(std::string &s, uint32_t v) { s.append(reinterpret_cast<const char *>(&v), 4); }

// A tagged data element, padded to 8 bytes.
inline std::string element(uint32_t type, const std::string &data) {
  std::string s;
  put32(s, type);
  put32(s, static_cast<uint32_t>(data.size()));
  s += data;
  s.resize((s.size() + 7) / 8 * 8, '\0');
  return s;
}

// A miMATRIX element: flags, dimensions, name, then `payload` (the data elements).
inline std::string matrix(const std::string &name, uint32_t mat_class, bool complex, std::vector<int32_t> dims,
                          const std::string &payload) {
  std::string flags(8, '\0');
  const uint32_t word = mat_class | (complex ? 0x0800u : 0u);
  std::memcpy(&flags[0], &word, 4);
  std::string d(reinterpret_cast<const char *>(dims.data()), dims.size() * 4);
  return element(14, element(6, flags) + element(5, d) + element(1, name) + payload);
}

template <typename T>
std::string raw(const std::vector<T> &v) {
  return std::string(reinterpret_cast<const char *>(v.data()), v.size() * sizeof(T));
}

inline std::string mat_header() {
  std::string h = "MATLAB 5.0 MAT-file, made by the project's tests";
  h.resize(116, ' ');
  h += std::string(8, '\0');
  h += std::string("\x00\x01", 2) + "IM";
  return h;
}

// A 1 x 1 struct called `name` whose fields are the given unnamed matrices.
inline std::string struct_matrix(const std::string &name,
                                 const std::vector<std::pair<std::string, std::string>> &fields) {
  constexpr uint32_t kNameLength = 8;
  std::string names(fields.size() * kNameLength, '\0');
  std::string contents;
  for (size_t f = 0; f < fields.size(); ++f) {
    std::memcpy(&names[f * kNameLength], fields[f].first.data(), std::min<size_t>(fields[f].first.size(), 7));
    contents += fields[f].second;
  }
  std::string name_length;
  put32(name_length, (4u << 16) | 5u);  // small element: miINT32, 4 bytes
  put32(name_length, kNameLength);
  return matrix(name, 2, false, {1, 1}, name_length + element(1, names) + contents);
}

// A MAT-file of one top-level matrix element, stored as it is or compressed (miCOMPRESSED).
inline std::string mat_file(const std::string &variable, bool compress) {
  if (!compress) return mat_header() + variable;
  uLongf size = compressBound(variable.size());
  std::string z(size, '\0');
  compress2(reinterpret_cast<Bytef *>(&z[0]), &size, reinterpret_cast<const Bytef *>(variable.data()),
            variable.size(), 6);
  z.resize(size);
  std::string tag;
  put32(tag, 15);
  put32(tag, static_cast<uint32_t>(z.size()));
  return mat_header() + tag + z;
}

}  // namespace mat_test
