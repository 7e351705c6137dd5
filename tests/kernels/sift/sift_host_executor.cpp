#include "sift_host_executor.h"

#include <algorithm>
#include <cmath>

namespace sift_test {

using namespace cs::sift;

namespace {

// The levels of one octave, contiguous like the engine's: level i at i * stride.
struct HostOctave {
  int width = 0, height = 0;
  std::vector<float> gauss;  // n_layers + 3 levels (detection makes the DoG from them, as the engine)
  size_t stride() const { return size_t(width) * size_t(height); }
  PlaneView gauss_view(int i) const { return {gauss.data() + size_t(i) * stride(), width, width, height}; }
  float *gauss_level(int i) { return gauss.data() + size_t(i) * stride(); }
  LevelStack levels() const { return {gauss.data(), stride(), width, width, height}; }
};

// Separable blur of src (w x h) into dst, horizontal pass first (as OpenCV's
// separable filter and the CUDA kernel), reflect-101 borders.
void blur(const float *src, float *dst, int w, int h, const BlurTaps &taps) {
  const int r = taps.radius;
  std::vector<float> line(size_t(std::max(w, h) + 2 * r)), mid(size_t(w) * size_t(h));
  for (int y = 0; y < h; ++y) {
    for (int x = -r; x < w + r; ++x) line[size_t(x + r)] = src[size_t(y) * w + size_t(reflect101(x, w))];
    for (int x = 0; x < w; ++x) mid[size_t(y) * w + x] = blur_1d(&line[size_t(x + r)], 1, taps);
  }
  for (int x = 0; x < w; ++x) {
    for (int y = -r; y < h + r; ++y) line[size_t(y + r)] = mid[size_t(reflect101(y, h)) * w + x];
    for (int y = 0; y < h; ++y) dst[size_t(y) * w + x] = blur_1d(&line[size_t(y + r)], 1, taps);
  }
}

// The input as floats (without doubling).
template <typename T>
std::vector<float> base_image(const T *src, size_t pitch, int w, int h) {
  std::vector<float> out(size_t(w) * size_t(h));
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) out[size_t(y) * w + x] = plain_sample(src, pitch, x, y);
  return out;
}

// Level 0 of the doubled octave straight from the w x h input into dst (2w
// x 2h), as the engine's doubled_level0_kernel.
template <typename T>
void doubled_level0(const T *src, size_t pitch, int w, int h, const BlurTaps &taps, float *dst) {
  const DoublingBlurAxis ax = doubling_blur_axis(w, taps), ay = doubling_blur_axis(h, taps);
  const int bw = 2 * w, bh = 2 * h;
  std::vector<float> across(size_t(h) * size_t(bw)), line(size_t(std::max(w, h)));
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) line[size_t(x)] = luma_sample(image_row(src, pitch, y) + x);
    for (int x = 0; x < bw; ++x)
      across[size_t(y) * bw + x] = doubling_blur_sum(&ax.coefficients[size_t(x) * size_t(ax.taps)],
                                                     &line[size_t(ax.first[size_t(x)])], 1, ax.taps);
  }
  for (int x = 0; x < bw; ++x) {
    for (int y = 0; y < h; ++y) line[size_t(y)] = across[size_t(y) * bw + x];
    for (int y = 0; y < bh; ++y)
      dst[size_t(y) * bw + x] = doubling_blur_sum(&ay.coefficients[size_t(y) * size_t(ay.taps)],
                                                  &line[size_t(ay.first[size_t(y)])], 1, ay.taps);
  }
}

}  // namespace

HostSiftResult host_sift(const void *data, size_t pitch_bytes, int width, int height, PixelType type,
                         const Params &params, DescriptorFormat format, DescriptorSums sums) {
  validate(params);
  HostSiftResult result;
  const int n_layers = params.n_octave_layers;
  const int n_octaves = octave_count(width, height, params.upsample);
  if (n_octaves == 0) return result;

  // --- pyramid
  std::vector<HostOctave> octaves(static_cast<size_t>(n_octaves));
  int w = params.upsample ? 2 * width : width, h = params.upsample ? 2 * height : height;
  std::vector<BlurTaps> taps(size_t(n_layers + 3));
  taps[0] = gaussian_taps(initial_sigma(params.sigma, params.upsample));
  for (int i = 1; i < n_layers + 3; ++i) taps[size_t(i)] = gaussian_taps(level_sigma(i, n_layers, params.sigma));
  for (int o = 0; o < n_octaves; ++o) {
    HostOctave &oc = octaves[size_t(o)];
    if (o > 0) {
      w /= 2;
      h /= 2;
    }
    oc.width = w;
    oc.height = h;
    oc.gauss.assign(size_t(n_layers + 3) * oc.stride(), 0.f);
    if (o == 0 && params.upsample) {
      if (type == PixelType::u8)
        doubled_level0(static_cast<const uint8_t *>(data), pitch_bytes, width, height, taps[0], oc.gauss_level(0));
      else
        doubled_level0(static_cast<const float *>(data), pitch_bytes, width, height, taps[0], oc.gauss_level(0));
    } else if (o == 0) {
      const std::vector<float> base = type == PixelType::u8
                                          ? base_image(static_cast<const uint8_t *>(data), pitch_bytes, w, h)
                                          : base_image(static_cast<const float *>(data), pitch_bytes, w, h);
      blur(base.data(), oc.gauss_level(0), w, h, taps[0]);
    } else {
      const HostOctave &prev = octaves[size_t(o - 1)];
      const PlaneView src = prev.gauss_view(n_layers);
      for (int y = 0; y < h; ++y)
        for (int x = 0; x < w; ++x) oc.gauss_level(0)[size_t(y) * w + x] = src.at(2 * y, 2 * x);
    }
    for (int i = 1; i < n_layers + 3; ++i) blur(oc.gauss_level(i - 1), oc.gauss_level(i), w, h, taps[size_t(i)]);
  }

  // --- detection
  const DetectionConstants k{n_layers, params.upsample ? -1 : 0, float(params.contrast_threshold),
                             float(params.edge_threshold), float(params.sigma)};
  const float threshold = prefilter_threshold(params.contrast_threshold, n_layers);
  std::vector<Keypoint> keypoints;
  for (int o = 0; o < n_octaves; ++o) {
    const HostOctave &oc = octaves[size_t(o)];
    const LevelStack levels = oc.levels();
    for (int layer = 1; layer <= n_layers; ++layer)
      for (int r = kImageBorder; r < oc.height - kImageBorder; ++r)
        for (int c = kImageBorder; c < oc.width - kImageBorder; ++c) {
          if (!is_scale_space_extremum(levels, layer, r, c, threshold)) continue;
          ++result.candidates;
          RefinedExtremum e;
          if (!refine_extremum(levels, o, layer, r, c, k, &e)) continue;
          ++result.refined;
          const OrientationWindow win = orientation_window(e.octave_sigma);
          const PlaneView g = octaves[size_t(e.octave_index)].gauss_view(e.layer);
          float raw[kOrientationBins] = {}, hist[kOrientationBins];
          for (int i = -win.radius; i <= win.radius; ++i)
            for (int j = -win.radius; j <= win.radius; ++j) {
              int bin;
              float value;
              if (orientation_sample(g, e.row, e.column, i, j, win.exp_scale, &bin, &value)) raw[bin] += value;
            }
          const float maximum = smooth_orientation_histogram(raw, hist);
          for (int j = 0; j < kOrientationBins; ++j) {
            float angle;
            if (!orientation_peak(hist, maximum, j, &angle)) continue;
            Keypoint kp = e.keypoint;
            kp.angle = angle;
            keypoints.push_back(kp);
            ++result.oriented;
          }
        }
  }

  // --- canonical order, duplicates, n-features
  std::stable_sort(keypoints.begin(), keypoints.end(), keypoint_less);
  std::vector<Keypoint> unique;
  for (const Keypoint &kp : keypoints)
    if (unique.empty() || !keypoint_duplicate(unique.back(), kp)) unique.push_back(kp);
  if (params.n_features > 0 && unique.size() > size_t(params.n_features)) {
    const float last = unique[size_t(params.n_features) - 1].response;
    size_t keep = size_t(params.n_features);
    while (keep < unique.size() && unique[keep].response == last) ++keep;
    unique.resize(keep);
  }
  result.keypoints = unique;

  // --- descriptors: the kernel's enumeration (each row's run inside the
  // rotated grid and the level's border ring) and, by default, its
  // fixed-point sums (integer, so the order of the additions does not
  // matter); float sums as CS_SIFT_DESCRIPTOR=float.
  result.descriptors.assign(unique.size() * kDescriptorLength, 0.f);
  std::vector<float> hist(kDescriptorHistogramLength);
  std::vector<uint32_t> fixed_hist(kDescriptorHistogramLength);
  for (size_t n = 0; n < unique.size(); ++n) {
    const int o = (unique[n].octave & 255) < 128 ? (unique[n].octave & 255) : (-128 | (unique[n].octave & 255));
    const HostOctave &oc = octaves[size_t(o - k.first_octave)];
    const DescriptorWindow win = descriptor_window(unique[n], k.first_octave, oc.width, oc.height);
    const PlaneView g = oc.gauss_view(win.layer);
    const float value_scale = sums == DescriptorSums::fixed ? win.fixed_scale : 1.f;
    std::fill(hist.begin(), hist.end(), 0.f);
    std::fill(fixed_hist.begin(), fixed_hist.end(), 0u);
    for (int i = -win.radius; i <= win.radius; ++i) {
      int first = 0, last = -1;
      descriptor_row_span(win, i, &first, &last);
      for (int j = first; j <= last; ++j) {
        DescriptorContribution c;
        if (!descriptor_contribution(g.ptr(win.py + i, win.px + j), g.pitch, win, i, j, value_scale, &c)) continue;
        for (int k = 0; k < 8; ++k) {
          const size_t at = size_t(c.index + descriptor_offset(k));
          if (sums == DescriptorSums::fixed)
            fixed_hist[at] += descriptor_fixed(c.values[k]);
          else
            hist[at] += c.values[k];
        }
      }
    }
    float *out = &result.descriptors[n * kDescriptorLength];
    if (sums == DescriptorSums::fixed)
      finalize_descriptor(fixed_hist.data(), win.fixed_scale, out);
    else
      finalize_descriptor(hist.data(), out);
    if (format == DescriptorFormat::rootsift) {
      double l1 = 0.0;
      for (int e = 0; e < kDescriptorLength; ++e) l1 += std::fabs(double(out[e]));
      for (int e = 0; e < kDescriptorLength; ++e) out[e] = l1 > 0.0 ? float(std::sqrt(std::fabs(double(out[e])) / l1)) : 0.f;
    }
  }
  return result;
}

}  // namespace sift_test
