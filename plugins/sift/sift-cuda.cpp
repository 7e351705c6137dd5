#include "sift-cuda.h"

#include <opencv2/core.hpp>

#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>

#include "sift-luma.h"
#include "sift-nvcodec.h"
#include "sift/features_cpu.h"

GST_DEBUG_CATEGORY_STATIC(gst_sift_cuda_debug);
#define GST_CAT_DEFAULT gst_sift_cuda_debug

namespace gstsift {

static void init_debug_category() {
  static gsize category_once = 0;
  if (g_once_init_enter(&category_once)) {
    GST_DEBUG_CATEGORY_INIT(gst_sift_cuda_debug, "siftcuda", 0, "CUDA SIFT engines and results");
    g_once_init_leave(&category_once, 1);
  }
}

static_assert(int(sift_cpu::DescriptorFormat::opencv) == GST_SIFT_DESCRIPTOR_OPENCV &&
                  int(sift_cpu::DescriptorFormat::float32) == GST_SIFT_DESCRIPTOR_FLOAT &&
                  int(sift_cpu::DescriptorFormat::rootsift) == GST_SIFT_DESCRIPTOR_ROOTSIFT,
              "descriptor formats are numbered alike");
static_assert(int(cs::sift::DescriptorFormat::opencv) == GST_SIFT_DESCRIPTOR_OPENCV &&
                  int(cs::sift::DescriptorFormat::float32) == GST_SIFT_DESCRIPTOR_FLOAT &&
                  int(cs::sift::DescriptorFormat::rootsift) == GST_SIFT_DESCRIPTOR_ROOTSIFT,
              "descriptor formats are numbered alike");

CudaEngine::CudaEngine(const cs::sift::Params &params, int device) : gpu_(device), sift_(params, device) {}

CudaEngine::~CudaEngine() = default;  // the scratch blocks wait for the stream as they go

// Where plane 0 (the luma, or the pixels that hold it) lies in a frame's buffer.
struct PlaneLayout {
  size_t offset, stride;
  size_t bytes;  // from the first byte of the plane to the last pixel
  LumaLayout luma;
};

// From the buffer's GstVideoMeta when it has one (upstream padding), else the
// caps' default layout; throws when the buffer is too small for it.
static PlaneLayout plane0_layout(GstBuffer *frame, const GstVideoInfo &info) {
  const int w = GST_VIDEO_INFO_WIDTH(&info), h = GST_VIDEO_INFO_HEIGHT(&info);
  const GstVideoFormat format = GST_VIDEO_INFO_FORMAT(&info);
  PlaneLayout l{};
  l.luma = luma_layout(format);
  if (const GstVideoMeta *vm = gst_buffer_get_video_meta(frame)) {
    l.offset = vm->offset[0];
    l.stride = size_t(vm->stride[0]);
  } else {
    l.offset = GST_VIDEO_INFO_PLANE_OFFSET(&info, 0);
    l.stride = size_t(GST_VIDEO_INFO_PLANE_STRIDE(&info, 0));
  }
  const size_t row = size_t(l.luma.pixel_bytes) * size_t(w), size = gst_buffer_get_size(frame);
  l.bytes = l.stride * size_t(h - 1) + row;
  if (l.stride < row || size < l.offset + l.bytes)
    throw std::runtime_error("a buffer of " + std::to_string(size) + " bytes cannot hold a " + std::to_string(w) +
                             "x" + std::to_string(h) + " " + gst_video_format_to_string(format) + " frame (" +
                             std::to_string(l.offset + l.bytes) + " bytes needed)");
  return l;
}

// Plane 0 of a frame in nvcodec's memory, in that memory's own layout;
// throws when it holds less than a frame of `info`.
static PlaneLayout nvcodec_plane0_layout(const NvcodecFrame &source, const GstVideoInfo &info) {
  const int w = GST_VIDEO_INFO_WIDTH(&info), h = GST_VIDEO_INFO_HEIGHT(&info);
  PlaneLayout l{};
  l.luma = luma_layout(GST_VIDEO_INFO_FORMAT(&info));
  l.offset = GST_VIDEO_INFO_PLANE_OFFSET(&source.info(), 0);
  l.stride = size_t(GST_VIDEO_INFO_PLANE_STRIDE(&source.info(), 0));
  const size_t row = size_t(l.luma.pixel_bytes) * size_t(w);
  l.bytes = l.stride * size_t(h - 1) + row;
  const int height = GST_VIDEO_INFO_HEIGHT(&source.info());
  if (l.stride < row || height < h || l.offset + l.bytes > source.size())
    throw std::runtime_error("nvcodec's CUDA memory holds a plane of " + std::to_string(height) + " rows of " +
                             std::to_string(l.stride) + " bytes, too small for a " + std::to_string(w) + "x" +
                             std::to_string(h) + " " + GST_VIDEO_INFO_NAME(&info) + " frame");
  return l;
}

// Plane 0 of a frame copied out of nvcodec's memory: rows packed, at offset 0.
static PlaneLayout nvcodec_copy_layout(const GstVideoInfo &info) {
  PlaneLayout l{};
  l.luma = luma_layout(GST_VIDEO_INFO_FORMAT(&info));
  l.stride = size_t(l.luma.pixel_bytes) * size_t(GST_VIDEO_INFO_WIDTH(&info));
  l.bytes = l.stride * size_t(GST_VIDEO_INFO_HEIGHT(&info));
  return l;
}

cs::sift::DeviceImage CudaEngine::luma_of(const uint8_t *plane, const PlaneLayout &layout, const GstVideoInfo &info) {
  const int w = GST_VIDEO_INFO_WIDTH(&info), h = GST_VIDEO_INFO_HEIGHT(&info);
  if (layout.luma.is_luma_plane()) return {plane, layout.stride, w, h, cs::sift::PixelType::u8};
  void *luma = luma_.reserve(size_t(w) * size_t(h));
  luma_async(plane, layout.stride, luma, size_t(w), w, h, layout.luma, gpu_.stream());
  return {luma, size_t(w), w, h, cs::sift::PixelType::u8};
}

const uint8_t *CudaEngine::copy_nvcodec_plane(const NvcodecFrame &source, const PlaneLayout &from,
                                              const PlaneLayout &to, int rows) {
  void *plane = nvcodec_plane_.reserve(to.bytes);
  copy_rows_between_contexts_async(plane, to.stride, nullptr, source.data() + from.offset, from.stride,
                                   source.context(), to.stride, rows, gpu_.stream());
  // nvcodec may reuse its memory once the frame is unmapped and freed, and
  // 1.22's memory has no fence to hold it with: wait for the copy here.
  gpu_.synchronize();
  return static_cast<const uint8_t *>(plane);
}

void CudaEngine::wait_for_reads() noexcept {
  try {
    cs::DeviceGuard guard(gpu_.device());
    gpu_.synchronize();
  } catch (const std::exception &e) {
    init_debug_category();
    GST_WARNING("waiting for a SIFT stream: %s", e.what());
  }
}

template <class Stage>
void CudaEngine::with_luma(GstBuffer *frame, const GstVideoInfo &info, FrameHold hold, Stage &&stage) {
  cs::DeviceGuard guard(gpu_.device());
  GstMemory *first = gst_buffer_n_memory(frame) == 1 ? gst_buffer_peek_memory(frame, 0) : nullptr;
  if (is_nvcodec_memory(first)) {
    NvcodecFrame source(first, gpu_.device(), GST_MAP_READ);
    const PlaneLayout layout = nvcodec_plane0_layout(source, info);
    const bool ours = source.in_our_context(), in_place = ours && hold == FrameHold::until_download;
    if (nvcodec_read_ != (in_place ? NvcodecRead::in_place : NvcodecRead::copied)) {
      nvcodec_read_ = in_place ? NvcodecRead::in_place : NvcodecRead::copied;
      init_debug_category();
      GST_INFO("frames in nvcodec's memory: %s", in_place ? "read in place (our CUDA context)"
                                                 : ours   ? "plane 0 copied on the device (the frame leaves first)"
                                                          : "plane 0 copied on the device (another CUDA context)");
    }
    if (in_place) {
      // In our context: read where it is, the frame held until the stream is past it.
      stage(luma_of(source.data() + layout.offset, layout, info));
    } else {
      // Plane 0 copied into our own memory, in the layout of a tightly packed frame.
      const PlaneLayout packed = nvcodec_copy_layout(info);
      stage(luma_of(copy_nvcodec_plane(source, layout, packed, GST_VIDEO_INFO_HEIGHT(&info)), packed, info));
    }
    return;
  }
  const PlaneLayout layout = plane0_layout(frame, info);
  const bool in_place = first && gst_is_cs_memory(first) && gst_cs_memory_get_device_id(first) == gpu_.device();
  // From system memory only plane 0 goes up (NV12/I420 chroma stays on the host).
  std::unique_ptr<GstBuffer, decltype(&gst_buffer_unref)> region(
      in_place ? nullptr : gst_buffer_copy_region(frame, GST_BUFFER_COPY_MEMORY, layout.offset, layout.bytes),
      &gst_buffer_unref);
  if (!in_place && !region) throw std::runtime_error("cannot take the luma plane of the frame");
  // The read is recorded (the memory kept from reuse until the stream is past it) when `input` goes.
  gstcs::ElementGpu::Input input = gpu_.read(region ? region.get() : frame);
  const auto *plane = static_cast<const uint8_t *>(input.data()) + (region ? 0 : layout.offset);
  stage(luma_of(plane, layout, info));
}

void CudaEngine::build_pyramid(GstBuffer *frame, const GstVideoInfo &info) {
  with_luma(frame, info, FrameHold::none,
            [&](const cs::sift::DeviceImage &luma) { sift_.build_pyramid(luma, gpu_.stream()); });
}

void CudaEngine::run(GstBuffer *frame, const GstVideoInfo &info, cs::sift::DescriptorFormat format,
                     const CudaEngine *after) {
  with_luma(frame, info, FrameHold::until_download, [&](const cs::sift::DeviceImage &luma) {
    // After the frame's upload, which need not wait.
    if (const cs::EventHandle start = after ? after->sift_.next_frame_start() : nullptr)
      cs::stream_wait(gpu_.stream(), start);
    sift_.run(luma, format, gpu_.stream());
  });
}

CudaFramePipeline::CudaFramePipeline(const cs::sift::Params &params, int device, int frames_in_flight) {
  if (frames_in_flight < 1) throw std::invalid_argument("frames-in-flight must be at least 1");
  for (int i = 0; i < frames_in_flight; ++i) engines_.push_back(std::make_unique<CudaEngine>(params, device));
}

CudaFramePipeline::~CudaFramePipeline() { drop_held(); }

void CudaFramePipeline::enqueue(GstBuffer *frame, const GstVideoInfo &info, cs::sift::DescriptorFormat format,
                                const GridFilter &grid) {
  std::unique_ptr<GstBuffer, decltype(&gst_buffer_unref)> owned(frame, &gst_buffer_unref);
  if (full()) throw std::logic_error("SIFT: every engine holds a frame");
  // Engines are taken in turn and frames finished oldest first, so the next
  // engine's previous frame has left by now.
  CudaEngine &engine = *engines_[next_engine_];
  try {
    // From 1080p up a frame's pyramid starts once the previous frame's
    // first octave is built (CudaSift::next_frame_start): two first octaves
    // at once share the L2 and take longer than one after the other.
    const CudaEngine *previous = engines_[(next_engine_ + engines_.size() - 1) % engines_.size()].get();
    engine.run(frame, info, format, previous != &engine ? previous : nullptr);
  } catch (...) {
    engine.wait_for_reads();  // of the frame about to be dropped
    throw;
  }
  next_engine_ = (next_engine_ + 1) % engines_.size();
  held_.push_back({owned.release(), &engine, guint(GST_VIDEO_INFO_WIDTH(&info)), guint(GST_VIDEO_INFO_HEIGHT(&info)),
                   grid});
}

GstBuffer *CudaFramePipeline::finish_oldest(GstElement *element) {
  if (held_.empty()) throw std::logic_error("SIFT: no frame to finish");
  const HeldFrame oldest = held_.front();
  held_.pop_front();
  std::unique_ptr<GstBuffer, decltype(&gst_buffer_unref)> frame(oldest.frame, &gst_buffer_unref);
  attach_features(element, frame.get(), oldest.width, oldest.height, oldest.engine->download(), oldest.grid);
  return frame.release();
}

void CudaFramePipeline::drop_held() {
  for (const HeldFrame &h : held_) {
    h.engine->wait_for_reads();
    gst_buffer_unref(h.frame);
  }
  held_.clear();
}

size_t attach_features(GstElement *element, GstBuffer *frame, guint width, guint height,
                       const cs::sift::Result &result, const GridFilter &grid) {
  init_debug_category();
  if (result.overflowed)
    GST_WARNING_OBJECT(element, "keypoint lists full: %d candidates, %d oriented keypoints found; what did not fit "
                       "was dropped", result.counts.candidates, result.counts.oriented);
  const size_t n = result.keypoints.size(), row_bytes = cs::sift::descriptor_bytes(result.format);
  if (result.descriptors.size() != n * row_bytes)
    throw std::logic_error("SIFT result: " + std::to_string(result.descriptors.size()) +
                           " descriptor bytes for " + std::to_string(n) + " keypoints");
  const std::vector<cs::sift::Keypoint> &k = result.keypoints;
  const std::vector<int> kept = sift_cpu::grid_kept(
      n, [&](size_t i) { return cv::Point2f(k[i].x, k[i].y); }, int(width), int(height), grid.cols, grid.rows,
      grid.max_per_cell);
  // Straight into the meta: the keypoints as OpenCV defines them (class_id -1, as cv::SIFT), rows in their order.
  GstSiftFeaturesMeta *m = gst_buffer_add_sift_features_meta(frame, width, height, guint(kept.size()),
                                                             GstSiftDescriptorFormat(result.format),
                                                             guint(cs::sift::kDescriptorLength));
  if (!m) throw std::runtime_error("cannot add the features meta to the frame");
  for (size_t j = 0; j < kept.size(); ++j) {
    const cs::sift::Keypoint &p = k[size_t(kept[j])];
    m->keypoints[j] = GstSiftKeypoint{p.x, p.y, p.size, p.angle, p.response, p.octave, -1};
  }
  auto *rows = static_cast<uint8_t *>(m->descriptors);
  if (rows && kept.size() == n) {
    std::memcpy(rows, result.descriptors.data(), n * row_bytes);  // nothing filtered out: one copy
  } else if (rows) {
    for (size_t j = 0; j < kept.size(); ++j)
      std::memcpy(rows + j * row_bytes, &result.descriptors[size_t(kept[j]) * row_bytes], row_bytes);
  }
  GST_LOG_OBJECT(element, "%zu keypoints (%zu before the grid filter)", kept.size(), n);
  return kept.size();
}

}  // namespace gstsift
