// Pulse compression throughput on the GPU, for PULSES pulses of SAMPLES
// complex float samples (default 16384 x 8192, 1 GiB of phase history):
//
// 1. Device-resident: CudaPulseCompressor over the whole collection in
//    blocks of 256, 1024 and 4096 pulses, time (TOA: chirp) and frequency
//    (FX) domain, upsampling 1 and 2. CUDA events, median of the repeats.
//    The roofline is the memory traffic of the passes the implementation
//    makes, each reading and writing every element once (cuFFT's own extra
//    passes, if any, count against us), over the device-to-device copy
//    bandwidth measured in the same run (bytes read + written):
//      TOA: forward FFT 8+8, filter and pad 8+8u, inverse FFT 16u  -> 24 + 24u bytes per input sample
//      FX:  weight and pad 8+8u, FFT 16u, output rotation 16u        ->  8 + 40u bytes per input sample
//    The first pass reads the input and the last writes the output, so the
//    unfused minimum is 8 + 8u bytes; the table gives both.
// 2. Streamed: appsrc (host buffers of 1024 pulses, as a recorded stream
//    arrives: pageable, or page-locked as from a source that takes
//    gpuupload's allocator; CF32 and CI16) ! gpuupload ! sarpulsecompress !
//    fakesink, GB/s of phase history against the page-locked host-to-device
//    cudaMemcpy bandwidth measured in the same run.
// 3. From a file: the same stream written as a CPHD file (sarsim !
//    cphdsink), then cphdsrc alone and ! gpuupload ! sarpulsecompress, with
//    one read thread and the default, and with the blocks kept in system
//    memory (identity drop-allocation=true before gpuupload).
//
//   pulse_compression_bench [--pulses N] [--samples N] [--repeats N] [--csv FILE]
//
// Without a CUDA device it says so and exits 0.
#include <gst/gst.h>
#include <unistd.h>

#include <algorithm>
#include <complex>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "bench/bench_support.h"
#include "bench/stream_support.h"
#include "common/cuda_runtime.h"
#include "sar/pulse_compressor.h"

namespace {

using namespace cs::sar;

constexpr int kDevice = 0;
constexpr double kSampleRateHz = 180e6;  // sarsim's defaults: X band, 150 MHz chirp of 10 us
constexpr double kBandwidthHz = 150e6;
constexpr double kChirpS = 10e-6;

PulseCompressionConfig make_config(Domain domain, int64_t samples, int upsample, int64_t block) {
  PulseCompressionConfig c;
  c.domain = domain;
  c.samples_per_pulse = samples;
  c.upsample = upsample;
  c.window.kind = WindowKind::Taylor;
  c.max_pulses_per_block = block;
  if (domain == Domain::TOA) {
    c.sample_rate_hz = kSampleRateHz;
    c.chirp.rate_hz_per_s = kBandwidthHz / kChirpS;
    c.chirp.duration_s = kChirpS;
  } else {
    c.frequency_step_hz = kBandwidthHz / static_cast<double>(samples);
  }
  return c;
}

// Bytes per input sample of the implementation's passes (see the top).
double pass_bytes_per_sample(Domain domain, int upsample) {
  return domain == Domain::TOA ? 24.0 + 24.0 * upsample : 8.0 + 40.0 * upsample;
}

struct Row {
  std::string what;
  double ms = 0, gsamples_s = 0, pass_gbps = 0, roofline_pct = 0, minimum_gbps = 0;
};

// appsrc ! `stages` ! fakesink: GB/s of phase history, median of `repeats`.
double streamed_gbps(int64_t samples, int64_t pulses, int64_t pulses_per_buffer, bool ci16, bool page_locked,
                     const std::string &stages, int repeats) {
  // The input: sarsim's caps and per-pulse meta on four distinct buffers, pushed round robin.
  bench::CapturedStream stream("sarsim num-pulses=" + std::to_string(4 * pulses_per_buffer) +
                               " pulses-per-buffer=" + std::to_string(pulses_per_buffer) +
                               " samples-per-pulse=" + std::to_string(samples) + (ci16 ? " format=ci16" : "") +
                               " ! appsink name=out sync=false max-buffers=0");
  if (page_locked) stream.make_page_locked();
  const int64_t pushes = pulses / pulses_per_buffer;
  constexpr int64_t kWarmup = 8;  // every in-flight slot and pool filled once
  std::vector<double> rates;
  for (int r = 0; r < repeats; ++r) {
    const bench::StreamRun run = bench::push_through(stream, stages, pushes, kWarmup);
    if (!run.ok) return 0;
    rates.push_back(double(pushes * pulses_per_buffer * samples) * (ci16 ? 4.0 : 8.0) / run.seconds / 1e9);
  }
  return bench::median(rates);
}

}  // namespace

int main(int argc, char **argv) {
  gst_init(&argc, &argv);
  const bench::Options options(argc, argv, {{"pulses", "16384"}, {"samples", "8192"}, {"repeats", "3"}, {"csv", ""}});
  const int64_t pulses = options.integer("pulses"), samples = options.integer("samples");
  const int repeats = static_cast<int>(options.integer("repeats"));
  const std::string csv_path = options.text("csv");
  if (cs::device_count() == 0) {
    std::printf("pulse_compression_bench: no CUDA device (%s); nothing to measure\n", cs::no_device_reason().c_str());
    return 0;
  }
  std::printf("pulse_compression_bench on %s: %lld pulses x %lld samples (CF32), Taylor window\n",
              cs::device_name(kDevice).c_str(), static_cast<long long>(pulses), static_cast<long long>(samples));

  cs::Stream stream(kDevice);
  const size_t in_bytes = static_cast<size_t>(pulses * samples) * sizeof(std::complex<float>);
  bench::DeviceArray input(in_bytes, kDevice), output(2 * in_bytes, kDevice);  // output: room for upsampling 2
  cs::fill_random_async(input.get(), in_bytes, 7, stream.get());

  // The practical HBM ceiling: a device-to-device copy, bytes read + written.
  const double copy_ms = bench::timed_ms(stream.get(), kDevice, repeats,
                                         [&] { cs::copy_async(output.get(), input.get(), in_bytes, stream.get()); });
  const double copy_gbps = 2.0 * double(in_bytes) / (copy_ms * 1e6);
  std::printf("device-to-device copy: %.0f GB/s (read + write)\n\n", copy_gbps);
  std::printf("%-28s %10s %12s %12s %10s %14s\n", "domain, upsample, block", "ms", "G samples/s", "pass GB/s",
              "% roofline", "min-bytes GB/s");

  std::vector<Row> rows;
  for (Domain domain : {Domain::TOA, Domain::FX})
    for (int upsample : {1, 2})
      for (int64_t block : {int64_t(256), int64_t(1024), int64_t(4096)}) {
        CudaPulseCompressor compressor(make_config(domain, samples, upsample, block), kDevice);
        const auto *in = input.get<std::complex<float>>();
        auto *out = output.get<std::complex<float>>();
        const double ms = bench::timed_ms(stream.get(), kDevice, repeats,
                                          [&] { compressor.compress(in, out, pulses, stream.get()); });
        Row row;
        row.what = std::string(domain == Domain::TOA ? "time" : "frequency") + ", x" + std::to_string(upsample) +
                   ", " + std::to_string(block);
        row.ms = ms;
        const double total = double(pulses * samples);
        row.gsamples_s = total / (ms * 1e6);
        row.pass_gbps = total * pass_bytes_per_sample(domain, upsample) / (ms * 1e6);
        row.roofline_pct = 100.0 * row.pass_gbps / copy_gbps;
        row.minimum_gbps = total * (8.0 + 8.0 * upsample) / (ms * 1e6);
        std::printf("%-28s %10.2f %12.2f %12.0f %9.0f%% %14.0f\n", row.what.c_str(), row.ms, row.gsamples_s,
                    row.pass_gbps, row.roofline_pct, row.minimum_gbps);
        rows.push_back(row);
      }

  // Streamed: the pinned H2D ceiling of the same run, then the pipeline.
  const size_t chunk = 64 << 20;
  void *pinned = cs::pinned_alloc(chunk);
  const double h2d_ms = bench::timed_ms(stream.get(), kDevice, repeats, [&] {
    for (int i = 0; i < 8; ++i) cs::copy_async(output.get(), pinned, chunk, stream.get());
  });
  cs::pinned_free(pinned);
  const double h2d_gbps = 8.0 * double(chunk) / (h2d_ms * 1e6);
  const int64_t pulses_per_buffer = 1024;
  std::printf("\nstreamed, buffers of %lld pulses: appsrc ! gpuupload ! sarpulsecompress ! fakesink "
              "(page-locked H2D cudaMemcpy: %.1f GB/s)\n%-40s %12s %10s %14s\n",
              static_cast<long long>(pulses_per_buffer), h2d_gbps, "input", "GB/s", "% H2D", "M pulses/s");
  struct Streamed {
    std::string what;
    double gbps;
  };
  std::vector<Streamed> streamed;
  // Each input also through gpuupload alone (what the compression costs on
  // top), and with a queue between the two (each element on its own thread).
  const std::string compress = "sarpulsecompress backend=cuda window=taylor";
  const std::vector<std::pair<std::string, std::string>> variants = {
      {"", "gpuupload ! " + compress},
      {", upload only", "gpuupload"},
      {", queued", "gpuupload ! queue max-size-buffers=4 max-size-bytes=0 max-size-time=0 ! " + compress}};
  for (bool ci16 : {false, true})
    for (bool page_locked : {false, true})
      for (const auto &variant : variants) {
        const double g = streamed_gbps(samples, pulses, pulses_per_buffer, ci16, page_locked, variant.second, repeats);
        const std::string what =
            std::string(ci16 ? "CI16" : "CF32") + (page_locked ? ", page-locked" : ", pageable") + variant.first;
        std::printf("%-40s %12.1f %9.0f%% %14.2f\n", what.c_str(), g, 100.0 * g / h2d_gbps,
                    g * 1e9 / double(samples * (ci16 ? 4 : 8)) / 1e6);
        streamed.push_back({what, g});
      }

  // From a file: the same stream as a CPHD file (CI16 as CI4, CF32 as CF8;
  // written by sarsim ! cphdsink, so in the page cache), through cphdsrc.
  std::printf("\nfrom a file, buffers of %lld pulses: cphdsrc ! CHAIN ! fakesink, the pulses after the first buffer "
              "from when it leaves cphdsrc to the last output complete; median of %d runs\n%-58s %10s %9s\n",
              static_cast<long long>(pulses_per_buffer), repeats, "input: chain", "GB/s", "% H2D");
  struct FileRow {
    const char *label, *source_settings, *chain;
  };
  const std::string upload_compress = "gpuupload ! " + compress;
  const std::string system_memory = "identity drop-allocation=true ! " + upload_compress;
  const char *one = "read-threads=1";
  const FileRow file_rows[] = {{"read-threads=1: (cphdsrc alone)", one, ""},
                               {"(cphdsrc alone)", "", ""},
                               {"read-threads=1: gpuupload ! sarpulsecompress", one, upload_compress.c_str()},
                               {"gpuupload ! sarpulsecompress", "", upload_compress.c_str()},
                               {"system memory: gpuupload ! sarpulsecompress", "", system_memory.c_str()}};
  for (bool ci16 : {true, false}) {
    const std::string path = "/tmp/pulse-compression-bench-" + std::to_string(getpid()) + ".cphd";
    if (!bench::run_to_end("sarsim num-pulses=" + std::to_string(pulses) + " pulses-per-buffer=" +
                           std::to_string(pulses_per_buffer) + " samples-per-pulse=" + std::to_string(samples) +
                           (ci16 ? " format=ci16" : "") + " ! cphdsink location=" + path))
      return 1;
    const double timed_bytes = double((pulses - pulses_per_buffer) * samples) * (ci16 ? 4.0 : 8.0);
    for (const FileRow &row : file_rows) {
      const std::vector<double> seconds = bench::source_run_seconds(
          "cphdsrc location=" + path + " pulses-per-buffer=" + std::to_string(pulses_per_buffer) + " " +
              row.source_settings,
          row.chain, repeats);
      const double g = timed_bytes / bench::median(seconds) / 1e9;
      const std::string what = std::string(ci16 ? "CI16 file: " : "CF32 file: ") + row.label;
      std::printf("%-58s %10.1f %8.0f%%\n", what.c_str(), g, 100.0 * g / h2d_gbps);
      streamed.push_back({what, g});
    }
    std::remove(path.c_str());
  }

  if (!csv_path.empty()) {
    if (FILE *csv = std::fopen(csv_path.c_str(), "w")) {
      std::fprintf(csv, "what,ms,gsamples_per_s,pass_gbps,roofline_pct,minimum_bytes_gbps\n");
      for (const Row &r : rows)
        std::fprintf(csv, "\"%s\",%.3f,%.3f,%.1f,%.1f,%.1f\n", r.what.c_str(), r.ms, r.gsamples_s, r.pass_gbps,
                     r.roofline_pct, r.minimum_gbps);
      for (const Streamed &r : streamed)
        std::fprintf(csv, "\"streamed %s\",,,%.2f,%.1f,\n", r.what.c_str(), r.gbps, 100.0 * r.gbps / h2d_gbps);
      std::fclose(csv);
    }
  }
  return 0;
}
