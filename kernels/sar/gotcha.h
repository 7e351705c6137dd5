// Conversion of the AFRL Gotcha volumetric SAR data set (MATLAB files, one
// struct `data` per file: fp, freq, x, y, z, r0, th, phi, af) into one CPHD
// 1.0 file in the FX domain.
//
// What the files hold and what the converter assumes:
// * fp (frequencies x pulses, complex single) is phase history already
//   deramped and motion-compensated to the scene centre; it is written as
//   is (CF8, bit-exact), SGN = -1.
// * freq is stored in single precision (1 kHz steps at 9.6 GHz); SC0 is the
//   first frequency and SCSS the mean step (last - first) / (K - 1).
// * x, y, z are antenna positions in a local frame centred on the scene,
//   z up; the files give no geodetic anchor, so the frame is placed at
//   `scene_origin` (east, north, up) to form the ECF positions CPHD needs.
//   The SRP is the scene centre; r0 matches |position - SRP|.
// * There are no pulse times: TxTime is the distance flown, pulse to pulse,
//   divided by `assumed_speed_m_s`; velocities follow from the positions and
//   those times. Stop-and-hop: RcvPos = TxPos, RcvTime = TxTime + 2 r0 / c.
// * The auto-focus corrections (af) are not applied.
#pragma once

#include <string>
#include <vector>

#include "sar/geodesy.h"

namespace cs::sar {

struct GotchaOptions {
  Llh scene_origin{0.0, 0.0, 0.0};
  double assumed_speed_m_s = 100.0;
  std::string core_name = "GOTCHA_PASS1_HH";
  std::string polarization = "H";  // both transmit and receive (the HH files)
};

struct GotchaSummary {
  int64_t pulses = 0;
  int64_t samples_per_pulse = 0;
  double first_frequency_hz = 0;
  double frequency_step_hz = 0;
};

// Converts the files, in the order given (azimuth order), into `cphd_path`.
GotchaSummary convert_gotcha_to_cphd(const std::vector<std::string> &mat_files, const std::string &cphd_path,
                                     const GotchaOptions &options = {});

}  // namespace cs::sar
