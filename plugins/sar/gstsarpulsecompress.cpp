/* sarpulsecompress: range (pulse) compression of SAR phase history.
 *
 * Time domain: FFT, multiply by the reference chirp's filter (from the caps'
 * chirp-rate and chirp-duration, or a measured reference waveform file) and
 * the window, zero-pad for upsampling, inverse FFT. Frequency domain: window
 * across frequency, zero-pad, inverse FFT. The arithmetic is in
 * kernels/sar/pulse_compressor.h (FFTW on the CPU, cuFFT on CUDA); its
 * tables and the compressor are made in set_caps, and FFT plans are cached
 * per block size, so nothing is planned per buffer.
 *
 * Output bins are aligned to each pulse's reference (SRP) range: bin m is at
 * first-bin-range + m * bin-spacing metres from it (time domain: for a pulse
 * whose SC0 equals the caps' sample-start; a pulse with another SC0 is
 * shifted by c/2 (SC0 - sample-start)). The pulse meta passes through.
 * Input is CF32 or CI16 (ADC data, CPHD CI4): CI16 samples count as their
 * integers times the pulse's AmpSF, and CUDA widens them on the device, so
 * only half the bytes of CF32 cross the bus.
 * Non-finite input samples make their own pulse's profile non-finite and
 * leave every other pulse untouched. */
#include "gstsarpulsecompress.h"

#include <algorithm>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "../core/gstcs-cxx.h"
#include "../core/gstcs-gpu.h"
#include "sar-common.h"
#include "sar-enums.h"
#include "sar/pulse_compressor.h"
#include "gstcs-cxx.h"

GST_DEBUG_CATEGORY_STATIC(gst_sar_pulse_compress_debug);
#define GST_CAT_DEFAULT gst_sar_pulse_compress_debug

using cs::sar::Domain;

namespace {
// Pulses per FFT batch. The CPU keeps its work buffers cache-sized; cuFFT
// needs big batches to reach the memory bandwidth (on an H200, 8192-sample
// pulses: 55% of the roofline in batches of 256, 75% in batches of 4096), up
// to kMaxCudaWorkBytes of output rows per batch (the size that cuFFT's work
// area follows).
constexpr int64_t kCpuPulsesPerCall = 256;
constexpr int64_t kMaxCudaPulsesPerCall = 4096;
constexpr int64_t kMaxCudaWorkBytes = int64_t(256) << 20;

int64_t pulses_per_call(bool cuda, int64_t bins_per_pulse) {
  if (!cuda) return kCpuPulsesPerCall;
  const int64_t fitting = kMaxCudaWorkBytes / std::max<int64_t>(1, bins_per_pulse * 8);
  return std::clamp(fitting, kCpuPulsesPerCall, kMaxCudaPulsesPerCall);
}

typedef enum { FILTER_EQUALIZED = 0, FILTER_MATCHED = 1 } ReferenceFilterKind;

GType reference_filter_get_type() {
  static GType type = 0;
  static const GEnumValue values[] = {
      {FILTER_EQUALIZED,
       "Equalized: conj(R) w / |R|^2 in the band; the response is exactly the window's (design sidelobes)",
       "equalized"},
      {FILTER_MATCHED, "Matched: conj(R) w; best SNR, the chirp's ripple lifts low sidelobes slightly", "matched"},
      {0, nullptr, nullptr}};
  if (g_once_init_enter(&type)) g_once_init_leave(&type, g_enum_register_static("GstSarReferenceFilter", values));
  return type;
}

struct CompressState {
  gstsar::PhaseHistoryFormat input;
  int64_t output_length = 0;
  std::unique_ptr<cs::sar::CpuPulseCompressor> cpu;
  std::unique_ptr<gstcs::ElementGpu> gpu;
  std::unique_ptr<cs::sar::CudaPulseCompressor> cuda;
  gstcs::OutputPool host_outputs;  // CPU backend
};

// Raw complex float32 pairs, host byte order.
std::vector<std::complex<float>> read_reference_waveform(const std::string &path) {
  // A directory opens as a stream of "LLONG_MAX bytes"; say what it is instead.
  if (g_file_test(path.c_str(), G_FILE_TEST_IS_DIR))
    throw std::runtime_error("reference waveform '" + path + "' is a directory, not a file of samples");
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) throw std::runtime_error("cannot open reference waveform '" + path + "'");
  const std::streamoff bytes = in.tellg();
  if (bytes <= 0 || bytes % 8 != 0)
    throw std::runtime_error("reference waveform '" + path + "' has " + std::to_string(bytes) +
                             " bytes, not a whole, non-zero number of complex float32 samples");
  std::vector<std::complex<float>> w(static_cast<size_t>(bytes / 8));
  in.seekg(0);
  in.read(reinterpret_cast<char *>(w.data()), bytes);
  if (!in) throw std::runtime_error("cannot read reference waveform '" + path + "'");
  return w;
}
}  // namespace

struct _GstSarPulseCompress {
  GstCsBaseTransform parent;
  // properties
  GstSarWindow window;
  gint taylor_nbar;
  gdouble taylor_sll;
  gdouble kaiser_beta;
  gint upsample;
  gchar *reference_location;
  ReferenceFilterKind reference_filter;
  CompressState *state;
};

G_DEFINE_TYPE(GstSarPulseCompress, gst_sar_pulse_compress, GST_TYPE_CS_BASE_TRANSFORM)
GST_ELEMENT_REGISTER_DEFINE(sarpulsecompress, "sarpulsecompress", GST_RANK_NONE, GST_TYPE_SAR_PULSE_COMPRESS)

#define SINK_CAPS GST_SAR_PHASE_HISTORY_MEDIA_TYPE ", format=(string){CF32,CI16}, domain=(string){time,frequency}"
#define SRC_CAPS GST_SAR_RANGE_PROFILES_MEDIA_TYPE ", format=(string)CF32"
static GstStaticPadTemplate sink_template = GST_STATIC_PAD_TEMPLATE(
    "sink", GST_PAD_SINK, GST_PAD_ALWAYS,
    GST_STATIC_CAPS(GST_SAR_PHASE_HISTORY_MEDIA_TYPE "(" GST_CAPS_FEATURE_MEMORY_CS_DEVICE
                                                     "), format=(string){CF32,CI16}, domain=(string){time,frequency}; " SINK_CAPS));
static GstStaticPadTemplate src_template = GST_STATIC_PAD_TEMPLATE(
    "src", GST_PAD_SRC, GST_PAD_ALWAYS,
    GST_STATIC_CAPS(GST_SAR_RANGE_PROFILES_MEDIA_TYPE "(" GST_CAPS_FEATURE_MEMORY_CS_DEVICE
                                                      "), format=(string)CF32; " SRC_CAPS));

enum {
  PROP_0,
  PROP_WINDOW,
  PROP_TAYLOR_NBAR,
  PROP_TAYLOR_SLL,
  PROP_KAISER_BETA,
  PROP_UPSAMPLE,
  PROP_REFERENCE_LOCATION,
  PROP_REFERENCE_FILTER,
};

// The kernel configuration for a stream and the element's properties.
static cs::sar::PulseCompressionConfig make_config(GstSarPulseCompress *self, const gstsar::PhaseHistoryFormat &f,
                                                   bool read_reference) {
  cs::sar::PulseCompressionConfig c;
  c.domain = f.domain;
  c.samples_per_pulse = f.samples_per_pulse;
  GST_OBJECT_LOCK(self);
  c.upsample = self->upsample;
  switch (self->window) {
    case GST_SAR_WINDOW_HAMMING: c.window.kind = cs::sar::WindowKind::Hamming; break;
    case GST_SAR_WINDOW_HANN: c.window.kind = cs::sar::WindowKind::Hann; break;
    case GST_SAR_WINDOW_TAYLOR: c.window.kind = cs::sar::WindowKind::Taylor; break;
    case GST_SAR_WINDOW_KAISER: c.window.kind = cs::sar::WindowKind::Kaiser; break;
    default: c.window.kind = cs::sar::WindowKind::None;
  }
  c.window.taylor_nbar = self->taylor_nbar;
  c.window.taylor_sll_db = self->taylor_sll;
  c.window.kaiser_beta = self->kaiser_beta;
  c.reference_filter = self->reference_filter == FILTER_MATCHED ? cs::sar::ReferenceFilter::Matched
                                                                : cs::sar::ReferenceFilter::Equalized;
  const std::string reference = self->reference_location ? self->reference_location : "";
  GST_OBJECT_UNLOCK(self);
  c.sample_rate_hz = f.sample_rate_hz;
  c.chirp = {f.chirp_rate_hz_per_s, f.chirp_duration_s};
  if (read_reference && f.domain == Domain::TOA && !reference.empty())
    c.reference_waveform = read_reference_waveform(reference);
  if (read_reference && f.domain == Domain::FX && !reference.empty())  // deramped samples have no waveform to match
    GST_ELEMENT_WARNING(self, STREAM, FORMAT, ("reference-location is not used for this stream"),
                        ("%s holds a time-domain waveform; the stream is in the frequency domain (deramped "
                         "samples, compressed by the FFT alone)",
                         reference.c_str()));
  c.frequency_step_hz = f.frequency_step_hz;
  c.sgn = f.phase_sign;
  // The backend, not self->state: caps queries come here from other threads, also while the element stops.
  c.max_pulses_per_block =
      pulses_per_call(gst_cs_base_transform_use_cuda(GST_CS_BASE_TRANSFORM(self)), f.samples_per_pulse * c.upsample);
  return c;
}

static GstCaps *output_caps_for(GstSarPulseCompress *self, const gstsar::PhaseHistoryFormat &f) {
  const cs::sar::PulseCompressionConfig c = make_config(self, f, false);
  const cs::sar::RangeAxis axis = cs::sar::range_axis(c, f.sample_start_s);
  gstsar::RangeProfilesFormat out;
  out.bins_per_pulse = f.samples_per_pulse * c.upsample;
  out.bin_spacing_m = axis.bin_spacing_m;
  out.first_bin_range_m = axis.first_bin_m;
  out.upsample = c.upsample;
  out.center_frequency_hz = f.center_frequency_hz;
  out.bandwidth_hz = f.bandwidth_hz;
  out.source_domain = f.domain;
  out.phase_sign = f.phase_sign;
  return gstsar::range_profiles_caps(out);
}

static GstCaps *compress_transform_caps(GstBaseTransform *trans, GstPadDirection direction, GstCaps *caps,
                                        GstCaps *filter) {
  auto *self = GST_SAR_PULSE_COMPRESS(trans);
  const bool cuda = gst_cs_base_transform_use_cuda(GST_CS_BASE_TRANSFORM(trans));
  GstCaps *media = gst_caps_new_empty();
  for (guint i = 0; i < gst_caps_get_size(caps); ++i) {
    GstCaps *one = gst_caps_new_full(gst_structure_copy(gst_caps_get_structure(caps, i)), nullptr);
    gstsar::PhaseHistoryFormat f;
    std::string why;
    if (direction == GST_PAD_SINK && gst_caps_is_fixed(one) && gstsar::parse_phase_history_caps(one, &f, &why))
      media = gst_caps_merge(media, output_caps_for(self, f));
    else if (direction == GST_PAD_SINK)
      media = gst_caps_merge(media, gst_caps_from_string(SRC_CAPS));
    else
      media = gst_caps_merge(media, gst_caps_from_string(SINK_CAPS));
    gst_caps_unref(one);
  }
  GstCaps *result = gstcs::in_memories(media, cuda);
  gst_caps_unref(media);
  result = gstcs::filtered(result, filter);
  GST_DEBUG_OBJECT(self, "%s %" GST_PTR_FORMAT " -> %" GST_PTR_FORMAT, direction == GST_PAD_SINK ? "sink" : "src",
                   caps, result);
  return result;
}

static gboolean compress_set_caps(GstBaseTransform *trans, GstCaps *incaps, GstCaps *outcaps) {
  auto *self = GST_SAR_PULSE_COMPRESS(trans);
  CompressState *st = self->state;
  gstsar::PhaseHistoryFormat f;
  std::string why;
  if (!gstsar::parse_phase_history_caps(incaps, &f, &why)) {
    GST_ELEMENT_ERROR(self, CORE, NEGOTIATION, ("sarpulsecompress cannot take this stream: %s", why.c_str()),
                      ("input caps: %" GST_PTR_FORMAT, incaps));
    return FALSE;
  }
  if (gst_cs_caps_has_device_feature(outcaps) && !st->gpu) {
    GST_ELEMENT_ERROR(self, CORE, NEGOTIATION, ("Device memory negotiated but the element runs on the CPU backend"),
                      (nullptr));
    return FALSE;
  }
  return gstcs::guard_bool(GST_ELEMENT(self), "Setting up pulse compression", [&]() -> gboolean {
    try {
      const cs::sar::PulseCompressionConfig c = make_config(self, f, true);
      st->cpu.reset();
      st->cuda.reset();
      if (st->gpu) {
        cs::DeviceGuard guard(st->gpu->device());
        st->gpu->synchronize();  // the old compressor's work buffers may still be in use
        st->cuda = std::make_unique<cs::sar::CudaPulseCompressor>(c, st->gpu->device());
        st->output_length = st->cuda->output_length();
      } else {
        st->cpu = std::make_unique<cs::sar::CpuPulseCompressor>(c);
        st->output_length = st->cpu->output_length();
      }
    } catch (const std::invalid_argument &e) {
      GST_ELEMENT_ERROR(self, CORE, NEGOTIATION, ("Pulse compression cannot be set up for this stream: %s", e.what()),
                        ("input caps: %" GST_PTR_FORMAT, incaps));
      return FALSE;
    }
    st->input = f;
    GST_INFO_OBJECT(self, "%s: %" G_GINT64_FORMAT " samples -> %" G_GINT64_FORMAT " bins per pulse",
                    st->gpu ? "cuda" : "cpu", f.samples_per_pulse, st->output_length);
    return TRUE;
  });
}

static gboolean compress_start(GstCsBaseTransform *base) {
  auto *self = GST_SAR_PULSE_COMPRESS(base);
  self->state = new CompressState();
  if (!gst_cs_base_transform_use_cuda(base)) return TRUE;
  return gstcs::start_gpu(base, "Starting pulse compression on CUDA", &self->state->gpu);
}

static gboolean compress_stop(GstCsBaseTransform *base) {
  auto *self = GST_SAR_PULSE_COMPRESS(base);
  CompressState *st = self->state;
  if (!st) return TRUE;
  gstcs::finish_gpu(base, st->gpu.get());
  delete st;
  self->state = nullptr;
  return TRUE;
}

// Checks a buffer's size and meta; on failure posts the error and returns 0.
static guint pulses_in(GstSarPulseCompress *self, GstBuffer *inbuf) {
  const size_t per_pulse = self->state->input.bytes_per_pulse();
  const gsize size = gst_buffer_get_size(inbuf);
  if (per_pulse == 0) {
    GST_ELEMENT_ERROR(self, CORE, NEGOTIATION, ("No caps were negotiated before the first buffer"), (nullptr));
    return 0;
  }
  if (size == 0 || size % per_pulse != 0) {
    GST_ELEMENT_ERROR(self, STREAM, FORMAT,
                      ("Buffer of %" G_GSIZE_FORMAT " bytes is not a whole number of pulses of %zu bytes (%" G_GINT64_FORMAT
                       " %s samples)",
                       size, per_pulse, self->state->input.samples_per_pulse,
                       self->state->input.format == gstsar::WireFormat::CI16 ? "CI16" : "CF32"),
                      (nullptr));
    return 0;
  }
  const guint pulses = guint(size / per_pulse);
  const GstSarPulseMeta *meta = gst_buffer_get_sar_pulse_meta(inbuf);
  if (!meta || meta->n_pulses != pulses) {
    GST_ELEMENT_ERROR(self, STREAM, FORMAT,
                      ("Buffer of %u pulses carries %s; range profiles need each pulse's parameters "
                       "(GstSarPulseMeta)",
                       pulses, meta ? "a pulse meta of another length" : "no pulse meta"),
                      (nullptr));
    return 0;
  }
  return pulses;
}

static GstFlowReturn compress_prepare_output_buffer(GstBaseTransform *trans, GstBuffer *inbuf, GstBuffer **outbuf) {
  auto *self = GST_SAR_PULSE_COMPRESS(trans);
  CompressState *st = self->state;
  const guint pulses = pulses_in(self, inbuf);
  if (pulses == 0) return GST_FLOW_ERROR;
  const size_t size = size_t(pulses) * size_t(st->output_length) * sizeof(std::complex<float>);
  if (st->gpu) return st->gpu->prepare_output(trans, inbuf, size, outbuf);
  *outbuf = st->host_outputs.acquire(trans, size);
  if (!*outbuf) {
    GST_ELEMENT_ERROR(self, RESOURCE, NO_SPACE_LEFT, ("Cannot allocate %zu bytes of system memory", size), (nullptr));
    return GST_FLOW_ERROR;
  }
  GST_BASE_TRANSFORM_GET_CLASS(trans)->copy_metadata(trans, inbuf, *outbuf);
  return GST_FLOW_OK;
}

static GstFlowReturn compress_transform(GstBaseTransform *trans, GstBuffer *inbuf, GstBuffer *outbuf) {
  auto *self = GST_SAR_PULSE_COMPRESS(trans);
  CompressState *st = self->state;
  const int64_t pulses = int64_t(gst_buffer_get_size(inbuf) / st->input.bytes_per_pulse());
  const bool ci16 = st->input.format == gstsar::WireFormat::CI16;
  // CI16: each pulse's integers times its AmpSF (pulses_in checked the meta).
  std::vector<float> scales;
  if (ci16) {
    const GstSarPulseMeta *meta = gst_buffer_get_sar_pulse_meta(inbuf);
    for (guint i = 0; i < meta->n_pulses; ++i) scales.push_back(static_cast<float>(meta->pulses[i].amp_sf));
  }
  return gstcs::guard_flow(GST_ELEMENT(self), "Compressing pulses", [&] {
    if (st->gpu) {
      cs::DeviceGuard guard(st->gpu->device());
      auto in = st->gpu->read(inbuf);
      auto *out = static_cast<std::complex<float> *>(st->gpu->begin_output(outbuf));
      if (ci16)
        st->cuda->compress(static_cast<const std::complex<int16_t> *>(in.data()), scales.data(), out, pulses,
                           st->gpu->stream());
      else
        st->cuda->compress(static_cast<const std::complex<float> *>(in.data()), out, pulses, st->gpu->stream());
      st->gpu->end_output(outbuf);
      return GST_FLOW_OK;
    }
    GstMapInfo in, out;
    if (!gst_buffer_map(inbuf, &in, GST_MAP_READ)) throw std::runtime_error("cannot map the input buffer");
    if (!gst_buffer_map(outbuf, &out, GST_MAP_WRITE)) {
      gst_buffer_unmap(inbuf, &in);
      throw std::runtime_error("cannot map the output buffer");
    }
    try {
      auto *profiles = reinterpret_cast<std::complex<float> *>(out.data);
      if (ci16)
        st->cpu->compress(reinterpret_cast<const std::complex<int16_t> *>(in.data), scales.data(), profiles, pulses);
      else
        st->cpu->compress(reinterpret_cast<const std::complex<float> *>(in.data), profiles, pulses);
    } catch (...) {
      gst_buffer_unmap(outbuf, &out);
      gst_buffer_unmap(inbuf, &in);
      throw;
    }
    gst_buffer_unmap(outbuf, &out);
    gst_buffer_unmap(inbuf, &in);
    return GST_FLOW_OK;
  });
}

static void compress_set_property(GObject *object, guint prop_id, const GValue *value, GParamSpec *pspec) {
  if (!gstcs::property_change_allowed(object, pspec)) return;
  auto *self = GST_SAR_PULSE_COMPRESS(object);
  GST_OBJECT_LOCK(self);
  switch (prop_id) {
    case PROP_WINDOW: self->window = GstSarWindow(g_value_get_enum(value)); break;
    case PROP_TAYLOR_NBAR: self->taylor_nbar = g_value_get_int(value); break;
    case PROP_TAYLOR_SLL: self->taylor_sll = g_value_get_double(value); break;
    case PROP_KAISER_BETA: self->kaiser_beta = g_value_get_double(value); break;
    case PROP_UPSAMPLE: self->upsample = g_value_get_int(value); break;
    case PROP_REFERENCE_LOCATION:
      g_free(self->reference_location);
      self->reference_location = g_value_dup_string(value);
      break;
    case PROP_REFERENCE_FILTER: self->reference_filter = ReferenceFilterKind(g_value_get_enum(value)); break;
    default: G_OBJECT_WARN_INVALID_PROPERTY_ID(object, prop_id, pspec);
  }
  GST_OBJECT_UNLOCK(self);
}

static void compress_get_property(GObject *object, guint prop_id, GValue *value, GParamSpec *pspec) {
  auto *self = GST_SAR_PULSE_COMPRESS(object);
  GST_OBJECT_LOCK(self);
  switch (prop_id) {
    case PROP_WINDOW: g_value_set_enum(value, self->window); break;
    case PROP_TAYLOR_NBAR: g_value_set_int(value, self->taylor_nbar); break;
    case PROP_TAYLOR_SLL: g_value_set_double(value, self->taylor_sll); break;
    case PROP_KAISER_BETA: g_value_set_double(value, self->kaiser_beta); break;
    case PROP_UPSAMPLE: g_value_set_int(value, self->upsample); break;
    case PROP_REFERENCE_LOCATION: g_value_set_string(value, self->reference_location); break;
    case PROP_REFERENCE_FILTER: g_value_set_enum(value, self->reference_filter); break;
    default: G_OBJECT_WARN_INVALID_PROPERTY_ID(object, prop_id, pspec);
  }
  GST_OBJECT_UNLOCK(self);
}

static void compress_finalize(GObject *object) {
  auto *self = GST_SAR_PULSE_COMPRESS(object);
  g_free(self->reference_location);
  delete self->state;
  G_OBJECT_CLASS(gst_sar_pulse_compress_parent_class)->finalize(object);
}

static void gst_sar_pulse_compress_class_init(GstSarPulseCompressClass *klass) {
  GObjectClass *gobject_class = G_OBJECT_CLASS(klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS(klass);
  GstBaseTransformClass *trans_class = GST_BASE_TRANSFORM_CLASS(klass);
  GstCsBaseTransformClass *cs_class = GST_CS_BASE_TRANSFORM_CLASS(klass);
  gobject_class->set_property = compress_set_property;
  gobject_class->get_property = compress_get_property;
  gobject_class->finalize = compress_finalize;
  const GParamFlags flags = GParamFlags(G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY);
  const cs::sar::WindowSpec d;
  g_object_class_install_property(
      gobject_class, PROP_WINDOW,
      g_param_spec_enum("window", "Window",
                        "Spectral weighting across the band: trades peak sidelobe level for a wider mainlobe",
                        GST_TYPE_SAR_WINDOW, GST_SAR_WINDOW_NONE, flags));
  g_object_class_install_property(
      gobject_class, PROP_TAYLOR_NBAR,
      g_param_spec_int("taylor-nbar", "Taylor nbar", "Taylor window: number of nearly equal sidelobes next to the "
                       "mainlobe", 1, cs::sar::kMaxTaylorTerms, d.taylor_nbar, flags));
  g_object_class_install_property(
      gobject_class, PROP_TAYLOR_SLL,
      g_param_spec_double("taylor-sll", "Taylor sidelobe level",
                          "Taylor window: peak sidelobe level in dB relative to the peak (e.g. -35)", -200.0, -1.0,
                          d.taylor_sll_db, flags));
  g_object_class_install_property(
      gobject_class, PROP_KAISER_BETA,
      g_param_spec_double("kaiser-beta", "Kaiser beta",
                          "Kaiser window: shape parameter beta (0 = rectangular; 6 gives about -44 dB sidelobes)", 0.0,
                          50.0, d.kaiser_beta, flags));
  g_object_class_install_property(
      gobject_class, PROP_UPSAMPLE,
      g_param_spec_int("upsample", "Range upsampling",
                       "Output range bins per input sample spacing, by zero-padding the spectrum (interpolation "
                       "error of later backprojection falls about 12 dB per doubling)",
                       1, 16, 1, flags));
  g_object_class_install_property(
      gobject_class, PROP_REFERENCE_LOCATION,
      g_param_spec_string("reference-location", "Reference waveform file",
                          "Time domain: a measured reference waveform to compress against instead of the caps' "
                          "chirp: raw complex float32 pairs (host byte order) at the stream's sample rate, its "
                          "middle sample (size/2) at the echo delay; unset = the ideal chirp from chirp-rate and "
                          "chirp-duration",
                          nullptr, flags));
  g_object_class_install_property(
      gobject_class, PROP_REFERENCE_FILTER,
      g_param_spec_enum("reference-filter", "Reference filter",
                        "Time domain: how the reference spectrum becomes the filter", reference_filter_get_type(),
                        FILTER_EQUALIZED, flags));
  gst_element_class_add_static_pad_template(element_class, &sink_template);
  gst_element_class_add_static_pad_template(element_class, &src_template);
  gst_element_class_set_static_metadata(
      element_class, "SAR pulse compression", "Filter/Converter/Radar",
      "Range-compresses blocks of SAR pulses (time domain: matched filtering of the chirp; frequency domain: "
      "windowed inverse FFT) into range profiles aligned to each pulse's reference range, with windows and 1-16x "
      "upsampling; cuFFT on CUDA, FFTW on the CPU",
      "gst-cuda-sensing developers");
  trans_class->transform_caps = compress_transform_caps;
  trans_class->set_caps = compress_set_caps;
  trans_class->prepare_output_buffer = compress_prepare_output_buffer;
  trans_class->transform = compress_transform;
  cs_class->start_backend = compress_start;
  cs_class->stop_backend = compress_stop;
  gst_type_mark_as_plugin_api(GST_TYPE_SAR_WINDOW, GstPluginAPIFlags(0));
  gst_type_mark_as_plugin_api(reference_filter_get_type(), GstPluginAPIFlags(0));
  GST_DEBUG_CATEGORY_INIT(gst_sar_pulse_compress_debug, "sarpulsecompress", 0, "SAR pulse compression");
}

static void gst_sar_pulse_compress_init(GstSarPulseCompress *self) {
  const cs::sar::WindowSpec d;
  self->window = GST_SAR_WINDOW_NONE;
  self->taylor_nbar = d.taylor_nbar;
  self->taylor_sll = d.taylor_sll_db;
  self->kaiser_beta = d.kaiser_beta;
  self->upsample = 1;
  self->reference_filter = FILTER_EQUALIZED;
}
