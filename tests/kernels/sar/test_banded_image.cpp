// Banded images (kernels/sar/banded_image.h): the split into row bands and
// the residency plan that decides which bands stay in device memory (pure
// functions: they run everywhere, so CI checks the planning), the CPU banded
// image against the untiled one, and on a GPU paged bands giving the
// resident bands' pixels bit for bit through replace, add and subtract.
#include <gtest/gtest.h>

#include <algorithm>
#include <complex>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "backprojection_test_util.h"
#include "sar/banded_image.h"
#include "test_support.h"

using namespace cs::sar;
using bp_test::CompressedCollection;
using Cf = std::complex<float>;

namespace {

constexpr size_t kMiB = size_t(1) << 20;

// Each band's rows, checked to cover [0, height) once and in order.
void expect_cover(const std::vector<RowBand> &bands, int64_t height) {
  int64_t next = 0;
  for (const RowBand &b : bands) {
    EXPECT_EQ(b.first_row, next);
    EXPECT_GE(b.rows, 1);
    next += b.rows;
  }
  EXPECT_EQ(next, height);
}

std::vector<bool> flags(std::initializer_list<int> values) {
  std::vector<bool> out;
  for (int v : values) out.push_back(v != 0);
  return out;
}

// Random clutter (band-limited by the compression like a real scene) and a
// north-up grid around the scene centre.
CompressedCollection clutter(int64_t pulses, std::mt19937_64 &rng) {
  SimulatorConfig sc = bp_test::collection(bp_test::Geometry::Airborne);
  sc.num_pulses = pulses;
  sc.samples_per_pulse = 512;
  WindowSpec hamming;
  hamming.kind = WindowKind::Hamming;
  return bp_test::compress_collection(sc, hamming, 4, &rng);
}

BackprojectionConfig grid_config(const CompressedCollection &cc, int64_t width, int64_t height) {
  BackprojectionConfig c;
  c.grid = north_up_ground_grid(cc.frame().to_ecf({1.5, -2.5, 0.0}), width, height, 0.5);
  c.knab_oversampling = profile_oversampling(cc.compression);
  c.precision = Precision::Mixed;
  return c;
}

}  // namespace

// ------------------------------------------------------------ bands

TEST(BandSplit, BandsOfWholeKernelTilesCoverTheGridOnce) {
  // 512 x 512 in bands of 128 rows' pixels: four bands of 128 rows.
  std::vector<RowBand> bands = split_into_bands(512, 512, 512 * 128);
  ASSERT_EQ(bands.size(), 4u);
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(bands[i].rows, 128);
  expect_cover(bands, 512);
  // 40 rows' pixels: rounded down to 32 rows (two kernel tiles of 16); the last band has the rest.
  bands = split_into_bands(80, 70, 80 * 40);
  ASSERT_EQ(bands.size(), 3u);
  EXPECT_EQ(bands[0].rows, 32);
  EXPECT_EQ(bands[2].rows, 6);
  expect_cover(bands, 70);
  // Fewer than a tile's rows: as many rows as fit, at least one.
  expect_cover(split_into_bands(80, 70, 80 * 5), 70);
  EXPECT_EQ(split_into_bands(80, 70, 80 * 5).size(), 14u);
  EXPECT_EQ(split_into_bands(80, 70, 10).size(), 70u);
  EXPECT_EQ(split_into_bands(80, 70, int64_t(1) << 40).size(), 1u);
}

// ------------------------------------------------------------ the residency plan

// Four bands of 1 MiB and a ring of 3 MiB: the image stays wholly on the
// device when the ring and the image twice (it and its output copy) fit.
TEST(BandResidency, EveryBandResidentWhenTheImageTwiceAndTheRingFit) {
  const std::vector<size_t> bands(4, kMiB);
  const BandResidency all = plan_band_residency(bands, 3 * kMiB, 11 * kMiB);
  EXPECT_TRUE(all.fits);
  EXPECT_TRUE(all.all_resident());
  EXPECT_EQ(all.resident_count(), 4u);
  EXPECT_EQ(all.staging_bytes, 0u);
  const BandResidency short_by_a_byte = plan_band_residency(bands, 3 * kMiB, 11 * kMiB - 1);
  EXPECT_TRUE(short_by_a_byte.fits);
  EXPECT_FALSE(short_by_a_byte.all_resident());
}

// Paging: two staging bands, then bands in order while they fit. The
// element test's setting: 4 bands, a budget of ring + 3.5 bands keeps one.
TEST(BandResidency, PagingTakesTwoStagingBandsThenResidentBandsInOrder) {
  const size_t band = 512 * 1024, ring = 1280 * 1024;
  const std::vector<size_t> bands(4, band);
  const BandResidency one = plan_band_residency(bands, ring, ring + 3 * band + band / 2);
  EXPECT_TRUE(one.fits);
  EXPECT_EQ(one.resident, flags({1, 0, 0, 0}));
  EXPECT_EQ(one.staging_bytes, 2 * band);
  EXPECT_EQ(one.minimum_bytes, ring + 2 * band);
  const BandResidency none = plan_band_residency(bands, ring, ring + 2 * band);
  EXPECT_TRUE(none.fits);
  EXPECT_EQ(none.resident, flags({0, 0, 0, 0}));
  const BandResidency too_small = plan_band_residency(bands, ring, ring + 2 * band - 1);
  EXPECT_FALSE(too_small.fits);
  EXPECT_FALSE(too_small.all_resident());
  EXPECT_EQ(too_small.resident_count(), 0u);
  EXPECT_EQ(too_small.minimum_bytes, ring + 2 * band);
}

// Once paging starts the output goes through the host, so a plan never ends
// with every band resident without the room for the output copy.
TEST(BandResidency, OnceBandsArePagedAtLeastOneStaysPaged) {
  const std::vector<size_t> bands(4, kMiB);
  const BandResidency plan = plan_band_residency(bands, 0, 7 * kMiB);  // 2 staging + 4 bands would fit
  EXPECT_TRUE(plan.fits);
  EXPECT_EQ(plan.resident, flags({1, 1, 1, 0}));
  EXPECT_FALSE(plan.all_resident());
}

TEST(BandResidency, ASmallerLastBandTakesWhatIsLeft) {
  const std::vector<size_t> bands = {4 * kMiB, 4 * kMiB, 4 * kMiB, kMiB};
  // 8 MiB of staging; 6 MiB left: the first band (2 left), not the next two, the last.
  const BandResidency plan = plan_band_residency(bands, 0, 14 * kMiB);
  EXPECT_EQ(plan.staging_bytes, 8 * kMiB);
  EXPECT_EQ(plan.resident, flags({1, 0, 0, 1}));
}

TEST(BandResidency, ASingleBandPagesThroughOneStagingBuffer) {
  const BandResidency paged = plan_band_residency({4 * kMiB}, 0, 6 * kMiB);
  EXPECT_TRUE(paged.fits);
  EXPECT_EQ(paged.staging_bytes, 4 * kMiB);
  EXPECT_EQ(paged.resident, flags({0}));
  EXPECT_FALSE(plan_band_residency({4 * kMiB}, 0, 3 * kMiB).fits);
}

TEST(BandResidency, AutomaticBudgetIsFreeMemoryLessAMargin) {
  const size_t GiB = size_t(1) << 30;
  EXPECT_EQ(automatic_device_budget({10 * GiB, 80 * GiB}), 6 * GiB);  // margin 5% of 80 GiB
  EXPECT_EQ(automatic_device_budget({GiB, 2 * GiB}), GiB - 256 * kMiB);  // margin at least 256 MiB
  EXPECT_EQ(automatic_device_budget({100 * kMiB, 2 * GiB}), 0u);
}

// ------------------------------------------------------------ CPU banded image

// Bands of 16, 7 and 1 rows give the untiled image (band centres are grid
// pixels: only double rounding of positions differs, >= 100 dB); one band is
// the plain backprojector bit for bit. The CPU image is never on the device.
TEST(BandedImage, CpuBandsGiveTheUntiledImage) {
  std::mt19937_64 rng(cs_test::fresh_seed());
  const CompressedCollection cc = clutter(80, rng);
  const BackprojectionConfig full = grid_config(cc, 64, 50);
  const CpuBackprojector untiled(full);
  std::vector<Cf> reference(size_t(untiled.pixels()));
  untiled.backproject(cc.block(0, 50), reference.data(), Accumulate::Replace);
  untiled.backproject(cc.block(50, 30), reference.data(), Accumulate::Add);
  for (int64_t rows : {int64_t(64), int64_t(16), int64_t(7), int64_t(1)}) {
    SCOPED_TRACE(rows);
    BandedImage image(64, split_into_bands(64, 50, 64 * rows));
    EXPECT_FALSE(image.on_device());
    EXPECT_EQ(image.paged_count(), 0u);
    image.set_grid(full);
    image.backproject({{cc.block(0, 50), Accumulate::Replace}, {cc.block(50, 30), Accumulate::Add}}, nullptr);
    std::vector<Cf> out(size_t(image.pixels()), {NAN, NAN});
    image.copy_to_host(out.data(), nullptr);
    if (rows == 64) {  // one band of all 50 rows
      EXPECT_EQ(image.band_count(), 1u);
      EXPECT_EQ(std::memcmp(out.data(), reference.data(), out.size() * sizeof(Cf)), 0) << "one band";
      continue;
    }
    const double ser = bp_test::signal_to_error_db(out, reference);
    std::printf("[ measured ] CPU bands of %lld rows: SER %.1f dB against untiled\n", static_cast<long long>(rows), ser);
    EXPECT_GE(ser, 100.0);
  }
}

// ------------------------------------------------------------ CUDA

namespace {

using DeviceArray = cs_test::DeviceArray<Cf>;

}  // namespace

// Five bands of 16 rows (the last of 4), resident or paged in every pattern
// that matters (one resident, an even and an odd number paged, alternating):
// a video-SAR-like sequence (replace, add, subtract, a move of two blocks
// in one call, a refresh of two blocks) gives the all-resident pixels bit for bit, since paged bands run the same
// kernel on the same band grid, only in a staging buffer. The all-resident
// image is checked against the CPU (mixed precision: 100 dB).
TEST(GpuBandedImage, PagedBandsGiveTheResidentPixelsBitForBit) {
  CS_REQUIRE_GPU();
  std::mt19937_64 rng(cs_test::fresh_seed());
  const CompressedCollection cc = clutter(160, rng);
  const int64_t width = 96, height = 68;
  const BackprojectionConfig full = grid_config(cc, width, height);
  const std::vector<RowBand> bands = split_into_bands(width, height, width * 16);
  ASSERT_EQ(bands.size(), 5u);
  cs::Stream stream(0);
  const size_t sample_bytes = cc.profiles.size() * sizeof(Cf);
  DeviceArray samples(sample_bytes);
  cs::copy_async(samples.get(), cc.profiles.data(), sample_bytes, stream.get());
  auto device_block = [&](int64_t first, int64_t count) {
    RangeProfileBlock b = cc.block(first, count);
    b.samples = samples.get() + first * cc.bins;
    return b;
  };
  auto run = [&](const std::vector<bool> &resident, int step) {
    BandedImage image(width, bands, resident, 0);
    image.set_grid(full);
    image.backproject({{device_block(0, 100), Accumulate::Replace}}, stream.get());
    if (step >= 1) image.backproject({{device_block(100, 60), Accumulate::Add}}, stream.get());
    if (step >= 2) image.backproject({{device_block(0, 40), Accumulate::Subtract}}, stream.get());
    if (step >= 3)  // a video SAR move: both blocks in one round trip of the paged bands
      image.backproject({{device_block(40, 30), Accumulate::Subtract}, {device_block(120, 40), Accumulate::Add}},
                        stream.get());
    if (step >= 4)  // a refresh: replace, then the ring's second run added
      image.backproject({{device_block(50, 70), Accumulate::Replace}, {device_block(0, 50), Accumulate::Add}},
                        stream.get());
    std::vector<Cf> out(size_t(image.pixels()), {NAN, NAN});
    image.copy_to_host(out.data(), stream.get());
    EXPECT_EQ(image.on_device(), image.paged_count() == 0);
    return out;
  };
  const std::vector<bool> every_band(bands.size(), true);
  const std::vector<std::vector<bool>> patterns = {flags({1, 0, 0, 0, 0}), flags({0, 0, 0, 0, 0}),
                                                   flags({1, 1, 0, 0, 1}), flags({0, 1, 0, 1, 0})};
  for (int step = 0; step <= 4; ++step) {
    SCOPED_TRACE("step " + std::to_string(step));
    const std::vector<Cf> resident = run(every_band, step);
    if (step == 1) {
      std::vector<Cf> cpu(resident.size());
      BandedImage reference(width, bands);
      reference.set_grid(full);
      reference.backproject({{cc.block(0, 100), Accumulate::Replace}}, nullptr);
      reference.backproject({{cc.block(100, 60), Accumulate::Add}}, nullptr);
      reference.copy_to_host(cpu.data(), nullptr);
      EXPECT_GE(bp_test::signal_to_error_db(resident, cpu), 100.0) << "the resident image is the CPU's";
    }
    for (const std::vector<bool> &pattern : patterns) {
      const std::vector<Cf> paged = run(pattern, step);
      size_t differing = 0;
      for (size_t i = 0; i < paged.size(); ++i) differing += std::memcmp(&paged[i], &resident[i], sizeof(Cf)) != 0;
      EXPECT_EQ(differing, 0u) << "pixels that differ from the all-resident image, pattern of "
                               << std::count(pattern.begin(), pattern.end(), true) << " resident bands";
    }
  }
}

// An allocation the device cannot give is a CudaError that says what it was for.
TEST(GpuBandedImage, AnImpossibleAllocationSaysWhatItWasFor) {
  CS_REQUIRE_GPU();
  const cs::MemoryInfo memory = cs::memory_info(0);
  const int64_t width = 65536;
  const int64_t rows = int64_t(memory.total_bytes / (sizeof(Cf) * size_t(width))) + 16;  // more than the device
  try {
    BandedImage image(width, {RowBand{0, rows}}, {true}, 0);
    FAIL() << "allocated more than the device has";
  } catch (const cs::CudaError &e) {
    EXPECT_TRUE(e.out_of_memory()) << e.what();
    EXPECT_NE(std::string(e.what()).find("device-resident bands"), std::string::npos) << e.what();
  }
}
