// Hyperspectral classification throughput: a SAMPLES x LINES x BANDS cube
// (f32 and i16, BIP; also both stored big-endian, tensor precision only)
// against REFERENCES spectra, every method and precision
// (tensor only for the dot-product methods; elsewhere it runs as fast). The
// tensor rows run twice: the kernel specialised for BIP blocks
// (kernels/hsi/bip_tensor.cu; "tensor-bip" in the kernel column) and the
// generic tensor kernel ("tensor") on the same cube. CS_HSI_BIP_KERNEL=tf32
// (or fp16) runs the BIP kernel's 3xTF32 (or mma.sync fp16x3) product instead of the
// default wgmma one (the run says which ran).
//
//   device-resident  the cube already in device memory; kernel time (CUDA
//                    events between calls queued one after another, as a
//                    pipeline's blocks are, median of the repeats; the
//                    launch latency of a call on an idle GPU is not
//                    counted) -> GB/s of cube read,
//                    against the HBM's nominal bandwidth and a device-to-device
//                    copy of the cube measured in the same run (read + write
//                    traffic: the practical ceiling of a streaming kernel);
//   CPU              SpectralClassifier on a crop of CROP lines (every core),
//                    scaled to the whole cube: the GPU's speed-up;
//   streamed         the cube from host memory (page-locked and pageable) in
//                    blocks of BLOCK lines through appsrc ! gpuupload !
//                    hsiclassify ! fakesink, first push to last class map
//                    done, against cudaMemcpyAsync from page-locked memory of
//                    the same block size in the same run;
//   from a file      the same cube written as an ENVI BIP file (so in the
//                    page cache) through envisrc ! gpuupload ! hsiclassify !
//                    fakesink, the blocks after the first from when the
//                    first leaves envisrc to the last class map; envisrc !
//                    fakesink alone (the read's own rate);
//   --ignore-value   the cube's headers carry `data ignore value = V` (as
//                    AVIRIS-NG's -9999): the kernels then look for it in
//                    every pixel (the run prints how many samples hold
//                    it: none of the generated cube's for -9999).
//   Spectral Python  tests/bench/hsi_bench_spectral.py times
//                    spectral.spectral_angles on the same cube size (skipped
//                    with a note when its Python or Spectral Python is absent).
//
//   hsi_bench [--samples 1024] [--lines 1024] [--bands 224] [--references 64]
//             [--block 64] [--crop 16] [--repeats 5] [--stream-cubes 3]
//             [--python /usr/bin/python3] [--no-python] [--csv out.csv]
//             [--tensor-only] [--file-only] [--ignore-value V]
//
// Without a CUDA device it says so and exits 0. GB/s = 1e9 bytes/s.
#include <gst/app/gstappsrc.h>
#include <gst/cudasensing/cudasensing.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench/bench_support.h"
#include "bench/stream_support.h"
#include "common/cuda_runtime.h"
#include "hsi/bip_tensor.h"
#include "hsi/classifier.h"
#include "hsi/convert.h"

namespace {

using namespace cs::hsi;
using Clock = std::chrono::steady_clock;

constexpr int kDevice = 0;
constexpr double kNominalHbmGBps = 4800.0;  // H200 HBM3e, NVIDIA's figure
constexpr float kI16Scale = 10000.0f;       // reflectance stored as 1e4 x, as AVIRIS products do

struct Options {
  size_t samples = 1024, lines = 1024, bands = 224, references = 64;
  size_t block_lines = 64, crop_lines = 16;
  int repeats = 5, stream_cubes = 3;
  std::string python = "/usr/bin/python3";
  bool run_python = true;
  bool tensor_only = false;  // device-resident tensor rows only (kernel work)
  bool file_only = false;    // the "from a file" section only
  const char *csv = nullptr;
  std::optional<double> ignore_value;  // the headers' data ignore value
};

using bench::median;

// Timing and device arrays on the benchmark's device.
struct Timer : bench::EventTimer {
  Timer() : bench::EventTimer(kDevice) {}
};
struct DeviceArray : bench::DeviceArray {
  explicit DeviceArray(size_t bytes) : bench::DeviceArray(bytes, kDevice) {}
};

// A fast generator for hundreds of millions of samples (xorshift64*).
struct Random {
  uint64_t state;
  explicit Random(uint64_t seed) : state(seed | 1) {}
  double uniform() {
    state ^= state >> 12;
    state ^= state << 25;
    state ^= state >> 27;
    return double((state * 2685821657736338717ull) >> 11) * 0x1.0p-53;
  }
};

// Smooth positive reference spectra (SID needs positive values), K x bands.
ReferenceSet make_references(const Options &o, Random &rng) {
  ReferenceSet refs;
  refs.bands = o.bands;
  refs.spectra.resize(o.references * o.bands);
  for (size_t k = 0; k < o.references; ++k) {
    refs.names.push_back("reference " + std::to_string(k + 1));
    refs.library_indices.push_back(k);
    const double level = 0.2 + 0.5 * rng.uniform(), slope = 0.3 * (rng.uniform() - 0.5);
    const double freq = 2 + 10 * rng.uniform(), phase = 6.283 * rng.uniform();
    for (size_t b = 0; b < o.bands; ++b) {
      const double x = double(b) / double(o.bands - 1);
      refs.spectra[k * o.bands + b] = float(level + slope * x + 0.1 * std::sin(freq * x + phase));
    }
  }
  return refs;
}

// Pixels = brightness x (mixture of two references) + noise, BIP.
std::vector<float> make_cube(const Options &o, const ReferenceSet &refs, Random &rng) {
  std::vector<float> cube(o.samples * o.lines * o.bands);
  for (size_t p = 0; p < o.samples * o.lines; ++p) {
    const size_t a = size_t(rng.uniform() * double(o.references)) % o.references;
    const size_t b = size_t(rng.uniform() * double(o.references)) % o.references;
    const double mix = 0.6 + 0.4 * rng.uniform(), brightness = 0.5 + rng.uniform();
    float *px = cube.data() + p * o.bands;
    for (size_t u = 0; u < o.bands; ++u)
      px[u] = float(brightness * (mix * refs.spectrum(a)[u] + (1 - mix) * refs.spectrum(b)[u]) +
                    0.01 * (rng.uniform() - 0.5));
  }
  return cube;
}

std::vector<int16_t> to_i16(const std::vector<float> &cube) {
  std::vector<int16_t> out(cube.size());
  for (size_t i = 0; i < cube.size(); ++i)
    out[i] = int16_t(std::lround(std::clamp(cube[i] * kI16Scale, -32768.0f, 32767.0f)));
  return out;
}

EnviHeader cube_header(const Options &o, DataType type, size_t lines, ByteOrder order = ByteOrder::little_endian) {
  EnviHeader h;
  h.samples = o.samples;
  h.lines = lines;
  h.bands = o.bands;
  h.data_type = type;
  h.interleave = Interleave::bip;
  h.byte_order = order;
  // i16 holds reflectance x 1e4, and says so as such products do: every method then compares the cube with the
  // library in reflectance (without it, euclidean's distances of ~1e4-unit pixels from ~0.5 references tie in
  // their float scores: 3245 pixels of the generic tensor kernel's class map differed from the screen's).
  if (type == DataType::i16) h.reflectance_scale_factor = kI16Scale;
  h.data_ignore_value = o.ignore_value;
  return h;
}

// The same samples stored big-endian (as many ENVI files are).
template <class Sample>
std::vector<Sample> byte_swapped(const std::vector<Sample> &samples) {
  std::vector<Sample> out(samples.size());
  for (size_t i = 0; i < samples.size(); ++i) {
    unsigned char bytes[sizeof(Sample)];
    std::memcpy(bytes, &samples[i], sizeof(Sample));
    std::reverse(bytes, bytes + sizeof(Sample));
    std::memcpy(&out[i], bytes, sizeof(Sample));
  }
  return out;
}

std::vector<int> all_bands(size_t bands) {
  std::vector<int> b(bands);
  for (size_t i = 0; i < bands; ++i) b[i] = int(i);
  return b;
}

const char *precision_name(Precision p) {
  return p == Precision::exact ? "exact" : (p == Precision::fast ? "fast" : "tensor");
}

const char *kernel_name(CudaSpectralClassifier::Kernel kernel) {
  switch (kernel) {
    case CudaSpectralClassifier::Kernel::per_pixel: return "per-pixel";
    case CudaSpectralClassifier::Kernel::tensor: return "tensor";
    case CudaSpectralClassifier::Kernel::tensor_bip: return "tensor-bip";
  }
  return "?";
}

// Median kernel time of classifying the device-resident cube, ms; `kernel`
// receives the kernel that ran. `bip_tensor`: false runs the generic tensor
// kernel where the specialised BIP one would fit (for the comparison).
// `labels` receives the class map (to compare the two tensor kernels).
double device_classify_ms(const SpectralClassifier &classifier, const EnviHeader &h, const void *d_cube, int repeats,
                          bool bip_tensor, CudaSpectralClassifier::Kernel &kernel, std::vector<uint8_t> &labels) {
  CudaSpectralClassifier gpu(classifier, kDevice);
  gpu.set_bip_tensor_enabled(bip_tensor);
  DeviceArray map(h.samples * h.lines * class_map_bytes_per_pixel(classifier.class_map_format()));
  ClassificationOutput out;
  out.class_map = map.get();
  out.class_map_format = classifier.class_map_format();
  const CubeBlock block = make_cube_block(h, d_cube, h.lines);
  kernel = gpu.kernel_for(block);
  static bool said = false;
  static unsigned screened_said = 0;  // methods by bit, f32 and 16-bit blocks apart
  if (kernel == CudaSpectralClassifier::Kernel::tensor_bip && !said) {
    std::printf("tensor-bip runs the %s product\n", gpu.bip_tensor_product());
    said = true;
  }
  const unsigned method_bit = 1u << (int(classifier.method()) + 8 * (block.format.type == DataType::f32 ? 0 : 1));
  if (gpu.screens(block, out) && !(screened_said & method_bit)) {
    std::printf("tensor-bip screens %s blocks for %s (CS_HSI_BIP_SCREEN=0 turns it off)\n",
                data_type_name(block.format.type), method_name(classifier.method()));
    screened_said |= method_bit;
  }
  cs::Stream stream(kDevice);
  const double ms = bench::queued_ms(stream.get(), kDevice, repeats, [&] { gpu.classify(block, out, stream.get()); });
  labels.resize(h.samples * h.lines * class_map_bytes_per_pixel(classifier.class_map_format()));
  cs::copy_async(labels.data(), map.get(), labels.size(), stream.get());
  stream.synchronize();
  return ms;
}

// CPU classifier (every core) on the first `crop` lines, seconds.
double cpu_classify_seconds(const SpectralClassifier &classifier, const EnviHeader &crop_header, const void *data) {
  std::vector<uint8_t> map(crop_header.samples * crop_header.lines * 2);
  ClassificationOutput out;
  out.class_map = map.data();
  out.class_map_format = classifier.class_map_format();
  const auto t0 = Clock::now();
  classifier.classify(make_cube_block(crop_header, data, crop_header.lines), out);
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Device-to-device copy of `bytes`: GB/s of memory traffic (read + write).
double device_copy_gbps(size_t bytes, int repeats) {
  DeviceArray a(bytes), b(bytes);
  cs::Stream s(kDevice);
  cs::memset_async(a.get(), 1, bytes, s.get());
  const double ms =
      bench::queued_ms(s.get(), kDevice, repeats, [&] { cs::copy_async(b.get(), a.get(), bytes, s.get()); });
  return 2.0 * double(bytes) / (ms / 1e3) / 1e9;
}

// cudaMemcpyAsync host -> device from page-locked memory, `bytes` per copy.
double pinned_h2d_gbps(size_t bytes, int copies) {
  DeviceArray d(bytes);
  void *h = cs::pinned_alloc(bytes);
  std::memset(h, 0x3c, bytes);
  cs::Stream s(kDevice);
  cs::copy_async(d.get(), h, bytes, s.get());
  Timer timer;
  timer.start(s.get());
  for (int i = 0; i < copies; ++i) cs::copy_async(d.get(), h, bytes, s.get());
  const double ms = timer.stop_ms(s.get());
  cs::pinned_free(h);
  return double(bytes) * copies / (ms / 1e3) / 1e9;
}

using bench::LastBuffer;

[[noreturn]] void die(const std::string &what) {
  std::fprintf(stderr, "hsi_bench: %s\n", what.c_str());
  std::exit(1);
}

// Pops an error from the bus, if any, as text.
std::string bus_error(GstBus *bus) {
  GstMessage *msg = gst_bus_pop_filtered(bus, GST_MESSAGE_ERROR);
  if (!msg) return "";
  GError *err = nullptr;
  gchar *debug = nullptr;
  gst_message_parse_error(msg, &err, &debug);
  std::string text = std::string(err ? err->message : "?") + " (" + (debug ? debug : "") + ")";
  g_clear_error(&err);
  g_free(debug);
  gst_message_unref(msg);
  return text;
}

// Streams `cubes` passes over the cube (host memory at `data`, blocks of
// `block_lines` lines wrapped without copying) through `chain`, and returns
// GB/s of cube delivered from the first timed push until the last class map
// is complete on the device. One pass first, untimed, for negotiation, the
// reference table and the first allocations.
double stream_gbps(const Options &o, const std::string &caps, const std::string &chain, const uint8_t *data,
                   size_t line_bytes, int cubes) {
  const std::string launch = "appsrc name=src format=time max-bytes=0 block=true caps=\"" + caps + "\" ! " + chain +
                             " ! fakesink name=sink sync=false";
  GError *error = nullptr;
  GstElement *pipeline = gst_parse_launch(launch.c_str(), &error);
  if (!pipeline || error) die("pipeline " + launch + ": " + (error ? error->message : "?"));
  GstElement *src = gst_bin_get_by_name(GST_BIN(pipeline), "src");
  GstElement *sink = gst_bin_get_by_name(GST_BIN(pipeline), "sink");
  g_object_set(src, "max-buffers", guint64(4), nullptr);
  LastBuffer last;
  GstPad *sinkpad = gst_element_get_static_pad(sink, "sink");
  gst_pad_add_probe(sinkpad, GST_PAD_PROBE_TYPE_BUFFER, LastBuffer::probe, &last, nullptr);
  gst_element_set_state(pipeline, GST_STATE_PLAYING);
  GstBus *bus = gst_element_get_bus(pipeline);
  const size_t blocks = (o.lines + o.block_lines - 1) / o.block_lines;
  auto push_cube = [&]() {
    for (size_t b = 0; b < blocks; ++b) {
      const size_t first = b * o.block_lines, count = std::min(o.block_lines, o.lines - first);
      GstBuffer *buf = gst_buffer_new_wrapped_full(GST_MEMORY_FLAG_READONLY, const_cast<uint8_t *>(data),
                                                   o.lines * line_bytes, first * line_bytes, count * line_bytes,
                                                   nullptr, nullptr);
      if (gst_app_src_push_buffer(GST_APP_SRC(src), buf) != GST_FLOW_OK) die(chain + ": push refused: " + bus_error(bus));
    }
  };
  auto wait_for = [&](gint count) {
    for (int waited_ms = 0; g_atomic_int_get(&last.seen) < count; ++waited_ms) {
      const std::string err = bus_error(bus);
      if (!err.empty()) die(chain + ": " + err);
      if (waited_ms > 120000) die(chain + ": no output within 120 s");
      g_usleep(1000);
    }
    GstMemory *mem = gst_buffer_peek_memory(last.buffer, 0);
    if (gst_is_cs_memory(mem)) cs::event_synchronize(gst_cs_memory_get_ready_event(mem));
  };
  push_cube();
  wait_for(gint(blocks));
  const auto t0 = Clock::now();
  for (int c = 0; c < cubes; ++c) push_cube();
  wait_for(gint(blocks) * (cubes + 1));
  const double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  gst_app_src_end_of_stream(GST_APP_SRC(src));
  GstMessage *msg = gst_bus_timed_pop_filtered(bus, 60 * GST_SECOND, GstMessageType(GST_MESSAGE_EOS | GST_MESSAGE_ERROR));
  if (msg) gst_message_unref(msg);
  gst_buffer_unref(last.buffer);
  gst_element_set_state(pipeline, GST_STATE_NULL);
  gst_object_unref(bus);
  gst_object_unref(sinkpad);
  gst_object_unref(src);
  gst_object_unref(sink);
  gst_object_unref(pipeline);
  return double(o.lines * line_bytes) * cubes / seconds / 1e9;
}

// Writes `bytes` of BIP cube as a little-endian ENVI image in /tmp; returns the header's path (the data file is
// the same path without ".hdr").
std::string write_envi_cube(const Options &o, DataType type, const void *data, size_t bytes) {
  char path[] = "/tmp/hsi-bench-XXXXXX";
  const int fd = mkstemp(path);
  if (fd < 0) die("cannot create a temporary cube file");
  FILE *f = fdopen(fd, "wb");
  if (std::fwrite(data, 1, bytes, f) != bytes) die(std::string("cannot write ") + path);
  std::fclose(f);
  const std::string header = std::string(path) + ".hdr";
  FILE *h = std::fopen(header.c_str(), "w");
  if (!h) die("cannot write " + header);
  std::fprintf(h, "ENVI\nsamples = %zu\nlines = %zu\nbands = %zu\nheader offset = 0\nfile type = ENVI Standard\n"
               "data type = %d\ninterleave = bip\nbyte order = 0\n", o.samples, o.lines, o.bands, int(type));
  if (type == DataType::i16) std::fprintf(h, "reflectance scale factor = %g\n", double(kI16Scale));
  std::fclose(h);
  return header;
}

// `envisrc location=header source_settings ! chain ! fakesink`: GB/s of the
// cube (`bytes`) after its first block, per run, sorted (bench::source_run_seconds).
std::vector<double> file_stream_gbps(const Options &o, const std::string &header, const std::string &source_settings,
                                     const std::string &chain, size_t bytes, int runs) {
  const std::string source = "envisrc location=\"" + header + "\" lines-per-buffer=" +
                             std::to_string(o.block_lines) + " " + source_settings;
  const double timed_bytes = double(bytes) * double(o.lines - o.block_lines) / double(o.lines);
  std::vector<double> gbps;
  for (double seconds : bench::source_run_seconds(source, chain, runs)) gbps.push_back(timed_bytes / seconds / 1e9);
  std::sort(gbps.begin(), gbps.end());
  return gbps;
}

// The cube as ENVI files through envisrc (section "from a file").
void stream_from_files(const Options &o, const std::vector<float> &cube_f32, const std::vector<int16_t> &cube_i16,
                       const std::string &library, FILE *csv) {
  std::printf("\nfrom a file: envisrc (blocks of %zu lines, the file in the page cache) ! CHAIN ! fakesink, "
              "first block out to last output complete; median (low-high) of %d runs\n", o.block_lines, o.stream_cubes);
  std::printf("%-4s %-52s | %9s %17s %6s\n", "fmt", "envisrc settings: chain", "GB/s", "low-high", "%H2D");
  // "system memory": the blocks in system memory, as from a source that ignores the allocator gpuupload
  // offers (identity keeps the ALLOCATION query from reaching envisrc), so gpuupload stages them.
  struct Row {
    const char *label, *source, *method;
    bool system;
  };
  const Row rows[] = {{"read-threads=1: (envisrc alone)", "read-threads=1", "", false},
                      {"(envisrc alone)", "", "", false},
                      {"read-threads=16: (envisrc alone)", "read-threads=16", "", false},
                      {"read-threads=1: gpuupload ! hsiclassify sam", "read-threads=1", "sam", false},
                      {"gpuupload ! hsiclassify sam", "", "sam", false},
                      {"read-threads=16: gpuupload ! hsiclassify sam", "read-threads=16", "sam", false},
                      {"gpuupload ! hsiclassify euclidean", "", "euclidean", false},
                      {"system memory: gpuupload ! hsiclassify sam", "", "sam", true}};
  for (DataType type : {DataType::f32, DataType::i16}) {
    const bool f32 = type == DataType::f32;
    const size_t line_bytes = o.samples * o.bands * sample_size(type), bytes = o.lines * line_bytes;
    const double h2d = pinned_h2d_gbps(o.block_lines * line_bytes, 64);
    const std::string header = write_envi_cube(
        o, type, f32 ? static_cast<const void *>(cube_f32.data()) : static_cast<const void *>(cube_i16.data()), bytes);
    for (const Row &row : rows) {
      const std::string chain = *row.method ? std::string(row.system ? "identity drop-allocation=true ! " : "") +
                                                  "gpuupload backend=cuda ! hsiclassify backend=cuda method=" +
                                                  row.method + " precision=tensor library=" + library
                                            : std::string();
      const std::vector<double> gbps = file_stream_gbps(o, header, row.source, chain, bytes, o.stream_cubes);
      const double median = gbps[gbps.size() / 2];
      std::printf("%-4s %-52s | %9.1f %8.1f-%-8.1f %5.0f%%\n", data_type_name(type), row.label, median, gbps.front(),
                  gbps.back(), 100 * median / h2d);
      if (csv)
        std::fprintf(csv, "file,%s,%s,tensor,\"%s\",,%.2f,%.1f,%.2f\n", data_type_name(type),
                     *row.method ? row.method : "read", row.label, median, 100 * median / h2d, h2d);
    }
    std::remove(header.c_str());
    std::remove(header.substr(0, header.size() - 4).c_str());
  }
  std::printf("H2D = cudaMemcpyAsync from page-locked memory, %zu-line blocks, same run\n", o.block_lines);
}

// The references as a CSV library (no wavelengths on the stream: channel i
// is band i).
std::string write_library_csv(const ReferenceSet &refs) {
  char path[] = "/tmp/hsi-bench-XXXXXX.csv";
  const int fd = mkstemps(path, 4);
  if (fd < 0) die("cannot create a temporary library file");
  FILE *f = fdopen(fd, "w");
  std::fprintf(f, "wavelength (nm)");
  for (const std::string &name : refs.names) std::fprintf(f, ", %s", name.c_str());
  std::fprintf(f, "\n");
  for (size_t u = 0; u < refs.bands; ++u) {
    std::fprintf(f, "%zu", 400 + 10 * u);
    for (size_t k = 0; k < refs.count(); ++k) std::fprintf(f, ", %.9g", refs.spectrum(k)[u]);
    std::fprintf(f, "\n");
  }
  std::fclose(f);
  return path;
}

// Seconds per cube of spectral.spectral_angles, from the Python script; NaN
// (with the reason printed) when it cannot run.
double spectral_python_seconds(const Options &o) {
  const char *root = std::getenv("CS_SOURCE_ROOT");
  const std::string script = std::string(root && *root ? root : ".") + "/tests/bench/hsi_bench_spectral.py";
  const std::string cmd = o.python + " '" + script + "' --samples " + std::to_string(o.samples) + " --lines " +
                          std::to_string(o.lines) + " --bands " + std::to_string(o.bands) + " --references " +
                          std::to_string(o.references) + " 2>&1";
  FILE *p = popen(cmd.c_str(), "r");
  if (!p) return NAN;
  std::string output;
  char line[512];
  double seconds = NAN;
  while (std::fgets(line, sizeof line, p)) {
    output += line;
    std::sscanf(line, "seconds_per_cube %lf", &seconds);
  }
  const int rc = pclose(p);
  if (rc != 0 || std::isnan(seconds)) std::printf("Spectral Python not timed: %s", output.c_str());
  return rc == 0 ? seconds : NAN;
}

Options parse(int argc, char **argv) {
  Options o;
  auto number = [&](int &i) {
    if (i + 1 >= argc) die(std::string(argv[i]) + " needs a value");
    char *end = nullptr;
    const long v = std::strtol(argv[++i], &end, 10);
    if (*end || v <= 0) die(std::string(argv[i - 1]) + ": '" + argv[i] + "' is not a positive number");
    return size_t(v);
  };
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--samples") o.samples = number(i);
    else if (a == "--lines") o.lines = number(i);
    else if (a == "--bands") o.bands = number(i);
    else if (a == "--references") o.references = number(i);
    else if (a == "--block") o.block_lines = number(i);
    else if (a == "--crop") o.crop_lines = number(i);
    else if (a == "--repeats") o.repeats = int(number(i));
    else if (a == "--stream-cubes") o.stream_cubes = int(number(i));
    else if (a == "--python" && i + 1 < argc) o.python = argv[++i];
    else if (a == "--no-python") o.run_python = false;
    else if (a == "--csv" && i + 1 < argc) o.csv = argv[++i];
    else if (a == "--tensor-only") o.tensor_only = true;
    else if (a == "--file-only") o.file_only = true;
    else if (a == "--ignore-value" && i + 1 < argc) {
      char *end = nullptr;
      o.ignore_value = std::strtod(argv[++i], &end);
      if (end == argv[i] || *end || !std::isfinite(*o.ignore_value))
        die(std::string("--ignore-value: '") + argv[i] + "' is no number");
    } else {
      std::fprintf(stderr,
                   "usage: %s [--samples 1024] [--lines 1024] [--bands 224] [--references 64] [--block 64] "
                   "[--crop 16] [--repeats 5] [--stream-cubes 3] [--python PATH] [--no-python] [--csv FILE] "
                   "[--tensor-only] [--file-only] [--ignore-value V]\n",
                   argv[0]);
      std::exit(2);
    }
  }
  if (o.bands < 3) die("--bands: at least 3 (bandfit needs them)");
  o.crop_lines = std::min(o.crop_lines, o.lines);
  o.block_lines = std::min(o.block_lines, o.lines);
  return o;
}

}  // namespace

int main(int argc, char **argv) {
  gst_init(&argc, &argv);
  setvbuf(stdout, nullptr, _IOLBF, 0);
  const Options o = parse(argc, argv);
  if (cs::device_count() == 0) {
    std::printf("no CUDA device (%s): nothing to measure\n", cs::no_device_reason().c_str());
    return 0;
  }
  FILE *csv = o.csv ? std::fopen(o.csv, "w") : nullptr;
  if (o.csv && !csv) die(std::string("cannot write ") + o.csv);
  if (csv) std::fprintf(csv, "section,format,method,precision,memory,seconds,gbps,percent_of,reference_gbps\n");
  std::printf("device 0: %s\n", cs::device_name(kDevice).c_str());
  std::printf("cube %zu x %zu x %zu (samples x lines x bands), %zu references, BIP\n", o.samples, o.lines, o.bands,
              o.references);
  std::printf("tensor-bip product asked for: %s (CS_HSI_BIP_KERNEL)\n",
              cs::hsi::bip_tensor::product_name(cs::hsi::bip_tensor::product_from_environment()));

  Random rng(0x5eed0fc0ffeeull);
  const ReferenceSet refs = make_references(o, rng);
  const std::vector<float> cube_f32 = make_cube(o, refs, rng);
  const std::vector<int16_t> cube_i16 = to_i16(cube_f32);
  const size_t pixels = o.samples * o.lines;
  if (o.ignore_value) {
    const double v = *o.ignore_value;
    const size_t in_f32 = size_t(std::count(cube_f32.begin(), cube_f32.end(), float(v)));
    const size_t in_i16 = size_t(std::count_if(cube_i16.begin(), cube_i16.end(), [&](int16_t s) { return s == v; }));
    std::printf("data ignore value %g: held by %zu f32 and %zu i16 samples\n", v, in_f32, in_i16);
  }
  if (o.file_only) {
    const std::string library = write_library_csv(refs);
    stream_from_files(o, cube_f32, cube_i16, library, csv);
    std::remove(library.c_str());
    if (csv) std::fclose(csv);
    return 0;
  }
  const double copy_gbps = device_copy_gbps(cube_f32.size() * sizeof(float), o.repeats);
  std::printf("device-to-device copy of the f32 cube: %.0f GB/s of traffic (read + write); HBM nominal %.0f GB/s\n",
              copy_gbps, kNominalHbmGBps);
  if (csv) std::fprintf(csv, "copy,f32,,,device,,%.1f,,%.1f\n", copy_gbps, kNominalHbmGBps);

  // --- device-resident, and the CPU on a crop ---
  std::printf("\n%-5s %-12s %-6s %-10s | %9s %9s %6s %6s | %10s %9s\n", "fmt", "method", "prec", "kernel", "GPU ms",
              "GB/s", "%HBM", "%copy", "CPU s/cube", "GPU/CPU");
  double sam_exact_f32_seconds = NAN, sam_tensor_f32_seconds = NAN;
  // f32be, i16be: the cubes stored big-endian, tensor precision only (the BIP kernels swap the samples' bytes
  // where they read them).
  for (const std::string format : {"f32", "i16", "f32be", "i16be"}) {
    const bool big = format.size() > 3;
    const DataType type = format.compare(0, 3, "f32") == 0 ? DataType::f32 : DataType::i16;
    const bool f32 = type == DataType::f32 && !big;  // the reference rows
    std::vector<float> f32_big;
    std::vector<int16_t> i16_big;
    if (big && type == DataType::f32) f32_big = byte_swapped(cube_f32);
    if (big && type == DataType::i16) i16_big = byte_swapped(cube_i16);
    const void *host = type == DataType::f32 ? static_cast<const void *>(big ? f32_big.data() : cube_f32.data())
                                             : static_cast<const void *>(big ? i16_big.data() : cube_i16.data());
    const size_t bytes = pixels * o.bands * sample_size(type);
    DeviceArray d_cube(bytes);
    {
      cs::Stream s(kDevice);
      cs::copy_async(d_cube.get(), host, bytes, s.get());
      s.synchronize();
    }
    const ByteOrder order = big ? ByteOrder::big_endian : ByteOrder::little_endian;
    const EnviHeader h = cube_header(o, type, o.lines, order), crop = cube_header(o, type, o.crop_lines, order);
    std::vector<uint8_t> labels, bip_labels, exact_labels;
    for (Method method : kAllMethods)
      for (Precision precision : {Precision::exact, Precision::fast, Precision::tensor})
        // tensor twice: the specialised BIP kernel, then the generic one for comparison
        for (bool bip_tensor : {true, false}) {
          if (!bip_tensor && precision != Precision::tensor) continue;
          if ((o.tensor_only || big) && precision != Precision::tensor) continue;
          ClassifierConfig config;
          config.method = method;
          config.precision = precision;
          config.threshold = default_threshold(method);
          const SpectralClassifier classifier(config, refs, all_bands(o.bands));
          CudaSpectralClassifier::Kernel kernel;
          const double ms = device_classify_ms(classifier, h, d_cube.get(), o.repeats, bip_tensor, kernel, labels);
          if (precision == Precision::tensor && bip_tensor) bip_labels = labels;
          if (precision == Precision::exact) exact_labels = labels;
          const double gbps = double(bytes) / (ms / 1e3) / 1e9;
          // the CPU has one tensor figure (it runs tensor as fast): timed once
          const bool time_cpu = bip_tensor && !o.tensor_only && !big;
          const double cpu_s =
              time_cpu ? cpu_classify_seconds(classifier, crop, host) * double(o.lines) / double(o.crop_lines) : NAN;
          if (f32 && method == Method::sam && precision == Precision::exact) sam_exact_f32_seconds = ms / 1e3;
          if (f32 && method == Method::sam && precision == Precision::tensor && bip_tensor)
            sam_tensor_f32_seconds = ms / 1e3;
          std::printf("%-5s %-12s %-6s %-10s | %9.2f %9.0f %5.1f%% %5.1f%% | %10.2f %8.0fx\n", format.c_str(),
                      method_name(method), precision_name(precision), kernel_name(kernel), ms, gbps,
                      100 * gbps / kNominalHbmGBps, 100 * gbps / copy_gbps, cpu_s, cpu_s / (ms / 1e3));
          if (precision == Precision::tensor && !bip_tensor) {
            // The two tensor kernels sum in different windows: only near-ties may differ.
            size_t differ = 0, bip_from_exact = 0, generic_from_exact = 0;
            for (size_t i = 0; i < labels.size(); ++i) differ += labels[i] != bip_labels[i];
            std::printf("     class maps of tensor-bip and tensor differ at %zu of %zu pixels", differ, pixels);
            if (exact_labels.size() == labels.size()) {
              for (size_t i = 0; i < labels.size(); ++i) {
                bip_from_exact += bip_labels[i] != exact_labels[i];
                generic_from_exact += labels[i] != exact_labels[i];
              }
              std::printf("; from exact's at %zu and %zu", bip_from_exact, generic_from_exact);
            }
            std::printf("\n");
          }
          if (csv) {
            std::fprintf(csv, "device,%s,%s,%s%s,device,%.6f,%.1f,%.2f,%.1f\n", format.c_str(),
                         method_name(method), precision_name(precision), bip_tensor ? "" : "-generic", ms / 1e3, gbps,
                         100 * gbps / copy_gbps, copy_gbps);
            if (bip_tensor)
              std::fprintf(csv, "cpu,%s,%s,%s,host,%.6f,%.3f,,\n", format.c_str(), method_name(method),
                           precision_name(precision), cpu_s, double(bytes) / cpu_s / 1e9);
          }
        }
  }
  std::printf("GB/s = cube bytes / kernel time; %%copy = of the device copy's traffic above; CPU: %zu lines, scaled\n",
              o.crop_lines);
  if (o.tensor_only) {
    if (csv) std::fclose(csv);
    return 0;
  }

  // --- streamed from host memory ---
  const std::string library = write_library_csv(refs);
  std::printf("\nstreamed: appsrc (blocks of %zu lines) ! gpuupload ! hsiclassify ! fakesink, %d cubes\n",
              o.block_lines, o.stream_cubes);
  std::printf("%-4s %-12s %-6s %-9s | %9s %9s %6s\n", "fmt", "method", "prec", "host mem", "GB/s", "H2D", "%H2D");
  for (DataType type : {DataType::f32, DataType::i16}) {
    const bool f32 = type == DataType::f32;
    const size_t line_bytes = o.samples * o.bands * sample_size(type), bytes = o.lines * line_bytes;
    const auto *pageable = f32 ? reinterpret_cast<const uint8_t *>(cube_f32.data())
                               : reinterpret_cast<const uint8_t *>(cube_i16.data());
    auto *pinned = static_cast<uint8_t *>(cs::pinned_alloc(bytes));
    std::memcpy(pinned, pageable, bytes);
    const double h2d = pinned_h2d_gbps(o.block_lines * line_bytes, 64);
    const std::string caps = std::string("application/x-hyperspectral, samples=(int)") + std::to_string(o.samples) +
                             ", bands=(int)" + std::to_string(o.bands) + ", interleave=(string)bip, format=(string)" +
                             data_type_name(type) + ", endianness=(int)1234, block-lines=(int)" +
                             std::to_string(o.block_lines) +
                             (f32 ? "" : ", reflectance-scale-factor=(double)" + std::to_string(double(kI16Scale)));
    for (Method method : kAllMethods)
      for (Precision precision : {Precision::exact, Precision::fast, Precision::tensor})
        for (bool page_locked : {true, false}) {
          // every precision for sam and euclidean; the other methods with tensor
          if (precision != Precision::tensor && method != Method::sam && method != Method::euclidean) continue;
          const std::string chain = std::string("gpuupload backend=cuda ! hsiclassify backend=cuda method=") +
                                    method_name(method) + " precision=" + precision_name(precision) + " library=" +
                                    library;
          const double gbps = stream_gbps(o, caps, chain, page_locked ? pinned : pageable, line_bytes, o.stream_cubes);
          std::printf("%-4s %-12s %-6s %-9s | %9.1f %9.1f %5.0f%%\n", data_type_name(type), method_name(method),
                      precision_name(precision), page_locked ? "pinned" : "pageable", gbps, h2d, 100 * gbps / h2d);
          if (csv)
            std::fprintf(csv, "stream,%s,%s,%s,%s,,%.2f,%.1f,%.2f\n", data_type_name(type), method_name(method),
                         precision_name(precision), page_locked ? "pinned" : "pageable", gbps, 100 * gbps / h2d, h2d);
        }
    cs::pinned_free(pinned);
  }
  std::printf("H2D = cudaMemcpyAsync from page-locked memory, %zu-line blocks, same run\n", o.block_lines);

  stream_from_files(o, cube_f32, cube_i16, library, csv);
  std::remove(library.c_str());

  // --- Spectral Python ---
  if (o.run_python) {
    const double py = spectral_python_seconds(o);
    if (!std::isnan(py)) {
      std::printf("\nSpectral Python spectral_angles: %.2f s per cube; GPU sam f32 (device-resident): exact %.4f s "
                  "-> %.0fx, tensor %.4f s -> %.0fx\n", py, sam_exact_f32_seconds, py / sam_exact_f32_seconds,
                  sam_tensor_f32_seconds, py / sam_tensor_f32_seconds);
      if (csv) {
        std::fprintf(csv, "spectral_python,f32,sam,exact,host,%.4f,,%.1f,\n", py, py / sam_exact_f32_seconds);
        std::fprintf(csv, "spectral_python,f32,sam,tensor,host,%.4f,,%.1f,\n", py, py / sam_tensor_f32_seconds);
      }
    }
  }
  if (csv) std::fclose(csv);
  return 0;
}
