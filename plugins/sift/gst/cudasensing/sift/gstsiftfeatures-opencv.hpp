// C++ helpers between GstSiftFeaturesMeta and OpenCV (header-only; the
// application links OpenCV core itself).
#pragma once

#include <gst/cudasensing/sift/gstsiftfeaturesmeta.h>

#include <opencv2/core.hpp>

#include <cstring>
#include <stdexcept>
#include <vector>

namespace gst_sift {

// The meta's keypoints as OpenCV keypoints (same fields, same order).
inline std::vector<cv::KeyPoint> keypoints(const GstSiftFeaturesMeta &meta) {
  std::vector<cv::KeyPoint> out;
  out.reserve(meta.count);
  for (guint i = 0; i < meta.count; ++i) {
    const GstSiftKeypoint &k = meta.keypoints[i];
    out.emplace_back(cv::Point2f(k.x, k.y), k.size, k.angle, k.response, k.octave, k.class_id);
  }
  return out;
}

// The descriptors, one row per keypoint (CV_8U for the opencv format, CV_32F
// otherwise), copied out of the meta.
inline cv::Mat descriptors(const GstSiftFeaturesMeta &meta) {
  const int type = meta.descriptor_format == GST_SIFT_DESCRIPTOR_OPENCV ? CV_8U : CV_32F;
  if (meta.count == 0 || meta.descriptor_length == 0 || !meta.descriptors)
    return cv::Mat(0, int(meta.descriptor_length), type);
  return cv::Mat(int(meta.count), int(meta.descriptor_length), type, meta.descriptors).clone();
}

// Adds a meta holding `kps` and `desc` (rows in keypoint order; CV_8U for the
// opencv format, CV_32F otherwise; may be empty) to a writable buffer.
inline GstSiftFeaturesMeta *add_features(GstBuffer *buffer, guint width, guint height,
                                         const std::vector<cv::KeyPoint> &kps, const cv::Mat &desc,
                                         GstSiftDescriptorFormat format) {
  const int type = format == GST_SIFT_DESCRIPTOR_OPENCV ? CV_8U : CV_32F;
  if (!desc.empty() && (desc.rows != int(kps.size()) || desc.type() != type))
    throw std::invalid_argument("descriptor matrix does not fit the keypoints or the descriptor format");
  const guint length = desc.empty() ? 128u : guint(desc.cols);
  GstSiftFeaturesMeta *m = gst_buffer_add_sift_features_meta(buffer, width, height, guint(kps.size()), format, length);
  if (!m) return nullptr;
  for (size_t i = 0; i < kps.size(); ++i) {
    const cv::KeyPoint &k = kps[i];
    m->keypoints[i] = GstSiftKeypoint{k.pt.x, k.pt.y, k.size, k.angle, k.response, k.octave, k.class_id};
  }
  const size_t row_bytes = size_t(length) * gst_sift_descriptor_format_element_size(format);
  if (!desc.empty())
    for (int r = 0; r < desc.rows; ++r)
      std::memcpy(static_cast<uint8_t *>(m->descriptors) + r * row_bytes, desc.ptr(r), row_bytes);
  return m;
}

}  // namespace gst_sift
