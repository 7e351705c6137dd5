/* hsicolorize: class map (GRAY8 / GRAY16_LE, 0 = unclassified) -> RGBA for
 * display and PNG. Colours come from an ENVI `class lookup` (the header of a
 * classification file, given by the lookup property) or else from a fixed
 * palette of distinct colours (class 0 black). A table lookup per pixel, on
 * the CPU: class maps are a byte or two per pixel, far less than the cube.
 * Class maps in device memory (memory:CudaSensing, from hsiclassify on CUDA)
 * are accepted as they are: mapping them for reading downloads them. The
 * RGBA output is system memory, for pngenc and display sinks. */
#include "gsthsicolorize.h"

#include <gst/video/video.h>

#include <string>
#include <vector>

#include <gst/cudasensing/gstcsmemory.h>

#include "../core/gstcs-cxx.h"
#include "class-palette.h"
#include "hsi/envi.h"
#include "gstcs-cxx.h"

GST_DEBUG_CATEGORY_STATIC(gst_hsi_colorize_debug);
#define GST_CAT_DEFAULT gst_hsi_colorize_debug

struct _GstHsiColorize {
  GstVideoFilter parent;
  gchar *lookup;                              // property
  std::vector<hsi_palette::Rgb> *palette;     // one colour per possible label
};

G_DEFINE_TYPE(GstHsiColorize, gst_hsi_colorize, GST_TYPE_VIDEO_FILTER)
GST_ELEMENT_REGISTER_DEFINE(hsicolorize, "hsicolorize", GST_RANK_NONE, GST_TYPE_HSI_COLORIZE)

static GstStaticPadTemplate sink_template = GST_STATIC_PAD_TEMPLATE(
    "sink", GST_PAD_SINK, GST_PAD_ALWAYS,
    GST_STATIC_CAPS(GST_VIDEO_CAPS_MAKE_WITH_FEATURES(GST_CAPS_FEATURE_MEMORY_CS_DEVICE, "{ GRAY8, GRAY16_LE }") "; "
                    GST_VIDEO_CAPS_MAKE("{ GRAY8, GRAY16_LE }")));
static GstStaticPadTemplate src_template =
    GST_STATIC_PAD_TEMPLATE("src", GST_PAD_SRC, GST_PAD_ALWAYS, GST_STATIC_CAPS(GST_VIDEO_CAPS_MAKE("RGBA")));

enum { PROP_0, PROP_LOOKUP };

static GstCaps *colorize_transform_caps(GstBaseTransform *trans, GstPadDirection direction, GstCaps *caps,
                                        GstCaps *filter) {
  GstCaps *result = gst_caps_new_empty();
  for (guint i = 0; i < gst_caps_get_size(caps); ++i) {
    GstStructure *s = gst_structure_copy(gst_caps_get_structure(caps, i));
    gst_structure_remove_field(s, "class-names");
    if (direction == GST_PAD_SINK) {
      gst_structure_set(s, "format", G_TYPE_STRING, "RGBA", nullptr);
      // Whatever memory the class map is in, the colours are system memory.
      result = gst_caps_merge_structure_full(result, s, gst_caps_features_new(GST_CAPS_FEATURE_MEMORY_SYSTEM_MEMORY, nullptr));
      continue;
    } else {
      GValue formats = G_VALUE_INIT, item = G_VALUE_INIT;
      gst_value_list_init(&formats, 2);
      g_value_init(&item, G_TYPE_STRING);
      g_value_set_string(&item, "GRAY8");
      gst_value_list_append_value(&formats, &item);
      g_value_set_string(&item, "GRAY16_LE");
      gst_value_list_append_value(&formats, &item);
      g_value_unset(&item);
      gst_structure_take_value(s, "format", &formats);
      // Device memory first: taking it saves hsiclassify on CUDA nothing,
      // but it lets the class map stay where it was made until mapped here.
      result = gst_caps_merge_structure_full(result, gst_structure_copy(s),
                                             gst_caps_features_new(GST_CAPS_FEATURE_MEMORY_CS_DEVICE, nullptr));
    }
    result = gst_caps_merge_structure_full(result, s, gst_caps_features_new(GST_CAPS_FEATURE_MEMORY_SYSTEM_MEMORY, nullptr));
  }
  result = gstcs::filtered(result, filter);
  GST_LOG_OBJECT(trans, "%" GST_PTR_FORMAT " -> %" GST_PTR_FORMAT, caps, result);
  return result;
}

// Device-memory class maps come from their producer's own device pool; a
// system-memory video pool proposed for them would never be used.
static gboolean colorize_propose_allocation(GstBaseTransform *trans, GstQuery *decide_query, GstQuery *query) {
  GstCaps *caps = nullptr;
  gst_query_parse_allocation(query, &caps, nullptr);
  if (caps && gst_cs_caps_has_device_feature(caps)) return TRUE;
  return GST_BASE_TRANSFORM_CLASS(gst_hsi_colorize_parent_class)->propose_allocation(trans, decide_query, query);
}

static gboolean colorize_set_info(GstVideoFilter *filter, GstCaps *, GstVideoInfo *in_info, GstCaps *,
                                  GstVideoInfo *) {
  auto *self = GST_HSI_COLORIZE(filter);
  const size_t labels = GST_VIDEO_INFO_FORMAT(in_info) == GST_VIDEO_FORMAT_GRAY8 ? 256 : 65536;
  std::vector<hsi_palette::Rgb> palette = hsi_palette::default_palette(labels);
  GST_OBJECT_LOCK(self);
  const std::string lookup = self->lookup ? self->lookup : "";
  GST_OBJECT_UNLOCK(self);
  if (!lookup.empty()) {
    try {
      const cs::hsi::EnviHeader h = cs::hsi::read_envi_header(lookup);
      const cs::hsi::EnviField *field = h.find("class lookup");
      if (!field) throw std::invalid_argument(lookup + ": no 'class lookup' key");
      std::vector<hsi_palette::Rgb> colours;
      try {
        colours = hsi_palette::parse_class_lookup(field->value);
      } catch (const std::exception &e) {
        throw std::invalid_argument(lookup + " line " + std::to_string(field->line) + ": key 'class lookup': " + e.what());
      }
      for (size_t k = 0; k < colours.size() && k < labels; ++k) palette[k] = colours[k];
      GST_INFO_OBJECT(self, "%zu class colours from %s; further classes use the default palette", colours.size(),
                      lookup.c_str());
    } catch (const std::exception &e) {
      GST_ELEMENT_ERROR(self, RESOURCE, READ, ("Cannot read the class colours of %s", lookup.c_str()), ("%s", e.what()));
      return FALSE;
    }
  }
  delete self->palette;
  self->palette = new std::vector<hsi_palette::Rgb>(std::move(palette));
  return TRUE;
}

static GstFlowReturn colorize_transform_frame(GstVideoFilter *filter, GstVideoFrame *in, GstVideoFrame *out) {
  auto *self = GST_HSI_COLORIZE(filter);
  const hsi_palette::Rgb *palette = self->palette->data();
  const int width = GST_VIDEO_FRAME_WIDTH(in), height = GST_VIDEO_FRAME_HEIGHT(in);
  const bool wide = GST_VIDEO_FRAME_FORMAT(in) == GST_VIDEO_FORMAT_GRAY16_LE;
  const int in_stride = GST_VIDEO_FRAME_PLANE_STRIDE(in, 0), out_stride = GST_VIDEO_FRAME_PLANE_STRIDE(out, 0);
  const auto *src = static_cast<const uint8_t *>(GST_VIDEO_FRAME_PLANE_DATA(in, 0));
  auto *dst = static_cast<uint8_t *>(GST_VIDEO_FRAME_PLANE_DATA(out, 0));
  for (int y = 0; y < height; ++y) {
    const uint8_t *row = src + size_t(y) * in_stride;
    uint8_t *o = dst + size_t(y) * out_stride;
    for (int x = 0; x < width; ++x) {
      const unsigned label = wide ? unsigned(row[2 * x]) | (unsigned(row[2 * x + 1]) << 8) : row[x];
      const hsi_palette::Rgb c = palette[label];
      o[4 * x] = c.r;
      o[4 * x + 1] = c.g;
      o[4 * x + 2] = c.b;
      o[4 * x + 3] = 255;
    }
  }
  return GST_FLOW_OK;
}

static void colorize_set_property(GObject *object, guint prop_id, const GValue *value, GParamSpec *pspec) {
  if (!gstcs::property_change_allowed(object, pspec)) return;
  auto *self = GST_HSI_COLORIZE(object);
  if (prop_id == PROP_LOOKUP) {
    GST_OBJECT_LOCK(self);
    g_free(self->lookup);
    self->lookup = g_value_dup_string(value);
    GST_OBJECT_UNLOCK(self);
  } else {
    G_OBJECT_WARN_INVALID_PROPERTY_ID(object, prop_id, pspec);
  }
}

static void colorize_get_property(GObject *object, guint prop_id, GValue *value, GParamSpec *pspec) {
  auto *self = GST_HSI_COLORIZE(object);
  if (prop_id == PROP_LOOKUP) {
    GST_OBJECT_LOCK(self);
    g_value_set_string(value, self->lookup);
    GST_OBJECT_UNLOCK(self);
  } else {
    G_OBJECT_WARN_INVALID_PROPERTY_ID(object, prop_id, pspec);
  }
}

static void colorize_finalize(GObject *object) {
  auto *self = GST_HSI_COLORIZE(object);
  g_free(self->lookup);
  delete self->palette;
  G_OBJECT_CLASS(gst_hsi_colorize_parent_class)->finalize(object);
}

static void gst_hsi_colorize_class_init(GstHsiColorizeClass *klass) {
  GObjectClass *gobject_class = G_OBJECT_CLASS(klass);
  gobject_class->set_property = colorize_set_property;
  gobject_class->get_property = colorize_get_property;
  gobject_class->finalize = colorize_finalize;
  g_object_class_install_property(
      gobject_class, PROP_LOOKUP,
      g_param_spec_string("lookup", "Class lookup",
                          "An ENVI header with a 'class lookup' key (r, g, b per class, class 0 first), e.g. of a "
                          "classification file written by envisink or ENVI; classes it does not list, or all "
                          "classes when unset, get a fixed palette of distinct colours with class 0 black",
                          nullptr,
                          GParamFlags(G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY)));
  GstElementClass *element_class = GST_ELEMENT_CLASS(klass);
  gst_element_class_add_static_pad_template(element_class, &sink_template);
  gst_element_class_add_static_pad_template(element_class, &src_template);
  gst_element_class_set_static_metadata(
      element_class, "Class map colouriser", "Filter/Effect/Video",
      "Turns a class map (GRAY8 or GRAY16_LE labels, 0 = unclassified) into RGBA colours for display and PNG, from "
      "an ENVI class lookup or a fixed palette of distinct colours",
      "gst-cuda-sensing developers");
  GST_BASE_TRANSFORM_CLASS(klass)->transform_caps = colorize_transform_caps;
  GST_BASE_TRANSFORM_CLASS(klass)->propose_allocation = colorize_propose_allocation;
  GstVideoFilterClass *filter_class = GST_VIDEO_FILTER_CLASS(klass);
  filter_class->set_info = colorize_set_info;
  filter_class->transform_frame = colorize_transform_frame;
  GST_DEBUG_CATEGORY_INIT(gst_hsi_colorize_debug, "hsicolorize", 0, "class map to colours");
}

static void gst_hsi_colorize_init(GstHsiColorize *) {}
