// Minimal reader for MATLAB level-5 MAT-files (the format of `save -v6/-v7`):
// numeric, logical, char, struct and cell arrays, little- or big-endian,
// compressed (miCOMPRESSED, zlib) or not. Enough to read published data sets
// such as AFRL's Gotcha phase history. Every length is checked against its
// enclosing element; a malformed file throws MatError naming the byte offset.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace cs::sar {

class MatError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

enum class MatClass { Cell = 1, Struct = 2, Object = 3, Char = 4, Sparse = 5, Double = 6, Single = 7,
                      Int8 = 8, UInt8 = 9, Int16 = 10, UInt16 = 11, Int32 = 12, UInt32 = 13, Int64 = 14,
                      UInt64 = 15 };

struct MatArray {
  std::string name;
  MatClass mat_class = MatClass::Double;
  bool is_complex = false;
  bool is_logical = false;
  std::vector<int64_t> dims;
  // Numeric, logical and char arrays: values in column-major order, as double
  // (exact for every class except 64-bit integers beyond 2^53).
  std::vector<double> real, imag;
  // Struct arrays: field names, and fields[element * field_names.size() + field].
  // Cell arrays: fields[element].
  std::vector<std::string> field_names;
  std::vector<MatArray> fields;

  int64_t numel() const;
  bool has_field(const std::string &name) const;
  // A struct field of element `element`; throws MatError when absent.
  const MatArray &field(const std::string &name, int64_t element = 0) const;
  // Char arrays as text.
  std::string text() const;
};

// All top-level variables of a MAT-file.
std::vector<MatArray> read_mat_file(const std::string &path);
// The variable called `name`; throws MatError when absent.
MatArray read_mat_variable(const std::string &path, const std::string &name);

}  // namespace cs::sar
