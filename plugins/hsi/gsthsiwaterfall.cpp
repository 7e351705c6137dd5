/* hsiwaterfall: a stream of line blocks (class maps or their colours) as
 * frames of a fixed size for display: each frame holds the last `lines`
 * lines of the stream, the newest at the bottom (or at the top), lines not
 * yet seen black (0). A push-broom camera's lines, classified one block at a
 * time, then scroll through a window that a video sink can show, which the
 * blocks themselves (a line or a few each, their height changing at the
 * end) are not.
 *
 * A frame comes out for every block, or with `step` every that many new
 * lines (fewer frames for a fast line stream); lines still waiting at
 * end-of-stream give a last frame. Frames carry the time of the block that
 * completed them. The lines are kept in a ring and copied into a frame only
 * when one is made: a line costs one copy, a frame its size. A flush or a
 * new stream starts an empty window. Blocks in device memory
 * (memory:CudaSensing, hsiclassify on CUDA) are mapped, which downloads them;
 * the frames are system memory. */
#include "gsthsiwaterfall.h"

#include <gst/video/video.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include <gst/cudasensing/gstcsmemory.h>

#include "gstcs-cxx.h"

GST_DEBUG_CATEGORY_STATIC(gst_hsi_waterfall_debug);
#define GST_CAT_DEFAULT gst_hsi_waterfall_debug

#define WATERFALL_FORMATS "{ RGBA, GRAY8, GRAY16_LE }"

struct _GstHsiWaterfall {
  GstBaseTransform parent;
  // properties (object lock)
  guint lines;
  guint step;
  gboolean newest_at_top;
  // streaming
  GstVideoInfo in_info, out_info;
  std::vector<uint8_t> *ring;  // `window` rows: stream line n in row n % window
  guint window;
  gsize row_bytes;
  guint64 lines_seen;        // since the start, a flush or a new stream
  guint64 lines_in_frame;    // lines_seen when the last frame was made
  GstClockTime last_pts;     // of the last block, for the frame at end-of-stream
};

G_DEFINE_TYPE(GstHsiWaterfall, gst_hsi_waterfall, GST_TYPE_BASE_TRANSFORM)
GST_ELEMENT_REGISTER_DEFINE(hsiwaterfall, "hsiwaterfall", GST_RANK_NONE, GST_TYPE_HSI_WATERFALL)

enum { PROP_0, PROP_LINES, PROP_STEP, PROP_NEWEST_AT_TOP };

static GstStaticPadTemplate sink_template = GST_STATIC_PAD_TEMPLATE(
    "sink", GST_PAD_SINK, GST_PAD_ALWAYS,
    GST_STATIC_CAPS(GST_VIDEO_CAPS_MAKE_WITH_FEATURES(GST_CAPS_FEATURE_MEMORY_CS_DEVICE, WATERFALL_FORMATS) "; "
                    GST_VIDEO_CAPS_MAKE(WATERFALL_FORMATS)));
static GstStaticPadTemplate src_template = GST_STATIC_PAD_TEMPLATE(
    "src", GST_PAD_SRC, GST_PAD_ALWAYS, GST_STATIC_CAPS(GST_VIDEO_CAPS_MAKE(WATERFALL_FORMATS)));

// Blocks of any height -> frames of `lines` rows at a variable rate, in
// system memory; format and width pass through.
static GstCaps *waterfall_transform_caps(GstBaseTransform *trans, GstPadDirection direction, GstCaps *caps,
                                         GstCaps *filter) {
  auto *self = GST_HSI_WATERFALL(trans);
  GST_OBJECT_LOCK(self);
  const int lines = int(self->lines);
  GST_OBJECT_UNLOCK(self);
  GstCaps *result = gst_caps_new_empty();
  for (guint i = 0; i < gst_caps_get_size(caps); ++i) {
    const GstStructure *in = gst_caps_get_structure(caps, i);
    GstStructure *s = gst_structure_new_empty("video/x-raw");
    for (const char *field : {"format", "width", "pixel-aspect-ratio"})
      if (const GValue *v = gst_structure_get_value(in, field)) gst_structure_set_value(s, field, v);
    if (direction == GST_PAD_SINK) {
      gst_structure_set(s, "height", G_TYPE_INT, lines, "framerate", GST_TYPE_FRACTION, 0, 1, nullptr);
    } else {
      gst_structure_set(s, "height", GST_TYPE_INT_RANGE, 1, G_MAXINT, nullptr);
      result = gst_caps_merge_structure_full(result, gst_structure_copy(s),
                                             gst_caps_features_new(GST_CAPS_FEATURE_MEMORY_CS_DEVICE, nullptr));
    }
    result = gst_caps_merge_structure_full(result, s, gst_caps_features_new(GST_CAPS_FEATURE_MEMORY_SYSTEM_MEMORY,
                                                                            nullptr));
  }
  return gstcs::filtered(result, filter);
}

static void clear_window(GstHsiWaterfall *self) {
  if (self->ring) std::fill(self->ring->begin(), self->ring->end(), uint8_t(0));
  self->lines_seen = self->lines_in_frame = 0;
  self->last_pts = GST_CLOCK_TIME_NONE;
}

static gboolean waterfall_set_caps(GstBaseTransform *trans, GstCaps *incaps, GstCaps *outcaps) {
  auto *self = GST_HSI_WATERFALL(trans);
  GstVideoInfo in, out;
  if (!gst_video_info_from_caps(&in, incaps) || !gst_video_info_from_caps(&out, outcaps)) {
    GST_ELEMENT_ERROR(self, CORE, NEGOTIATION, ("Cannot use the caps %" GST_PTR_FORMAT, incaps),
                      ("hsiwaterfall takes video/x-raw " WATERFALL_FORMATS " blocks of lines"));
    return FALSE;
  }
  const gsize row_bytes = gsize(GST_VIDEO_INFO_WIDTH(&in)) * GST_VIDEO_INFO_COMP_PSTRIDE(&in, 0);
  const guint window = guint(GST_VIDEO_INFO_HEIGHT(&out));
  // A shorter last block changes only the height: the window keeps its lines.
  if (!self->ring || row_bytes != self->row_bytes || window != self->window ||
      GST_VIDEO_INFO_FORMAT(&in) != GST_VIDEO_INFO_FORMAT(&self->in_info)) {
    delete self->ring;
    self->ring = new std::vector<uint8_t>(row_bytes * window);
    self->row_bytes = row_bytes;
    self->window = window;
    clear_window(self);
  }
  self->in_info = in;
  self->out_info = out;
  return TRUE;
}

static gboolean waterfall_transform_size(GstBaseTransform *trans, GstPadDirection direction, GstCaps *, gsize,
                                         GstCaps *, gsize *othersize) {
  auto *self = GST_HSI_WATERFALL(trans);
  *othersize = direction == GST_PAD_SINK ? GST_VIDEO_INFO_SIZE(&self->out_info) : GST_VIDEO_INFO_SIZE(&self->in_info);
  return TRUE;
}

// A frame is made of many blocks: no block's metas describe it.
static gboolean waterfall_transform_meta(GstBaseTransform *, GstBuffer *, GstMeta *, GstBuffer *) { return FALSE; }

// The window as it stands, into `out` (mapped as out_info).
static bool compose_frame(GstHsiWaterfall *self, GstBuffer *out) {
  GST_OBJECT_LOCK(self);
  const bool top = self->newest_at_top;
  GST_OBJECT_UNLOCK(self);
  GstVideoFrame frame;
  if (!gst_video_frame_map(&frame, &self->out_info, out, GST_MAP_WRITE)) return false;
  auto *rows = static_cast<uint8_t *>(GST_VIDEO_FRAME_PLANE_DATA(&frame, 0));
  const gint stride = GST_VIDEO_FRAME_PLANE_STRIDE(&frame, 0);
  const guint64 window = self->window;
  for (guint64 i = 0; i < window; ++i) {
    // The stream line shown in row i, counted back from the newest (age 0).
    const guint64 age = top ? i : window - 1 - i;
    uint8_t *row = rows + i * guint64(stride);
    if (age < self->lines_seen) {
      const guint64 line = self->lines_seen - 1 - age;
      std::memcpy(row, self->ring->data() + (line % window) * self->row_bytes, self->row_bytes);
    } else {
      std::memset(row, 0, self->row_bytes);
    }
  }
  gst_video_frame_unmap(&frame);
  self->lines_in_frame = self->lines_seen;
  return true;
}

static GstFlowReturn waterfall_generate_output(GstBaseTransform *trans, GstBuffer **outbuf) {
  auto *self = GST_HSI_WATERFALL(trans);
  *outbuf = nullptr;
  GstBuffer *in = trans->queued_buf;  // stashed by the default submit_input_buffer
  trans->queued_buf = nullptr;
  if (!in) return GST_FLOW_OK;
  GstVideoFrame block;
  if (!gst_video_frame_map(&block, &self->in_info, in, GST_MAP_READ)) {
    GST_ELEMENT_ERROR(self, STREAM, FAILED, ("Cannot map a block of lines"),
                      ("buffer of %" G_GSIZE_FORMAT " bytes for %dx%d %s", gst_buffer_get_size(in),
                       GST_VIDEO_INFO_WIDTH(&self->in_info), GST_VIDEO_INFO_HEIGHT(&self->in_info),
                       GST_VIDEO_INFO_NAME(&self->in_info)));
    gst_buffer_unref(in);
    return GST_FLOW_ERROR;
  }
  const auto *rows = static_cast<const uint8_t *>(GST_VIDEO_FRAME_PLANE_DATA(&block, 0));
  const gint stride = GST_VIDEO_FRAME_PLANE_STRIDE(&block, 0);
  const guint64 height = guint64(GST_VIDEO_FRAME_HEIGHT(&block));
  // Of a block taller than the window only its last lines can show.
  for (guint64 r = height > self->window ? height - self->window : 0; r < height; ++r) {
    const guint64 line = self->lines_seen + r;
    std::memcpy(self->ring->data() + (line % self->window) * self->row_bytes, rows + r * guint64(stride),
                self->row_bytes);
  }
  gst_video_frame_unmap(&block);
  self->lines_seen += height;
  if (GST_BUFFER_PTS_IS_VALID(in)) self->last_pts = GST_BUFFER_PTS(in);
  GST_OBJECT_LOCK(self);
  const guint64 step = self->step;
  GST_OBJECT_UNLOCK(self);
  const guint64 fresh = self->lines_seen - self->lines_in_frame;
  if (fresh == 0 || fresh < step) {
    gst_buffer_unref(in);
    return GST_FLOW_OK;
  }
  GstBuffer *out = nullptr;
  GstFlowReturn ret = GST_BASE_TRANSFORM_CLASS(gst_hsi_waterfall_parent_class)->prepare_output_buffer(trans, in, &out);
  gst_buffer_unref(in);
  if (ret != GST_FLOW_OK) return ret;
  if (!compose_frame(self, out)) {
    gst_buffer_unref(out);
    GST_ELEMENT_ERROR(self, STREAM, FAILED, ("Cannot map a frame for writing"), (nullptr));
    return GST_FLOW_ERROR;
  }
  // Until the next frame, which depends on the lines to come; the block's offsets count lines, not frames.
  GST_BUFFER_DURATION(out) = GST_CLOCK_TIME_NONE;
  GST_BUFFER_OFFSET(out) = GST_BUFFER_OFFSET_END(out) = GST_BUFFER_OFFSET_NONE;
  *outbuf = out;
  return GST_FLOW_OK;
}

static gboolean waterfall_sink_event(GstBaseTransform *trans, GstEvent *event) {
  auto *self = GST_HSI_WATERFALL(trans);
  switch (GST_EVENT_TYPE(event)) {
    case GST_EVENT_EOS:
      // The lines that came after the last frame, in a frame of their own.
      if (self->ring && self->lines_seen > self->lines_in_frame) {
        GstBuffer *out = gst_buffer_new_allocate(nullptr, GST_VIDEO_INFO_SIZE(&self->out_info), nullptr);
        if (out && compose_frame(self, out)) {
          GST_BUFFER_PTS(out) = self->last_pts;
          gst_pad_push(GST_BASE_TRANSFORM_SRC_PAD(trans), out);
        } else if (out) {
          gst_buffer_unref(out);
        }
      }
      break;
    case GST_EVENT_FLUSH_STOP:
    case GST_EVENT_STREAM_START: clear_window(self); break;
    default: break;
  }
  return GST_BASE_TRANSFORM_CLASS(gst_hsi_waterfall_parent_class)->sink_event(trans, event);
}

static gboolean waterfall_stop(GstBaseTransform *trans) {
  auto *self = GST_HSI_WATERFALL(trans);
  delete self->ring;
  self->ring = nullptr;
  self->window = 0;
  self->row_bytes = 0;
  gst_video_info_init(&self->in_info);
  gst_video_info_init(&self->out_info);
  return TRUE;
}

static void waterfall_set_property(GObject *object, guint prop_id, const GValue *value, GParamSpec *pspec) {
  if (!gstcs::property_change_allowed(object, pspec)) return;
  auto *self = GST_HSI_WATERFALL(object);
  GST_OBJECT_LOCK(self);
  switch (prop_id) {
    case PROP_LINES: self->lines = g_value_get_uint(value); break;
    case PROP_STEP: self->step = g_value_get_uint(value); break;
    case PROP_NEWEST_AT_TOP: self->newest_at_top = g_value_get_boolean(value); break;
    default: G_OBJECT_WARN_INVALID_PROPERTY_ID(object, prop_id, pspec);
  }
  GST_OBJECT_UNLOCK(self);
}

static void waterfall_get_property(GObject *object, guint prop_id, GValue *value, GParamSpec *pspec) {
  auto *self = GST_HSI_WATERFALL(object);
  GST_OBJECT_LOCK(self);
  switch (prop_id) {
    case PROP_LINES: g_value_set_uint(value, self->lines); break;
    case PROP_STEP: g_value_set_uint(value, self->step); break;
    case PROP_NEWEST_AT_TOP: g_value_set_boolean(value, self->newest_at_top); break;
    default: G_OBJECT_WARN_INVALID_PROPERTY_ID(object, prop_id, pspec);
  }
  GST_OBJECT_UNLOCK(self);
}

static void waterfall_finalize(GObject *object) {
  delete GST_HSI_WATERFALL(object)->ring;
  G_OBJECT_CLASS(gst_hsi_waterfall_parent_class)->finalize(object);
}

static void gst_hsi_waterfall_class_init(GstHsiWaterfallClass *klass) {
  GObjectClass *gobject_class = G_OBJECT_CLASS(klass);
  gobject_class->set_property = waterfall_set_property;
  gobject_class->get_property = waterfall_get_property;
  gobject_class->finalize = waterfall_finalize;
  const auto ready_only = GParamFlags(G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY);
  const auto while_playing = GParamFlags(G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_PLAYING);
  g_object_class_install_property(
      gobject_class, PROP_LINES,
      g_param_spec_uint("lines", "Lines", "Height of the frames: the last this many lines of the stream", 1, 32768,
                        480, ready_only));
  g_object_class_install_property(
      gobject_class, PROP_STEP,
      g_param_spec_uint("step", "Step",
                        "A frame every this many new lines (0: a frame for each block); lines still waiting at "
                        "end-of-stream give a last frame",
                        0, G_MAXUINT, 0, while_playing));
  g_object_class_install_property(
      gobject_class, PROP_NEWEST_AT_TOP,
      g_param_spec_boolean("newest-at-top", "Newest at top",
                           "Show the newest line at the top, the window scrolling down (default: at the bottom, "
                           "the lines in the scene's order, scrolling up)",
                           FALSE, while_playing));
  GstElementClass *element_class = GST_ELEMENT_CLASS(klass);
  gst_element_class_add_static_pad_template(element_class, &sink_template);
  gst_element_class_add_static_pad_template(element_class, &src_template);
  gst_element_class_set_static_metadata(
      element_class, "Line stream waterfall", "Filter/Converter/Video",
      "Turns a stream of line blocks (class maps, their colours) into frames of a fixed height for display: each "
      "frame the last `lines` lines, the newest at the bottom or the top, a frame per block or every `step` lines",
      "gst-cuda-sensing developers");
  GstBaseTransformClass *trans_class = GST_BASE_TRANSFORM_CLASS(klass);
  trans_class->transform_caps = waterfall_transform_caps;
  trans_class->set_caps = waterfall_set_caps;
  trans_class->transform_size = waterfall_transform_size;
  trans_class->transform_meta = waterfall_transform_meta;
  trans_class->generate_output = waterfall_generate_output;
  trans_class->sink_event = waterfall_sink_event;
  trans_class->stop = waterfall_stop;
  GST_DEBUG_CATEGORY_INIT(gst_hsi_waterfall_debug, "hsiwaterfall", 0, "line blocks to scrolling frames");
}

static void gst_hsi_waterfall_init(GstHsiWaterfall *self) {
  // generate_output makes every frame: not the base class's pass-through,
  // which it takes for an element without transform functions.
  gst_base_transform_set_passthrough(GST_BASE_TRANSFORM(self), FALSE);
  gst_base_transform_set_in_place(GST_BASE_TRANSFORM(self), FALSE);
  self->lines = 480;
  self->step = 0;
  self->newest_at_top = FALSE;
  self->ring = nullptr;
  self->window = 0;
  self->row_bytes = 0;
  gst_video_info_init(&self->in_info);
  gst_video_info_init(&self->out_info);
  clear_window(self);
}
