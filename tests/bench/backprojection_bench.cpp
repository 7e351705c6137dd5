// Backprojection throughput and precision on the GPU: for each geometry
// (airborne ~9.4 km, spaceborne ~768 km slant range) and precision mode, a
// SIZE x SIZE image from PULSES pulses of random clutter profiles (noise
// through the CPU pulse compressor: band-limited like a real scene), linear
// interpolation. Prints backprojections per second (pixels x pulses / kernel
// time, CUDA events, median of the repeats) and the signal-to-error ratio
// against an fp64 CPU backprojection of a 64 x 64 crop and against the CUDA
// double image of the whole scene. Then continuous video SAR: 2048 x 2048
// frames with an aperture of 4096 pulses sliding by 512 (add the new pulses,
// subtract the old), kernel time per frame.
//
//   backprojection_bench [--size 4096] [--pulses 8192] [--repeats 3] [--csv out.csv]
//
// Without a CUDA device it says so and exits 0.
#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "bench/bench_support.h"
#include "common/cuda_runtime.h"
#include "kernels/sar/backprojection_test_util.h"
#include "sar/backprojection.h"

namespace {

using namespace cs::sar;
using bp_test::Geometry;

constexpr int kDevice = 0;
constexpr int64_t kCrop = 64;

// Random clutter profiles covering a scene of `extent_m` in the geometry.
bp_test::CompressedCollection clutter(Geometry g, int64_t pulses, double extent_m, std::mt19937_64 &rng) {
  SimulatorConfig sc = bp_test::collection(g);
  sc.num_pulses = pulses;
  const double half_diagonal = 0.75 * extent_m;  // with margin
  if (g == Geometry::Airborne) {
    sc.prf_hz = 1000;  // 0.1 m between pulses
    sc.samples_per_pulse = static_cast<int64_t>((sc.pulse_length_s + 4 * half_diagonal / kSpeedOfLight) * sc.sample_rate_hz) + 64;
  } else {
    sc.prf_hz = 2000;  // 3.75 m between pulses
    sc.samples_per_pulse = static_cast<int64_t>(sc.bandwidth_hz * 4 * half_diagonal / kSpeedOfLight) + 64;
  }
  WindowSpec hamming;
  hamming.kind = WindowKind::Hamming;
  return bp_test::compress_collection(sc, hamming, 2, &rng);
}

struct Row {
  std::string geometry, mode;
  int64_t pixels = 0, pulses = 0;
  double ms = 0, gbps = 0, ser_crop_db = 0, ser_double_db = 0;
};

}  // namespace

int main(int argc, char **argv) {
  const bench::Options options(argc, argv, {{"size", "4096"}, {"pulses", "8192"}, {"repeats", "3"}, {"csv", ""}});
  const int64_t size = options.integer("size"), pulses = options.integer("pulses");
  const int repeats = static_cast<int>(options.integer("repeats"));
  const std::string csv = options.text("csv");
  if (cs::device_count() == 0) {
    std::printf("backprojection_bench: no CUDA device (%s); nothing to measure\n", cs::no_device_reason().c_str());
    return 0;
  }
  std::printf("backprojection_bench on %s: %lld x %lld pixels, %lld pulses, linear interpolation\n",
              cs::device_name(kDevice).c_str(), static_cast<long long>(size), static_cast<long long>(size),
              static_cast<long long>(pulses));
  std::printf("%-10s %-6s %12s %8s %10s %10s %14s %16s\n", "geometry", "mode", "pixels", "pulses", "ms", "G bp/s",
              "SER crop (dB)", "SER double (dB)");

  std::mt19937_64 rng(12345);
  std::vector<Row> rows;
  cs::Stream stream(kDevice);
  const double spacing = 0.25;
  for (Geometry geometry : {Geometry::Airborne, Geometry::Spaceborne}) {
    const bp_test::CompressedCollection cc = clutter(geometry, pulses, spacing * size, rng);
    const size_t sample_bytes = cc.profiles.size() * sizeof(std::complex<float>);
    bench::DeviceArray samples(sample_bytes, kDevice);
    cs::copy_async(samples.get(), cc.profiles.data(), sample_bytes, stream.get());
    RangeProfileBlock device_block = cc.block();
    device_block.samples = samples.get<std::complex<float>>();

    BackprojectionConfig config;
    config.grid = north_up_ground_grid(cc.frame().origin_ecf(), size, size, spacing);
    const int64_t pixels = size * size;
    bench::DeviceArray image(static_cast<size_t>(pixels) * sizeof(std::complex<float>), kDevice);

    // The fp64 reference of a crop away from the centre (its own grid, same pixels).
    const int64_t crop_column = size / 5, crop_row = (3 * size) / 5;
    BackprojectionConfig crop = config;
    crop.grid.width = crop.grid.height = std::min(kCrop, size);
    crop.grid.centre = config.grid.pixel_position(static_cast<double>(crop_column + crop.grid.width / 2),
                                                  static_cast<double>(crop_row + crop.grid.height / 2));
    crop.precision = Precision::Double;
    const std::vector<std::complex<float>> crop_reference = bp_test::backproject(crop, cc.block());

    std::vector<std::complex<float>> double_image;
    for (Precision precision : {Precision::Double, Precision::Mixed, Precision::Fast}) {
      config.precision = precision;
      CudaBackprojector gpu(config, kDevice);
      const double ms = bench::timed_ms(stream.get(), kDevice, repeats, [&] {
        gpu.backproject(device_block, image.get<std::complex<float>>(), Accumulate::Replace, stream.get());
      });
      std::vector<std::complex<float>> result(static_cast<size_t>(pixels));
      cs::copy_async(result.data(), image.get(), result.size() * sizeof(result[0]), stream.get());
      stream.synchronize();
      std::vector<std::complex<float>> crop_result;
      for (int64_t r = 0; r < crop.grid.height; ++r)
        for (int64_t c = 0; c < crop.grid.width; ++c)
          crop_result.push_back(result[static_cast<size_t>((crop_row + r) * size + crop_column + c)]);
      if (precision == Precision::Double) double_image = result;

      Row row;
      row.geometry = bp_test::to_string(geometry);
      row.mode = to_string(precision);
      row.pixels = pixels;
      row.pulses = pulses;
      row.ms = ms;
      row.gbps = static_cast<double>(pixels) * static_cast<double>(pulses) / (row.ms * 1e-3) / 1e9;
      row.ser_crop_db = bp_test::signal_to_error_db(crop_result, crop_reference);
      row.ser_double_db = precision == Precision::Double ? INFINITY : bp_test::signal_to_error_db(result, double_image);
      std::printf("%-10s %-6s %12lld %8lld %10.2f %10.1f %14.1f %16.1f\n", row.geometry.c_str(), row.mode.c_str(),
                  static_cast<long long>(pixels), static_cast<long long>(pulses), row.ms, row.gbps, row.ser_crop_db,
                  row.ser_double_db);
      std::fflush(stdout);
      rows.push_back(row);
    }
  }

  // Continuous video SAR: frames of 2048 x 2048, aperture 4096, stride 512.
  const int64_t frame_size = std::min<int64_t>(2048, size), aperture = std::min<int64_t>(4096, pulses / 2);
  const int64_t stride = std::max<int64_t>(1, aperture / 8), frames = (pulses - aperture) / stride;
  if (frames >= 1) {
    const bp_test::CompressedCollection cc = clutter(Geometry::Airborne, pulses, spacing * frame_size, rng);
    const size_t sample_bytes = cc.profiles.size() * sizeof(std::complex<float>);
    bench::DeviceArray samples(sample_bytes, kDevice);
    cs::copy_async(samples.get(), cc.profiles.data(), sample_bytes, stream.get());
    auto on_device = [&](int64_t first, int64_t count) {
      RangeProfileBlock b = cc.block(first, count);
      b.samples = samples.get<std::complex<float>>() + first * cc.bins;
      return b;
    };
    BackprojectionConfig config;
    config.grid = north_up_ground_grid(cc.frame().origin_ecf(), frame_size, frame_size, spacing);
    bench::DeviceArray image(static_cast<size_t>(frame_size * frame_size) * sizeof(std::complex<float>), kDevice);
    auto *frame = image.get<std::complex<float>>();
    std::printf("\nvideo SAR, %lld x %lld frames, aperture %lld pulses, stride %lld, %lld frames (kernel time):\n",
                static_cast<long long>(frame_size), static_cast<long long>(frame_size),
                static_cast<long long>(aperture), static_cast<long long>(stride), static_cast<long long>(frames));
    for (Precision precision : {Precision::Mixed, Precision::Fast}) {
      config.precision = precision;
      CudaBackprojector gpu(config, kDevice);
      // The warm-up call forms the first image; the timed call moves it through every frame.
      const double ms = bench::timed_ms(stream.get(), kDevice, 1, [&, first = true]() mutable {
        if (first) {
          gpu.backproject(on_device(0, aperture), frame, Accumulate::Replace, stream.get());
          first = false;
          return;
        }
        for (int64_t f = 1; f <= frames; ++f) {
          gpu.backproject(on_device(aperture + (f - 1) * stride, stride), frame, Accumulate::Add, stream.get());
          gpu.backproject(on_device((f - 1) * stride, stride), frame, Accumulate::Subtract, stream.get());
        }
      });
      std::printf("  %-6s %8.2f ms per frame, %8.1f frames/s\n", to_string(precision), ms / frames, 1e3 * frames / ms);
      Row row;
      row.geometry = "video-sar";
      row.mode = to_string(precision);
      row.pixels = frame_size * frame_size;
      row.pulses = 2 * stride;
      row.ms = ms / frames;
      row.gbps = static_cast<double>(row.pixels) * static_cast<double>(row.pulses) / (row.ms * 1e-3) / 1e9;
      row.ser_crop_db = row.ser_double_db = NAN;
      rows.push_back(row);
    }
  }

  if (!csv.empty()) {
    FILE *f = std::fopen(csv.c_str(), "w");
    if (!f) {
      std::fprintf(stderr, "cannot write %s\n", csv.c_str());
      return 1;
    }
    std::fprintf(f, "geometry,mode,pixels,pulses,ms,gbackprojections_per_s,ser_crop_db,ser_double_db\n");
    for (const Row &r : rows)
      std::fprintf(f, "%s,%s,%lld,%lld,%.3f,%.2f,%.2f,%.2f\n", r.geometry.c_str(), r.mode.c_str(),
                   static_cast<long long>(r.pixels), static_cast<long long>(r.pulses), r.ms, r.gbps, r.ser_crop_db,
                   r.ser_double_db);
    std::fclose(f);
  }
  return 0;
}
