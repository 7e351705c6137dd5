#include "hsi-caps.h"

#include <cstring>
#include <optional>
#include <vector>

#include "hsi/text_parse.h"

using cs::hsi::ByteOrder;
using cs::hsi::DataType;
using cs::hsi::EnviError;
using cs::hsi::EnviHeader;
using cs::hsi::Interleave;

namespace hsi_caps {
namespace {

void set_double_array(GstStructure *s, const char *field, const std::vector<double> &values) {
  GValue array = G_VALUE_INIT;
  gst_value_array_init(&array, values.size());
  for (double v : values) {
    GValue item = G_VALUE_INIT;
    g_value_init(&item, G_TYPE_DOUBLE);
    g_value_set_double(&item, v);
    gst_value_array_append_and_take_value(&array, &item);
  }
  gst_structure_take_value(s, field, &array);
}

// Numbers of an array field (ints or doubles); false when absent or not numbers.
bool get_double_array(const GstStructure *s, const char *field, std::vector<double> *out) {
  const GValue *array = gst_structure_get_value(s, field);
  if (!array) return true;
  if (!GST_VALUE_HOLDS_ARRAY(array)) return false;
  const guint n = gst_value_array_get_size(array);
  out->resize(n);
  for (guint i = 0; i < n; ++i) {
    const GValue *v = gst_value_array_get_value(array, i);
    if (G_VALUE_HOLDS_DOUBLE(v))
      (*out)[i] = g_value_get_double(v);
    else if (G_VALUE_HOLDS_INT(v))
      (*out)[i] = g_value_get_int(v);
    else
      return false;
  }
  return true;
}

}  // namespace

GstCaps *caps_from_header(const EnviHeader &h, size_t block_lines, std::string *warning) {
  GstStructure *s = gst_structure_new(HSI_MEDIA_TYPE, "samples", G_TYPE_INT, int(h.samples), "bands", G_TYPE_INT,
                                      int(h.bands), "interleave", G_TYPE_STRING,
                                      cs::hsi::interleave_name(h.interleave), "format", G_TYPE_STRING,
                                      cs::hsi::data_type_name(h.data_type), "endianness", G_TYPE_INT,
                                      h.byte_order == ByteOrder::big_endian ? G_BIG_ENDIAN : G_LITTLE_ENDIAN,
                                      nullptr);
  try {
    const std::vector<double> nm = h.wavelengths_nm();
    if (!nm.empty()) set_double_array(s, "wavelengths", nm);
    const std::vector<double> fwhm = h.fwhm_nm();
    if (!fwhm.empty()) set_double_array(s, "fwhm", fwhm);
  } catch (const EnviError &e) {
    if (warning) *warning = std::string(e.what()) + "; the stream carries no wavelengths";
  }
  if (!h.bbl.empty()) {
    GValue array = G_VALUE_INIT;
    gst_value_array_init(&array, h.bbl.size());
    for (uint8_t b : h.bbl) {
      GValue item = G_VALUE_INIT;
      g_value_init(&item, G_TYPE_INT);
      g_value_set_int(&item, b ? 1 : 0);
      gst_value_array_append_and_take_value(&array, &item);
    }
    gst_structure_take_value(s, "bbl", &array);
  }
  if (h.data_ignore_value) gst_structure_set(s, "data-ignore-value", G_TYPE_DOUBLE, *h.data_ignore_value, nullptr);
  if (h.reflectance_scale_factor)
    gst_structure_set(s, "reflectance-scale-factor", G_TYPE_DOUBLE, *h.reflectance_scale_factor, nullptr);
  if (h.lines) gst_structure_set(s, "lines", G_TYPE_INT, int(h.lines), nullptr);
  if (block_lines) gst_structure_set(s, "block-lines", G_TYPE_INT, int(block_lines), nullptr);
  for (const GeoField &g : kGeoFields)
    if (const cs::hsi::EnviField *f = h.find(g.envi_key))
      gst_structure_set(s, g.caps_field, G_TYPE_STRING, f->value.c_str(), nullptr);
  return gst_caps_new_full(s, nullptr);
}

void copy_georeferencing(const GstStructure *from, GstStructure *to) {
  for (const GeoField &g : kGeoFields)
    if (const GValue *v = gst_structure_get_value(from, g.caps_field)) gst_structure_set_value(to, g.caps_field, v);
}

std::string map_info_from_line(const std::string &value, uint64_t first_line) {
  if (first_line == 0) return value;
  std::vector<std::string> items = cs::hsi::text::split(value, ',');
  if (items.size() < 3) return value;
  const std::optional<double> line = cs::hsi::text::parse_double(items[2]);
  if (!line) return value;
  char number[G_ASCII_DTOSTR_BUF_SIZE];
  items[2] = g_ascii_dtostr(number, sizeof number, *line - double(first_line));
  std::string out;
  for (const std::string &item : items) out += (out.empty() ? "" : ", ") + item;
  return out;
}

bool stream_from_caps(const GstCaps *caps, Stream *out, std::string *error) {
  auto fail = [&](const std::string &why) {
    *error = why;
    return false;
  };
  if (!caps || gst_caps_get_size(caps) != 1 || !gst_caps_is_fixed(caps)) return fail("caps are not fixed");
  const GstStructure *s = gst_caps_get_structure(caps, 0);
  if (!gst_structure_has_name(s, HSI_MEDIA_TYPE)) return fail("not " HSI_MEDIA_TYPE);
  Stream st;
  EnviHeader &h = st.header;
  h.source = "caps";
  int samples = 0, bands = 0, endianness = G_LITTLE_ENDIAN, lines = 0, block_lines = 0;
  if (!gst_structure_get_int(s, "samples", &samples) || samples <= 0) return fail("caps field 'samples' missing");
  if (!gst_structure_get_int(s, "bands", &bands) || bands <= 0) return fail("caps field 'bands' missing");
  h.samples = size_t(samples);
  h.bands = size_t(bands);
  const char *interleave = gst_structure_get_string(s, "interleave");
  if (!interleave) return fail("caps field 'interleave' missing");
  if (!std::strcmp(interleave, "bsq"))
    h.interleave = Interleave::bsq;
  else if (!std::strcmp(interleave, "bil"))
    h.interleave = Interleave::bil;
  else if (!std::strcmp(interleave, "bip"))
    h.interleave = Interleave::bip;
  else
    return fail(std::string("caps field 'interleave' = '") + interleave + "' (bsq, bil or bip)");
  const char *format = gst_structure_get_string(s, "format");
  bool known = false;
  for (DataType t : cs::hsi::kAllDataTypes)
    if (format && !std::strcmp(format, cs::hsi::data_type_name(t))) {
      h.data_type = t;
      known = true;
    }
  if (!known) return fail(std::string("caps field 'format' = '") + (format ? format : "(none)") + "' is not a sample format");
  gst_structure_get_int(s, "endianness", &endianness);
  h.byte_order = endianness == G_BIG_ENDIAN ? ByteOrder::big_endian : ByteOrder::little_endian;
  if (!get_double_array(s, "wavelengths", &h.wavelength)) return fail("caps field 'wavelengths' is not a number array");
  if (!get_double_array(s, "fwhm", &h.fwhm)) return fail("caps field 'fwhm' is not a number array");
  if (!h.wavelength.empty()) {
    h.wavelength_units = "Nanometers";
    if (h.wavelength.size() != h.bands)
      return fail("caps field 'wavelengths' has " + std::to_string(h.wavelength.size()) + " values for " +
                  std::to_string(h.bands) + " bands");
  }
  if (!h.fwhm.empty() && h.fwhm.size() != h.bands)
    return fail("caps field 'fwhm' has " + std::to_string(h.fwhm.size()) + " values for " + std::to_string(h.bands) +
                " bands");
  std::vector<double> bbl;
  if (!get_double_array(s, "bbl", &bbl)) return fail("caps field 'bbl' is not a number array");
  if (!bbl.empty() && bbl.size() != h.bands)
    return fail("caps field 'bbl' has " + std::to_string(bbl.size()) + " values for " + std::to_string(h.bands) +
                " bands");
  for (double b : bbl) h.bbl.push_back(b != 0 ? 1 : 0);
  double v = 0;
  if (gst_structure_get_double(s, "data-ignore-value", &v)) h.data_ignore_value = v;
  if (gst_structure_get_double(s, "reflectance-scale-factor", &v)) h.reflectance_scale_factor = v;
  if (gst_structure_get_int(s, "lines", &lines) && lines > 0) h.lines = size_t(lines);
  if (gst_structure_get_int(s, "block-lines", &block_lines) && block_lines > 0) st.block_lines = size_t(block_lines);
  *out = std::move(st);
  return true;
}

}  // namespace hsi_caps
