// Test images (Debian's scikit-image data) and the accuracy measures of the
// SIFT engine against OpenCV's cv::SIFT.
#pragma once

#include <jpeglib.h>
#include <png.h>

#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "sift/features_cpu.h"
#include "sift/sift_math.h"

namespace sift_test {

// Folder of scikit-image's bundled images (python3-skimage), overridable with
// CS_SKIMAGE_DATA; "" when absent.
inline std::string skimage_data_dir() {
  if (const char *d = std::getenv("CS_SKIMAGE_DATA")) return d;
  const std::string dflt = "/usr/lib/python3/dist-packages/skimage/data";
  return std::filesystem::exists(dflt + "/camera.png") ? dflt : std::string();
}

// PNG through libpng's simplified API: gray as is, colour as BGR; empty on failure.
// (Read with libpng/libjpeg rather than OpenCV's imgcodecs so that the test
// binary carries few libraries to a GPU machine.)
inline cv::Mat read_png(const std::string &path) {
  png_image image{};
  image.version = PNG_IMAGE_VERSION;
  if (!png_image_begin_read_from_file(&image, path.c_str())) return {};
  const bool colour = (image.format & PNG_FORMAT_FLAG_COLOR) != 0;
  image.format = colour ? PNG_FORMAT_BGR : PNG_FORMAT_GRAY;
  cv::Mat m(int(image.height), int(image.width), colour ? CV_8UC3 : CV_8UC1);
  if (!png_image_finish_read(&image, nullptr, m.data, png_int_32(m.step), nullptr)) {
    png_image_free(&image);
    return {};
  }
  return m;
}

// An 8-bit gray or BGR picture written as PNG through libpng's simplified
// API (BGRA keeps its alpha); false on failure.
inline bool write_png(const std::string &path, const cv::Mat &picture) {
  if (picture.depth() != CV_8U || (picture.channels() != 1 && picture.channels() != 3 && picture.channels() != 4))
    return false;
  png_image image{};
  image.version = PNG_IMAGE_VERSION;
  image.width = png_uint_32(picture.cols);
  image.height = png_uint_32(picture.rows);
  image.format = picture.channels() == 1 ? PNG_FORMAT_GRAY : picture.channels() == 3 ? PNG_FORMAT_BGR : PNG_FORMAT_BGRA;
  return png_image_write_to_file(&image, path.c_str(), 0, picture.data, png_int_32(picture.step), nullptr) != 0;
}

// Baseline JPEG through libjpeg, as BGR or gray; empty when the file is missing.
inline cv::Mat read_jpeg(const std::string &path) {
  std::FILE *f = std::fopen(path.c_str(), "rb");
  if (!f) return {};
  jpeg_decompress_struct info{};
  jpeg_error_mgr err{};
  info.err = jpeg_std_error(&err);  // a corrupt bundled file ends the test program, with libjpeg's message
  jpeg_create_decompress(&info);
  jpeg_stdio_src(&info, f);
  jpeg_read_header(&info, TRUE);
  const bool colour = info.num_components > 1;
  info.out_color_space = colour ? JCS_RGB : JCS_GRAYSCALE;
  jpeg_start_decompress(&info);
  cv::Mat m(int(info.output_height), int(info.output_width), colour ? CV_8UC3 : CV_8UC1);
  while (info.output_scanline < info.output_height) {
    JSAMPROW row = m.ptr(int(info.output_scanline));
    jpeg_read_scanlines(&info, &row, 1);
  }
  jpeg_finish_decompress(&info);
  jpeg_destroy_decompress(&info);
  std::fclose(f);
  if (colour) cv::cvtColor(m, m, cv::COLOR_RGB2BGR);
  return m;
}

// 8-bit gray image of a bundled picture ("camera", "astronaut", "rocket"...),
// colour converted as cv::SIFT does (BT.601 weights); empty when missing.
inline cv::Mat load_skimage(const std::string &name) {
  const std::string dir = skimage_data_dir();
  if (dir.empty()) return {};
  cv::Mat m = read_png(dir + "/" + name + ".png");
  if (m.empty()) m = read_jpeg(dir + "/" + name + ".jpg");
  if (m.empty() || m.channels() == 1) return m;
  cv::Mat gray;
  cv::cvtColor(m, gray, cv::COLOR_BGR2GRAY);
  return gray;
}

inline std::vector<cv::KeyPoint> to_cv(const std::vector<cs::sift::Keypoint> &kps) {
  std::vector<cv::KeyPoint> out;
  out.reserve(kps.size());
  for (const cs::sift::Keypoint &k : kps) out.emplace_back(cv::Point2f(k.x, k.y), k.size, k.angle, k.response, k.octave, -1);
  return out;
}

inline float angle_difference(float a, float b) {
  float d = std::fabs(a - b);
  d = std::fmod(d, 360.f);
  return d > 180.f ? 360.f - d : d;
}

// The partner criterion: within 1 px (input coordinates), size
// within 10 %, angle within 10 degrees.
inline bool partners(const cv::KeyPoint &a, const cv::KeyPoint &b) {
  const float dx = a.pt.x - b.pt.x, dy = a.pt.y - b.pt.y;
  return dx * dx + dy * dy <= 1.f && std::fabs(a.size - b.size) <= 0.1f * a.size &&
         angle_difference(a.angle, b.angle) <= 10.f;
}

struct Agreement {
  size_t reference = 0, tested = 0;
  double reference_matched = 0;  // fraction of reference keypoints with a partner
  double tested_unmatched = 0;   // fraction of tested keypoints without one
  double median_descriptor_distance = 0;  // L2, over reference keypoints with a partner (nearest partner)
  double descriptor_norm = 512;           // OpenCV's byte descriptors have norm ~512
};

// For each keypoint of `a`, the index of its closest partner in `b` (by
// position), or -1.
inline std::vector<int> partner_index(const std::vector<cv::KeyPoint> &a, const std::vector<cv::KeyPoint> &b) {
  std::vector<int> order(b.size());
  for (size_t i = 0; i < b.size(); ++i) order[i] = int(i);
  std::sort(order.begin(), order.end(), [&](int p, int q) { return b[size_t(p)].pt.x < b[size_t(q)].pt.x; });
  std::vector<float> xs(order.size());
  for (size_t i = 0; i < order.size(); ++i) xs[i] = b[size_t(order[i])].pt.x;
  std::vector<int> out(a.size(), -1);
  for (size_t i = 0; i < a.size(); ++i) {
    float best = 2.f;
    auto it = std::lower_bound(xs.begin(), xs.end(), a[i].pt.x - 1.f);
    for (size_t k = size_t(it - xs.begin()); k < xs.size() && xs[k] <= a[i].pt.x + 1.f; ++k) {
      const cv::KeyPoint &c = b[size_t(order[k])];
      if (!partners(a[i], c)) continue;
      const float d = std::hypot(a[i].pt.x - c.pt.x, a[i].pt.y - c.pt.y);
      if (d < best) {
        best = d;
        out[i] = order[k];
      }
    }
  }
  return out;
}

// `ref_desc` and `test_desc` as CV_32F rows (byte values).
inline Agreement agreement(const std::vector<cv::KeyPoint> &ref, const cv::Mat &ref_desc,
                           const std::vector<cv::KeyPoint> &test, const cv::Mat &test_desc) {
  Agreement g;
  g.reference = ref.size();
  g.tested = test.size();
  const std::vector<int> fwd = partner_index(ref, test), back = partner_index(test, ref);
  std::vector<double> distances;
  size_t matched = 0, unmatched = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    if (fwd[i] < 0) continue;
    ++matched;
    if (!ref_desc.empty() && !test_desc.empty())
      distances.push_back(cv::norm(ref_desc.row(int(i)), test_desc.row(fwd[i]), cv::NORM_L2));
  }
  for (int b : back) unmatched += b < 0 ? 1 : 0;
  g.reference_matched = ref.empty() ? 1.0 : double(matched) / double(ref.size());
  g.tested_unmatched = test.empty() ? 0.0 : double(unmatched) / double(test.size());
  if (!distances.empty()) {
    std::nth_element(distances.begin(), distances.begin() + long(distances.size() / 2), distances.end());
    g.median_descriptor_distance = distances[distances.size() / 2];
  }
  return g;
}

inline std::string describe(const std::string &name, const Agreement &g) {
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "%-10s OpenCV %5zu, tested %5zu: %.2f%% of OpenCV's matched, %.2f%% of tested unmatched, median "
                "descriptor distance %.2f (%.2f%% of 512)",
                name.c_str(), g.reference, g.tested, 100 * g.reference_matched, 100 * g.tested_unmatched,
                g.median_descriptor_distance, 100 * g.median_descriptor_distance / g.descriptor_norm);
  return buf;
}

}  // namespace sift_test
