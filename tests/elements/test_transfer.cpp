// gpuupload / gpudownload through GstHarness and real pipelines.
#include <gst/app/gstappsrc.h>
#include <gst/check/gstharness.h>
#include <gst/cudasensing/cudasensing.h>
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>

#include "play_to_end.h"
#include "source_allocation.h"
#include "test_support.h"

namespace {

GstBuffer *buffer_from(const std::vector<uint8_t> &bytes, GstClockTime pts) {
  GstBuffer *buf = gst_buffer_new_allocate(nullptr, bytes.size(), nullptr);
  gst_buffer_fill(buf, 0, bytes.data(), bytes.size());
  GST_BUFFER_PTS(buf) = pts;
  GST_BUFFER_DURATION(buf) = 10 * GST_MSECOND;
  return buf;
}

::testing::AssertionResult buffer_equals(GstBuffer *buf, const std::vector<uint8_t> &bytes) {
  if (gst_buffer_get_size(buf) != bytes.size())
    return ::testing::AssertionFailure() << "size " << gst_buffer_get_size(buf) << " != " << bytes.size();
  GstMapInfo map;
  if (!gst_buffer_map(buf, &map, GST_MAP_READ)) return ::testing::AssertionFailure() << "cannot map";
  const bool same = std::memcmp(map.data, bytes.data(), bytes.size()) == 0;
  gst_buffer_unmap(buf, &map);
  if (!same) return ::testing::AssertionFailure() << "contents differ";
  return ::testing::AssertionSuccess();
}

// Counts buffers in device memory passing a pad, and remembers the caps.
struct DeviceProbe {
  int device_buffers = 0;
  int host_buffers = 0;
  static GstPadProbeReturn on_buffer(GstPad *, GstPadProbeInfo *info, gpointer data) {
    auto *self = static_cast<DeviceProbe *>(data);
    GstBuffer *buf = GST_PAD_PROBE_INFO_BUFFER(info);
    if (gst_buffer_n_memory(buf) > 0 && gst_is_cs_memory(gst_buffer_peek_memory(buf, 0)))
      self->device_buffers++;
    else
      self->host_buffers++;
    return GST_PAD_PROBE_OK;
  }
  void attach(GstElement *element, const char *pad_name) {
    GstPad *pad = gst_element_get_static_pad(element, pad_name);
    gst_pad_add_probe(pad, GST_PAD_PROBE_TYPE_BUFFER, on_buffer, this, nullptr);
    gst_object_unref(pad);
  }
};

void round_trip(const char *launch, const std::vector<size_t> &sizes, DeviceProbe *probe) {
  GstHarness *h = gst_harness_new_parse(launch);
  if (probe) {
    GstElement *up = gst_bin_get_by_name(GST_BIN(h->element), "up");
    probe->attach(up, "src");
    gst_object_unref(up);
  }
  gst_harness_set_src_caps_str(h, "application/octet-stream");
  const uint32_t seed = cs_test::fresh_seed();
  std::vector<std::vector<uint8_t>> sent;
  for (size_t i = 0; i < sizes.size(); ++i) {
    sent.push_back(cs_test::random_bytes(sizes[i], seed + uint32_t(i)));
    ASSERT_EQ(gst_harness_push(h, buffer_from(sent.back(), i * 10 * GST_MSECOND)), GST_FLOW_OK);
  }
  // EOS drains whatever is still in flight.
  ASSERT_TRUE(gst_harness_push_event(h, gst_event_new_eos()));
  for (size_t i = 0; i < sizes.size(); ++i) {
    GstBuffer *out = gst_harness_pull(h);
    ASSERT_NE(out, nullptr) << "buffer " << i << " lost";
    EXPECT_TRUE(buffer_equals(out, sent[i])) << sizes[i] << " bytes";
    EXPECT_EQ(GST_BUFFER_PTS(out), i * 10 * GST_MSECOND) << "timestamps travel with the data, in order";
    gst_buffer_unref(out);
  }
  EXPECT_EQ(gst_harness_buffers_in_queue(h), 0u);
  gst_harness_teardown(h);
}

TEST(Transfer, RoundTripOnAnyMachine) {
  // Without a GPU both elements pass system memory through; with one the
  // data goes to the device and back. The bytes must be the same either way.
  round_trip("gpuupload name=up ! gpudownload", {1, 3, 4095, 65537, (1 << 20) + 7}, nullptr);
}

TEST(Transfer, CpuBackendPassesThrough) {
  DeviceProbe probe;
  round_trip("gpuupload name=up backend=cpu ! gpudownload backend=cpu", {17, 100000}, &probe);
  EXPECT_EQ(probe.device_buffers, 0);
  EXPECT_EQ(probe.host_buffers, 2);
}

TEST(GpuTransfer, RoundTripThroughDeviceMemory) {
  CS_REQUIRE_GPU();
  DeviceProbe probe;
  const std::vector<size_t> sizes = {1,        2,         3,          511,        4097,       (1 << 20) - 1,
                                     1 << 20,  (16 << 20) + 3, (64 << 20) + 1, size_t(256) << 20};
  round_trip("gpuupload name=up ! capsfilter caps=application/octet-stream(memory:CudaSensing) ! gpudownload",
             sizes, &probe);
  EXPECT_EQ(probe.device_buffers, int(sizes.size()));
  EXPECT_EQ(probe.host_buffers, 0);
}

TEST(GpuTransfer, RoundTripWithOtherCopyThreadCounts) {
  // One copy thread, and more than the default, with buffers that span
  // several staging chunks (8 MiB) and odd tails.
  CS_REQUIRE_GPU();
  for (const char *launch : {"gpuupload name=up copy-threads=1 ! gpudownload",
                             "gpuupload name=up copy-threads=13 ! gpudownload"}) {
    SCOPED_TRACE(launch);
    DeviceProbe probe;
    const std::vector<size_t> sizes = {5, 65537, (17 << 20) + 3, 4 << 20};
    round_trip(launch, sizes, &probe);
    EXPECT_EQ(probe.device_buffers, int(sizes.size()));
  }
}

TEST(GpuTransfer, DownloadPushesWithoutWaitingForMoreInput) {
  CS_REQUIRE_GPU();
  // A request/response user pushes one buffer and waits for it: the element
  // must not hold it back until the next input or EOS arrives.
  GstHarness *h = gst_harness_new_parse(
      "gpuupload ! capsfilter caps=application/octet-stream(memory:CudaSensing) ! gpudownload");
  gst_harness_set_src_caps_str(h, "application/octet-stream");
  const uint32_t seed = cs_test::fresh_seed();
  for (int i = 0; i < 3; ++i) {
    auto bytes = cs_test::random_bytes(4 << 20, seed + i);
    ASSERT_EQ(gst_harness_push(h, buffer_from(bytes, i * GST_SECOND)), GST_FLOW_OK);
    GstBuffer *out = nullptr;
    for (int tries = 0; tries < 1000 && !out; ++tries) {
      out = gst_harness_try_pull(h);
      if (!out) g_usleep(10000);
    }
    ASSERT_NE(out, nullptr) << "buffer " << i << " did not come out within 10 s";
    EXPECT_TRUE(buffer_equals(out, bytes));
    gst_buffer_unref(out);
  }
  gst_harness_teardown(h);
}

TEST(GpuTransfer, FlushingDropsNothingAfterward) {
  CS_REQUIRE_GPU();
  GstHarness *h = gst_harness_new_parse(
      "gpuupload ! capsfilter caps=application/octet-stream(memory:CudaSensing) ! gpudownload");
  gst_harness_set_src_caps_str(h, "application/octet-stream");
  const uint32_t seed = cs_test::fresh_seed();
  for (int i = 0; i < 4; ++i)
    ASSERT_EQ(gst_harness_push(h, buffer_from(cs_test::random_bytes(1 << 20, seed + i), 0)), GST_FLOW_OK);
  ASSERT_TRUE(gst_harness_push_event(h, gst_event_new_flush_start()));
  ASSERT_TRUE(gst_harness_push_event(h, gst_event_new_flush_stop(TRUE)));
  // Whatever left before the flush is gone or delivered; after it the stream works.
  while (GstBuffer *b = gst_harness_try_pull(h)) gst_buffer_unref(b);
  GstSegment segment;
  gst_segment_init(&segment, GST_FORMAT_TIME);
  ASSERT_TRUE(gst_harness_push_event(h, gst_event_new_segment(&segment)));
  auto bytes = cs_test::random_bytes(123457, seed + 99);
  ASSERT_EQ(gst_harness_push(h, buffer_from(bytes, 0)), GST_FLOW_OK);
  ASSERT_TRUE(gst_harness_push_event(h, gst_event_new_eos()));
  GstBuffer *out = gst_harness_pull(h);
  ASSERT_NE(out, nullptr);
  EXPECT_TRUE(buffer_equals(out, bytes));
  gst_buffer_unref(out);
  gst_harness_teardown(h);
}

TEST(GpuTransfer, CapsNegotiateTheDeviceFeature) {
  CS_REQUIRE_GPU();
  GstHarness *h = gst_harness_new_parse("gpuupload name=up ! gpudownload");
  gst_harness_set_src_caps_str(h, "application/x-test, rate=(int)5");
  auto bytes = cs_test::random_bytes(1000, cs_test::fresh_seed());
  ASSERT_EQ(gst_harness_push(h, buffer_from(bytes, 0)), GST_FLOW_OK);
  ASSERT_TRUE(gst_harness_push_event(h, gst_event_new_eos()));
  GstBuffer *out = gst_harness_pull(h);
  ASSERT_NE(out, nullptr);
  EXPECT_TRUE(buffer_equals(out, bytes));
  gst_buffer_unref(out);
  GstElement *up = gst_bin_get_by_name(GST_BIN(h->element), "up");
  GstPad *pad = gst_element_get_static_pad(up, "src");
  GstCaps *caps = gst_pad_get_current_caps(pad);
  ASSERT_NE(caps, nullptr);
  EXPECT_TRUE(gst_cs_caps_has_device_feature(caps)) << gst_caps_to_string(caps);
  EXPECT_TRUE(gst_structure_has_name(gst_caps_get_structure(caps, 0), "application/x-test"));
  gst_caps_unref(caps);
  // Downstream of gpudownload the stream is system memory again.
  GstCaps *out_caps = gst_pad_get_current_caps(h->sinkpad);
  ASSERT_NE(out_caps, nullptr);
  EXPECT_FALSE(gst_cs_caps_has_device_feature(out_caps));
  gst_caps_unref(out_caps);
  gst_object_unref(pad);
  gst_object_unref(up);
  gst_harness_teardown(h);
}

TEST(GpuTransfer, MultiMemoryInputIsConcatenated) {
  CS_REQUIRE_GPU();
  GstHarness *h = gst_harness_new_parse(
      "gpuupload ! capsfilter caps=application/octet-stream(memory:CudaSensing) ! gpudownload");
  gst_harness_set_src_caps_str(h, "application/octet-stream");
  auto bytes = cs_test::random_bytes(3 * 100003, cs_test::fresh_seed());
  GstBuffer *buf = gst_buffer_new();
  GstAllocator *pinned = gst_cs_pinned_allocator_get();
  for (int part = 0; part < 3; ++part) {
    // One page-locked part (direct DMA) between two pageable ones (staged).
    GstMemory *mem = gst_allocator_alloc(part == 1 ? pinned : nullptr, 100003, nullptr);
    GstMapInfo map;
    ASSERT_TRUE(gst_memory_map(mem, &map, GST_MAP_WRITE));
    std::memcpy(map.data, bytes.data() + part * 100003, 100003);
    gst_memory_unmap(mem, &map);
    gst_buffer_append_memory(buf, mem);
  }
  gst_object_unref(pinned);
  ASSERT_EQ(gst_harness_push(h, buf), GST_FLOW_OK);
  ASSERT_TRUE(gst_harness_push_event(h, gst_event_new_eos()));
  GstBuffer *out = gst_harness_pull(h);
  ASSERT_NE(out, nullptr);
  EXPECT_TRUE(buffer_equals(out, bytes));
  gst_buffer_unref(out);
  gst_harness_teardown(h);
}

TEST(GpuTransfer, UploadOffersPinnedMemoryUpstream) {
  CS_REQUIRE_GPU();
  GstHarness *h = gst_harness_new_parse("gpuupload ! capsfilter caps=video/x-raw(memory:CudaSensing)");
  gst_harness_set_src_caps_str(h, "video/x-raw, format=GRAY8, width=64, height=48, framerate=30/1");
  GstCaps *caps = gst_caps_from_string("video/x-raw, format=GRAY8, width=64, height=48, framerate=30/1");
  GstQuery *query = gst_query_new_allocation(caps, TRUE);
  ASSERT_TRUE(gst_pad_peer_query(h->srcpad, query));
  bool pinned_offered = false;
  for (guint i = 0; i < gst_query_get_n_allocation_params(query); ++i) {
    GstAllocator *alloc = nullptr;
    gst_query_parse_nth_allocation_param(query, i, &alloc, nullptr);
    if (alloc && G_TYPE_CHECK_INSTANCE_TYPE(alloc, GST_TYPE_CS_PINNED_ALLOCATOR)) pinned_offered = true;
    if (alloc) gst_object_unref(alloc);
  }
  EXPECT_TRUE(pinned_offered);
  EXPECT_GE(gst_query_get_n_allocation_pools(query), 1u);
  gst_query_unref(query);
  gst_caps_unref(caps);
  gst_harness_teardown(h);
}

// A stock source that allocates from the query's pool (videotestsrc) hands
// gpuupload page-locked buffers, which it copies without staging.
TEST(GpuTransfer, StockVideoSourceFillsPageLockedBuffers) {
  CS_REQUIRE_GPU();
  const auto video = source_allocation_test::count_allocations(
      "videotestsrc num-buffers=5 ! video/x-raw,format=GRAY8,width=64,height=48 ! gpuupload name=probed ! fakesink",
      false);
  ASSERT_TRUE(video.eos) << video.error;
  EXPECT_EQ(video.buffers, 5);
  EXPECT_EQ(video.page_locked, 5);
  EXPECT_EQ(video.pooled, 5);
}

// gpudownload writes video frames from the device into a pool of
// page-locked buffers (its decide_allocation), so the DMA fills the output
// directly and the buffers are recycled; the frames keep their bytes.
TEST(GpuTransfer, DownloadedVideoComesFromAPageLockedPool) {
  CS_REQUIRE_GPU();
  const std::string caps = "video/x-raw,format=GRAY8,width=64,height=48";
  const auto downloaded = source_allocation_test::count_allocations(
      "videotestsrc num-buffers=5 pattern=ball ! " + caps + " ! gpuupload ! gpudownload ! fakesink name=probed", false);
  const auto direct = source_allocation_test::count_allocations(
      "videotestsrc num-buffers=5 pattern=ball ! " + caps + " ! fakesink name=probed", false);
  ASSERT_TRUE(downloaded.eos) << downloaded.error;
  ASSERT_TRUE(direct.eos) << direct.error;
  EXPECT_EQ(downloaded.buffers, 5);
  EXPECT_EQ(downloaded.page_locked, 5);
  EXPECT_EQ(downloaded.pooled, 5);
  EXPECT_EQ(downloaded.bytes.size(), size_t(5 * 64 * 48));
  EXPECT_TRUE(downloaded.bytes == direct.bytes);
}

TEST(GpuTransfer, StockFilesinkAfterUploadWritesTheBytes) {
  CS_REQUIRE_GPU();
  char path[] = "/tmp/cs-filesink-XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  close(fd);
  std::string launch = std::string("appsrc name=src caps=application/octet-stream format=bytes ! "
                                   "gpuupload name=up ! filesink location=") + path;
  GError *error = nullptr;
  GstElement *pipeline = gst_parse_launch(launch.c_str(), &error);
  ASSERT_NE(pipeline, nullptr) << (error ? error->message : "");
  GstElement *src = gst_bin_get_by_name(GST_BIN(pipeline), "src");
  GstElement *up = gst_bin_get_by_name(GST_BIN(pipeline), "up");
  DeviceProbe probe;
  probe.attach(up, "src");
  ASSERT_NE(gst_element_set_state(pipeline, GST_STATE_PLAYING), GST_STATE_CHANGE_FAILURE);
  const uint32_t seed = cs_test::fresh_seed();
  std::vector<uint8_t> all;
  for (int i = 0; i < 5; ++i) {
    auto part = cs_test::random_bytes(size_t(333333) * (i + 1), seed + i);
    all.insert(all.end(), part.begin(), part.end());
    ASSERT_EQ(gst_app_src_push_buffer(GST_APP_SRC(src), buffer_from(part, GST_CLOCK_TIME_NONE)), GST_FLOW_OK);
  }
  gst_app_src_end_of_stream(GST_APP_SRC(src));
  GstBus *bus = gst_element_get_bus(pipeline);
  GstMessage *msg = gst_bus_timed_pop_filtered(bus, 60 * GST_SECOND, GstMessageType(GST_MESSAGE_EOS | GST_MESSAGE_ERROR));
  ASSERT_NE(msg, nullptr);
  EXPECT_EQ(GST_MESSAGE_TYPE(msg), GST_MESSAGE_EOS);
  gst_message_unref(msg);
  gst_element_set_state(pipeline, GST_STATE_NULL);
  EXPECT_EQ(probe.device_buffers, 5) << "filesink must have been given device memory";
  std::ifstream in(path, std::ios::binary);
  std::vector<uint8_t> written((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(written.size(), all.size());
  EXPECT_TRUE(written == all);
  std::remove(path);
  gst_object_unref(bus);
  gst_object_unref(src);
  gst_object_unref(up);
  gst_object_unref(pipeline);
}

// filesrc sends no caps: the stream is taken as bytes, as identity would pass
// it, on the device where there is one and through the CPU backend elsewhere.
TEST(Transfer, StreamWithoutCapsIsCopiedAsBytes) {
  char in_path[] = "/tmp/cs-capsless-in-XXXXXX", out_path[] = "/tmp/cs-capsless-out-XXXXXX";
  for (char *path : {in_path, out_path}) {
    const int fd = mkstemp(path);
    ASSERT_GE(fd, 0);
    close(fd);
  }
  const std::vector<uint8_t> bytes = cs_test::random_bytes(1000003, cs_test::fresh_seed());
  std::ofstream(in_path, std::ios::binary).write(reinterpret_cast<const char *>(bytes.data()), bytes.size());
  for (const char *middle : {"gpuupload", "gpuupload ! gpudownload", "gpudownload"}) {
    SCOPED_TRACE(middle);
    const std::string launch = std::string("filesrc location=") + in_path + " blocksize=65536 ! " + middle +
                               " ! filesink location=" + out_path;
    GstElement *pipeline = gst_parse_launch(launch.c_str(), nullptr);
    ASSERT_NE(pipeline, nullptr);
    EXPECT_EQ(element_test::play_to_end(pipeline, 60), "");
    gst_object_unref(pipeline);
    std::ifstream in(out_path, std::ios::binary);
    const std::vector<uint8_t> written((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_TRUE(written == bytes) << written.size() << " bytes written of " << bytes.size();
  }
  std::remove(in_path);
  std::remove(out_path);
}

// The caps an element assumes for a stream without caps belong to the stream:
// they are freed with it, not kept for the life of the process.
TEST(Transfer, CapsAssumedForAStreamWithoutCapsAreFreedWithIt) {
  for (const char *element : {"gpuupload", "gpudownload"}) {
    SCOPED_TRACE(element);
    GstHarness *h = gst_harness_new(element);
    ASSERT_TRUE(gst_harness_push_event(h, gst_event_new_stream_start("no-caps")));
    GstSegment segment;
    gst_segment_init(&segment, GST_FORMAT_BYTES);
    ASSERT_TRUE(gst_harness_push_event(h, gst_event_new_segment(&segment)));
    const std::vector<uint8_t> bytes = cs_test::random_bytes(4099, cs_test::fresh_seed());
    ASSERT_EQ(gst_harness_push(h, buffer_from(bytes, 0)), GST_FLOW_OK);
    GstBuffer *out = gst_harness_pull(h);
    ASSERT_NE(out, nullptr);
    EXPECT_TRUE(buffer_equals(out, bytes));
    gst_buffer_unref(out);

    GstPad *sink = gst_element_get_static_pad(h->element, "sink");
    GstCaps *assumed = gst_pad_get_current_caps(sink);
    gst_object_unref(sink);
    ASSERT_NE(assumed, nullptr);
    EXPECT_TRUE(gst_structure_has_name(gst_caps_get_structure(assumed, 0), "application/octet-stream"));
    bool freed = false;
    gst_mini_object_weak_ref(
        GST_MINI_OBJECT_CAST(assumed), [](gpointer data, GstMiniObject *) { *static_cast<bool *>(data) = true; },
        &freed);
    gst_caps_unref(assumed);
    gst_harness_teardown(h);
    EXPECT_TRUE(freed) << "the assumed caps outlive the element that made them";
  }
}

// Sets up `launch`, goes to PAUSED and returns the error message posted.
std::string start_error(const char *launch) {
  GstElement *pipeline = gst_parse_launch(launch, nullptr);
  EXPECT_NE(pipeline, nullptr);
  if (!pipeline) return "";
  GstStateChangeReturn ret = gst_element_set_state(pipeline, GST_STATE_PAUSED);
  if (ret == GST_STATE_CHANGE_ASYNC) ret = gst_element_get_state(pipeline, nullptr, nullptr, 10 * GST_SECOND);
  EXPECT_EQ(ret, GST_STATE_CHANGE_FAILURE) << launch;
  GstBus *bus = gst_element_get_bus(pipeline);
  GstMessage *msg = gst_bus_timed_pop_filtered(bus, 5 * GST_SECOND, GST_MESSAGE_ERROR);
  std::string text;
  if (msg) {
    GError *err = nullptr;
    gst_message_parse_error(msg, &err, nullptr);
    text = err->message;
    g_error_free(err);
    gst_message_unref(msg);
  }
  gst_element_set_state(pipeline, GST_STATE_NULL);
  gst_object_unref(bus);
  gst_object_unref(pipeline);
  return text;
}

TEST(Transfer, CudaBackendWithoutDeviceFailsCleanly) {
  if (cs::device_count() > 0) GTEST_SKIP() << "a CUDA device is present; this checks the behaviour without one";
  for (const char *element : {"gpuupload", "gpudownload"}) {
    std::string launch = std::string("videotestsrc num-buffers=3 ! ") + element + " backend=cuda ! fakesink";
    std::string msg = start_error(launch.c_str());
    EXPECT_NE(msg.find("no CUDA device"), std::string::npos) << element << ": " << msg;
  }
}

TEST(Transfer, DeviceThatDoesNotExistFailsCleanly) {
  std::string msg = start_error("videotestsrc num-buffers=3 ! gpuupload backend=cuda device-id=4096 ! fakesink");
  EXPECT_FALSE(msg.empty());
  EXPECT_TRUE(msg.find("device") != std::string::npos) << msg;
}

// Calls `visit` with every element factory of the project's plugins (as gst-inspect-1.0 lists them); returns how many.
template <class Visit>
int for_each_project_factory(Visit visit) {
  GList *plugins = gst_registry_get_plugin_list(gst_registry_get());
  int elements = 0;
  for (GList *p = plugins; p; p = p->next) {
    const char *plugin = gst_plugin_get_name(GST_PLUGIN(p->data));
    if (!g_str_has_prefix(plugin, "cudasensing")) continue;
    GList *features = gst_registry_get_feature_list_by_plugin(gst_registry_get(), plugin);
    for (GList *f = features; f; f = f->next) {
      if (!GST_IS_ELEMENT_FACTORY(f->data)) continue;
      ++elements;
      visit(GST_ELEMENT_FACTORY(f->data));
    }
    gst_plugin_feature_list_free(features);
  }
  gst_plugin_list_free(plugins);
  return elements;
}

TEST(Plugins, EveryElementAndPropertyIsDocumented) {
  const int elements = for_each_project_factory([](GstElementFactory *factory) {
    const char *name = GST_OBJECT_NAME(factory);
    EXPECT_GT(strlen(gst_element_factory_get_metadata(factory, GST_ELEMENT_METADATA_DESCRIPTION)), 30u) << name;
    GstElement *element = gst_element_factory_create(factory, nullptr);
    ASSERT_NE(element, nullptr) << name;
    // Unnamed instances are named after their factory (siftmatch0, ...), as messages show them.
    const std::string instance = GST_OBJECT_NAME(element);
    EXPECT_TRUE(instance.size() > strlen(name) && instance.compare(0, strlen(name), name) == 0 &&
                instance.find_first_not_of("0123456789", strlen(name)) == std::string::npos)
        << instance << " of " << name;
    guint n = 0;
    GParamSpec **props = g_object_class_list_properties(G_OBJECT_GET_CLASS(element), &n);
    for (guint i = 0; i < n; ++i) {
      const char *blurb = g_param_spec_get_blurb(props[i]);
      EXPECT_TRUE(blurb && strlen(blurb) > 10) << name << "::" << props[i]->name;
    }
    g_free(props);
    gst_object_unref(element);
  });
  EXPECT_GE(elements, 2) << "the project's plugins were not found (GST_PLUGIN_PATH)";
}

// As an application that inspects an element before it configures it: every readable property reads, every
// writable one takes its documented default and reads it back.
TEST(Plugins, EveryPropertyReadsAndTakesItsDefault) {
  const int elements = for_each_project_factory([](GstElementFactory *factory) {
    GstElement *element = gst_element_factory_create(factory, nullptr);
    ASSERT_NE(element, nullptr) << GST_OBJECT_NAME(factory);
    guint n = 0;
    GParamSpec **props = g_object_class_list_properties(G_OBJECT_GET_CLASS(element), &n);
    for (guint i = 0; i < n; ++i) {
      GParamSpec *spec = props[i];
      const std::string what = std::string(GST_OBJECT_NAME(factory)) + "::" + spec->name;
      if (spec->flags & G_PARAM_READABLE) {
        GValue value = G_VALUE_INIT;
        g_value_init(&value, spec->value_type);
        g_object_get_property(G_OBJECT(element), spec->name, &value);
        g_value_unset(&value);
      }
      const bool settable = (spec->flags & G_PARAM_WRITABLE) && !(spec->flags & G_PARAM_CONSTRUCT_ONLY);
      if (!settable || spec->owner_type == GST_TYPE_OBJECT) continue;  // name and parent belong to GstObject
      const GValue *fallback = g_param_spec_get_default_value(spec);
      g_object_set_property(G_OBJECT(element), spec->name, fallback);
      if (!(spec->flags & G_PARAM_READABLE)) continue;
      GValue back = G_VALUE_INIT;
      g_value_init(&back, spec->value_type);
      g_object_get_property(G_OBJECT(element), spec->name, &back);
      EXPECT_EQ(g_param_values_cmp(spec, &back, fallback), 0) << what << " does not read back its default";
      g_value_unset(&back);
    }
    g_free(props);
    gst_object_unref(element);
  });
  EXPECT_GE(elements, 2) << "the project's plugins were not found (GST_PLUGIN_PATH)";
}

// Every element alone, through every state and back several times, as GStreamer's own generic state test does:
// a state change may fail (a source without its file), but NULL is always reached and nothing crashes or leaks
// a thread.
TEST(Plugins, EveryElementGoesThroughTheStatesAlone) {
  const int elements = for_each_project_factory([](GstElementFactory *factory) {
    const char *name = GST_OBJECT_NAME(factory);
    GstElement *element = gst_element_factory_create(factory, nullptr);
    ASSERT_NE(element, nullptr) << name;
    // Sinks that write a file get one, so that they reach PAUSED and wait there for a preroll.
    const std::string file = std::string(g_get_tmp_dir()) + "/cs-states-" + std::to_string(getpid()) + "-" + name;
    if (GST_OBJECT_FLAG_IS_SET(element, GST_ELEMENT_FLAG_SINK) &&
        g_object_class_find_property(G_OBJECT_GET_CLASS(element), "location"))
      g_object_set(element, "location", file.c_str(), nullptr);
    for (int round = 0; round < 3; ++round) {
      for (GstState target : {GST_STATE_READY, GST_STATE_PAUSED, GST_STATE_PLAYING, GST_STATE_PAUSED,
                              GST_STATE_READY}) {
        if (gst_element_set_state(element, target) == GST_STATE_CHANGE_FAILURE) break;
        gst_element_get_state(element, nullptr, nullptr, GST_SECOND / 10);  // sinks wait for a preroll
      }
      EXPECT_EQ(gst_element_set_state(element, GST_STATE_NULL), GST_STATE_CHANGE_SUCCESS) << name;
    }
    gst_object_unref(element);
    std::remove(file.c_str());
  });
  EXPECT_GE(elements, 2) << "the project's plugins were not found (GST_PLUGIN_PATH)";
}

// Whether the factory has an always-present pad called `name`.
bool has_always_pad(GstElementFactory *factory, const char *name) {
  for (const GList *t = gst_element_factory_get_static_pad_templates(factory); t; t = t->next) {
    const auto *pad = static_cast<const GstStaticPadTemplate *>(t->data);
    if (std::strcmp(pad->name_template, name) == 0 && pad->presence == GST_PAD_ALWAYS) return true;
  }
  return false;
}

// A stream that ends before it says what it carries (an empty file upstream): every element with a sink pad
// takes stream-start then EOS, with no caps and no data, and passes the EOS on.
TEST(Plugins, EveryElementPassesOnAStreamThatEndsBeforeCaps) {
  int tried = 0;
  const int elements = for_each_project_factory([&tried](GstElementFactory *factory) {
    const char *name = GST_OBJECT_NAME(factory);
    if (!has_always_pad(factory, "sink")) return;
    const bool has_src = has_always_pad(factory, "src");
    GstElement *element = gst_element_factory_create(factory, nullptr);
    ASSERT_NE(element, nullptr) << name;
    const std::string file = std::string(g_get_tmp_dir()) + "/cs-eos-" + std::to_string(getpid()) + "-" + name;
    if (!has_src && g_object_class_find_property(G_OBJECT_GET_CLASS(element), "location"))
      g_object_set(element, "location", file.c_str(), nullptr);
    if (g_object_class_find_property(G_OBJECT_GET_CLASS(element), "async"))
      g_object_set(element, "async", FALSE, nullptr);  // sinks: no preroll to wait for
    // Elements that cannot start without a file or library of their own (hsiclassify) are not asked.
    const bool starts = gst_element_set_state(element, GST_STATE_PLAYING) != GST_STATE_CHANGE_FAILURE;
    gst_element_set_state(element, GST_STATE_NULL);
    GstHarness *h = starts ? gst_harness_new_with_element(element, "sink", has_src ? "src" : nullptr) : nullptr;
    if (h) {
      ++tried;
      EXPECT_TRUE(gst_harness_push_event(h, gst_event_new_stream_start("no-caps"))) << name;
      EXPECT_TRUE(gst_harness_push_event(h, gst_event_new_eos())) << name;
      if (has_src) {
        bool eos = false;
        for (int i = 0; i < 8 && !eos; ++i) {
          GstEvent *event = gst_harness_pull_event(h);
          if (!event) break;
          eos = GST_EVENT_TYPE(event) == GST_EVENT_EOS;
          gst_event_unref(event);
        }
        EXPECT_TRUE(eos) << name << " did not pass the EOS on";
      }
    }
    if (h) gst_harness_teardown(h);
    gst_object_unref(element);
    std::remove(file.c_str());
  });
  EXPECT_GE(elements, 2) << "the project's plugins were not found (GST_PLUGIN_PATH)";
  EXPECT_GE(tried, 10);
}

// A stream that says what it carries and ends before any data (caps of the sink template, fixated, in system
// memory): every element either refuses the caps or passes the EOS on; none crashes or waits forever.
TEST(Plugins, EveryElementPassesOnAStreamWithCapsButNoData) {
  int tried = 0, accepted_caps = 0;
  for_each_project_factory([&tried, &accepted_caps](GstElementFactory *factory) {
    const char *name = GST_OBJECT_NAME(factory);
    if (!has_always_pad(factory, "sink") || !has_always_pad(factory, "src")) return;
    GstElement *element = gst_element_factory_create(factory, nullptr);
    ASSERT_NE(element, nullptr) << name;
    const bool starts = gst_element_set_state(element, GST_STATE_PLAYING) != GST_STATE_CHANGE_FAILURE;
    gst_element_set_state(element, GST_STATE_NULL);
    GstPad *sink = gst_element_get_static_pad(element, "sink");
    GstCaps *templ = gst_pad_get_pad_template_caps(sink);
    gst_object_unref(sink);
    GstCaps *caps = gst_caps_new_empty();
    for (guint i = 0; i < gst_caps_get_size(templ); ++i) {  // the system-memory structures
      GstCapsFeatures *features = gst_caps_get_features(templ, i);
      if (!features || gst_caps_features_is_equal(features, GST_CAPS_FEATURES_MEMORY_SYSTEM_MEMORY))
        gst_caps_append_structure(caps, gst_structure_copy(gst_caps_get_structure(templ, i)));
    }
    gst_caps_unref(templ);
    if (starts && !gst_caps_is_empty(caps)) {
      caps = gst_caps_fixate(caps);
      GstHarness *h = gst_harness_new_with_element(element, "sink", "src");
      ++tried;
      gst_harness_push_event(h, gst_event_new_stream_start("no-data"));
      const bool accepted = gst_harness_push_event(h, gst_event_new_caps(caps));
      GstSegment segment;
      gst_segment_init(&segment, GST_FORMAT_TIME);
      gst_harness_push_event(h, gst_event_new_segment(&segment));
      gst_harness_push_event(h, gst_event_new_eos());
      bool eos = false;
      for (int i = 0; i < 8 && !eos && accepted; ++i) {  // elements with threads of their own pass it on later
        GstEvent *event = gst_harness_pull_event(h);
        if (!event) break;
        eos = GST_EVENT_TYPE(event) == GST_EVENT_EOS;
        gst_event_unref(event);
      }
      accepted_caps += accepted;
      EXPECT_TRUE(eos || !accepted) << name << " took its caps but did not pass the EOS on";
      gst_harness_teardown(h);
    }
    gst_caps_unref(caps);
    gst_object_unref(element);
  });
  EXPECT_GE(tried, 8);
  EXPECT_GE(accepted_caps, 6);  // most take the fixated template caps
}

TEST(GpuMemory, CopyAndShareKeepContents) {
  CS_REQUIRE_GPU();
  GstAllocator *alloc = gst_cs_allocator_get(0, nullptr);
  ASSERT_NE(alloc, nullptr);
  const size_t n = 1 << 20;
  auto bytes = cs_test::random_bytes(n, cs_test::fresh_seed());
  GstMemory *mem = gst_cs_allocator_alloc(alloc, n, nullptr);
  GstMapInfo map;
  ASSERT_TRUE(gst_memory_map(mem, &map, GST_MAP_WRITE));
  std::memcpy(map.data, bytes.data(), n);
  gst_memory_unmap(mem, &map);
  GstMemory *copy = gst_memory_copy(mem, 1000, 5000);
  GstMemory *share = gst_memory_share(mem, 2000, 3000);
  ASSERT_TRUE(gst_is_cs_memory(copy));
  ASSERT_TRUE(gst_memory_map(copy, &map, GST_MAP_READ));
  EXPECT_EQ(std::memcmp(map.data, bytes.data() + 1000, 5000), 0);
  gst_memory_unmap(copy, &map);
  ASSERT_TRUE(gst_memory_map(share, &map, GST_MAP_READ));
  EXPECT_EQ(map.size, 3000u);
  EXPECT_EQ(std::memcmp(map.data, bytes.data() + 2000, 3000), 0);
  gst_memory_unmap(share, &map);
  // The device pointer of the share is offset too.
  ASSERT_TRUE(gst_memory_map(share, &map, GstMapFlags(GST_MAP_READ | GST_MAP_CS_DEVICE)));
  GstMapInfo base;
  ASSERT_TRUE(gst_memory_map(mem, &base, GstMapFlags(GST_MAP_READ | GST_MAP_CS_DEVICE)));
  EXPECT_EQ(static_cast<guint8 *>(map.data) - static_cast<guint8 *>(base.data), 2000);
  gst_memory_unmap(mem, &base);
  gst_memory_unmap(share, &map);
  gst_memory_unref(share);
  gst_memory_unref(copy);
  gst_memory_unref(mem);
  gst_object_unref(alloc);
}

TEST(GpuMemory, OutOfDeviceMemoryIsAClearError) {
  CS_REQUIRE_GPU();
  GstAllocator *alloc = gst_cs_allocator_get(0, nullptr);
  GError *error = nullptr;
  GstMemory *mem = gst_cs_allocator_alloc(alloc, gsize(1) << 50, &error);
  EXPECT_EQ(mem, nullptr);
  ASSERT_NE(error, nullptr);
  EXPECT_NE(std::string(error->message).find("asked for"), std::string::npos) << error->message;
  EXPECT_NE(std::string(error->message).find("free"), std::string::npos) << error->message;
  g_error_free(error);
  gst_object_unref(alloc);
}

}  // namespace
