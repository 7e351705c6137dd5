// Backprojection on the host: configuration checks, the double-precision
// preparation of grids and pulses that both implementations use, and the CPU
// backprojector (tiles shared out to std::threads; the per-pixel math is
// backprojection_math.h's, the same the CUDA kernel runs).
#include "sar/backprojection.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cmath>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>

#include "common/host_resources.h"
#include "sar/geodesy.h"

namespace cs::sar {

namespace {

void require(bool ok, const std::string &what) {
  if (!ok) throw std::invalid_argument("backprojection: " + what);
}

bool finite(const Vec3 &v) { return std::isfinite(v.x) && std::isfinite(v.y) && std::isfinite(v.z); }

// Farthest a position may lie from the origin: 1e9 m, beyond the Moon's orbit
// from the Earth's centre. A position beyond is a damaged file's, and squared
// ranges from it head for overflow (1e300 m makes every range infinite).
constexpr double kMaxPositionM = 1e9;
bool within_reach(const Vec3 &v) { return norm(v) <= kMaxPositionM; }

Pos3 to_pos(const Vec3 &v) { return {v.x, v.y, v.z}; }

std::string lower(std::string s) {
  for (char &c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// Largest profile the math's int32 bin indices handle with room to spare (kFarBins).
constexpr int64_t kMaxBins = int64_t(1) << 29;

}  // namespace

const char *to_string(Precision p) {
  switch (p) {
    case Precision::Fast: return "fast";
    case Precision::Mixed: return "mixed";
    case Precision::Double: return "double";
  }
  return "?";
}

const char *to_string(Interpolation i) {
  switch (i) {
    case Interpolation::Nearest: return "nearest";
    case Interpolation::Linear: return "linear";
    case Interpolation::Knab: return "knab";
  }
  return "?";
}

std::optional<Precision> parse_precision(const std::string &name) {
  for (Precision p : {Precision::Fast, Precision::Mixed, Precision::Double})
    if (lower(name) == to_string(p)) return p;
  return std::nullopt;
}

std::optional<Interpolation> parse_interpolation(const std::string &name) {
  for (Interpolation i : {Interpolation::Nearest, Interpolation::Linear, Interpolation::Knab})
    if (lower(name) == to_string(i)) return i;
  return std::nullopt;
}

Vec3 ImageGrid::pixel_position(double column, double row) const {
  return centre + ((column - static_cast<double>(width / 2)) * spacing_x_m) * axis_x +
         ((row - static_cast<double>(height / 2)) * spacing_y_m) * axis_y;
}

ImageGrid north_up_ground_grid(const Vec3 &centre_ecf, int64_t width, int64_t height, double spacing_m) {
  const EnuFrame frame(ecf_to_llh(centre_ecf));
  ImageGrid g;
  g.width = width;
  g.height = height;
  g.spacing_x_m = g.spacing_y_m = spacing_m;
  g.centre = centre_ecf;
  g.axis_x = frame.east();
  g.axis_y = -1.0 * frame.north();
  return g;
}

BackprojectionPulse backprojection_pulse(const PulseParameters &pvp, const PulseCompressionConfig &pc) {
  BackprojectionPulse b;
  b.tx_pos = pvp.tx_pos;
  b.rcv_pos = pvp.rcv_pos;
  b.srp_pos = pvp.srp_pos;
  b.axis = range_axis(pc, pvp.sc0);
  b.centre_frequency_hz = pc.domain == Domain::FX
                              ? pvp.sc0 + 0.5 * static_cast<double>(pc.samples_per_pulse - 1) * pc.frequency_step_hz
                              : 0.5 * (pvp.fx1 + pvp.fx2);
  return b;
}

double profile_oversampling(const PulseCompressionConfig &pc) {
  if (pc.domain == Domain::FX) return pc.upsample;
  const double band = pc.chirp.bandwidth_hz() > 0 ? pc.chirp.bandwidth_hz() : pc.sample_rate_hz;
  return pc.upsample * pc.sample_rate_hz / band;
}

GridGeometry grid_geometry(const ImageGrid &g) {
  require(g.width >= 1 && g.height >= 1, "the image grid needs at least one pixel (width " + std::to_string(g.width) +
                                             ", height " + std::to_string(g.height) + ")");
  require(g.width <= kMaxImageSide && g.height <= kMaxImageSide,
          "image sides are limited to " + std::to_string(kMaxImageSide) + " pixels (width " +
              std::to_string(g.width) + ", height " + std::to_string(g.height) + ")");
  require(g.width * g.height <= kMaxImagePixels,
          "the image has " + std::to_string(g.width * g.height) + " pixels, more than the " +
              std::to_string(kMaxImagePixels) + " allowed");
  require(std::isfinite(g.spacing_x_m) && g.spacing_x_m > 0 && std::isfinite(g.spacing_y_m) && g.spacing_y_m > 0,
          "pixel spacings must be positive and finite");
  require(g.spacing_x_m * static_cast<double>(g.width) <= kMaxImageExtentM &&
              g.spacing_y_m * static_cast<double>(g.height) <= kMaxImageExtentM,
          "the image extends more than " + std::to_string(kMaxImageExtentM / 1000) + " km");
  require(finite(g.centre), "the grid centre must be finite");
  require(finite(g.axis_x) && finite(g.axis_y) && std::fabs(norm(g.axis_x) - 1.0) < 1e-9 &&
              std::fabs(norm(g.axis_y) - 1.0) < 1e-9 && std::fabs(dot(g.axis_x, g.axis_y)) < 1e-9,
          "the grid axes must be orthogonal unit vectors");
  GridGeometry out;
  out.width = static_cast<int32_t>(g.width);
  out.height = static_cast<int32_t>(g.height);
  out.centre_column = static_cast<int32_t>(g.width / 2);
  out.centre_row = static_cast<int32_t>(g.height / 2);
  out.column_step = to_pos(g.spacing_x_m * g.axis_x);
  out.row_step = to_pos(g.spacing_y_m * g.axis_y);
  out.column_spacing_m = g.spacing_x_m;
  out.row_spacing_m = g.spacing_y_m;
  return out;
}

void validate(const BackprojectionConfig &c) {
  grid_geometry(c.grid);
  require(c.interpolation == Interpolation::Nearest || c.interpolation == Interpolation::Linear ||
              c.interpolation == Interpolation::Knab,
          "unknown interpolation");
  if (c.interpolation == Interpolation::Knab) {
    require(c.knab_taps >= 2 && c.knab_taps <= kMaxKnabTaps && c.knab_taps % 2 == 0,
            "Knab taps must be even, 2.." + std::to_string(kMaxKnabTaps) + " (got " + std::to_string(c.knab_taps) +
                ")");
    require(std::isfinite(c.knab_oversampling) && c.knab_oversampling >= 1.0 && c.knab_oversampling <= 1024.0,
            "Knab oversampling must be in [1, 1024]");
  }
  require(c.precision == Precision::Fast || c.precision == Precision::Mixed || c.precision == Precision::Double,
          "unknown precision");
  require(c.sgn == 1 || c.sgn == -1, "SGN must be +1 or -1");
  require(c.cpu_threads >= 0, "CPU threads must be >= 0");
}

PreparedPulses prepare_pulses(const BackprojectionConfig &config, const RangeProfileBlock &block) {
  require(block.pulses >= 0, "negative pulse count");
  require(block.bins >= 1 && block.bins <= kMaxBins,
          "range profiles need 1.." + std::to_string(kMaxBins) + " bins (got " + std::to_string(block.bins) + ")");
  PreparedPulses out;
  if (block.pulses == 0) return out;
  require(block.samples != nullptr, "the block has " + std::to_string(block.pulses) + " pulses but no samples");
  require(block.pulse_info != nullptr && block.pulse_info_count == block.pulses,
          "per-pulse facts missing: " + std::to_string(block.pulses) + " pulses, " +
              std::to_string(block.pulse_info ? block.pulse_info_count : 0) + " with positions and range axes");
  const Vec3 centre = config.grid.centre;
  out.geometry.resize(static_cast<size_t>(block.pulses));
  for (int64_t k = 0; k < block.pulses; ++k) {
    const BackprojectionPulse &b = block.pulse_info[k];
    const std::string which = "pulse " + std::to_string(k) + ": ";
    require(finite(b.tx_pos) && finite(b.rcv_pos) && finite(b.srp_pos), which + "non-finite position");
    require(within_reach(b.tx_pos) && within_reach(b.rcv_pos) && within_reach(b.srp_pos),
            which + "a position lies more than 1e9 m from the origin");
    require(std::isfinite(b.axis.bin_spacing_m) && b.axis.bin_spacing_m > 0 && std::isfinite(b.axis.first_bin_m),
            which + "the range axis needs a positive bin spacing and a finite first bin");
    require(std::isfinite(b.centre_frequency_hz) && b.centre_frequency_hz > 0,
            which + "the centre frequency must be positive");
    const double tx_range = norm(b.tx_pos - b.srp_pos), rcv_range = norm(b.rcv_pos - b.srp_pos);
    require(tx_range > 0 && rcv_range > 0, which + "an antenna sits on the scene reference point");
    PulseGeometry &g = out.geometry[static_cast<size_t>(k)];
    g.tx = to_pos(b.tx_pos - centre);
    g.rcv = to_pos(b.rcv_pos - centre);
    g.reference_range_m = 0.5 * (tx_range + rcv_range);
    g.first_bin_m = b.axis.first_bin_m;
    g.bins_per_metre = 1.0 / b.axis.bin_spacing_m;
    g.turns_per_metre = -static_cast<double>(config.sgn) * 2.0 * b.centre_frequency_hz / kSpeedOfLight;
    if (!(b.tx_pos == b.rcv_pos)) out.legs = 2;
  }
  return out;
}

SampleLocation find_non_finite_sample(const std::complex<float> *samples, int64_t pulses, int64_t bins) {
  for (int64_t k = 0; k < pulses; ++k)
    for (int64_t m = 0; m < bins; ++m) {
      const std::complex<float> v = samples[k * bins + m];
      if (!std::isfinite(v.real()) || !std::isfinite(v.imag())) return {k, m};
    }
  return {};
}

// ------------------------------------------------------------ CPU

namespace {

struct CpuJob {
  GridGeometry grid;
  KnabKernel knab;
  const PulseGeometry *pulses = nullptr;
  int64_t pulse_count = 0;
  const Cf32 *samples = nullptr;
  int bins = 0;
  std::complex<float> *image = nullptr;
  Accumulate mode = Accumulate::Replace;
};

// One tile: per chunk of pulses a partial sum per pixel (in the mode's type),
// added to the pixel's total; the totals meet the image once at the end. The
// CUDA kernel sums in the same order.
template <Precision P, Interpolation I, int kLegs>
void backproject_tile(const CpuJob &job, int tile_column, int tile_row, TileRecord *records) {
  constexpr bool kTiled = P != Precision::Double;
  using Real = std::conditional_t<kTiled, float, double>;
  const GridGeometry &g = job.grid;
  const int c0 = tile_column * kTileColumns, r0 = tile_row * kTileRows;
  const int columns = std::min(kTileColumns, g.width - c0), rows = std::min(kTileRows, g.height - r0);
  const int reference_column = c0 + kTileHalfColumns, reference_row = r0 + kTileHalfRows;
  const Pos3 reference = pixel_offset(g, reference_column, reference_row);
  Complex<Real> total[kTileRows][kTileColumns];
  for (auto &row : total)
    for (auto &v : row) v = {Real(0), Real(0)};

  for (int64_t start = 0; start < job.pulse_count; start += kPulseChunk) {
    const int count = static_cast<int>(std::min<int64_t>(kPulseChunk, job.pulse_count - start));
    const PulseGeometry *pulses = job.pulses + start;
    const Cf32 *profiles = job.samples + start * job.bins;
    if constexpr (kTiled)
      for (int p = 0; p < count; ++p) records[p] = make_tile_record<kLegs>(pulses[p], reference, g, job.bins);
    for (int r = 0; r < rows; ++r)
      for (int c = 0; c < columns; ++c) {
        Complex<Real> acc = {Real(0), Real(0)};
        if constexpr (kTiled) {
          const TilePixel px = tile_pixel(g, c0 + c - reference_column, r0 + r - reference_row);
          for (int p = 0; p < count; ++p)
            accumulate_tile<I, kLegs, P == Precision::Fast>(acc, records[p], px, profiles + p * job.bins, job.bins,
                                                            job.knab);
        } else {
          const Pos3 x = pixel_offset(g, c0 + c, r0 + r);
          for (int p = 0; p < count; ++p)
            accumulate_double<I, kLegs>(acc, pulses[p], x, profiles + p * job.bins, job.bins, job.knab);
        }
        total[r][c].re += acc.re;
        total[r][c].im += acc.im;
      }
  }

  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < columns; ++c) {
      std::complex<float> &out = job.image[static_cast<int64_t>(r0 + r) * g.width + (c0 + c)];
      const Complex<Real> t = total[r][c];
      switch (job.mode) {
        case Accumulate::Replace: out = {static_cast<float>(t.re), static_cast<float>(t.im)}; break;
        case Accumulate::Add:
          out = {static_cast<float>(Real(out.real()) + t.re), static_cast<float>(Real(out.imag()) + t.im)};
          break;
        case Accumulate::Subtract:
          out = {static_cast<float>(Real(out.real()) - t.re), static_cast<float>(Real(out.imag()) - t.im)};
          break;
      }
    }
}

template <Precision P, Interpolation I, int kLegs>
void backproject_tiles(const CpuJob &job, int threads) {
  const int tiles_x = (job.grid.width + kTileColumns - 1) / kTileColumns;
  const int tiles_y = (job.grid.height + kTileRows - 1) / kTileRows;
  const int64_t tiles = static_cast<int64_t>(tiles_x) * tiles_y;
  std::atomic<int64_t> next{0};
  auto worker = [&] {
    std::vector<TileRecord> records(P != Precision::Double ? kPulseChunk : 0);
    for (int64_t t; (t = next.fetch_add(1)) < tiles;)
      backproject_tile<P, I, kLegs>(job, static_cast<int>(t % tiles_x), static_cast<int>(t / tiles_x),
                                    records.data());
  };
  const int n = static_cast<int>(std::min<int64_t>(threads, tiles));
  std::vector<std::thread> pool;
  for (int i = 1; i < n; ++i) pool.emplace_back(worker);
  worker();
  for (std::thread &t : pool) t.join();
}

using TileRunner = void (*)(const CpuJob &, int);

template <Precision P, Interpolation I>
TileRunner runner_for_legs(int legs) {
  return legs == 1 ? &backproject_tiles<P, I, 1> : &backproject_tiles<P, I, 2>;
}

template <Precision P>
TileRunner runner_for_interpolation(Interpolation i, int legs) {
  switch (i) {
    case Interpolation::Nearest: return runner_for_legs<P, Interpolation::Nearest>(legs);
    case Interpolation::Linear: return runner_for_legs<P, Interpolation::Linear>(legs);
    case Interpolation::Knab: return runner_for_legs<P, Interpolation::Knab>(legs);
  }
  return nullptr;
}

TileRunner cpu_runner(Precision p, Interpolation i, int legs) {
  switch (p) {
    case Precision::Fast: return runner_for_interpolation<Precision::Fast>(i, legs);
    case Precision::Mixed: return runner_for_interpolation<Precision::Mixed>(i, legs);
    case Precision::Double: return runner_for_interpolation<Precision::Double>(i, legs);
  }
  return nullptr;
}

}  // namespace

CpuBackprojector::CpuBackprojector(const BackprojectionConfig &config)
    : config_(config), grid_(grid_geometry(config.grid)) {
  validate(config_);
  knab_ = make_knab_kernel(config_.knab_taps, config_.knab_oversampling);
}

void CpuBackprojector::backproject(const RangeProfileBlock &block, std::complex<float> *image, Accumulate mode) const {
  require(image != nullptr, "no image to write");
  const PreparedPulses prepared = prepare_pulses(config_, block);
  if (block.pulses > 0) {
    const SampleLocation bad = find_non_finite_sample(block.samples, block.pulses, block.bins);
    require(bad.pulse < 0, "pulse " + std::to_string(bad.pulse) + ", bin " + std::to_string(bad.bin) +
                               ": non-finite sample (NaN or infinity)");
  }
  CpuJob job;
  job.grid = grid_;
  job.knab = knab_;
  job.pulses = prepared.geometry.data();
  job.pulse_count = block.pulses;
  job.samples = reinterpret_cast<const Cf32 *>(block.samples);
  job.bins = static_cast<int>(block.bins);
  job.image = image;
  job.mode = mode;
  const int threads = config_.cpu_threads > 0 ? config_.cpu_threads : int(cs::usable_cores());
  cpu_runner(config_.precision, config_.interpolation, prepared.legs)(job, threads);
}

// ------------------------------------------------------------ no CUDA

#if !CS_HAVE_CUDA
struct CudaBackprojector::Impl {};

CudaBackprojector::CudaBackprojector(const BackprojectionConfig &config, int) : config_(config) {
  throw CudaError(0, "backprojection: this build has no CUDA");
}
CudaBackprojector::~CudaBackprojector() = default;
void CudaBackprojector::backproject(const RangeProfileBlock &, std::complex<float> *, Accumulate, StreamHandle) {
  throw CudaError(0, "backprojection: this build has no CUDA");
}
#endif

}  // namespace cs::sar
