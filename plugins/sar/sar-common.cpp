#include "sar-common.h"

#include <cmath>
#include <cstring>
#include <stdexcept>

namespace gstsar {

using cs::sar::Domain;

GstCaps *phase_history_caps(const PhaseHistoryFormat &f) {
  GstCaps *caps = gst_caps_new_simple(
      GST_SAR_PHASE_HISTORY_MEDIA_TYPE, "format", G_TYPE_STRING, f.format == WireFormat::CF32 ? "CF32" : "CI16",
      "samples-per-pulse", G_TYPE_INT, static_cast<int>(f.samples_per_pulse), "domain", G_TYPE_STRING,
      f.domain == Domain::TOA ? "time" : "frequency", "center-frequency", G_TYPE_DOUBLE, f.center_frequency_hz,
      "bandwidth", G_TYPE_DOUBLE, f.bandwidth_hz, "phase-sign", G_TYPE_INT, f.phase_sign, nullptr);
  if (f.domain == Domain::TOA)
    gst_caps_set_simple(caps, "sample-rate", G_TYPE_DOUBLE, f.sample_rate_hz, "chirp-rate", G_TYPE_DOUBLE,
                        f.chirp_rate_hz_per_s, "chirp-duration", G_TYPE_DOUBLE, f.chirp_duration_s, "sample-start",
                        G_TYPE_DOUBLE, f.sample_start_s, nullptr);
  else
    gst_caps_set_simple(caps, "frequency-step", G_TYPE_DOUBLE, f.frequency_step_hz, nullptr);
  return caps;
}

namespace {
bool get_double(const GstStructure *s, const char *field, double *out, std::string *why) {
  if (!gst_structure_get_double(s, field, out) || !std::isfinite(*out)) {
    *why = std::string("caps field '") + field + "' (a finite double) is missing";
    return false;
  }
  return true;
}
bool get_positive(const GstStructure *s, const char *field, double *out, std::string *why) {
  if (!get_double(s, field, out, why)) return false;
  if (*out <= 0) {
    *why = std::string("caps field '") + field + "' must be > 0";
    return false;
  }
  return true;
}
}  // namespace

bool parse_phase_history_caps(const GstCaps *caps, PhaseHistoryFormat *out, std::string *why) {
  if (!caps || gst_caps_get_size(caps) != 1) {
    *why = "caps are empty or not fixed";
    return false;
  }
  const GstStructure *s = gst_caps_get_structure(caps, 0);
  if (!gst_structure_has_name(s, GST_SAR_PHASE_HISTORY_MEDIA_TYPE)) {
    *why = std::string("media type is ") + gst_structure_get_name(s) + ", not " GST_SAR_PHASE_HISTORY_MEDIA_TYPE;
    return false;
  }
  PhaseHistoryFormat f;
  const char *format = gst_structure_get_string(s, "format");
  if (format && std::strcmp(format, "CF32") == 0) {
    f.format = WireFormat::CF32;
  } else if (format && std::strcmp(format, "CI16") == 0) {
    f.format = WireFormat::CI16;
  } else {
    *why = "caps field 'format' must be CF32 or CI16";
    return false;
  }
  int samples = 0;
  if (!gst_structure_get_int(s, "samples-per-pulse", &samples) || samples < 1) {
    *why = "caps field 'samples-per-pulse' (an int >= 1) is missing";
    return false;
  }
  f.samples_per_pulse = samples;
  const char *domain = gst_structure_get_string(s, "domain");
  if (domain && std::strcmp(domain, "time") == 0) {
    f.domain = Domain::TOA;
  } else if (domain && std::strcmp(domain, "frequency") == 0) {
    f.domain = Domain::FX;
  } else {
    *why = "caps field 'domain' must be time or frequency";
    return false;
  }
  if (!get_positive(s, "center-frequency", &f.center_frequency_hz, why)) return false;
  if (!get_positive(s, "bandwidth", &f.bandwidth_hz, why)) return false;
  if (!gst_structure_get_int(s, "phase-sign", &f.phase_sign)) f.phase_sign = -1;
  if (f.phase_sign != 1 && f.phase_sign != -1) {
    *why = "caps field 'phase-sign' must be -1 or +1";
    return false;
  }
  if (f.domain == Domain::TOA) {
    if (!get_positive(s, "sample-rate", &f.sample_rate_hz, why)) return false;
    if (!get_double(s, "chirp-rate", &f.chirp_rate_hz_per_s, why)) return false;
    if (!get_double(s, "chirp-duration", &f.chirp_duration_s, why)) return false;
    if (!get_double(s, "sample-start", &f.sample_start_s, why)) return false;
  } else {
    if (!get_positive(s, "frequency-step", &f.frequency_step_hz, why)) return false;
  }
  *out = f;
  return true;
}

GstCaps *range_profiles_caps(const RangeProfilesFormat &f) {
  return gst_caps_new_simple(GST_SAR_RANGE_PROFILES_MEDIA_TYPE, "format", G_TYPE_STRING, "CF32", "bins-per-pulse",
                             G_TYPE_INT, static_cast<int>(f.bins_per_pulse), "bin-spacing", G_TYPE_DOUBLE,
                             f.bin_spacing_m, "first-bin-range", G_TYPE_DOUBLE, f.first_bin_range_m, "upsample",
                             G_TYPE_INT, f.upsample, "center-frequency", G_TYPE_DOUBLE, f.center_frequency_hz,
                             "bandwidth", G_TYPE_DOUBLE, f.bandwidth_hz, "domain", G_TYPE_STRING,
                             f.source_domain == Domain::TOA ? "time" : "frequency", "phase-sign", G_TYPE_INT,
                             f.phase_sign, nullptr);
}

bool parse_range_profiles_caps(const GstCaps *caps, RangeProfilesFormat *out, std::string *why) {
  if (!caps || gst_caps_get_size(caps) != 1) {
    *why = "caps are empty or not fixed";
    return false;
  }
  const GstStructure *s = gst_caps_get_structure(caps, 0);
  if (!gst_structure_has_name(s, GST_SAR_RANGE_PROFILES_MEDIA_TYPE)) {
    *why = std::string("media type is ") + gst_structure_get_name(s) + ", not " GST_SAR_RANGE_PROFILES_MEDIA_TYPE;
    return false;
  }
  RangeProfilesFormat f;
  int bins = 0, upsample = 0;
  if (!gst_structure_get_int(s, "bins-per-pulse", &bins) || bins < 1) {
    *why = "caps field 'bins-per-pulse' (an int >= 1) is missing";
    return false;
  }
  if (!gst_structure_get_int(s, "upsample", &upsample) || upsample < 1) {
    *why = "caps field 'upsample' (an int >= 1) is missing";
    return false;
  }
  f.bins_per_pulse = bins;
  f.upsample = upsample;
  if (!get_positive(s, "bin-spacing", &f.bin_spacing_m, why)) return false;
  if (!get_double(s, "first-bin-range", &f.first_bin_range_m, why)) return false;
  if (!get_positive(s, "center-frequency", &f.center_frequency_hz, why)) return false;
  if (!get_positive(s, "bandwidth", &f.bandwidth_hz, why)) return false;
  const char *domain = gst_structure_get_string(s, "domain");
  f.source_domain = domain && std::strcmp(domain, "frequency") == 0 ? Domain::FX : Domain::TOA;
  if (gst_structure_has_field(s, "phase-sign") &&
      (!gst_structure_get_int(s, "phase-sign", &f.phase_sign) || (f.phase_sign != 1 && f.phase_sign != -1))) {
    *why = "caps field 'phase-sign' must be -1 or +1";
    return false;
  }
  *out = f;
  return true;
}

cs::sar::PulseCompressionConfig compression_of(const RangeProfilesFormat &f) {
  cs::sar::PulseCompressionConfig c;
  c.domain = f.source_domain;
  c.upsample = f.upsample;
  c.samples_per_pulse = f.bins_per_pulse / f.upsample;
  if (f.source_domain == Domain::TOA) {
    // bin spacing = c / (2 upsample fs)
    c.sample_rate_hz = cs::sar::kSpeedOfLight / (2.0 * f.upsample * f.bin_spacing_m);
    c.chirp.duration_s = 1.0;
    c.chirp.rate_hz_per_s = f.bandwidth_hz;
  } else {
    // bin spacing = c / (2 SCSS bins)
    c.frequency_step_hz = cs::sar::kSpeedOfLight / (2.0 * f.bin_spacing_m * static_cast<double>(f.bins_per_pulse));
  }
  return c;
}

GstCaps *sar_image_caps(const SarImageFormat &f) {
  return gst_caps_new_simple(GST_SAR_IMAGE_MEDIA_TYPE, "format", G_TYPE_STRING, "CF32", "width", G_TYPE_INT,
                             static_cast<int>(f.width), "height", G_TYPE_INT, static_cast<int>(f.height), nullptr);
}

bool parse_sar_image_caps(const GstCaps *caps, SarImageFormat *out, std::string *why) {
  if (!caps || gst_caps_get_size(caps) != 1) {
    *why = "caps are empty or not fixed";
    return false;
  }
  const GstStructure *s = gst_caps_get_structure(caps, 0);
  if (!gst_structure_has_name(s, GST_SAR_IMAGE_MEDIA_TYPE)) {
    *why = std::string("media type is ") + gst_structure_get_name(s) + ", not " GST_SAR_IMAGE_MEDIA_TYPE;
    return false;
  }
  const char *format = gst_structure_get_string(s, "format");
  if (!format || std::strcmp(format, "CF32") != 0) {
    *why = "caps field 'format' must be CF32";
    return false;
  }
  int width = 0, height = 0;
  if (!gst_structure_get_int(s, "width", &width) || width < 1 || !gst_structure_get_int(s, "height", &height) ||
      height < 1) {
    *why = "caps fields 'width' and 'height' (ints >= 1) are missing";
    return false;
  }
  out->width = width;
  out->height = height;
  return true;
}

namespace {
void put(const cs::sar::Vec3 &v, gdouble *out) {
  out[0] = v.x;
  out[1] = v.y;
  out[2] = v.z;
}
cs::sar::Vec3 get(const gdouble *in) { return {in[0], in[1], in[2]}; }
}  // namespace

GstSarPulseParameters to_gst(const cs::sar::PulseParameters &p) {
  GstSarPulseParameters g;
  gst_sar_pulse_parameters_init(&g);
  g.tx_time = p.tx_time;
  put(p.tx_pos, g.tx_pos);
  put(p.tx_vel, g.tx_vel);
  g.rcv_time = p.rcv_time;
  put(p.rcv_pos, g.rcv_pos);
  put(p.rcv_vel, g.rcv_vel);
  put(p.srp_pos, g.srp_pos);
  g.amp_sf = p.amp_sf;
  g.a_fdop = p.a_fdop;
  g.a_frr1 = p.a_frr1;
  g.a_frr2 = p.a_frr2;
  g.fx1 = p.fx1;
  g.fx2 = p.fx2;
  g.fxn1 = p.fxn1;
  g.fxn2 = p.fxn2;
  g.toa1 = p.toa1;
  g.toa2 = p.toa2;
  g.toae1 = p.toae1;
  g.toae2 = p.toae2;
  g.td_tropo_srp = p.td_tropo_srp;
  g.td_iono_srp = p.td_iono_srp;
  g.sc0 = p.sc0;
  g.scss = p.scss;
  g.signal = p.signal;
  put(p.tx_acx, g.tx_acx);
  put(p.tx_acy, g.tx_acy);
  put(p.rcv_acx, g.rcv_acx);
  put(p.rcv_acy, g.rcv_acy);
  g.tx_eb[0] = p.tx_eb[0];
  g.tx_eb[1] = p.tx_eb[1];
  g.rcv_eb[0] = p.rcv_eb[0];
  g.rcv_eb[1] = p.rcv_eb[1];
  return g;
}

cs::sar::PulseParameters from_gst(const GstSarPulseParameters &g) {
  cs::sar::PulseParameters p;
  p.tx_time = g.tx_time;
  p.tx_pos = get(g.tx_pos);
  p.tx_vel = get(g.tx_vel);
  p.rcv_time = g.rcv_time;
  p.rcv_pos = get(g.rcv_pos);
  p.rcv_vel = get(g.rcv_vel);
  p.srp_pos = get(g.srp_pos);
  p.amp_sf = g.amp_sf;
  p.a_fdop = g.a_fdop;
  p.a_frr1 = g.a_frr1;
  p.a_frr2 = g.a_frr2;
  p.fx1 = g.fx1;
  p.fx2 = g.fx2;
  p.fxn1 = g.fxn1;
  p.fxn2 = g.fxn2;
  p.toa1 = g.toa1;
  p.toa2 = g.toa2;
  p.toae1 = g.toae1;
  p.toae2 = g.toae2;
  p.td_tropo_srp = g.td_tropo_srp;
  p.td_iono_srp = g.td_iono_srp;
  p.sc0 = g.sc0;
  p.scss = g.scss;
  p.signal = g.signal;
  p.tx_acx = get(g.tx_acx);
  p.tx_acy = get(g.tx_acy);
  p.rcv_acx = get(g.rcv_acx);
  p.rcv_acy = get(g.rcv_acy);
  p.tx_eb = {g.tx_eb[0], g.tx_eb[1]};
  p.rcv_eb = {g.rcv_eb[0], g.rcv_eb[1]};
  return p;
}

std::vector<cs::sar::PulseParameters> pulses_of(const GstSarPulseMeta *meta) {
  std::vector<cs::sar::PulseParameters> out;
  out.reserve(meta->n_pulses);
  for (guint i = 0; i < meta->n_pulses; ++i) out.push_back(from_gst(meta->pulses[i]));
  return out;
}

void attach_pulses(GstBuffer *block, guint64 first, const cs::sar::PulseParameters *pulses, guint count,
                   bool custom_meta) {
  GstSarPulseMeta *meta = gst_buffer_add_sar_pulse_meta(block, first, count, nullptr);
  if (!meta) throw std::runtime_error("cannot add the pulse meta to the block");
  for (guint i = 0; i < count; ++i) meta->pulses[i] = to_gst(pulses[i]);
  if (custom_meta && !gst_buffer_add_sar_pulse_custom_meta(block, meta))
    throw std::runtime_error("cannot add the pulses' custom meta to the block");
}

GParamSpec *pulse_custom_meta_param_spec(GParamFlags flags) {
  return g_param_spec_boolean("custom-meta", "Custom meta",
                              "Also attach each block's pulse parameters as a GstCustomMeta named GstSarPulses (a "
                              "GstStructure: first-pulse, n-pulses and the CPHD per-vector parameters as records), "
                              "which Python and other language bindings read from an appsink's buffers",
                              FALSE, flags);
}

}  // namespace gstsar
