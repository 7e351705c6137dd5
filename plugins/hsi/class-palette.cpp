#include "class-palette.h"

#include <cmath>
#include <sstream>
#include <stdexcept>

namespace hsi_palette {
namespace {

// ENVI's default colours of the first classes (after black for class 0).
constexpr Rgb kFirstColours[] = {
    {255, 0, 0},   {0, 255, 0},     {0, 0, 255},     {255, 255, 0},   {0, 255, 255}, {255, 0, 255},
    {176, 48, 96}, {46, 139, 87},   {160, 32, 240},  {255, 127, 80},  {127, 255, 212}, {218, 112, 214},
    {160, 82, 45}, {127, 255, 0},   {216, 191, 216}, {238, 0, 0},     {205, 0, 0},   {139, 0, 0},
};

Rgb from_hsv(double h, double s, double v) {
  const double c = v * s, hp = h * 6.0, x = c * (1 - std::fabs(std::fmod(hp, 2.0) - 1));
  double r = 0, g = 0, b = 0;
  if (hp < 1) r = c, g = x;
  else if (hp < 2) r = x, g = c;
  else if (hp < 3) g = c, b = x;
  else if (hp < 4) g = x, b = c;
  else if (hp < 5) r = x, b = c;
  else r = c, b = x;
  const double m = v - c;
  auto byte = [](double f) { return uint8_t(std::lround(std::fmin(1.0, std::fmax(0.0, f)) * 255.0)); };
  return {byte(r + m), byte(g + m), byte(b + m)};
}

}  // namespace

std::vector<Rgb> default_palette(size_t classes) {
  std::vector<Rgb> p;
  p.reserve(classes);
  if (classes > 0) p.push_back({0, 0, 0});
  constexpr size_t first = sizeof kFirstColours / sizeof kFirstColours[0];
  for (size_t k = 1; k < classes; ++k) {
    if (k - 1 < first) {
      p.push_back(kFirstColours[k - 1]);
      continue;
    }
    const size_t i = k - 1 - first;
    const double hue = std::fmod(0.05 + double(i) * 0.6180339887498949, 1.0);
    const double saturation = i % 3 == 2 ? 0.55 : 0.9;
    const double value = i % 2 ? 0.7 : 1.0;
    p.push_back(from_hsv(hue, saturation, value));
  }
  return p;
}

std::vector<Rgb> parse_class_lookup(const std::string &value) {
  std::vector<int> numbers;
  std::stringstream in(value);
  std::string item;
  while (std::getline(in, item, ',')) {
    const size_t b = item.find_first_not_of(" \t\r\n{}");
    if (b == std::string::npos) continue;
    const std::string t = item.substr(b, item.find_last_not_of(" \t\r\n{}") - b + 1);
    size_t used = 0;
    int v = 0;
    try {
      v = std::stoi(t, &used);
    } catch (const std::exception &) {
      used = 0;
    }
    if (used != t.size() || v < 0 || v > 255)
      throw std::invalid_argument("class lookup value '" + t + "' is not a colour component 0..255");
    numbers.push_back(v);
  }
  if (numbers.empty() || numbers.size() % 3 != 0)
    throw std::invalid_argument("class lookup holds " + std::to_string(numbers.size()) +
                                " values, not r, g, b triples");
  std::vector<Rgb> p(numbers.size() / 3);
  for (size_t i = 0; i < p.size(); ++i)
    p[i] = {uint8_t(numbers[3 * i]), uint8_t(numbers[3 * i + 1]), uint8_t(numbers[3 * i + 2])};
  return p;
}

std::string format_class_lookup(const std::vector<Rgb> &palette) {
  std::string s = "{";
  for (size_t i = 0; i < palette.size(); ++i) {
    s += (i ? ", " : "") + std::to_string(palette[i].r) + ", " + std::to_string(palette[i].g) + ", " +
         std::to_string(palette[i].b);
  }
  return s + "}";
}

}  // namespace hsi_palette
