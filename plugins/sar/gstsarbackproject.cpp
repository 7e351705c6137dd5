/* sarbackproject: SAR image formation by time-domain backprojection.
 *
 * Input: range profiles (application/x-sar-range-profiles, one pulse per row,
 * each with its GstSarPulseMeta row). Output: complex images
 * (application/x-sar-image, CF32, width x height) with a GstSarImageMeta
 * naming the grid and the pulses used. The arithmetic is
 * kernels/sar/backprojection.h's (CPU backprojector; CUDA backprojector on
 * the element's stream, images in device memory); this file only schedules
 * pulses and grids.
 *
 * Apertures: `aperture` = 0 adds every block as it arrives into one image,
 * pushed at end-of-stream. `aperture` = A > 0 makes image k from pulses
 * [k * stride, k * stride + A) of the stream. With stride < A (video SAR) the
 * element keeps the last image and moves it on: image k = image k-1 + the
 * pulses that entered - the pulses that left; every `refresh-interval`
 * images it is recomputed from all its pulses. Each add or subtract rounds
 * the image to float once more, so between refreshes an image drifts from a
 * full recomputation by about sqrt(2 n) float roundings of the partial sums
 * after n moves (the tests hold it 80 dB below the image's energy for the
 * default refresh interval). Only the pulses an image still needs are kept, in
 * a ring of A + stride profiles (A when stride >= A), so endless streams run
 * in constant memory; pulses that belong to no image (stride > A) are skipped,
 * and a partial aperture at end-of-stream makes no image (a warning says how
 * many pulses that leaves out, or that no image was formed). Images carry
 * their aperture's first pulse's time and last until the next image's
 * (`stride` pulses; a whole-stream image: its pulses' span); the LATENCY
 * query adds the aperture's span, (aperture - 1) pulse intervals, once
 * pulses have shown the interval.
 *
 * The grid is north-up in the plane tangent to the ellipsoid at its centre:
 * the scene reference point of the first image's middle pulse (whole-stream
 * mode: of the first pulse), moved by center-x/y/z metres east, north and up.
 * It stays fixed for the stream.
 *
 * Tiling: the grid is cut into bands of at most `max-tile-pixels` pixels
 * (whole rows, a multiple of the kernels' 16-row tiles when possible), each
 * band backprojected on its own, into its own rows of the one output image
 * (kernels/sar/banded_image.h). On CUDA, bands stay in device memory while
 * the image, its output copy and the ring fit in `device-memory-limit`;
 * otherwise the bands that do not fit live in page-locked host memory and
 * are paged through the device for every block of pulses, and images are
 * handed on in system memory (the caps say so: the residency plan is made
 * from the caps and the budget, in transform_caps and again in set_caps).
 *
 * Non-finite samples (NaN, infinity) are an error, not a silent hole in the
 * image: input in system memory is checked on the host before use; on CUDA,
 * profiles that arrive in device memory are not checked (that would cost a
 * download), and a non-finite sample makes the pixels whose range reaches it
 * non-finite. */
#include "gstsarbackproject.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

#include "../core/gstcs-cxx.h"
#include "../core/gstcs-gpu.h"
#include "sar-common.h"
#include "sar/backprojection.h"
#include "sar/banded_image.h"
#include "sar/geodesy.h"
#include "gstcs-cxx.h"

GST_DEBUG_CATEGORY_STATIC(gst_sar_backproject_debug);
#define GST_CAT_DEFAULT gst_sar_backproject_debug

using cs::sar::Accumulate;
using cs::sar::BackprojectionPulse;
using Cf = std::complex<float>;

namespace {

constexpr int kDefaultWidth = 512, kDefaultHeight = 512;
constexpr double kDefaultSpacing = 0.5;
constexpr int kDefaultKnabTaps = 8;
constexpr int kDefaultRefreshInterval = 16;
constexpr gint64 kDefaultMaxTilePixels = gint64(1) << 24;

GType interpolation_get_type() {
  static GType type = 0;
  static const GEnumValue values[] = {
      {int(cs::sar::Interpolation::Nearest), "Nearest range bin (fast; needs well upsampled profiles)", "nearest"},
      {int(cs::sar::Interpolation::Linear), "Linear between the two nearest bins", "linear"},
      {int(cs::sar::Interpolation::Knab), "Knab windowed sinc over knab-taps bins (most accurate)", "knab"},
      {0, nullptr, nullptr}};
  if (g_once_init_enter(&type)) g_once_init_leave(&type, g_enum_register_static("GstSarInterpolation", values));
  return type;
}

GType precision_get_type() {
  static GType type = 0;
  static const GEnumValue values[] = {
      {int(cs::sar::Precision::Fast),
       "Per-tile references in double, each pixel's offset from them in float, phase summed before reduction "
       "(fastest; about 120 dB signal-to-error)",
       "fast"},
      {int(cs::sar::Precision::Mixed),
       "As fast, with each pixel's phase steps reduced modulo one turn exactly (about 123-125 dB)", "mixed"},
      {int(cs::sar::Precision::Double), "Everything in double (the reference)", "double"},
      {0, nullptr, nullptr}};
  if (g_once_init_enter(&type)) g_once_init_leave(&type, g_enum_register_static("GstSarPrecision", values));
  return type;
}

struct Settings {
  int width = kDefaultWidth, height = kDefaultHeight;
  double spacing_m = kDefaultSpacing;
  double centre_offset[3] = {0, 0, 0};  // east, north, up of the scene reference point
  cs::sar::Interpolation interpolation = cs::sar::Interpolation::Linear;
  int knab_taps = kDefaultKnabTaps;
  cs::sar::Precision precision = cs::sar::Precision::Mixed;
  int64_t aperture = 0, stride = 0;
  int refresh_interval = kDefaultRefreshInterval;
  int64_t max_tile_pixels = kDefaultMaxTilePixels;
  guint64 device_memory_limit = 0;  // bytes; 0 = automatic
  gboolean custom_meta = FALSE;     // also attach the grid as a GstCustomMeta
};

// A device allocation freed with the element's state (after its stream is idle).
class DeviceArray {
 public:
  DeviceArray() = default;
  DeviceArray(size_t bytes, int device) : ptr_(cs::device_alloc(bytes, device)), device_(device) {}
  DeviceArray(DeviceArray &&o) noexcept : ptr_(o.ptr_), device_(o.device_) { o.ptr_ = nullptr; }
  DeviceArray &operator=(DeviceArray &&o) noexcept {
    std::swap(ptr_, o.ptr_);
    std::swap(device_, o.device_);
    return *this;
  }
  ~DeviceArray() {
    if (ptr_) cs::device_free(ptr_, device_);
  }
  Cf *get() const { return static_cast<Cf *>(ptr_); }

 private:
  void *ptr_ = nullptr;
  int device_ = 0;
};

// Which pulse of the collection, sent when.
struct PulseStamp {
  guint64 index = 0;
  double tx_time = 0;
  GstClockTime pts = GST_CLOCK_TIME_NONE;  // its block's time moved on by its transmit time within the block
};

// The stream time of row `row` of a block: the block's PTS plus the row's
// transmit time after the block's first row (none without a PTS, or for
// transmit times that go back).
static GstClockTime pulse_pts(GstBuffer *block, const GstSarPulseMeta *meta, int64_t row) {
  const GstClockTime pts = GST_BUFFER_PTS(block);
  const double after = meta->pulses[row].tx_time - meta->pulses[0].tx_time;
  if (!GST_CLOCK_TIME_IS_VALID(pts) || !std::isfinite(after) || after < 0) return pts;
  return pts + GstClockTime(std::llround(after * GST_SECOND));
}

struct BackprojectState {
  std::unique_ptr<gstcs::ElementGpu> gpu;
  size_t device_budget = 0;  // CUDA: device-memory-limit, or the automatic budget at start
  Settings settings;         // taken at set_caps
  gstsar::RangeProfilesFormat profiles;
  cs::sar::PulseCompressionConfig compression;
  bool negotiated = false;

  // Aperture schedule: image k covers stream pulses [k * stride, k * stride + aperture).
  bool incremental = false;  // stride < aperture: images move on by add / subtract
  bool warned_stride_unused = false;
  int64_t capacity = 0;      // ring slots (pulse n lives in slot n % capacity)
  int64_t pulses_seen = 0;   // pulses of the stream so far
  int64_t next_image = 0;

  std::vector<BackprojectionPulse> ring_info;
  std::vector<PulseStamp> ring_stamp;
  std::vector<Cf> host_ring;  // CPU backend
  gstcs::OutputPool host_images;  // CPU backend: the images
  DeviceArray device_ring;    // CUDA backend
  std::unique_ptr<cs::sar::BandedImage> image;  // the bands, resident or paged, and their backprojectors

  bool have_grid = false;
  cs::sar::ImageGrid grid;

  // Whole-stream mode (aperture 0).
  int64_t accumulated = 0;
  PulseStamp first_stamp, last_stamp;
  GstClockTime first_pts = GST_CLOCK_TIME_NONE;

  // Seconds between pulses (TxTime), from the first block of two or more; 0 until known.
  double pulse_interval_s = 0;

  // The input being consumed by generate_output; on CUDA its device view,
  // made once per buffer (a system-memory buffer is uploaded once).
  GstBuffer *input = nullptr;
  int64_t input_row = 0, input_rows = 0;
  std::unique_ptr<gstcs::ElementGpu::Input> device_input;

  ~BackprojectState() { release_input(); }
  void release_input() {
    device_input.reset();
    if (input) gst_buffer_unref(input);
    input = nullptr;
    input_row = input_rows = 0;
  }
  int64_t bins() const { return profiles.bins_per_pulse; }
  size_t image_pixels() const { return size_t(settings.width) * size_t(settings.height); }
  Cf *ring() { return gpu ? device_ring.get() : host_ring.data(); }
};

}  // namespace

struct _GstSarBackproject {
  GstCsBaseTransform parent;
  Settings props;  // under the object lock
  // Between start and stop: the streaming thread uses `state`, queries `running`.
  BackprojectState *state;
  gstcs::RunningState<BackprojectState> running;
};

G_DEFINE_TYPE(GstSarBackproject, gst_sar_backproject, GST_TYPE_CS_BASE_TRANSFORM)
GST_ELEMENT_REGISTER_DEFINE(sarbackproject, "sarbackproject", GST_RANK_NONE, GST_TYPE_SAR_BACKPROJECT)

#define SINK_CAPS GST_SAR_RANGE_PROFILES_MEDIA_TYPE ", format=(string)CF32"
#define SRC_CAPS GST_SAR_IMAGE_MEDIA_TYPE ", format=(string)CF32"
static GstStaticPadTemplate sink_template = GST_STATIC_PAD_TEMPLATE(
    "sink", GST_PAD_SINK, GST_PAD_ALWAYS,
    GST_STATIC_CAPS(GST_SAR_RANGE_PROFILES_MEDIA_TYPE "(" GST_CAPS_FEATURE_MEMORY_CS_DEVICE
                                                      "), format=(string)CF32; " SINK_CAPS));
static GstStaticPadTemplate src_template = GST_STATIC_PAD_TEMPLATE(
    "src", GST_PAD_SRC, GST_PAD_ALWAYS,
    GST_STATIC_CAPS(GST_SAR_IMAGE_MEDIA_TYPE "(" GST_CAPS_FEATURE_MEMORY_CS_DEVICE "), format=(string)CF32; " SRC_CAPS));

enum {
  PROP_0,
  PROP_WIDTH,
  PROP_HEIGHT,
  PROP_PIXEL_SPACING,
  PROP_CENTER_X,
  PROP_CENTER_Y,
  PROP_CENTER_Z,
  PROP_INTERPOLATION,
  PROP_KNAB_TAPS,
  PROP_PRECISION,
  PROP_APERTURE,
  PROP_STRIDE,
  PROP_REFRESH_INTERVAL,
  PROP_MAX_TILE_PIXELS,
  PROP_DEVICE_MEMORY_LIMIT,
  PROP_CUSTOM_META,
};

// ------------------------------------------------------------------ memory plan

// Profiles the ring holds: A + stride for video SAR (stride < A), A for
// separate apertures, none in whole-stream mode.
static int64_t ring_capacity(const Settings &s) {
  if (s.aperture == 0) return 0;
  const int64_t stride = s.stride > 0 ? s.stride : s.aperture;
  return stride < s.aperture ? s.aperture + stride : s.aperture;
}

static std::vector<cs::sar::RowBand> bands_of(const Settings &s) {
  return cs::sar::split_into_bands(s.width, s.height, s.max_tile_pixels);
}

// CUDA: which bands stay in device memory, for profiles of `bins` bins.
static cs::sar::BandResidency residency_plan(const Settings &s, int64_t bins, size_t budget) {
  std::vector<size_t> band_bytes;
  for (const cs::sar::RowBand &band : bands_of(s)) band_bytes.push_back(size_t(band.rows * s.width) * sizeof(Cf));
  const size_t ring_bytes = size_t(ring_capacity(s)) * size_t(bins) * sizeof(Cf);
  return cs::sar::plan_band_residency(band_bytes, ring_bytes, budget);
}

// Whether images can be handed on in device memory, for these sink caps:
// only when the whole image stays on the device. Before start (no budget
// yet) both memories are offered; caps without a fixed bins-per-pulse are
// planned without the ring (set_caps plans again with the real one).
static bool images_stay_on_device(GstSarBackproject *self, const Settings &props, GstCaps *sink_caps) {
  const std::shared_ptr<BackprojectState> st = self->running.for_queries(GST_OBJECT(self));
  if (!st || !st->gpu) return true;
  int bins = 0;
  if (!gst_caps_is_empty(sink_caps))
    gst_structure_get_int(gst_caps_get_structure(sink_caps, 0), "bins-per-pulse", &bins);
  return residency_plan(props, std::max(bins, 0), st->device_budget).all_resident();
}

// ------------------------------------------------------------------ caps

static GstCaps *bp_transform_caps(GstBaseTransform *trans, GstPadDirection direction, GstCaps *caps,
                                  GstCaps *filter) {
  auto *self = GST_SAR_BACKPROJECT(trans);
  bool device_memory = gst_cs_base_transform_use_cuda(GST_CS_BASE_TRANSFORM(trans));
  GstCaps *media;
  if (direction == GST_PAD_SINK) {
    GST_OBJECT_LOCK(self);
    const Settings props = self->props;
    GST_OBJECT_UNLOCK(self);
    gstsar::SarImageFormat f;
    f.width = props.width;
    f.height = props.height;
    media = gstsar::sar_image_caps(f);
    // Paged images come out through the host: system memory, as on the CPU backend.
    device_memory = device_memory && images_stay_on_device(self, props, caps);
  } else {
    media = gst_caps_from_string(SINK_CAPS);
  }
  GstCaps *result = gstcs::in_memories(media, device_memory);
  gst_caps_unref(media);
  result = gstcs::filtered(result, filter);
  GST_DEBUG_OBJECT(trans, "%s %" GST_PTR_FORMAT " -> %" GST_PTR_FORMAT,
                   direction == GST_PAD_SINK ? "sink" : "src", caps, result);
  return result;
}

static void reset_stream(BackprojectState *st) {
  st->pulses_seen = 0;
  st->next_image = 0;
  st->accumulated = 0;
  st->first_pts = GST_CLOCK_TIME_NONE;
  st->have_grid = false;
  st->release_input();
}

// A grid of the element's size at `centre` (ECF), checked by the kernels.
static cs::sar::BackprojectionConfig config_for(const BackprojectState *st, const cs::sar::Vec3 &centre) {
  const Settings &s = st->settings;
  cs::sar::BackprojectionConfig c;
  c.grid = cs::sar::north_up_ground_grid(centre, s.width, s.height, s.spacing_m);
  c.interpolation = s.interpolation;
  c.knab_taps = s.knab_taps;
  c.knab_oversampling = cs::sar::profile_oversampling(st->compression);
  c.precision = s.precision;
  c.sgn = st->profiles.phase_sign;
  cs::sar::validate(c);
  return c;
}

// Whether `plan` can be used with the negotiated output memory; otherwise
// posts the error (what does not fit, and what to change) and returns false.
static bool plan_is_usable(GstSarBackproject *self, const cs::sar::BandResidency &plan, size_t ring_bytes,
                           bool device_output) {
  const BackprojectState *st = self->state;
  const Settings &s = st->settings;
  const std::string budget = cs::format_bytes(st->device_budget);
  const std::string budget_source =
      s.device_memory_limit > 0 ? "device-memory-limit" : "free device memory at start less a safety margin";
  if (!plan.fits) {
    GST_ELEMENT_ERROR(self, RESOURCE, NO_SPACE_LEFT,
                      ("A %dx%d image cannot be formed in %s of device memory (%s): even with its bands paged "
                       "from host memory it needs %s (the ring of range profiles, %s, and two bands for paging)",
                       s.width, s.height, budget.c_str(), budget_source.c_str(),
                       cs::format_bytes(plan.minimum_bytes).c_str(), cs::format_bytes(ring_bytes).c_str()),
                      ("Raise device-memory-limit, or lower max-tile-pixels (smaller bands) or the aperture "
                       "(a smaller ring)"));
    return false;
  }
  if (device_output && !plan.all_resident()) {
    GST_ELEMENT_ERROR(self, CORE, NEGOTIATION,
                      ("Device memory was negotiated for the images, but a %dx%d image does not fit in %s of "
                       "device memory (%s): its bands are paged and images come out in system memory",
                       s.width, s.height, budget.c_str(), budget_source.c_str()),
                      (nullptr));
    return false;
  }
  return true;
}

static gboolean bp_set_caps(GstBaseTransform *trans, GstCaps *incaps, GstCaps *outcaps) {
  auto *self = GST_SAR_BACKPROJECT(trans);
  BackprojectState *st = self->state;
  gstsar::RangeProfilesFormat f;
  std::string why;
  if (!gstsar::parse_range_profiles_caps(incaps, &f, &why)) {
    GST_ELEMENT_ERROR(self, CORE, NEGOTIATION, ("sarbackproject cannot take this stream: %s", why.c_str()),
                      ("input caps: %" GST_PTR_FORMAT, incaps));
    return FALSE;
  }
  if (f.bins_per_pulse % f.upsample != 0) {
    GST_ELEMENT_ERROR(self, CORE, NEGOTIATION,
                      ("Inconsistent range-profile caps: %" G_GINT64_FORMAT " bins per pulse is not a multiple of "
                       "the upsampling factor %d",
                       f.bins_per_pulse, f.upsample),
                      ("input caps: %" GST_PTR_FORMAT, incaps));
    return FALSE;
  }
  if (gst_cs_caps_has_device_feature(outcaps) && !st->gpu) {
    GST_ELEMENT_ERROR(self, CORE, NEGOTIATION, ("Device memory negotiated but the element runs on the CPU backend"),
                      (nullptr));
    return FALSE;
  }
  GST_OBJECT_LOCK(self);
  const Settings s = self->props;
  GST_OBJECT_UNLOCK(self);
  st->settings = s;
  st->settings.stride = s.stride > 0 ? s.stride : s.aperture;
  if (s.aperture == 0 && s.stride > 0 && !st->warned_stride_unused) {
    GST_ELEMENT_WARNING(self, LIBRARY, SETTINGS, ("stride is not used without an aperture"),
                        ("aperture=0 forms one image of the whole stream; stride %" G_GINT64_FORMAT
                         " moves sliding apertures (set aperture too)",
                         s.stride));
    st->warned_stride_unused = true;
  }
  st->profiles = f;
  st->compression = gstsar::compression_of(f);
  st->negotiated = false;
  try {
    config_for(st, cs::sar::Vec3{6378137.0, 0, 0});  // the grid and modes alone, anywhere
  } catch (const std::invalid_argument &e) {
    GST_ELEMENT_ERROR(self, LIBRARY, SETTINGS, ("sarbackproject cannot form this image: %s", e.what()),
                      ("width %d, height %d, pixel-spacing %g m", s.width, s.height, s.spacing_m));
    return FALSE;
  }
  return gstcs::guard_bool(GST_ELEMENT(self), "Setting up backprojection", [&]() -> gboolean {
    const Settings &set = st->settings;
    st->incremental = set.aperture > 0 && set.stride < set.aperture;
    st->capacity = ring_capacity(set);
    reset_stream(st);
    st->ring_info.assign(size_t(st->capacity), {});
    st->ring_stamp.assign(size_t(st->capacity), {});
    const size_t ring_values = size_t(st->capacity) * size_t(f.bins_per_pulse);
    if (st->gpu) {
      const cs::sar::BandResidency plan = residency_plan(set, f.bins_per_pulse, st->device_budget);
      if (!plan_is_usable(self, plan, ring_values * sizeof(Cf), gst_cs_caps_has_device_feature(outcaps)))
        return FALSE;
      cs::DeviceGuard guard(st->gpu->device());
      st->gpu->synchronize();  // the old arrays may still be in use
      st->device_ring = DeviceArray();
      st->image.reset();
      if (ring_values) st->device_ring = DeviceArray(ring_values * sizeof(Cf), st->gpu->device());
      st->image = std::make_unique<cs::sar::BandedImage>(set.width, bands_of(set), plan.resident, st->gpu->device());
      GST_INFO_OBJECT(self, "%zu of %zu bands resident in device memory (budget %s)%s", plan.resident_count(),
                      plan.resident.size(), cs::format_bytes(st->device_budget).c_str(),
                      plan.all_resident() ? "" : "; the others paged from page-locked host memory");
    } else {
      try {
        st->host_ring.assign(ring_values, Cf());
      } catch (const std::bad_alloc &) {
        throw std::runtime_error("the ring of " + std::to_string(st->capacity) + " range profiles of " +
                                 std::to_string(f.bins_per_pulse) + " bins needs " +
                                 cs::format_bytes(ring_values * sizeof(Cf)) +
                                 " of host memory, more than there is: a shorter aperture or stride, or fewer bins");
      }
      st->image = std::make_unique<cs::sar::BandedImage>(set.width, bands_of(set));
    }
    st->negotiated = true;
    GST_INFO_OBJECT(self, "%s: %dx%d pixels of %g m, aperture %" G_GINT64_FORMAT ", stride %" G_GINT64_FORMAT
                    ", %s, ring of %" G_GINT64_FORMAT " profiles of %" G_GINT64_FORMAT " bins",
                    st->gpu ? "cuda" : "cpu", set.width, set.height, set.spacing_m, set.aperture, set.stride,
                    st->incremental ? "incremental" : "full images", st->capacity, f.bins_per_pulse);
    return TRUE;
  });
}

// ------------------------------------------------------------------ grid and bands

// Fixes the grid around scene reference point `srp` and makes the
// backprojector of each band of rows.
static void set_up_grid(BackprojectState *st, const cs::sar::Vec3 &srp) {
  const Settings &s = st->settings;
  const cs::sar::EnuFrame frame(cs::sar::ecf_to_llh(srp));
  const cs::sar::Vec3 centre = srp + s.centre_offset[0] * frame.east() + s.centre_offset[1] * frame.north() +
                               s.centre_offset[2] * frame.up();
  const cs::sar::BackprojectionConfig full = config_for(st, centre);
  st->grid = full.grid;
  st->image->set_grid(full);
  st->have_grid = true;
}

// `count` contiguous profiles (host or device memory, as the backend wants)
// and what they do to the image.
static cs::sar::BlockUpdate profile_block(const BackprojectState *st, const Cf *samples, int64_t count,
                                          const BackprojectionPulse *info, Accumulate mode) {
  cs::sar::BlockUpdate update;
  update.block.samples = samples;
  update.block.pulses = count;
  update.block.bins = st->bins();
  update.block.pulse_info = info;
  update.block.pulse_info_count = count;
  update.mode = mode;
  return update;
}

// Appends stream pulses [first, last) of the ring to `updates` (at most two
// contiguous runs of slots); Replace applies to the first run only.
static void add_ring_blocks(BackprojectState *st, int64_t first, int64_t last, Accumulate mode,
                            std::vector<cs::sar::BlockUpdate> *updates) {
  for (int64_t p = first; p < last;) {
    const int64_t slot = p % st->capacity;
    const int64_t count = std::min(last - p, st->capacity - slot);
    updates->push_back(profile_block(st, st->ring() + slot * st->bins(), count, st->ring_info.data() + slot, mode));
    if (mode == Accumulate::Replace) mode = Accumulate::Add;
    p += count;
  }
}

// Applies `updates` to every band of the image, all in one call: paged bands
// make one trip through the device for all of them.
static void backproject(BackprojectState *st, const std::vector<cs::sar::BlockUpdate> &updates) {
  st->image->backproject(updates, st->gpu ? st->gpu->stream() : nullptr);
}

// The backprojection view of rows [row, row + count) of a buffer's meta.
static std::vector<BackprojectionPulse> pulses_of_rows(const BackprojectState *st, const GstSarPulseMeta *meta,
                                                       int64_t row, int64_t count) {
  std::vector<BackprojectionPulse> out;
  out.reserve(size_t(count));
  for (int64_t i = 0; i < count; ++i)
    out.push_back(cs::sar::backprojection_pulse(gstsar::from_gst(meta->pulses[row + i]), st->compression));
  return out;
}

// ------------------------------------------------------------------ output

// The time that `covered` pulses take, scaled from the PTS of `first` and
// `last`, else from the pulse interval; none when neither is known.
static GstClockTime pulses_span(const BackprojectState *st, const PulseStamp &first, const PulseStamp &last,
                                int64_t covered) {
  const int64_t between = int64_t(last.index) - int64_t(first.index);
  if (between > 0 && GST_CLOCK_TIME_IS_VALID(first.pts) && GST_CLOCK_TIME_IS_VALID(last.pts) && last.pts >= first.pts)
    return GstClockTime(std::llround(double(last.pts - first.pts) * double(covered) / double(between)));
  if (st->pulse_interval_s > 0) return GstClockTime(std::llround(double(covered) * st->pulse_interval_s * GST_SECOND));
  return GST_CLOCK_TIME_NONE;
}

// A buffer holding the current image, with its meta, its time and its duration.
static GstBuffer *image_buffer(GstBaseTransform *trans, BackprojectState *st, const PulseStamp &first,
                               const PulseStamp &last, int64_t pulses, GstClockTime pts, GstClockTime duration) {
  const size_t bytes = st->image_pixels() * sizeof(Cf);
  GstBuffer *out;
  if (st->image->on_device()) {
    out = st->gpu->new_output(bytes);
    void *d = st->gpu->begin_output(out);
    cs::copy_async(d, st->image->device_pixels(), bytes, st->gpu->stream());
    st->gpu->end_output(out);
  } else {  // CPU backend, or paged bands: the image comes together in system memory
    // The CPU backend's images come from a pool of the negotiated allocator (page-locked memory when gpuupload
    // follows): a stream of images reuses a few blocks instead of mapping and zeroing a new one each time.
    out = st->gpu ? gst_buffer_new_allocate(nullptr, bytes, nullptr) : st->host_images.acquire(trans, bytes);
    if (!out) throw std::runtime_error("cannot allocate " + cs::format_bytes(bytes) + " of system memory for an image");
    GstMapInfo map;
    if (!gst_buffer_map(out, &map, GST_MAP_WRITE)) {
      gst_buffer_unref(out);
      throw std::runtime_error("cannot map a new image buffer for writing");
    }
    try {
      st->image->copy_to_host(reinterpret_cast<Cf *>(map.data), st->gpu ? st->gpu->stream() : nullptr);
    } catch (...) {
      gst_buffer_unmap(out, &map);
      gst_buffer_unref(out);
      throw;
    }
    gst_buffer_unmap(out, &map);
  }
  GstSarImageMeta *m = gst_buffer_add_sar_image_meta(out);
  const cs::sar::ImageGrid &g = st->grid;
  m->width = guint(g.width);
  m->height = guint(g.height);
  m->spacing_x = g.spacing_x_m;
  m->spacing_y = g.spacing_y_m;
  const cs::sar::Vec3 origin = g.pixel_position(0, 0);
  const cs::sar::Vec3 *vectors[4] = {&g.centre, &origin, &g.axis_x, &g.axis_y};
  gdouble *fields[4] = {m->centre, m->origin, m->axis_x, m->axis_y};
  for (int i = 0; i < 4; ++i) {
    fields[i][0] = vectors[i]->x;
    fields[i][1] = vectors[i]->y;
    fields[i][2] = vectors[i]->z;
  }
  m->first_pulse = first.index;
  m->last_pulse = last.index;
  m->first_pulse_time = first.tx_time;
  m->last_pulse_time = last.tx_time;
  m->n_pulses = guint(pulses);
  if (st->settings.custom_meta && !gst_buffer_add_sar_image_custom_meta(out, m)) {
    gst_buffer_unref(out);
    throw std::runtime_error("cannot add the grid's custom meta to the image");
  }
  GST_BUFFER_PTS(out) = pts;
  GST_BUFFER_DURATION(out) = duration;
  return out;
}

// Image k of the aperture schedule, its pulses all in the ring: stamped with
// its aperture's first pulse's time (the LATENCY query adds the aperture's
// span for the last one to arrive), else `pts`, and lasting until the next
// image's (`stride` pulses on).
static GstBuffer *form_image(GstSarBackproject *self, int64_t k, GstClockTime pts) {
  BackprojectState *st = self->state;
  const Settings &s = st->settings;
  const int64_t first = k * s.stride, last = first + s.aperture;
  if (!st->have_grid) set_up_grid(st, st->ring_info[size_t((first + s.aperture / 2) % st->capacity)].srp_pos);
  const bool full = k == 0 || !st->incremental || k % s.refresh_interval == 0;
  std::vector<cs::sar::BlockUpdate> updates;
  if (full) {
    add_ring_blocks(st, first, last, Accumulate::Replace, &updates);
  } else {
    const int64_t previous = first - s.stride;
    add_ring_blocks(st, previous + s.aperture, last, Accumulate::Add, &updates);
    add_ring_blocks(st, previous, first, Accumulate::Subtract, &updates);
  }
  backproject(st, updates);
  GST_LOG_OBJECT(self, "image %" G_GINT64_FORMAT ": pulses %" G_GINT64_FORMAT "..%" G_GINT64_FORMAT " (%s)", k,
                 first, last - 1, full ? "full" : "moved on");
  const PulseStamp &opening = st->ring_stamp[size_t(first % st->capacity)];
  const PulseStamp &closing = st->ring_stamp[size_t((last - 1) % st->capacity)];
  return image_buffer(GST_BASE_TRANSFORM(self), st, opening, closing, s.aperture,
                      GST_CLOCK_TIME_IS_VALID(opening.pts) ? opening.pts : pts,
                      pulses_span(st, opening, closing, s.stride));
}

// ------------------------------------------------------------------ input

// Stores stream pulses [first, last), which are rows [row, ...) of the input, in the ring.
static void store_pulses(BackprojectState *st, int64_t row, int64_t first, int64_t last) {
  if (first >= last) return;
  const GstSarPulseMeta *meta = gst_buffer_get_sar_pulse_meta(st->input);
  const int64_t bins = st->bins();
  const size_t row_bytes = size_t(bins) * sizeof(Cf);
  GstMapInfo map{};
  const Cf *source;
  if (st->gpu) {
    if (!st->device_input) st->device_input = std::make_unique<gstcs::ElementGpu::Input>(st->gpu->read(st->input));
    source = static_cast<const Cf *>(st->device_input->data());
  } else {
    if (!gst_buffer_map(st->input, &map, GST_MAP_READ)) throw std::runtime_error("cannot map the input buffer");
    source = reinterpret_cast<const Cf *>(map.data);
  }
  for (int64_t p = first; p < last;) {
    const int64_t slot = p % st->capacity;
    const int64_t count = std::min(last - p, st->capacity - slot);
    const int64_t r = row + (p - first);
    if (st->gpu)
      cs::copy_async(st->device_ring.get() + slot * bins, source + r * bins, size_t(count) * row_bytes,
                     st->gpu->stream());
    else
      std::memcpy(st->host_ring.data() + slot * bins, source + r * bins, size_t(count) * row_bytes);
    const std::vector<BackprojectionPulse> info = pulses_of_rows(st, meta, r, count);
    for (int64_t i = 0; i < count; ++i) {
      st->ring_info[size_t(slot + i)] = info[size_t(i)];
      st->ring_stamp[size_t(slot + i)] = {meta->first_pulse + guint64(r + i), meta->pulses[r + i].tx_time,
                                          pulse_pts(st->input, meta, r + i)};
    }
    p += count;
  }
  if (!st->gpu) gst_buffer_unmap(st->input, &map);
}

// Whole-stream mode: adds every remaining row of the input to the image.
static void accumulate_input(BackprojectState *st) {
  const GstSarPulseMeta *meta = gst_buffer_get_sar_pulse_meta(st->input);
  const int64_t row = st->input_row, count = st->input_rows - st->input_row;
  if (!st->have_grid) set_up_grid(st, gstsar::from_gst(meta->pulses[row]).srp_pos);
  const std::vector<BackprojectionPulse> info = pulses_of_rows(st, meta, row, count);
  const Accumulate mode = st->accumulated == 0 ? Accumulate::Replace : Accumulate::Add;
  const int64_t offset = row * st->bins();
  if (st->gpu) {
    auto in = st->gpu->read(st->input);
    backproject(st, {profile_block(st, static_cast<const Cf *>(in.data()) + offset, count, info.data(), mode)});
  } else {
    GstMapInfo map;
    if (!gst_buffer_map(st->input, &map, GST_MAP_READ)) throw std::runtime_error("cannot map the input buffer");
    try {
      backproject(st, {profile_block(st, reinterpret_cast<const Cf *>(map.data) + offset, count, info.data(), mode)});
    } catch (...) {
      gst_buffer_unmap(st->input, &map);
      throw;
    }
    gst_buffer_unmap(st->input, &map);
  }
  if (st->accumulated == 0) {
    st->first_stamp = {meta->first_pulse + guint64(row), meta->pulses[row].tx_time, pulse_pts(st->input, meta, row)};
    st->first_pts = GST_BUFFER_PTS(st->input);
  }
  const int64_t last = st->input_rows - 1;
  st->last_stamp = {meta->first_pulse + guint64(last), meta->pulses[last].tx_time, pulse_pts(st->input, meta, last)};
  st->accumulated += count;
}

// Checks a buffer's size, meta and samples; on failure posts the error and returns -1.
static int64_t rows_of(GstSarBackproject *self, GstBuffer *buf) {
  BackprojectState *st = self->state;
  if (!st->negotiated) {
    GST_ELEMENT_ERROR(self, CORE, NEGOTIATION, ("No caps were negotiated before the first buffer"), (nullptr));
    return -1;
  }
  const size_t row_bytes = size_t(st->bins()) * sizeof(Cf);
  const gsize size = gst_buffer_get_size(buf);
  if (size == 0 || size % row_bytes != 0) {
    GST_ELEMENT_ERROR(self, STREAM, FORMAT,
                      ("Buffer of %" G_GSIZE_FORMAT " bytes is not a whole number of range profiles of %zu bytes (%"
                       G_GINT64_FORMAT " CF32 bins)",
                       size, row_bytes, st->bins()),
                      (nullptr));
    return -1;
  }
  const int64_t rows = int64_t(size / row_bytes);
  const GstSarPulseMeta *meta = gst_buffer_get_sar_pulse_meta(buf);
  if (!meta || int64_t(meta->n_pulses) != rows) {
    GST_ELEMENT_ERROR(self, STREAM, FORMAT,
                      ("Buffer of %" G_GINT64_FORMAT " range profiles carries %s; backprojection needs each pulse's "
                       "positions (GstSarPulseMeta)",
                       rows, meta ? "a pulse meta of another length" : "no pulse meta"),
                      (nullptr));
    return -1;
  }
  // Samples the host can see are checked here (device-resident input on CUDA is not: see the top).
  GstMemory *mem = gst_buffer_peek_memory(buf, 0);
  if (!st->gpu || !(gst_buffer_n_memory(buf) == 1 && gst_is_cs_memory(mem))) {
    GstMapInfo map;
    if (!gst_buffer_map(buf, &map, GST_MAP_READ)) {
      GST_ELEMENT_ERROR(self, STREAM, FAILED, ("Cannot map the input buffer"), (nullptr));
      return -1;
    }
    const cs::sar::SampleLocation bad =
        cs::sar::find_non_finite_sample(reinterpret_cast<const Cf *>(map.data), rows, st->bins());
    gst_buffer_unmap(buf, &map);
    if (bad.pulse >= 0) {
      GST_ELEMENT_ERROR(self, STREAM, DECODE,
                        ("Range profile of pulse %" G_GUINT64_FORMAT " has a non-finite sample (NaN or infinity) "
                         "at bin %" G_GINT64_FORMAT "; it would spoil every pixel its range reaches",
                         meta->first_pulse + guint64(bad.pulse), bad.bin),
                        (nullptr));
      return -1;
    }
  }
  return rows;
}

static GstFlowReturn bp_submit_input_buffer(GstBaseTransform *trans, gboolean, GstBuffer *input) {
  auto *self = GST_SAR_BACKPROJECT(trans);
  BackprojectState *st = self->state;
  // What the default submit_input_buffer does first: negotiate with downstream when it asks (caps, and the
  // ALLOCATION query whose allocator the CPU backend's images come from).
  if (!gst_base_transform_reconfigure(trans)) {
    gst_buffer_unref(input);
    return GST_PAD_IS_FLUSHING(GST_BASE_TRANSFORM_SRC_PAD(trans)) ? GST_FLOW_FLUSHING : GST_FLOW_NOT_NEGOTIATED;
  }
  const int64_t rows = rows_of(self, input);
  if (rows < 0) {
    gst_buffer_unref(input);
    return GST_FLOW_ERROR;
  }
  st->release_input();
  st->input = input;
  st->input_rows = rows;
  const GstSarPulseMeta *meta = gst_buffer_get_sar_pulse_meta(input);
  if (st->pulse_interval_s == 0 && rows >= 2 && meta->pulses[1].tx_time > meta->pulses[0].tx_time) {
    st->pulse_interval_s = meta->pulses[1].tx_time - meta->pulses[0].tx_time;
    if (st->settings.aperture > 1)  // now the latency can be answered
      gst_element_post_message(GST_ELEMENT(self), gst_message_new_latency(GST_OBJECT(self)));
  }
  return GST_FLOW_OK;
}

// LATENCY: an image waits for the last pulse of its aperture, (aperture - 1)
// pulse intervals after the first (known once pulses have arrived). A
// whole-stream image waits for end-of-stream: no bound.
static gboolean bp_query(GstBaseTransform *trans, GstPadDirection direction, GstQuery *query) {
  auto *self = GST_SAR_BACKPROJECT(trans);
  const gboolean ok = GST_BASE_TRANSFORM_CLASS(gst_sar_backproject_parent_class)->query(trans, direction, query);
  if (!ok || direction != GST_PAD_SRC || GST_QUERY_TYPE(query) != GST_QUERY_LATENCY) return ok;
  gboolean live;
  GstClockTime min, max;
  gst_query_parse_latency(query, &live, &min, &max);
  GST_OBJECT_LOCK(self);
  const int64_t aperture = self->props.aperture;
  GST_OBJECT_UNLOCK(self);
  const std::shared_ptr<BackprojectState> st = self->running.for_queries(GST_OBJECT(self));
  if (aperture == 0) {
    max = GST_CLOCK_TIME_NONE;
  } else if (st && st->pulse_interval_s > 0) {
    const GstClockTime held = GstClockTime(double(aperture - 1) * st->pulse_interval_s * GST_SECOND);
    min += held;
    if (GST_CLOCK_TIME_IS_VALID(max)) max += held;
  }
  gst_query_set_latency(query, live, min, max);
  return TRUE;
}

// Consumes the input up to the next complete image (one per call) or its end.
static GstFlowReturn bp_generate_output(GstBaseTransform *trans, GstBuffer **outbuf) {
  auto *self = GST_SAR_BACKPROJECT(trans);
  BackprojectState *st = self->state;
  *outbuf = nullptr;
  if (!st->input) return GST_FLOW_OK;
  const GstFlowReturn ret = gstcs::guard_flow(GST_ELEMENT(self), "Backprojecting pulses", [&] {
    std::unique_ptr<cs::DeviceGuard> guard;
    if (st->gpu) guard = std::make_unique<cs::DeviceGuard>(st->gpu->device());
    const Settings &s = st->settings;
    if (s.aperture == 0) {
      accumulate_input(st);
      st->input_row = st->input_rows;
    }
    while (st->input_row < st->input_rows) {
      const int64_t image_end = st->next_image * s.stride + s.aperture;
      const int64_t keep_from = st->incremental ? 0 : st->next_image * s.stride;
      const int64_t n0 = st->pulses_seen;
      const int64_t take = std::min(st->input_rows - st->input_row, image_end - n0);
      const int64_t first_kept = std::max(n0, keep_from);
      if (first_kept < n0 + take) store_pulses(st, st->input_row + (first_kept - n0), first_kept, n0 + take);
      st->pulses_seen += take;
      st->input_row += take;
      if (st->pulses_seen == image_end) {
        *outbuf = form_image(self, st->next_image, GST_BUFFER_PTS(st->input));
        ++st->next_image;
        return GST_FLOW_OK;
      }
    }
    return GST_FLOW_OK;
  });
  if (ret != GST_FLOW_OK || st->input_row >= st->input_rows) st->release_input();
  return ret;
}

// At end-of-stream: says what of the stream no image holds, as the sinks say
// that an empty stream wrote nothing (pulses that fell between sparse
// apertures, stride > aperture, are skipped by design and not counted).
static void warn_pulses_in_no_image(GstSarBackproject *self) {
  const BackprojectState *st = self->state;
  const Settings &s = st->settings;
  if (s.aperture == 0) {  // whole-stream mode, which made its image unless no pulse came
    if (st->accumulated == 0)
      GST_ELEMENT_WARNING(self, STREAM, FAILED, ("No pulses arrived: no image was formed"), (nullptr));
    return;
  }
  if (st->next_image == 0) {
    GST_ELEMENT_WARNING(self, STREAM, FAILED,
                        ("The stream ended after %" G_GINT64_FORMAT " pulses, fewer than the aperture of %"
                         G_GINT64_FORMAT ": no image was formed", st->pulses_seen, s.aperture),
                        (nullptr));
    return;
  }
  const int64_t last_end = (st->next_image - 1) * s.stride + s.aperture;
  const int64_t left_out = st->pulses_seen - std::max(last_end, st->next_image * s.stride);
  if (left_out > 0)
    GST_ELEMENT_WARNING(self, STREAM, FAILED,
                        ("The last %" G_GINT64_FORMAT " of %" G_GINT64_FORMAT " pulses are in no image: the stream "
                         "ended before image %" G_GINT64_FORMAT "'s aperture of %" G_GINT64_FORMAT " pulses was full",
                         left_out, st->pulses_seen, st->next_image, s.aperture),
                        (nullptr));
}

static gboolean bp_sink_event(GstBaseTransform *trans, GstEvent *event) {
  auto *self = GST_SAR_BACKPROJECT(trans);
  BackprojectState *st = self->state;
  switch (GST_EVENT_TYPE(event)) {
    case GST_EVENT_EOS:
      if (st && st->negotiated && st->settings.aperture == 0 && st->accumulated > 0) {
        GstBuffer *out = nullptr;
        const GstFlowReturn made = gstcs::guard_flow(GST_ELEMENT(self), "Finishing the image", [&] {
          std::unique_ptr<cs::DeviceGuard> guard;
          if (st->gpu) guard = std::make_unique<cs::DeviceGuard>(st->gpu->device());
          out = image_buffer(trans, st, st->first_stamp, st->last_stamp, st->accumulated, st->first_pts,
                             pulses_span(st, st->first_stamp, st->last_stamp, st->accumulated));
          return GST_FLOW_OK;
        });
        st->accumulated = 0;
        if (made == GST_FLOW_OK) gst_pad_push(GST_BASE_TRANSFORM_SRC_PAD(trans), out);
      } else if (st && st->negotiated) {
        warn_pulses_in_no_image(self);
      }
      break;
    case GST_EVENT_FLUSH_STOP:
      if (st) reset_stream(st);
      break;
    default: break;
  }
  return GST_BASE_TRANSFORM_CLASS(gst_sar_backproject_parent_class)->sink_event(trans, event);
}

// ------------------------------------------------------------------ start / stop

static gboolean bp_start(GstCsBaseTransform *base) {
  auto *self = GST_SAR_BACKPROJECT(base);
  BackprojectState *st = self->state = self->running.start(GST_OBJECT(self));
  if (!gst_cs_base_transform_use_cuda(base)) return TRUE;
  if (!gstcs::start_gpu(base, "Starting backprojection on CUDA", &st->gpu)) return FALSE;
  GST_OBJECT_LOCK(self);
  const guint64 limit = self->props.device_memory_limit;
  GST_OBJECT_UNLOCK(self);
  // Measured once, before this element allocates: the budget does not shrink with its own arrays.
  return gstcs::guard_bool(GST_ELEMENT(self), "Measuring free device memory", [&]() -> gboolean {
    st->device_budget =
        limit > 0 ? size_t(limit) : cs::sar::automatic_device_budget(cs::memory_info(st->gpu->device()));
    GST_INFO_OBJECT(self, "device memory budget %s (%s)", cs::format_bytes(st->device_budget).c_str(),
                    limit > 0 ? "device-memory-limit" : "automatic");
    return TRUE;
  });
}

static gboolean bp_stop(GstCsBaseTransform *base) {
  auto *self = GST_SAR_BACKPROJECT(base);
  const std::shared_ptr<BackprojectState> st = self->running.stop(GST_OBJECT(self));
  self->state = nullptr;
  if (st) gstcs::finish_gpu(base, st->gpu.get());  // the device arrays go with the state
  return TRUE;
}

// ------------------------------------------------------------------ properties

static void bp_set_property(GObject *object, guint prop_id, const GValue *value, GParamSpec *pspec) {
  if (!gstcs::property_change_allowed(object, pspec)) return;
  auto *self = GST_SAR_BACKPROJECT(object);
  Settings &p = self->props;
  GST_OBJECT_LOCK(self);
  switch (prop_id) {
    case PROP_WIDTH: p.width = g_value_get_int(value); break;
    case PROP_HEIGHT: p.height = g_value_get_int(value); break;
    case PROP_PIXEL_SPACING: p.spacing_m = g_value_get_double(value); break;
    case PROP_CENTER_X: p.centre_offset[0] = g_value_get_double(value); break;
    case PROP_CENTER_Y: p.centre_offset[1] = g_value_get_double(value); break;
    case PROP_CENTER_Z: p.centre_offset[2] = g_value_get_double(value); break;
    case PROP_INTERPOLATION: p.interpolation = cs::sar::Interpolation(g_value_get_enum(value)); break;
    case PROP_KNAB_TAPS: p.knab_taps = g_value_get_int(value); break;
    case PROP_PRECISION: p.precision = cs::sar::Precision(g_value_get_enum(value)); break;
    case PROP_APERTURE: p.aperture = g_value_get_int(value); break;
    case PROP_STRIDE: p.stride = g_value_get_int(value); break;
    case PROP_REFRESH_INTERVAL: p.refresh_interval = g_value_get_int(value); break;
    case PROP_MAX_TILE_PIXELS: p.max_tile_pixels = g_value_get_int64(value); break;
    case PROP_DEVICE_MEMORY_LIMIT: p.device_memory_limit = g_value_get_uint64(value); break;
    case PROP_CUSTOM_META: p.custom_meta = g_value_get_boolean(value); break;
    default: G_OBJECT_WARN_INVALID_PROPERTY_ID(object, prop_id, pspec);
  }
  GST_OBJECT_UNLOCK(self);
}

static void bp_get_property(GObject *object, guint prop_id, GValue *value, GParamSpec *pspec) {
  auto *self = GST_SAR_BACKPROJECT(object);
  const Settings &p = self->props;
  GST_OBJECT_LOCK(self);
  switch (prop_id) {
    case PROP_WIDTH: g_value_set_int(value, p.width); break;
    case PROP_HEIGHT: g_value_set_int(value, p.height); break;
    case PROP_PIXEL_SPACING: g_value_set_double(value, p.spacing_m); break;
    case PROP_CENTER_X: g_value_set_double(value, p.centre_offset[0]); break;
    case PROP_CENTER_Y: g_value_set_double(value, p.centre_offset[1]); break;
    case PROP_CENTER_Z: g_value_set_double(value, p.centre_offset[2]); break;
    case PROP_INTERPOLATION: g_value_set_enum(value, int(p.interpolation)); break;
    case PROP_KNAB_TAPS: g_value_set_int(value, p.knab_taps); break;
    case PROP_PRECISION: g_value_set_enum(value, int(p.precision)); break;
    case PROP_APERTURE: g_value_set_int(value, int(p.aperture)); break;
    case PROP_STRIDE: g_value_set_int(value, int(p.stride)); break;
    case PROP_REFRESH_INTERVAL: g_value_set_int(value, p.refresh_interval); break;
    case PROP_MAX_TILE_PIXELS: g_value_set_int64(value, p.max_tile_pixels); break;
    case PROP_DEVICE_MEMORY_LIMIT: g_value_set_uint64(value, p.device_memory_limit); break;
    case PROP_CUSTOM_META: g_value_set_boolean(value, p.custom_meta); break;
    default: G_OBJECT_WARN_INVALID_PROPERTY_ID(object, prop_id, pspec);
  }
  GST_OBJECT_UNLOCK(self);
}

static void bp_finalize(GObject *object) {
  auto *self = GST_SAR_BACKPROJECT(object);
  self->running.~RunningState();
  G_OBJECT_CLASS(gst_sar_backproject_parent_class)->finalize(object);
}

static void gst_sar_backproject_class_init(GstSarBackprojectClass *klass) {
  GObjectClass *gobject_class = G_OBJECT_CLASS(klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS(klass);
  GstBaseTransformClass *trans_class = GST_BASE_TRANSFORM_CLASS(klass);
  GstCsBaseTransformClass *cs_class = GST_CS_BASE_TRANSFORM_CLASS(klass);
  gobject_class->set_property = bp_set_property;
  gobject_class->get_property = bp_get_property;
  gobject_class->finalize = bp_finalize;
  const GParamFlags flags = GParamFlags(G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY);
  const int max_side = int(cs::sar::kMaxImageSide);
  g_object_class_install_property(
      gobject_class, PROP_WIDTH,
      g_param_spec_int("width", "Width", "Image columns (east), pixels; at most 2^30 pixels in all", 1, max_side,
                       kDefaultWidth, flags));
  g_object_class_install_property(
      gobject_class, PROP_HEIGHT,
      g_param_spec_int("height", "Height", "Image rows (south: row 0 is the northern edge), pixels", 1, max_side,
                       kDefaultHeight, flags));
  g_object_class_install_property(
      gobject_class, PROP_PIXEL_SPACING,
      g_param_spec_double("pixel-spacing", "Pixel spacing", "Distance between neighbouring pixels on the ground, in "
                          "metres (the image may span at most 1000 km)",
                          1e-4, 1e5, kDefaultSpacing, flags));
  const char *axis_names[3][3] = {{"center-x", "Grid centre east", "east"},
                                  {"center-y", "Grid centre north", "north"},
                                  {"center-z", "Grid centre up", "up"}};
  for (int i = 0; i < 3; ++i) {
    const std::string blurb = std::string("Grid centre: metres ") + axis_names[i][2] +
                              " of the scene reference point (the SRP of the first image's middle pulse; whole-stream "
                              "mode: of the first pulse)";
    g_object_class_install_property(
        gobject_class, PROP_CENTER_X + i,
        g_param_spec_double(axis_names[i][0], axis_names[i][1], g_intern_string(blurb.c_str()), -1e6, 1e6, 0.0,
                            flags));
  }
  g_object_class_install_property(
      gobject_class, PROP_INTERPOLATION,
      g_param_spec_enum("interpolation", "Interpolation", "How a pixel's range is read from a range profile",
                        interpolation_get_type(), int(cs::sar::Interpolation::Linear), flags));
  g_object_class_install_property(
      gobject_class, PROP_KNAB_TAPS,
      g_param_spec_int("knab-taps", "Knab taps", "Knab interpolation: bins per sample (even, 2..16)", 2,
                       cs::sar::kMaxKnabTaps, kDefaultKnabTaps, flags));
  g_object_class_install_property(
      gobject_class, PROP_PRECISION,
      g_param_spec_enum("precision", "Precision", "Arithmetic of the per-pixel sums", precision_get_type(),
                        int(cs::sar::Precision::Mixed), flags));
  g_object_class_install_property(
      gobject_class, PROP_APERTURE,
      g_param_spec_int("aperture", "Aperture",
                       "Pulses per image; 0 = every pulse of the stream in one image, pushed at end-of-stream", 0,
                       1 << 24, 0, flags));
  g_object_class_install_property(
      gobject_class, PROP_STRIDE,
      g_param_spec_int("stride", "Stride",
                       "Pulses between the starts of consecutive images (0 = aperture: back-to-back images); less "
                       "than the aperture makes overlapping images (video SAR), moved on by adding and subtracting "
                       "pulses",
                       0, 1 << 24, 0, flags));
  g_object_class_install_property(
      gobject_class, PROP_REFRESH_INTERVAL,
      g_param_spec_int("refresh-interval", "Refresh interval",
                       "Video SAR: every this many images, recompute the image from all its pulses instead of moving "
                       "the previous one on (bounds the float drift of repeated add/subtract; 1 = always recompute)",
                       1, G_MAXINT, kDefaultRefreshInterval, flags));
  g_object_class_install_property(
      gobject_class, PROP_MAX_TILE_PIXELS,
      g_param_spec_int64("max-tile-pixels", "Maximum tile pixels",
                         "The grid is backprojected in bands of whole rows of at most this many pixels (at least one "
                         "row), each on its own; the output is still one image. On CUDA a band is also what is paged "
                         "through the device when the image does not fit in device-memory-limit",
                         1, G_MAXINT64, kDefaultMaxTilePixels, flags));
  g_object_class_install_property(
      gobject_class, PROP_DEVICE_MEMORY_LIMIT,
      g_param_spec_uint64(
          "device-memory-limit", "Device memory limit",
          "CUDA: bytes of device memory the image, the ring of range profiles and the paging buffers may take "
          "(0 = automatic: free device memory at start less max(256 MiB, 5% of the device)). When the ring and "
          "the image twice (it and the copy handed downstream) do not fit, the bands of max-tile-pixels that do "
          "not fit stay in page-locked host memory and are paged through the device for every block of pulses "
          "(an input buffer; in video SAR an image's move), and images come out in system memory. Paging costs "
          "2 x band bytes over PCIe per paged band and block (16 bytes per pixel, up and down at once: about "
          "0.2 ns per pixel at 50 GB/s) whatever the block's length, while backprojection touches every pixel once "
          "per pulse (about 1.7 ps per pixel and pulse on an H200: 0.9 ns per pixel for 512 pulses); the next "
          "band's upload overlaps this band's backprojection, so blocks of hundreds of pulses hide the paging",
          0, G_MAXUINT64, 0, flags));
  g_object_class_install_property(
      gobject_class, PROP_CUSTOM_META,
      g_param_spec_boolean("custom-meta", "Custom meta",
                           "Also attach each image's grid as a GstCustomMeta named GstSarImageGrid (a GstStructure: "
                           "size, spacing, centre, origin and axes in ECF metres, the pulses), which Python and "
                           "other language bindings read from an appsink's buffers",
                           FALSE, flags));
  gst_element_class_add_static_pad_template(element_class, &sink_template);
  gst_element_class_add_static_pad_template(element_class, &src_template);
  gst_element_class_set_static_metadata(
      element_class, "SAR backprojection", "Filter/Converter/Radar",
      "Forms complex SAR images from range profiles by time-domain backprojection onto a north-up ground grid: "
      "whole-stream or sliding apertures (video SAR, moved on by adding and subtracting pulses), nearest/linear/Knab "
      "interpolation, fast/mixed/double precision; images larger than device memory in bands paged from host "
      "memory; CUDA or CPU",
      "gst-cuda-sensing developers");
  trans_class->passthrough_on_same_caps = FALSE;
  trans_class->transform_caps = bp_transform_caps;
  trans_class->set_caps = bp_set_caps;
  trans_class->submit_input_buffer = bp_submit_input_buffer;
  trans_class->generate_output = bp_generate_output;
  trans_class->transform = gstcs::output_made_elsewhere;  // images from generate_output, allocated as downstream asks
  trans_class->sink_event = bp_sink_event;
  trans_class->query = bp_query;
  cs_class->start_backend = bp_start;
  cs_class->stop_backend = bp_stop;
  gst_type_mark_as_plugin_api(interpolation_get_type(), GstPluginAPIFlags(0));
  gst_type_mark_as_plugin_api(precision_get_type(), GstPluginAPIFlags(0));
  GST_DEBUG_CATEGORY_INIT(gst_sar_backproject_debug, "sarbackproject", 0, "SAR backprojection");
}

static void gst_sar_backproject_init(GstSarBackproject *self) {
  self->props = Settings();
  self->state = nullptr;
  new (&self->running) gstcs::RunningState<BackprojectState>();
}
