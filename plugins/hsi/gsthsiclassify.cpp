/* hsiclassify: per-pixel classification of hyperspectral line blocks against
 * reference spectra from a spectral library (ENVI .sli or CSV).
 *
 * Sink: application/x-hyperspectral (native samples, any interleave and
 * format). Source: the class map of each block, video/x-raw GRAY8 (GRAY16_LE
 * when more than 254 references), width = samples, height = lines of the
 * block: 0 = unclassified or no data, k = the k-th chosen reference.
 *
 * Everything that depends on the caps (library resampled to the cube's
 * wavelengths, band and entry choice, the prepared reference table, and on
 * CUDA its device copy) is built in set_caps, never per buffer; the
 * threshold, which none of it depends on, may change between blocks. The math is
 * kernels/hsi: SpectralClassifier on the CPU, CudaSpectralClassifier on CUDA.
 *
 * Rule images (every pixel's score against each class): application/
 * x-hyperspectral, f32 BSQ with one band per class (band-names = class
 * names), NaN where a score is undefined. They come out of the request pad
 * `rules`, next to the class map (the kernel computes both in one pass; on
 * CUDA both stay in device memory), or, with output=rule-images, out of the
 * source pad instead of the class map. The rules pad follows the sink pad's
 * events (its own stream-start, the caps of the rule images, segment, EOS,
 * flushes); an unlinked rules pad costs nothing. Both outputs keep the
 * scene's georeferencing caps fields (map-info and the like, hsi-caps.h). */
#include "gsthsiclassify.h"

#include <gst/video/video.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <mutex>
#include <new>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "../core/gstcs-cxx.h"
#include "../core/gstcs-gpu.h"
#include "hsi-caps.h"
#include "hsi/classifier.h"
#include "hsi/convert.h"
#include "hsi/references.h"
#include "hsi/spectral_library.h"
#include "gstcs-cxx.h"

GST_DEBUG_CATEGORY_STATIC(gst_hsi_classify_debug);
#define GST_CAT_DEFAULT gst_hsi_classify_debug

using namespace cs::hsi;

namespace {

constexpr double kMethodDefaultThreshold = -2.0;  // threshold property: use the method's default

struct Settings {
  std::string library;
  std::string entries;
  Method method = Method::sam;
  double threshold = kMethodDefaultThreshold;
  Precision precision = Precision::exact;
  GstHsiResample resample = GST_HSI_RESAMPLE_AUTO;
  guint first_band = 0;
  gint last_band = -1;
  bool honour_bbl = true;
};

// The threshold the classifier gets: the property's, or the method's default.
double threshold_of(const Settings &settings) {
  return settings.threshold == kMethodDefaultThreshold ? default_threshold(settings.method) : settings.threshold;
}

// What set_caps prepares for one input stream.
struct Prepared {
  hsi_caps::Stream stream;
  std::unique_ptr<SpectralClassifier> classifier;
  std::vector<std::string> notes;  // for the log, once
  GstVideoFormat video_format() const {
    return classifier->class_map_format() == ClassMapFormat::gray8 ? GST_VIDEO_FORMAT_GRAY8
                                                                   : GST_VIDEO_FORMAT_GRAY16_LE;
  }
};

std::string trim(const std::string &s) {
  const size_t b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t") - b + 1);
}

// "Name A, 12, Name B": all-digit items are 0-based indices, others names.
void parse_entries(const std::string &text, ReferenceRequest *request) {
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    item = trim(item);
    if (item.empty()) continue;
    if (item.find_first_not_of("0123456789") == std::string::npos)
      request->indices.push_back(std::stoul(item));
    else
      request->names.push_back(item);
  }
}

std::string range_text(const std::vector<double> &nm) {
  if (nm.empty()) return "no wavelengths";
  char buf[96];
  std::snprintf(buf, sizeof buf, "%.1f-%.1f nm", *std::min_element(nm.begin(), nm.end()),
                *std::max_element(nm.begin(), nm.end()));
  return buf;
}

// The library on the stream's bands, the bands and entries to use, and the
// classifier. Throws (EnviError, std::invalid_argument) with the reason.
std::shared_ptr<Prepared> prepare(const Settings &settings, const SpectralLibrary &library,
                                  const hsi_caps::Stream &stream) {
  auto p = std::make_shared<Prepared>();
  p->stream = stream;
  const EnviHeader &h = stream.header;
  const std::vector<double> cube_nm = h.wavelengths_nm();
  SpectralLibrary lib = library;
  if (lib.wavelengths_nm.empty() || cube_nm.empty()) {
    if (lib.channels != h.bands)
      throw std::invalid_argument("the library " + lib.source + " has " + std::to_string(lib.channels) +
                                  " channels and the stream " + std::to_string(h.bands) +
                                  " bands, and without wavelengths on both sides it cannot be resampled");
    p->notes.push_back("library " + lib.source + " used channel for band: " +
                       (cube_nm.empty() ? "the stream has no wavelengths" : "the library has no wavelengths"));
  } else if (!same_wavelengths(lib.wavelengths_nm, cube_nm)) {
    ResampleMethod how = ResampleMethod::linear;
    if (settings.resample == GST_HSI_RESAMPLE_GAUSSIAN ||
        (settings.resample == GST_HSI_RESAMPLE_AUTO && !h.fwhm.empty()))
      how = ResampleMethod::gaussian;
    if (how == ResampleMethod::gaussian && h.fwhm.empty())
      throw std::invalid_argument("resample=gaussian needs the stream's FWHM (caps field 'fwhm'), which is absent");
    lib = resample_library(lib, cube_nm, h.fwhm_nm(), how);
    p->notes.push_back("library " + library.source + " (" + std::to_string(library.channels) + " channels, " +
                       range_text(library.wavelengths_nm) + ") resampled onto the stream's " +
                       std::to_string(h.bands) + " bands (" + range_text(cube_nm) + "), " +
                       (how == ResampleMethod::gaussian ? "Gaussian with the stream's FWHM" : "linear interpolation"));
  }
  ReferenceRequest request;
  parse_entries(settings.entries, &request);
  const size_t last = settings.last_band < 0 ? std::numeric_limits<size_t>::max() : size_t(settings.last_band);
  request.bands = select_bands(h.bands, h.bbl, settings.first_band, last, settings.honour_bbl);
  ReferenceChoice choice = choose_references(lib, h.bands, request);
  if (!choice.uncovered_bands.empty())
    p->notes.push_back(std::to_string(choice.uncovered_bands.size()) +
                       " selected bands dropped: no chosen library entry has data there");
  if (!choice.skipped.empty()) {
    std::string text = std::to_string(choice.skipped.size()) + " library entries skipped (no data at some band)";
    for (size_t i = 0; i < choice.skipped.size() && i < 5; ++i)
      text += (i ? "; " : ": ") + choice.skipped[i].name + " (" + choice.skipped[i].reason + ")";
    if (choice.skipped.size() > 5) text += "; ...";
    p->notes.push_back(text);
  }
  ClassifierConfig config;
  config.method = settings.method;
  config.threshold = threshold_of(settings);
  config.precision = settings.precision;
  p->classifier = std::make_unique<SpectralClassifier>(config, choice.references, choice.bands, cube_nm);
  for (const UnusableReference &u : p->classifier->unusable_references())
    p->notes.push_back("reference " + std::to_string(u.index + 1) + " '" + u.name + "' can never match: " + u.reason);
  p->notes.push_back(std::to_string(p->classifier->class_count()) + " classes, " +
                     std::to_string(choice.bands.size()) + " bands, method " + method_name(config.method) +
                     ", threshold " + (std::isnan(config.threshold) ? std::string("none") : std::to_string(config.threshold)));
  return p;
}

// The class map of `lines` lines in `format`.
GstVideoInfo class_map_info(GstVideoFormat format, size_t samples, size_t lines) {
  GstVideoInfo info;
  gst_video_info_set_format(&info, format, guint(samples), guint(lines));
  return info;
}

struct ClassifyState {
  std::mutex lock;
  Settings settings;                                  // copied at start; its threshold, the last one applied
  double threshold_seen = kMethodDefaultThreshold;    // the threshold property's value last looked at
  std::shared_ptr<const SpectralLibrary> library;     // loaded at start
  GstCaps *prepared_caps = nullptr;                   // caps `prepared` was built for
  GstCaps *refused_caps = nullptr;                    // the last caps that could not be classified (error posted)
  std::shared_ptr<Prepared> prepared;
  std::shared_ptr<Prepared> active;                   // the one set_caps chose
  std::unique_ptr<gstcs::ElementGpu> gpu;             // CUDA backend only
  std::unique_ptr<CudaSpectralClassifier> cuda;
  std::shared_ptr<Prepared> cuda_for;                 // which Prepared `cuda` holds
  bool rules = false;                                 // output=rule-images
  GstStructure *rules_structure = nullptr;            // fixed rule-image caps of the active stream
  bool rules_pad_caps_stale = true;                   // rules pad caps to (re)negotiate
  std::vector<uint8_t> host_scratch_map;              // class map nobody asked for (CPU)
  GstBuffer *device_scratch_map = nullptr;            // the same on the device (reused)
  gstcs::OutputPool host_outputs, host_rules;         // CPU backend: class maps or rule images, rules pad's
  ~ClassifyState() {
    gst_clear_caps(&prepared_caps);
    gst_clear_caps(&refused_caps);
    if (rules_structure) gst_structure_free(rules_structure);
    gst_clear_buffer(&device_scratch_map);
  }

  // The Prepared for fixed sink caps (cached); throws on failure.
  std::shared_ptr<Prepared> get(const GstCaps *caps) {
    std::lock_guard<std::mutex> g(lock);
    if (prepared && prepared_caps && gst_caps_is_equal(prepared_caps, caps)) return prepared;
    if (!library) throw std::runtime_error("no spectral library loaded (element not started)");
    hsi_caps::Stream stream;
    std::string error;
    GstCaps *plain = gst_caps_copy(caps);
    gst_caps_set_features(plain, 0, nullptr);
    const bool ok = hsi_caps::stream_from_caps(plain, &stream, &error);
    gst_caps_unref(plain);
    if (!ok) throw std::invalid_argument(error);
    auto p = prepare(settings, *library, stream);
    gst_caps_replace(&prepared_caps, const_cast<GstCaps *>(caps));
    prepared = p;
    return p;
  }
};

}  // namespace

struct _GstHsiClassify {
  GstCsBaseTransform parent;
  // Properties (object lock).
  gchar *library;
  gchar *entries;
  GstHsiMethod method;
  gdouble threshold;
  GstHsiPrecision precision;
  GstHsiResample resample;
  guint first_band;
  gint last_band;
  gboolean honour_bbl;
  GstHsiOutput output;
  GstPad *rules_pad;  // request pad "rules" (object lock), NULL when not requested
  // Between start and stop: the streaming thread uses `state`, queries `running`.
  ClassifyState *state;
  gstcs::RunningState<ClassifyState> running;
};

G_DEFINE_TYPE(GstHsiClassify, gst_hsi_classify, GST_TYPE_CS_BASE_TRANSFORM)
GST_ELEMENT_REGISTER_DEFINE(hsiclassify, "hsiclassify", GST_RANK_NONE, GST_TYPE_HSI_CLASSIFY)

#define CLASS_MAP_CAPS "video/x-raw, format = (string) { GRAY8, GRAY16_LE }, width = (int) [ 1, MAX ], " \
                       "height = (int) [ 1, MAX ], framerate = (fraction) [ 0/1, MAX ]"

GType gst_hsi_method_get_type(void) {
  static GType type = 0;
  static const GEnumValue values[] = {
      {GST_HSI_METHOD_SAM, "Spectral angle in radians, lower is better (Kruse et al. 1993)", "sam"},
      {GST_HSI_METHOD_SID, "Spectral information divergence in nats, lower is better (Chang 2000)", "sid"},
      {GST_HSI_METHOD_CORRELATION, "Pearson correlation of pixel and reference, in [-1, 1], higher is better",
       "correlation"},
      {GST_HSI_METHOD_BANDFIT,
       "Clark's band fit: correlation of continuum-removed spectra over the band range, higher is better", "bandfit"},
      {GST_HSI_METHOD_EUCLIDEAN, "Minimum Euclidean distance, in the data's units, lower is better", "euclidean"},
      {0, nullptr, nullptr}};
  if (g_once_init_enter(&type)) g_once_init_leave(&type, g_enum_register_static("GstHsiMethod", values));
  return type;
}

static GType gst_hsi_precision_get_type(void) {
  static GType type = 0;
  static const GEnumValue values[] = {
      {GST_HSI_PRECISION_EXACT, "Every per-band term summed in double (angles within ~1e-7 rad of float64)",
       "exact"},
      {GST_HSI_PRECISION_FAST, "Float sums within chunks of 32 bands, chunk sums in double (~1e-7 relative)",
       "fast"},
      {GST_HSI_PRECISION_TENSOR,
       "CUDA: sam, correlation, bandfit and euclidean as one matrix product on the tensor cores, sid as two (TF32 "
       "split in two parts, dot products within ~5e-7 relative; euclidean from norms); otherwise as fast",
       "tensor"},
      {0, nullptr, nullptr}};
  if (g_once_init_enter(&type)) g_once_init_leave(&type, g_enum_register_static("GstHsiPrecision", values));
  return type;
}

static GType gst_hsi_resample_get_type(void) {
  static GType type = 0;
  static const GEnumValue values[] = {
      {GST_HSI_RESAMPLE_AUTO, "Gaussian when the stream carries FWHM, else linear", "auto"},
      {GST_HSI_RESAMPLE_LINEAR, "Linear interpolation between the library's channels", "linear"},
      {GST_HSI_RESAMPLE_GAUSSIAN, "Library weighted by each band's Gaussian response (needs the stream's FWHM)",
       "gaussian"},
      {0, nullptr, nullptr}};
  if (g_once_init_enter(&type)) g_once_init_leave(&type, g_enum_register_static("GstHsiResample", values));
  return type;
}

static GType gst_hsi_output_get_type(void) {
  static GType type = 0;
  static const GEnumValue values[] = {
      {GST_HSI_OUTPUT_CLASS_MAP, "Class map: video/x-raw GRAY8 (GRAY16_LE beyond 254 classes), 0 = unclassified",
       "class-map"},
      {GST_HSI_OUTPUT_RULE_IMAGES,
       "Rule images: every pixel's score against each class, application/x-hyperspectral f32 BSQ, one band per "
       "class (NaN where undefined)",
       "rule-images"},
      {0, nullptr, nullptr}};
  if (g_once_init_enter(&type)) g_once_init_leave(&type, g_enum_register_static("GstHsiOutput", values));
  return type;
}

static GstCaps *sink_media_caps() { return gst_caps_from_string(HSI_CAPS_TEMPLATE); }
static GstCaps *src_media_caps() {
  return gst_caps_from_string("video/x-raw, format = (string) { GRAY8, GRAY16_LE }, width = (int) [ 1, MAX ], "
                              "height = (int) [ 1, MAX ], framerate = (fraction) [ 0/1, MAX ]");
}

static bool wants_rules(GstHsiClassify *self) {
  GST_OBJECT_LOCK(self);
  const bool rules = self->output == GST_HSI_OUTPUT_RULE_IMAGES;
  GST_OBJECT_UNLOCK(self);
  return rules;
}

// The classes' names as a string array field (class k at index k - 1).
static void set_class_names(GstStructure *s, const char *field, const std::vector<std::string> &class_names) {
  GValue names = G_VALUE_INIT;
  gst_value_array_init(&names, class_names.size());
  for (const std::string &name : class_names) {
    GValue item = G_VALUE_INIT;
    g_value_init(&item, G_TYPE_STRING);
    g_value_set_string(&item, trim(name).c_str());
    gst_value_array_append_and_take_value(&names, &item);
  }
  gst_structure_take_value(s, field, &names);
}

// Rule images of a stream: one f32 band per class, BSQ blocks.
static GstStructure *rule_structure(const GstStructure *in) {
  GstStructure *out = gst_structure_new(HSI_MEDIA_TYPE, "interleave", G_TYPE_STRING, "bsq", "format", G_TYPE_STRING,
                                        "f32", "endianness", G_TYPE_INT, G_BYTE_ORDER, "bands", GST_TYPE_INT_RANGE, 1,
                                        G_MAXINT, nullptr);
  for (const char *field : {"samples", "lines", "block-lines"})
    if (const GValue *v = gst_structure_get_value(in, field)) gst_structure_set_value(out, field, v);
  if (!gst_structure_has_field(out, "samples")) gst_structure_set(out, "samples", GST_TYPE_INT_RANGE, 1, G_MAXINT, nullptr);
  hsi_caps::copy_georeferencing(in, out);
  return out;
}

// Rule images of a stream whose classifier is known: bands and their names fixed.
static GstStructure *rule_structure_for(const GstStructure *in, const Prepared &p) {
  GstStructure *out = rule_structure(in);
  gst_structure_set(out, "bands", G_TYPE_INT, int(p.classifier->class_count()), nullptr);
  set_class_names(out, "band-names", p.classifier->class_names());
  return out;
}

static bool use_cuda(GstHsiClassify *self) { return gst_cs_base_transform_use_cuda(GST_CS_BASE_TRANSFORM(self)); }

static gboolean classify_start(GstCsBaseTransform *base) {
  auto *self = GST_HSI_CLASSIFY(base);
  ClassifyState *st = self->state = self->running.start(GST_OBJECT(self));
  GST_OBJECT_LOCK(self);
  st->settings.library = self->library ? self->library : "";
  st->settings.entries = self->entries ? self->entries : "";
  st->settings.method = Method(self->method);
  st->settings.threshold = self->threshold;
  st->threshold_seen = self->threshold;
  st->settings.precision = self->precision == GST_HSI_PRECISION_TENSOR ? Precision::tensor
                           : self->precision == GST_HSI_PRECISION_FAST ? Precision::fast
                                                                       : Precision::exact;
  st->settings.resample = self->resample;
  st->settings.first_band = self->first_band;
  st->settings.last_band = self->last_band;
  st->settings.honour_bbl = self->honour_bbl;
  st->rules = self->output == GST_HSI_OUTPUT_RULE_IMAGES;
  GST_OBJECT_UNLOCK(self);
  if (const std::string problem = threshold_problem(st->settings.method, threshold_of(st->settings));
      !problem.empty()) {
    GST_ELEMENT_ERROR(self, RESOURCE, SETTINGS, ("Bad threshold property: %s", problem.c_str()), (nullptr));
    return FALSE;
  }
  if (st->settings.library.empty()) {
    GST_ELEMENT_ERROR(self, RESOURCE, NOT_FOUND, ("No spectral library given"),
                      ("Set the library property to an ENVI spectral library (.sli/.hdr) or a CSV file"));
    return FALSE;
  }
  try {
    st->library = std::make_shared<const SpectralLibrary>(read_spectral_library(st->settings.library));
  } catch (const std::exception &e) {
    GST_ELEMENT_ERROR(self, RESOURCE, OPEN_READ, ("Cannot read the spectral library %s", st->settings.library.c_str()),
                      ("%s", e.what()));
    return FALSE;
  }
  GST_INFO_OBJECT(self, "library %s: %zu entries, %zu channels (%s)", st->settings.library.c_str(),
                  st->library->entries(), st->library->channels, range_text(st->library->wavelengths_nm).c_str());
  if (!use_cuda(self)) return TRUE;
  return gstcs::start_gpu(base, "Starting CUDA classification", &st->gpu);
}

static gboolean classify_stop(GstCsBaseTransform *base) {
  auto *self = GST_HSI_CLASSIFY(base);
  const std::shared_ptr<ClassifyState> st = self->running.stop(GST_OBJECT(self));
  self->state = nullptr;
  if (!st) return TRUE;
  gstcs::finish_gpu(base, st->gpu.get());
  gst_clear_buffer(&st->device_scratch_map);  // device memory, before the device goes
  st->cuda.reset();
  st->gpu.reset();
  return TRUE;
}

static GstCaps *classify_transform_caps(GstBaseTransform *trans, GstPadDirection direction, GstCaps *caps,
                                        GstCaps *filter) {
  auto *self = GST_HSI_CLASSIFY(trans);
  const bool cuda = use_cuda(self);
  const bool rules = wants_rules(self);
  const std::shared_ptr<ClassifyState> state = self->running.for_queries(GST_OBJECT(self));
  GstCaps *media = gst_caps_new_empty();
  for (guint i = 0; i < gst_caps_get_size(caps); ++i) {
    const GstStructure *in = gst_caps_get_structure(caps, i);
    GstStructure *out;
    if (direction == GST_PAD_SINK && rules) {
      out = rule_structure(in);
      GstCaps *one = gst_caps_new_full(gst_structure_copy(in), nullptr);
      if (state && gst_caps_is_fixed(one)) {
        try {
          auto p = state->get(one);
          gst_structure_free(out);
          out = rule_structure_for(in, *p);
        } catch (const std::exception &e) {
          GST_DEBUG_OBJECT(self, "cannot prepare for %" GST_PTR_FORMAT ": %s", one, e.what());
        }
      }
      gst_caps_unref(one);
    } else if (direction == GST_PAD_SINK) {
      GstCaps *src = src_media_caps();
      out = gst_structure_copy(gst_caps_get_structure(src, 0));
      gst_caps_unref(src);
      if (const GValue *samples = gst_structure_get_value(in, "samples")) gst_structure_set_value(out, "width", samples);
      int block_lines = 0;
      if (gst_structure_get_int(in, "block-lines", &block_lines) && block_lines > 0)
        gst_structure_set(out, "height", G_TYPE_INT, block_lines, nullptr);
      gst_structure_set(out, "framerate", GST_TYPE_FRACTION, 0, 1, nullptr);
      // With fixed input caps the class count, hence the format, is known.
      GstCaps *one = gst_caps_new_full(gst_structure_copy(in), nullptr);
      if (state && gst_caps_is_fixed(one)) {
        try {
          auto p = state->get(one);
          gst_structure_set(out, "format", G_TYPE_STRING, gst_video_format_to_string(p->video_format()), nullptr);
          // Class k's name at index k - 1, for hsicolorize and envisink.
          set_class_names(out, "class-names", p->classifier->class_names());
        } catch (const std::exception &e) {
          GST_DEBUG_OBJECT(self, "cannot prepare for %" GST_PTR_FORMAT ": %s", one, e.what());
        }
      }
      gst_caps_unref(one);
      hsi_caps::copy_georeferencing(in, out);
    } else {
      GstCaps *sink = sink_media_caps();
      out = gst_structure_copy(gst_caps_get_structure(sink, 0));
      gst_caps_unref(sink);
      const GValue *width = gst_structure_get_value(in, rules ? "samples" : "width");
      if (width) gst_structure_set_value(out, "samples", width);
    }
    media = gst_caps_merge_structure(media, out);
  }
  GstCaps *result = gstcs::in_memories(media, cuda);
  gst_caps_unref(media);
  result = gstcs::filtered(result, filter);
  GST_LOG_OBJECT(self, "%s %" GST_PTR_FORMAT " -> %" GST_PTR_FORMAT, direction == GST_PAD_SINK ? "sink" : "src",
                 caps, result);
  return result;
}

static gboolean classify_set_caps(GstBaseTransform *trans, GstCaps *incaps, GstCaps *outcaps) {
  auto *self = GST_HSI_CLASSIFY(trans);
  ClassifyState *st = self->state;
  if (gst_cs_caps_has_device_feature(incaps) && !st->gpu) {
    GST_ELEMENT_ERROR(self, CORE, NEGOTIATION, ("Device memory negotiated but the element runs on the CPU backend"),
                      (nullptr));
    return FALSE;
  }
  GstCaps *plain_in = gst_caps_copy(incaps);
  gst_caps_set_features(plain_in, 0, nullptr);
  std::shared_ptr<Prepared> p;
  try {
    p = st->get(plain_in);
  } catch (const std::exception &e) {
    // Upstream may offer the same caps again after a refusal: one error for them.
    if (!st->refused_caps || !gst_caps_is_equal(st->refused_caps, plain_in))
      GST_ELEMENT_ERROR(self, STREAM, FORMAT, ("Cannot classify this stream with %s", st->settings.library.c_str()),
                        ("%s", e.what()));
    gst_caps_replace(&st->refused_caps, plain_in);
    gst_caps_unref(plain_in);
    return FALSE;
  }
  {
    // The rules pad's caps follow the stream (negotiated before its next push).
    std::lock_guard<std::mutex> g(st->lock);
    if (st->rules_structure) gst_structure_free(st->rules_structure);
    st->rules_structure = rule_structure_for(gst_caps_get_structure(plain_in, 0), *p);
    st->rules_pad_caps_stale = true;
  }
  gst_caps_unref(plain_in);
  const bool changed = p != st->active;
  if (changed)
    for (const std::string &note : p->notes) GST_INFO_OBJECT(self, "%s", note.c_str());
  if (st->rules) {
    hsi_caps::Stream rule_stream;
    std::string error;
    GstCaps *plain_out = gst_caps_copy(outcaps);
    gst_caps_set_features(plain_out, 0, nullptr);
    const bool ok = hsi_caps::stream_from_caps(plain_out, &rule_stream, &error);
    gst_caps_unref(plain_out);
    if (!ok || rule_stream.header.bands != p->classifier->class_count() ||
        rule_stream.header.samples != p->stream.header.samples ||
        rule_stream.header.data_type != DataType::f32 || rule_stream.header.interleave != Interleave::bsq) {
      GST_ELEMENT_ERROR(self, CORE, NEGOTIATION, ("Output caps do not fit the rule images"),
                        ("%zu classes need f32 BSQ with %zu bands and %zu samples, got %" GST_PTR_FORMAT " %s",
                         p->classifier->class_count(), p->classifier->class_count(), p->stream.header.samples, outcaps,
                         error.c_str()));
      return FALSE;
    }
  }
  GstVideoInfo out_info;
  const bool described = st->rules || gst_video_info_from_caps(&out_info, outcaps);
  if (!st->rules && (!described || GST_VIDEO_INFO_FORMAT(&out_info) != p->video_format() ||
                     GST_VIDEO_INFO_WIDTH(&out_info) != int(p->stream.header.samples))) {
    GST_ELEMENT_ERROR(self, CORE, NEGOTIATION, ("Output caps do not fit the class map"),
                      ("%zu classes need %s of width %zu, got %" GST_PTR_FORMAT "%s", p->classifier->class_count(),
                       gst_video_format_to_string(p->video_format()), p->stream.header.samples, outcaps,
                       described ? "" : " (too large for a video frame: fewer lines per block)"));
    return FALSE;
  }
  if (st->gpu && st->cuda_for != p) {
    const gboolean ok = gstcs::guard_bool(GST_ELEMENT(self), "Preparing the reference table on the GPU", [&] {
      st->cuda = std::make_unique<CudaSpectralClassifier>(*p->classifier, st->gpu->device());
      st->cuda_for = p;
      GST_INFO_OBJECT(self, "references in %s memory",
                      st->cuda->table_in_constant_memory() ? "constant" : "global (tiled through shared)");
      return TRUE;
    });
    if (!ok) return FALSE;
  }
  st->active = p;
  return TRUE;
}

// Lines of a block from its size; 0 (with an element error) when the size
// is not whole lines.
static size_t block_lines(GstHsiClassify *self, const Prepared &p, GstBuffer *in) {
  const size_t line_bytes = p.stream.line_bytes();
  const size_t size = gst_buffer_get_size(in);
  if (size == 0 || size % line_bytes != 0) {
    GST_ELEMENT_ERROR(self, STREAM, FORMAT, ("Buffer is not a block of whole lines"),
                      ("%zu bytes; a line of %zu samples x %zu bands of %s is %zu bytes", size,
                       p.stream.header.samples, p.stream.header.bands, data_type_name(p.stream.header.data_type),
                       line_bytes));
    return 0;
  }
  return size / line_bytes;
}

// Keeps the source caps' height equal to the block's line count (a stream's
// last block may be shorter). FLUSHING where the element is stopping (its
// source pad's caps may be gone already), NOT_NEGOTIATED where downstream
// refuses the height.
static GstFlowReturn ensure_height(GstHsiClassify *self, size_t lines) {
  GstBaseTransform *trans = GST_BASE_TRANSFORM(self);
  GstPad *src = GST_BASE_TRANSFORM_SRC_PAD(trans);
  GstCaps *current = gst_pad_get_current_caps(src);
  if (!current) return GST_PAD_IS_FLUSHING(src) ? GST_FLOW_FLUSHING : GST_FLOW_NOT_NEGOTIATED;
  int height = 0;
  gst_structure_get_int(gst_caps_get_structure(current, 0), "height", &height);
  bool ok = true;
  if (height != int(lines)) {
    GstCaps *updated = gst_caps_copy(current);
    gst_caps_set_simple(updated, "height", G_TYPE_INT, int(lines), nullptr);
    GST_DEBUG_OBJECT(self, "block of %zu lines: class map height %d -> %zu", lines, height, lines);
    ok = gst_base_transform_update_src_caps(trans, updated);
    gst_caps_unref(updated);
  }
  gst_caps_unref(current);
  if (ok) return GST_FLOW_OK;
  return GST_PAD_IS_FLUSHING(src) ? GST_FLOW_FLUSHING : GST_FLOW_NOT_NEGOTIATED;
}

// A block of no lines (an empty buffer) is dropped: it has no class map.
static GstFlowReturn classify_submit_input_buffer(GstBaseTransform *trans, gboolean is_discont, GstBuffer *input) {
  if (gst_buffer_get_size(input) > 0)
    return GST_BASE_TRANSFORM_CLASS(gst_hsi_classify_parent_class)->submit_input_buffer(trans, is_discont, input);
  gst_buffer_unref(input);
  return GST_FLOW_OK;
}

static GstFlowReturn classify_prepare_output_buffer(GstBaseTransform *trans, GstBuffer *in, GstBuffer **out) {
  auto *self = GST_HSI_CLASSIFY(trans);
  ClassifyState *st = self->state;
  if (!st || !st->active) return GST_FLOW_NOT_NEGOTIATED;
  const Prepared &p = *st->active;
  const size_t lines = block_lines(self, p, in);
  if (!lines) return GST_FLOW_ERROR;
  size_t size;
  if (st->rules) {
    size = p.classifier->class_count() * lines * p.stream.header.samples * sizeof(float);
  } else {
    if (const GstFlowReturn ret = ensure_height(self, lines); ret != GST_FLOW_OK) return ret;
    const GstVideoInfo info = class_map_info(p.video_format(), p.stream.header.samples, lines);
    size = GST_VIDEO_INFO_SIZE(&info);
  }
  if (st->gpu) return st->gpu->prepare_output(trans, in, size, out);
  *out = st->host_outputs.acquire(trans, size);
  if (!*out) {
    GST_ELEMENT_ERROR(self, RESOURCE, NO_SPACE_LEFT, ("Cannot allocate %zu bytes of system memory", size), (nullptr));
    return GST_FLOW_ERROR;
  }
  GST_BASE_TRANSFORM_GET_CLASS(trans)->copy_metadata(trans, in, *out);
  return GST_FLOW_OK;
}

// The rules pad (a new reference), or NULL when it was not requested.
static GstPad *get_rules_pad(GstHsiClassify *self) {
  GST_OBJECT_LOCK(self);
  GstPad *pad = self->rules_pad ? GST_PAD(gst_object_ref(self->rules_pad)) : nullptr;
  GST_OBJECT_UNLOCK(self);
  return pad;
}

// Brings the rules pad's sticky events up to the sink pad's: its own
// stream-start (same group), the rule images' caps (device memory first when
// on CUDA and downstream takes it), the segment. False (with an element
// error) when downstream takes no rule-image caps.
static bool prepare_rules_pad(GstHsiClassify *self, GstPad *pad) {
  ClassifyState *st = self->state;
  GstPad *sinkpad = GST_BASE_TRANSFORM_SINK_PAD(GST_BASE_TRANSFORM(self));
  GstEvent *start = gst_pad_get_sticky_event(pad, GST_EVENT_STREAM_START, 0);
  if (start) {
    gst_event_unref(start);
  } else {
    gchar *id = gst_pad_create_stream_id(pad, GST_ELEMENT(self), "rules");
    GstEvent *event = gst_event_new_stream_start(id);
    g_free(id);
    if (GstEvent *upstream = gst_pad_get_sticky_event(sinkpad, GST_EVENT_STREAM_START, 0)) {
      guint group = 0;
      if (gst_event_parse_group_id(upstream, &group)) gst_event_set_group_id(event, group);
      gst_event_unref(upstream);
    }
    gst_pad_push_event(pad, event);
  }
  GstCaps *media = nullptr;
  {
    std::lock_guard<std::mutex> g(st->lock);
    if (st->rules_structure && (st->rules_pad_caps_stale || !gst_pad_has_current_caps(pad)))
      media = gst_caps_new_full(gst_structure_copy(st->rules_structure), nullptr);
    st->rules_pad_caps_stale = false;
  }
  if (media) {
    GstCaps *offer = gstcs::in_memories(media, st->gpu != nullptr);
    GstCaps *accepted = gst_pad_peer_query_caps(pad, offer);
    if (gst_caps_is_empty(accepted)) {
      GST_ELEMENT_ERROR(self, CORE, NEGOTIATION, ("Downstream of the rules pad takes no rule images"),
                        ("offered %" GST_PTR_FORMAT, offer));
      gst_caps_unref(accepted);
      gst_caps_unref(offer);
      gst_caps_unref(media);
      return false;
    }
    accepted = gst_caps_fixate(accepted);
    GST_DEBUG_OBJECT(self, "rules pad caps %" GST_PTR_FORMAT, accepted);
    gst_pad_push_event(pad, gst_event_new_caps(accepted));
    gst_caps_unref(accepted);
    gst_caps_unref(offer);
    gst_caps_unref(media);
  }
  GstEvent *segment = gst_pad_has_current_caps(pad) ? gst_pad_get_sticky_event(sinkpad, GST_EVENT_SEGMENT, 0) : nullptr;
  if (segment) {
    GstEvent *current = gst_pad_get_sticky_event(pad, GST_EVENT_SEGMENT, 0);
    if (current != segment) gst_pad_push_event(pad, gst_event_ref(segment));
    if (current) gst_event_unref(current);
    gst_event_unref(segment);
  }
  return true;
}

// Pushes a block's rule images on the rules pad. Only errors and flushing
// stop the stream: an unlinked or finished rules branch does not.
static GstFlowReturn push_rules(GstHsiClassify *self, GstPad *pad, GstBuffer *rules) {
  if (!prepare_rules_pad(self, pad)) {
    gst_buffer_unref(rules);
    return GST_FLOW_NOT_NEGOTIATED;
  }
  const GstFlowReturn ret = gst_pad_push(pad, rules);
  if (ret == GST_FLOW_NOT_LINKED || ret == GST_FLOW_EOS) return GST_FLOW_OK;
  return ret;
}

namespace {
// References released at the end of a scope, whatever path leaves it.
struct OwnedBuffer {
  GstBuffer *buffer = nullptr;
  ~OwnedBuffer() { gst_clear_buffer(&buffer); }
  GstBuffer *release() { return std::exchange(buffer, nullptr); }
};
struct OwnedPad {
  GstPad *pad = nullptr;
  ~OwnedPad() { gst_clear_object(&pad); }
};
}  // namespace

// The CPU backend: classifies `in` into `out` (class map, or rule images with
// output=rule-images) and, when `rules` is given, the rule images into a new
// buffer there (the same as `out` with output=rule-images).
static GstFlowReturn classify_on_cpu(GstHsiClassify *self, GstBuffer *in, GstBuffer *out, size_t lines,
                                     ClassificationOutput output, size_t map_bytes, size_t rules_bytes,
                                     GstBuffer **rules) {
  ClassifyState *st = self->state;
  const Prepared &p = *st->active;
  GstMapInfo in_map, out_map, rules_map;
  if (!gst_buffer_map(in, &in_map, GST_MAP_READ)) {
    GST_ELEMENT_ERROR(self, RESOURCE, READ, ("Cannot map the input block"), (nullptr));
    return GST_FLOW_ERROR;
  }
  if (!gst_buffer_map(out, &out_map, GST_MAP_WRITE)) {
    gst_buffer_unmap(in, &in_map);
    GST_ELEMENT_ERROR(self, RESOURCE, WRITE, ("Cannot map the class map"), (nullptr));
    return GST_FLOW_ERROR;
  }
  bool rules_mapped = false;
  if (st->rules) {
    st->host_scratch_map.resize(map_bytes);
    output.class_map = st->host_scratch_map.data();
    output.rule_images = reinterpret_cast<float *>(out_map.data);
    if (rules) *rules = gst_buffer_ref(out);
  } else {
    output.class_map = out_map.data;
    if (rules) {
      GstAllocationParams params;
      gst_allocation_params_init(&params);
      *rules = st->host_rules.acquire(GST_OBJECT(self), nullptr, params, rules_bytes);  // the default allocator
      rules_mapped = *rules && gst_buffer_map(*rules, &rules_map, GST_MAP_WRITE);
      if (!rules_mapped) {
        gst_buffer_unmap(out, &out_map);
        gst_buffer_unmap(in, &in_map);
        GST_ELEMENT_ERROR(self, RESOURCE, NO_SPACE_LEFT, ("Cannot allocate the rule images"),
                          ("%zu bytes", rules_bytes));
        return GST_FLOW_ERROR;
      }
      output.rule_images = reinterpret_cast<float *>(rules_map.data);
    }
  }
  const GstFlowReturn ret = gstcs::guard_flow(GST_ELEMENT(self), "Classifying", [&] {
    p.classifier->classify(make_cube_block(p.stream.header, in_map.data, lines), output);
    return GST_FLOW_OK;
  });
  if (rules_mapped) gst_buffer_unmap(*rules, &rules_map);
  gst_buffer_unmap(out, &out_map);
  gst_buffer_unmap(in, &in_map);
  return ret;
}

// A threshold set while the element runs applies from the next block on, on
// either backend (nothing prepared depends on it: the kernels take it with
// each launch). One the method's scores cannot meet is ignored, with a
// warning, and the last good one kept.
static void follow_threshold_property(GstHsiClassify *self, const Prepared &p) {
  ClassifyState *st = self->state;
  GST_OBJECT_LOCK(self);
  const double property = self->threshold;
  GST_OBJECT_UNLOCK(self);
  if (property == st->threshold_seen) return;
  st->threshold_seen = property;
  Settings wanted = st->settings;
  wanted.threshold = property;
  const double threshold = threshold_of(wanted);
  if (const std::string problem = threshold_problem(wanted.method, threshold); !problem.empty()) {
    GST_ELEMENT_WARNING(self, RESOURCE, SETTINGS, ("Threshold property ignored: %s", problem.c_str()),
                        ("the blocks keep threshold %g", p.classifier->threshold()));
    return;
  }
  p.classifier->set_threshold(threshold);
  if (st->cuda) st->cuda->set_threshold(threshold);
  std::lock_guard<std::mutex> g(st->lock);  // for the streams prepared later
  st->settings.threshold = property;
  GST_INFO_OBJECT(self, "threshold %g from this block on", threshold);
}

static GstFlowReturn classify_transform(GstBaseTransform *trans, GstBuffer *in, GstBuffer *out) {
  auto *self = GST_HSI_CLASSIFY(trans);
  ClassifyState *st = self->state;
  const Prepared &p = *st->active;
  follow_threshold_property(self, p);
  const EnviHeader &h = p.stream.header;
  const size_t lines = gst_buffer_get_size(in) / p.stream.line_bytes();
  const GstVideoInfo info = class_map_info(p.video_format(), h.samples, lines);
  ClassificationOutput output;
  output.class_map_stride = size_t(GST_VIDEO_INFO_PLANE_STRIDE(&info, 0));
  output.class_map_format = p.classifier->class_map_format();
  const size_t map_bytes = size_t(GST_VIDEO_INFO_SIZE(&info));
  const size_t rules_bytes = p.classifier->class_count() * lines * h.samples * sizeof(float);
  // Rule images for the rules pad only when it is linked: the source pad's
  // own buffer with output=rule-images, else a buffer of their own.
  OwnedPad rules_pad{get_rules_pad(self)};
  if (rules_pad.pad && !gst_pad_is_linked(rules_pad.pad)) gst_clear_object(&rules_pad.pad);
  OwnedBuffer pad_rules;
  GstFlowReturn ret;
  if (st->gpu) {
    ret = gstcs::guard_flow(GST_ELEMENT(self), "Classifying on the GPU", [&] {
      gstcs::ElementGpu::Input input = st->gpu->read(in);
      GstBuffer *map_buffer = out;
      if (st->rules) {
        // The kernel always writes a class map: a device scratch buffer, reused
        // (its writes are ordered on the element's stream).
        if (!st->device_scratch_map || gst_buffer_get_size(st->device_scratch_map) < map_bytes) {
          gst_clear_buffer(&st->device_scratch_map);
          st->device_scratch_map = st->gpu->new_output(map_bytes);
        }
        map_buffer = st->device_scratch_map;
        if (rules_pad.pad) pad_rules.buffer = gst_buffer_ref(out);
      } else if (rules_pad.pad) {
        pad_rules.buffer = st->gpu->new_output(rules_bytes);
      }
      GstBuffer *rules_buffer = st->rules ? out : pad_rules.buffer;
      output.class_map = st->gpu->begin_output(map_buffer);
      if (rules_buffer) output.rule_images = static_cast<float *>(st->gpu->begin_output(rules_buffer));
      st->cuda->classify(make_cube_block(h, input.data(), lines), output, st->gpu->stream());
      if (rules_buffer && rules_buffer != out) st->gpu->end_output(rules_buffer);
      if (map_buffer != out) st->gpu->end_output(map_buffer);
      st->gpu->end_output(out);
      return GST_FLOW_OK;
    });
  } else {
    ret = classify_on_cpu(self, in, out, lines, output, map_bytes, rules_bytes,
                          rules_pad.pad ? &pad_rules.buffer : nullptr);
  }
  if (ret != GST_FLOW_OK || !rules_pad.pad) return ret;
  if (pad_rules.buffer != out) gst_buffer_copy_into(pad_rules.buffer, in, GST_BUFFER_COPY_METADATA, 0, -1);
  return push_rules(self, rules_pad.pad, pad_rules.release());
}

// Events of the sink pad that the rules pad follows too. Stream-start, caps
// and segment are (re)made by prepare_rules_pad before the rules pad's next
// buffer or EOS; a segment after a seek is passed on once the pad has caps.
static gboolean classify_sink_event(GstBaseTransform *trans, GstEvent *event) {
  auto *self = GST_HSI_CLASSIFY(trans);
  if (GstPad *pad = get_rules_pad(self)) {
    switch (GST_EVENT_TYPE(event)) {
      case GST_EVENT_EOS:
        if (self->state && prepare_rules_pad(self, pad)) gst_pad_push_event(pad, gst_event_ref(event));
        break;
      case GST_EVENT_FLUSH_START:
      case GST_EVENT_FLUSH_STOP: gst_pad_push_event(pad, gst_event_ref(event)); break;
      case GST_EVENT_SEGMENT:
        if (gst_pad_has_current_caps(pad)) gst_pad_push_event(pad, gst_event_ref(event));
        break;
      default: break;
    }
    gst_object_unref(pad);
  }
  return GST_BASE_TRANSFORM_CLASS(gst_hsi_classify_parent_class)->sink_event(trans, event);
}

static GstPad *classify_request_new_pad(GstElement *element, GstPadTemplate *templ, const gchar *name,
                                        const GstCaps *) {
  auto *self = GST_HSI_CLASSIFY(element);
  if (name && std::string(name) != "rules") {
    GST_WARNING_OBJECT(self, "the only request pad is 'rules', not '%s'", name);
    return nullptr;
  }
  GST_OBJECT_LOCK(self);
  const bool taken = self->rules_pad != nullptr;
  GST_OBJECT_UNLOCK(self);
  if (taken) {
    GST_WARNING_OBJECT(self, "the rules pad was already requested");
    return nullptr;
  }
  GstPad *pad = gst_pad_new_from_template(templ, "rules");
  if (GST_STATE(element) >= GST_STATE_PAUSED) gst_pad_set_active(pad, TRUE);
  GST_OBJECT_LOCK(self);
  self->rules_pad = GST_PAD(gst_object_ref(pad));
  GST_OBJECT_UNLOCK(self);
  gst_element_add_pad(element, pad);
  return pad;
}

static void classify_release_pad(GstElement *element, GstPad *pad) {
  auto *self = GST_HSI_CLASSIFY(element);
  GST_OBJECT_LOCK(self);
  const bool ours = pad == self->rules_pad;
  if (ours) self->rules_pad = nullptr;
  GST_OBJECT_UNLOCK(self);
  if (!ours) return;
  gst_pad_set_active(pad, FALSE);
  gst_element_remove_pad(element, pad);
  gst_object_unref(pad);
}

enum {
  PROP_0,
  PROP_LIBRARY,
  PROP_ENTRIES,
  PROP_METHOD,
  PROP_THRESHOLD,
  PROP_PRECISION,
  PROP_RESAMPLE,
  PROP_FIRST_BAND,
  PROP_LAST_BAND,
  PROP_HONOUR_BBL,
  PROP_OUTPUT,
};

static void classify_set_property(GObject *object, guint prop_id, const GValue *value, GParamSpec *pspec) {
  if (!gstcs::property_change_allowed(object, pspec)) return;
  auto *self = GST_HSI_CLASSIFY(object);
  GST_OBJECT_LOCK(self);
  switch (prop_id) {
    case PROP_LIBRARY:
      g_free(self->library);
      self->library = g_value_dup_string(value);
      break;
    case PROP_ENTRIES:
      g_free(self->entries);
      self->entries = g_value_dup_string(value);
      break;
    case PROP_METHOD: self->method = GstHsiMethod(g_value_get_enum(value)); break;
    case PROP_THRESHOLD: self->threshold = g_value_get_double(value); break;
    case PROP_PRECISION: self->precision = GstHsiPrecision(g_value_get_enum(value)); break;
    case PROP_RESAMPLE: self->resample = GstHsiResample(g_value_get_enum(value)); break;
    case PROP_FIRST_BAND: self->first_band = g_value_get_uint(value); break;
    case PROP_LAST_BAND: self->last_band = g_value_get_int(value); break;
    case PROP_HONOUR_BBL: self->honour_bbl = g_value_get_boolean(value); break;
    case PROP_OUTPUT: self->output = GstHsiOutput(g_value_get_enum(value)); break;
    default: G_OBJECT_WARN_INVALID_PROPERTY_ID(object, prop_id, pspec);
  }
  GST_OBJECT_UNLOCK(self);
}

static void classify_get_property(GObject *object, guint prop_id, GValue *value, GParamSpec *pspec) {
  auto *self = GST_HSI_CLASSIFY(object);
  GST_OBJECT_LOCK(self);
  switch (prop_id) {
    case PROP_LIBRARY: g_value_set_string(value, self->library); break;
    case PROP_ENTRIES: g_value_set_string(value, self->entries); break;
    case PROP_METHOD: g_value_set_enum(value, self->method); break;
    case PROP_THRESHOLD: g_value_set_double(value, self->threshold); break;
    case PROP_PRECISION: g_value_set_enum(value, self->precision); break;
    case PROP_RESAMPLE: g_value_set_enum(value, self->resample); break;
    case PROP_FIRST_BAND: g_value_set_uint(value, self->first_band); break;
    case PROP_LAST_BAND: g_value_set_int(value, self->last_band); break;
    case PROP_HONOUR_BBL: g_value_set_boolean(value, self->honour_bbl); break;
    case PROP_OUTPUT: g_value_set_enum(value, self->output); break;
    default: G_OBJECT_WARN_INVALID_PROPERTY_ID(object, prop_id, pspec);
  }
  GST_OBJECT_UNLOCK(self);
}

static void classify_finalize(GObject *object) {
  auto *self = GST_HSI_CLASSIFY(object);
  g_free(self->library);
  g_free(self->entries);
  self->running.~RunningState();
  G_OBJECT_CLASS(gst_hsi_classify_parent_class)->finalize(object);
}

static void gst_hsi_classify_class_init(GstHsiClassifyClass *klass) {
  GObjectClass *gobject_class = G_OBJECT_CLASS(klass);
  gobject_class->set_property = classify_set_property;
  gobject_class->get_property = classify_get_property;
  gobject_class->finalize = classify_finalize;
  const auto flags = GParamFlags(G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY);
  g_object_class_install_property(
      gobject_class, PROP_LIBRARY,
      g_param_spec_string("library", "Spectral library",
                          "Reference spectra: an ENVI spectral library (.sli or its .hdr) or a CSV file (.csv: a "
                          "wavelength column, an optional fwhm column, one column per spectrum). Resampled to the "
                          "stream's wavelengths when they differ",
                          nullptr, flags));
  g_object_class_install_property(
      gobject_class, PROP_ENTRIES,
      g_param_spec_string("entries", "Library entries",
                          "Comma-separated library entries to classify with, by name or 0-based index (class k = "
                          "the k-th entry listed; a listed entry without data at a used band is an error); empty = "
                          "every entry, those without data at a used band skipped and logged",
                          nullptr, flags));
  g_object_class_install_property(
      gobject_class, PROP_METHOD,
      g_param_spec_enum("method", "Method", "How a pixel is compared with each reference spectrum",
                        gst_hsi_method_get_type(), GST_HSI_METHOD_SAM, flags));
  g_object_class_install_property(
      gobject_class, PROP_THRESHOLD,
      g_param_spec_double("threshold", "Threshold",
                          "Pixels whose best score is worse stay unclassified (class 0): for sam a maximum angle "
                          "in radians, sid a maximum divergence in nats, euclidean a maximum distance in the data's "
                          "units, correlation and bandfit a minimum coefficient in [-1, 1]. -2 = the method's "
                          "default: 0.10 rad for sam (ENVI's), no threshold for the others. A threshold that no "
                          "score meets is refused; one that every score meets (sam above pi) keeps every pixel. "
                          "May change while the element runs: from the next block on (one that no score meets is "
                          "then ignored, with a warning)",
                          -2.0, G_MAXDOUBLE, kMethodDefaultThreshold,
                          GParamFlags(G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_PLAYING)));
  g_object_class_install_property(
      gobject_class, PROP_PRECISION,
      g_param_spec_enum("precision", "Precision", "How the per-band sums are accumulated",
                        gst_hsi_precision_get_type(), GST_HSI_PRECISION_EXACT, flags));
  g_object_class_install_property(
      gobject_class, PROP_RESAMPLE,
      g_param_spec_enum("resample", "Library resampling",
                        "How library spectra are brought onto the stream's bands when the wavelengths differ",
                        gst_hsi_resample_get_type(), GST_HSI_RESAMPLE_AUTO, flags));
  g_object_class_install_property(
      gobject_class, PROP_FIRST_BAND,
      g_param_spec_uint("first-band", "First band", "First band used, 0-based (inclusive)", 0, G_MAXINT, 0, flags));
  g_object_class_install_property(
      gobject_class, PROP_LAST_BAND,
      g_param_spec_int("last-band", "Last band", "Last band used, 0-based (inclusive); -1 = the stream's last band",
                       -1, G_MAXINT, -1, flags));
  g_object_class_install_property(
      gobject_class, PROP_HONOUR_BBL,
      g_param_spec_boolean("honour-bbl", "Honour bad band list",
                           "Leave out the bands the stream's bad band list (caps field bbl, ENVI 'bbl') marks bad",
                           TRUE, flags));
  g_object_class_install_property(
      gobject_class, PROP_OUTPUT,
      g_param_spec_enum("output", "Output",
                        "What the source pad carries. The request pad 'rules' gives the rule images next to the "
                        "class map, whatever this says",
                        gst_hsi_output_get_type(),
                        GST_HSI_OUTPUT_CLASS_MAP, flags));
  GstElementClass *element_class = GST_ELEMENT_CLASS(klass);
  GstCaps *sink = sink_media_caps(), *src = src_media_caps();
  GstCaps *rules_template = gst_caps_from_string(HSI_MEDIA_TYPE ", samples = (int) [ 1, MAX ], bands = (int) [ 1, MAX ], "
                                                 "interleave = (string) bsq, format = (string) f32");
  src = gst_caps_merge(src, gst_caps_ref(rules_template));
  GstCaps *sink_any = gst_cs_caps_any_memory(sink), *src_any = gst_cs_caps_any_memory(src);
  gst_element_class_add_pad_template(element_class, gst_pad_template_new("sink", GST_PAD_SINK, GST_PAD_ALWAYS, sink_any));
  gst_element_class_add_pad_template(element_class, gst_pad_template_new("src", GST_PAD_SRC, GST_PAD_ALWAYS, src_any));
  GstCaps *rules_any = gst_cs_caps_any_memory(rules_template);
  gst_element_class_add_pad_template(element_class,
                                     gst_pad_template_new("rules", GST_PAD_SRC, GST_PAD_REQUEST, rules_any));
  gst_caps_unref(rules_any);
  gst_caps_unref(sink);
  gst_caps_unref(src);
  gst_caps_unref(sink_any);
  gst_caps_unref(src_any);
  gst_caps_unref(rules_template);
  element_class->request_new_pad = classify_request_new_pad;
  element_class->release_pad = classify_release_pad;
  gst_element_class_set_static_metadata(
      element_class, "Hyperspectral classifier", "Filter/Analyzer/Video",
      "Classifies every pixel of hyperspectral line blocks against reference spectra of a spectral library (sam, "
      "sid, correlation, bandfit, euclidean); outputs the class map (GRAY8, GRAY16_LE beyond 254 classes; 0 = "
      "unclassified or no data, k = k-th reference) and, on the request pad 'rules', every pixel's score against each "
      "class (f32 BSQ, one band per class), on CUDA or the CPU",
      "gst-cuda-sensing developers");
  GstBaseTransformClass *trans_class = GST_BASE_TRANSFORM_CLASS(klass);
  trans_class->transform_caps = classify_transform_caps;
  trans_class->set_caps = classify_set_caps;
  trans_class->submit_input_buffer = classify_submit_input_buffer;
  trans_class->prepare_output_buffer = classify_prepare_output_buffer;
  trans_class->transform = classify_transform;
  trans_class->sink_event = classify_sink_event;
  trans_class->passthrough_on_same_caps = FALSE;
  GstCsBaseTransformClass *cs_class = GST_CS_BASE_TRANSFORM_CLASS(klass);
  cs_class->start_backend = classify_start;
  cs_class->stop_backend = classify_stop;
  gst_type_mark_as_plugin_api(gst_hsi_method_get_type(), GstPluginAPIFlags(0));
  gst_type_mark_as_plugin_api(gst_hsi_precision_get_type(), GstPluginAPIFlags(0));
  gst_type_mark_as_plugin_api(gst_hsi_resample_get_type(), GstPluginAPIFlags(0));
  gst_type_mark_as_plugin_api(gst_hsi_output_get_type(), GstPluginAPIFlags(0));
  GST_DEBUG_CATEGORY_INIT(gst_hsi_classify_debug, "hsiclassify", 0, "hyperspectral classification");
}

static void gst_hsi_classify_init(GstHsiClassify *self) {
  new (&self->running) gstcs::RunningState<ClassifyState>();
  self->method = GST_HSI_METHOD_SAM;
  self->threshold = kMethodDefaultThreshold;
  self->precision = GST_HSI_PRECISION_EXACT;
  self->resample = GST_HSI_RESAMPLE_AUTO;
  self->last_band = -1;
  self->honour_bbl = TRUE;
  self->output = GST_HSI_OUTPUT_CLASS_MAP;
}
