// Time-domain backprojection of range-compressed pulses onto an image grid:
// a CPU backprojector (std::thread over tiles) and a CUDA backprojector with
// the same shape, both running the per-pixel math of backprojection_math.h
// (read its header for the model, the phase convention and what each
// precision mode computes in which type).
//
// Images are complex float, row-major (row r, column c at r * width + c).
// Calls can replace an image or add / subtract pulses to / from an existing
// one, which is how continuous (video) SAR slides its aperture: add the new
// pulses, subtract those that left. Each call rounds the image to float once
// more, so an image maintained this way drifts from a full recomputation by
// about one float rounding of the image per call (tests measure it).
#pragma once

#include <complex>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/cuda_runtime.h"
#include "sar/backprojection_math.h"
#include "sar/pulse_compressor.h"
#include "sar/types.h"

namespace cs::sar {

const char *to_string(Precision p);
const char *to_string(Interpolation i);
// "fast", "mixed", "double" / "nearest", "linear", "knab" (case-insensitive).
std::optional<Precision> parse_precision(const std::string &name);
std::optional<Interpolation> parse_interpolation(const std::string &name);

// A planar grid of pixels. Pixel (c, r) lies at
//   centre + (c - width/2) * spacing_x_m * axis_x + (r - height/2) * spacing_y_m * axis_y
// (integer division: the centre is a pixel, for odd and even sizes alike).
struct ImageGrid {
  int64_t width = 0, height = 0;            // columns, rows
  double spacing_x_m = 0, spacing_y_m = 0;  // between columns, between rows
  Vec3 centre;                              // ECF metres
  Vec3 axis_x, axis_y;                      // ECF unit vectors, orthogonal: increasing column, increasing row

  Vec3 pixel_position(double column, double row) const;
};

// Limits a grid must respect: sides of 1..kMaxImageSide pixels, at most
// kMaxImagePixels in all (8 GiB of complex float), an extent of at most
// kMaxImageExtentM per side.
constexpr int64_t kMaxImageSide = 65536;
constexpr int64_t kMaxImagePixels = int64_t(1) << 30;
constexpr double kMaxImageExtentM = 1e6;

// A north-up grid in the plane tangent to the ellipsoid at `centre_ecf`:
// columns run east, rows run south (row 0 is the northern edge).
ImageGrid north_up_ground_grid(const Vec3 &centre_ecf, int64_t width, int64_t height, double spacing_m);

// What backprojection needs to know of one range-compressed pulse.
struct BackprojectionPulse {
  Vec3 tx_pos, rcv_pos, srp_pos;     // ECF metres (CPHD TxPos, RcvPos, SRPPos)
  RangeAxis axis;                    // the profile's bins, relative to the pulse's reference range
  double centre_frequency_hz = 0;    // the frequency the profile's phase refers to
};

// From a pulse's PVP and the pulse compression that made its profile: the
// axis from range_axis(); the centre frequency the compressor's phase refers
// to: the centre of the sampled band for FX (SC0 + (K - 1) / 2 * SCSS), the
// middle of FX1..FX2 for TOA.
BackprojectionPulse backprojection_pulse(const PulseParameters &pvp, const PulseCompressionConfig &pc);

// How many times the profile's sample rate exceeds its signal bandwidth:
// the upsampling factor, times fs / B for time-domain data. Knab's window uses it.
double profile_oversampling(const PulseCompressionConfig &pc);

struct BackprojectionConfig {
  ImageGrid grid;
  Interpolation interpolation = Interpolation::Linear;
  int knab_taps = 8;                // Knab: even, 2..kMaxKnabTaps
  double knab_oversampling = 2.0;   // Knab: profile_oversampling() of the profiles, >= 1
  Precision precision = Precision::Mixed;
  int sgn = -1;                     // the data's phase convention (CPHD SGN), +1 or -1
  int cpu_threads = 0;              // CPU: threads (0 = one per usable core, host_resources.h)
};

// Throws std::invalid_argument naming the field when the configuration is unusable.
void validate(const BackprojectionConfig &config);

// A block of range profiles: `pulses` rows of `bins` complex samples, and the
// matching per-pulse facts (`pulse_info`, host memory, `pulse_info_count`
// entries: one per row).
struct RangeProfileBlock {
  const std::complex<float> *samples = nullptr;
  int64_t pulses = 0;
  int64_t bins = 0;
  const BackprojectionPulse *pulse_info = nullptr;
  int64_t pulse_info_count = 0;
};

enum class Accumulate { Replace, Add, Subtract };

// The math's view of a grid and of a block's pulses (host, double precision).
// Both throw std::invalid_argument with the reason (invalid grid, missing or
// non-finite pulse facts, sizes out of range).
GridGeometry grid_geometry(const ImageGrid &grid);
struct PreparedPulses {
  std::vector<PulseGeometry> geometry;
  int legs = 1;  // 1 when every pulse is monostatic (TxPos == RcvPos), else 2
};
PreparedPulses prepare_pulses(const BackprojectionConfig &config, const RangeProfileBlock &block);

class CpuBackprojector {
 public:
  // Throws std::invalid_argument for an unusable configuration.
  explicit CpuBackprojector(const BackprojectionConfig &config);

  const BackprojectionConfig &config() const { return config_; }
  int64_t pixels() const { return config_.grid.width * config_.grid.height; }

  // block.samples and image in host memory; image holds pixels() values.
  // Every sample is checked first: a NaN or infinite sample, or missing pulse
  // facts, throw std::invalid_argument (naming the pulse and bin) and leave
  // the image untouched. A block of zero pulses replaces the image with zeros
  // or leaves it as it is.
  void backproject(const RangeProfileBlock &block, std::complex<float> *image,
                   Accumulate mode = Accumulate::Replace) const;

 private:
  BackprojectionConfig config_;
  GridGeometry grid_;
  KnabKernel knab_;
};

// The same on a GPU: one thread block per 32 x 16 tile, each thread a few
// pixels of one column, pulses staged in shared memory in chunks of
// kPulseChunk (mixed and fast: each (tile, pulse) record made there in double).
// One backprojector serves one stream at a time (its pulse buffer is reused
// by the next call). Without CUDA in the build, or without a device, the
// constructor throws cs::CudaError.
class CudaBackprojector {
 public:
  CudaBackprojector(const BackprojectionConfig &config, int device);
  ~CudaBackprojector();
  CudaBackprojector(const CudaBackprojector &) = delete;
  CudaBackprojector &operator=(const CudaBackprojector &) = delete;

  const BackprojectionConfig &config() const { return config_; }
  int64_t pixels() const { return config_.grid.width * config_.grid.height; }

  // block.samples and image are device pointers, block.pulse_info is host
  // memory (uploaded here; it may be freed when the call returns). Enqueued on
  // `stream`; returns without waiting. Samples are not checked on the device:
  // a non-finite sample makes the pixels whose range reaches it non-finite
  // (a caller that needs the check runs find_non_finite_sample where the
  // samples are still on the host).
  void backproject(const RangeProfileBlock &device_block, std::complex<float> *device_image, Accumulate mode,
                   StreamHandle stream);

 private:
  struct Impl;
  BackprojectionConfig config_;
  GridGeometry grid_;
  KnabKernel knab_;
  std::unique_ptr<Impl> impl_;
};

// Host: the first non-finite sample of a block (pulse, bin), or -1 in both.
struct SampleLocation {
  int64_t pulse = -1, bin = -1;
};
SampleLocation find_non_finite_sample(const std::complex<float> *samples, int64_t pulses, int64_t bins);

}  // namespace cs::sar
