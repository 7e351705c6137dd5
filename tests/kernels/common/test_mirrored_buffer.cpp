// Device/host mirroring and stream ordering of cs::MirroredBuffer on a GPU.
#include <gtest/gtest.h>

#include <cstring>

#include "common/device_resources.h"
#include "common/mirrored_buffer.h"
#include "common/staged_copy.h"
#include "test_support.h"

namespace {

TEST(GpuMirroredBuffer, HostWriteThenDeviceCopyThenHostRead) {
  CS_REQUIRE_GPU();
  const size_t n = (3 << 20) + 17;
  auto data = cs_test::random_bytes(n, cs_test::fresh_seed());
  cs::MirroredBuffer a(0, n), b(0, n);
  std::memcpy(a.map_host(false, true), data.data(), n);
  a.unmap_host(true);
  // Poison b on the device, then copy a -> b on a separate stream.
  cs::Stream s(0);
  void *pb = b.begin_device_write(s.get(), true);
  cs::memset_async(pb, 0xA5, n, s.get());
  const void *pa = a.begin_device_read(s.get());  // uploads the host copy first
  cs::copy_async(pb, pa, n, s.get());
  a.end_device_read(s.get());
  b.end_device_write(s.get());
  // No synchronisation here: map_host must wait on b's ready event itself.
  auto *out = static_cast<const uint8_t *>(b.map_host(true, false));
  EXPECT_EQ(std::memcmp(out, data.data(), n), 0);
}

TEST(GpuMirroredBuffer, PartialHostWriteKeepsDeviceContents) {
  CS_REQUIRE_GPU();
  const size_t n = 1 << 16;
  cs::MirroredBuffer buf(0, n);
  cs::Stream s(0);
  const unsigned seed = cs_test::fresh_seed();
  cs::fill_random_async(buf.begin_device_write(s.get(), true), n, seed, s.get());
  buf.end_device_write(s.get());
  std::vector<uint8_t> before(n);
  std::memcpy(before.data(), buf.map_host(true, false), n);
  buf.unmap_host(false);
  // Write-only map of the first 100 bytes; the rest must survive the upload.
  auto *h = static_cast<uint8_t *>(buf.map_host(false, true));
  std::memset(h, 0x5A, 100);
  buf.unmap_host(true);
  std::vector<uint8_t> expect = before;
  std::memset(expect.data(), 0x5A, 100);
  cs::MirroredBuffer check(0, n);
  const void *src = buf.begin_device_read(s.get());
  cs::copy_async(check.begin_device_write(s.get(), true), src, n, s.get());
  buf.end_device_read(s.get());
  check.end_device_write(s.get());
  EXPECT_EQ(std::memcmp(check.map_host(true, false), expect.data(), n), 0);
}

TEST(GpuStagedUploader, PageableSourceArrivesIntact) {
  CS_REQUIRE_GPU();
  for (size_t n : {size_t(1), size_t(4097), size_t(9) << 20, (size_t(33) << 20) + 3}) {
    auto data = cs_test::random_bytes(n, cs_test::fresh_seed());
    cs::MirroredBuffer dst(0, n);
    cs::Stream s(0);
    cs::StagedUploader up(0, size_t(4) << 20, 3);
    void *d = dst.begin_device_write(s.get(), true);
    up.upload(d, data.data(), n, s.get());
    dst.end_device_write(s.get());
    EXPECT_EQ(std::memcmp(dst.map_host(true, false), data.data(), n), 0) << n << " bytes";
  }
}

TEST(GpuDeviceAlloc, OutOfMemorySaysHowMuch) {
  CS_REQUIRE_GPU();
  const size_t absurd = size_t(1) << 50;  // 1 PiB
  try {
    cs::device_alloc(absurd, 0);
    FAIL() << "a 1 PiB allocation succeeded";
  } catch (const cs::CudaError &e) {
    EXPECT_TRUE(e.out_of_memory());
    std::string msg = e.what();
    EXPECT_NE(msg.find("asked for 1.00 PiB"), std::string::npos) << msg;
    EXPECT_NE(msg.find("free of"), std::string::npos) << msg;
  }
}

}  // namespace
