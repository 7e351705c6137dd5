// Pulse compression on the GPU: batched cuFFT plans (made once per block
// size and cached) around two small kernels that call the same per-sample
// functions as the CPU path (pulse_compression_math.h).
#include <cuda_runtime.h>
#include <cufft.h>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "common/cuda_check.h"
#include "common/parameter_upload.h"
#include "sar/pulse_compression_math.h"
#include "sar/pulse_compressor.h"

namespace cs::sar {

namespace {

void check_cufft(cufftResult r, const char *what) {
  if (r != CUFFT_SUCCESS)
    throw CudaError(static_cast<int>(r), std::string("pulse compression: cuFFT ") + what + " failed (cufftResult " +
                                             std::to_string(static_cast<int>(r)) + ")");
}

// Zero-padded, filtered spectrum: every output element is written (zeros in
// the padding), so no memset pass is needed.
__global__ void filter_and_pad(const Cf32 *__restrict__ spectrum, const Cf32 *__restrict__ filter,
                               Cf32 *__restrict__ padded, int64_t rows, int64_t n, int64_t m) {
  const int64_t total = rows * m;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t row = i / m, j = i - row * m;
    const int64_t k = spectrum_source_index(j, n, m);
    padded[i] = k < 0 ? Cf32{0.f, 0.f} : cmul(spectrum[row * n + k], filter[k]);
  }
}

// FX: weighted samples at the front of each row, zeros after. `scales`:
// one per row for CI16 input (null for CF32).
template <class Sample>
__global__ void weight_and_pad(const Sample *__restrict__ samples, const float *__restrict__ scales,
                               const Cf32 *__restrict__ weights, Cf32 *__restrict__ padded, int64_t rows, int64_t n,
                               int64_t m) {
  const int64_t total = rows * m;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t row = i / m, j = i - row * m;
    padded[i] = j < n ? cmul(sample_value(samples[row * n + j], scales ? scales[row] : 1.0f), weights[j])
                      : Cf32{0.f, 0.f};
  }
}

// TOA, CI16 input: the samples as complex float rows (the forward FFT's input).
__global__ void widen_rows(const Ci16 *__restrict__ samples, const float *__restrict__ scales, Cf32 *__restrict__ out,
                           int64_t rows, int64_t n) {
  const int64_t total = rows * n;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    out[i] = sample_value(samples[i], scales[i / n]);
}

__global__ void rotate_rows(Cf32 *__restrict__ data, const Cf32 *__restrict__ rotation, int64_t rows, int64_t m) {
  const int64_t total = rows * m;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    data[i] = cmul(data[i], rotation[i % m]);
}

unsigned grid_for(int64_t elements, int threads) {
  const int64_t blocks = (elements + threads - 1) / threads;
  return static_cast<unsigned>(std::min<int64_t>(blocks, 65535 * 8));
}

}  // namespace

struct CudaPulseCompressor::Impl {
  explicit Impl(int device) : device(device), scales(device) {}
  int device;
  Cf32 *filter = nullptr;
  Cf32 *rotation = nullptr;  // FX
  Cf32 *spectrum = nullptr;  // TOA: max_batch x N
  ParameterUploader scales;  // CI16: one per pulse
  struct Plans {
    cufftHandle forward = 0;  // TOA: N-point, batch rows
    cufftHandle to_range = 0;  // M-point, batch rows
    bool has_forward = false, has_to_range = false;
  };
  std::map<int64_t, Plans> plans;

  // The batched plans for `batch` rows, made on first use (the element's
  // full block size is made in the constructor, so no buffer waits for it).
  Plans &plans_for(int64_t batch, Domain domain, int64_t n, int64_t m) {
    Plans &p = plans[batch];
    int n_int = static_cast<int>(n), m_int = static_cast<int>(m);
    if (domain == Domain::TOA && !p.has_forward) {
      check_cufft(cufftPlanMany(&p.forward, 1, &n_int, nullptr, 1, n_int, nullptr, 1, n_int, CUFFT_C2C,
                                static_cast<int>(batch)),
                  "plan (forward)");
      p.has_forward = true;
    }
    if (!p.has_to_range) {
      check_cufft(cufftPlanMany(&p.to_range, 1, &m_int, nullptr, 1, m_int, nullptr, 1, m_int, CUFFT_C2C,
                                static_cast<int>(batch)),
                  "plan (to range)");
      p.has_to_range = true;
    }
    return p;
  }

  ~Impl() {
    int previous = -1;  // no DeviceGuard: a destructor must not throw
    cudaGetDevice(&previous);
    cudaSetDevice(device);
    for (auto &kv : plans) {
      if (kv.second.has_forward) cufftDestroy(kv.second.forward);
      if (kv.second.has_to_range) cufftDestroy(kv.second.to_range);
    }
    if (previous >= 0) cudaSetDevice(previous);
    device_free(filter, device);
    device_free(rotation, device);
    device_free(spectrum, device);
  }
};

CudaPulseCompressor::CudaPulseCompressor(const PulseCompressionConfig &config, int device)
    : config_(config), tables_(make_pulse_compression_tables(config)) {
  if (device_count() == 0) throw CudaError(0, "pulse compression: no CUDA device (" + no_device_reason() + ")");
  DeviceGuard guard(device);
  impl_ = std::make_unique<Impl>(device);
  const size_t filter_bytes = tables_.filter.size() * sizeof(Cf32);
  impl_->filter = static_cast<Cf32 *>(device_alloc(filter_bytes, device));
  check_cuda(cudaMemcpy(impl_->filter, tables_.filter.data(), filter_bytes, cudaMemcpyHostToDevice), "filter upload");
  if (!tables_.output_rotation.empty()) {
    const size_t bytes = tables_.output_rotation.size() * sizeof(Cf32);
    impl_->rotation = static_cast<Cf32 *>(device_alloc(bytes, device));
    check_cuda(cudaMemcpy(impl_->rotation, tables_.output_rotation.data(), bytes, cudaMemcpyHostToDevice),
               "rotation upload");
  }
  if (config_.domain == Domain::TOA)
    impl_->spectrum = static_cast<Cf32 *>(
        device_alloc(static_cast<size_t>(config_.max_pulses_per_block * tables_.input_length) * sizeof(Cf32), device));
  impl_->plans_for(config_.max_pulses_per_block, config_.domain, tables_.input_length, tables_.output_length);
}

CudaPulseCompressor::~CudaPulseCompressor() = default;

void CudaPulseCompressor::compress(const std::complex<float> *in, std::complex<float> *out, int64_t pulses,
                                   StreamHandle stream) {
  compress_samples(reinterpret_cast<const Cf32 *>(in), nullptr, out, pulses, stream);
}

void CudaPulseCompressor::compress(const std::complex<int16_t> *in, const float *scales, std::complex<float> *out,
                                   int64_t pulses, StreamHandle stream) {
  if (pulses <= 0) return;
  if (scales == nullptr) throw std::invalid_argument("pulse compression: CI16 input needs its scales");
  DeviceGuard guard(impl_->device);
  const auto *device_scales =
      static_cast<const float *>(impl_->scales.upload(scales, static_cast<size_t>(pulses) * sizeof(float), stream));
  compress_samples(reinterpret_cast<const Ci16 *>(in), device_scales, out, pulses, stream);
}

template <class Sample>
void CudaPulseCompressor::compress_samples(const Sample *in, const float *device_scales, std::complex<float> *out,
                                           int64_t pulses, StreamHandle stream) {
  constexpr bool kWiden = !std::is_same_v<Sample, Cf32>;
  DeviceGuard guard(impl_->device);
  const int64_t n = tables_.input_length, m = tables_.output_length;
  const int threads = 256;
  const int direction = tables_.rotation_sign > 0 ? CUFFT_INVERSE : CUFFT_FORWARD;
  for (int64_t done = 0; done < pulses;) {
    const int64_t batch = std::min(config_.max_pulses_per_block, pulses - done);
    Impl::Plans &p = impl_->plans_for(batch, config_.domain, n, m);
    const Sample *src = in + done * n;
    const float *scales = kWiden ? device_scales + done : nullptr;
    Cf32 *dst = reinterpret_cast<Cf32 *>(out + done * m);
    if (config_.domain == Domain::TOA) {
      // cuFFT's out-of-place C2C leaves its input untouched. CI16 is widened
      // into the output rows first (M >= N per row), which the filter step
      // overwrites afterwards.
      const Cf32 *fft_input = reinterpret_cast<const Cf32 *>(src);
      if constexpr (kWiden) {
        widen_rows<<<grid_for(batch * n, threads), threads, 0, stream>>>(src, scales, dst, batch, n);
        check_cuda(cudaGetLastError(), "widening kernel launch");
        fft_input = dst;
      }
      check_cufft(cufftSetStream(p.forward, stream), "set stream");
      check_cufft(cufftExecC2C(p.forward, reinterpret_cast<cufftComplex *>(const_cast<Cf32 *>(fft_input)),
                               reinterpret_cast<cufftComplex *>(impl_->spectrum), CUFFT_FORWARD),
                  "forward FFT");
      filter_and_pad<<<grid_for(batch * m, threads), threads, 0, stream>>>(impl_->spectrum, impl_->filter, dst,
                                                                            batch, n, m);
      check_cuda(cudaGetLastError(), "filter kernel launch");
      check_cufft(cufftSetStream(p.to_range, stream), "set stream");
      check_cufft(cufftExecC2C(p.to_range, reinterpret_cast<cufftComplex *>(dst),
                               reinterpret_cast<cufftComplex *>(dst), direction),
                  "inverse FFT");
    } else {
      weight_and_pad<Sample><<<grid_for(batch * m, threads), threads, 0, stream>>>(src, scales, impl_->filter, dst,
                                                                                    batch, n, m);
      check_cuda(cudaGetLastError(), "weight kernel launch");
      check_cufft(cufftSetStream(p.to_range, stream), "set stream");
      check_cufft(cufftExecC2C(p.to_range, reinterpret_cast<cufftComplex *>(dst),
                               reinterpret_cast<cufftComplex *>(dst), direction),
                  "range FFT");
      rotate_rows<<<grid_for(batch * m, threads), threads, 0, stream>>>(dst, impl_->rotation, batch, m);
      check_cuda(cudaGetLastError(), "rotation kernel launch");
    }
    done += batch;
  }
}

}  // namespace cs::sar
