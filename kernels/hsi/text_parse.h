// Small, locale-independent text helpers shared by the ENVI header and CSV
// parsers (strtod would follow LC_NUMERIC, which an application may change).
#pragma once

#include <charconv>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cs::hsi::text {

inline bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f' || c == '\v'; }

inline std::string_view trim(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

inline std::string lower(std::string_view s) {
  std::string out(s);
  for (char &c : out)
    if (c >= 'A' && c <= 'Z') c = char(c - 'A' + 'a');
  return out;
}

// Lower case with runs of whitespace collapsed to one space: "Data  Type" -> "data type".
inline std::string normalise_key(std::string_view s) {
  std::string out;
  for (char c : trim(s)) {
    if (is_space(c)) {
      if (!out.empty() && out.back() != ' ') out += ' ';
    } else {
      out += (c >= 'A' && c <= 'Z') ? char(c - 'A' + 'a') : c;
    }
  }
  return out;
}

// A whole-string real number ("1.5", "-1.23e+034", "+2", "nan", "inf").
inline std::optional<double> parse_double(std::string_view s) {
  s = trim(s);
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  if (s.empty()) return std::nullopt;
  double v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

// A whole-string integer ("12", "-3", "+7").
inline std::optional<int64_t> parse_int(std::string_view s) {
  s = trim(s);
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  if (s.empty()) return std::nullopt;
  int64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

// Splits on `sep`, trimming each item. An empty string gives no items.
inline std::vector<std::string> split(std::string_view s, char sep) {
  std::vector<std::string> items;
  if (trim(s).empty()) return items;
  size_t start = 0;
  while (true) {
    size_t pos = s.find(sep, start);
    items.emplace_back(trim(s.substr(start, pos == std::string_view::npos ? std::string_view::npos : pos - start)));
    if (pos == std::string_view::npos) break;
    start = pos + 1;
  }
  return items;
}

}  // namespace cs::hsi::text
