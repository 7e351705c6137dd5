// ENVI header parsing: `key = value` lines, `{ ... }` values that may span
// lines, `;` comment lines. Every problem names the file, the key and the line.
#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <sstream>

#include "hsi/envi.h"
#include "hsi/text_parse.h"

namespace cs::hsi {

size_t sample_size(DataType type) {
  switch (type) {
    case DataType::u8: return 1;
    case DataType::i16:
    case DataType::u16: return 2;
    case DataType::i32:
    case DataType::u32:
    case DataType::f32: return 4;
    case DataType::f64:
    case DataType::i64:
    case DataType::u64: return 8;
  }
  return 0;
}

const char *data_type_name(DataType type) {
  switch (type) {
    case DataType::u8: return "u8";
    case DataType::i16: return "i16";
    case DataType::i32: return "i32";
    case DataType::f32: return "f32";
    case DataType::f64: return "f64";
    case DataType::u16: return "u16";
    case DataType::u32: return "u32";
    case DataType::i64: return "i64";
    case DataType::u64: return "u64";
  }
  return "?";
}

const char *interleave_name(Interleave interleave) {
  switch (interleave) {
    case Interleave::bsq: return "bsq";
    case Interleave::bil: return "bil";
    case Interleave::bip: return "bip";
  }
  return "?";
}

bool is_valid_data_type_code(int code) {
  for (DataType t : kAllDataTypes)
    if (int(t) == code) return true;
  return false;
}

const EnviField *EnviHeader::find(const std::string &key) const {
  for (const EnviField &f : fields)
    if (f.key == key) return &f;
  return nullptr;
}

bool EnviHeader::is_spectral_library() const {
  return text::normalise_key(file_type) == "envi spectral library";
}

size_t EnviHeader::spectral_channels() const { return is_spectral_library() ? samples : bands; }

size_t EnviHeader::data_bytes() const { return samples * lines * bands * sample_size(data_type); }

double nanometres_per_unit(const std::string &units) {
  const std::string u = text::normalise_key(units);
  if (u == "nanometers" || u == "nanometres" || u == "nanometer" || u == "nanometre" || u == "nm") return 1.0;
  if (u == "micrometers" || u == "micrometres" || u == "micrometer" || u == "micrometre" || u == "microns" ||
      u == "micron" || u == "um" || u == "\xc2\xb5m")
    return 1e3;
  if (u == "millimeters" || u == "millimetres" || u == "mm") return 1e6;
  if (u == "centimeters" || u == "centimetres" || u == "cm") return 1e7;
  if (u == "meters" || u == "metres" || u == "m") return 1e9;
  return 0.0;
}

namespace {

std::vector<double> to_nanometres(const EnviHeader &h, const std::vector<double> &values, const char *what) {
  if (values.empty()) return {};
  double scale = 0;
  const std::string units = text::normalise_key(h.wavelength_units);
  if (units.empty() || units == "unknown") {
    // No unit given: spectrometer wavelengths below 100 can only be micrometres.
    const std::vector<double> &centres = h.wavelength.empty() ? values : h.wavelength;
    const double largest = *std::max_element(centres.begin(), centres.end());
    scale = largest < 100.0 ? 1e3 : 1.0;
  } else {
    scale = nanometres_per_unit(units);
    if (scale == 0) {
      const EnviField *f = h.find("wavelength units");
      throw EnviError(h.source + " line " + std::to_string(f ? f->line : 0) + ": key 'wavelength units': '" +
                      h.wavelength_units + "' is not a length unit, so the " + what +
                      " values cannot be compared with other spectra");
    }
  }
  std::vector<double> out(values.size());
  for (size_t i = 0; i < values.size(); ++i) out[i] = values[i] * scale;
  return out;
}

}  // namespace

std::vector<double> EnviHeader::wavelengths_nm() const { return to_nanometres(*this, wavelength, "wavelength"); }
std::vector<double> EnviHeader::fwhm_nm() const { return to_nanometres(*this, fwhm, "fwhm"); }

namespace {

class HeaderParser {
 public:
  HeaderParser(const std::string &text, const std::string &source) : text_(text), source_(source) {}

  EnviHeader parse() {
    header_.source = source_;
    split_fields();
    interpret();
    return std::move(header_);
  }

 private:
  [[noreturn]] void fail_at(int line, const std::string &key, const std::string &message) const {
    std::string where = source_ + " line " + std::to_string(line);
    if (!key.empty()) where += ": key '" + key + "'";
    throw EnviError(where + ": " + message);
  }

  [[noreturn]] void fail(const EnviField &f, const std::string &message) const { fail_at(f.line, f.key, message); }

  // Pass 1: text -> fields.
  void split_fields() {
    std::vector<std::string> lines;
    {
      std::istringstream in(text_);
      std::string line;
      while (std::getline(in, line)) lines.push_back(line);
    }
    size_t i = 0;
    while (i < lines.size() && text::trim(lines[i]).empty()) ++i;
    std::string_view first = i < lines.size() ? text::trim(lines[i]) : std::string_view();
    if (first.substr(0, 3) == "\xef\xbb\xbf") first.remove_prefix(3);  // UTF-8 byte order mark
    if (first != "ENVI")
      fail_at(int(i + 1), "", "not an ENVI header: the first line must be 'ENVI', found '" +
                                  std::string(first.substr(0, 40)) + "'");
    for (++i; i < lines.size(); ++i) {
      const std::string_view line = text::trim(lines[i]);
      const int line_number = int(i + 1);
      if (line.empty() || line.front() == ';') continue;
      const size_t eq = line.find('=');
      if (eq == std::string_view::npos)
        fail_at(line_number, "", "expected 'key = value', found '" + std::string(line.substr(0, 60)) + "'");
      EnviField field;
      field.key = text::normalise_key(line.substr(0, eq));
      field.line = line_number;
      if (field.key.empty()) fail_at(line_number, "", "'=' with no key before it");
      std::string value(text::trim(line.substr(eq + 1)));
      if (!value.empty() && value.front() == '{') {
        // A braced value runs to the first '}', possibly lines later.
        std::string content = value.substr(1);
        size_t close = content.find('}');
        while (close == std::string::npos) {
          if (++i >= lines.size())
            fail(field, "'{' opened here is never closed by '}' (the header ends first)");
          content += '\n';
          content += lines[i];
          close = content.find('}');
        }
        const std::string_view after = text::trim(std::string_view(content).substr(close + 1));
        if (!after.empty())
          fail(field, "unexpected text '" + std::string(after.substr(0, 40)) + "' after the closing '}'");
        value = std::string(text::trim(std::string_view(content).substr(0, close)));
      } else if (value.find('}') != std::string::npos) {
        fail(field, "'}' without an opening '{'");
      }
      field.value = std::move(value);
      header_.fields.push_back(std::move(field));
    }
  }

  // Pass 2: fields -> typed header.
  const EnviField *unique(const std::string &key) {
    const EnviField *found = nullptr;
    for (const EnviField &f : header_.fields) {
      if (f.key != key) continue;
      if (found)
        fail(f, "appears twice (first at line " + std::to_string(found->line) + ")");
      found = &f;
    }
    return found;
  }

  size_t positive_size(const EnviField &f, const char *what) {
    const auto v = text::parse_int(f.value);
    if (!v) fail(f, "'" + f.value + "' is not a whole number");
    if (*v <= 0) fail(f, "must be at least 1 " + std::string(what) + ", found " + f.value);
    if (*v > (int64_t(1) << 40)) fail(f, f.value + " is not a plausible " + what + " count");
    return size_t(*v);
  }

  std::vector<double> numbers(const EnviField &f) {
    std::vector<double> out;
    const std::vector<std::string> items = text::split(f.value, ',');
    out.reserve(items.size());
    for (size_t k = 0; k < items.size(); ++k) {
      const auto v = text::parse_double(items[k]);
      if (!v) fail(f, "item " + std::to_string(k + 1) + " ('" + items[k].substr(0, 30) + "') is not a number");
      out.push_back(*v);
    }
    return out;
  }

  void check_count(const EnviField &f, size_t count, size_t expected, const char *what) {
    if (count != expected)
      fail(f, "has " + std::to_string(count) + " values but the header has " + std::to_string(expected) + " " + what);
  }

  void interpret() {
    EnviHeader &h = header_;
    // Refuse repeats of any key whose value changes how the file is read.
    for (const char *key : {"samples", "lines", "bands", "header offset", "data type", "interleave", "byte order",
                            "file type", "wavelength", "wavelength units", "fwhm", "bbl", "data ignore value",
                            "reflectance scale factor", "spectra names", "band names"})
      unique(key);

    const EnviField *samples = header_.find("samples"), *lines = header_.find("lines"),
                    *bands = header_.find("bands"), *type = header_.find("data type");
    const std::pair<const EnviField *, const char *> required[] = {
        {samples, "samples"}, {lines, "lines"}, {bands, "bands"}, {type, "data type"}};
    for (const auto &[field, key] : required)
      if (!field) throw EnviError(source_ + ": required key '" + key + "' is missing");
    h.samples = positive_size(*samples, "sample");
    h.lines = positive_size(*lines, "line");
    h.bands = positive_size(*bands, "band");

    const auto code = text::parse_int(type->value);
    if (!code) fail(*type, "'" + type->value + "' is not a whole number");
    if (*code == 6 || *code == 9) fail(*type, "complex data (type " + type->value + ") is not supported");
    if (!is_valid_data_type_code(int(*code)))
      fail(*type, "'" + type->value + "' is not an ENVI data type (1, 2, 3, 4, 5, 12, 13, 14 or 15)");
    h.data_type = DataType(int(*code));

    if (const EnviField *f = header_.find("file type")) h.file_type = f->value;
    if (const EnviField *f = header_.find("description")) h.description = f->value;

    if (const EnviField *f = header_.find("header offset")) {
      const auto v = text::parse_int(f->value);
      if (!v || *v < 0) fail(*f, "'" + f->value + "' is not a byte count (a whole number, 0 or more)");
      h.header_offset = size_t(*v);
    }

    // The byte order matters only for samples wider than a byte, the
    // interleave only with several bands: required exactly when they matter.
    if (const EnviField *f = header_.find("byte order")) {
      if (f->value == "0")
        h.byte_order = ByteOrder::little_endian;
      else if (f->value == "1")
        h.byte_order = ByteOrder::big_endian;
      else
        fail(*f, "'" + f->value + "' is not 0 (little endian) or 1 (big endian)");
    } else if (sample_size(h.data_type) > 1) {
      throw EnviError(source_ + ": required key 'byte order' is missing (data type " + type->value +
                      " has multi-byte samples)");
    }
    if (const EnviField *f = header_.find("interleave")) {
      const std::string v = text::lower(f->value);
      if (v == "bsq")
        h.interleave = Interleave::bsq;
      else if (v == "bil")
        h.interleave = Interleave::bil;
      else if (v == "bip")
        h.interleave = Interleave::bip;
      else
        fail(*f, "'" + f->value + "' is not bsq, bil or bip");
    } else if (h.bands > 1) {
      throw EnviError(source_ + ": required key 'interleave' is missing (the file has " + std::to_string(h.bands) +
                      " bands)");
    }

    // Sizes must not overflow 64-bit byte offsets.
    const long double total = (long double)h.samples * h.lines * h.bands * sample_size(h.data_type);
    if (total > (long double)(uint64_t(1) << 62))
      fail(*samples, "samples x lines x bands x " + std::to_string(sample_size(h.data_type)) +
                         " bytes is not a plausible file size");

    const size_t channels = h.spectral_channels();
    const char *channel_word = h.is_spectral_library() ? "samples (spectral library channels)" : "bands";
    if (const EnviField *f = header_.find("wavelength")) {
      h.wavelength = numbers(*f);
      check_count(*f, h.wavelength.size(), channels, channel_word);
      for (size_t k = 0; k < h.wavelength.size(); ++k)
        if (!std::isfinite(h.wavelength[k])) fail(*f, "item " + std::to_string(k + 1) + " is not finite");
    }
    if (const EnviField *f = header_.find("wavelength units")) h.wavelength_units = f->value;
    if (const EnviField *f = header_.find("fwhm")) {
      h.fwhm = numbers(*f);
      check_count(*f, h.fwhm.size(), channels, channel_word);
      for (size_t k = 0; k < h.fwhm.size(); ++k)
        if (!(h.fwhm[k] > 0) || !std::isfinite(h.fwhm[k]))
          fail(*f, "item " + std::to_string(k + 1) + " must be a positive width");
    }
    if (const EnviField *f = header_.find("bbl")) {
      const std::vector<double> v = numbers(*f);
      check_count(*f, v.size(), channels, channel_word);
      h.bbl.resize(v.size());
      for (size_t k = 0; k < v.size(); ++k) {
        if (v[k] != 0.0 && v[k] != 1.0)
          fail(*f, "item " + std::to_string(k + 1) + " is " + std::to_string(v[k]) + "; bad band list entries are 0 or 1");
        h.bbl[k] = v[k] != 0.0;
      }
    }
    if (const EnviField *f = header_.find("data ignore value")) {
      const auto v = text::parse_double(f->value);
      if (!v) fail(*f, "'" + f->value + "' is not a number");
      h.data_ignore_value = *v;
    }
    if (const EnviField *f = header_.find("reflectance scale factor")) {
      const auto v = text::parse_double(f->value);
      if (!v || !std::isfinite(*v) || *v == 0.0)
        fail(*f, "'" + f->value + "' is not a usable scale (a finite, non-zero number)");
      h.reflectance_scale_factor = *v;
    }
    if (const EnviField *f = header_.find("spectra names")) {
      h.spectra_names = text::split(f->value, ',');
      if (h.is_spectral_library()) check_count(*f, h.spectra_names.size(), h.lines, "lines (spectra)");
    }
    if (const EnviField *f = header_.find("band names")) {
      h.band_names = text::split(f->value, ',');
      check_count(*f, h.band_names.size(), channels, channel_word);
    }
  }

  const std::string &text_;
  std::string source_;
  EnviHeader header_;
};

}  // namespace

EnviHeader parse_envi_header(const std::string &text, const std::string &source) {
  return HeaderParser(text, source).parse();
}

EnviHeader read_envi_header(const std::string &path) {
  // A directory opens as a stream of "LLONG_MAX bytes"; say what it is instead.
  if (const std::string why = not_a_regular_file(path); !why.empty())
    throw EnviError(path + ": the header file " + why);
  std::ifstream in(path, std::ios::binary);
  if (!in) throw EnviError(path + ": cannot open the header file");
  in.seekg(0, std::ios::end);
  const std::streamoff size = in.tellg();
  // Real headers are kilobytes (a few hundred KiB with long name lists).
  if (size > (std::streamoff(64) << 20)) throw EnviError(path + ": " + std::to_string(size) + " bytes is too large for an ENVI header");
  in.seekg(0);
  std::string text(size_t(std::max<std::streamoff>(size, 0)), '\0');
  in.read(text.data(), std::streamsize(text.size()));
  if (!in) throw EnviError(path + ": cannot read the header file");
  return parse_envi_header(text, path);
}

}  // namespace cs::hsi
