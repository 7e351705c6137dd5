/* envisrc: an ENVI image (header + flat binary file) as a stream of blocks of
 * whole lines in the file's native sample format, byte order and interleave
 * (application/x-hyperspectral). Only the lines of the block being pushed are
 * read, so cubes larger than memory stream. Each buffer carries a
 * GstHsiBlockMeta (first line, line count, scene lines) and the buffer offset
 * fields hold the same line range.
 *
 * Seeking: by line (GST_FORMAT_DEFAULT, the pad's unit) always, and in time
 * when line-duration gives the stream a time axis; a seek's stop ends the
 * stream after that line. Position and duration answer in lines, and in time
 * with line-duration. Lines are read forwards only: a negative rate is
 * refused, as are a start after the stop and, without line-duration, time
 * seeks other than back to the start; before anything is flushed. */
#include "gstenvisrc.h"

#include <algorithm>
#include <memory>
#include <string>

#include "../core/gstcs-cxx.h"
#include "gst/cudasensing/hsi/gsthsiblockmeta.h"
#include "hsi-caps.h"
#include "hsi/envi.h"
#include "gstcs-cxx.h"

GST_DEBUG_CATEGORY_STATIC(gst_envi_src_debug);
#define GST_CAT_DEFAULT gst_envi_src_debug

constexpr guint kDefaultLinesPerBuffer = 64;

struct _GstEnviSrc {
  GstPushSrc parent;
  gchar *location;
  guint lines_per_buffer;
  guint64 line_duration;  // ns per line; 0 = no timestamps
  guint read_threads;     // 0 = automatic (EnviReader::set_read_threads)
  // Streaming state (between start and stop).
  cs::hsi::EnviReader *reader;
  guint64 next_line;  // object lock (position queries read it)
  guint64 stop_line;  // the line after the last one to push (G_MAXUINT64: to the end)
  // A seek by line on a stream without time axis: its lines, from
  // prepare_seek_segment to do_seek (the segment stays in time).
  bool line_seek_pending;
  guint64 line_seek_first, line_seek_stop;
  GstBufferPool *pool;  // blocks of lines-per-buffer lines (gstcs::new_source_pool)
};

G_DEFINE_TYPE(GstEnviSrc, gst_envi_src, GST_TYPE_PUSH_SRC)
GST_ELEMENT_REGISTER_DEFINE(envisrc, "envisrc", GST_RANK_NONE, GST_TYPE_ENVI_SRC)

static GstStaticPadTemplate src_template =
    GST_STATIC_PAD_TEMPLATE("src", GST_PAD_SRC, GST_PAD_ALWAYS, GST_STATIC_CAPS(HSI_CAPS_TEMPLATE));

enum { PROP_0, PROP_LOCATION, PROP_LINES_PER_BUFFER, PROP_LINE_DURATION, PROP_READ_THREADS };

static void set_next_line(GstEnviSrc *self, guint64 line) {
  GST_OBJECT_LOCK(self);
  self->next_line = line;
  GST_OBJECT_UNLOCK(self);
}

static gboolean envi_src_start(GstBaseSrc *base) {
  auto *self = GST_ENVI_SRC(base);
  if (!self->location || !*self->location) {
    GST_ELEMENT_ERROR(self, RESOURCE, NOT_FOUND, ("No file name given"),
                      ("Set the location property to the ENVI header (.hdr) or data file"));
    return FALSE;
  }
  cs::hsi::EnviReader *reader = nullptr;
  try {
    reader = new cs::hsi::EnviReader(self->location);
  } catch (const std::exception &e) {
    GST_ELEMENT_ERROR(self, RESOURCE, OPEN_READ, ("Cannot read the ENVI image %s", self->location),
                      ("%s", e.what()));
    return FALSE;
  }
  const cs::hsi::EnviHeader &h = reader->header();
  // Every line's time, and its time in a seek (signed), within GStreamer's clock.
  if (self->line_duration > 0 && guint64(h.lines) > guint64(G_MAXINT64) / self->line_duration) {
    GST_ELEMENT_ERROR(self, RESOURCE, SETTINGS, ("line-duration is too long for an image of %zu lines", h.lines),
                      ("%zu lines of %" G_GUINT64_FORMAT " ns pass GStreamer's time range (2^63 ns)", h.lines,
                       self->line_duration));
    delete reader;
    return FALSE;
  }
  GST_OBJECT_LOCK(self);
  reader->set_read_threads(int(self->read_threads));
  self->reader = reader;  // get_caps reads it under the lock
  GST_OBJECT_UNLOCK(self);
  if (h.is_spectral_library())
    GST_WARNING_OBJECT(self, "%s is an ENVI spectral library, streamed as an image of %zu lines", self->location,
                       h.lines);
  GST_INFO_OBJECT(self, "%s: %zu samples x %zu lines x %zu bands, %s %s, data in %s", self->location, h.samples,
                  h.lines, h.bands, cs::hsi::data_type_name(h.data_type), cs::hsi::interleave_name(h.interleave),
                  reader->data_path().c_str());
  set_next_line(self, 0);
  self->stop_line = G_MAXUINT64;
  self->line_seek_pending = false;
  return TRUE;
}

// Lines in a block: lines-per-buffer, or the whole image when it has fewer.
static size_t block_lines(const GstEnviSrc *self) {
  return std::max<size_t>(1, std::min<size_t>(self->lines_per_buffer, self->reader->header().lines));
}

static gboolean envi_src_decide_allocation(GstBaseSrc *base, GstQuery *query) {
  auto *self = GST_ENVI_SRC(base);
  if (!GST_BASE_SRC_CLASS(gst_envi_src_parent_class)->decide_allocation(base, query)) return FALSE;
  gstcs::drop_pool(&self->pool);
  self->pool = gstcs::new_source_pool(base, query, self->reader->block_bytes(block_lines(self)));
  return TRUE;
}

static gboolean envi_src_stop(GstBaseSrc *base) {
  auto *self = GST_ENVI_SRC(base);
  gstcs::drop_pool(&self->pool);
  GST_OBJECT_LOCK(self);
  cs::hsi::EnviReader *reader = self->reader;
  self->reader = nullptr;
  GST_OBJECT_UNLOCK(self);
  delete reader;
  return TRUE;
}

static GstCaps *envi_src_get_caps(GstBaseSrc *base, GstCaps *filter) {
  auto *self = GST_ENVI_SRC(base);
  GstCaps *caps;
  GST_OBJECT_LOCK(self);
  if (self->reader) {
    std::string warning;
    caps = hsi_caps::caps_from_header(self->reader->header(), block_lines(self), &warning);
    if (!warning.empty()) GST_WARNING_OBJECT(self, "%s", warning.c_str());
  } else {
    caps = gst_pad_get_pad_template_caps(GST_BASE_SRC_PAD(base));
  }
  GST_OBJECT_UNLOCK(self);
  caps = gstcs::filtered(caps, filter);
  return caps;
}

static GstFlowReturn envi_src_create(GstPushSrc *push, GstBuffer **out) {
  auto *self = GST_ENVI_SRC(push);
  const cs::hsi::EnviHeader &h = self->reader->header();
  const guint64 end = MIN(guint64(h.lines), self->stop_line);
  if (self->next_line >= end) {
    GST_DEBUG_OBJECT(self, "lines up to %" G_GUINT64_FORMAT " of %zu pushed", end, h.lines);
    return GST_FLOW_EOS;
  }
  const guint64 first = self->next_line;
  const size_t count = size_t(MIN(guint64(self->lines_per_buffer), end - first));
  const size_t bytes = self->reader->block_bytes(count);
  GstBuffer *buf = gstcs::acquire_source_buffer(GST_BASE_SRC(push), self->pool, bytes);
  if (!buf) return GST_FLOW_ERROR;  // the error is posted
  GstMapInfo map;
  gst_buffer_map(buf, &map, GST_MAP_WRITE);
  try {
    self->reader->read_lines(size_t(first), count, map.data);
  } catch (const std::exception &e) {
    gst_buffer_unmap(buf, &map);
    gst_buffer_unref(buf);
    GST_ELEMENT_ERROR(self, RESOURCE, READ, ("Cannot read lines %" G_GUINT64_FORMAT "..%" G_GUINT64_FORMAT " of %s",
                                             first, first + count - 1, self->location),
                      ("%s", e.what()));
    return GST_FLOW_ERROR;
  }
  gst_buffer_unmap(buf, &map);
  gst_buffer_add_hsi_block_meta(buf, first, guint(count), h.lines);
  GST_BUFFER_OFFSET(buf) = first;
  GST_BUFFER_OFFSET_END(buf) = first + count;
  if (self->line_duration > 0) {
    GST_BUFFER_PTS(buf) = first * self->line_duration;
    GST_BUFFER_DURATION(buf) = count * self->line_duration;
  }
  if (first == 0) GST_BUFFER_FLAG_SET(buf, GST_BUFFER_FLAG_DISCONT);
  set_next_line(self, first + count);
  *out = buf;
  return GST_FLOW_OK;
}

// Lines are seekable always (GST_FORMAT_DEFAULT); time only with a time
// axis (the SEEKING query says which, envi_src_query).
static gboolean envi_src_is_seekable(GstBaseSrc *) { return TRUE; }

static guint64 line_duration_of(GstEnviSrc *self) {
  GST_OBJECT_LOCK(self);
  const guint64 duration = self->line_duration;
  GST_OBJECT_UNLOCK(self);
  return duration;
}

static guint64 scene_lines(GstEnviSrc *self) {
  GST_OBJECT_LOCK(self);
  const guint64 lines = self->reader ? self->reader->header().lines : 0;
  GST_OBJECT_UNLOCK(self);
  return lines;
}

// A seek by line needs no conversion where lines have times (the base
// class converts them through CONVERT queries); without a time axis the
// segment stays in time, from 0, and the lines wait for do_seek.
static gboolean envi_src_prepare_seek_segment(GstBaseSrc *base, GstEvent *seek, GstSegment *segment) {
  auto *self = GST_ENVI_SRC(base);
  const std::optional<gstcs::SeekRequest> r = gstcs::forward_seek(GST_ELEMENT(self), seek, "lines");
  if (!r) return FALSE;
  if (r->format != GST_FORMAT_DEFAULT || line_duration_of(self) > 0)
    return GST_BASE_SRC_CLASS(gst_envi_src_parent_class)->prepare_seek_segment(base, seek, segment);
  const gint64 lines = gint64(scene_lines(self));
  self->line_seek_first = guint64(gstcs::unit_seek_position(r->start_type, r->start, lines, 0));
  self->line_seek_stop = r->stop_type == GST_SEEK_TYPE_NONE
                             ? self->stop_line
                             : guint64(gstcs::unit_seek_position(r->stop_type, r->stop, lines, lines));
  if (self->line_seek_first > self->line_seek_stop) {
    GST_WARNING_OBJECT(self, "cannot seek from line %" G_GUINT64_FORMAT " to %" G_GUINT64_FORMAT,
                       self->line_seek_first, self->line_seek_stop);
    return FALSE;
  }
  self->line_seek_pending = true;
  gst_segment_do_seek(segment, r->rate, GST_FORMAT_TIME, r->flags, GST_SEEK_TYPE_NONE, -1, GST_SEEK_TYPE_NONE, -1,
                      nullptr);
  return TRUE;
}

// Whether `seek` is refused (with the reason logged). Checked before the
// base class flushes for it: it asks prepare_seek_segment only about seeks
// in another format than the segment's (time), and after flushing.
static bool envi_src_seek_refused(GstElement *element, GstEvent *seek) {
  auto *self = GST_ENVI_SRC(element);
  const std::optional<gstcs::SeekRequest> r = gstcs::forward_seek(element, seek, "lines");
  if (!r) return true;
  if (r->format != GST_FORMAT_TIME || line_duration_of(self) > 0) return false;
  // Back to the start needs no time axis.
  const bool from_start = r->start_type == GST_SEEK_TYPE_NONE || (r->start_type == GST_SEEK_TYPE_SET && r->start == 0);
  const bool to_end = r->stop_type == GST_SEEK_TYPE_NONE || r->stop == -1;
  if (from_start && to_end) return false;
  GST_WARNING_OBJECT(self, "no time axis (line-duration=0): seek by line (GST_FORMAT_DEFAULT) instead");
  return true;
}

static gboolean envi_src_do_seek(GstBaseSrc *base, GstSegment *segment) {
  auto *self = GST_ENVI_SRC(base);
  const guint64 line_duration = line_duration_of(self);
  guint64 first = 0, stop = G_MAXUINT64;
  if (self->line_seek_pending) {
    first = self->line_seek_first;
    stop = self->line_seek_stop;
    self->line_seek_pending = false;
  } else if (line_duration > 0) {
    if (GST_CLOCK_TIME_IS_VALID(segment->start)) first = segment->start / line_duration;
    // The lines that start before the stop time.
    if (GST_CLOCK_TIME_IS_VALID(segment->stop)) stop = (segment->stop + line_duration - 1) / line_duration;
  }  // else back to the start: other time seeks without a time axis are refused (envi_src_seek_refused)
  first = MIN(first, scene_lines(self));
  GST_DEBUG_OBJECT(self, "seek: lines from %" G_GUINT64_FORMAT " to %" G_GUINT64_FORMAT, first, stop);
  set_next_line(self, first);
  self->stop_line = stop;
  segment->time = segment->start;
  return TRUE;
}

// Position and duration in lines (GST_FORMAT_DEFAULT), and in time with
// line-duration (lines and time convert both ways; seeks by line on a
// stream with time go through that).
static gboolean envi_src_query(GstBaseSrc *base, GstQuery *query) {
  auto *self = GST_ENVI_SRC(base);
  gstcs::SourceUnits units;
  GST_OBJECT_LOCK(self);
  units.total = self->reader ? gint64(self->reader->header().lines) : 0;
  units.position = gint64(self->next_line);
  const gint64 line_duration = gint64(self->line_duration);
  GST_OBJECT_UNLOCK(self);
  if (line_duration > 0) {
    units.to_time = [line_duration](gint64 line, gint64 *time) {
      *time = line * line_duration;
      return true;
    };
    units.to_unit = [line_duration](gint64 time, gint64 *line) {
      *line = time / line_duration;
      return true;
    };
  }
  if (units.total > 0 && gstcs::answer_unit_query(query, units)) return TRUE;
  return GST_BASE_SRC_CLASS(gst_envi_src_parent_class)->query(base, query);
}

static void envi_src_set_property(GObject *object, guint prop_id, const GValue *value, GParamSpec *pspec) {
  if (!gstcs::property_change_allowed(object, pspec)) return;
  auto *self = GST_ENVI_SRC(object);
  GST_OBJECT_LOCK(self);
  switch (prop_id) {
    case PROP_LOCATION:
      g_free(self->location);
      self->location = g_value_dup_string(value);
      break;
    case PROP_LINES_PER_BUFFER:
      self->lines_per_buffer = g_value_get_uint(value);
      break;
    case PROP_LINE_DURATION:
      self->line_duration = g_value_get_uint64(value);
      break;
    case PROP_READ_THREADS:
      self->read_threads = g_value_get_uint(value);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID(object, prop_id, pspec);
  }
  GST_OBJECT_UNLOCK(self);
}

static void envi_src_get_property(GObject *object, guint prop_id, GValue *value, GParamSpec *pspec) {
  auto *self = GST_ENVI_SRC(object);
  GST_OBJECT_LOCK(self);
  switch (prop_id) {
    case PROP_LOCATION:
      g_value_set_string(value, self->location);
      break;
    case PROP_LINES_PER_BUFFER:
      g_value_set_uint(value, self->lines_per_buffer);
      break;
    case PROP_LINE_DURATION:
      g_value_set_uint64(value, self->line_duration);
      break;
    case PROP_READ_THREADS:
      g_value_set_uint(value, self->read_threads);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID(object, prop_id, pspec);
  }
  GST_OBJECT_UNLOCK(self);
}

static void envi_src_finalize(GObject *object) {
  auto *self = GST_ENVI_SRC(object);
  g_free(self->location);
  delete self->reader;
  gstcs::drop_pool(&self->pool);
  G_OBJECT_CLASS(gst_envi_src_parent_class)->finalize(object);
}

static void gst_envi_src_class_init(GstEnviSrcClass *klass) {
  GObjectClass *gobject_class = G_OBJECT_CLASS(klass);
  gobject_class->set_property = envi_src_set_property;
  gobject_class->get_property = envi_src_get_property;
  gobject_class->finalize = envi_src_finalize;
  const auto flags = GParamFlags(G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY);
  g_object_class_install_property(
      gobject_class, PROP_LOCATION,
      g_param_spec_string("location", "File",
                          "The ENVI image: its header (cube.hdr) or its data file (cube, cube.img, cube.dat, ...); "
                          "the other one is found next to it",
                          nullptr, flags));
  g_object_class_install_property(
      gobject_class, PROP_LINES_PER_BUFFER,
      g_param_spec_uint("lines-per-buffer", "Lines per buffer",
                        "Whole image lines in each buffer (all samples and bands of those lines); the last buffer "
                        "holds what is left",
                        1, G_MAXINT, kDefaultLinesPerBuffer, flags));
  g_object_class_install_property(
      gobject_class, PROP_LINE_DURATION,
      g_param_spec_uint64("line-duration", "Line duration",
                          "Time of one image line in nanoseconds, to timestamp buffers as a push-broom scanner "
                          "would (PTS = first line x line-duration) and make the stream seekable in time (it "
                          "is seekable by line, GST_FORMAT_DEFAULT, either way); 0 = buffers carry no timestamps",
                          0, G_MAXUINT64, 0, flags));
  g_object_class_install_property(gobject_class, PROP_READ_THREADS, gstcs::read_threads_param_spec(flags));
  GstElementClass *element_class = GST_ELEMENT_CLASS(klass);
  gst_element_class_add_static_pad_template(element_class, &src_template);
  gst_element_class_set_static_metadata(
      element_class, "ENVI image source", "Source/File",
      "Streams an ENVI image (BSQ, BIL or BIP; data types 1, 2, 3, 4, 5, 12, 13, 14, 15; either byte order) as "
      "blocks of whole lines in the native sample format, reading only the lines of each block; the caps carry "
      "wavelengths, FWHM, bad bands, data ignore value and reflectance scale factor. Seekable by line "
      "(GST_FORMAT_DEFAULT), and in time with line-duration",
      "gst-cuda-sensing developers");
  GstBaseSrcClass *base_class = GST_BASE_SRC_CLASS(klass);
  base_class->start = envi_src_start;
  base_class->stop = envi_src_stop;
  base_class->get_caps = envi_src_get_caps;
  base_class->is_seekable = envi_src_is_seekable;
  gstcs::SourceSeekCheck<envi_src_seek_refused>::install(base_class, gst_envi_src_parent_class);
  base_class->prepare_seek_segment = envi_src_prepare_seek_segment;
  base_class->do_seek = envi_src_do_seek;
  base_class->query = envi_src_query;
  base_class->decide_allocation = envi_src_decide_allocation;
  GST_PUSH_SRC_CLASS(klass)->create = envi_src_create;
  GST_DEBUG_CATEGORY_INIT(gst_envi_src_debug, "envisrc", 0, "ENVI image source");
}

static void gst_envi_src_init(GstEnviSrc *self) {
  self->lines_per_buffer = kDefaultLinesPerBuffer;
  self->stop_line = G_MAXUINT64;
  gst_base_src_set_format(GST_BASE_SRC(self), GST_FORMAT_TIME);
}
