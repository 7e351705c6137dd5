// Per-pixel classification of hyperspectral blocks against K reference
// spectra: a CPU classifier and a CUDA classifier with the same shape, both
// running the math of classify_math.h.
//
// Output per block:
//   class map    one label per pixel: 0 = unclassified (best score worse than
//                the threshold) or no data (a NaN or data-ignore-value sample
//                in a selected band, or a pixel the method is undefined for);
//                k = the k-th reference (1-based). uint8 when K <= 254,
//                uint16 otherwise.
//   rule images  optional: K float planes, plane k = every pixel's score
//                against reference k (NaN where undefined).
// A pixel's result depends on that pixel only: no-data never spreads.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/cuda_runtime.h"
#include "hsi/classify_math.h"
#include "hsi/references.h"
#include "hsi/sample_decode.h"

namespace cs::hsi {

const char *method_name(Method method);
// "sam", "sid", "correlation", "bandfit", "euclidean" (case-insensitive).
std::optional<Method> parse_method(const std::string &name);
// ENVI's usual SAM threshold is 0.10 rad; the other methods have no default (NaN).
double default_threshold(Method method);
// Why `threshold` cannot bound `method`'s scores, "" when it can (NaN, no
// threshold, always can): SAM's angle lies in [0, pi] rad, SID's divergence
// and the Euclidean distance are not negative, correlation and band fit
// coefficients lie in [-1, 1].
std::string threshold_problem(Method method, double threshold);

enum class ClassMapFormat { gray8, gray16 };
// gray8 when K <= 254, else gray16.
ClassMapFormat class_map_format_for(size_t classes);
size_t class_map_bytes_per_pixel(ClassMapFormat format);

struct ClassifierConfig {
  Method method = Method::sam;
  // Best scores worse than this leave the pixel unclassified (class 0): for
  // SAM an angle in radians; for correlation and bandfit a minimum
  // coefficient. NaN = no threshold.
  double threshold = std::numeric_limits<double>::quiet_NaN();
  // How sums are accumulated (classify_math.h): exact (double per term) or
  // fast (float within chunks of bands).
  Precision precision = Precision::exact;
  // CPU threads for classify (0 = one per usable core, host_resources.h).
  int cpu_threads = 0;
};

struct ClassificationOutput {
  void *class_map = nullptr;     // lines x samples labels of the block
  size_t class_map_stride = 0;   // bytes from one line to the next (0 = packed)
  ClassMapFormat class_map_format = ClassMapFormat::gray8;
  float *rule_images = nullptr;  // optional: K planes of lines x samples
};

// The bytes between the end of a class map line and the next line
// (a video frame's rows are 4-byte aligned). Both classifiers write them as
// zeros, so a class map's buffer is the same bytes on every run.
struct ClassMapPadding {
  size_t offset = 0;  // from the start of a line
  size_t bytes = 0;   // 0 = lines back to back
};
ClassMapPadding class_map_padding(const ClassificationOutput &output, size_t samples);

struct UnusableReference {
  size_t index = 0;  // in the reference set
  std::string name;
  std::string reason;
};

// The references prepared for one method and band selection.
class SpectralClassifier {
 public:
  // `bands`: indices of the cube bands to use (select_bands / choose_references).
  // `wavelengths_nm`: the cube's band centres (bandfit's continuum abscissa;
  // band numbers are used when empty). Throws std::invalid_argument.
  SpectralClassifier(const ClassifierConfig &config, const ReferenceSet &references, std::vector<int> bands,
                     const std::vector<double> &wavelengths_nm = {});

  Method method() const { return config_.method; }
  Precision precision() const { return config_.precision; }
  double threshold() const { return config_.threshold; }
  // Changes the threshold of the blocks classified from now on (nothing
  // prepared depends on it); throws std::invalid_argument, keeping the old
  // one, where threshold_problem refuses it.
  void set_threshold(double threshold);
  size_t class_count() const { return names_.size(); }
  const std::vector<std::string> &class_names() const { return names_; }
  size_t cube_bands() const { return cube_bands_; }
  const std::vector<int> &bands() const { return bands_; }
  ClassMapFormat class_map_format() const { return class_map_format_for(class_count()); }
  // References that can never match (e.g. all zero for SAM): they stay in
  // the numbering, score NaN, and are listed here for the log.
  const std::vector<UnusableReference> &unusable_references() const { return unusable_; }

  // The prepared reference table (classify_math.h) and its shape.
  const std::vector<float> &table() const { return table_; }
  ReferenceTableShape table_shape() const { return shape_; }

  // Classifies a block of native samples in host memory.
  void classify(const CubeBlock &block, const ClassificationOutput &output) const;

  // Throws std::invalid_argument when the block or output does not fit.
  void check_block(const CubeBlock &block, const ClassificationOutput &output) const;

 private:
  ClassifierConfig config_;
  std::vector<std::string> names_;
  size_t cube_bands_ = 0;
  std::vector<int> bands_;
  ReferenceTableShape shape_;
  std::vector<float> table_;
  std::vector<UnusableReference> unusable_;
};

// The same classifier on a GPU: reference table in constant memory when it
// fits (shared memory tiles otherwise), one thread per pixel, native samples
// decoded on the device. In a build without CUDA every call throws CudaError.
class CudaSpectralClassifier {
 public:
  CudaSpectralClassifier(const SpectralClassifier &classifier, int device);
  ~CudaSpectralClassifier();
  CudaSpectralClassifier(const CudaSpectralClassifier &) = delete;
  CudaSpectralClassifier &operator=(const CudaSpectralClassifier &) = delete;

  // block.data, output.class_map and output.rule_images are device pointers;
  // the work is queued on `stream` (nothing here synchronises it).
  void classify(const CubeBlock &device_block, const ClassificationOutput &device_output, StreamHandle stream);
  // SpectralClassifier::set_threshold for the blocks queued from now on.
  void set_threshold(double threshold);

  bool table_in_constant_memory() const;
  int device() const;

  // Which kernel classify() runs for a block of this shape: the per-pixel
  // kernel (exact, fast, and sid in every precision), the generic
  // tensor kernel (any type, byte order, interleave, band list), or the
  // tensor kernel specialised for BIP blocks of native f32/i16/u16 samples
  // and a contiguous band range (bip_tensor.h). Same results within the
  // tensor precision's bounds (classify_math.h).
  enum class Kernel { per_pixel, tensor, tensor_bip };
  Kernel kernel_for(const CubeBlock &device_block) const;
  // For tests and benchmarks: false makes blocks that fit the BIP tensor
  // kernel run the generic tensor kernel instead (default true).
  void set_bip_tensor_enabled(bool enabled);
  // The BIP tensor kernel's product ("wgmma", "fp16", "tf32"; bip_tensor.h),
  // "" when the classifier does not use that kernel.
  const char *bip_tensor_product() const;
  // Whether classify() screens this block for this output (the BIP tensor
  // kernel's screen, bip_tensor.h: f32, every method but sid, K <= 64, no
  // rule images, on Hopper).
  bool screens(const CubeBlock &device_block, const ClassificationOutput &output) const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace cs::hsi
