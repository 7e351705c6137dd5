/* cphdsink: records a phase-history stream as an NGA CPHD 1.0.1 file.
 *
 * One channel; CF32 input is written as CF8, CI16 as CI4 (as is, AmpSF from
 * the pulse meta). Every CPHD 1.0 per-vector parameter is written (the
 * optional AmpSF, FXN1/2, TOAE1/2, TDIonoSRP and SIGNAL too), so a stream
 * read back by cphdsrc has the same parameters. The file is finished at
 * end-of-stream (or when the element stops): XML fields that follow from the
 * data (TxTime1/2, FxMin/Max, reference geometry...) are written then. */
#include "gstcphdsink.h"

#include <fcntl.h>
#include <glib/gstdio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <memory>
#include <string>

#include "sar-common.h"
#include "sar/cphd.h"
#include "sar/geodesy.h"
#include "gstcs-cxx.h"

GST_DEBUG_CATEGORY_STATIC(gst_cphd_sink_debug);
#define GST_CAT_DEFAULT gst_cphd_sink_debug

using cs::sar::Domain;

namespace {
constexpr gint64 kDefaultMaxPulses = 65536;

struct WriterState {
  gstsar::PhaseHistoryFormat format;
  bool have_format = false;
  std::unique_ptr<cs::sar::CphdWriter> writer;
  double last_tx_time = -INFINITY;  // of the last vector written
  bool said_out_of_order = false;
  bool finished = false;            // at EOS; stopping then has nothing more to do
  bool said_format_change = false;  // upstream may offer the changed caps again: one error
};
}  // namespace

struct _GstCphdSink {
  GstBaseSink parent;
  gchar *location;
  gint64 max_pulses;
  WriterState *state;
};

G_DEFINE_TYPE(GstCphdSink, gst_cphd_sink, GST_TYPE_BASE_SINK)
GST_ELEMENT_REGISTER_DEFINE(cphdsink, "cphdsink", GST_RANK_NONE, GST_TYPE_CPHD_SINK)

static GstStaticPadTemplate sink_template =
    GST_STATIC_PAD_TEMPLATE("sink", GST_PAD_SINK, GST_PAD_ALWAYS,
                            GST_STATIC_CAPS(GST_SAR_PHASE_HISTORY_MEDIA_TYPE ", format=(string){CF32,CI16}, "
                                                                             "domain=(string){time,frequency}"));

enum { PROP_0, PROP_LOCATION, PROP_MAX_PULSES };

static cs::sar::CphdMetadata metadata_for(const gstsar::PhaseHistoryFormat &f, const GstSarPulseParameters &first,
                                          gint64 max_pulses) {
  cs::sar::CphdMetadata m;
  m.version = "1.0.1";
  m.core_name = "GSTREAMER";
  m.domain = f.domain;
  m.sgn = f.phase_sign;
  m.format = f.format == gstsar::WireFormat::CI16 ? cs::sar::SampleFormat::CI4 : cs::sar::SampleFormat::CF8;
  using cs::sar::Pvp;
  m.pvp = cs::sar::PvpLayout::packed(
      {Pvp::AmpSF, Pvp::FXN1, Pvp::FXN2, Pvp::TOAE1, Pvp::TOAE2, Pvp::TDIonoSRP, Pvp::SIGNAL});
  cs::sar::CphdChannel channel;
  channel.identifier = "1";
  channel.num_vectors = max_pulses;
  channel.num_samples = f.samples_per_pulse;
  m.channels.push_back(channel);
  if (f.domain == Domain::TOA) {
    cs::sar::CphdWaveform w;
    w.pulse_length_s = f.chirp_duration_s;
    w.rf_bandwidth_hz = f.bandwidth_hz;
    w.freq_center_hz = f.center_frequency_hz;
    w.lfm_rate_hz_per_s = f.chirp_rate_hz_per_s;
    w.rcv_window_length_s = static_cast<double>(f.samples_per_pulse) / f.sample_rate_hz;
    w.sample_rate_hz = f.sample_rate_hz;
    w.if_filter_bw_hz = f.sample_rate_hz;
    m.waveform = w;
  }
  // The image area: around the first pulse's scene reference point, in its local tangent plane.
  const cs::sar::Vec3 srp{first.srp_pos[0], first.srp_pos[1], first.srp_pos[2]};
  m.scene.iarp_ecf = srp;
  if (cs::sar::norm(srp) > 1e6) {  // an Earth-centred position: axes east and north
    const cs::sar::EnuFrame frame(cs::sar::ecf_to_llh(srp));
    m.scene.uiax = frame.east();
    m.scene.uiay = frame.north();
  }
  return m;
}

// Whether `location` opens for writing (errno says why not); a file this
// creates is removed again. Opening tells what access() does not: a file
// system that refuses files (/proc), or a read-only one when run as root.
static bool can_write(const char *location, bool exists) {
  const int fd = g_open(location, O_WRONLY | O_CREAT, 0666);
  if (fd < 0) return false;
  close(fd);
  if (!exists) g_unlink(location);
  return true;
}

static gboolean cphd_sink_start(GstBaseSink *sink) {
  auto *self = GST_CPHD_SINK(sink);
  if (!self->location || !*self->location) {
    GST_ELEMENT_ERROR(self, RESOURCE, NOT_FOUND, ("No file name given: set the location property"), (nullptr));
    return FALSE;
  }
  // The file is written once the caps are known; a location it could not be written to fails here, at the
  // state change, as with filesink, rather than at the first pulses. Nothing is created yet.
  const bool exists = g_file_test(self->location, G_FILE_TEST_EXISTS);
  gchar *folder = g_path_get_dirname(self->location);
  const char *refused = nullptr;
  if (exists && g_file_test(self->location, G_FILE_TEST_IS_DIR))
    refused = "it is a directory";
  else if (!g_file_test(folder, G_FILE_TEST_IS_DIR))
    refused = "its folder does not exist";
  else if (!can_write(self->location, exists))
    refused = g_strerror(errno);
  g_free(folder);
  if (refused) {
    GST_ELEMENT_ERROR(self, RESOURCE, OPEN_WRITE, ("Cannot write CPHD file '%s': %s", self->location, refused),
                      (nullptr));
    return FALSE;
  }
  self->state = new WriterState();
  return TRUE;
}

// Finishes the file; errors become element errors.
static gboolean finish_file(GstCphdSink *self) {
  WriterState *st = self->state;
  if (!st || st->finished) return TRUE;
  st->finished = true;
  if (!st->writer) {  // a CPHD file holds at least one vector: none is made, and the user is told
    GST_ELEMENT_WARNING(self, RESOURCE, WRITE, ("No pulses arrived: no CPHD file written to '%s'", self->location),
                        (nullptr));
    return TRUE;
  }
  try {
    st->writer->close();
    GST_INFO_OBJECT(self, "wrote %" G_GINT64_FORMAT " vectors to '%s'", st->writer->vectors_written(0),
                    self->location);
    st->writer.reset();
  } catch (const std::exception &e) {
    st->writer.reset();
    GST_ELEMENT_ERROR(self, RESOURCE, WRITE, ("Cannot finish CPHD file '%s': %s", self->location, e.what()),
                      (nullptr));
    return FALSE;
  }
  return TRUE;
}

static gboolean cphd_sink_stop(GstBaseSink *sink) {
  auto *self = GST_CPHD_SINK(sink);
  const gboolean ok = finish_file(self);
  delete self->state;
  self->state = nullptr;
  return ok;
}

static gboolean cphd_sink_set_caps(GstBaseSink *sink, GstCaps *caps) {
  auto *self = GST_CPHD_SINK(sink);
  gstsar::PhaseHistoryFormat f;
  std::string why;
  if (!gstsar::parse_phase_history_caps(caps, &f, &why)) {
    GST_ELEMENT_ERROR(self, CORE, NEGOTIATION, ("cphdsink cannot record this stream: %s", why.c_str()), (nullptr));
    return FALSE;
  }
  if (self->state->writer && (f.format != self->state->format.format ||
                              f.samples_per_pulse != self->state->format.samples_per_pulse ||
                              f.domain != self->state->format.domain)) {
    if (!self->state->said_format_change)
      GST_ELEMENT_ERROR(self, CORE, NEGOTIATION,
                        ("The stream's format changed while recording; a CPHD channel has one format and length"),
                        (nullptr));
    self->state->said_format_change = true;
    return FALSE;
  }
  self->state->format = f;
  self->state->have_format = true;
  return TRUE;
}

static GstFlowReturn cphd_sink_render(GstBaseSink *sink, GstBuffer *buf) {
  auto *self = GST_CPHD_SINK(sink);
  WriterState *st = self->state;
  if (!st->have_format) return GST_FLOW_NOT_NEGOTIATED;
  const size_t bytes_per_pulse = st->format.bytes_per_pulse();
  const gsize size = gst_buffer_get_size(buf);
  if (size == 0 || size % bytes_per_pulse != 0) {
    GST_ELEMENT_ERROR(self, STREAM, FORMAT,
                      ("Buffer of %" G_GSIZE_FORMAT " bytes is not a whole number of pulses of %zu bytes", size,
                       bytes_per_pulse),
                      (nullptr));
    return GST_FLOW_ERROR;
  }
  const guint pulses = guint(size / bytes_per_pulse);
  const GstSarPulseMeta *meta = gst_buffer_get_sar_pulse_meta(buf);
  if (!meta || meta->n_pulses != pulses) {
    GST_ELEMENT_ERROR(self, STREAM, FORMAT,
                      ("Buffer of %u pulses carries %s: the per-pulse parameters (GstSarPulseMeta) are needed to "
                       "write CPHD",
                       pulses, meta ? "a pulse meta of another length" : "no pulse meta"),
                      (nullptr));
    return GST_FLOW_ERROR;
  }
  guint fits = pulses;  // what the room reserved for max-pulses vectors still takes
  try {
    if (!st->writer) {
      st->writer = std::make_unique<cs::sar::CphdWriter>(self->location,
                                                         metadata_for(st->format, meta->pulses[0], self->max_pulses));
      st->finished = false;  // this file is finished at the next EOS or stop
    }
    fits = guint(std::clamp<gint64>(self->max_pulses - st->writer->vectors_written(0), 0, pulses));
    std::vector<cs::sar::PulseParameters> pvp = gstsar::pulses_of(meta);
    pvp.resize(fits);
    // Vectors are recorded in arrival order, as filesink records a stream in
    // time. After a seek while recording they can go back in time: said once,
    // since readers that look vectors up by time need them in order.
    for (size_t i = 0; i < pvp.size(); ++i) {
      if (pvp[i].tx_time < st->last_tx_time && !st->said_out_of_order) {
        GST_ELEMENT_WARNING(self, STREAM, FORMAT,
                            ("'%s' records its vectors in arrival order: pulse %" G_GUINT64_FORMAT
                             " goes back in time (a seek while recording?); the file's TxTime is no longer in order",
                             self->location, meta->first_pulse + i),
                            ("TxTime %.9f s after %.9f s", pvp[i].tx_time, st->last_tx_time));
        st->said_out_of_order = true;
      }
      st->last_tx_time = pvp[i].tx_time;
    }
    if (fits > 0) {
      GstMapInfo map;
      if (!gst_buffer_map(buf, &map, GST_MAP_READ)) throw std::runtime_error("cannot map the buffer");
      try {
        if (st->format.format == gstsar::WireFormat::CF32)
          st->writer->write(0, pvp, reinterpret_cast<const std::complex<float> *>(map.data));
        else
          st->writer->write_raw(0, pvp, map.data);
      } catch (...) {
        gst_buffer_unmap(buf, &map);
        throw;
      }
      gst_buffer_unmap(buf, &map);
    }
  } catch (const std::exception &e) {
    GST_ELEMENT_ERROR(self, RESOURCE, WRITE,
                      ("Cannot write pulses %" G_GUINT64_FORMAT "..%" G_GUINT64_FORMAT " to '%s': %s",
                       meta->first_pulse, meta->first_pulse + pulses - 1, self->location, e.what()),
                      (nullptr));
    return GST_FLOW_ERROR;
  }
  if (fits < pulses) {  // the file keeps the pulses that fitted, and is finished when the element stops
    GST_ELEMENT_ERROR(self, RESOURCE, NO_SPACE_LEFT,
                      ("'%s' is full: max-pulses=%" G_GINT64_FORMAT " reserved room for that many vectors; pulses %"
                       G_GUINT64_FORMAT "..%" G_GUINT64_FORMAT " are not written",
                       self->location, self->max_pulses, meta->first_pulse + fits, meta->first_pulse + pulses - 1),
                      (nullptr));
    return GST_FLOW_ERROR;
  }
  return GST_FLOW_OK;
}

static gboolean cphd_sink_event(GstBaseSink *sink, GstEvent *event) {
  auto *self = GST_CPHD_SINK(sink);
  if (GST_EVENT_TYPE(event) == GST_EVENT_EOS && !finish_file(self)) {
    gst_event_unref(event);
    return FALSE;
  }
  return GST_BASE_SINK_CLASS(gst_cphd_sink_parent_class)->event(sink, event);
}

static void cphd_sink_set_property(GObject *object, guint prop_id, const GValue *value, GParamSpec *pspec) {
  if (!gstcs::property_change_allowed(object, pspec)) return;
  auto *self = GST_CPHD_SINK(object);
  GST_OBJECT_LOCK(self);
  switch (prop_id) {
    case PROP_LOCATION:
      g_free(self->location);
      self->location = g_value_dup_string(value);
      break;
    case PROP_MAX_PULSES: self->max_pulses = g_value_get_int64(value); break;
    default: G_OBJECT_WARN_INVALID_PROPERTY_ID(object, prop_id, pspec);
  }
  GST_OBJECT_UNLOCK(self);
}

static void cphd_sink_get_property(GObject *object, guint prop_id, GValue *value, GParamSpec *pspec) {
  auto *self = GST_CPHD_SINK(object);
  GST_OBJECT_LOCK(self);
  switch (prop_id) {
    case PROP_LOCATION: g_value_set_string(value, self->location); break;
    case PROP_MAX_PULSES: g_value_set_int64(value, self->max_pulses); break;
    default: G_OBJECT_WARN_INVALID_PROPERTY_ID(object, prop_id, pspec);
  }
  GST_OBJECT_UNLOCK(self);
}

static void cphd_sink_finalize(GObject *object) {
  auto *self = GST_CPHD_SINK(object);
  g_free(self->location);
  delete self->state;
  G_OBJECT_CLASS(gst_cphd_sink_parent_class)->finalize(object);
}

static void gst_cphd_sink_class_init(GstCphdSinkClass *klass) {
  GObjectClass *gobject_class = G_OBJECT_CLASS(klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS(klass);
  GstBaseSinkClass *sink_class = GST_BASE_SINK_CLASS(klass);
  gobject_class->set_property = cphd_sink_set_property;
  gobject_class->get_property = cphd_sink_get_property;
  gobject_class->finalize = cphd_sink_finalize;
  const GParamFlags flags = GParamFlags(G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY);
  g_object_class_install_property(
      gobject_class, PROP_LOCATION,
      g_param_spec_string("location", "File location", "Path of the CPHD file to write (replaced if it exists)",
                          nullptr, flags));
  g_object_class_install_property(
      gobject_class, PROP_MAX_PULSES,
      g_param_spec_int64("max-pulses", "Maximum pulses",
                         "Most pulses the file can take: CPHD puts the per-vector parameters before the signal, "
                         "so room for this many is reserved (272 bytes each); more is an error, and the file "
                         "keeps the pulses that fit",
                         1, G_MAXINT32, kDefaultMaxPulses, flags));
  gst_element_class_add_static_pad_template(element_class, &sink_template);
  gst_element_class_set_static_metadata(
      element_class, "CPHD file sink", "Sink/File/Radar",
      "Records a SAR phase-history stream (CF32 as CF8, CI16 as CI4) with its per-pulse parameters "
      "(GstSarPulseMeta) as a one-channel NGA CPHD 1.0.1 file, finished at end-of-stream",
      "gst-cuda-sensing developers");
  sink_class->start = cphd_sink_start;
  sink_class->stop = cphd_sink_stop;
  sink_class->set_caps = cphd_sink_set_caps;
  sink_class->render = cphd_sink_render;
  sink_class->event = cphd_sink_event;
  GST_DEBUG_CATEGORY_INIT(gst_cphd_sink_debug, "cphdsink", 0, "CPHD file sink");
}

static void gst_cphd_sink_init(GstCphdSink *self) {
  self->max_pulses = kDefaultMaxPulses;
  gst_base_sink_set_sync(GST_BASE_SINK(self), FALSE);
}
