// application/x-hyperspectral: the caps fields of a stream of line blocks,
// to and from the ENVI header that describes the same samples.
//
//   samples                  int     pixels per line
//   bands                    int     spectral bands
//   interleave               string  bsq | bil | bip (a BSQ block keeps band planes)
//   format                   string  u8 i16 u16 i32 u32 i64 u64 f32 f64
//   endianness               int     1234 (little) or 4321 (big), as stored
//   wavelengths              array   band centres in nanometres (optional)
//   fwhm                     array   band widths in nanometres (optional)
//   bbl                      array   1 = good band, 0 = bad (optional)
//   data-ignore-value        double  samples meaning "no data" (optional)
//   reflectance-scale-factor double  stored value / factor = reflectance (optional)
//   lines                    int     lines in the scene (absent for endless streams)
//   block-lines              int     lines per buffer (the last may hold fewer)
//   map-info                 string  ENVI `map info`, the scene's georeferencing (optional)
//   projection-info          string  ENVI `projection info` (optional)
//   coordinate-system-string string  ENVI `coordinate system string`, WKT (optional)
// The three georeferencing fields also travel on hsiclassify's class maps and
// rule images, so that envisink's files lie where the scene lies in ENVI, QGIS
// and GDAL.
#pragma once

#include <gst/gst.h>

#include <cstdint>
#include <string>

#include "hsi/envi.h"

#define HSI_MEDIA_TYPE "application/x-hyperspectral"
#define HSI_CAPS_TEMPLATE                                                                   \
  HSI_MEDIA_TYPE ", samples = (int) [ 1, MAX ], bands = (int) [ 1, MAX ], "                  \
                 "interleave = (string) { bsq, bil, bip }, "                                 \
                 "format = (string) { u8, i16, u16, i32, u32, i64, u64, f32, f64 }, "        \
                 "endianness = (int) { 1234, 4321 }"

namespace hsi_caps {

// A stream's description: an EnviHeader with the fields the caps carry
// (wavelengths in nanometres), plus the block size.
struct Stream {
  cs::hsi::EnviHeader header;  // header.lines = scene lines, 0 when unknown
  size_t block_lines = 0;      // 0 when unknown
  size_t line_bytes() const { return header.samples * header.bands * header.bytes_per_sample(); }
};

// Caps for `header`'s samples in blocks of `block_lines` lines. Wavelengths
// whose unit is not a length are left out (`warning` says so).
GstCaps *caps_from_header(const cs::hsi::EnviHeader &header, size_t block_lines, std::string *warning);

// The stream fixed caps describe; false with `error` set when they do not.
bool stream_from_caps(const GstCaps *caps, Stream *stream, std::string *error);

// An ENVI georeferencing key and the caps field that carries it.
struct GeoField {
  const char *envi_key, *caps_field;
};
inline constexpr GeoField kGeoFields[] = {{"map info", "map-info"},
                                          {"projection info", "projection-info"},
                                          {"coordinate system string", "coordinate-system-string"}};

// Copies the georeferencing fields of `from` into `to` (the class map of a
// scene lies on the scene's grid).
void copy_georeferencing(const GstStructure *from, GstStructure *to);

// `map info` (its value, without braces) for an image whose first line is
// line `first_line` of the scene: the reference pixel's line (the third
// item, 1-based) less first_line, which holds with any rotation. The value
// as it is when first_line is 0 or the item is not a number.
std::string map_info_from_line(const std::string &value, uint64_t first_line);

}  // namespace hsi_caps
