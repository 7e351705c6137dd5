// The host copy team behind staged uploads (CPU only: no device needed).
#include <gtest/gtest.h>

#include <cstring>
#include <thread>

#include "common/staged_copy.h"
#include "test_support.h"

namespace {

TEST(ParallelCopier, CopiesEveryByteForManySizesAndPauses) {
  cs::ParallelCopier copier(4);
  const uint32_t seed = cs_test::fresh_seed();
  const size_t sizes[] = {1, 63, 64, 4097, (256 << 10) - 1, 256 << 10, (1 << 20) + 3, (8 << 20) + 191};
  for (int round = 0; round < 3; ++round) {
    for (size_t n : sizes) {
      auto src = cs_test::random_bytes(n, seed + uint32_t(n) + round);
      std::vector<uint8_t> dst(n + 64, 0xEE);  // guard bytes after the end
      copier.copy(dst.data(), src.data(), n);
      ASSERT_EQ(std::memcmp(dst.data(), src.data(), n), 0) << n << " bytes, round " << round;
      for (size_t i = n; i < n + 64; ++i) ASSERT_EQ(dst[i], 0xEE) << "wrote past the end at " << n;
    }
    // Let the workers fall asleep, so the next round also covers waking them.
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

TEST(ParallelCopier, ManyBackToBackJobs) {
  cs::ParallelCopier copier(3);
  auto src = cs_test::random_bytes(3 << 20, cs_test::fresh_seed());
  std::vector<uint8_t> dst(src.size());
  for (int i = 0; i < 500; ++i) {
    const size_t offset = size_t(i) * 4099 % (1 << 20);
    const size_t n = (1 << 20) + size_t(i) * 13;
    copier.copy(dst.data() + offset, src.data() + offset, n);
    ASSERT_EQ(std::memcmp(dst.data() + offset, src.data() + offset, n), 0) << "job " << i;
  }
}

// Streaming stores: every byte for every alignment of source and destination
// (16- and 32-byte vectors) and sizes around the 64-byte steps, alone and
// through the team.
TEST(ParallelCopier, StreamingStoresCopyEveryByte) {
  auto src = cs_test::random_bytes((1 << 20) + 512, cs_test::fresh_seed());
  std::vector<uint8_t> dst(src.size() + 64);
  for (size_t n : {size_t(0), size_t(15), size_t(255), size_t(256), size_t(257), size_t(1000), size_t(4096 + 63)})
    for (size_t src_offset : {0, 1, 7, 16}) {
      for (size_t dst_offset : {0, 3, 8, 15, 16, 17, 31}) {
        std::fill(dst.begin(), dst.end(), 0xEE);
        cs::copy_bytes(dst.data() + dst_offset, src.data() + src_offset, n, cs::CopyStores::streaming);
        ASSERT_EQ(std::memcmp(dst.data() + dst_offset, src.data() + src_offset, n), 0) << n << " " << src_offset;
        for (size_t i = 0; i < dst_offset; ++i) ASSERT_EQ(dst[i], 0xEE) << "wrote before the start";
        for (size_t i = dst_offset + n; i < dst.size(); ++i) ASSERT_EQ(dst[i], 0xEE) << "wrote past the end";
      }
    }
  cs::ParallelCopier copier(4, cs::CopyStores::streaming);
  std::fill(dst.begin(), dst.end(), 0);
  copier.copy(dst.data() + 5, src.data() + 3, (1 << 20) + 100);
  ASSERT_EQ(std::memcmp(dst.data() + 5, src.data() + 3, (1 << 20) + 100), 0);
}

// `automatic` stores on both sides of the size where they switch, and team
// copies that use only some of the threads (each takes at least
// kMinBytesPerThread).
TEST(ParallelCopier, AutomaticStoresAndPartialTeams) {
  const size_t largest = cs::kStreamingBelowBytes + 4099;
  auto src = cs_test::random_bytes(largest, cs_test::fresh_seed());
  std::vector<uint8_t> dst(largest + 8);
  cs::ParallelCopier copier(8, cs::CopyStores::automatic);
  for (size_t n : {cs::ParallelCopier::kMinBytesPerThread + 1, 3 * cs::ParallelCopier::kMinBytesPerThread - 64,
                   cs::kStreamingBelowBytes - 1, cs::kStreamingBelowBytes, largest}) {
    std::fill(dst.begin(), dst.end(), 0xEE);
    copier.copy(dst.data() + 1, src.data(), n);
    ASSERT_EQ(std::memcmp(dst.data() + 1, src.data(), n), 0) << n;
    ASSERT_EQ(dst[0], 0xEE);
    for (size_t i = n + 1; i < dst.size(); ++i) ASSERT_EQ(dst[i], 0xEE) << "wrote past the end, n = " << n;
  }
}

}  // namespace
