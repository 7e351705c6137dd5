// Upload/download throughput through gpuupload and gpudownload, against plain
// cudaMemcpyAsync from page-locked memory and a plain pageable cudaMemcpy, in
// the same run. Prints a table; `--csv FILE` also writes the figures.
//
//   transfer_bench [--sizes 1,4,16,64,256] [--total-mib 4096] [--runs 3] [--csv out.csv]
//
// Element rows time a whole pipeline (appsrc ! element ! fakesink) from the
// first push until the last buffer's copy has completed on the device.
#include <gst/app/gstappsrc.h>
#include <gst/cudasensing/cudasensing.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "bench/stream_support.h"
#include "common/cuda_runtime.h"
#include "common/staged_copy.h"
#include "common/device_resources.h"

namespace {

using Clock = std::chrono::steady_clock;
constexpr size_t MiB = size_t(1) << 20;

double gbps(size_t bytes, double seconds) { return double(bytes) / seconds / 1e9; }

// Plain cudaMemcpyAsync in a loop on one stream, timed with events.
double raw_copy_gbps(void *dst, const void *src, size_t bytes, int iterations) {
  cs::Stream s(0);
  cs::EventHandle start = cs::timing_event_create(0), stop = cs::timing_event_create(0);
  cs::copy_async(dst, src, bytes, s.get());  // warm-up
  cs::event_record(start, s.get());
  for (int i = 0; i < iterations; ++i) cs::copy_async(dst, src, bytes, s.get());
  cs::event_record(stop, s.get());
  cs::event_synchronize(stop);
  double ms = cs::event_elapsed_ms(start, stop);
  cs::event_destroy(start);
  cs::event_destroy(stop);
  return gbps(bytes * size_t(iterations), ms / 1e3);
}

// The same copy cycling through `count` separate page-locked host buffers,
// as an element's output buffers do: isolates what the platform's DMA costs
// when the host side is a working set rather than one hot buffer.
double raw_rotating_gbps(bool to_device, void *dev, size_t bytes, int iterations, int count) {
  std::vector<void *> hosts;
  for (int i = 0; i < count; ++i) {
    hosts.push_back(cs::pinned_alloc(bytes));
    std::memset(hosts.back(), i, bytes);
  }
  cs::Stream s(0);
  cs::EventHandle start = cs::timing_event_create(0), stop = cs::timing_event_create(0);
  cs::event_record(start, s.get());
  for (int i = 0; i < iterations; ++i) {
    void *h = hosts[size_t(i % count)];
    cs::copy_async(to_device ? dev : h, to_device ? h : dev, bytes, s.get());
  }
  cs::event_record(stop, s.get());
  cs::event_synchronize(stop);
  const double ms = cs::event_elapsed_ms(start, stop);
  cs::event_destroy(start);
  cs::event_destroy(stop);
  for (void *h : hosts) cs::pinned_free(h);
  return gbps(bytes * size_t(iterations), ms / 1e3);
}

// A pageable cudaMemcpy (what a naive element does with a GStreamer buffer).
double raw_pageable_gbps(void *dst, const void *src, size_t bytes, int iterations) {
  cs::Stream s(0);
  cs::copy_async(dst, src, bytes, s.get());
  s.synchronize();
  auto t0 = Clock::now();
  for (int i = 0; i < iterations; ++i) cs::copy_async(dst, src, bytes, s.get());
  s.synchronize();
  return gbps(bytes * size_t(iterations), std::chrono::duration<double>(Clock::now() - t0).count());
}

// The staged uploader alone (no GStreamer) with `threads` host copy threads
// writing with `stores`: separates the staging's own cost from the element's
// per-buffer work.
double staged_gbps(void *dev, const void *src, size_t bytes, int iterations, int threads,
                   cs::CopyStores stores = cs::CopyStores::automatic) {
  cs::Stream s(0);
  cs::StagedUploader uploader(0, size_t(8) << 20, 4, threads, stores);
  uploader.upload(dev, src, bytes, s.get());
  s.synchronize();
  auto t0 = Clock::now();
  for (int i = 0; i < iterations; ++i) uploader.upload(dev, src, bytes, s.get());
  s.synchronize();
  return gbps(bytes * size_t(iterations), std::chrono::duration<double>(Clock::now() - t0).count());
}

// Host time of what one staged 1 MiB chunk costs the calling thread: the
// CUDA calls (mean of many) and the team's copy.
void print_staging_costs() {
  constexpr size_t kBytes = MiB;
  constexpr int kCalls = 2000;
  cs::Stream s(0);
  cs::Event done(0);
  void *dev = cs::device_alloc(kBytes, 0);
  void *staging = cs::pinned_alloc(kBytes);
  std::vector<unsigned char> source(kBytes, 0x11);
  auto mean_us = [&](auto &&call) {
    auto t0 = Clock::now();
    for (int i = 0; i < kCalls; ++i) call();
    return std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / kCalls;
  };
  done.record(s.get());
  s.synchronize();
  const double sync_us = mean_us([&] { done.synchronize(); });
  const double record_us = mean_us([&] { done.record(s.get()); });
  s.synchronize();
  const double guard_us = mean_us([&] { cs::DeviceGuard guard(0); });
  const double copy_call_us = mean_us([&] {
    cs::copy_async(dev, staging, 64, s.get());  // the call, not the transfer
  });
  s.synchronize();
  std::fprintf(stderr,
               "staging costs on the calling thread: cudaEventSynchronize (done) %.1f us, cudaEventRecord %.1f us, "
               "cudaMemcpyAsync call %.1f us, DeviceGuard %.2f us; 1 MiB host copy:",
               sync_us, record_us, copy_call_us, guard_us);
  for (cs::CopyStores stores : {cs::CopyStores::cached, cs::CopyStores::streaming}) {
    std::fprintf(stderr, "%s", stores == cs::CopyStores::cached ? "" : "; with streaming stores:");
    for (int threads : {1, 4, 8}) {
      cs::ParallelCopier copier(threads, stores);
      copier.copy(staging, source.data(), kBytes);
      std::fprintf(stderr, " %d threads %.1f us", threads,
                   mean_us([&] { copier.copy(staging, source.data(), kBytes); }));
    }
  }
  std::fprintf(stderr, "\n");
  cs::pinned_free(staging);
  cs::device_free(dev, 0);
}

using bench::LastBuffer;

// Buffers pushed before timing starts: enough to fill every in-flight slot
// and pool once, so the table shows the steady state of a stream rather than
// the first allocations of page-locked and device memory.
constexpr int kWarmupBuffers = 8;

// What appsrc pushes: each call returns a buffer (a new ref) of `size` bytes.
struct Source {
  std::function<GstBuffer *()> next;
  size_t size;
};

// The same buffer every time, as an upstream pool hands its buffers back.
Source same_buffer(GstBuffer *buffer) {
  return {[buffer] { return gst_buffer_ref(buffer); }, gst_buffer_get_size(buffer)};
}

// Memory never seen before on every push (a new GstMemory wrapping one of a
// few host regions in turn), as a source that allocates each buffer afresh.
Source fresh(std::vector<std::vector<uint8_t>> &regions) {
  auto turn = std::make_shared<size_t>(0);
  return {[&regions, turn] {
            std::vector<uint8_t> &r = regions[(*turn)++ % regions.size()];
            return gst_buffer_new_wrapped_full(GstMemoryFlags(0), r.data(), r.size(), 0, r.size(), nullptr, nullptr);
          },
          regions.front().size()};
}

// Runs appsrc ! `element` ! fakesink, pushing `iterations` buffers from
// `source` (after untimed ones that set the pipeline up), and returns GB/s.
double element_gbps(const char *element_desc, const char *caps, const Source &source, int iterations) {
  std::string launch = std::string("appsrc name=src format=bytes max-bytes=0 block=true caps=") + caps + " ! " +
                       element_desc + " ! fakesink name=sink sync=false";
  GError *error = nullptr;
  GstElement *pipeline = gst_parse_launch(launch.c_str(), &error);
  if (!pipeline) {
    std::fprintf(stderr, "pipeline %s: %s\n", launch.c_str(), error->message);
    std::exit(1);
  }
  GstElement *src = gst_bin_get_by_name(GST_BIN(pipeline), "src");
  GstElement *sink = gst_bin_get_by_name(GST_BIN(pipeline), "sink");
  g_object_set(src, "max-buffers", guint64(4), nullptr);
  LastBuffer last;
  GstPad *sinkpad = gst_element_get_static_pad(sink, "sink");
  gst_pad_add_probe(sinkpad, GST_PAD_PROBE_TYPE_BUFFER, LastBuffer::probe, &last, nullptr);
  gst_element_set_state(pipeline, GST_STATE_PLAYING);
  GstBus *bus = gst_element_get_bus(pipeline);
  // Warm-up: negotiation, stream creation, first allocations.
  for (int i = 0; i < kWarmupBuffers; ++i) gst_app_src_push_buffer(GST_APP_SRC(src), source.next());
  for (int waited_ms = 0; g_atomic_int_get(&last.seen) < kWarmupBuffers; ++waited_ms) {
    GstMessage *err = gst_bus_pop_filtered(bus, GST_MESSAGE_ERROR);
    if (err || waited_ms > 30000) {
      std::fprintf(stderr, "%s: %s during warm-up\n", element_desc, err ? "error" : "timeout");
      std::exit(1);
    }
    g_usleep(1000);
  }
  // An upload reaches the sink before its copy is done: let the warm-up
  // copies finish, or their time would be charged to the timed buffers.
  GstMemory *warm_mem = gst_buffer_peek_memory(last.buffer, 0);
  if (gst_is_cs_memory(warm_mem)) cs::event_synchronize(gst_cs_memory_get_ready_event(warm_mem));
  auto t0 = Clock::now();
  for (int i = 0; i < iterations; ++i) gst_app_src_push_buffer(GST_APP_SRC(src), source.next());
  gst_app_src_end_of_stream(GST_APP_SRC(src));
  GstMessage *msg = gst_bus_timed_pop_filtered(bus, 120 * GST_SECOND, GstMessageType(GST_MESSAGE_EOS | GST_MESSAGE_ERROR));
  if (!msg) {
    std::fprintf(stderr, "%s: no EOS within 120 s\n", element_desc);
    std::exit(1);
  }
  if (GST_MESSAGE_TYPE(msg) == GST_MESSAGE_ERROR) {
    GError *err = nullptr;
    gst_message_parse_error(msg, &err, nullptr);
    std::fprintf(stderr, "%s: %s\n", element_desc, err->message);
    std::exit(1);
  }
  // Uploads are asynchronous: the data has arrived when the last buffer's
  // ready event has completed.
  GstMemory *mem = gst_buffer_peek_memory(last.buffer, 0);
  if (gst_is_cs_memory(mem)) cs::event_synchronize(gst_cs_memory_get_ready_event(mem));
  const double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  gst_message_unref(msg);
  gst_buffer_unref(last.buffer);
  gst_element_set_state(pipeline, GST_STATE_NULL);
  gst_object_unref(bus);
  gst_object_unref(sinkpad);
  gst_object_unref(src);
  gst_object_unref(sink);
  gst_object_unref(pipeline);
  return gbps(source.size * size_t(iterations), seconds);
}

// Each element figure is the median of `g_element_runs` pipeline runs (one
// slow run, from another tenant or a page-cache flush, must not decide a
// row); the spread of the upload columns is printed too.
int g_element_runs = 3;

struct Spread {
  double median, low, high;
};

template <class Run>
Spread spread_of(Run run) {
  std::vector<double> v;
  for (int i = 0; i < g_element_runs; ++i) v.push_back(run());
  std::sort(v.begin(), v.end());
  return {v[v.size() / 2], v.front(), v.back()};
}

template <class Run>
double median_of_runs(Run run) {
  return spread_of(run).median;
}

GstBuffer *pageable_buffer(size_t bytes) {
  GstBuffer *b = gst_buffer_new_allocate(nullptr, bytes, nullptr);
  GstMapInfo map;
  gst_buffer_map(b, &map, GST_MAP_WRITE);
  for (size_t i = 0; i < bytes; i += 4096) map.data[i] = uint8_t(i * 2654435761u >> 24);  // touch every page
  gst_buffer_unmap(b, &map);
  return b;
}

GstBuffer *device_buffer(size_t bytes) {
  GstAllocator *alloc = gst_cs_allocator_get(0, nullptr);
  GstMemory *mem = gst_cs_allocator_alloc(alloc, bytes, nullptr);
  cs::Stream s(0);
  cs::fill_random_async(gst_cs_memory_begin_write(mem, s.get(), TRUE, nullptr), bytes, 1234, s.get());
  gst_cs_memory_end_write(mem, s.get(), nullptr);
  s.synchronize();
  gst_object_unref(alloc);
  GstBuffer *b = gst_buffer_new();
  gst_buffer_append_memory(b, mem);
  return b;
}

}  // namespace

int main(int argc, char **argv) {
  gst_init(&argc, &argv);
  setvbuf(stdout, nullptr, _IOLBF, 0);
  std::vector<size_t> sizes_mib = {1, 4, 16, 64, 256};
  size_t total_mib = 4096;
  const char *csv_path = nullptr;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--sizes") && i + 1 < argc) {
      sizes_mib.clear();
      for (char *tok = std::strtok(argv[++i], ","); tok; tok = std::strtok(nullptr, ",")) sizes_mib.push_back(std::strtoul(tok, nullptr, 10));
    } else if (!std::strcmp(argv[i], "--total-mib") && i + 1 < argc) {
      total_mib = std::strtoul(argv[++i], nullptr, 10);
    } else if (!std::strcmp(argv[i], "--runs") && i + 1 < argc) {
      g_element_runs = std::max(1, std::atoi(argv[++i]));
    } else if (!std::strcmp(argv[i], "--csv") && i + 1 < argc) {
      csv_path = argv[++i];
    } else {
      std::fprintf(stderr, "usage: %s [--sizes 1,4,16,64,256] [--total-mib 4096] [--runs 3] [--csv FILE]\n", argv[0]);
      return 2;
    }
  }
  if (cs::device_count() == 0) {
    std::printf("no CUDA device (%s): nothing to measure\n", cs::no_device_reason().c_str());
    return 0;
  }
  std::printf("device 0: %s\n", cs::device_name(0).c_str());
  print_staging_costs();
  std::printf("%6s | %10s %10s %5s %10s %5s %10s %5s | %10s %10s %5s | %10s\n", "MiB", "H2D", "fresh", "%",
              "recycled", "%", "pinned", "%", "D2H", "gpudownld", "%", "pageable");
  std::printf("%6s | %10s %10s %5s %10s %5s %10s %5s | %10s %10s %5s | %10s\n", "", "cudaMemcpy", "gpuupload", "",
              "gpuupload", "", "gpuupload", "", "cudaMemcpy", "", "", "cudaMemcpy");
  FILE *csv = csv_path ? std::fopen(csv_path, "w") : nullptr;
  if (csv)
    std::fprintf(csv, "mib,h2d_pinned_gbps,upload_fresh_pageable_gbps,upload_recycled_pageable_gbps,"
                      "upload_pinned_gbps,d2h_pinned_gbps,download_gbps,pageable_memcpy_gbps\n");
  GstAllocator *pinned = gst_cs_pinned_allocator_get();
  for (size_t mib : sizes_mib) {
    const size_t bytes = mib * MiB;
    const int iterations = int(std::max<size_t>(32, std::min<size_t>(400, total_mib / mib)));
    void *dev = cs::device_alloc(bytes, 0);
    void *host = cs::pinned_alloc(bytes);
    std::memset(host, 0x3c, bytes);
    GstBuffer *pageable = pageable_buffer(bytes);
    GstMapInfo pmap;
    gst_buffer_map(pageable, &pmap, GST_MAP_READ);
    const double h2d = raw_copy_gbps(dev, host, bytes, iterations);
    const double d2h = raw_copy_gbps(host, dev, bytes, iterations);
    const double pageable_raw = raw_pageable_gbps(dev, pmap.data, bytes, std::max(4, iterations / 8));
    const double staged1 = staged_gbps(dev, pmap.data, bytes, iterations, 1);
    const double staged4 = staged_gbps(dev, pmap.data, bytes, iterations, 4);
    const double staged8 = staged_gbps(dev, pmap.data, bytes, iterations, 8);
    const double staged12 = staged_gbps(dev, pmap.data, bytes, iterations, 12);
    const double cached8 = staged_gbps(dev, pmap.data, bytes, iterations, 8, cs::CopyStores::cached);
    const double streamed8 = staged_gbps(dev, pmap.data, bytes, iterations, 8, cs::CopyStores::streaming);
    gst_buffer_unmap(pageable, &pmap);
    std::vector<std::vector<uint8_t>> regions(6, std::vector<uint8_t>(bytes, 0x7e));
    GstBuffer *pinned_buf = gst_buffer_new_allocate(pinned, bytes, nullptr);
    gst_buffer_memset(pinned_buf, 0, 0x5a, bytes);
    GstBuffer *on_device = device_buffer(bytes);
    const char *to_device = "application/octet-stream";
    const char *upload = "gpuupload ! application/octet-stream(memory:CudaSensing)";
    const char *from_device = "application/octet-stream(memory:CudaSensing)";
    const Spread fresh_runs = spread_of([&] { return element_gbps(upload, to_device, fresh(regions), iterations); });
    const Spread recycled_runs =
        spread_of([&] { return element_gbps(upload, to_device, same_buffer(pageable), iterations); });
    const Spread pinned_runs = spread_of([&] { return element_gbps(upload, to_device, same_buffer(pinned_buf), iterations); });
    const double up_fresh = fresh_runs.median, up_recycled = recycled_runs.median, up_pinned = pinned_runs.median;
    const double down =
        median_of_runs([&] { return element_gbps("gpudownload", from_device, same_buffer(on_device), iterations); });
    const double down2 = median_of_runs([&] {
      return element_gbps("gpudownload max-in-flight=2", from_device, same_buffer(on_device), iterations);
    });
    const double down3 = median_of_runs([&] {
      return element_gbps("gpudownload max-in-flight=3", from_device, same_buffer(on_device), iterations);
    });
    const double round_trip = median_of_runs([&] {
      return element_gbps("gpuupload ! application/octet-stream(memory:CudaSensing) ! gpudownload", to_device,
                          fresh(regions), iterations);
    });
    // The element with more host copy threads than its default (half the
    // cores, at most 8), in the same run.
    for (int threads : {12, 16}) {
      const std::string upload_with = "gpuupload copy-threads=" + std::to_string(threads) +
                                      " ! application/octet-stream(memory:CudaSensing)";
      const Spread fresh_with =
          spread_of([&] { return element_gbps(upload_with.c_str(), to_device, fresh(regions), iterations); });
      const Spread recycled_with =
          spread_of([&] { return element_gbps(upload_with.c_str(), to_device, same_buffer(pageable), iterations); });
      std::fprintf(stderr, "       gpuupload copy-threads=%d: fresh %.1f (%.1f-%.1f), recycled %.1f (%.1f-%.1f) GB/s\n",
                   threads, fresh_with.median, fresh_with.low, fresh_with.high, recycled_with.median,
                   recycled_with.low, recycled_with.high);
    }
    const double h2d_rot = raw_rotating_gbps(true, dev, bytes, iterations, 6);
    const double d2h_rot = raw_rotating_gbps(false, dev, bytes, iterations, 6);
    std::printf("%6zu | %10.1f %10.1f %4.0f%% %10.1f %4.0f%% %10.1f %4.0f%% | %10.1f %10.1f %4.0f%% | %10.1f\n", mib, h2d,
                up_fresh, 100 * up_fresh / h2d, up_recycled, 100 * up_recycled / h2d, up_pinned, 100 * up_pinned / h2d,
                d2h, down, 100 * down / d2h, pageable_raw);
    std::fflush(stdout);
    if (csv)
      std::fprintf(csv, "%zu,%.2f,%.2f,%.2f,%.2f,%.2f,%.2f,%.2f\n", mib, h2d, up_fresh, up_recycled, up_pinned, d2h,
                   down, pageable_raw);
    std::fprintf(stderr,
                 "       6 rotating page-locked buffers: H2D %.1f, D2H %.1f GB/s; gpudownload max-in-flight=2: %.1f, "
                 "=3: %.1f GB/s; fresh pageable -> gpuupload ! gpudownload: %.1f GB/s each way\n",
                 h2d_rot, d2h_rot, down2, down3, round_trip);
    std::fprintf(stderr, "       gpuupload runs (low-high GB/s): fresh %.1f-%.1f, recycled %.1f-%.1f, pinned %.1f-%.1f\n",
                 fresh_runs.low, fresh_runs.high, recycled_runs.low, recycled_runs.high, pinned_runs.low,
                 pinned_runs.high);
    std::fprintf(stderr,
                 "       staged uploader alone (pageable source), automatic stores: 1 thread %.1f, 4 threads %.1f, "
                 "8 threads %.1f, 12 threads %.1f GB/s; 8 threads cached %.1f, streaming %.1f GB/s\n",
                 staged1, staged4, staged8, staged12, cached8, streamed8);
    const auto pinned_stats = cs::pinned_cache().stats();
    const auto device_stats = cs::DeviceResources::get(0).device_cache().stats();
    std::fprintf(stderr, "         cache hits/misses: page-locked %zu/%zu, device %zu/%zu\n", pinned_stats.hits,
                 pinned_stats.misses, device_stats.hits, device_stats.misses);
    gst_buffer_unref(pageable);
    gst_buffer_unref(pinned_buf);
    gst_buffer_unref(on_device);
    cs::device_free(dev, 0);
    cs::pinned_free(host);
  }
  if (csv) std::fclose(csv);
  if (pinned) gst_object_unref(pinned);
  std::printf("GB/s = 1e9 bytes per second; %% = element over the page-locked cudaMemcpyAsync of the same direction; "
              "fresh = new pageable memory every buffer, recycled = the same pageable buffer again (as from an "
              "upstream pool); both are staged\n");
  return 0;
}
