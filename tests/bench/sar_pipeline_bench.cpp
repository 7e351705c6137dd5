// Continuous video SAR end to end: a recorded phase-history stream (sarsim's
// output captured once, then pushed from memory as a recording read ahead
// would arrive) through
//
//   appsrc ! gpuupload ! sarpulsecompress ! queue ! sarbackproject ! fakesink
//
// with SIZE x SIZE images, an aperture of APERTURE pulses and a new image
// every STRIDE pulses (video SAR: each image moved on from the previous one).
// Reports frames per second between the first and the last image (the first
// needs a whole aperture) and the pulse rate that sustains. The issue's
// target: 2048 x 2048 frames, aperture 4096, stride 512, >= 100 frames/s.
//
//   sar_pipeline_bench [--size 2048] [--aperture 4096] [--stride 512] [--frames 24]
//                      [--samples 4096] [--precision fast] [--backend cuda] [--csv FILE]
//
// With --backend cuda and no CUDA device it says so and exits 0; --backend
// cpu (small sizes) runs the same pipeline on the CPU elements.
#include <gst/gst.h>

#include <cstdio>
#include <string>

#include "bench/bench_support.h"
#include "bench/stream_support.h"
#include "common/cuda_runtime.h"

int main(int argc, char **argv) {
  gst_init(&argc, &argv);
  const bench::Options options(argc, argv,
                               {{"size", "2048"}, {"aperture", "4096"}, {"stride", "512"}, {"frames", "24"},
                                {"samples", "4096"}, {"precision", "fast"}, {"backend", "cuda"}, {"csv", ""}});
  const long long size = options.integer("size"), aperture = options.integer("aperture");
  const long long stride = options.integer("stride"), frames = options.integer("frames");
  const long long samples = options.integer("samples");
  const std::string backend = options.text("backend"), precision = options.text("precision");
  const bool cuda = backend == "cuda";
  if (cuda && cs::device_count() == 0) {
    std::printf("sar_pipeline_bench: no CUDA device (%s); nothing to measure\n", cs::no_device_reason().c_str());
    return 0;
  }
  // Pixels of 0.25 m, targets spread over the scene so the images are not empty.
  const double spacing = 0.25, half = 0.4 * spacing * static_cast<double>(size);
  char targets[256];
  std::snprintf(targets, sizeof targets, "0,0,0,1;%.1f,%.1f,0,0.7;%.1f,%.1f,0,0.5;%.1f,%.1f,0,0.8", half, -half / 2,
                -half / 2, half, -half, -half);
  const long long pulses = aperture + (frames - 1) * stride;
  // A long enough recording that no buffer is pushed twice in one image.
  bench::CapturedStream recording("sarsim num-pulses=" + std::to_string(pulses) +
                                  " pulses-per-buffer=" + std::to_string(stride) +
                                  " samples-per-pulse=" + std::to_string(samples) + " targets=\"" + targets +
                                  "\" ! appsink name=out sync=false max-buffers=0");
  if (recording.empty()) return 1;
  if (cuda) recording.make_page_locked();

  const std::string upload = cuda ? "gpuupload ! " : "";
  const std::string stages =
      upload + "sarpulsecompress backend=" + backend + " window=taylor upsample=2 ! queue max-size-buffers=4 " +
      "max-size-bytes=0 max-size-time=0 ! sarbackproject backend=" + backend + " width=" + std::to_string(size) +
      " height=" + std::to_string(size) + " pixel-spacing=0.25 aperture=" + std::to_string(aperture) +
      " stride=" + std::to_string(stride) + " precision=" + precision;
  const bench::StreamRun run = bench::push_through(recording, stages, pulses / stride, 0);
  if (!run.ok) return 1;
  const double span = run.last_output - run.first_output;
  const double fps = run.outputs > 1 ? (run.outputs - 1) / span : 0;
  std::printf("sar_pipeline_bench (%s%s): %lld x %lld images, aperture %lld, stride %lld, %lld samples per pulse, "
              "%s precision\n",
              backend.c_str(), cuda ? (", " + cs::device_name(0)).c_str() : "", size, size, aperture, stride, samples,
              precision.c_str());
  std::printf("  %d images; first after %.3f s (a whole aperture); then %.2f frames/s (%.2f ms per frame, "
              "%.0f pulses/s); %.3f s in all\n",
              run.outputs, run.first_output, fps, fps > 0 ? 1e3 / fps : 0.0, fps * static_cast<double>(stride),
              run.seconds);
  const std::string csv = options.text("csv");
  if (!csv.empty()) {
    if (FILE *f = std::fopen(csv.c_str(), "w")) {
      std::fprintf(f, "backend,size,aperture,stride,samples,precision,images,first_s,fps,total_s\n");
      std::fprintf(f, "%s,%lld,%lld,%lld,%lld,%s,%d,%.4f,%.3f,%.4f\n", backend.c_str(), size, aperture, stride, samples,
                   precision.c_str(), run.outputs, run.first_output, fps, run.seconds);
      std::fclose(f);
    }
  }
  return run.outputs == frames ? 0 : 1;
}
