// GStreamer-free CPU side of the SIFT elements (plugins/sift): OpenCV's SIFT with the
// elements' parameters, a deterministic order, the grid filter, RootSIFT,
// luma of packed RGB frames, descriptor matching, and the features file
// format of featuresink (writer and reader).
#pragma once

#include <opencv2/core.hpp>
#include <opencv2/features2d.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace sift_cpu {

enum class DescriptorFormat { opencv = 0, float32 = 1, rootsift = 2 };

struct Params {
  int n_features = 0;
  int n_octave_layers = 3;
  double contrast_threshold = 0.04;
  double edge_threshold = 10.0;
  double sigma = 1.6;
  DescriptorFormat format = DescriptorFormat::opencv;
  int grid_cols = 0, grid_rows = 0, max_per_cell = 0;  // filter off when any is 0
};

struct Features {
  std::vector<cv::KeyPoint> keypoints;
  cv::Mat descriptors;  // one row per keypoint; CV_8U (opencv) or CV_32F
};

// cv::SIFT::create(n_features, n_octave_layers, contrast, edge, sigma,
// CV_8U for the opencv format, CV_32F otherwise) on an 8-bit gray image, then
// canonical order, grid filter and RootSIFT as the parameters say.
Features detect_and_describe(const cv::Mat &gray, const Params &params);

// The working memory of detect_and_describe on a width x height image: the
// float Gaussian (layers + 3) and DoG (layers + 2) images of every octave,
// the first at twice the size (488 MB measured at 1920 x 1080, 3 layers).
size_t pyramid_bytes(int width, int height, int n_octave_layers);

// Strongest first: response descending, then y, x, size, angle, octave
// ascending; descriptor rows follow their keypoints.
void sort_canonical(Features &f);

// Keeps at most `max_per_cell` keypoints per cell of a cols x rows grid over a
// width x height image: the first ones in the current order (after
// sort_canonical: the strongest). The order of those kept is unchanged.
void grid_filter(Features &f, int width, int height, int cols, int rows, int max_per_cell);

// The grid filter's choice for `count` keypoints whose positions
// `position(i)` gives (a cv::Point2f): the indices kept, in order; every
// index when the filter is off (a setting of 0).
template <class Position>
std::vector<int> grid_kept(size_t count, Position position, int width, int height, int cols, int rows,
                           int max_per_cell) {
  std::vector<int> kept;
  kept.reserve(count);
  const bool off = cols <= 0 || rows <= 0 || max_per_cell <= 0 || width <= 0 || height <= 0;
  std::vector<int> per_cell(off ? 0 : size_t(cols) * size_t(rows), 0);
  for (size_t i = 0; i < count; ++i) {
    if (!off) {
      const cv::Point2f p = position(i);
      const int cx = std::clamp(int(std::floor(double(p.x) * cols / width)), 0, cols - 1);
      const int cy = std::clamp(int(std::floor(double(p.y) * rows / height)), 0, rows - 1);
      int &n = per_cell[size_t(cy) * size_t(cols) + size_t(cx)];
      if (n == max_per_cell) continue;
      ++n;
    }
    kept.push_back(int(i));
  }
  return kept;
}

// RootSIFT of float descriptors: each row divided by its L1 norm, then the
// element-wise square root (rows of zeros stay zero).
cv::Mat root_sift(const cv::Mat &descriptors);

// --- matching ---

struct Match {
  int query, train;
  float distance;
  bool inlier;
};

// Nearest neighbour of each query row among the train rows (L2), kept when
// its distance is below `ratio` times the second nearest (Lowe's test); with
// `mutual`, only pairs that are each other's nearest neighbours. Sorted by
// query index.
std::vector<Match> match_descriptors(const cv::Mat &query, const cv::Mat &train, double ratio, bool mutual);

// --- featuresink's binary file ---

// Header of one frame's record (little-endian, 40 bytes).
struct RecordHeader {
  char magic[4];            // "SIFT"
  uint32_t version;         // 1
  uint64_t pts;             // nanoseconds; UINT64_MAX when the frame had none
  uint32_t width, height;   // frame size
  uint32_t count;           // keypoints
  uint32_t length;          // elements per descriptor (0: no descriptors)
  uint32_t format;          // 0 = uint8 (opencv), 1 = float32, 2 = float32 RootSIFT
  uint32_t reserved;        // 0
};
static_assert(sizeof(RecordHeader) == 40, "record header is 40 bytes");

struct Record {
  RecordHeader header;
  Features features;
};

// Appends one record; throws std::runtime_error on a write error.
void write_record(std::FILE *file, uint64_t pts, uint32_t width, uint32_t height, DescriptorFormat format,
                  const Features &features);

// --- featuresink's OpenCV YAML and XML files ---
// A document whose `frames` sequence holds one mapping a frame: pts
// (nanoseconds as a double, -1 when none), width, height,
// descriptor_format, keypoints (cv::write's seven numbers each) and
// descriptors (a matrix). Writes one frame's fields into the open mapping.
void write_record_fields(cv::FileStorage &fs, uint64_t pts, uint32_t width, uint32_t height,
                         DescriptorFormat format, const Features &features);

// Every record of a features file in any of featuresink's formats (binary,
// OpenCV YAML or XML; told apart by their first bytes); throws
// std::runtime_error naming the offset or the frame of a malformed record.
std::vector<Record> read_records(const std::string &path);

// Whether the file starts as featuresink's files do (binary, OpenCV YAML or
// XML): siftmatch reads such a reference with read_records and decodes any
// other as a picture.
bool is_features_file(const std::string &path);

}  // namespace sift_cpu
