// Colours of class maps: ENVI's `class lookup` (r, g, b per class, class 0
// first) and a fixed palette of distinct colours for maps without one.
// GStreamer-free, shared by hsicolorize and envisink.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace hsi_palette {

struct Rgb {
  uint8_t r = 0, g = 0, b = 0;
  bool operator==(const Rgb &o) const { return r == o.r && g == o.g && b == o.b; }
};

// `classes` colours (class 0 included): class 0 black (unclassified / no
// data), then ENVI's first class colours (red, green, blue, yellow, cyan,
// magenta, ...), then hues stepped by the golden angle with alternating
// brightness, so neighbouring class numbers never look alike.
std::vector<Rgb> default_palette(size_t classes);

// Parses a `class lookup` value ("0, 0, 0, 255, 0, 0, ..."; braces already
// removed). Throws std::invalid_argument naming the problem.
std::vector<Rgb> parse_class_lookup(const std::string &value);

// The value of a `class lookup` key for `palette`, e.g. "{0, 0, 0, 255, 0, 0}".
std::string format_class_lookup(const std::vector<Rgb> &palette);

}  // namespace hsi_palette
