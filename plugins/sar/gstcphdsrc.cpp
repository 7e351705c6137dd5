/* cphdsrc: streams the pulses of one channel of an NGA CPHD 1.0/1.1 file.
 *
 * The reader (cs::sar::CphdReader) validates the header, XML and every size
 * and offset before reading; what it rejects becomes an element error whose
 * text names the field and its byte offset. Samples go out as complex int16
 * (CF "CI16") when the file stores CI4, with each pulse's AmpSF in the pulse
 * meta; CF8 and CI2 files go out as complex float32 with AmpSF already
 * applied (the meta's amp_sf is then 1). Buffer times are TxTime from the
 * channel's first vector; the element answers DURATION and seeks in TIME to
 * the first vector transmitted at or after the seek position (refused, with a
 * warning, where TxTime is not finite and non-decreasing), and by vector
 * (pulse) index in GST_FORMAT_DEFAULT; a seek's stop ends the stream before
 * that vector (in time: before the first vector at or after the stop, the
 * last block cut there); POSITION, DURATION, SEEKING and CONVERT answer in
 * both.
 * Vectors are read forwards only: a negative rate is refused. */
#include "gstcphdsrc.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <optional>
#include <string>

#include "../core/gstcs-cxx.h"
#include "sar-common.h"
#include "sar/cphd.h"
#include "gstcs-cxx.h"

GST_DEBUG_CATEGORY_STATIC(gst_cphd_src_debug);
#define GST_CAT_DEFAULT gst_cphd_src_debug

using cs::sar::Domain;
using cs::sar::SampleFormat;

namespace {
struct ReaderState {
  std::unique_ptr<cs::sar::CphdReader> reader;
  size_t channel = 0;
  int64_t num_vectors = 0;
  double first_tx_time = 0;
  double last_tx_time = 0;
  gstsar::PhaseHistoryFormat format;
  // The first vector whose TxTime is not finite or is below the previous
  // one's, -1 when none: read at the first lookup by time (tx_time_disorder).
  std::optional<int64_t> tx_time_disorder;
};
}  // namespace

struct _GstCphdSrc {
  GstPushSrc parent;
  gchar *location;
  gchar *channel;
  guint pulses_per_buffer;
  guint read_threads;  // 0 = automatic (CphdReader::set_read_threads)
  gboolean custom_meta;  // also attach the pulses as a GstCustomMeta
  gint64 next_pulse;  // object lock (position queries read it)
  gint64 stop_pulse;  // the vector after the last one to push (num_vectors: to the end)
  // A seek by vector: its range, from prepare_seek_segment to do_seek.
  bool pulse_seek_pending;
  gint64 pulse_seek_first, pulse_seek_stop;
  ReaderState *state;
  GstBufferPool *pool;  // blocks of pulses-per-buffer vectors (gstcs::new_source_pool)
};

G_DEFINE_TYPE(GstCphdSrc, gst_cphd_src, GST_TYPE_PUSH_SRC)
GST_ELEMENT_REGISTER_DEFINE(cphdsrc, "cphdsrc", GST_RANK_NONE, GST_TYPE_CPHD_SRC)

static GstStaticPadTemplate src_template =
    GST_STATIC_PAD_TEMPLATE("src", GST_PAD_SRC, GST_PAD_ALWAYS,
                            GST_STATIC_CAPS(GST_SAR_PHASE_HISTORY_MEDIA_TYPE ", format=(string){CF32,CI16}, "
                                                                             "domain=(string){time,frequency}"));

enum { PROP_0, PROP_LOCATION, PROP_CHANNEL, PROP_PULSES_PER_BUFFER, PROP_READ_THREADS, PROP_CUSTOM_META };

// The stream description of a channel, from the XML and its first vector.
static gstsar::PhaseHistoryFormat describe_channel(cs::sar::CphdReader &reader, size_t channel) {
  const cs::sar::CphdMetadata &m = reader.metadata();
  const cs::sar::CphdChannel &c = m.channels[channel];
  if (c.num_samples > G_MAXINT) throw cs::sar::CphdError("NumSamples " + std::to_string(c.num_samples) + " is too large to stream");
  const cs::sar::PulseParameters first = reader.read_pvp(channel, 0, 1).at(0);
  gstsar::PhaseHistoryFormat f;
  f.format = m.format == SampleFormat::CI4 ? gstsar::WireFormat::CI16 : gstsar::WireFormat::CF32;
  f.samples_per_pulse = c.num_samples;
  f.domain = m.domain;
  f.phase_sign = m.sgn;
  // Centre and bandwidth: the channel's, else the waveform's, else the first vector's band.
  f.center_frequency_hz = c.fx_c > 0 ? c.fx_c
                          : m.waveform && m.waveform->freq_center_hz > 0 ? m.waveform->freq_center_hz
                                                                          : 0.5 * (first.fx1 + first.fx2);
  f.bandwidth_hz = c.fx_bw > 0 ? c.fx_bw
                   : m.waveform && m.waveform->rf_bandwidth_hz > 0 ? m.waveform->rf_bandwidth_hz
                                                                    : first.fx2 - first.fx1;
  if (m.domain == Domain::TOA) {
    f.sample_rate_hz = m.waveform && m.waveform->sample_rate_hz > 0 ? m.waveform->sample_rate_hz
                       : first.scss > 0                              ? 1.0 / first.scss
                                                                     : 0;
    f.chirp_rate_hz_per_s = m.waveform ? m.waveform->lfm_rate_hz_per_s : 0;
    f.chirp_duration_s = m.waveform ? m.waveform->pulse_length_s : 0;
    f.sample_start_s = first.sc0;
  } else {
    f.frequency_step_hz = first.scss;
  }
  if (!(f.center_frequency_hz > 0) || !(f.bandwidth_hz > 0))
    throw cs::sar::CphdError("channel '" + c.identifier + "' has no positive centre frequency and bandwidth (FxC, FxBW)");
  if (m.domain == Domain::TOA && !(f.sample_rate_hz > 0))
    throw cs::sar::CphdError("channel '" + c.identifier + "' has no sample rate (TxRcv SampleRate or SCSS)");
  if (m.domain == Domain::FX && !(f.frequency_step_hz > 0))
    throw cs::sar::CphdError("channel '" + c.identifier + "' has no positive frequency step (SCSS of vector 0)");
  return f;
}

static void set_next_pulse(GstCphdSrc *self, gint64 pulse) {
  GST_OBJECT_LOCK(self);
  self->next_pulse = pulse;
  GST_OBJECT_UNLOCK(self);
}

static gboolean cphd_src_start(GstBaseSrc *src) {
  auto *self = GST_CPHD_SRC(src);
  GST_OBJECT_LOCK(self);
  const std::string location = self->location ? self->location : "";
  const std::string channel = self->channel ? self->channel : "0";
  const int read_threads = int(self->read_threads);
  GST_OBJECT_UNLOCK(self);
  if (location.empty()) {
    GST_ELEMENT_ERROR(self, RESOURCE, NOT_FOUND, ("No file name given: set the location property"), (nullptr));
    return FALSE;
  }
  if (!g_file_test(location.c_str(), G_FILE_TEST_IS_REGULAR)) {
    GST_ELEMENT_ERROR(self, RESOURCE, NOT_FOUND, ("CPHD file '%s' does not exist or is not a file", location.c_str()),
                      (nullptr));
    return FALSE;
  }
  try {
    auto st = std::make_unique<ReaderState>();
    st->reader = std::make_unique<cs::sar::CphdReader>(location);
    st->reader->set_read_threads(read_threads);
    st->channel = st->reader->metadata().channel_index(channel);
    st->num_vectors = st->reader->metadata().channels[st->channel].num_vectors;
    st->format = describe_channel(*st->reader, st->channel);
    st->first_tx_time = st->reader->read_pvp(st->channel, 0, 1).at(0).tx_time;
    st->last_tx_time = st->reader->read_pvp(st->channel, st->num_vectors - 1, 1).at(0).tx_time;
    GST_INFO_OBJECT(self, "'%s' channel %zu: %" G_GINT64_FORMAT " vectors of %" G_GINT64_FORMAT " samples (%s, %s)",
                    location.c_str(), st->channel, st->num_vectors, st->format.samples_per_pulse,
                    cs::sar::to_string(st->reader->metadata().format), cs::sar::to_string(st->reader->metadata().domain));
    self->state = st.release();
  } catch (const std::exception &e) {
    GST_ELEMENT_ERROR(self, STREAM, DECODE, ("Cannot read CPHD file '%s': %s", location.c_str(), e.what()),
                      (nullptr));
    return FALSE;
  }
  set_next_pulse(self, 0);
  self->stop_pulse = G_MAXINT64;
  self->pulse_seek_pending = false;
  return TRUE;
}

static gboolean cphd_src_decide_allocation(GstBaseSrc *src, GstQuery *query) {
  auto *self = GST_CPHD_SRC(src);
  if (!GST_BASE_SRC_CLASS(gst_cphd_src_parent_class)->decide_allocation(src, query)) return FALSE;
  gstcs::drop_pool(&self->pool);
  if (self->state) {  // blocks of pulses-per-buffer vectors, or of the whole channel when it has fewer
    const int64_t pulses = std::min<int64_t>(self->pulses_per_buffer, self->state->num_vectors);
    self->pool = gstcs::new_source_pool(src, query, size_t(pulses) * self->state->format.bytes_per_pulse());
  }
  return TRUE;
}

static gboolean cphd_src_stop(GstBaseSrc *src) {
  auto *self = GST_CPHD_SRC(src);
  gstcs::drop_pool(&self->pool);
  delete self->state;
  self->state = nullptr;
  return TRUE;
}

static gboolean cphd_src_negotiate(GstBaseSrc *src) {
  auto *self = GST_CPHD_SRC(src);
  if (!self->state) return FALSE;
  GstCaps *caps = gstsar::phase_history_caps(self->state->format);
  const gboolean ok = gst_base_src_set_caps(src, caps);
  if (!ok && !GST_PAD_IS_FLUSHING(GST_BASE_SRC_PAD(src))) {  // flushing: stopping, not refused
    gchar *text = gst_caps_to_string(caps);
    GST_ELEMENT_ERROR(self, CORE, NEGOTIATION, ("Downstream does not accept the CPHD channel's stream"),
                      ("cphdsrc produces %s", text));
    g_free(text);
  }
  gst_caps_unref(caps);
  return ok;
}

// Stream time of a vector: its TxTime from the channel's first one.
static double stream_time_s(ReaderState *st, int64_t vector) {
  return st->reader->read_pvp(st->channel, vector, 1).at(0).tx_time - st->first_tx_time;
}

// Duration: the last vector's time plus one mean pulse interval.
static bool duration_time(const ReaderState *st, gint64 *out) {
  const double span = st->last_tx_time - st->first_tx_time;
  if (!std::isfinite(span) || span < 0) return false;
  const double interval = st->num_vectors > 1 ? span / double(st->num_vectors - 1) : 0.0;
  *out = gint64(std::llround((span + interval) * GST_SECOND));
  return true;
}

// Stream time in nanoseconds of a transmit time `seconds` after the
// channel's first; none for times that are not finite or go back before it.
static bool time_after_first(double seconds, gint64 *out) {
  if (!std::isfinite(seconds) || seconds < 0) return false;
  *out = gint64(std::llround(seconds * GST_SECOND));
  return true;
}

// Stream time of vector `vector` (the duration for the one past the last).
static bool vector_time(ReaderState *st, int64_t vector, gint64 *out) {
  if (vector >= st->num_vectors) return duration_time(st, out);
  return time_after_first(stream_time_s(st, vector), out);
}

static GstFlowReturn cphd_src_create(GstPushSrc *src, GstBuffer **out) {
  auto *self = GST_CPHD_SRC(src);
  ReaderState *st = self->state;
  if (!st) return GST_FLOW_NOT_NEGOTIATED;
  const gint64 end = std::min(st->num_vectors, self->stop_pulse);
  if (self->next_pulse >= end) return GST_FLOW_EOS;
  GST_OBJECT_LOCK(self);
  const gint64 count = std::min<gint64>(self->pulses_per_buffer, end - self->next_pulse);
  const bool custom_meta = self->custom_meta;
  GST_OBJECT_UNLOCK(self);
  const gint64 first = self->next_pulse;
  GstBuffer *buf = nullptr;
  try {
    buf = gstcs::acquire_source_buffer(GST_BASE_SRC(src), self->pool,
                                       static_cast<size_t>(count) * st->format.bytes_per_pulse());
    if (!buf) return GST_FLOW_ERROR;  // the error is posted
    // The block's parameters and, where there is one, the next vector's, whose time ends the block.
    const bool next_in_file = first + count < st->num_vectors;
    std::vector<cs::sar::PulseParameters> pvp =
        st->reader->read_pvp(st->channel, first, count + (next_in_file ? 1 : 0));
    const double next_tx_time = next_in_file ? pvp.back().tx_time : 0.0;
    if (next_in_file) pvp.pop_back();
    GstMapInfo map;
    gst_buffer_map(buf, &map, GST_MAP_WRITE);
    try {
      if (st->format.format == gstsar::WireFormat::CI16) {
        st->reader->read_signal_raw(st->channel, first, count, map.data);
      } else {
        st->reader->read_signal(st->channel, first, count, reinterpret_cast<std::complex<float> *>(map.data), true);
        for (auto &p : pvp) p.amp_sf = 1.0;  // applied to the samples
      }
    } catch (...) {
      gst_buffer_unmap(buf, &map);
      throw;
    }
    gst_buffer_unmap(buf, &map);
    gstsar::attach_pulses(buf, guint64(first), pvp.data(), guint(count), custom_meta);
    // Time from the channel's first transmit time, lasting until the next
    // block's (the last block: until the stream's duration).
    gint64 block_start, next_start;
    if (time_after_first(pvp.front().tx_time - st->first_tx_time, &block_start)) {
      GST_BUFFER_PTS(buf) = GstClockTime(block_start);
      const bool ends = next_in_file ? time_after_first(next_tx_time - st->first_tx_time, &next_start)
                                     : duration_time(st, &next_start);
      if (ends && next_start >= block_start) GST_BUFFER_DURATION(buf) = GstClockTime(next_start - block_start);
    }
    GST_BUFFER_OFFSET(buf) = guint64(first);
    GST_BUFFER_OFFSET_END(buf) = guint64(first + count);
  } catch (const std::exception &e) {
    if (buf) gst_buffer_unref(buf);
    GST_ELEMENT_ERROR(self, STREAM, DECODE,
                      ("Cannot read vectors %" G_GINT64_FORMAT "..%" G_GINT64_FORMAT " of '%s': %s", first,
                       first + count - 1, self->location, e.what()),
                      (nullptr));
    return GST_FLOW_ERROR;
  }
  set_next_pulse(self, first + count);
  *out = buf;
  return GST_FLOW_OK;
}

// The first vector whose TxTime breaks the order that lookups by time rely
// on (finite, non-decreasing), or -1; the channel's PVP are read once.
static int64_t tx_time_disorder(ReaderState *st) {
  if (st->tx_time_disorder) return *st->tx_time_disorder;
  constexpr int64_t kChunk = 65536;
  int64_t found = -1;
  double previous = -INFINITY;
  for (int64_t first = 0; first < st->num_vectors && found < 0; first += kChunk) {
    const std::vector<cs::sar::PulseParameters> pvp =
        st->reader->read_pvp(st->channel, first, std::min(kChunk, st->num_vectors - first));
    for (size_t i = 0; i < pvp.size() && found < 0; ++i) {
      if (!std::isfinite(pvp[i].tx_time) || pvp[i].tx_time < previous) found = first + int64_t(i);
      previous = pvp[i].tx_time;
    }
  }
  st->tx_time_disorder = found;
  return found;
}

// The first vector transmitted at or after `seconds` of stream time, found
// by bisection (callers check tx_time_disorder first).
static int64_t first_vector_at(ReaderState *st, double seconds) {
  int64_t lo = 0, hi = st->num_vectors;  // the vector lies in [lo, hi]
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (stream_time_s(st, mid) < seconds - 1e-12)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

// Vectors (GST_FORMAT_DEFAULT) and stream time: position, duration,
// seeking and conversions (seeks by vector go through those).
static gboolean cphd_src_query(GstBaseSrc *src, GstQuery *query) {
  auto *self = GST_CPHD_SRC(src);
  ReaderState *st = self->state;
  if (!st) return GST_BASE_SRC_CLASS(gst_cphd_src_parent_class)->query(src, query);
  gstcs::SourceUnits units;
  units.total = st->num_vectors;
  GST_OBJECT_LOCK(self);
  units.position = self->next_pulse;
  GST_OBJECT_UNLOCK(self);
  // Reading a vector's parameters can fail (a damaged file): no answer then.
  units.to_time = [&](gint64 vector, gint64 *time) {
    try {
      return vector_time(st, vector, time);
    } catch (const std::exception &e) {
      GST_WARNING_OBJECT(self, "no time for vector %" G_GINT64_FORMAT ": %s", vector, e.what());
      return false;
    }
  };
  units.to_unit = [&](gint64 time, gint64 *vector) {
    try {
      if (tx_time_disorder(st) >= 0) return false;
      *vector = first_vector_at(st, double(time) / GST_SECOND);
      return true;
    } catch (const std::exception &e) {
      GST_WARNING_OBJECT(self, "no vector at %" GST_TIME_FORMAT ": %s", GST_TIME_ARGS(time), e.what());
      return false;
    }
  };
  if (gstcs::answer_unit_query(query, units)) return TRUE;
  return GST_BASE_SRC_CLASS(gst_cphd_src_parent_class)->query(src, query);
}

static gboolean cphd_src_is_seekable(GstBaseSrc *src) {
  ReaderState *st = GST_CPHD_SRC(src)->state;
  return st && st->last_tx_time >= st->first_tx_time;
}

// A seek by vector: the segment in time from that vector's transmit time
// (and to the stop vector's), the vectors kept for do_seek so that vectors
// of equal times cannot shift it. Time seeks go to the base class.
static gboolean cphd_src_prepare_seek_segment(GstBaseSrc *src, GstEvent *seek, GstSegment *segment) {
  auto *self = GST_CPHD_SRC(src);
  const std::optional<gstcs::SeekRequest> r = gstcs::forward_seek(GST_ELEMENT(self), seek, "vectors");
  if (!r) return FALSE;
  ReaderState *st = self->state;
  if (r->format != GST_FORMAT_DEFAULT || !st)
    return GST_BASE_SRC_CLASS(gst_cphd_src_parent_class)->prepare_seek_segment(src, seek, segment);
  const gint64 first = gstcs::unit_seek_position(r->start_type, r->start, st->num_vectors, 0);
  const gint64 stop_vector = gstcs::unit_seek_position(r->stop_type, r->stop, st->num_vectors,
                                                       std::min(self->stop_pulse, st->num_vectors));
  if (first > stop_vector) {
    GST_WARNING_OBJECT(self, "cannot seek from vector %" G_GINT64_FORMAT " to %" G_GINT64_FORMAT, first, stop_vector);
    return FALSE;
  }
  gint64 start_time = 0, stop_time = -1;
  try {
    if (!vector_time(st, first, &start_time)) return FALSE;
    if (stop_vector < st->num_vectors && !vector_time(st, stop_vector, &stop_time)) return FALSE;
  } catch (const std::exception &e) {
    GST_ELEMENT_ERROR(self, STREAM, DECODE, ("Cannot seek in '%s': %s", self->location, e.what()), (nullptr));
    return FALSE;
  }
  gst_segment_do_seek(segment, r->rate, GST_FORMAT_TIME, r->flags, GST_SEEK_TYPE_SET, start_time, GST_SEEK_TYPE_SET,
                      stop_time, nullptr);  // stop -1: to the end
  self->pulse_seek_first = first;
  self->pulse_seek_stop = stop_vector;
  self->pulse_seek_pending = true;
  return TRUE;
}

// Whether `seek` is refused (with the reason said). Checked before the base
// class flushes for it: it asks prepare_seek_segment only about seeks in
// another format than the segment's (time), and after flushing.
static bool cphd_src_seek_refused(GstElement *element, GstEvent *seek) {
  auto *self = GST_CPHD_SRC(element);
  const std::optional<gstcs::SeekRequest> r = gstcs::forward_seek(element, seek, "vectors");
  if (!r) return true;
  ReaderState *st = self->state;
  if (!st || r->format != GST_FORMAT_TIME) return false;
  int64_t disorder = -1;
  try {
    disorder = tx_time_disorder(st);
  } catch (const std::exception &e) {
    GST_ELEMENT_ERROR(self, STREAM, DECODE, ("Cannot seek in '%s': %s", self->location, e.what()), (nullptr));
    return true;
  }
  if (disorder < 0) return false;
  // A bisection on TxTime would land anywhere.
  GST_ELEMENT_WARNING(self, STREAM, DECODE,
                      ("Cannot seek in time in '%s': TxTime of vector %" G_GINT64_FORMAT
                       " is not finite or is earlier than the vector before",
                       self->location, disorder),
                      ("seek by vector (GST_FORMAT_DEFAULT) instead"));
  return true;
}

static gboolean cphd_src_do_seek(GstBaseSrc *src, GstSegment *segment) {
  auto *self = GST_CPHD_SRC(src);
  ReaderState *st = self->state;
  if (!st) return FALSE;
  gint64 first = 0, stop = G_MAXINT64;
  if (self->pulse_seek_pending) {
    first = self->pulse_seek_first;
    stop = self->pulse_seek_stop;
    self->pulse_seek_pending = false;
  } else if (segment->start > 0 || GST_CLOCK_TIME_IS_VALID(segment->stop)) {
    // A time seek that cphd_src_seek_refused let through: the vectors from
    // the first at or after the start to the last before the stop (blocks
    // are cut there, as by vector).
    try {
      if (segment->start > 0) first = first_vector_at(st, double(segment->start) / GST_SECOND);
      if (GST_CLOCK_TIME_IS_VALID(segment->stop)) stop = first_vector_at(st, double(segment->stop) / GST_SECOND);
    } catch (const std::exception &e) {
      GST_ELEMENT_ERROR(self, STREAM, DECODE, ("Cannot seek in '%s': %s", self->location, e.what()), (nullptr));
      return FALSE;
    }
  }
  set_next_pulse(self, first);
  self->stop_pulse = stop;
  segment->time = segment->start;
  GST_DEBUG_OBJECT(self, "seek to %" GST_TIME_FORMAT ": vectors from %" G_GINT64_FORMAT " to %" G_GINT64_FORMAT,
                   GST_TIME_ARGS(segment->start), first, stop);
  return TRUE;
}

static void cphd_src_set_property(GObject *object, guint prop_id, const GValue *value, GParamSpec *pspec) {
  if (!gstcs::property_change_allowed(object, pspec)) return;
  auto *self = GST_CPHD_SRC(object);
  GST_OBJECT_LOCK(self);
  switch (prop_id) {
    case PROP_LOCATION:
      g_free(self->location);
      self->location = g_value_dup_string(value);
      break;
    case PROP_CHANNEL:
      g_free(self->channel);
      self->channel = g_value_dup_string(value);
      break;
    case PROP_PULSES_PER_BUFFER: self->pulses_per_buffer = g_value_get_uint(value); break;
    case PROP_READ_THREADS: self->read_threads = g_value_get_uint(value); break;
    case PROP_CUSTOM_META: self->custom_meta = g_value_get_boolean(value); break;
    default: G_OBJECT_WARN_INVALID_PROPERTY_ID(object, prop_id, pspec);
  }
  GST_OBJECT_UNLOCK(self);
}

static void cphd_src_get_property(GObject *object, guint prop_id, GValue *value, GParamSpec *pspec) {
  auto *self = GST_CPHD_SRC(object);
  GST_OBJECT_LOCK(self);
  switch (prop_id) {
    case PROP_LOCATION: g_value_set_string(value, self->location); break;
    case PROP_CHANNEL: g_value_set_string(value, self->channel); break;
    case PROP_PULSES_PER_BUFFER: g_value_set_uint(value, self->pulses_per_buffer); break;
    case PROP_READ_THREADS: g_value_set_uint(value, self->read_threads); break;
    case PROP_CUSTOM_META: g_value_set_boolean(value, self->custom_meta); break;
    default: G_OBJECT_WARN_INVALID_PROPERTY_ID(object, prop_id, pspec);
  }
  GST_OBJECT_UNLOCK(self);
}

static void cphd_src_finalize(GObject *object) {
  auto *self = GST_CPHD_SRC(object);
  g_free(self->location);
  g_free(self->channel);
  gstcs::drop_pool(&self->pool);
  delete self->state;
  G_OBJECT_CLASS(gst_cphd_src_parent_class)->finalize(object);
}

static void gst_cphd_src_class_init(GstCphdSrcClass *klass) {
  GObjectClass *gobject_class = G_OBJECT_CLASS(klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS(klass);
  GstBaseSrcClass *src_class = GST_BASE_SRC_CLASS(klass);
  gobject_class->set_property = cphd_src_set_property;
  gobject_class->get_property = cphd_src_get_property;
  gobject_class->finalize = cphd_src_finalize;
  const GParamFlags flags = GParamFlags(G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY);
  g_object_class_install_property(
      gobject_class, PROP_LOCATION,
      g_param_spec_string("location", "File location", "Path of the CPHD 1.0 or 1.1 file to read", nullptr, flags));
  g_object_class_install_property(
      gobject_class, PROP_CHANNEL,
      g_param_spec_string("channel", "Channel",
                          "Channel to stream: its Identifier in the XML, or its 0-based index (\"0\" = first)", "0",
                          flags));
  g_object_class_install_property(
      gobject_class, PROP_PULSES_PER_BUFFER,
      g_param_spec_uint("pulses-per-buffer", "Pulses per buffer",
                        "Vectors (pulses) in each output buffer; the last buffer may hold fewer", 1, 1 << 20, 64,
                        flags));
  g_object_class_install_property(gobject_class, PROP_READ_THREADS, gstcs::read_threads_param_spec(flags));
  g_object_class_install_property(gobject_class, PROP_CUSTOM_META, gstsar::pulse_custom_meta_param_spec(flags));
  gst_element_class_add_static_pad_template(element_class, &src_template);
  gst_element_class_set_static_metadata(
      element_class, "CPHD file source", "Source/File/Radar",
      "Reads NGA CPHD 1.0/1.1 phase history (CF8, CI4, CI2; FX or TOA domain) and streams one channel in blocks "
      "of pulses with per-pulse parameters (GstSarPulseMeta); CI4 comes out as CI16, CF8 and CI2 as CF32 with "
      "AmpSF applied; seekable by transmit time and by vector (GST_FORMAT_DEFAULT); malformed files are errors "
      "naming the field and byte offset",
      "gst-cuda-sensing developers");
  src_class->start = cphd_src_start;
  src_class->stop = cphd_src_stop;
  src_class->negotiate = cphd_src_negotiate;
  src_class->decide_allocation = cphd_src_decide_allocation;
  src_class->query = cphd_src_query;
  src_class->is_seekable = cphd_src_is_seekable;
  gstcs::SourceSeekCheck<cphd_src_seek_refused>::install(src_class, gst_cphd_src_parent_class);
  src_class->prepare_seek_segment = cphd_src_prepare_seek_segment;
  src_class->do_seek = cphd_src_do_seek;
  GST_PUSH_SRC_CLASS(klass)->create = cphd_src_create;
  GST_DEBUG_CATEGORY_INIT(gst_cphd_src_debug, "cphdsrc", 0, "CPHD file source");
}

static void gst_cphd_src_init(GstCphdSrc *self) {
  self->channel = g_strdup("0");
  self->pulses_per_buffer = 64;
  self->stop_pulse = G_MAXINT64;
  gst_base_src_set_format(GST_BASE_SRC(self), GST_FORMAT_TIME);
}
