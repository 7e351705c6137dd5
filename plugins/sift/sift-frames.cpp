#include "sift-frames.h"

#include <opencv2/imgproc.hpp>

#include <algorithm>
#include <stdexcept>
#include <string>

#include "gst/cudasensing/sift/gstsiftfeatures-opencv.hpp"
#include "sift-cuda.h"
#include "sift-formats.h"

namespace gstsift {

int auto_frames_in_flight(bool cuda, unsigned cores, int most, size_t pyramid_bytes, size_t host_memory) {
  if (cuda) return 2;
  size_t frames = std::clamp<size_t>(cores / 2, 2, size_t(std::max(most, 2)));
  if (pyramid_bytes && host_memory) frames = std::clamp<size_t>(host_memory / 4 / pyramid_bytes, 1, frames);
  return int(frames);
}

cv::Mat frame_luma(const GstVideoFrame &frame) {
  const LumaLayout layout = luma_layout(GST_VIDEO_FRAME_FORMAT(&frame));
  const int w = GST_VIDEO_FRAME_WIDTH(&frame), h = GST_VIDEO_FRAME_HEIGHT(&frame);
  const cv::Mat plane(h, w, CV_8UC(layout.pixel_bytes), GST_VIDEO_FRAME_PLANE_DATA(&frame, 0),
                      size_t(GST_VIDEO_FRAME_PLANE_STRIDE(&frame, 0)));
  if (layout.is_luma_plane()) return plane;
  cv::Mat gray(h, w, CV_8UC1);
  if (layout.rgb) {
    cv::Mat rgb(h, w, CV_8UC3);
    const int from_to[] = {layout.order.r, 0, layout.order.g, 1, layout.order.b, 2};
    cv::mixChannels(&plane, 1, &rgb, 1, from_to, 3);
    cv::cvtColor(rgb, gray, cv::COLOR_RGB2GRAY);
    return gray;
  }
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) gray.at<uint8_t>(y, x) = luma_at(plane.ptr(y), x, layout);
  return gray;
}

sift_cpu::Features extract_on_cpu(GstBuffer *frame, const GstVideoInfo &info, const sift_cpu::Params &params) {
  GstVideoFrame mapped;
  if (!gst_video_frame_map(&mapped, &info, frame, GST_MAP_READ))
    throw std::runtime_error("cannot map the frame for reading: buffer of " +
                             std::to_string(gst_buffer_get_size(frame)) + " bytes for " +
                             std::to_string(GST_VIDEO_INFO_WIDTH(&info)) + "x" +
                             std::to_string(GST_VIDEO_INFO_HEIGHT(&info)) + " " + GST_VIDEO_INFO_NAME(&info));
  try {
    sift_cpu::Features f = sift_cpu::detect_and_describe(frame_luma(mapped), params);
    gst_video_frame_unmap(&mapped);
    return f;
  } catch (...) {
    gst_video_frame_unmap(&mapped);
    throw;
  }
}

bool CpuFramesInFlight::set_frames_in_flight(int frames_in_flight) {
  if (!held_.empty() || frames_in_flight < 1) return false;
  frames_in_flight_ = frames_in_flight;
  return true;
}

void CpuFramesInFlight::enqueue(GstBuffer *frame, const GstVideoInfo &info, const sift_cpu::Params &params) {
  // The task reads the frame, which stays held (and unchanged) until
  // finish_oldest() or drop_held() has waited for it.
  HeldFrame held{frame, guint(GST_VIDEO_INFO_WIDTH(&info)), guint(GST_VIDEO_INFO_HEIGHT(&info)),
                 GstSiftDescriptorFormat(params.format), {}};
  try {
    held.features = std::async(std::launch::async, extract_on_cpu, frame, info, params);
  } catch (...) {  // no thread for it
    gst_buffer_unref(frame);
    throw;
  }
  held_.push_back(std::move(held));
}

GstBuffer *CpuFramesInFlight::finish_oldest(GstElement *) {
  HeldFrame oldest = std::move(held_.front());
  held_.pop_front();
  try {
    const sift_cpu::Features f = oldest.features.get();
    gst_sift::add_features(oldest.frame, oldest.width, oldest.height, f.keypoints, f.descriptors, oldest.format);
  } catch (...) {
    gst_buffer_unref(oldest.frame);
    throw;
  }
  return oldest.frame;
}

void CpuFramesInFlight::drop_held() {
  for (HeldFrame &h : held_) {
    if (h.features.valid()) h.features.wait();
    gst_buffer_unref(h.frame);
  }
  held_.clear();
}

CudaFramesInFlight::CudaFramesInFlight(const cs::sift::Params &params, int device, int frames_in_flight)
    : engines_(std::make_unique<CudaFramePipeline>(params, device, frames_in_flight)) {}
CudaFramesInFlight::~CudaFramesInFlight() = default;  // drops the frames held, waits for the streams
int CudaFramesInFlight::device() const { return engines_->device(); }
int CudaFramesInFlight::frames_in_flight() const { return engines_->frames_in_flight(); }
size_t CudaFramesInFlight::held() const { return engines_->held(); }
void CudaFramesInFlight::enqueue(GstBuffer *frame, const GstVideoInfo &info, const sift_cpu::Params &p) {
  engines_->enqueue(frame, info, engine_format(GstSiftDescriptorFormat(p.format)),
                    GridFilter{p.grid_cols, p.grid_rows, p.max_per_cell});
}
GstBuffer *CudaFramesInFlight::finish_oldest(GstElement *element) { return engines_->finish_oldest(element); }
void CudaFramesInFlight::drop_held() { engines_->drop_held(); }

}  // namespace gstsift
