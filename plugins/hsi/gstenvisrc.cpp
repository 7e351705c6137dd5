/* envisrc: an ENVI image (header + flat binary file) as a stream of blocks of
 * whole lines in the file's native sample format, byte order and interleave
 * (application/x-hyperspectral). Only the lines of the block being pushed are
 * read, so cubes larger than memory stream. Each buffer carries a
 * GstHsiBlockMeta (first line, line count, scene lines) and the buffer offset
 * fields hold the same line range. */
#include "gstenvisrc.h"

#include <algorithm>
#include <memory>
#include <string>

#include "../core/gstcs-cxx.h"
#include "gst/cudasensing/hsi/gsthsiblockmeta.h"
#include "hsi-caps.h"
#include "hsi/envi.h"

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
  guint64 next_line;
  GstBufferPool *pool;  // blocks of lines-per-buffer lines (gstcs::new_source_pool)
};

G_DEFINE_TYPE(GstEnviSrc, gst_envi_src, GST_TYPE_PUSH_SRC)
GST_ELEMENT_REGISTER_DEFINE(envisrc, "envisrc", GST_RANK_NONE, GST_TYPE_ENVI_SRC)

static GstStaticPadTemplate src_template =
    GST_STATIC_PAD_TEMPLATE("src", GST_PAD_SRC, GST_PAD_ALWAYS, GST_STATIC_CAPS(HSI_CAPS_TEMPLATE));

enum { PROP_0, PROP_LOCATION, PROP_LINES_PER_BUFFER, PROP_LINE_DURATION, PROP_READ_THREADS };

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
  GST_OBJECT_LOCK(self);
  reader->set_read_threads(int(self->read_threads));
  self->reader = reader;  // get_caps reads it under the lock
  GST_OBJECT_UNLOCK(self);
  const cs::hsi::EnviHeader &h = reader->header();
  if (h.is_spectral_library())
    GST_WARNING_OBJECT(self, "%s is an ENVI spectral library, streamed as an image of %zu lines", self->location,
                       h.lines);
  GST_INFO_OBJECT(self, "%s: %zu samples x %zu lines x %zu bands, %s %s, data in %s", self->location, h.samples,
                  h.lines, h.bands, cs::hsi::data_type_name(h.data_type), cs::hsi::interleave_name(h.interleave),
                  reader->data_path().c_str());
  self->next_line = 0;
  return TRUE;
}

static gboolean envi_src_decide_allocation(GstBaseSrc *base, GstQuery *query) {
  auto *self = GST_ENVI_SRC(base);
  if (!GST_BASE_SRC_CLASS(gst_envi_src_parent_class)->decide_allocation(base, query)) return FALSE;
  gstcs::drop_pool(&self->pool);
  // Blocks of lines-per-buffer lines, or of the whole image when it has fewer.
  const size_t lines = std::min<size_t>(self->lines_per_buffer, self->reader->header().lines);
  self->pool = gstcs::new_source_pool(base, query, self->reader->block_bytes(lines));
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
    caps = hsi_caps::caps_from_header(self->reader->header(), self->lines_per_buffer, &warning);
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
  if (self->next_line >= h.lines) {
    GST_DEBUG_OBJECT(self, "all %zu lines pushed", h.lines);
    return GST_FLOW_EOS;
  }
  const guint64 first = self->next_line;
  const size_t count = size_t(MIN(guint64(self->lines_per_buffer), h.lines - first));
  const size_t bytes = self->reader->block_bytes(count);
  GstBuffer *buf = gstcs::acquire_source_buffer(GST_BASE_SRC(push), self->pool, bytes);
  if (!buf) {
    GST_ELEMENT_ERROR(self, RESOURCE, NO_SPACE_LEFT, ("Cannot allocate %zu bytes for %zu lines", bytes, count),
                      (nullptr));
    return GST_FLOW_ERROR;
  }
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
  self->next_line = first + count;
  *out = buf;
  return GST_FLOW_OK;
}

// With line-duration set the stream has a time axis: seeking picks the line
// at that time (blocks then start there), and the duration is known.
static gboolean envi_src_is_seekable(GstBaseSrc *base) {
  auto *self = GST_ENVI_SRC(base);
  GST_OBJECT_LOCK(self);
  const bool timed = self->line_duration > 0;
  GST_OBJECT_UNLOCK(self);
  return timed;
}

static gboolean envi_src_do_seek(GstBaseSrc *base, GstSegment *segment) {
  auto *self = GST_ENVI_SRC(base);
  guint64 line = 0;
  if (self->line_duration > 0 && GST_CLOCK_TIME_IS_VALID(segment->start)) line = segment->start / self->line_duration;
  else if (segment->start != 0) return FALSE;
  if (self->reader && line > self->reader->header().lines) line = self->reader->header().lines;
  GST_DEBUG_OBJECT(self, "seek to %" GST_TIME_FORMAT ": line %" G_GUINT64_FORMAT, GST_TIME_ARGS(segment->start), line);
  self->next_line = line;
  segment->time = segment->start;
  return TRUE;
}

static gboolean envi_src_query(GstBaseSrc *base, GstQuery *query) {
  auto *self = GST_ENVI_SRC(base);
  if (GST_QUERY_TYPE(query) == GST_QUERY_DURATION) {
    GstFormat format;
    gst_query_parse_duration(query, &format, nullptr);
    GST_OBJECT_LOCK(self);
    const guint64 lines = self->reader ? self->reader->header().lines : 0;
    const guint64 line_duration = self->line_duration;
    GST_OBJECT_UNLOCK(self);
    if (format == GST_FORMAT_TIME && lines && line_duration) {
      gst_query_set_duration(query, GST_FORMAT_TIME, gint64(lines * line_duration));
      return TRUE;
    }
  }
  return GST_BASE_SRC_CLASS(gst_envi_src_parent_class)->query(base, query);
}

static void envi_src_set_property(GObject *object, guint prop_id, const GValue *value, GParamSpec *pspec) {
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
                          "would (PTS = first line x line-duration) and make the stream seekable in time; 0 = "
                          "buffers carry no timestamps",
                          0, G_MAXUINT64, 0, flags));
  g_object_class_install_property(gobject_class, PROP_READ_THREADS, gstcs::read_threads_param_spec(flags));
  GstElementClass *element_class = GST_ELEMENT_CLASS(klass);
  gst_element_class_add_static_pad_template(element_class, &src_template);
  gst_element_class_set_static_metadata(
      element_class, "ENVI image source", "Source/File",
      "Streams an ENVI image (BSQ, BIL or BIP; data types 1, 2, 3, 4, 5, 12, 13, 14, 15; either byte order) as "
      "blocks of whole lines in the native sample format, reading only the lines of each block; the caps carry "
      "wavelengths, FWHM, bad bands, data ignore value and reflectance scale factor",
      "gst-cuda-sensing developers");
  GstBaseSrcClass *base_class = GST_BASE_SRC_CLASS(klass);
  base_class->start = envi_src_start;
  base_class->stop = envi_src_stop;
  base_class->get_caps = envi_src_get_caps;
  base_class->is_seekable = envi_src_is_seekable;
  base_class->do_seek = envi_src_do_seek;
  base_class->query = envi_src_query;
  base_class->decide_allocation = envi_src_decide_allocation;
  GST_PUSH_SRC_CLASS(klass)->create = envi_src_create;
  GST_DEBUG_CATEGORY_INIT(gst_envi_src_debug, "envisrc", 0, "ENVI image source");
}

static void gst_envi_src_init(GstEnviSrc *self) {
  self->lines_per_buffer = kDefaultLinesPerBuffer;
  gst_base_src_set_format(GST_BASE_SRC(self), GST_FORMAT_TIME);
}
