// Glue shared by the SAR elements: caps <-> stream description, the pulse
// meta <-> the kernels' PulseParameters. No sample arithmetic here.
#pragma once

#include <gst/cudasensing/sar/gstsarimagemeta.h>
#include <gst/cudasensing/sar/gstsarpulsemeta.h>

#include <string>
#include <vector>

#include "sar/pulse_compressor.h"
#include "sar/types.h"

namespace gstsar {

// Sample formats on the wire: complex float32 pairs, complex int16 pairs (host byte order).
enum class WireFormat { CF32, CI16 };
inline size_t wire_bytes_per_sample(WireFormat f) { return f == WireFormat::CF32 ? 8 : 4; }

// The static description of a phase-history stream (its caps).
//   format            "CF32" | "CI16"
//   samples-per-pulse int >= 1
//   domain            "time" (fast-time samples of a chirp, CPHD TOA) | "frequency" (CPHD FX)
//   center-frequency  Hz,  bandwidth  Hz,  phase-sign  -1 | +1 (CPHD SGN)
//   time:      sample-rate (Hz), chirp-rate (Hz/s), chirp-duration (s), sample-start (s, SC0)
//   frequency: frequency-step (Hz, SCSS)
struct PhaseHistoryFormat {
  WireFormat format = WireFormat::CF32;
  int64_t samples_per_pulse = 0;
  cs::sar::Domain domain = cs::sar::Domain::TOA;
  double center_frequency_hz = 0;
  double bandwidth_hz = 0;
  int phase_sign = -1;
  double sample_rate_hz = 0;
  double chirp_rate_hz_per_s = 0;
  double chirp_duration_s = 0;
  double sample_start_s = 0;
  double frequency_step_hz = 0;

  size_t bytes_per_pulse() const { return static_cast<size_t>(samples_per_pulse) * wire_bytes_per_sample(format); }
};

GstCaps *phase_history_caps(const PhaseHistoryFormat &f);
// Parses fixed caps; on failure returns false and says which field is missing or wrong.
bool parse_phase_history_caps(const GstCaps *caps, PhaseHistoryFormat *out, std::string *why);

// Range profiles (the output of pulse compression), always CF32:
//   bins-per-pulse, bin-spacing (m), first-bin-range (m, bin 0 relative to the
//   pulse's reference (SRP) range), upsample, center-frequency, bandwidth, domain (of the source)
struct RangeProfilesFormat {
  int64_t bins_per_pulse = 0;
  double bin_spacing_m = 0;
  double first_bin_range_m = 0;
  int upsample = 1;
  double center_frequency_hz = 0;
  double bandwidth_hz = 0;
  cs::sar::Domain source_domain = cs::sar::Domain::TOA;
  int phase_sign = -1;
};
GstCaps *range_profiles_caps(const RangeProfilesFormat &f);
bool parse_range_profiles_caps(const GstCaps *caps, RangeProfilesFormat *out, std::string *why);

// The pulse compression that made profiles of this format, as far as
// backprojection needs it (cs::sar::backprojection_pulse, profile_oversampling):
// domain, sizes, upsampling, the sample rate or frequency step recovered from
// the bin spacing, and a chirp of the stream's bandwidth.
cs::sar::PulseCompressionConfig compression_of(const RangeProfilesFormat &f);

// Formed images, application/x-sar-image: format=CF32, width, height (pixels).
struct SarImageFormat {
  int64_t width = 0, height = 0;
};
GstCaps *sar_image_caps(const SarImageFormat &f);
bool parse_sar_image_caps(const GstCaps *caps, SarImageFormat *out, std::string *why);

GstSarPulseParameters to_gst(const cs::sar::PulseParameters &p);
cs::sar::PulseParameters from_gst(const GstSarPulseParameters &p);
std::vector<cs::sar::PulseParameters> pulses_of(const GstSarPulseMeta *meta);

// A source's block of `count` pulses from `first`: their GstSarPulseMeta and,
// with `custom_meta`, the same as the GstCustomMeta bindings read. Throws
// when a meta cannot be added.
void attach_pulses(GstBuffer *block, guint64 first, const cs::sar::PulseParameters *pulses, guint count,
                   bool custom_meta);

// The sources' `custom-meta` property.
GParamSpec *pulse_custom_meta_param_spec(GParamFlags flags);

}  // namespace gstsar
