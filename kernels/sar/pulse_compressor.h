// Range (pulse) compression of SAR phase history: FFTW on the CPU, cuFFT on
// the GPU. The math is in pulse_compression_math.h; plans are made once per
// configuration and block size (cached), never per block.
#pragma once

#include <complex>
#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "common/cuda_runtime.h"
#include "sar/types.h"
#include "sar/window.h"

namespace cs::sar {

// How the time-domain reference spectrum R(f) becomes the filter (all are
// then band-limited to the chirp band and weighted by the window w):
//  Matched:   conj(R) w        classic matched filter (best SNR); the range
//             response is IFFT(|R|^2 w), so the chirp's Fresnel ripple in
//             |R|^2 raises low sidelobes by a fraction of a dB.
//  Equalized: conj(R) w / |R|^2 in the band: the response is exactly the
//             window's IFFT(w) (the design sidelobes), at a noise cost of
//             mean(|R|^2) mean(1/|R|^2) (~0.1 dB for time-bandwidth > 100).
enum class ReferenceFilter { Matched, Equalized };

struct PulseCompressionConfig {
  Domain domain = Domain::TOA;
  int64_t samples_per_pulse = 0;  // input samples (fast time for TOA, frequencies for FX)
  int upsample = 1;               // 1..16: output bins per input sample spacing
  WindowSpec window;
  // TOA: the sampling and the reference chirp.
  double sample_rate_hz = 0;
  Chirp chirp;
  ReferenceFilter reference_filter = ReferenceFilter::Equalized;
  // TOA, optional: a measured reference waveform sampled at sample_rate_hz,
  // its sample size()/2 at the echo delay; replaces `chirp` when given.
  std::vector<std::complex<float>> reference_waveform;
  // FX: the frequency step (SCSS) and the phase convention of the data.
  double frequency_step_hz = 0;
  int sgn = -1;
  // Largest number of pulses per call (sizes the work buffers).
  int64_t max_pulses_per_block = 256;
};

// Range of output bin m: first_bin_m + m * bin_spacing_m, relative to the pulse's reference (SRP) range.
struct RangeAxis {
  double first_bin_m = 0;
  double bin_spacing_m = 0;
};

// Tables that both implementations use, made once per configuration.
struct PulseCompressionTables {
  int64_t input_length = 0;   // N or K
  int64_t output_length = 0;  // M = upsample * input_length
  int rotation_sign = 1;      // s = -SGN (FX); the DFT kernel is exp(+j s 2 pi k m / M)
  // TOA: the matched filter H[k], length N. FX: the weights W[k], length K.
  std::vector<std::complex<float>> filter;
  // FX: rot(m), length M (empty for TOA).
  std::vector<std::complex<float>> output_rotation;
};
// Validates the configuration (throws std::invalid_argument with the reason).
PulseCompressionTables make_pulse_compression_tables(const PulseCompressionConfig &config);

// Output axis for a pulse (TOA: from its SC0 in seconds; FX: SC0 is not needed).
RangeAxis range_axis(const PulseCompressionConfig &config, double sc0);
// c / (2 B), B the chirp bandwidth (TOA) or K * SCSS (FX): the unweighted
// resolution unit; a window broadens the 3 dB width to a multiple of it.
double bandwidth_resolution_m(const PulseCompressionConfig &config);

// CPU implementation (FFTW, single precision).
class CpuPulseCompressor {
 public:
  explicit CpuPulseCompressor(const PulseCompressionConfig &config);
  ~CpuPulseCompressor();
  CpuPulseCompressor(const CpuPulseCompressor &) = delete;
  CpuPulseCompressor &operator=(const CpuPulseCompressor &) = delete;

  int64_t input_length() const { return tables_.input_length; }
  int64_t output_length() const { return tables_.output_length; }
  const PulseCompressionConfig &config() const { return config_; }
  // in: pulses x input_length; out: pulses x output_length (host memory).
  // Samples are not checked: a NaN or Inf sample makes its own pulse's output
  // non-finite and leaves every other pulse untouched.
  void compress(const std::complex<float> *in, std::complex<float> *out, int64_t pulses);
  // Complex int16 input: pulse p's signal is its integers times scales[p]
  // (CPHD AmpSF; host memory, `pulses` entries).
  void compress(const std::complex<int16_t> *in, const float *scales, std::complex<float> *out, int64_t pulses);

 private:
  struct Plans;
  Plans &plans_for(int64_t batch);
  template <class Sample>
  void compress_samples(const Sample *in, const float *scales, std::complex<float> *out, int64_t pulses);

  PulseCompressionConfig config_;
  PulseCompressionTables tables_;
  std::map<int64_t, std::unique_ptr<Plans>> plans_;
};

// CUDA implementation (cuFFT). Without CUDA in the build, or without a
// device, the constructor throws cs::CudaError.
class CudaPulseCompressor {
 public:
  CudaPulseCompressor(const PulseCompressionConfig &config, int device);
  ~CudaPulseCompressor();
  CudaPulseCompressor(const CudaPulseCompressor &) = delete;
  CudaPulseCompressor &operator=(const CudaPulseCompressor &) = delete;

  int64_t input_length() const { return tables_.input_length; }
  int64_t output_length() const { return tables_.output_length; }
  // Device pointers: in pulses x input_length, out pulses x output_length.
  // Enqueued on `stream`; returns without waiting. `in` is not modified.
  // One compressor serves one stream at a time (its TOA work buffer is shared).
  // Non-finite samples are treated as by CpuPulseCompressor.
  void compress(const std::complex<float> *in, std::complex<float> *out, int64_t pulses, StreamHandle stream);
  // Complex int16 input on the device (half the bytes of CF32 to move):
  // pulse p's signal is its integers times scales[p] (host memory, `pulses`
  // entries; copied on `stream` before return, so it may be reused).
  void compress(const std::complex<int16_t> *in, const float *scales, std::complex<float> *out, int64_t pulses,
                StreamHandle stream);

 private:
  struct Impl;
  template <class Sample>
  void compress_samples(const Sample *in, const float *device_scales, std::complex<float> *out, int64_t pulses,
                        StreamHandle stream);
  PulseCompressionConfig config_;
  PulseCompressionTables tables_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace cs::sar
