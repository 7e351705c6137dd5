// gotcha-to-cphd: converts AFRL Gotcha MATLAB files into one CPHD 1.0 file
// (FX domain). See kernels/sar/gotcha.h for what is assumed.
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

#include "sar/gotcha.h"

namespace {

void usage(const char *argv0) {
  std::fprintf(stderr,
               "usage: %s [--origin LAT,LON,HAE] [--speed M_PER_S] OUTPUT.cphd INPUT.mat...\n"
               "  Converts Gotcha phase-history files (struct 'data': fp, freq, x, y, z, r0), in the\n"
               "  order given, into one CPHD 1.0 file in the FX domain.\n"
               "  --origin  geodetic place of the files' local scene frame (x east, y north, z up);\n"
               "            the files give none (default 0,0,0)\n"
               "  --speed   platform speed used to turn the distance flown into pulse times, m/s\n"
               "            (the files hold no times; default 100)\n",
               argv0);
}

// `text` as a whole number (no trailing characters), or false.
bool parse_number(const std::string &text, double &value) {
  char *end = nullptr;
  value = std::strtod(text.c_str(), &end);
  return !text.empty() && end == text.c_str() + text.size();
}

// "LAT,LON,HAE", each a whole number, or false.
bool parse_origin(const std::string &text, cs::sar::Llh &origin) {
  const size_t a = text.find(','), b = a == std::string::npos ? a : text.find(',', a + 1);
  return b != std::string::npos && parse_number(text.substr(0, a), origin.lat_deg) &&
         parse_number(text.substr(a + 1, b - a - 1), origin.lon_deg) && parse_number(text.substr(b + 1), origin.hae_m);
}

}  // namespace

int main(int argc, char **argv) {
  cs::sar::GotchaOptions options;
  std::vector<std::string> positional;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if ((arg == "--origin" || arg == "--speed") && i + 1 < argc) {
      const std::string value = argv[++i];
      const bool parsed = arg == "--speed" ? parse_number(value, options.assumed_speed_m_s)
                                           : parse_origin(value, options.scene_origin);
      if (!parsed) {
        std::fprintf(stderr, "gotcha-to-cphd: %s '%s' is not %s\n", arg.c_str(), value.c_str(),
                     arg == "--speed" ? "a number" : "three numbers LAT,LON,HAE");
        usage(argv[0]);
        return 2;
      }
    } else if (arg == "-h" || arg == "--help") {
      usage(argv[0]);
      return 0;
    } else {
      positional.push_back(arg);
    }
  }
  if (positional.size() < 2) {
    usage(argv[0]);
    return 2;
  }
  try {
    const std::vector<std::string> inputs(positional.begin() + 1, positional.end());
    const cs::sar::GotchaSummary s = cs::sar::convert_gotcha_to_cphd(inputs, positional[0], options);
    std::printf("%s: %lld pulses x %lld frequencies, %.6f GHz + n x %.3f kHz\n", positional[0].c_str(),
                static_cast<long long>(s.pulses), static_cast<long long>(s.samples_per_pulse),
                s.first_frequency_hz / 1e9, s.frequency_step_hz / 1e3);
    return 0;
  } catch (const std::exception &e) {
    std::fprintf(stderr, "gotcha-to-cphd: %s\n", e.what());
    return 1;
  }
}
