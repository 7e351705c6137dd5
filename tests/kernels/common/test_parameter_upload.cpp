// Small host arrays to the device by a kernel (copy_from_page_locked_async)
// and through cs::ParameterUploader's two alternating slots, on a GPU.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "common/cuda_runtime.h"
#include "common/parameter_upload.h"
#include "test_support.h"

namespace {

// Device bytes back to the host, after the stream's work.
std::vector<uint8_t> download(const void *device, size_t n, cs::StreamHandle stream) {
  std::vector<uint8_t> out(n);
  void *pinned = cs::pinned_alloc(n);
  cs::copy_async(pinned, device, n, stream);
  cs::stream_synchronize(stream);
  std::memcpy(out.data(), pinned, n);
  cs::pinned_free(pinned);
  return out;
}

TEST(GpuPageLockedCopy, EveryByteAtAnyAlignment) {
  CS_REQUIRE_GPU();
  cs::Stream s(0);
  const size_t largest = (size_t(1) << 20) + 37;
  void *pinned = cs::pinned_alloc(largest + 16);
  void *device = cs::device_alloc(largest + 16, 0);
  for (size_t n : {size_t(1), size_t(15), size_t(16), size_t(17), size_t(4099), largest})
    for (size_t from : {0, 1, 8})
      for (size_t to : {0, 3, 16}) {
        const auto data = cs_test::random_bytes(n, cs_test::fresh_seed());
        std::memcpy(static_cast<uint8_t *>(pinned) + from, data.data(), n);
        cs::memset_async(device, 0xA5, largest + 16, s.get());
        cs::copy_from_page_locked_async(static_cast<uint8_t *>(device) + to, static_cast<uint8_t *>(pinned) + from,
                                        n, s.get());
        const auto all = download(device, largest + 16, s.get());
        EXPECT_EQ(std::memcmp(all.data() + to, data.data(), n), 0) << n << " bytes from +" << from << " to +" << to;
        // Nothing written around the copy.
        for (size_t i = 0; i < to; ++i) ASSERT_EQ(all[i], 0xA5) << "byte " << i << " before the copy";
        for (size_t i = to + n; i < all.size(); ++i) ASSERT_EQ(all[i], 0xA5) << "byte " << i << " after the copy";
      }
  cs::device_free(device, 0);
  cs::pinned_free(pinned);
}

TEST(GpuParameterUploader, EachCallsArrayArrivesAndGrows) {
  CS_REQUIRE_GPU();
  cs::Stream s(0);
  cs::ParameterUploader up(0);
  // Sizes that grow past a slot's first capacity, so slots are reallocated too.
  for (size_t n : {size_t(12), size_t(4096), size_t(100), size_t(70000), size_t(3), size_t(250000)}) {
    const auto data = cs_test::random_bytes(n, cs_test::fresh_seed());
    const void *device = up.upload(data.data(), n, s.get());
    EXPECT_EQ(download(device, n, s.get()), data) << n << " bytes";
  }
}

TEST(GpuParameterUploader, TheCallBeforeStaysValidWhileTheNextIsStaged) {
  CS_REQUIRE_GPU();
  cs::Stream s(0);
  cs::ParameterUploader up(0);
  const size_t n = 8192;
  const auto first = cs_test::random_bytes(n, cs_test::fresh_seed());
  const auto second = cs_test::random_bytes(n, cs_test::fresh_seed());
  const void *a = up.upload(first.data(), n, s.get());
  const void *b = up.upload(second.data(), n, s.get());
  EXPECT_NE(a, b);
  EXPECT_EQ(download(a, n, s.get()), first);
  EXPECT_EQ(download(b, n, s.get()), second);
}

}  // namespace
