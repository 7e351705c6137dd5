/* envisink: writes a stream of class maps (hsiclassify's GRAY8 / GRAY16_LE
 * blocks of lines) as one ENVI Classification file: the labels line after
 * line (data type 1, or 12 beyond 254 classes; BSQ, one band), each block on
 * its own lines (its GstHsiBlockMeta's scene line, counted from the first
 * block's: after a seek blocks rewrite or skip lines rather than follow on;
 * lines never written read as 0, unclassified) and, at EOS or
 * stop, the header with `file type = ENVI Classification`, `classes`,
 * `class names` (from the caps field class-names that hsiclassify sets) and
 * `class lookup` (the palette hsicolorize uses), so the result opens in ENVI,
 * QGIS and Spectral Python. Endless streams are written as they come.
 * Rule images (hsiclassify's rules pad: application/x-hyperspectral, f32
 * BSQ blocks, one band per class) are written as one ENVI float cube instead:
 * data type 4, BIL (a block's band planes become its lines' band rows),
 * `band names` from the caps field band-names.
 * Either file gets the scene's `map info`, `projection info` and
 * `coordinate system string` from the caps (envisrc reads them, hsiclassify
 * keeps them), with map info's reference pixel moved by the first line
 * written (a stream that starts mid-scene after a seek), so the file lies
 * where the scene does in ENVI, QGIS and GDAL.
 * One file holds one stream: a second one (another STREAM_START, as after a
 * concat) is an error, and the file keeps the first one's lines.
 * Input in device memory (memory:CudaSensing) is taken as it is: mapping it
 * for reading downloads it. */
#include "gstenvisink.h"

#include <gst/video/video.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <gst/cudasensing/gstcsmemory.h>

#include "class-palette.h"
#include "gst/cudasensing/hsi/gsthsiblockmeta.h"
#include "hsi-caps.h"
#include "gstcs-cxx.h"

GST_DEBUG_CATEGORY_STATIC(gst_envi_sink_debug);
#define GST_CAT_DEFAULT gst_envi_sink_debug

namespace {
struct SinkState {
  FILE *data = nullptr;
  std::string data_path, header_path;
  GstVideoInfo info;
  bool have_info = false;
  // Rule images instead of class maps: samples x bands per line, float32.
  bool rules = false;
  size_t samples = 0, bands = 0;
  int byte_order = 0;                    // ENVI's: 0 little endian, 1 big
  std::vector<std::string> band_names;
  std::vector<std::string> class_names;  // class k at k - 1
  guint64 lines = 0;
  unsigned max_label = 0;
  bool header_written = false;
  // Georeferencing: (ENVI key, value) from the caps, and the scene line the
  // file starts at (the first block's GstHsiBlockMeta).
  std::vector<std::pair<std::string, std::string>> georeferencing;
  std::optional<guint64> first_line;
  guint64 next_line = 0;  // file line after the last block written
  // The stream the file holds (its STREAM_START's id); another one is refused
  // and nothing after it is written, so that the lines written stay.
  std::string stream_id;
  bool other_stream = false;
};

// `cube.img` -> `cube.hdr`; a name without extension gets `.hdr` appended.
std::string header_path_for(const std::string &data) {
  const size_t slash = data.find_last_of('/');
  const size_t dot = data.find_last_of('.');
  if (dot != std::string::npos && (slash == std::string::npos || dot > slash) && dot + 1 < data.size())
    return data.substr(0, dot) + ".hdr";
  return data + ".hdr";
}
}  // namespace

struct _GstEnviSink {
  GstBaseSink parent;
  gchar *location;
  SinkState *state;
};

G_DEFINE_TYPE(GstEnviSink, gst_envi_sink, GST_TYPE_BASE_SINK)
GST_ELEMENT_REGISTER_DEFINE(envisink, "envisink", GST_RANK_NONE, GST_TYPE_ENVI_SINK)

// Rule images as hsiclassify's rules pad gives them.
#define RULES_CAPS(features)                                                                               \
  "application/x-hyperspectral" features ", samples = (int) [ 1, MAX ], bands = (int) [ 1, MAX ], "        \
  "interleave = (string) bsq, format = (string) f32, endianness = (int) { 1234, 4321 }"

static GstStaticPadTemplate sink_template = GST_STATIC_PAD_TEMPLATE(
    "sink", GST_PAD_SINK, GST_PAD_ALWAYS,
    GST_STATIC_CAPS(GST_VIDEO_CAPS_MAKE_WITH_FEATURES(GST_CAPS_FEATURE_MEMORY_CS_DEVICE, "{ GRAY8, GRAY16_LE }") "; "
                    GST_VIDEO_CAPS_MAKE("{ GRAY8, GRAY16_LE }") "; "
                    RULES_CAPS("(" GST_CAPS_FEATURE_MEMORY_CS_DEVICE ")") "; " RULES_CAPS("")));

enum { PROP_0, PROP_LOCATION };

static gboolean envi_sink_start(GstBaseSink *base) {
  auto *self = GST_ENVI_SINK(base);
  GST_OBJECT_LOCK(self);
  const std::string location = self->location ? self->location : "";
  GST_OBJECT_UNLOCK(self);
  if (location.empty()) {
    GST_ELEMENT_ERROR(self, RESOURCE, NOT_FOUND, ("No file name given"),
                      ("Set the location property to the classification's data file (e.g. classes.img)"));
    return FALSE;
  }
  auto *st = new SinkState();
  st->data_path = location;
  st->header_path = header_path_for(location);
  st->data = std::fopen(location.c_str(), "wb");
  if (!st->data) {
    GST_ELEMENT_ERROR(self, RESOURCE, OPEN_WRITE, ("Cannot write %s", location.c_str()), ("%s", g_strerror(errno)));
    delete st;
    return FALSE;
  }
  // A device or a pipe (/dev/null, a FIFO read by another program) has no
  // folder beside it for a header: the data alone goes there.
  struct stat data_stat{};
  if (fstat(fileno(st->data), &data_stat) == 0 && !S_ISREG(data_stat.st_mode)) {
    GST_INFO_OBJECT(self, "%s is not a regular file: the data only, no header", location.c_str());
    st->header_path.clear();
  }
  self->state = st;
  return TRUE;
}

// A name as an item of an ENVI list (its separators would split it).
static std::string list_item(std::string name) {
  for (char &c : name)
    if (c == ',' || c == '{' || c == '}') c = ' ';
  return name;
}

static std::string classification_header(const SinkState *st) {
  const bool wide = GST_VIDEO_INFO_FORMAT(&st->info) == GST_VIDEO_FORMAT_GRAY16_LE;
  // Classes: every name the caps gave, and at least every label seen.
  size_t classes = st->class_names.size() + 1;
  if (st->max_label + 1 > classes) classes = st->max_label + 1;
  std::string names = "{Unclassified";
  for (size_t k = 1; k < classes; ++k)
    names += ", " + list_item(k <= st->class_names.size() ? st->class_names[k - 1] : "Class " + std::to_string(k));
  names += "}";
  std::string text = "ENVI\ndescription = {Class map written by gst-cuda-sensing envisink}\n";
  text += "samples = " + std::to_string(GST_VIDEO_INFO_WIDTH(&st->info)) + "\n";
  text += "lines = " + std::to_string(st->lines) + "\n";
  text += "bands = 1\nheader offset = 0\nfile type = ENVI Classification\n";
  text += std::string("data type = ") + (wide ? "12" : "1") + "\ninterleave = bsq\nbyte order = 0\n";
  text += "classes = " + std::to_string(classes) + "\n";
  text += "class lookup = " + hsi_palette::format_class_lookup(hsi_palette::default_palette(classes)) + "\n";
  text += "class names = " + names + "\n";
  return text;
}

static std::string rules_header(const SinkState *st) {
  std::string text = "ENVI\ndescription = {Rule images (each pixel's score per class) written by gst-cuda-sensing "
                     "envisink}\n";
  text += "samples = " + std::to_string(st->samples) + "\n";
  text += "lines = " + std::to_string(st->lines) + "\n";
  text += "bands = " + std::to_string(st->bands) + "\n";
  text += "header offset = 0\nfile type = ENVI Standard\ndata type = 4\ninterleave = bil\n";
  text += "byte order = " + std::to_string(st->byte_order) + "\n";
  if (st->band_names.size() == st->bands) {
    std::string names;
    for (const std::string &name : st->band_names) names += (names.empty() ? "" : ", ") + list_item(name);
    text += "band names = {" + names + "}\n";
  }
  return text;
}

// The georeferencing header lines, map info moved to the file's first line.
static std::string georeferencing_header(const SinkState *st) {
  std::string text;
  for (const auto &[key, value] : st->georeferencing) {
    const bool map_info = key == "map info";
    text += key + " = {" + (map_info ? hsi_caps::map_info_from_line(value, st->first_line.value_or(0)) : value) + "}\n";
  }
  return text;
}

// The caps' georeferencing fields (the last caps win: one file, one grid).
static void set_georeferencing(SinkState *st, const GstStructure *s) {
  st->georeferencing.clear();
  for (const hsi_caps::GeoField &g : hsi_caps::kGeoFields)
    if (const gchar *value = gst_structure_get_string(s, g.caps_field))
      st->georeferencing.emplace_back(g.envi_key, value);
}

// Moves the data file to where `buffer`'s lines go: its block meta's scene
// line less the file's first line (the first block's), so that blocks after
// a seek land on their own lines (lines never written read as 0); blocks
// without the meta follow the last one. The file line the block starts at,
// or nothing after posting an error (a block before the file's first line).
static std::optional<guint64> place_block(GstEnviSink *self, GstBuffer *buffer, size_t line_bytes) {
  SinkState *st = self->state;
  const GstHsiBlockMeta *meta = gst_buffer_get_hsi_block_meta(buffer);
  if (!st->first_line) st->first_line = meta ? meta->first_line : 0;
  guint64 line = st->next_line;
  if (meta) {
    if (meta->first_line < *st->first_line) {
      GST_ELEMENT_ERROR(self, STREAM, FAILED, ("Lines before the start of %s", st->data_path.c_str()),
                        ("scene line %" G_GUINT64_FORMAT " arrived; the file starts at scene line %" G_GUINT64_FORMAT
                         " (its first block): seek back only as far as that",
                         guint64(meta->first_line), *st->first_line));
      return std::nullopt;
    }
    line = meta->first_line - *st->first_line;
  }
  // Blocks in order need no seek (which would also flush the file's buffer each block).
  if (line != st->next_line && fseeko(st->data, off_t(line * line_bytes), SEEK_SET) != 0) {
    GST_ELEMENT_ERROR(self, RESOURCE, SEEK, ("Cannot seek in %s", st->data_path.c_str()), ("%s", g_strerror(errno)));
    return std::nullopt;
  }
  return line;
}

// `count` lines written at file line `line`.
static void note_lines_written(SinkState *st, guint64 line, guint64 count) {
  st->next_line = line + count;
  st->lines = std::max(st->lines, st->next_line);
}

static bool write_header(GstEnviSink *self) {
  SinkState *st = self->state;
  if (!st || st->header_written || !st->have_info) return true;
  if (st->header_path.empty()) return true;  // not a regular file (envi_sink_start)
  const std::string text = (st->rules ? rules_header(st) : classification_header(st)) + georeferencing_header(st);
  FILE *f = std::fopen(st->header_path.c_str(), "wb");
  const bool ok = f && std::fwrite(text.data(), 1, text.size(), f) == text.size();
  if (f && std::fclose(f) != 0) return false;
  if (!ok) {
    GST_ELEMENT_ERROR(self, RESOURCE, WRITE, ("Cannot write the ENVI header %s", st->header_path.c_str()),
                      ("%s", g_strerror(errno)));
    return false;
  }
  if (std::fflush(st->data) != 0) {
    GST_ELEMENT_ERROR(self, RESOURCE, WRITE, ("Cannot write %s", st->data_path.c_str()), ("%s", g_strerror(errno)));
    return false;
  }
  st->header_written = true;
  GST_INFO_OBJECT(self, "%s: %" G_GUINT64_FORMAT " lines of %s", st->header_path.c_str(), st->lines,
                  st->rules ? "rule images" : "labels");
  if (st->lines == 0)  // a valid header of an empty image, which few readers open: said, as cphdsink does
    GST_ELEMENT_WARNING(self, RESOURCE, WRITE,
                        ("No lines arrived: %s describes an empty image", st->header_path.c_str()), (nullptr));
  return true;
}

static gboolean envi_sink_stop(GstBaseSink *base) {
  auto *self = GST_ENVI_SINK(base);
  SinkState *st = self->state;
  if (!st) return TRUE;
  bool ok = write_header(self);
  if (st->data && std::fclose(st->data) != 0) ok = false;
  delete st;
  self->state = nullptr;
  return ok;
}

// Rule images: f32 BSQ blocks with `bands` classes (the template admits no
// other layout).
static gboolean set_rules_caps(GstEnviSink *self, const GstStructure *s) {
  SinkState *st = self->state;
  int samples = 0, bands = 0, endianness = G_LITTLE_ENDIAN;
  gst_structure_get_int(s, "samples", &samples);
  gst_structure_get_int(s, "bands", &bands);
  gst_structure_get_int(s, "endianness", &endianness);
  if (st->have_info && (!st->rules || st->samples != size_t(samples) || st->bands != size_t(bands))) {
    GST_ELEMENT_ERROR(self, CORE, NEGOTIATION, ("The rule images changed shape or follow class maps"),
                      ("%d samples x %d bands now: one ENVI file holds one raster", samples, bands));
    return FALSE;
  }
  st->rules = true;
  st->samples = size_t(samples);
  st->bands = size_t(bands);
  st->byte_order = endianness == G_BIG_ENDIAN ? 1 : 0;
  st->band_names.clear();
  const GValue *names = gst_structure_get_value(s, "band-names");
  if (names && GST_VALUE_HOLDS_ARRAY(names))
    for (guint i = 0; i < gst_value_array_get_size(names); ++i) {
      const GValue *v = gst_value_array_get_value(names, i);
      st->band_names.push_back(G_VALUE_HOLDS_STRING(v) ? g_value_get_string(v) : "");
    }
  st->have_info = true;
  set_georeferencing(st, s);
  return TRUE;
}

static gboolean envi_sink_set_caps(GstBaseSink *base, GstCaps *caps) {
  auto *self = GST_ENVI_SINK(base);
  SinkState *st = self->state;
  const GstStructure *structure = gst_caps_get_structure(caps, 0);
  if (gst_structure_has_name(structure, "application/x-hyperspectral")) return set_rules_caps(self, structure);
  if (st->have_info && st->rules) {
    GST_ELEMENT_ERROR(self, CORE, NEGOTIATION, ("Class maps after rule images"),
                      ("one ENVI file holds one raster: %" GST_PTR_FORMAT, caps));
    return FALSE;
  }
  GstVideoInfo info;
  if (!gst_video_info_from_caps(&info, caps)) return FALSE;
  if (st->have_info && (GST_VIDEO_INFO_WIDTH(&info) != GST_VIDEO_INFO_WIDTH(&st->info) ||
                        GST_VIDEO_INFO_FORMAT(&info) != GST_VIDEO_INFO_FORMAT(&st->info))) {
    GST_ELEMENT_ERROR(self, CORE, NEGOTIATION, ("The class map changed width or format mid-stream"),
                      ("%d samples %s, was %d samples %s: one ENVI file holds one raster",
                       GST_VIDEO_INFO_WIDTH(&info), gst_video_format_to_string(GST_VIDEO_INFO_FORMAT(&info)),
                       GST_VIDEO_INFO_WIDTH(&st->info), gst_video_format_to_string(GST_VIDEO_INFO_FORMAT(&st->info))));
    return FALSE;
  }
  st->info = info;
  st->have_info = true;
  set_georeferencing(st, structure);
  const GValue *names = gst_structure_get_value(structure, "class-names");
  if (names && GST_VALUE_HOLDS_ARRAY(names)) {
    st->class_names.clear();
    for (guint i = 0; i < gst_value_array_get_size(names); ++i) {
      const GValue *v = gst_value_array_get_value(names, i);
      st->class_names.push_back(G_VALUE_HOLDS_STRING(v) ? g_value_get_string(v) : "");
    }
  }
  return TRUE;
}

// A BSQ block of rule images appended as BIL lines: line l is band 0's row l,
// band 1's row l, and so on.
static GstFlowReturn render_rules(GstEnviSink *self, GstBuffer *buffer) {
  SinkState *st = self->state;
  const size_t row = st->samples * sizeof(float), line = row * st->bands;
  GstMapInfo map;
  if (!gst_buffer_map(buffer, &map, GST_MAP_READ)) {
    GST_ELEMENT_ERROR(self, RESOURCE, READ, ("Cannot map the rule images"), (nullptr));
    return GST_FLOW_ERROR;
  }
  if (map.size % line != 0) {
    gst_buffer_unmap(buffer, &map);
    GST_ELEMENT_ERROR(self, STREAM, FORMAT, ("Rule image buffer is not whole lines"),
                      ("%zu bytes; a line of %zu samples x %zu bands of f32 is %zu bytes", map.size, st->samples,
                       st->bands, line));
    return GST_FLOW_ERROR;
  }
  const size_t lines = map.size / line;
  const std::optional<guint64> at = place_block(self, buffer, line);
  if (!at) {
    gst_buffer_unmap(buffer, &map);
    return GST_FLOW_ERROR;
  }
  bool ok = true;
  for (size_t l = 0; l < lines && ok; ++l)
    for (size_t b = 0; b < st->bands && ok; ++b)
      ok = std::fwrite(map.data + (b * lines + l) * row, 1, row, st->data) == row;
  gst_buffer_unmap(buffer, &map);
  if (!ok) {
    GST_ELEMENT_ERROR(self, RESOURCE, WRITE, ("Cannot write %s", st->data_path.c_str()), ("%s", g_strerror(errno)));
    return GST_FLOW_ERROR;
  }
  note_lines_written(st, *at, lines);
  return GST_FLOW_OK;
}

static GstFlowReturn envi_sink_render(GstBaseSink *base, GstBuffer *buffer) {
  auto *self = GST_ENVI_SINK(base);
  SinkState *st = self->state;
  if (st->other_stream) return GST_FLOW_ERROR;  // said at its STREAM_START
  if (st->rules) return render_rules(self, buffer);
  GstVideoFrame frame;
  if (!gst_video_frame_map(&frame, &st->info, buffer, GST_MAP_READ)) {
    GST_ELEMENT_ERROR(self, STREAM, FORMAT, ("Class map buffer does not match its caps"),
                      ("%zu bytes for %d x %d", gst_buffer_get_size(buffer), GST_VIDEO_INFO_WIDTH(&st->info),
                       GST_VIDEO_INFO_HEIGHT(&st->info)));
    return GST_FLOW_ERROR;
  }
  const bool wide = GST_VIDEO_FRAME_FORMAT(&frame) == GST_VIDEO_FORMAT_GRAY16_LE;
  const size_t width = size_t(GST_VIDEO_FRAME_WIDTH(&frame)), row_bytes = width * (wide ? 2 : 1);
  const int height = GST_VIDEO_FRAME_HEIGHT(&frame);
  const auto *data = static_cast<const uint8_t *>(GST_VIDEO_FRAME_PLANE_DATA(&frame, 0));
  const int stride = GST_VIDEO_FRAME_PLANE_STRIDE(&frame, 0);
  const std::optional<guint64> at = place_block(self, buffer, row_bytes);
  if (!at) {
    gst_video_frame_unmap(&frame);
    return GST_FLOW_ERROR;
  }
  bool ok = true;
  for (int y = 0; y < height && ok; ++y) {
    const uint8_t *row = data + size_t(y) * stride;
    for (size_t x = 0; x < width; ++x) {
      const unsigned label = wide ? unsigned(row[2 * x]) | (unsigned(row[2 * x + 1]) << 8) : row[x];
      if (label > st->max_label) st->max_label = label;
    }
    ok = std::fwrite(row, 1, row_bytes, st->data) == row_bytes;  // little endian, as the header says
  }
  gst_video_frame_unmap(&frame);
  if (!ok) {
    GST_ELEMENT_ERROR(self, RESOURCE, WRITE, ("Cannot write %s", st->data_path.c_str()), ("%s", g_strerror(errno)));
    return GST_FLOW_ERROR;
  }
  note_lines_written(st, *at, guint64(height));
  return GST_FLOW_OK;
}

// Whether the stream that `stream_start` begins is the file's: the first
// one, or the same again. A second stream (after a concat, say) would write
// over the first one's lines from its own first line: an error instead.
static bool accept_stream(GstEnviSink *self, GstEvent *stream_start) {
  SinkState *st = self->state;
  if (st->other_stream) return false;  // said already (the event is sticky: it comes again with the next buffer)
  const gchar *id = nullptr;
  gst_event_parse_stream_start(stream_start, &id);
  const std::string stream_id = id ? id : "";
  // Before any line is written a new stream simply replaces the one announced
  // (a restart from READY can bring the previous run's stream-start first).
  if (st->stream_id.empty() || st->stream_id == stream_id || !st->first_line.has_value()) {
    st->stream_id = stream_id;
    return true;
  }
  GST_ELEMENT_ERROR(self, STREAM, FAILED,
                    ("A second stream arrived: one ENVI file holds one raster; %s keeps the first one's %"
                     G_GUINT64_FORMAT " lines", st->data_path.c_str(), st->lines),
                    ("stream '%s' after stream '%s'", stream_id.c_str(), st->stream_id.c_str()));
  st->other_stream = true;
  return false;
}

// The header goes out before EOS reaches the application.
static gboolean envi_sink_event(GstBaseSink *base, GstEvent *event) {
  auto *self = GST_ENVI_SINK(base);
  const bool refused = (GST_EVENT_TYPE(event) == GST_EVENT_STREAM_START && !accept_stream(self, event)) ||
                       (GST_EVENT_TYPE(event) == GST_EVENT_EOS && !write_header(self));
  if (refused) {
    gst_event_unref(event);
    return FALSE;
  }
  return GST_BASE_SINK_CLASS(gst_envi_sink_parent_class)->event(base, event);
}

static void envi_sink_set_property(GObject *object, guint prop_id, const GValue *value, GParamSpec *pspec) {
  if (!gstcs::property_change_allowed(object, pspec)) return;
  auto *self = GST_ENVI_SINK(object);
  if (prop_id == PROP_LOCATION) {
    GST_OBJECT_LOCK(self);
    g_free(self->location);
    self->location = g_value_dup_string(value);
    GST_OBJECT_UNLOCK(self);
  } else {
    G_OBJECT_WARN_INVALID_PROPERTY_ID(object, prop_id, pspec);
  }
}

static void envi_sink_get_property(GObject *object, guint prop_id, GValue *value, GParamSpec *pspec) {
  auto *self = GST_ENVI_SINK(object);
  if (prop_id == PROP_LOCATION) {
    GST_OBJECT_LOCK(self);
    g_value_set_string(value, self->location);
    GST_OBJECT_UNLOCK(self);
  } else {
    G_OBJECT_WARN_INVALID_PROPERTY_ID(object, prop_id, pspec);
  }
}

static void envi_sink_finalize(GObject *object) {
  auto *self = GST_ENVI_SINK(object);
  g_free(self->location);
  G_OBJECT_CLASS(gst_envi_sink_parent_class)->finalize(object);
}

static void gst_envi_sink_class_init(GstEnviSinkClass *klass) {
  GObjectClass *gobject_class = G_OBJECT_CLASS(klass);
  gobject_class->set_property = envi_sink_set_property;
  gobject_class->get_property = envi_sink_get_property;
  gobject_class->finalize = envi_sink_finalize;
  g_object_class_install_property(
      gobject_class, PROP_LOCATION,
      g_param_spec_string("location", "File",
                          "Data file of the ENVI classification (or, for rule images, float cube) to write (e.g. "
                          "classes.img); the header goes next to it with the extension replaced by .hdr "
                          "(classes.hdr), or .hdr appended; a device or a pipe (/dev/null, a FIFO) takes the data "
                          "alone",
                          nullptr,
                          GParamFlags(G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY)));
  GstElementClass *element_class = GST_ELEMENT_CLASS(klass);
  gst_element_class_add_static_pad_template(element_class, &sink_template);
  gst_element_class_set_static_metadata(
      element_class, "ENVI classification sink", "Sink/File",
      "Writes class maps (GRAY8 or GRAY16_LE blocks of lines, 0 = unclassified) as one ENVI Classification file: "
      "data type 1 (12 beyond 254 classes), classes, class names and class lookup in the header; or rule images "
      "(f32 BSQ blocks, one band per class) as one ENVI float cube (BIL, band names = class names)",
      "gst-cuda-sensing developers");
  GstBaseSinkClass *sink_class = GST_BASE_SINK_CLASS(klass);
  sink_class->start = envi_sink_start;
  sink_class->stop = envi_sink_stop;
  sink_class->set_caps = envi_sink_set_caps;
  sink_class->render = envi_sink_render;
  sink_class->event = envi_sink_event;
  GST_DEBUG_CATEGORY_INIT(gst_envi_sink_debug, "envisink", 0, "ENVI classification writer");
}

static void gst_envi_sink_init(GstEnviSink *self) { gst_base_sink_set_sync(GST_BASE_SINK(self), FALSE); }
