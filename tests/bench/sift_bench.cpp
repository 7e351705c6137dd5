// SIFT on the GPU, device-resident: for frames of 640x480, 1280x720,
// 1920x1080 and 3840x2160 made from a natural picture (scikit-image's
// "astronaut", resized; a smooth random texture when the picture is absent),
// milliseconds per frame of each stage (pyramid, detection, description,
// called one by one) and of the whole frame (`run`, what the sift element
// calls: it overlaps the small octaves with the large octaves' upper levels
// and extrema, so it takes less than the stages' sum), CUDA events, median
// of the repeats, image already on the device, OpenCV's defaults. Also the
// keypoint count, the CPU reference (OpenCV 4.6 cv::SIFT::detectAndCompute
// on the same frame, all host threads, median of its repeats), how many of
// OpenCV's keypoints the GPU reproduces (within 1 px, 10 % size, 10
// degrees), and the frame time without the doubling (upsample=false: the
// default of CudaSift, which OpenCV has no switch for). Then frames per second
// streamed through the element: GRAY8 frames pushed from pageable memory
// into `sift backend=cuda` (which stages them up itself), and from
// page-locked memory through gpuupload; each with the element's default
// frames in flight (2: the next frame's work overlaps the download of the
// last) and with frames-in-flight=1 (each frame finished before the next).
//
//   sift_bench [--repeats 20] [--warmup 3] [--cpu-repeats 3] [--picture NAME] [--only WxH] [--csv out.csv]
//              [--frame-only] [--trace] [--in-flight]
//
// --frame-only times run() alone (A/B of variants); --trace adds when each
// kernel of a run() ended, per stream (CS_SIFT_TRACE, see sift_cuda.h);
// --in-flight times a stream of device-resident frames on 1, 2 and 3
// engines on their own streams, taken in turn as the sift element's
// frames-in-flight does (each frame started where the engine before says,
// CudaSift::next_frame_start), with each frame's results downloaded once
// the engines after it have their frames, and without downloads (results
// kept on the device), in ms per frame; where frames are staggered, also
// every frame started at once.
//
// (--warmup 0 --repeats 1 --only 1920x1080 makes one frame's kernels, for a profiler.)
//
// Without a CUDA device it says so and exits 0.
#include <opencv2/features2d.hpp>
#include <opencv2/imgproc.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "bench/bench_support.h"
#include "bench/stream_support.h"
#include "common/cuda_runtime.h"
#include "kernels/sift/sift_test_util.h"
#include "sift/sift_cuda.h"

namespace {

constexpr int kDevice = 0;

struct Row {
  int width = 0, height = 0;
  double pyramid_ms = 0, detect_ms = 0, describe_ms = 0, stages_ms = 0, total_ms = 0, opencv_ms = 0;
  size_t keypoints = 0, opencv_keypoints = 0;
  double matched = 0;
  double undoubled_ms = 0;                                          // run() with upsample=false
  size_t undoubled_keypoints = 0;
  int frame_order = -1, undoubled_frame_order = -1;                 // run()'s choice (CudaSift::frame_order)
  int cluster_from = -1;                                            // and its cluster's first octave
  double streamed_fps = 0, streamed_pinned_fps = 0;                // the element's default frames-in-flight
  double streamed_serial_fps = 0, streamed_pinned_serial_fps = 0;  // frames-in-flight=1
  double streamed_matched_fps = 0;  // page-locked, then siftmatch against the frame before
  double rootsift_gpu_match_fps = 0, rootsift_cpu_match_fps = 0;  // the same with RootSIFT, each matcher backend
};

using bench::median;

cv::Mat source_picture(const std::string &name) {
  cv::Mat m = sift_test::load_skimage(name);
  if (!m.empty()) return m;
  std::printf("(picture '%s' not found: a smooth random texture instead)\n", name.c_str());
  cv::Mat noise(1080, 1920, CV_8U);
  cv::randu(noise, 0, 256);
  cv::GaussianBlur(noise, m, cv::Size(0, 0), 3.0);
  cv::normalize(m, m, 0, 255, cv::NORM_MINMAX);
  return m;
}

}  // namespace

int main(int argc, char **argv) {
  gst_init(&argc, &argv);
  int repeats = 20, warmup = 3, cpu_repeats = 3;
  std::string csv, picture = "astronaut", only;
  bool frame_only = false, trace = false, in_flight = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--repeats") repeats = std::max(1, std::stoi(value()));
    else if (a == "--warmup") warmup = std::max(0, std::stoi(value()));
    else if (a == "--only") only = value();
    else if (a == "--cpu-repeats") cpu_repeats = std::max(1, std::stoi(value()));
    else if (a == "--picture") picture = value();
    else if (a == "--csv") csv = value();
    else if (a == "--frame-only") frame_only = true;
    else if (a == "--trace") trace = true;
    else if (a == "--in-flight") in_flight = true;
    else {
      std::fprintf(stderr,
                   "usage: %s [--repeats N] [--warmup N] [--cpu-repeats N] [--picture NAME] [--only WxH]"
                   " [--csv FILE] [--frame-only] [--trace] [--in-flight]\n",
                   argv[0]);
      return 2;
    }
  }
  if (cs::device_count() == 0) {
    std::printf("sift_bench: no CUDA device (%s); nothing to measure\n", cs::no_device_reason().c_str());
    return 0;
  }
  const cv::Mat base = source_picture(picture);
  std::printf("sift_bench on %s: '%s' resized, OpenCV defaults (3 layers, contrast 0.04, edge 10, sigma 1.6, doubled)\n",
              cs::device_name(kDevice).c_str(), picture.c_str());
  std::printf("%-10s %9s %9s %9s %9s %9s %8s %11s %8s %9s %9s\n", "size", "pyr ms", "detect ms", "desc ms", "stages ms",
              "frame ms", "kps", "OpenCV ms", "OCV kps", "matched", "speed-up");

  cs::Stream stream(kDevice);
  cs::EventHandle e0 = cs::timing_event_create(kDevice), e1 = cs::timing_event_create(kDevice),
                  e2 = cs::timing_event_create(kDevice), e3 = cs::timing_event_create(kDevice);
  std::vector<Row> rows;
  const int sizes[][2] = {{640, 480}, {1280, 720}, {1920, 1080}, {3840, 2160}};
  for (const auto &s : sizes) {
    if (!only.empty() && only != std::to_string(s[0]) + "x" + std::to_string(s[1])) continue;
    Row row;
    row.width = s[0];
    row.height = s[1];
    cv::Mat frame;
    cv::resize(base, frame, cv::Size(s[0], s[1]), 0, 0, cv::INTER_CUBIC);
    void *d = cs::device_alloc(frame.total(), kDevice);
    cs::copy_async(d, frame.data, frame.total(), stream.get());
    const cs::sift::DeviceImage image{d, size_t(frame.cols), frame.cols, frame.rows, cs::sift::PixelType::u8};

    cs::sift::CudaSift sift(cs::sift::Params(), kDevice);
    for (int w = 0; w < warmup; ++w) sift.run(image, cs::sift::DescriptorFormat::opencv, stream.get());  // allocation, caches
    // The first frames of a size choose run()'s frame plan by timing: not counted.
    auto settle = [&](cs::sift::CudaSift &engine) {
      for (int w = 0; w < 200 && engine.small_octaves_from() < 0; ++w) {
        engine.run(image, cs::sift::DescriptorFormat::opencv, stream.get());
        stream.synchronize();
      }
    };
    settle(sift);
    // Median ms of `run()` (the whole frame, as the element calls it).
    auto frame_ms = [&](cs::sift::CudaSift &engine) {
      std::vector<double> ms;
      for (int r = 0; r < repeats; ++r) {
        cs::event_record(e0, stream.get());
        engine.run(image, cs::sift::DescriptorFormat::opencv, stream.get());
        cs::event_record(e3, stream.get());
        cs::event_synchronize(e3);
        ms.push_back(cs::event_elapsed_ms(e0, e3));
      }
      return median(ms);
    };
    stream.synchronize();
    if (trace) {
      setenv("CS_SIFT_TRACE", "1", 1);
      cs::sift::CudaSift traced(cs::sift::Params(), kDevice);
      unsetenv("CS_SIFT_TRACE");
      for (int w = 0; w < std::max(warmup, 1) + 1; ++w) traced.run(image, cs::sift::DescriptorFormat::opencv, stream.get());
      std::printf("%dx%d, when each kernel of a run() ended (timing events between the kernels):\n", s[0], s[1]);
      for (const cs::sift::TraceMark &m : traced.trace())
        std::printf("  %8.3f ms  %-6s %s\n", m.end_ms, m.branch.c_str(), m.kernel.c_str());
      std::fflush(stdout);
    }
    if (in_flight) {
      // A stream of frames, `engines` of them in flight, timed on the host
      // from the first enqueue to the last frame done.
      auto stream_ms = [&](int engines, bool download, bool staggered, bool *engine_staggers = nullptr) {
        std::vector<std::unique_ptr<cs::sift::CudaSift>> sifts;
        std::vector<cs::Stream> streams;
        for (int e = 0; e < engines; ++e) {
          sifts.push_back(std::make_unique<cs::sift::CudaSift>(cs::sift::Params(), kDevice));
          streams.emplace_back(kDevice);
          for (int w = 0; w < warmup; ++w) sifts[e]->run(image, cs::sift::DescriptorFormat::opencv, streams[e].get());
          for (int w = 0; w < 200 && sifts[e]->small_octaves_from() < 0; ++w) {
            sifts[e]->run(image, cs::sift::DescriptorFormat::opencv, streams[e].get());
            streams[e].synchronize();
          }
        }
        for (cs::Stream &st : streams) st.synchronize();
        const int frames = 300;
        size_t keypoints = 0;
        const auto t0 = std::chrono::steady_clock::now();
        for (int f = 0; f < frames + engines - 1; ++f) {
          if (f < frames) {
            // As the element: only another engine's frame is waited for.
            const cs::EventHandle start =
                f > 0 && engines > 1 ? sifts[(f - 1) % engines]->next_frame_start() : nullptr;
            if (engine_staggers) *engine_staggers = start != nullptr;
            if (staggered && start) cs::stream_wait(streams[f % engines].get(), start);
            sifts[f % engines]->run(image, cs::sift::DescriptorFormat::opencv, streams[f % engines].get());
          }
          const int oldest = f - (engines - 1);  // finished once every engine has a frame, as the element does
          if (download && oldest >= 0)
            keypoints += sifts[oldest % engines]->download(streams[oldest % engines].get()).keypoints.size();
        }
        for (cs::Stream &st : streams) st.synchronize();
        const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
        if (download && keypoints == 0) std::printf("(no keypoints downloaded)\n");
        return ms / frames;
      };
      bool staggers = false;
      std::printf("%4dx%-5d ms per frame, 1 / 2 / 3 in flight, as the element: with downloads", s[0], s[1]);
      for (int engines = 1; engines <= 3; ++engines) std::printf(" %.4f", stream_ms(engines, true, true, &staggers));
      std::printf(", kept on the device");
      for (int engines = 1; engines <= 3; ++engines) std::printf(" %.4f", stream_ms(engines, false, true));
      std::printf(" (%s)", staggers ? "each frame from the last one's first octave" : "frames at once");
      if (staggers) {
        std::printf("; 2 / 3 at once: with downloads");
        for (int engines = 2; engines <= 3; ++engines) std::printf(" %.4f", stream_ms(engines, true, false));
        std::printf(", kept");
        for (int engines = 2; engines <= 3; ++engines) std::printf(" %.4f", stream_ms(engines, false, false));
      }
      std::printf("\n");
      std::fflush(stdout);
    }
    if (frame_only) {
      const double ms = frame_ms(sift);
      std::printf("%4dx%-5d frame %.4f ms (order %d, cluster from octave %d)\n", s[0], s[1], ms, sift.frame_order(),
                  sift.small_octaves_from());
      std::fflush(stdout);
      cs::device_free(d, kDevice);
      continue;
    }
    std::vector<double> pyr, det, desc, stages;
    for (int r = 0; r < repeats; ++r) {
      cs::event_record(e0, stream.get());
      sift.build_pyramid(image, stream.get());
      cs::event_record(e1, stream.get());
      sift.detect(stream.get());
      cs::event_record(e2, stream.get());
      sift.describe(cs::sift::DescriptorFormat::opencv, stream.get());
      cs::event_record(e3, stream.get());
      cs::event_synchronize(e3);
      pyr.push_back(cs::event_elapsed_ms(e0, e1));
      det.push_back(cs::event_elapsed_ms(e1, e2));
      desc.push_back(cs::event_elapsed_ms(e2, e3));
      stages.push_back(cs::event_elapsed_ms(e0, e3));
    }
    row.total_ms = frame_ms(sift);
    row.frame_order = sift.frame_order();
    row.cluster_from = sift.small_octaves_from();
    const cs::sift::Result result = sift.download(stream.get());
    {  // Without the doubling (CudaSift's default; OpenCV always doubles).
      cs::sift::Params undoubled;
      undoubled.upsample = false;
      cs::sift::CudaSift plain(undoubled, kDevice);
      for (int w = 0; w < warmup; ++w) plain.run(image, cs::sift::DescriptorFormat::opencv, stream.get());
      settle(plain);
      row.undoubled_ms = frame_ms(plain);
      row.undoubled_frame_order = plain.frame_order();
      row.undoubled_keypoints = plain.download(stream.get()).keypoints.size();
    }
    cs::device_free(d, kDevice);
    row.pyramid_ms = median(pyr);
    row.detect_ms = median(det);
    row.describe_ms = median(desc);
    row.stages_ms = median(stages);
    row.keypoints = result.keypoints.size();

    cv::Ptr<cv::SIFT> cpu = cv::SIFT::create();
    std::vector<double> cpu_ms;
    std::vector<cv::KeyPoint> kps;
    cv::Mat descriptors;
    for (int r = 0; r < cpu_repeats; ++r) {
      const auto t0 = std::chrono::steady_clock::now();
      cpu->detectAndCompute(frame, cv::noArray(), kps, descriptors);
      cpu_ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    row.opencv_ms = median(cpu_ms);
    row.opencv_keypoints = kps.size();
    row.matched = sift_test::agreement(kps, cv::Mat(), sift_test::to_cv(result.keypoints), cv::Mat()).reference_matched;
    std::printf("%4dx%-5d %9.3f %9.3f %9.3f %9.3f %9.3f %8zu %11.1f %8zu %8.2f%% %8.0fx  order %d, cluster %d%s\n",
                row.width, row.height, row.pyramid_ms, row.detect_ms, row.describe_ms, row.stages_ms, row.total_ms,
                row.keypoints, row.opencv_ms, row.opencv_keypoints, 100 * row.matched, row.opencv_ms / row.total_ms,
                row.frame_order, row.cluster_from, result.overflowed ? "  (list overflow)" : "");
    std::fflush(stdout);
    rows.push_back(row);
  }
  for (cs::EventHandle e : {e0, e1, e2, e3}) cs::event_destroy(e);
  if (frame_only) return 0;

  // Streamed: GRAY8 frames from host memory through the element, first
  // timed push to the last frame with its features.
  std::printf("\nwithout doubling (upsample=false, CudaSift's default; OpenCV always doubles): frame ms, keypoints,"
              " frame order\n");
  for (const Row &row : rows)
    std::printf("%4dx%-5d %9.3f %8zu %6d\n", row.width, row.height, row.undoubled_ms, row.undoubled_keypoints,
                row.undoubled_frame_order);
  std::printf("\nstreamed: appsrc (GRAY8 frames in host memory) ! [gpuupload !] sift backend=cuda ! fakesink\n"
              "(default frames-in-flight, then frames-in-flight=1; last, page-locked with siftmatch after sift,\n"
              "each frame matched against the one before)\n");
  std::printf("%-10s %14s %16s %17s %19s %18s\n", "size", "pageable fps", "page-locked fps", "pageable fps, 1",
              "page-locked fps, 1", "+ siftmatch fps");
  for (Row &row : rows) {
    cv::Mat frame;
    cv::resize(base, frame, cv::Size(row.width, row.height), 0, 0, cv::INTER_CUBIC);
    auto frames = [&] {
      std::vector<GstBuffer *> buffers;
      for (int i = 0; i < 8; ++i) buffers.push_back(gst_buffer_new_memdup(frame.data, frame.total()));
      return buffers;
    };
    const std::string caps = "video/x-raw,format=GRAY8,width=" + std::to_string(row.width) +
                             ",height=" + std::to_string(row.height) + ",framerate=0/1";
    const int64_t pushes = std::max<int64_t>(300, int64_t(1.5e9 / double(frame.total())));  // ~1.5 GB of frames
    auto fps_of = [&](bench::CapturedStream &stream, const std::string &stages, int64_t count = 0) {
      const bench::StreamRun run = bench::push_through(stream, stages, count ? count : pushes, 10);
      return run.ok && run.outputs > 1 ? (run.outputs - 1) / (run.last_output - run.first_output) : 0.0;
    };
    bench::CapturedStream pageable(caps, frames());
    row.streamed_fps = fps_of(pageable, "sift backend=cuda");
    row.streamed_serial_fps = fps_of(pageable, "sift backend=cuda frames-in-flight=1");
    bench::CapturedStream pinned(caps, frames());
    pinned.make_page_locked();
    row.streamed_pinned_fps = fps_of(pinned, "gpuupload ! sift backend=cuda");
    row.streamed_pinned_serial_fps = fps_of(pinned, "gpuupload ! sift backend=cuda frames-in-flight=1");
    row.streamed_matched_fps = fps_of(pinned, "gpuupload ! sift backend=cuda ! siftmatch backend=cuda");
    const std::string rootsift = "gpuupload ! sift backend=cuda descriptor-format=rootsift ! siftmatch backend=";
    row.rootsift_gpu_match_fps = fps_of(pinned, rootsift + "cuda");
    row.rootsift_cpu_match_fps = fps_of(pinned, rootsift + "cpu", 60);  // OpenCV's matcher: slow, fewer frames
    std::printf("%4dx%-5d %14.0f %16.0f %17.0f %19.0f %18.0f\n", row.width, row.height, row.streamed_fps,
                row.streamed_pinned_fps, row.streamed_serial_fps, row.streamed_pinned_serial_fps,
                row.streamed_matched_fps);
    std::fflush(stdout);
  }

  std::printf("\nsiftmatch of RootSIFT (float) descriptors, page-locked frames as above, each frame against the one "
              "before: the CUDA matcher, OpenCV's brute force on the CPU\n%-10s %10s %10s\n", "size", "CUDA fps",
              "CPU fps");
  for (const Row &row : rows)
    std::printf("%4dx%-5d %10.0f %10.1f\n", row.width, row.height, row.rootsift_gpu_match_fps,
                row.rootsift_cpu_match_fps);

  if (!csv.empty()) {
    FILE *f = std::fopen(csv.c_str(), "w");
    if (!f) {
      std::fprintf(stderr, "cannot write %s\n", csv.c_str());
      return 1;
    }
    std::fprintf(f, "width,height,pyramid_ms,detect_ms,describe_ms,stages_ms,total_ms,keypoints,opencv_ms,opencv_keypoints,matched,"
                    "streamed_fps,streamed_pinned_fps,streamed_serial_fps,streamed_pinned_serial_fps,streamed_matched_fps,"
                    "undoubled_ms,undoubled_keypoints,frame_order,undoubled_frame_order,cluster_from\n");
    for (const Row &r : rows)
      std::fprintf(f, "%d,%d,%.4f,%.4f,%.4f,%.4f,%.4f,%zu,%.2f,%zu,%.4f,%.1f,%.1f,%.1f,%.1f,%.1f,%.4f,%zu,%d,%d,%d\n", r.width,
                   r.height, r.pyramid_ms, r.detect_ms, r.describe_ms, r.stages_ms, r.total_ms, r.keypoints, r.opencv_ms,
                   r.opencv_keypoints, r.matched, r.streamed_fps, r.streamed_pinned_fps, r.streamed_serial_fps,
                   r.streamed_pinned_serial_fps, r.streamed_matched_fps, r.undoubled_ms, r.undoubled_keypoints, r.frame_order,
                   r.undoubled_frame_order, r.cluster_from);
    std::fclose(f);
  }
  return 0;
}
