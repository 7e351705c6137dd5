// Pulse compression: configuration tables, windows, and the FFTW (CPU) path.
#include "sar/pulse_compressor.h"

#include <fftw3.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <string>

#include "sar/pulse_compression_math.h"

namespace cs::sar {

namespace {

// FFTW's planner is not thread-safe; every plan is made and destroyed under this lock.
std::mutex &fftw_planner_mutex() {
  static std::mutex m;
  return m;
}

void require(bool ok, const std::string &what) {
  if (!ok) throw std::invalid_argument("pulse compression: " + what);
}

// Spectrum (double precision) of the reference waveform placed circularly
// with its centre at sample 0.
std::vector<std::complex<double>> reference_spectrum(const PulseCompressionConfig &c) {
  const int64_t n = c.samples_per_pulse;
  std::vector<std::complex<double>> r(static_cast<size_t>(n));
  if (!c.reference_waveform.empty()) {
    const int64_t len = static_cast<int64_t>(c.reference_waveform.size());
    require(len <= n, "the reference waveform is longer than a pulse's samples");
    for (int64_t i = 0; i < len; ++i) {
      const int64_t at = ((i - len / 2) % n + n) % n;
      r[static_cast<size_t>(at)] = std::complex<double>(c.reference_waveform[static_cast<size_t>(i)]);
    }
  } else {
    const double half = 0.5 * c.chirp.duration_s;
    for (int64_t i = 0; i < n; ++i) {
      const double t = static_cast<double>(signed_bin(i, n)) / c.sample_rate_hz;
      if (std::fabs(t) <= half) r[static_cast<size_t>(i)] = std::polar(1.0, M_PI * c.chirp.rate_hz_per_s * t * t);
    }
  }
  double energy = 0;
  for (const auto &v : r) energy += std::norm(v);
  require(std::isfinite(energy), "the reference waveform has samples that are not finite numbers (NaN or infinite)");
  require(energy > 0, "the reference waveform is empty (pulse shorter than a sample?)");
  std::vector<std::complex<double>> spectrum(static_cast<size_t>(n));
  {
    std::lock_guard<std::mutex> lock(fftw_planner_mutex());
    fftw_plan plan = fftw_plan_dft_1d(static_cast<int>(n), reinterpret_cast<fftw_complex *>(r.data()),
                                      reinterpret_cast<fftw_complex *>(spectrum.data()), FFTW_FORWARD,
                                      FFTW_ESTIMATE);
    fftw_execute(plan);
    fftw_destroy_plan(plan);
  }
  return spectrum;
}

}  // namespace

const char *to_string(WindowKind k) {
  switch (k) {
    case WindowKind::None: return "none";
    case WindowKind::Hamming: return "hamming";
    case WindowKind::Hann: return "hann";
    case WindowKind::Taylor: return "taylor";
    case WindowKind::Kaiser: return "kaiser";
  }
  return "?";
}

WindowParams make_window(const WindowSpec &spec) {
  WindowParams w;
  w.kind = spec.kind;
  if (spec.kind == WindowKind::Taylor) {
    require(spec.taylor_nbar >= 1 && spec.taylor_nbar <= kMaxTaylorTerms, "Taylor nbar must be 1.." +
                                                                               std::to_string(kMaxTaylorTerms));
    const double sll = std::fabs(spec.taylor_sll_db);
    require(sll > 0 && std::isfinite(sll), "Taylor sidelobe level must be non-zero");
    // Taylor (1955): the first nbar-1 zeros of the sinc pattern moved so that
    // the near sidelobes sit at the design level.
    const double a = std::acosh(std::pow(10.0, sll / 20.0)) / M_PI;
    const int nbar = spec.taylor_nbar;
    const double sigma_sq = nbar * nbar / (a * a + (nbar - 0.5) * (nbar - 0.5));
    w.taylor_terms = nbar - 1;
    for (int m = 1; m < nbar; ++m) {
      double num = 1.0, den = 1.0;
      for (int n = 1; n < nbar; ++n) {
        num *= 1.0 - m * m / (sigma_sq * (a * a + (n - 0.5) * (n - 0.5)));
        if (n != m) den *= 1.0 - static_cast<double>(m * m) / (n * n);
      }
      w.taylor_coefficients[m - 1] = ((m % 2) ? 0.5 : -0.5) * num / den;
    }
  } else if (spec.kind == WindowKind::Kaiser) {
    require(spec.kaiser_beta >= 0 && spec.kaiser_beta <= 50, "Kaiser beta must be in [0, 50]");
    w.kaiser_beta = spec.kaiser_beta;
    w.kaiser_inv_i0_beta = 1.0 / bessel_i0(spec.kaiser_beta);
  }
  return w;
}

PulseCompressionTables make_pulse_compression_tables(const PulseCompressionConfig &c) {
  require(c.samples_per_pulse >= 2, "samples per pulse must be at least 2");
  require(c.upsample >= 1 && c.upsample <= 16, "upsampling factor must be 1..16");
  require(c.max_pulses_per_block >= 1, "max pulses per block must be at least 1");
  require(static_cast<double>(c.samples_per_pulse) * c.upsample < 2147483647.0, "FFT length too large");
  const WindowParams window = make_window(c.window);
  PulseCompressionTables t;
  t.input_length = c.samples_per_pulse;
  t.output_length = c.samples_per_pulse * c.upsample;
  t.filter.resize(static_cast<size_t>(t.input_length));
  if (c.domain == Domain::TOA) {
    require(c.sample_rate_hz > 0 && std::isfinite(c.sample_rate_hz), "sample rate must be positive");
    const bool measured = !c.reference_waveform.empty();
    require(measured || (c.chirp.duration_s > 0 && c.chirp.rate_hz_per_s != 0), "the chirp needs a rate and a duration");
    const double band = c.chirp.bandwidth_hz() > 0 ? c.chirp.bandwidth_hz() : c.sample_rate_hz;
    require(band <= c.sample_rate_hz * (1 + 1e-12), "chirp bandwidth exceeds the sample rate");
    const std::vector<std::complex<double>> spectrum = reference_spectrum(c);
    const double n = static_cast<double>(t.input_length);
    t.rotation_sign = 1;  // the inverse FFT
    // Unnormalised filter, then one scale so that a point target of amplitude
    // a peaks at a times the window's mean over the band, whatever the filter.
    std::vector<std::complex<double>> h(static_cast<size_t>(t.input_length));
    double window_sum = 0, response_at_peak = 0;
    int64_t band_bins = 0;
    for (int64_t k = 0; k < t.input_length; ++k) {
      const double f = static_cast<double>(signed_bin(k, t.input_length)) * c.sample_rate_hz / n;
      const double u = f / band + 0.5;
      if (u < 0.0 || u > 1.0) continue;
      const std::complex<double> r = spectrum[static_cast<size_t>(k)];
      const double w = window_value(window, u);
      ++band_bins;
      window_sum += w;
      if (std::norm(r) == 0.0) continue;
      h[static_cast<size_t>(k)] =
          std::conj(r) * w / (c.reference_filter == ReferenceFilter::Equalized ? std::norm(r) : 1.0);
      response_at_peak += (r * h[static_cast<size_t>(k)]).real();
    }
    require(band_bins > 0 && response_at_peak > 0, "the reference has no energy in the chirp band");
    const double scale = window_sum / static_cast<double>(band_bins) / response_at_peak;
    for (int64_t k = 0; k < t.input_length; ++k)
      t.filter[static_cast<size_t>(k)] = std::complex<float>(h[static_cast<size_t>(k)] * scale);
  } else {
    require(c.frequency_step_hz > 0 && std::isfinite(c.frequency_step_hz), "frequency step must be positive");
    require(c.sgn == 1 || c.sgn == -1, "SGN must be +1 or -1");
    t.rotation_sign = -c.sgn;
    const double k_count = static_cast<double>(t.input_length);
    for (int64_t k = 0; k < t.input_length; ++k) {
      const double w = window_value(window, fx_window_position(k, t.input_length)) / k_count;
      const Cf32 twiddle = fx_input_twiddle(k, t.output_length, t.rotation_sign);
      t.filter[static_cast<size_t>(k)] = std::complex<float>(static_cast<float>(w) * twiddle.re,
                                                             static_cast<float>(w) * twiddle.im);
    }
    t.output_rotation.resize(static_cast<size_t>(t.output_length));
    for (int64_t m = 0; m < t.output_length; ++m) {
      const Cf32 r = fx_output_rotation(m, t.output_length, t.input_length, t.rotation_sign);
      t.output_rotation[static_cast<size_t>(m)] = {r.re, r.im};
    }
  }
  return t;
}

RangeAxis range_axis(const PulseCompressionConfig &c, double sc0) {
  RangeAxis a;
  if (c.domain == Domain::TOA) {
    a.bin_spacing_m = kSpeedOfLight / (2.0 * c.upsample * c.sample_rate_hz);
    a.first_bin_m = 0.5 * kSpeedOfLight * sc0;
  } else {
    const int64_t m = c.samples_per_pulse * c.upsample;
    a.bin_spacing_m = kSpeedOfLight / (2.0 * c.frequency_step_hz * static_cast<double>(m));
    a.first_bin_m = -static_cast<double>(m / 2) * a.bin_spacing_m;
  }
  return a;
}

double bandwidth_resolution_m(const PulseCompressionConfig &c) {
  const double band = c.domain == Domain::TOA
                          ? (c.chirp.bandwidth_hz() > 0 ? c.chirp.bandwidth_hz() : c.sample_rate_hz)
                          : c.frequency_step_hz * static_cast<double>(c.samples_per_pulse);
  return kSpeedOfLight / (2.0 * band);
}

// ------------------------------------------------------------ CPU (FFTW)

struct CpuPulseCompressor::Plans {
  int64_t batch = 0;
  fftwf_complex *input = nullptr;   // batch x N (TOA only)
  fftwf_complex *output = nullptr;  // batch x M
  fftwf_plan forward = nullptr;     // TOA: input -> input
  fftwf_plan to_range = nullptr;    // output -> output, kernel exp(+j s ...)

  ~Plans() {
    std::lock_guard<std::mutex> lock(fftw_planner_mutex());
    if (forward) fftwf_destroy_plan(forward);
    if (to_range) fftwf_destroy_plan(to_range);
    fftwf_free(input);
    fftwf_free(output);
  }
};

CpuPulseCompressor::CpuPulseCompressor(const PulseCompressionConfig &config)
    : config_(config), tables_(make_pulse_compression_tables(config)) {}

CpuPulseCompressor::~CpuPulseCompressor() = default;

CpuPulseCompressor::Plans &CpuPulseCompressor::plans_for(int64_t batch) {
  auto &slot = plans_[batch];
  if (slot) return *slot;
  auto p = std::make_unique<Plans>();
  p->batch = batch;
  const int n = static_cast<int>(tables_.input_length), m = static_cast<int>(tables_.output_length);
  const int b = static_cast<int>(batch);
  std::lock_guard<std::mutex> lock(fftw_planner_mutex());
  // Checked: FFTW plans even for arrays it failed to allocate.
  auto allocate = [&](int64_t length) {
    fftwf_complex *block = fftwf_alloc_complex(static_cast<size_t>(batch * length));
    if (!block)
      throw std::runtime_error("pulse compression: cannot allocate " +
                               std::to_string(batch * length * int64_t(sizeof(fftwf_complex))) +
                               " bytes for a batch of " + std::to_string(batch) + " pulses");
    return block;
  };
  p->output = allocate(tables_.output_length);
  if (config_.domain == Domain::TOA) {
    p->input = allocate(tables_.input_length);
    p->forward = fftwf_plan_many_dft(1, &n, b, p->input, nullptr, 1, n, p->input, nullptr, 1, n, FFTW_FORWARD,
                                     FFTW_ESTIMATE);
  }
  // FFTW_BACKWARD is the exp(+j ...) kernel, i.e. s = +1.
  p->to_range = fftwf_plan_many_dft(1, &m, b, p->output, nullptr, 1, m, p->output, nullptr, 1, m,
                                    tables_.rotation_sign > 0 ? FFTW_BACKWARD : FFTW_FORWARD, FFTW_ESTIMATE);
  if (!p->to_range || (config_.domain == Domain::TOA && !p->forward))
    throw std::runtime_error("pulse compression: FFTW could not make a plan");
  slot = std::move(p);
  return *slot;
}

void CpuPulseCompressor::compress(const std::complex<float> *in, std::complex<float> *out, int64_t pulses) {
  compress_samples(reinterpret_cast<const Cf32 *>(in), nullptr, out, pulses);
}

void CpuPulseCompressor::compress(const std::complex<int16_t> *in, const float *scales, std::complex<float> *out,
                                  int64_t pulses) {
  if (pulses > 0 && scales == nullptr) throw std::invalid_argument("pulse compression: CI16 input needs its scales");
  compress_samples(reinterpret_cast<const Ci16 *>(in), scales, out, pulses);
}

template <class Sample>
void CpuPulseCompressor::compress_samples(const Sample *in, const float *scales, std::complex<float> *out,
                                          int64_t pulses) {
  const int64_t n = tables_.input_length, m = tables_.output_length;
  const Cf32 *filter = reinterpret_cast<const Cf32 *>(tables_.filter.data());
  for (int64_t done = 0; done < pulses;) {
    const int64_t batch = std::min(config_.max_pulses_per_block, pulses - done);
    Plans &p = plans_for(batch);
    const Sample *src = in + done * n;
    auto scale_of = [&](int64_t row) { return scales ? scales[done + row] : 1.0f; };
    Cf32 *work_out = reinterpret_cast<Cf32 *>(p.output);
    if (config_.domain == Domain::TOA) {
      Cf32 *work_in = reinterpret_cast<Cf32 *>(p.input);
      for (int64_t row = 0; row < batch; ++row) {
        const float scale = scale_of(row);
        for (int64_t j = 0; j < n; ++j) work_in[row * n + j] = sample_value(src[row * n + j], scale);
      }
      fftwf_execute(p.forward);
      const Cf32 *spectrum = work_in;
      for (int64_t row = 0; row < batch; ++row)
        for (int64_t j = 0; j < m; ++j) {
          const int64_t k = spectrum_source_index(j, n, m);
          work_out[row * m + j] = k < 0 ? Cf32{0, 0} : cmul(spectrum[row * n + k], filter[k]);
        }
      fftwf_execute(p.to_range);
      std::memcpy(static_cast<void *>(out + done * m), work_out, static_cast<size_t>(batch * m) * sizeof(Cf32));
    } else {
      for (int64_t row = 0; row < batch; ++row) {
        const float scale = scale_of(row);
        for (int64_t j = 0; j < m; ++j)
          work_out[row * m + j] = j < n ? cmul(sample_value(src[row * n + j], scale), filter[j]) : Cf32{0, 0};
      }
      fftwf_execute(p.to_range);
      const Cf32 *rotation = reinterpret_cast<const Cf32 *>(tables_.output_rotation.data());
      Cf32 *dst = reinterpret_cast<Cf32 *>(out + done * m);
      for (int64_t row = 0; row < batch; ++row)
        for (int64_t j = 0; j < m; ++j) dst[row * m + j] = cmul(work_out[row * m + j], rotation[j]);
    }
    done += batch;
  }
}

// ------------------------------------------------------------ no CUDA

#if !CS_HAVE_CUDA
struct CudaPulseCompressor::Impl {};

CudaPulseCompressor::CudaPulseCompressor(const PulseCompressionConfig &config, int)
    : config_(config), tables_(make_pulse_compression_tables(config)) {
  throw CudaError(0, "pulse compression: this build has no CUDA");
}
CudaPulseCompressor::~CudaPulseCompressor() = default;
void CudaPulseCompressor::compress(const std::complex<float> *, std::complex<float> *, int64_t, StreamHandle) {
  throw CudaError(0, "pulse compression: this build has no CUDA");
}

void CudaPulseCompressor::compress(const std::complex<int16_t> *, const float *, std::complex<float> *, int64_t,
                                   StreamHandle) {
  throw CudaError(0, "pulse compression: this build has no CUDA");
}
#endif

}  // namespace cs::sar
