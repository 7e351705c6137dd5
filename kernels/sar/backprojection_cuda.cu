// Backprojection on the GPU. One thread block per image tile of
// kTileColumns x kTileRows pixels (the tiles of backprojection_math.h), each
// thread several pixels of one column (mixed and fast: 4 rows, 128 threads;
// double: 2 rows, 256 threads). Pulses are taken in chunks of kPulseChunk:
// the block stages the chunk's per-pulse data in shared memory (mixed and
// fast: each thread makes pulse records for this tile, in double), then every
// thread runs the chunk against its pixels with the math of
// backprojection_math.h, reading the records as shared-memory broadcasts
// (once per pulse for all of its pixels) and the profiles through the
// read-only cache. The summation order (partial sum per chunk, added to a
// total, the total to the image) is the CPU path's.
//
// Fast mode's cost per pixel and pulse (linear interpolation, one leg): two
// 8-byte profile loads (cache hits: a warp's pixels read neighbouring bins),
// about 35 other instructions and three on the quarter-rate special-function
// unit (reciprocal square root, sine, cosine), so the kernel is bound by
// instruction issue, not by memory.
//
// Double mode (linear, one leg), per pixel and pulse: the range's square
// root (CUDA's, 15 instructions with one quarter-rate estimate), the bin
// split and the phase's quarter turns by adding 1.5 * 2^52 (no rounding or
// conversion instruction), the four sample conversions to double, 13
// multiply-adds of the phasor polynomials with their coefficients read from
// constant memory, the interpolation and the sum. As in the other modes a
// chunk whose tile records all say tile_inside runs with no bounds check.
// Measured on an H200 (2026-12-01, 4096 x 4096, 8192 pulses; Nsight Compute
// at 2048 x 2048 x 2048): 160-167 G bp/s before these steps (39.5 G warp
// instructions, issue slots 70% busy, the quarter-rate unit 42%: floor,
// conversion to int, CUDA's sincospi with its own roundings); the exact
// split and the unreduced phase 165-171; own phasor polynomials 179-187;
// unchecked chunks 209; coefficients in constant memory instead of literals
// (each literal took two moves per use) 229-230 (25.0 G instructions, the
// double pipe 66% busy). Four rows per thread (122 registers) or 64
// registers with spills for four blocks per SM were within 2% and not kept.
#include <cuda_runtime.h>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "common/cuda_check.h"
#include "common/parameter_upload.h"
#include "sar/backprojection.h"
#include "sar/backprojection_math.h"

namespace cs::sar {

namespace {

// Pixels per thread (rows of one column): more amortise the shared-memory
// record loads; double keeps two for registers.
template <Precision P>
constexpr int rows_per_thread() { return P == Precision::Double ? 2 : 4; }
template <Precision P>
constexpr int threads_per_block() { return kTileColumns * kTileRows / rows_per_thread<P>(); }
static_assert(kTileRows % 4 == 0, "tile rows must split evenly among a thread's pixels");

struct KernelArgs {
  GridGeometry grid;
  KnabKernel knab;
  const PulseGeometry *pulses;  // device, pulse_count entries
  int64_t pulse_count;
  const Cf32 *samples;          // device, pulse_count x bins
  int bins;
  Cf32 *image;                  // device, width x height
  Accumulate mode;
};

// A thread's pixels: each a partial sum over the current chunk of pulses.
template <Precision P, Interpolation I, int kLegs, bool kKnownInside, class Record, class Real, int kRows>
__device__ __forceinline__ void run_chunk(Complex<Real> (&partial)[kRows], const Record *records,
                                          const Cf32 *const *profile_of, int count, const TilePixel (&tile_pixels)[kRows],
                                          const Pos3 (&positions)[kRows], const KernelArgs &a) {
  constexpr bool kTiled = P != Precision::Double;
  for (int p = 0; p < count; ++p) {
    const Record record = records[p];  // once for all of this thread's pixels
    const Cf32 *profile = profile_of[p];
#pragma unroll
    for (int k = 0; k < kRows; ++k) {
      // Pixels beyond the image edge are computed too (their reads stay
      // inside the profile or are checked; the result is not written): no
      // branch in the inner loop.
      if constexpr (kTiled)
        accumulate_tile<I, kLegs, P == Precision::Fast, kKnownInside>(partial[k], record, tile_pixels[k], profile,
                                                                       a.bins, a.knab);
      else
        accumulate_double<I, kLegs, kKnownInside>(partial[k], record, positions[k], profile, a.bins, a.knab);
    }
  }
}

template <Precision P, Interpolation I, int kLegs>
__global__ void __launch_bounds__(threads_per_block<P>()) backproject_kernel(const KernelArgs a) {
  constexpr bool kTiled = P != Precision::Double;
  constexpr int kRows = rows_per_thread<P>();
  constexpr int kThreads = threads_per_block<P>();
  constexpr int kThreadRows = kTileRows / kRows;
  using Real = std::conditional_t<kTiled, float, double>;
  using Record = std::conditional_t<kTiled, TileRecord, PulseGeometry>;
  __shared__ Record records[kPulseChunk];
  __shared__ const Cf32 *profile_of[kPulseChunk];  // a pointer each: the pixels' loads need one add

  const GridGeometry &g = a.grid;
  const int c0 = static_cast<int>(blockIdx.x) * kTileColumns, r0 = static_cast<int>(blockIdx.y) * kTileRows;
  const int reference_column = c0 + kTileHalfColumns, reference_row = r0 + kTileHalfRows;
  const Pos3 reference = pixel_offset(g, reference_column, reference_row);
  const int column = c0 + static_cast<int>(threadIdx.x) % kTileColumns;
  const int first_row = r0 + static_cast<int>(threadIdx.x) / kTileColumns;

  bool inside[kRows];
  TilePixel tile_pixels[kRows];
  Pos3 positions[kRows];
  Complex<Real> total[kRows];
#pragma unroll
  for (int k = 0; k < kRows; ++k) {
    const int row = first_row + k * kThreadRows;
    inside[k] = column < g.width && row < g.height;
    tile_pixels[k] = tile_pixel(g, column - reference_column, row - reference_row);
    positions[k] = pixel_offset(g, column, row);
    total[k] = {Real(0), Real(0)};
  }

  for (int64_t start = 0; start < a.pulse_count; start += kPulseChunk) {
    const int count = static_cast<int>(a.pulse_count - start < kPulseChunk ? a.pulse_count - start : kPulseChunk);
    __syncthreads();  // every thread is done with the previous chunk's records
    int all_inside = 1;
    for (int p = static_cast<int>(threadIdx.x); p < count; p += kThreads) {
      if constexpr (kTiled) {
        records[p] = make_tile_record<kLegs>(a.pulses[start + p], reference, g, a.bins);
        all_inside &= records[p].tile_inside;
      } else {
        records[p] = a.pulses[start + p];
        // The pixels take the pulse in double; the tile's record only says
        // whether all of their stencils lie inside the profile.
        all_inside &= make_tile_record<kLegs>(records[p], reference, g, a.bins).tile_inside;
      }
      profile_of[p] = a.samples + (start + p) * a.bins;
    }
    // Usually every pulse of the chunk sees the whole tile inside its
    // profile: then the pixels run without any bounds check.
    const bool chunk_inside = __syncthreads_and(all_inside) != 0;

    Complex<Real> partial[kRows];
#pragma unroll
    for (int k = 0; k < kRows; ++k) partial[k] = {Real(0), Real(0)};
    if (chunk_inside)
      run_chunk<P, I, kLegs, true>(partial, records, profile_of, count, tile_pixels, positions, a);
    else
      run_chunk<P, I, kLegs, false>(partial, records, profile_of, count, tile_pixels, positions, a);
#pragma unroll
    for (int k = 0; k < kRows; ++k) {
      total[k].re += partial[k].re;
      total[k].im += partial[k].im;
    }
  }

#pragma unroll
  for (int k = 0; k < kRows; ++k) {
    if (!inside[k]) continue;
    Cf32 &out = a.image[static_cast<int64_t>(first_row + k * kThreadRows) * g.width + column];
    switch (a.mode) {
      case Accumulate::Replace: out = {static_cast<float>(total[k].re), static_cast<float>(total[k].im)}; break;
      case Accumulate::Add:
        out = {static_cast<float>(Real(out.re) + total[k].re), static_cast<float>(Real(out.im) + total[k].im)};
        break;
      case Accumulate::Subtract:
        out = {static_cast<float>(Real(out.re) - total[k].re), static_cast<float>(Real(out.im) - total[k].im)};
        break;
    }
  }
}

using KernelLauncher = void (*)(const KernelArgs &, dim3, StreamHandle);

template <Precision P, Interpolation I, int kLegs>
void launch(const KernelArgs &args, dim3 blocks, StreamHandle stream) {
  backproject_kernel<P, I, kLegs><<<blocks, threads_per_block<P>(), 0, stream>>>(args);
}

template <Precision P, Interpolation I>
KernelLauncher launcher_for_legs(int legs) {
  return legs == 1 ? &launch<P, I, 1> : &launch<P, I, 2>;
}

template <Precision P>
KernelLauncher launcher_for_interpolation(Interpolation i, int legs) {
  switch (i) {
    case Interpolation::Nearest: return launcher_for_legs<P, Interpolation::Nearest>(legs);
    case Interpolation::Linear: return launcher_for_legs<P, Interpolation::Linear>(legs);
    case Interpolation::Knab: return launcher_for_legs<P, Interpolation::Knab>(legs);
  }
  return nullptr;
}

KernelLauncher kernel_launcher(Precision p, Interpolation i, int legs) {
  switch (p) {
    case Precision::Fast: return launcher_for_interpolation<Precision::Fast>(i, legs);
    case Precision::Mixed: return launcher_for_interpolation<Precision::Mixed>(i, legs);
    case Precision::Double: return launcher_for_interpolation<Precision::Double>(i, legs);
  }
  return nullptr;
}

}  // namespace

// Per-pulse data goes up through a ParameterUploader, so the host can
// prepare call N+1 while the kernel of call N still reads its copy.
struct CudaBackprojector::Impl {
  explicit Impl(int device) : device(device), pulses(device) {}
  int device;
  ParameterUploader pulses;
};

CudaBackprojector::CudaBackprojector(const BackprojectionConfig &config, int device)
    : config_(config), grid_(grid_geometry(config.grid)) {
  validate(config_);
  knab_ = make_knab_kernel(config_.knab_taps, config_.knab_oversampling);
  const int devices = device_count();
  if (devices == 0) throw CudaError(0, "backprojection: no CUDA device (" + no_device_reason() + ")");
  if (device < 0 || device >= devices)
    throw CudaError(0, "backprojection: no CUDA device " + std::to_string(device) + " (there are " +
                           std::to_string(devices) + ")");
  impl_ = std::make_unique<Impl>(device);
}

CudaBackprojector::~CudaBackprojector() = default;

void CudaBackprojector::backproject(const RangeProfileBlock &block, std::complex<float> *image, Accumulate mode,
                                    StreamHandle stream) {
  if (image == nullptr) throw std::invalid_argument("backprojection: no image to write");
  const PreparedPulses prepared = prepare_pulses(config_, block);
  DeviceGuard guard(impl_->device);

  const auto *pulses = static_cast<const PulseGeometry *>(impl_->pulses.upload(
      prepared.geometry.data(), prepared.geometry.size() * sizeof(PulseGeometry), stream));

  KernelArgs args;
  args.grid = grid_;
  args.knab = knab_;
  args.pulses = pulses;
  args.pulse_count = block.pulses;
  args.samples = reinterpret_cast<const Cf32 *>(block.samples);
  args.bins = static_cast<int>(block.bins);
  args.image = reinterpret_cast<Cf32 *>(image);
  args.mode = mode;
  const dim3 blocks(static_cast<unsigned>((grid_.width + kTileColumns - 1) / kTileColumns),
                    static_cast<unsigned>((grid_.height + kTileRows - 1) / kTileRows));
  kernel_launcher(config_.precision, config_.interpolation, prepared.legs)(args, blocks, stream);
  check_launch("backprojection kernel launch");
}

}  // namespace cs::sar
