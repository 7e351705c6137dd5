// ENVI raster files: header parsing and block reading.
//
// An ENVI image is a flat binary file plus a text header (`cube.hdr`) that
// says how to read it: samples x lines x bands, the sample type, the byte
// order, the interleave and the number of bytes to skip before the samples.
// The reader hands out blocks of whole lines in the file's native format, so
// a cube larger than memory can be streamed, and native samples (int16 is
// half the bytes of float) can travel to the GPU before conversion.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace cs::hsi {

// Every error about the contents of an ENVI file or spectral library. The
// message names the file, and the key and line where the header is at fault.
class EnviError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// ENVI `data type` codes (complex types 6 and 9 are not supported).
enum class DataType : int {
  u8 = 1,
  i16 = 2,
  i32 = 3,
  f32 = 4,
  f64 = 5,
  u16 = 12,
  u32 = 13,
  i64 = 14,
  u64 = 15,
};

enum class Interleave : int { bsq, bil, bip };
enum class ByteOrder : int { little_endian = 0, big_endian = 1 };

inline constexpr DataType kAllDataTypes[] = {DataType::u8,  DataType::i16, DataType::i32,
                                             DataType::f32, DataType::f64, DataType::u16,
                                             DataType::u32, DataType::i64, DataType::u64};

size_t sample_size(DataType type);
// Short names as used in caps: "u8", "i16", "f32", ...
const char *data_type_name(DataType type);
const char *interleave_name(Interleave interleave);
bool is_valid_data_type_code(int code);

// One `key = value` entry as written (key lower-cased, whitespace collapsed;
// braces removed from list values), with the line it started on.
struct EnviField {
  std::string key;
  std::string value;
  int line = 0;
};

struct EnviHeader {
  std::string source;  // file name used in messages

  size_t samples = 0;
  size_t lines = 0;
  size_t bands = 0;
  size_t header_offset = 0;
  DataType data_type = DataType::u8;
  Interleave interleave = Interleave::bsq;
  ByteOrder byte_order = ByteOrder::little_endian;
  std::string file_type;  // "ENVI Standard", "ENVI Spectral Library", ...
  std::string description;

  std::vector<double> wavelength;  // in `wavelength_units`
  std::string wavelength_units;
  std::vector<double> fwhm;        // same units as wavelength
  std::vector<uint8_t> bbl;        // 1 = good band, 0 = bad; empty = all good
  std::optional<double> data_ignore_value;
  std::optional<double> reflectance_scale_factor;  // samples / factor = reflectance
  std::vector<std::string> spectra_names;
  std::vector<std::string> band_names;

  std::vector<EnviField> fields;  // every key, in file order

  const EnviField *find(const std::string &key) const;
  bool is_spectral_library() const;
  // Number of spectral channels: `bands`, or `samples` for a spectral library.
  size_t spectral_channels() const;
  size_t bytes_per_sample() const { return sample_size(data_type); }
  // Bytes of sample data (without the header offset).
  size_t data_bytes() const;
  // Wavelengths (and FWHM) converted to nanometres. Without `wavelength
  // units` the unit is guessed: values all below 100 are micrometres.
  // Throws EnviError for units that are not lengths (wavenumber, index).
  std::vector<double> wavelengths_nm() const;
  std::vector<double> fwhm_nm() const;
  // Band is used unless bbl marks it bad.
  bool band_is_good(size_t band) const { return bbl.empty() || bbl[band] != 0; }
};

// Parses header text. `source` names the file in error messages.
EnviHeader parse_envi_header(const std::string &text, const std::string &source);
// Throws EnviError saying why when `path` is no file to read (missing, a
// directory).
EnviHeader read_envi_header(const std::string &path);
// Why `path` is not a regular file ("does not exist", "is a directory", ...),
// "" when it is one.
std::string not_a_regular_file(const std::string &path);

// Nanometres per unit for ENVI `wavelength units` text; 0 when not a length.
double nanometres_per_unit(const std::string &units);

// The header and data file of an image, from either name: `x.hdr` pairs with
// `x`, `x.img`, `x.dat`, `x.raw`, `x.bsq`, `x.bil`, `x.bip` or `x.sli`;
// `x.img` pairs with `x.hdr` or `x.img.hdr`.
struct EnviFiles {
  std::string header;
  std::string data;
};
EnviFiles locate_envi_files(const std::string &path);

// Reads blocks of whole lines in the native sample format and byte order.
// A block of `count` lines keeps the file's interleave: BIP and BIL blocks are
// the lines as stored; a BSQ block holds, for each band, that band's plane of
// the `count` lines (band-major), so every block is a small cube of its own.
// Only the requested lines are read: cubes larger than memory work.
class EnviReader {
 public:
  // `path` is the header or the data file. Throws EnviError on a malformed
  // header or a data file shorter than the header says.
  explicit EnviReader(const std::string &path);
  ~EnviReader();
  EnviReader(const EnviReader &) = delete;
  EnviReader &operator=(const EnviReader &) = delete;

  const EnviHeader &header() const { return header_; }
  const std::string &data_path() const { return files_.data; }
  const std::string &header_path() const { return files_.header; }

  // Bytes of one line (all bands), the size of a block per line.
  size_t line_bytes() const;
  size_t block_bytes(size_t line_count) const { return line_count * line_bytes(); }

  // Reads lines [first_line, first_line + count) into `dst`, which must hold
  // block_bytes(count). Safe to call from several threads at once.
  void read_lines(size_t first_line, size_t count, void *dst) const;
  std::vector<uint8_t> read_lines(size_t first_line, size_t count) const;

  // Threads a large read is split over (pieces of at least kReadPiece
  // bytes; common/split_work.h). 0 = default_read_threads().
  void set_read_threads(int threads);
  int read_threads() const { return read_threads_; }
  static constexpr size_t kReadPiece = size_t(4) << 20;

 private:
  void read_exact(void *dst, size_t bytes, uint64_t offset) const;
  void read_range(unsigned char *dst, size_t bytes, uint64_t offset) const;

  EnviFiles files_;
  EnviHeader header_;
  int fd_ = -1;
  int read_threads_ = 1;
};

}  // namespace cs::hsi
