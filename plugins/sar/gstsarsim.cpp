/* sarsim: simulated SAR phase history of point targets.
 *
 * The engine is cs::sar::PhaseHistorySimulator (kernels/sar/simulator.h):
 * stop-and-hop, exact two-way delays in double precision, signals compensated
 * to the scene reference point as CPHD does. Each buffer is a block of
 * pulses-per-buffer pulses (the last may be shorter) with a GstSarPulseMeta;
 * its timestamp is the first pulse's transmit time, its duration the block's
 * pulse count over the PRF. */
#include "gstsarsim.h"

#include <algorithm>
#include <cmath>
#include <complex>
#include <limits>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "../core/gstcs-cxx.h"
#include "common/cuda_runtime.h"
#include "common/host_resources.h"
#include "sar-common.h"
#include "sar-enums.h"
#include "sar/simulator.h"
#include "gstcs-cxx.h"

GST_DEBUG_CATEGORY_STATIC(gst_sar_sim_debug);
#define GST_CAT_DEFAULT gst_sar_sim_debug

using cs::sar::CollectionMode;
using cs::sar::Domain;

namespace {
constexpr const char *kDefaultTargets = "0,0,0,1";

// "x,y,z,amp;x,y,z,amp" (metres east, north, up from the scene centre; a
// real amplitude, or amp@degrees for a complex one). Throws with the reason.
std::vector<cs::sar::PointTarget> parse_targets(const std::string &text) {
  std::vector<cs::sar::PointTarget> targets;
  std::stringstream all(text);
  std::string item;
  int index = 0;
  while (std::getline(all, item, ';')) {
    if (item.find_first_not_of(" \t") == std::string::npos) continue;
    std::vector<double> v;
    std::stringstream fields(item);
    std::string field;
    double phase_deg = 0;
    while (std::getline(fields, field, ',')) {
      const size_t at = field.find('@');
      try {
        size_t used = 0;
        const std::string number = field.substr(0, at);
        v.push_back(std::stod(number, &used));
        if (number.find_first_not_of(" \t", used) != std::string::npos) throw std::invalid_argument(number);
        if (at != std::string::npos) phase_deg = std::stod(field.substr(at + 1));
      } catch (const std::exception &) {
        throw std::invalid_argument("target " + std::to_string(index) + " ('" + item + "'): '" + field +
                                    "' is not a number");
      }
    }
    if (v.size() != 4)
      throw std::invalid_argument("target " + std::to_string(index) + " ('" + item +
                                  "') needs four numbers x,y,z,amplitude");
    // Samples are float32: an amplitude they cannot hold would come out infinite.
    if (!(std::abs(v[3]) <= 1e30) || !std::isfinite(phase_deg))
      throw std::invalid_argument("target " + std::to_string(index) + " ('" + item +
                                  "'): the amplitude must be a finite number of at most 1e30 (samples are float32)");
    cs::sar::PointTarget t;
    t.position = {v[0], v[1], v[2]};
    t.amplitude = std::polar(v[3], phase_deg * M_PI / 180.0);
    targets.push_back(t);
    ++index;
  }
  if (targets.empty()) throw std::invalid_argument("the target list is empty");
  return targets;
}

struct SimState {
  std::unique_ptr<cs::sar::PhaseHistorySimulator> sim;
  gstsar::PhaseHistoryFormat format;
  double ci16_scale = 1;  // AmpSF of CI16 output: one integer step in signal units
  std::vector<std::complex<float>> scratch;
  std::vector<cs::sar::PulseParameters> pvp;
};
}  // namespace

struct _GstSarSim {
  GstPushSrc parent;
  // properties
  gdouble center_frequency, bandwidth, pulse_length, sample_rate, prf;
  gdouble altitude, speed, standoff, antenna_length, snr;
  GstSarCollection mode;
  gchar *targets;
  guint pulses_per_buffer;
  gint64 num_pulses;
  gint samples_per_pulse;
  GstSarDomain domain;
  GstSarSampleFormat format;
  guint64 seed;
  gboolean custom_meta;  // also attach the pulses as a GstCustomMeta
  // streaming
  gint64 next_pulse;
  SimState *state;
  GstBufferPool *pool;  // blocks of pulses-per-buffer pulses (gstcs::new_source_pool)
};

G_DEFINE_TYPE(GstSarSim, gst_sar_sim, GST_TYPE_PUSH_SRC)
GST_ELEMENT_REGISTER_DEFINE(sarsim, "sarsim", GST_RANK_NONE, GST_TYPE_SAR_SIM)

static GstStaticPadTemplate src_template =
    GST_STATIC_PAD_TEMPLATE("src", GST_PAD_SRC, GST_PAD_ALWAYS,
                            GST_STATIC_CAPS(GST_SAR_PHASE_HISTORY_MEDIA_TYPE ", format=(string){CF32,CI16}, "
                                                                             "domain=(string){time,frequency}"));

enum {
  PROP_0,
  PROP_CENTER_FREQUENCY,
  PROP_BANDWIDTH,
  PROP_PULSE_LENGTH,
  PROP_SAMPLE_RATE,
  PROP_PRF,
  PROP_ALTITUDE,
  PROP_SPEED,
  PROP_STANDOFF,
  PROP_ANTENNA_LENGTH,
  PROP_MODE,
  PROP_TARGETS,
  PROP_SNR,
  PROP_PULSES_PER_BUFFER,
  PROP_NUM_PULSES,
  PROP_SAMPLES_PER_PULSE,
  PROP_DOMAIN,
  PROP_FORMAT,
  PROP_SEED,
  PROP_CUSTOM_META,
};

static gboolean sim_start(GstBaseSrc *src) {
  auto *self = GST_SAR_SIM(src);
  GST_OBJECT_LOCK(self);
  cs::sar::SimulatorConfig c;
  c.center_frequency_hz = self->center_frequency;
  c.bandwidth_hz = self->bandwidth;
  c.pulse_length_s = self->pulse_length;
  c.sample_rate_hz = self->sample_rate;
  c.prf_hz = self->prf;
  c.altitude_m = self->altitude;
  c.speed_m_s = self->speed;
  c.standoff_m = self->standoff;
  c.antenna_length_m = self->antenna_length;
  c.mode = self->mode == GST_SAR_COLLECTION_STRIPMAP ? CollectionMode::Stripmap : CollectionMode::Spotlight;
  c.domain = self->domain == GST_SAR_DOMAIN_FREQUENCY ? Domain::FX : Domain::TOA;
  c.num_pulses = self->num_pulses < 0 ? 0 : self->num_pulses;
  c.samples_per_pulse = self->samples_per_pulse;
  c.snr_db = self->snr;
  c.noise_seed = self->seed;
  const std::string targets = self->targets ? self->targets : "";
  const bool ci16 = self->format == GST_SAR_SAMPLE_FORMAT_CI16;
  const gint64 pulses_per_buffer = self->num_pulses > 0 ? MIN(gint64(self->pulses_per_buffer), self->num_pulses)
                                                        : gint64(self->pulses_per_buffer);
  GST_OBJECT_UNLOCK(self);
  try {
    c.targets = parse_targets(targets);
    auto st = std::make_unique<SimState>();
    st->sim = std::make_unique<cs::sar::PhaseHistorySimulator>(c);
    gstsar::PhaseHistoryFormat &f = st->format;
    f.format = ci16 ? gstsar::WireFormat::CI16 : gstsar::WireFormat::CF32;
    f.samples_per_pulse = st->sim->samples_per_pulse();
    if (f.samples_per_pulse > G_MAXINT) throw std::invalid_argument("too many samples per pulse");
    // A block is made whole before it is pushed (CI16: also as complex floats first): refused at
    // once where the process could not hold it (the host's memory, or its control group's limit),
    // rather than after downstream has set up for it.
    const double block_bytes = double(f.samples_per_pulse) * double(pulses_per_buffer) * (ci16 ? 12.0 : 8.0);
    const size_t memory = cs::host_memory_bytes();
    if (memory && block_bytes > double(memory))
      throw std::invalid_argument(
          "a block of " + std::to_string(pulses_per_buffer) + " pulses of " + std::to_string(f.samples_per_pulse) +
          " samples needs " + cs::format_bytes(size_t(std::min(block_bytes, 1.8e19))) +
          ", more than the memory this process may use, " + cs::format_bytes(memory) +
          ": fewer pulses-per-buffer, or fewer samples per pulse (samples-per-pulse, or pulse-length and "
          "sample-rate)");
    f.domain = c.domain;
    f.center_frequency_hz = c.center_frequency_hz;
    f.bandwidth_hz = c.bandwidth_hz;
    f.phase_sign = -1;
    if (c.domain == Domain::TOA) {
      f.sample_rate_hz = c.sample_rate_hz;
      f.chirp_rate_hz_per_s = st->sim->chirp().rate_hz_per_s;
      f.chirp_duration_s = st->sim->chirp().duration_s;
      f.sample_start_s = st->sim->sc0();
    } else {
      f.frequency_step_hz = st->sim->scss();
    }
    if (ci16) {
      // Full scale: every target adding in phase plus six noise deviations.
      double peak = 0;
      for (const auto &t : c.targets) peak += std::abs(t.amplitude);
      if (std::isfinite(c.snr_db)) peak += 6.0 * std::sqrt(std::pow(10.0, -c.snr_db / 10.0));
      st->ci16_scale = std::max(peak, 1e-30) / 32000.0;
    }
    GST_INFO_OBJECT(self, "%" G_GINT64_FORMAT " samples per pulse, %zu targets", f.samples_per_pulse,
                    c.targets.size());
    self->state = st.release();
  } catch (const std::exception &e) {
    GST_ELEMENT_ERROR(self, RESOURCE, SETTINGS, ("Cannot set up the simulation: %s", e.what()), (nullptr));
    return FALSE;
  }
  self->next_pulse = 0;
  return TRUE;
}

static gboolean sim_decide_allocation(GstBaseSrc *src, GstQuery *query) {
  auto *self = GST_SAR_SIM(src);
  if (!GST_BASE_SRC_CLASS(gst_sar_sim_parent_class)->decide_allocation(src, query)) return FALSE;
  gstcs::drop_pool(&self->pool);
  if (self->state) {
    const gstsar::PhaseHistoryFormat &f = self->state->format;
    const size_t pulse_bytes = size_t(f.samples_per_pulse) * gstsar::wire_bytes_per_sample(f.format);
    self->pool = gstcs::new_source_pool(src, query, size_t(self->pulses_per_buffer) * pulse_bytes);
  }
  return TRUE;
}

static gboolean sim_stop(GstBaseSrc *src) {
  auto *self = GST_SAR_SIM(src);
  gstcs::drop_pool(&self->pool);
  delete self->state;
  self->state = nullptr;
  return TRUE;
}

static gboolean sim_negotiate(GstBaseSrc *src) {
  auto *self = GST_SAR_SIM(src);
  if (!self->state) return FALSE;
  GstCaps *caps = gstsar::phase_history_caps(self->state->format);
  GstCaps *peer = gst_pad_peer_query_caps(GST_BASE_SRC_PAD(src), nullptr);
  const bool ok = !peer || gst_caps_can_intersect(caps, peer);
  if (peer) gst_caps_unref(peer);
  if (!ok) {
    gchar *text = gst_caps_to_string(caps);
    GST_ELEMENT_ERROR(self, CORE, NEGOTIATION, ("Downstream does not accept the simulated stream"),
                      ("sarsim produces %s", text));
    g_free(text);
    gst_caps_unref(caps);
    return FALSE;
  }
  const gboolean set = gst_base_src_set_caps(src, caps);
  gst_caps_unref(caps);
  return set;
}

static GstFlowReturn sim_create(GstPushSrc *src, GstBuffer **out) {
  auto *self = GST_SAR_SIM(src);
  SimState *st = self->state;
  if (!st) return GST_FLOW_NOT_NEGOTIATED;
  GST_OBJECT_LOCK(self);
  const gint64 total = self->num_pulses;
  const gint64 per_buffer = self->pulses_per_buffer;
  const bool custom_meta = self->custom_meta;
  GST_OBJECT_UNLOCK(self);
  if (total >= 0 && self->next_pulse >= total) return GST_FLOW_EOS;
  const gint64 count = total < 0 ? per_buffer : std::min(per_buffer, total - self->next_pulse);
  const gint64 first = self->next_pulse;
  const size_t samples = static_cast<size_t>(count * st->format.samples_per_pulse);
  GstBuffer *buf = nullptr;
  try {
    buf = gstcs::acquire_source_buffer(GST_BASE_SRC(src), self->pool,
                                       samples * gstsar::wire_bytes_per_sample(st->format.format));
    if (!buf) return GST_FLOW_ERROR;  // the error is posted
    st->pvp.resize(static_cast<size_t>(count));
    GstMapInfo map;
    gst_buffer_map(buf, &map, GST_MAP_WRITE);
    if (st->format.format == gstsar::WireFormat::CF32) {
      st->sim->generate(first, count, st->pvp.data(), reinterpret_cast<std::complex<float> *>(map.data));
    } else {
      st->scratch.resize(samples);
      st->sim->generate(first, count, st->pvp.data(), st->scratch.data());
      // Quantisation to int16 at the stream's AmpSF (the value is int * AmpSF).
      auto *q = reinterpret_cast<gint16 *>(map.data);
      const double inv = 1.0 / st->ci16_scale;
      auto quantise = [](double v) { return static_cast<gint16>(std::lrint(std::clamp(v, -32767.0, 32767.0))); };
      for (size_t i = 0; i < samples; ++i) {
        q[2 * i] = quantise(st->scratch[i].real() * inv);
        q[2 * i + 1] = quantise(st->scratch[i].imag() * inv);
      }
      for (auto &p : st->pvp) p.amp_sf = st->ci16_scale;
    }
    gst_buffer_unmap(buf, &map);
    gstsar::attach_pulses(buf, static_cast<guint64>(first), st->pvp.data(), guint(count), custom_meta);
    const double t0 = st->pvp.front().tx_time;
    if (t0 * GST_SECOND + double(count) / self->prf * GST_SECOND >= double(G_MAXINT64))  // no clock time any more
      throw std::runtime_error("the stream's time passes GStreamer's clock range (2^63 ns) at pulse " +
                               std::to_string(first) + ": a higher prf, or fewer pulses");
    GST_BUFFER_PTS(buf) = t0 > 0 ? GstClockTime(std::llround(t0 * GST_SECOND)) : 0;
    GST_BUFFER_DTS(buf) = GST_BUFFER_PTS(buf);
    GST_BUFFER_DURATION(buf) = GstClockTime(std::llround(double(count) / self->prf * GST_SECOND));
    GST_BUFFER_OFFSET(buf) = guint64(first);
    GST_BUFFER_OFFSET_END(buf) = guint64(first + count);
    self->next_pulse += count;
    *out = buf;
    return GST_FLOW_OK;
  } catch (const std::exception &e) {
    if (buf) gst_buffer_unref(buf);
    GST_ELEMENT_ERROR(self, STREAM, FAILED, ("Simulating pulses %" G_GINT64_FORMAT "..%" G_GINT64_FORMAT ": %s",
                                             first, first + count - 1, e.what()),
                      (nullptr));
    return GST_FLOW_ERROR;
  }
}

static void sim_set_property(GObject *object, guint prop_id, const GValue *value, GParamSpec *pspec) {
  if (!gstcs::property_change_allowed(object, pspec)) return;
  auto *self = GST_SAR_SIM(object);
  GST_OBJECT_LOCK(self);
  switch (prop_id) {
    case PROP_CENTER_FREQUENCY: self->center_frequency = g_value_get_double(value); break;
    case PROP_BANDWIDTH: self->bandwidth = g_value_get_double(value); break;
    case PROP_PULSE_LENGTH: self->pulse_length = g_value_get_double(value); break;
    case PROP_SAMPLE_RATE: self->sample_rate = g_value_get_double(value); break;
    case PROP_PRF: self->prf = g_value_get_double(value); break;
    case PROP_ALTITUDE: self->altitude = g_value_get_double(value); break;
    case PROP_SPEED: self->speed = g_value_get_double(value); break;
    case PROP_STANDOFF: self->standoff = g_value_get_double(value); break;
    case PROP_ANTENNA_LENGTH: self->antenna_length = g_value_get_double(value); break;
    case PROP_MODE: self->mode = GstSarCollection(g_value_get_enum(value)); break;
    case PROP_TARGETS:
      g_free(self->targets);
      self->targets = g_value_dup_string(value);
      break;
    case PROP_SNR: self->snr = g_value_get_double(value); break;
    case PROP_PULSES_PER_BUFFER: self->pulses_per_buffer = g_value_get_uint(value); break;
    case PROP_NUM_PULSES: self->num_pulses = g_value_get_int64(value); break;
    case PROP_SAMPLES_PER_PULSE: self->samples_per_pulse = g_value_get_int(value); break;
    case PROP_DOMAIN: self->domain = GstSarDomain(g_value_get_enum(value)); break;
    case PROP_FORMAT: self->format = GstSarSampleFormat(g_value_get_enum(value)); break;
    case PROP_SEED: self->seed = g_value_get_uint64(value); break;
    case PROP_CUSTOM_META: self->custom_meta = g_value_get_boolean(value); break;
    default: G_OBJECT_WARN_INVALID_PROPERTY_ID(object, prop_id, pspec);
  }
  GST_OBJECT_UNLOCK(self);
}

static void sim_get_property(GObject *object, guint prop_id, GValue *value, GParamSpec *pspec) {
  auto *self = GST_SAR_SIM(object);
  GST_OBJECT_LOCK(self);
  switch (prop_id) {
    case PROP_CENTER_FREQUENCY: g_value_set_double(value, self->center_frequency); break;
    case PROP_BANDWIDTH: g_value_set_double(value, self->bandwidth); break;
    case PROP_PULSE_LENGTH: g_value_set_double(value, self->pulse_length); break;
    case PROP_SAMPLE_RATE: g_value_set_double(value, self->sample_rate); break;
    case PROP_PRF: g_value_set_double(value, self->prf); break;
    case PROP_ALTITUDE: g_value_set_double(value, self->altitude); break;
    case PROP_SPEED: g_value_set_double(value, self->speed); break;
    case PROP_STANDOFF: g_value_set_double(value, self->standoff); break;
    case PROP_ANTENNA_LENGTH: g_value_set_double(value, self->antenna_length); break;
    case PROP_MODE: g_value_set_enum(value, self->mode); break;
    case PROP_TARGETS: g_value_set_string(value, self->targets); break;
    case PROP_SNR: g_value_set_double(value, self->snr); break;
    case PROP_PULSES_PER_BUFFER: g_value_set_uint(value, self->pulses_per_buffer); break;
    case PROP_NUM_PULSES: g_value_set_int64(value, self->num_pulses); break;
    case PROP_SAMPLES_PER_PULSE: g_value_set_int(value, self->samples_per_pulse); break;
    case PROP_DOMAIN: g_value_set_enum(value, self->domain); break;
    case PROP_FORMAT: g_value_set_enum(value, self->format); break;
    case PROP_SEED: g_value_set_uint64(value, self->seed); break;
    case PROP_CUSTOM_META: g_value_set_boolean(value, self->custom_meta); break;
    default: G_OBJECT_WARN_INVALID_PROPERTY_ID(object, prop_id, pspec);
  }
  GST_OBJECT_UNLOCK(self);
}

static void sim_finalize(GObject *object) {
  auto *self = GST_SAR_SIM(object);
  g_free(self->targets);
  gstcs::drop_pool(&self->pool);
  delete self->state;
  G_OBJECT_CLASS(gst_sar_sim_parent_class)->finalize(object);
}

static void install_double(GObjectClass *klass, guint id, const char *name, const char *nick, const char *blurb,
                           double min, double max, double def) {
  g_object_class_install_property(
      klass, id,
      g_param_spec_double(name, nick, blurb, min, max, def,
                          GParamFlags(G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY)));
}

static void gst_sar_sim_class_init(GstSarSimClass *klass) {
  GObjectClass *gobject_class = G_OBJECT_CLASS(klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS(klass);
  GstBaseSrcClass *src_class = GST_BASE_SRC_CLASS(klass);
  GstPushSrcClass *push_class = GST_PUSH_SRC_CLASS(klass);
  gobject_class->set_property = sim_set_property;
  gobject_class->get_property = sim_get_property;
  gobject_class->finalize = sim_finalize;
  const cs::sar::SimulatorConfig d;
  const GParamFlags flags = GParamFlags(G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY);
  install_double(gobject_class, PROP_CENTER_FREQUENCY, "center-frequency", "Centre frequency",
                 "Carrier (centre) frequency of the transmitted band, in Hz (default X band, 9.6 GHz)", 1e6, 1e12,
                 d.center_frequency_hz);
  install_double(gobject_class, PROP_BANDWIDTH, "bandwidth", "Bandwidth",
                 "Bandwidth of the linear-FM chirp, in Hz; range resolution is c/(2*bandwidth)", 1e3, 1e11,
                 d.bandwidth_hz);
  install_double(gobject_class, PROP_PULSE_LENGTH, "pulse-length", "Pulse length",
                 "Duration of the transmitted chirp, in seconds (time domain)", 1e-9, 1.0, d.pulse_length_s);
  install_double(gobject_class, PROP_SAMPLE_RATE, "sample-rate", "Sample rate",
                 "Complex sample rate of the receiver, in Hz (time domain; must exceed the bandwidth)", 1e3, 1e11,
                 d.sample_rate_hz);
  install_double(gobject_class, PROP_PRF, "prf", "Pulse repetition frequency",
                 "Pulses per second, in Hz; pulse k is transmitted at k/prf seconds", 1e-3, 1e7, d.prf_hz);
  install_double(gobject_class, PROP_ALTITUDE, "altitude", "Altitude",
                 "Platform height above the scene plane, in metres", 0, 1e8, d.altitude_m);
  install_double(gobject_class, PROP_SPEED, "speed", "Speed",
                 "Platform ground speed along its straight east-bound flight line, in m/s", 0, 1e5, d.speed_m_s);
  install_double(gobject_class, PROP_STANDOFF, "standoff", "Stand-off",
                 "Ground distance from the flight line to the scene centre line, in metres (the platform "
                 "looks north, to its left)",
                 0, 1e8, d.standoff_m);
  install_double(gobject_class, PROP_ANTENNA_LENGTH, "antenna-length", "Antenna length",
                 "Along-track antenna aperture, in metres: sets the stripmap beam (sinc^2 two-way pattern)", 1e-3,
                 1e3, d.antenna_length_m);
  g_object_class_install_property(
      gobject_class, PROP_MODE,
      g_param_spec_enum("mode", "Collection mode",
                        "spotlight: the scene reference point is the scene centre for every pulse; stripmap: the "
                        "ground point abeam the platform, targets weighted by the antenna pattern",
                        GST_TYPE_SAR_COLLECTION, GST_SAR_COLLECTION_SPOTLIGHT, flags));
  g_object_class_install_property(
      gobject_class, PROP_TARGETS,
      g_param_spec_string("targets", "Point targets",
                          "Point targets as \"x,y,z,amp;x,y,z,amp;...\": metres east, north and up from the scene "
                          "centre and a linear amplitude (append @degrees for a phase, e.g. 10,-5,0,0.5@90)",
                          kDefaultTargets, flags));
  install_double(gobject_class, PROP_SNR, "snr", "Signal-to-noise ratio",
                 "Per-sample SNR of a unit-amplitude target, in dB: complex Gaussian noise of variance "
                 "10^(-snr/10) is added (inf = no noise)",
                 -100.0, std::numeric_limits<double>::infinity(), std::numeric_limits<double>::infinity());
  g_object_class_install_property(
      gobject_class, PROP_PULSES_PER_BUFFER,
      g_param_spec_uint("pulses-per-buffer", "Pulses per buffer",
                        "Pulses in each output buffer (the last buffer of a finite run may hold fewer)", 1, 1 << 20,
                        64, flags));
  g_object_class_install_property(
      gobject_class, PROP_NUM_PULSES,
      g_param_spec_int64("num-pulses", "Number of pulses",
                         "Pulses to produce before end-of-stream (the aperture is centred on the middle one; at most "
                         "2^40, as their times must tell them apart); -1 streams endlessly with the aperture centre "
                         "at time 0 (until pulse 2^40 or the clock's end)",
                         -1, G_MAXINT64, d.num_pulses, flags));
  g_object_class_install_property(
      gobject_class, PROP_SAMPLES_PER_PULSE,
      g_param_spec_int("samples-per-pulse", "Samples per pulse",
                       "Samples in each pulse; 0 derives them from the targets' extent (enough fast time, or a "
                       "fine enough frequency step, for every echo)",
                       0, G_MAXINT, 0, flags));
  g_object_class_install_property(
      gobject_class, PROP_DOMAIN,
      g_param_spec_enum("domain", "Domain",
                        "time: raw fast-time samples of the chirp (CPHD TOA); frequency: deramped frequency "
                        "samples across the band (CPHD FX)",
                        GST_TYPE_SAR_DOMAIN, GST_SAR_DOMAIN_TIME, flags));
  g_object_class_install_property(
      gobject_class, PROP_FORMAT,
      g_param_spec_enum("format", "Sample format",
                        "cf32: complex float32; ci16: complex int16 whose value times the pulse's AmpSF (in the "
                        "pulse meta) is the signal, full scale at the sum of the target amplitudes plus 6 noise "
                        "deviations",
                        GST_TYPE_SAR_SAMPLE_FORMAT, GST_SAR_SAMPLE_FORMAT_CF32, flags));
  g_object_class_install_property(
      gobject_class, PROP_SEED,
      g_param_spec_uint64("seed", "Noise seed",
                          "Seed of the receiver noise; pulse k's noise depends only on (seed, k)", 0, G_MAXUINT64,
                          1, flags));
  g_object_class_install_property(gobject_class, PROP_CUSTOM_META, gstsar::pulse_custom_meta_param_spec(flags));

  gst_element_class_add_static_pad_template(element_class, &src_template);
  gst_element_class_set_static_metadata(
      element_class, "SAR phase-history simulator", "Source/Radar",
      "Simulated SAR phase history of point targets (linear-FM chirp, straight flight, spotlight or stripmap, "
      "stop-and-hop with exact delays), in blocks of pulses with per-pulse parameters (GstSarPulseMeta)",
      "gst-cuda-sensing developers");
  src_class->start = sim_start;
  src_class->stop = sim_stop;
  src_class->negotiate = sim_negotiate;
  src_class->decide_allocation = sim_decide_allocation;
  push_class->create = sim_create;
  gst_type_mark_as_plugin_api(GST_TYPE_SAR_COLLECTION, GstPluginAPIFlags(0));
  gst_type_mark_as_plugin_api(GST_TYPE_SAR_DOMAIN, GstPluginAPIFlags(0));
  gst_type_mark_as_plugin_api(GST_TYPE_SAR_SAMPLE_FORMAT, GstPluginAPIFlags(0));
  GST_DEBUG_CATEGORY_INIT(gst_sar_sim_debug, "sarsim", 0, "SAR phase-history simulator");
}

static void gst_sar_sim_init(GstSarSim *self) {
  const cs::sar::SimulatorConfig d;
  self->center_frequency = d.center_frequency_hz;
  self->bandwidth = d.bandwidth_hz;
  self->pulse_length = d.pulse_length_s;
  self->sample_rate = d.sample_rate_hz;
  self->prf = d.prf_hz;
  self->altitude = d.altitude_m;
  self->speed = d.speed_m_s;
  self->standoff = d.standoff_m;
  self->antenna_length = d.antenna_length_m;
  self->mode = GST_SAR_COLLECTION_SPOTLIGHT;
  self->targets = g_strdup(kDefaultTargets);
  self->snr = std::numeric_limits<double>::infinity();
  self->pulses_per_buffer = 64;
  self->num_pulses = d.num_pulses;
  self->samples_per_pulse = 0;
  self->domain = GST_SAR_DOMAIN_TIME;
  self->format = GST_SAR_SAMPLE_FORMAT_CF32;
  self->seed = 1;
  gst_base_src_set_format(GST_BASE_SRC(self), GST_FORMAT_TIME);
}
