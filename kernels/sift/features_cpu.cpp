#include "sift/features_cpu.h"

#include <opencv2/imgproc.hpp>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <fstream>
#include <numeric>
#include <sstream>
#include <stdexcept>
#include <tuple>

namespace sift_cpu {

static Features select_rows(const Features &f, const std::vector<int> &rows) {
  Features out;
  out.keypoints.reserve(rows.size());
  for (int r : rows) out.keypoints.push_back(f.keypoints[size_t(r)]);
  if (f.descriptors.empty()) {
    out.descriptors = f.descriptors;
  } else {
    out.descriptors.create(int(rows.size()), f.descriptors.cols, f.descriptors.type());
    for (size_t i = 0; i < rows.size(); ++i) f.descriptors.row(rows[i]).copyTo(out.descriptors.row(int(i)));
  }
  return out;
}

void sort_canonical(Features &f) {
  std::vector<int> order(f.keypoints.size());
  std::iota(order.begin(), order.end(), 0);
  const auto &k = f.keypoints;
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    const cv::KeyPoint &p = k[size_t(a)], &q = k[size_t(b)];
    return std::make_tuple(-p.response, p.pt.y, p.pt.x, p.size, p.angle, p.octave) <
           std::make_tuple(-q.response, q.pt.y, q.pt.x, q.size, q.angle, q.octave);
  });
  f = select_rows(f, order);
}

void grid_filter(Features &f, int width, int height, int cols, int rows, int max_per_cell) {
  const std::vector<int> kept = grid_kept(
      f.keypoints.size(), [&](size_t i) { return f.keypoints[i].pt; }, width, height, cols, rows, max_per_cell);
  if (kept.size() != f.keypoints.size()) f = select_rows(f, kept);
}

cv::Mat root_sift(const cv::Mat &descriptors) {
  CV_Assert(descriptors.empty() || descriptors.type() == CV_32F);
  cv::Mat out(descriptors.rows, descriptors.cols, CV_32F);
  for (int r = 0; r < descriptors.rows; ++r) {
    const float *in = descriptors.ptr<float>(r);
    float *o = out.ptr<float>(r);
    double l1 = 0.0;
    for (int c = 0; c < descriptors.cols; ++c) l1 += std::fabs(double(in[c]));
    for (int c = 0; c < descriptors.cols; ++c) o[c] = l1 > 0.0 ? float(std::sqrt(std::fabs(double(in[c])) / l1)) : 0.f;
  }
  return out;
}

Features detect_and_describe(const cv::Mat &gray, const Params &p) {
  CV_Assert(gray.type() == CV_8UC1);
  const int type = p.format == DescriptorFormat::opencv ? CV_8U : CV_32F;
  cv::Ptr<cv::SIFT> sift =
      cv::SIFT::create(p.n_features, p.n_octave_layers, p.contrast_threshold, p.edge_threshold, p.sigma, type);
  Features f;
  sift->detectAndCompute(gray, cv::noArray(), f.keypoints, f.descriptors);
  if (f.descriptors.empty()) f.descriptors.create(0, 128, type);
  sort_canonical(f);
  grid_filter(f, gray.cols, gray.rows, p.grid_cols, p.grid_rows, p.max_per_cell);
  if (p.format == DescriptorFormat::rootsift) f.descriptors = root_sift(f.descriptors);
  return f;
}

// --- matching ---

std::vector<Match> match_descriptors(const cv::Mat &query, const cv::Mat &train, double ratio, bool mutual) {
  std::vector<Match> out;
  if (query.empty() || train.empty()) return out;
  if (query.cols != train.cols || query.type() != train.type())
    throw std::invalid_argument("descriptors of different formats cannot be matched");
  cv::Mat q, t;
  query.convertTo(q, CV_32F);
  train.convertTo(t, CV_32F);
  cv::BFMatcher matcher(cv::NORM_L2);
  std::vector<std::vector<cv::DMatch>> nearest;
  matcher.knnMatch(q, t, nearest, 2);
  std::vector<int> reverse;  // for each train row, its nearest query row
  if (mutual) {
    std::vector<cv::DMatch> back;
    matcher.match(t, q, back);
    reverse.assign(size_t(t.rows), -1);
    for (const cv::DMatch &m : back) reverse[size_t(m.queryIdx)] = m.trainIdx;
  }
  for (const std::vector<cv::DMatch> &n : nearest) {
    // With one train row there is no second neighbour to compare with: the
    // ratio test cannot tell the match from chance, and keeps none.
    if (n.size() < 2 || !(double(n[0].distance) < ratio * double(n[1].distance))) continue;
    if (mutual && reverse[size_t(n[0].trainIdx)] != n[0].queryIdx) continue;
    out.push_back({n[0].queryIdx, n[0].trainIdx, n[0].distance, false});
  }
  std::sort(out.begin(), out.end(), [](const Match &a, const Match &b) { return a.query < b.query; });
  return out;
}

// --- file format ---

static size_t element_size(uint32_t format) { return format == 0 ? 1 : 4; }

void write_record(std::FILE *file, uint64_t pts, uint32_t width, uint32_t height, DescriptorFormat format,
                  const Features &f) {
  RecordHeader h{};
  std::memcpy(h.magic, "SIFT", 4);
  h.version = 1;
  h.pts = pts;
  h.width = width;
  h.height = height;
  h.count = uint32_t(f.keypoints.size());
  h.length = f.descriptors.empty() && f.keypoints.empty() ? 0 : uint32_t(f.descriptors.cols);
  h.format = uint32_t(format);
  std::vector<uint8_t> bytes(sizeof h);
  std::memcpy(bytes.data(), &h, sizeof h);
  for (const cv::KeyPoint &k : f.keypoints) {
    const float fl[5] = {k.pt.x, k.pt.y, k.size, k.angle, k.response};
    const int32_t in[2] = {k.octave, k.class_id};
    const size_t at = bytes.size();
    bytes.resize(at + 28);
    std::memcpy(bytes.data() + at, fl, 20);
    std::memcpy(bytes.data() + at + 20, in, 8);
  }
  const size_t row = size_t(h.length) * element_size(h.format);
  for (int r = 0; r < f.descriptors.rows && row; ++r)
    bytes.insert(bytes.end(), f.descriptors.ptr(r), f.descriptors.ptr(r) + row);
  if (std::fwrite(bytes.data(), 1, bytes.size(), file) != bytes.size())
    throw std::runtime_error(std::string("write failed: ") + std::strerror(errno));
}

void write_record_fields(cv::FileStorage &fs, uint64_t pts, uint32_t width, uint32_t height,
                         DescriptorFormat format, const Features &f) {
  fs << "pts" << (pts == UINT64_MAX ? -1.0 : double(pts));
  fs << "width" << int(width) << "height" << int(height);
  fs << "descriptor_format" << int(format);
  cv::write(fs, "keypoints", f.keypoints);
  fs << "descriptors" << f.descriptors;
}

// A top-level mapping key of a YAML document as OpenCV writes it: a name at
// the start of the line, then ':' and nothing or a space.
static bool top_level_key_line(const std::string &line) {
  size_t i = 0;
  while (i < line.size() && (std::isalnum(static_cast<unsigned char>(line[i])) || line[i] == '_')) ++i;
  return i > 0 && !std::isdigit(static_cast<unsigned char>(line[0])) && i < line.size() && line[i] == ':' &&
         (i + 1 == line.size() || line[i + 1] == ' ');
}

// Whether `text` has the shape of the documents featuresink writes: XML, or
// one YAML document: "%YAML:1.0", "---", then a mapping whose keys start
// their lines and whose contents are indented (comments aside), with no
// further directive or document marker. OpenCV 4.6's YAML parser loops forever on some malformed
// documents (a second marker such as "---YAML:1.0" followed by "----" and a
// broken line; a sequence item "-a" at the top with a line less indented
// after it), so nothing else reaches it.
static bool featuresink_document_shape(const std::string &text) {
  if (text.rfind("<?xml", 0) == 0) return true;
  std::istringstream lines(text);
  std::string line;
  int n = 0;
  bool keyed = false;  // a top-level key came before any content
  while (std::getline(lines, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    ++n;
    if (n == 1 && line != "%YAML:1.0") return false;
    if (n == 2 && line != "---") return false;
    if (n <= 2 || line.empty() || line[0] == '#') continue;
    if (top_level_key_line(line))
      keyed = true;
    else if (!keyed || line[0] != ' ')
      return false;
  }
  return keyed;
}

// The records of a YAML or XML document (write_record_fields).
static std::vector<Record> read_text_records(const std::string &path, const std::string &text) {
  const std::string not_ours = path + ": not a features file of featuresink (binary, OpenCV YAML or XML)";
  if (!featuresink_document_shape(text)) throw std::runtime_error(not_ours);
  cv::FileStorage fs;
  try {
    if (!fs.open(text, cv::FileStorage::READ | cv::FileStorage::MEMORY)) throw std::runtime_error(not_ours);
  } catch (const cv::Exception &e) {
    throw std::runtime_error(not_ours + ": " + e.err);
  }
  const cv::FileNode frames = fs["frames"];
  if (!frames.isSeq()) throw std::runtime_error(path + ": no 'frames' sequence: not a features file of featuresink");
  std::vector<Record> out;
  for (const cv::FileNode &frame : frames) {
    const std::string where = path + " frame " + std::to_string(out.size());
    Record r{};
    std::memcpy(r.header.magic, "SIFT", 4);
    r.header.version = 1;
    const double pts = double(frame["pts"]);
    if (!(pts < 0x1p64)) throw std::runtime_error(where + ": pts is not a time in nanoseconds");
    r.header.pts = pts < 0 ? UINT64_MAX : uint64_t(pts);
    const int width = int(frame["width"]), height = int(frame["height"]);
    if (width < 0 || height < 0) throw std::runtime_error(where + ": negative frame size");
    r.header.width = uint32_t(width);
    r.header.height = uint32_t(height);
    const int format = int(frame["descriptor_format"]);
    if (format < 0 || format > 2) throw std::runtime_error(where + ": unknown descriptor format");
    r.header.format = uint32_t(format);
    try {
      cv::read(frame["keypoints"], r.features.keypoints);
      frame["descriptors"] >> r.features.descriptors;
    } catch (const cv::Exception &e) {
      throw std::runtime_error(where + ": " + e.err);
    }
    const cv::Mat &d = r.features.descriptors;
    const bool rows_fit = d.empty() || (size_t(d.rows) == r.features.keypoints.size() &&
                                        d.type() == (format == 0 ? CV_8U : CV_32F));
    if (!rows_fit) throw std::runtime_error(where + ": the descriptors do not fit the keypoints and format");
    r.header.count = uint32_t(r.features.keypoints.size());
    r.header.length = uint32_t(d.cols);
    out.push_back(std::move(r));
  }
  return out;
}

std::vector<Record> read_records(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path + ": cannot open");
  std::vector<char> data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (data.size() >= 4 && std::memcmp(data.data(), "SIFT", 4) != 0)
    return read_text_records(path, std::string(data.begin(), data.end()));
  std::vector<Record> out;
  size_t off = 0;
  while (off < data.size()) {
    const std::string where = path + " offset " + std::to_string(off);
    if (data.size() - off < sizeof(RecordHeader)) throw std::runtime_error(where + ": truncated record header");
    Record r;
    std::memcpy(&r.header, data.data() + off, sizeof(RecordHeader));
    if (std::memcmp(r.header.magic, "SIFT", 4) != 0) throw std::runtime_error(where + ": magic is not 'SIFT'");
    if (r.header.version != 1) throw std::runtime_error(where + ": version " + std::to_string(r.header.version));
    if (r.header.format > 2) throw std::runtime_error(where + ": unknown descriptor format");
    off += sizeof(RecordHeader);
    const size_t n = r.header.count, row = size_t(r.header.length) * element_size(r.header.format);
    if ((data.size() - off) / 28 < n || (data.size() - off - 28 * n) < n * row)
      throw std::runtime_error(where + ": truncated keypoints or descriptors");
    for (size_t i = 0; i < n; ++i) {
      float fl[5];
      int32_t ints[2];
      std::memcpy(fl, data.data() + off, 20);
      std::memcpy(ints, data.data() + off + 20, 8);
      off += 28;
      r.features.keypoints.emplace_back(cv::Point2f(fl[0], fl[1]), fl[2], fl[3], fl[4], ints[0], ints[1]);
    }
    r.features.descriptors.create(int(n), int(r.header.length), r.header.format == 0 ? CV_8U : CV_32F);
    if (n > 0 && row > 0) std::memcpy(r.features.descriptors.data, data.data() + off, n * row);
    off += n * row;
    out.push_back(std::move(r));
  }
  return out;
}

size_t pyramid_bytes(int width, int height, int n_octave_layers) {
  const size_t images = size_t(2 * n_octave_layers + 5), doubled = 2 * size_t(width) * 2 * size_t(height);
  return doubled * sizeof(float) * images * 4 / 3;  // the octaves after the first add a third
}

bool is_features_file(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  char start[9] = {};
  in.read(start, sizeof start);
  const std::string head(start, size_t(in.gcount()));
  return head.rfind("SIFT", 0) == 0 || head.rfind("<?xml", 0) == 0 || head.rfind("%YAML:1.0", 0) == 0;
}

}  // namespace sift_cpu
