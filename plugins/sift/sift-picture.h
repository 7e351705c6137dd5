// siftmatch's reference pictures, decoded by GStreamer (any file a decodebin
// of this installation decodes: PNG, JPEG, TIFF, ... or a video's first
// frame) into the luma that sift would take of the decoded frame.
#pragma once

#include <string>

#include <opencv2/core.hpp>

namespace gstsift {

// The picture's luma, 8-bit gray (sift-formats.h: 16-bit samples give their
// 8 most significant bits, RGB its BT.601 luma). Throws std::runtime_error
// with GStreamer's reason when the file does not decode to a frame.
cv::Mat picture_luma(const std::string &path);

}  // namespace gstsift
