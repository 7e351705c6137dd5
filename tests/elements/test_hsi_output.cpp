// hsicolorize (class map -> RGBA) and envisink (class map -> ENVI
// Classification file), read back with the project's ENVI reader.
#include <gst/check/gstharness.h>
#include <gst/video/video.h>
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <set>
#include <thread>

#include "gst/cudasensing/gstcsmemory.h"
#include "hsi/classifier.h"
#include "hsi/convert.h"
#include "hsi/envi.h"
#include "hsi/references.h"
#include "hsi/spectral_library.h"
#include "play_to_end.h"
#include "test_hsi_support.h"

using namespace cs::hsi;
using hsi_element_test::run_pipeline;
using hsi_element_test::RunResult;
using hsi_element_test::SyntheticCube;
using hsi_element_test::write_small_cube;
using hsi_test::ScratchDir;

namespace {

struct Rgba {
  uint8_t r, g, b, a;
  bool operator<(const Rgba &o) const {
    return std::tie(r, g, b, a) < std::tie(o.r, o.g, o.b, o.a);
  }
  bool operator==(const Rgba &o) const { return r == o.r && g == o.g && b == o.b && a == o.a; }
  bool operator!=(const Rgba &o) const { return !(*this == o); }
};

// Pushes one class map through hsicolorize and returns each pixel's colour.
// `device_caps`: the class map's caps say memory:CudaSensing (as after
// hsiclassify on CUDA); the buffer itself is system memory, which maps alike.
std::vector<Rgba> colorize(const std::vector<uint16_t> &labels, int width, int height, bool wide,
                           const std::string &lookup = "", bool device_caps = false) {
  GstElement *colorize = gst_element_factory_make("hsicolorize", nullptr);
  if (!lookup.empty()) g_object_set(colorize, "lookup", lookup.c_str(), nullptr);  // before it runs
  GstHarness *h = gst_harness_new_with_element(colorize, "sink", "src");
  gst_object_unref(colorize);
  GstVideoInfo in;
  gst_video_info_set_format(&in, wide ? GST_VIDEO_FORMAT_GRAY16_LE : GST_VIDEO_FORMAT_GRAY8, guint(width), guint(height));
  GstCaps *caps = gst_video_info_to_caps(&in);
  if (device_caps) gst_caps_set_features(caps, 0, gst_caps_features_new(GST_CAPS_FEATURE_MEMORY_CS_DEVICE, nullptr));
  gst_harness_set_src_caps(h, caps);
  GstBuffer *buf = gst_buffer_new_allocate(nullptr, GST_VIDEO_INFO_SIZE(&in), nullptr);
  GstMapInfo map;
  gst_buffer_map(buf, &map, GST_MAP_WRITE);
  std::memset(map.data, 0xEE, map.size);  // poison the padding
  const size_t stride = size_t(GST_VIDEO_INFO_PLANE_STRIDE(&in, 0));
  for (int y = 0; y < height; ++y)
    for (int x = 0; x < width; ++x) {
      const uint16_t v = labels[size_t(y * width + x)];
      if (wide) {
        map.data[y * stride + 2 * x] = uint8_t(v);
        map.data[y * stride + 2 * x + 1] = uint8_t(v >> 8);
      } else {
        map.data[y * stride + x] = uint8_t(v);
      }
    }
  gst_buffer_unmap(buf, &map);
  std::vector<Rgba> out;
  if (gst_harness_push(h, buf) != GST_FLOW_OK) {
    ADD_FAILURE() << "push failed";
    gst_harness_teardown(h);
    return out;
  }
  GstBuffer *result = gst_harness_pull(h);
  GstCaps *out_caps = gst_pad_get_current_caps(h->sinkpad);
  GstVideoInfo info;
  EXPECT_TRUE(gst_video_info_from_caps(&info, out_caps));
  EXPECT_EQ(GST_VIDEO_INFO_FORMAT(&info), GST_VIDEO_FORMAT_RGBA);
  EXPECT_EQ(GST_VIDEO_INFO_WIDTH(&info), width);
  EXPECT_EQ(GST_VIDEO_INFO_HEIGHT(&info), height);
  EXPECT_FALSE(gst_cs_caps_has_device_feature(out_caps)) << "colours are system memory";
  gst_buffer_map(result, &map, GST_MAP_READ);
  const size_t out_stride = size_t(GST_VIDEO_INFO_PLANE_STRIDE(&info, 0));
  for (int y = 0; y < height; ++y)
    for (int x = 0; x < width; ++x) {
      const uint8_t *p = map.data + y * out_stride + 4 * x;
      out.push_back({p[0], p[1], p[2], p[3]});
    }
  gst_buffer_unmap(result, &map);
  gst_buffer_unref(result);
  gst_caps_unref(out_caps);  // `caps` went to the harness
  gst_harness_teardown(h);
  return out;
}

}  // namespace

TEST(HsiColorize, FixedPaletteDistinctOpaqueClassZeroBlack) {
  // Every GRAY8 label once, in a 13-pixel-wide map (padded rows).
  std::vector<uint16_t> labels(256 + 4);
  for (size_t i = 0; i < labels.size(); ++i) labels[i] = uint16_t(i % 256);
  const std::vector<Rgba> colours = colorize(labels, 13, 20, false);
  ASSERT_EQ(colours.size(), labels.size());
  EXPECT_EQ(colours[0], (Rgba{0, 0, 0, 255})) << "class 0 (unclassified) is black";
  EXPECT_EQ(colours[1], (Rgba{255, 0, 0, 255})) << "ENVI's first class colours";
  EXPECT_EQ(colours[2], (Rgba{0, 255, 0, 255}));
  EXPECT_EQ(colours[3], (Rgba{0, 0, 255, 255}));
  std::set<Rgba> distinct(colours.begin(), colours.begin() + 256);
  EXPECT_EQ(distinct.size(), 256u) << "every class its own colour";
  for (size_t i = 256; i < labels.size(); ++i) EXPECT_EQ(colours[i], colours[i - 256]) << "same class, same colour";
}

TEST(HsiColorize, Gray16ManyClasses) {
  std::mt19937 rng(cs_test::fresh_seed());
  std::vector<uint16_t> labels(7 * 9);
  for (uint16_t &v : labels) v = uint16_t(rng() % 1100);
  labels[0] = 0;
  labels[1] = 1000;
  const std::vector<Rgba> colours = colorize(labels, 7, 9, true);
  ASSERT_EQ(colours.size(), labels.size());
  EXPECT_EQ(colours[0], (Rgba{0, 0, 0, 255}));
  std::map<uint16_t, Rgba> seen;
  for (size_t i = 0; i < labels.size(); ++i) {
    auto [it, fresh] = seen.emplace(labels[i], colours[i]);
    EXPECT_EQ(it->second, colours[i]);
    EXPECT_EQ(colours[i].a, 255);
  }
  EXPECT_EQ(colours[1], colorize({1000}, 1, 1, true)[0]);
  EXPECT_NE(colours[1], colorize({999}, 1, 1, true)[0]);
}

// Class maps negotiated in device memory are accepted and give the same
// colours; the RGBA output is system memory for pngenc and display sinks.
TEST(HsiColorize, DeviceMemoryCapsGiveSameColoursInSystemMemory) {
  std::mt19937 rng(cs_test::fresh_seed());
  std::vector<uint16_t> labels(9 * 5);
  for (uint16_t &v : labels) v = uint16_t(rng() % 40);
  EXPECT_EQ(colorize(labels, 9, 5, false, "", true), colorize(labels, 9, 5, false));
  EXPECT_EQ(colorize(labels, 9, 5, true, "", true), colorize(labels, 9, 5, true));
}

TEST(HsiColorize, ClassLookupFromEnviHeader) {
  ScratchDir dir;
  hsi_test::write_text(dir.file("c.hdr"), "ENVI\nsamples = 1\nlines = 1\nbands = 1\ndata type = 1\n"
                                          "file type = ENVI Classification\nclasses = 3\n"
                                          "class lookup = {\n  10, 20, 30,\n 40, 50, 60,\n 70, 80, 90}\n");
  const std::vector<Rgba> colours = colorize({0, 1, 2, 3}, 4, 1, false, dir.file("c.hdr"));
  ASSERT_EQ(colours.size(), 4u);
  EXPECT_EQ(colours[0], (Rgba{10, 20, 30, 255}));
  EXPECT_EQ(colours[1], (Rgba{40, 50, 60, 255}));
  EXPECT_EQ(colours[2], (Rgba{70, 80, 90, 255}));
  EXPECT_EQ(colours[3], (Rgba{0, 0, 255, 255})) << "classes beyond the lookup: the fixed palette (class 3 blue)";
}

TEST(HsiColorize, BadLookupIsAnElementError) {
  ScratchDir dir;
  hsi_test::write_text(dir.file("c.hdr"), "ENVI\nsamples = 1\nlines = 1\nbands = 1\ndata type = 1\n"
                                          "class lookup = {0, 0, 0, 300, 1}\n");
  GstElement *colorize = gst_element_factory_make("hsicolorize", nullptr);
  g_object_set(colorize, "lookup", dir.file("c.hdr").c_str(), nullptr);
  GstHarness *h = gst_harness_new_with_element(colorize, "sink", "src");
  gst_object_unref(colorize);
  gst_harness_set_src_caps_str(h, "video/x-raw, format=GRAY8, width=4, height=1, framerate=0/1");
  GstBuffer *buf = gst_buffer_new_allocate(nullptr, 4, nullptr);
  gst_buffer_memset(buf, 0, 1, 4);
  EXPECT_NE(gst_harness_push(h, buf), GST_FLOW_OK);
  gst_harness_teardown(h);
}

// A lookup that names a directory says so (a directory opens as a stream of
// 2^63 - 1 bytes).
TEST(HsiColorize, LookupThatIsADirectorySaysSo) {
  ScratchDir dir;
  GstElement *colorize = gst_element_factory_make("hsicolorize", nullptr);
  g_object_set(colorize, "lookup", dir.path().c_str(), nullptr);
  GstHarness *h = gst_harness_new_with_element(colorize, "sink", "src");
  gst_object_unref(colorize);
  GstBus *bus = gst_bus_new();
  gst_element_set_bus(h->element, bus);
  gst_harness_set_src_caps_str(h, "video/x-raw, format=GRAY8, width=4, height=1, framerate=0/1");
  GstBuffer *buf = gst_buffer_new_allocate(nullptr, 4, nullptr);
  gst_buffer_memset(buf, 0, 1, 4);
  EXPECT_NE(gst_harness_push(h, buf), GST_FLOW_OK);
  GstMessage *msg = gst_bus_pop_filtered(bus, GST_MESSAGE_ERROR);
  gchar *debug = nullptr;
  if (msg) gst_message_parse_error(msg, nullptr, &debug);
  const std::string text = debug ? debug : "";
  g_free(debug);
  if (msg) gst_message_unref(msg);
  EXPECT_NE(text.find("is a directory"), std::string::npos) << text;
  gst_element_set_bus(h->element, nullptr);
  gst_object_unref(bus);
  gst_harness_teardown(h);
}

// --- envisink ---

namespace {

// A 6-band f32 cube whose pixels are multiples of three CSV references, with
// some no-data pixels: known classes. Returns the expected labels.
std::vector<uint8_t> write_known_scene(const ScratchDir &dir, size_t samples, size_t lines,
                                       const std::string &extra_header = "") {
  const double refs[3][6] = {{0.1, 0.2, 0.3, 0.4, 0.5, 0.6}, {0.6, 0.5, 0.4, 0.3, 0.2, 0.1},
                             {0.2, 0.8, 0.2, 0.8, 0.2, 0.8}};
  std::string csv = "wavelength (nm), grass, bare soil, stripes\n";
  const int wl[6] = {450, 550, 650, 750, 850, 950};
  for (int b = 0; b < 6; ++b)
    csv += std::to_string(wl[b]) + ", " + std::to_string(refs[0][b]) + ", " + std::to_string(refs[1][b]) + ", " +
           std::to_string(refs[2][b]) + "\n";
  hsi_test::write_text(dir.file("lib.csv"), csv);
  SyntheticCube cube;
  cube.samples = samples;
  cube.lines = lines;
  cube.bands = 6;
  cube.interleave = Interleave::bil;
  cube.extra = "wavelength = {450, 550, 650, 750, 850, 950}\nwavelength units = nm\n" + extra_header;
  std::mt19937 rng(cs_test::fresh_seed());
  std::vector<float> values(samples * lines * 6);
  std::vector<uint8_t> expected(samples * lines);
  for (size_t l = 0; l < lines; ++l)
    for (size_t s = 0; s < samples; ++s) {
      const size_t k = rng() % 3;
      const bool nan = rng() % 5 == 0;
      const float scale = float(1 + rng() % 50);
      expected[l * samples + s] = nan ? 0 : uint8_t(k + 1);
      for (size_t b = 0; b < 6; ++b)
        values[cube.index(l, s, b)] = nan && b == 3 ? std::nanf("") : float(refs[k][b]) * scale;
    }
  std::vector<uint8_t> data(values.size() * 4);
  std::memcpy(data.data(), values.data(), data.size());
  cube.write(dir.file("scene"), data);
  return expected;
}

}  // namespace

// A pipe (or a device such as /dev/null) takes the class map's bytes and no
// header is written beside it.
TEST(EnviSink, PipeTakesTheDataAndNoHeader) {
  ScratchDir dir;
  const size_t samples = 11, lines = 9;
  const std::vector<uint8_t> expected = write_known_scene(dir, samples, lines);
  const std::string fifo = dir.file("classes.img");
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0) << g_strerror(errno);
  std::vector<uint8_t> drained;
  std::thread reader([&] {
    std::ifstream in(fifo, std::ios::binary);
    drained.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  });
  const RunResult r = run_pipeline("envisrc location=" + dir.file("scene.hdr") +
                                   " lines-per-buffer=4 ! hsiclassify backend=cpu library=" + dir.file("lib.csv") +
                                   " ! tee name=t ! queue ! envisink location=" + fifo +
                                   " t. ! queue ! appsink name=sink");
  // Should the sink never have opened the pipe, a writer of our own lets the reader's open return.
  if (const int writer = open(fifo.c_str(), O_WRONLY | O_NONBLOCK); writer >= 0) close(writer);
  reader.join();
  ASSERT_TRUE(r.error.empty()) << r.everything();
  EXPECT_EQ(drained, expected);
  EXPECT_FALSE(std::filesystem::exists(dir.file("classes.hdr")));
}

TEST(EnviSink, WritesClassificationThatReadsBack) {
  ScratchDir dir;
  const size_t samples = 11, lines = 9;
  const std::vector<uint8_t> expected = write_known_scene(dir, samples, lines);
  const RunResult r = run_pipeline("envisrc location=" + dir.file("scene.hdr") +
                                   " lines-per-buffer=4 ! hsiclassify backend=cpu library=" + dir.file("lib.csv") +
                                   " ! tee name=t ! queue ! envisink location=" + dir.file("classes.img") +
                                   " t. ! queue ! appsink name=sink");
  ASSERT_TRUE(r.error.empty()) << r.everything();
  ASSERT_TRUE(r.eos);
  const EnviReader reader(dir.file("classes.img"));
  const EnviHeader &h = reader.header();
  EXPECT_EQ(reader.header_path(), dir.file("classes.hdr"));
  EXPECT_EQ(h.samples, samples);
  EXPECT_EQ(h.lines, lines);
  EXPECT_EQ(h.bands, 1u);
  EXPECT_EQ(h.data_type, DataType::u8);
  EXPECT_EQ(h.file_type, "ENVI Classification");
  const EnviField *classes = h.find("classes");
  ASSERT_NE(classes, nullptr);
  EXPECT_EQ(classes->value, "4");
  const EnviField *names = h.find("class names");
  ASSERT_NE(names, nullptr);
  EXPECT_EQ(names->value, "Unclassified, grass, bare soil, stripes");
  const EnviField *lookup = h.find("class lookup");
  ASSERT_NE(lookup, nullptr);
  EXPECT_EQ(lookup->value, "0, 0, 0, 255, 0, 0, 0, 255, 0, 0, 0, 255");
  EXPECT_EQ(reader.read_lines(0, lines), expected);
  // The colours hsicolorize gives with that header equal the default ones.
  const std::vector<Rgba> with_lookup = colorize({0, 1, 2, 3}, 4, 1, false, dir.file("classes.hdr"));
  const std::vector<Rgba> without = colorize({0, 1, 2, 3}, 4, 1, false);
  EXPECT_EQ(with_lookup, without);
}

// A scene georeferenced as AVIRIS-NG's are (UTM, rotated grid, WKT).
const std::string kMapInfo = "UTM, 1.000, 1.000, 277811.628, 4483607.425, 3.1, 3.1, 13, North, WGS-84, units=Meters, "
                             "rotation=53.0";
const std::string kCoordinateSystem =
    "PROJCS[\"WGS_1984_UTM_Zone_13N\",GEOGCS[\"GCS_WGS_1984\",DATUM[\"D_WGS_1984\",SPHEROID[\"WGS_1984\","
    "6378137.0,298.257223563]]]]";
const std::string kGeoreferencedHeader =
    "map info = {" + kMapInfo + "}\ncoordinate system string = {" + kCoordinateSystem + "}\n";

std::string header_value(const EnviHeader &h, const std::string &key) {
  const EnviField *f = h.find(key);
  return f ? f->value : "(no " + key + ")";
}

// The scene's georeferencing reaches both files envisink writes, so they lie
// where the scene does in ENVI, QGIS and GDAL.
TEST(EnviSink, ClassMapsAndRuleImagesKeepTheScenesGeoreferencing) {
  ScratchDir dir;
  write_known_scene(dir, 11, 9, kGeoreferencedHeader);
  const RunResult r = run_pipeline("envisrc location=" + dir.file("scene.hdr") +
                                   " lines-per-buffer=4 ! hsiclassify name=c backend=cpu library=" + dir.file("lib.csv") +
                                   " ! tee name=t ! queue ! envisink location=" + dir.file("classes.img") +
                                   " t. ! queue ! appsink name=sink c.rules ! queue ! envisink location=" +
                                   dir.file("rules.img"));
  ASSERT_TRUE(r.error.empty()) << r.everything();
  for (const char *file : {"classes.img", "rules.img"}) {
    SCOPED_TRACE(file);
    const EnviHeader h = EnviReader(dir.file(file)).header();
    EXPECT_EQ(header_value(h, "map info"), kMapInfo);
    EXPECT_EQ(header_value(h, "coordinate system string"), kCoordinateSystem);
  }
}

// A stream that starts mid-scene (a seek by line) is written as an image of
// its own lines, whose map info puts its first line where it lies in the
// scene: the reference pixel (line 1 of the scene) is line 1 - 3 = -2 of a
// file that starts at scene line 3 (0-based).
TEST(EnviSink, StreamFromALineMovesTheMapReference) {
  ScratchDir dir;
  const size_t samples = 11, lines = 9;
  const std::vector<uint8_t> expected = write_known_scene(dir, samples, lines, kGeoreferencedHeader);
  GstElement *pipeline = gst_parse_launch(("envisrc location=" + dir.file("scene.hdr") +
                                           " lines-per-buffer=4 ! hsiclassify backend=cpu library=" +
                                           dir.file("lib.csv") + " ! envisink location=" + dir.file("classes.img"))
                                              .c_str(),
                                          nullptr);
  ASSERT_NE(pipeline, nullptr);
  gst_element_set_state(pipeline, GST_STATE_PAUSED);
  ASSERT_EQ(gst_element_get_state(pipeline, nullptr, nullptr, 10 * GST_SECOND), GST_STATE_CHANGE_SUCCESS);
  ASSERT_TRUE(gst_element_seek(pipeline, 1.0, GST_FORMAT_DEFAULT,
                               GstSeekFlags(GST_SEEK_FLAG_FLUSH | GST_SEEK_FLAG_ACCURATE), GST_SEEK_TYPE_SET, 3,
                               GST_SEEK_TYPE_SET, 9));
  gst_element_set_state(pipeline, GST_STATE_PLAYING);
  GstBus *bus = gst_element_get_bus(pipeline);
  GstMessage *done = gst_bus_timed_pop_filtered(bus, 30 * GST_SECOND,
                                                GstMessageType(GST_MESSAGE_EOS | GST_MESSAGE_ERROR));
  const bool eos = done && GST_MESSAGE_TYPE(done) == GST_MESSAGE_EOS;
  if (done) gst_message_unref(done);
  gst_object_unref(bus);
  gst_element_set_state(pipeline, GST_STATE_NULL);
  gst_object_unref(pipeline);
  ASSERT_TRUE(eos);
  const EnviReader reader(dir.file("classes.img"));
  ASSERT_EQ(reader.header().lines, 6u);
  EXPECT_EQ(reader.read_lines(0, 6), std::vector<uint8_t>(expected.begin() + 3 * samples, expected.end()));
  EXPECT_EQ(header_value(reader.header(), "map info"),
            "UTM, 1.000, -2, 277811.628, 4483607.425, 3.1, 3.1, 13, North, WGS-84, units=Meters, rotation=53.0");
  EXPECT_EQ(header_value(reader.header(), "coordinate system string"), kCoordinateSystem);
}

TEST(EnviSinkRealData, LargeLibraryWritesDataType12) {
  const std::string t = hsi_test::aviris_ng_tiles()[2];
  HSI_REQUIRE_SHARED(tile, t);
  HSI_REQUIRE_SHARED(library_path, hsi_test::kUsgsLibrary);
  ScratchDir dir;
  const RunResult r = run_pipeline("envisrc location=" + tile + " lines-per-buffer=3 ! hsiclassify backend=cpu "
                                   "library=" + library_path + " ! tee name=t ! queue ! envisink location=" +
                                   dir.file("classes.img") + " t. ! queue ! appsink name=sink");
  ASSERT_TRUE(r.error.empty()) << r.everything();
  const EnviReader reader(dir.file("classes.img"));
  EXPECT_EQ(reader.header().data_type, DataType::u16);
  const EnviField *classes = reader.header().find("classes");
  ASSERT_NE(classes, nullptr);
  const GValue *names = gst_structure_get_value(gst_caps_get_structure(r.samples[0].caps, 0), "class-names");
  ASSERT_NE(names, nullptr);
  EXPECT_EQ(classes->value, std::to_string(gst_value_array_get_size(names) + 1));
  // The file holds what the appsink got.
  const std::vector<uint8_t> file = reader.read_lines(0, reader.header().lines);
  std::vector<uint8_t> streamed;
  for (size_t i = 0; i < r.samples.size(); ++i) {
    GstVideoInfo info;
    ASSERT_TRUE(gst_video_info_from_caps(&info, r.samples[i].caps));
    const std::vector<uint8_t> bytes = r.bytes(i);
    for (int y = 0; y < GST_VIDEO_INFO_HEIGHT(&info); ++y)
      streamed.insert(streamed.end(), bytes.begin() + y * GST_VIDEO_INFO_PLANE_STRIDE(&info, 0),
                      bytes.begin() + y * GST_VIDEO_INFO_PLANE_STRIDE(&info, 0) + 2 * GST_VIDEO_INFO_WIDTH(&info));
  }
  EXPECT_EQ(file, streamed);
}

// A class map whose caps say device memory (as after hsiclassify on CUDA) is
// written the same: envisink maps it for reading, which downloads it.
TEST(EnviSink, DeviceMemoryCapsWriteTheSameFile) {
  ScratchDir dir;
  const int width = 5, height = 3;
  std::mt19937 rng(cs_test::fresh_seed());
  std::vector<uint8_t> labels(size_t(width * height));
  for (uint8_t &v : labels) v = uint8_t(rng() % 4);
  // Not asynchronous: the harness wants its state changes done at once.
  GstHarness *h = gst_harness_new_parse(("envisink async=false location=" + dir.file("c.img")).c_str());
  GstVideoInfo info;
  gst_video_info_set_format(&info, GST_VIDEO_FORMAT_GRAY8, width, height);
  GstCaps *caps = gst_video_info_to_caps(&info);
  gst_caps_set_features(caps, 0, gst_caps_features_new(GST_CAPS_FEATURE_MEMORY_CS_DEVICE, nullptr));
  gst_harness_set_src_caps(h, caps);
  GstBuffer *buf = gst_buffer_new_allocate(nullptr, GST_VIDEO_INFO_SIZE(&info), nullptr);
  GstMapInfo map;
  gst_buffer_map(buf, &map, GST_MAP_WRITE);
  for (int y = 0; y < height; ++y)
    std::memcpy(map.data + y * GST_VIDEO_INFO_PLANE_STRIDE(&info, 0), labels.data() + y * width, size_t(width));
  gst_buffer_unmap(buf, &map);
  EXPECT_EQ(gst_harness_push(h, buf), GST_FLOW_OK);
  EXPECT_TRUE(gst_harness_push_event(h, gst_event_new_eos()));
  gst_harness_teardown(h);
  const EnviReader reader(dir.file("c.img"));
  EXPECT_EQ(reader.header().samples, size_t(width));
  EXPECT_EQ(reader.header().lines, size_t(height));
  EXPECT_EQ(reader.read_lines(0, size_t(height)), labels);
}

// Blocks land on their scene lines (GstHsiBlockMeta) counted from the file's
// first block: after a seek back a block rewrites its lines, after a seek
// forward the lines skipped read as 0 (unclassified), and a block from before
// the file's first line is an error that names both lines.
TEST(EnviSink, BlocksLandOnTheirLinesAcrossSeeks) {
  ScratchDir dir;
  const int width = 4, block = 2;
  GstHarness *h = gst_harness_new_parse(("envisink async=false location=" + dir.file("c.img")).c_str());
  GstVideoInfo info;
  gst_video_info_set_format(&info, GST_VIDEO_FORMAT_GRAY8, width, block);
  gst_harness_set_src_caps(h, gst_video_info_to_caps(&info));
  // A block of `block` lines of `label` starting at scene line `first`.
  auto push = [&](guint64 first, uint8_t label) {
    GstBuffer *buf = gst_buffer_new_allocate(nullptr, GST_VIDEO_INFO_SIZE(&info), nullptr);
    gst_buffer_memset(buf, 0, label, GST_VIDEO_INFO_SIZE(&info));
    gst_buffer_add_hsi_block_meta(buf, first, block, 20);
    return gst_harness_push(h, buf);
  };
  EXPECT_EQ(push(4, 1), GST_FLOW_OK);  // the file starts at scene line 4
  EXPECT_EQ(push(8, 2), GST_FLOW_OK);  // forward: scene lines 6 and 7 not written
  EXPECT_EQ(push(4, 3), GST_FLOW_OK);  // back: rewrites scene lines 4 and 5
  GstBus *bus = gst_bus_new();
  gst_element_set_bus(h->element, bus);
  EXPECT_EQ(push(2, 4), GST_FLOW_ERROR) << "before the file's first line";
  GstMessage *error = gst_bus_pop_filtered(bus, GST_MESSAGE_ERROR);
  ASSERT_NE(error, nullptr);
  GError *e = nullptr;
  gchar *debug = nullptr;
  gst_message_parse_error(error, &e, &debug);
  EXPECT_NE(std::string(debug).find("scene line 2 arrived; the file starts at scene line 4"), std::string::npos)
      << debug;
  g_clear_error(&e);
  g_free(debug);
  gst_message_unref(error);
  // The bus would keep the element's later messages, and they the element.
  gst_element_set_bus(h->element, nullptr);
  gst_object_unref(bus);
  EXPECT_TRUE(gst_harness_push_event(h, gst_event_new_eos()));
  gst_harness_teardown(h);
  const EnviReader reader(dir.file("c.img"));
  ASSERT_EQ(reader.header().lines, 6u);
  std::vector<uint8_t> expected;
  for (uint8_t label : {3, 3, 0, 0, 2, 2}) expected.insert(expected.end(), size_t(width), label);
  EXPECT_EQ(reader.read_lines(0, 6), expected);
}

// The rules pad into envisink: one ENVI float cube, BIL, a band per class
// named after it, holding the kernel classifier's rule images bit for bit.
TEST(EnviSink, WritesRuleImagesAsFloatCube) {
  ScratchDir dir;
  const size_t samples = 11, lines = 9;
  write_known_scene(dir, samples, lines);
  const RunResult r = run_pipeline("envisrc location=" + dir.file("scene.hdr") +
                                   " lines-per-buffer=4 ! hsiclassify name=c backend=cpu method=correlation library=" +
                                   dir.file("lib.csv") + " ! queue ! appsink name=sink c.rules ! queue ! envisink "
                                   "location=" + dir.file("rules.img"));
  ASSERT_TRUE(r.error.empty()) << r.everything();
  ASSERT_TRUE(r.eos);
  const EnviReader scene(dir.file("scene.hdr"));
  const EnviHeader &sh = scene.header();
  ReferenceRequest request;
  request.bands = select_bands(sh.bands, sh.bbl);
  const ReferenceChoice choice = choose_references(read_spectral_library(dir.file("lib.csv")), sh.bands, request);
  ClassifierConfig config;
  config.method = Method::correlation;
  const SpectralClassifier classifier(config, choice.references, choice.bands, sh.wavelengths_nm());
  const size_t K = classifier.class_count(), n = samples * lines;
  std::vector<uint8_t> map(n);
  std::vector<float> expected(K * n, -12345.0f);
  ClassificationOutput out;
  out.class_map = map.data();
  out.rule_images = expected.data();
  const std::vector<uint8_t> raw = scene.read_lines(0, lines);
  classifier.classify(make_cube_block(sh, raw.data(), lines), out);

  const EnviReader rules(dir.file("rules.img"));
  const EnviHeader &h = rules.header();
  EXPECT_EQ(h.samples, samples);
  EXPECT_EQ(h.lines, lines);
  EXPECT_EQ(h.bands, K);
  EXPECT_EQ(h.data_type, DataType::f32);
  EXPECT_EQ(h.interleave, Interleave::bil);
  EXPECT_EQ(h.band_names, (std::vector<std::string>{"grass", "bare soil", "stripes"}));
  const std::vector<uint8_t> bytes = rules.read_lines(0, lines);
  ASSERT_EQ(bytes.size(), K * n * sizeof(float));
  std::vector<float> got(K * n);
  std::memcpy(got.data(), bytes.data(), bytes.size());
  size_t finite = 0, wrong = 0;
  for (size_t l = 0; l < lines; ++l)
    for (size_t k = 0; k < K; ++k)
      for (size_t x = 0; x < samples; ++x) {
        const float want = expected[k * n + l * samples + x], have = got[(l * K + k) * samples + x];
        finite += std::isfinite(want);
        if (std::memcmp(&want, &have, sizeof want) != 0 && wrong++ < 5)
          ADD_FAILURE() << "line " << l << " class " << k << " sample " << x << ": " << have << ", want " << want;
      }
  EXPECT_EQ(wrong, 0u);
  EXPECT_GT(finite, K * n / 2);
}

// Class maps and rule images do not mix in one file.
TEST(EnviSinkErrors, RuleImagesAfterClassMapsAreAnError) {
  ScratchDir dir;
  GstHarness *h = gst_harness_new_parse(("envisink async=false location=" + dir.file("mixed.img")).c_str());
  gst_harness_set_src_caps_str(h, "video/x-raw, format=GRAY8, width=4, height=1, framerate=0/1");
  GstBuffer *buf = gst_buffer_new_allocate(nullptr, 4, nullptr);
  gst_buffer_memset(buf, 0, 1, 4);
  EXPECT_EQ(gst_harness_push(h, buf), GST_FLOW_OK);
  gst_harness_set_src_caps_str(h, "application/x-hyperspectral, samples=4, bands=2, interleave=bsq, format=f32, "
                                  "endianness=1234");
  EXPECT_NE(gst_harness_push(h, gst_buffer_new_allocate(nullptr, 32, nullptr)), GST_FLOW_OK);
  gst_harness_teardown(h);
}

TEST(EnviSinkErrors, NoLocationOrUnwritable) {
  ScratchDir dir;
  write_known_scene(dir, 3, 3);
  const std::string head = "envisrc location=" + dir.file("scene.hdr") + " ! hsiclassify backend=cpu library=" +
                           dir.file("lib.csv") + " ! tee name=t ! queue ! envisink name=out ";
  RunResult r = run_pipeline(head + " t. ! queue ! appsink name=sink");
  EXPECT_EQ(r.error_source, "out") << r.everything();
  r = run_pipeline(head + "location=" + dir.file("no/such/folder/c.img") + " t. ! queue ! appsink name=sink");
  EXPECT_EQ(r.error_source, "out") << r.everything();
  EXPECT_NE(r.error.find("Cannot write"), std::string::npos) << r.everything();
}

// A second stream (a second STREAM_START, as after a concat) is an error, not
// a second scene written over the first: the file keeps the first one's lines.
TEST(EnviSinkErrors, SecondStreamIsAnErrorAndKeepsTheFirstScene) {
  ScratchDir dir;
  GstHarness *h = gst_harness_new_parse(("envisink async=false location=" + dir.file("one.img")).c_str());
  GstBus *bus = gst_bus_new();
  gst_element_set_bus(h->element, bus);
  gst_harness_set_src_caps_str(h, "video/x-raw, format=GRAY8, width=4, height=2, framerate=0/1");
  auto block = [](guint8 label) {
    GstBuffer *buf = gst_buffer_new_allocate(nullptr, 8, nullptr);
    gst_buffer_memset(buf, 0, label, 8);
    gst_buffer_add_hsi_block_meta(buf, 0, 2, 2);
    return buf;
  };
  EXPECT_EQ(gst_harness_push(h, block(3)), GST_FLOW_OK);
  gst_harness_push_event(h, gst_event_new_stream_start("another scene"));
  GstMessage *msg = gst_bus_pop_filtered(bus, GST_MESSAGE_ERROR);
  std::string error;
  if (msg) {
    GError *err = nullptr;
    gst_message_parse_error(msg, &err, nullptr);
    error = err ? err->message : "";
    g_clear_error(&err);
    gst_message_unref(msg);
  }
  EXPECT_NE(error.find("one ENVI file holds one raster"), std::string::npos) << error;
  EXPECT_NE(gst_harness_push(h, block(5)), GST_FLOW_OK) << "the second scene's lines are not written";
  gst_element_set_bus(h->element, nullptr);
  gst_object_unref(bus);
  gst_harness_teardown(h);
  const EnviReader reader(dir.file("one.img"));
  EXPECT_EQ(reader.header().lines, 2u);
  EXPECT_EQ(reader.read_lines(0, 2), std::vector<uint8_t>(8, 3));
}

// Before any line is written another stream start only replaces the one
// announced: what a restart from READY can bring (the previous run's stream
// start, then the new one). The file is the new stream's.
TEST(EnviSink, StreamStartsBeforeAnyLineAreNotASecondStream) {
  ScratchDir dir;
  GstHarness *h = gst_harness_new_parse(("envisink async=false location=" + dir.file("one.img")).c_str());
  gst_harness_set_src_caps_str(h, "video/x-raw, format=GRAY8, width=4, height=2, framerate=0/1");
  EXPECT_TRUE(gst_harness_push_event(h, gst_event_new_stream_start("the previous run's")));
  GstBuffer *buf = gst_buffer_new_allocate(nullptr, 8, nullptr);
  gst_buffer_memset(buf, 0, 7, 8);
  gst_buffer_add_hsi_block_meta(buf, 0, 2, 2);
  EXPECT_EQ(gst_harness_push(h, buf), GST_FLOW_OK);
  gst_harness_teardown(h);
  const EnviReader reader(dir.file("one.img"));
  EXPECT_EQ(reader.header().lines, 2u);
  EXPECT_EQ(reader.read_lines(0, 2), std::vector<uint8_t>(8, 7));
}

// PAUSED -> READY -> PLAYING restarts the file: the whole scene again.
TEST(EnviSink, RestartFromReadyWritesTheSceneAgain) {
  ScratchDir dir;
  const std::string cube = write_small_cube(dir);
  hsi_test::write_text(dir.file("lib.csv"), "wavelength (nm), a, b\n450, 0.1, 0.2\n550, 0.2, 0.3\n650, 0.3, 0.1\n"
                                            "750, 0.3, 0.1\n850, 0.3, 0.4\n");
  const std::string launch = "envisrc location=\"" + cube + "\" lines-per-buffer=3 ! hsiclassify backend=cpu "
                             "library=\"" + dir.file("lib.csv") + "\" ! envisink location=\"" + dir.file("c.img") +
                             "\"";
  GstElement *pipeline = gst_parse_launch(launch.c_str(), nullptr);
  ASSERT_NE(pipeline, nullptr);
  for (GstState state : {GST_STATE_PAUSED, GST_STATE_READY, GST_STATE_PAUSED}) {
    gst_element_set_state(pipeline, state);
    ASSERT_EQ(gst_element_get_state(pipeline, nullptr, nullptr, 10 * GST_SECOND), GST_STATE_CHANGE_SUCCESS)
        << gst_element_state_get_name(state);
  }
  EXPECT_EQ(element_test::play_to_end(pipeline, 60), "");
  gst_object_unref(pipeline);
  const EnviReader reader(dir.file("c.img"));
  EXPECT_EQ(reader.header().lines, EnviReader(cube).header().lines);
}

// A stream that ends without class maps: the header of an empty image (0
// lines) and a warning that names it.
TEST(EnviSinkErrors, StreamWithoutLinesWarns) {
  ScratchDir dir;
  GError *error = nullptr;
  GstElement *p = gst_parse_launch(("videotestsrc num-buffers=0 ! video/x-raw,format=GRAY8,width=4,height=4 ! "
                                    "envisink location=" + dir.file("empty.img")).c_str(),
                                   &error);
  ASSERT_EQ(error, nullptr) << error->message;
  std::string warnings;
  EXPECT_EQ(element_test::play_to_end(p, 10, &warnings), "");
  gst_object_unref(p);
  EXPECT_NE(warnings.find("No lines arrived"), std::string::npos) << warnings;
  EXPECT_NE(warnings.find(dir.file("empty.hdr")), std::string::npos) << warnings;
  std::ifstream header(dir.file("empty.hdr"));
  const std::string text((std::istreambuf_iterator<char>(header)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("lines = 0\n"), std::string::npos) << text;
}

// hsiclassify on CUDA hands its class maps to hsicolorize and envisink in
// device memory: the same colours and the same file as the CPU backend.
TEST(GpuHsiOutput, DeviceClassMapsColourAndWriteAsOnCpu) {
  CS_REQUIRE_GPU();
  ScratchDir dir;
  const size_t samples = 11, lines = 9;
  write_known_scene(dir, samples, lines);
  auto launch = [&](const std::string &backend, const std::string &file) {
    return "envisrc location=" + dir.file("scene.hdr") + " lines-per-buffer=4 ! hsiclassify backend=" + backend +
           " library=" + dir.file("lib.csv") + " ! tee name=t ! queue ! envisink location=" + dir.file(file) +
           " t. ! queue ! hsicolorize ! appsink name=sink";
  };
  const RunResult cpu = run_pipeline(launch("cpu", "cpu.img"));
  const RunResult gpu = run_pipeline(launch("cuda", "gpu.img"));
  ASSERT_TRUE(cpu.error.empty()) << cpu.everything();
  ASSERT_TRUE(gpu.error.empty()) << gpu.everything();
  ASSERT_EQ(cpu.samples.size(), gpu.samples.size());
  for (size_t i = 0; i < cpu.samples.size(); ++i) {
    EXPECT_FALSE(gst_cs_caps_has_device_feature(gpu.samples[i].caps));
    EXPECT_EQ(cpu.bytes(i), gpu.bytes(i)) << "block " << i;
  }
  const EnviReader a(dir.file("cpu.img")), b(dir.file("gpu.img"));
  EXPECT_EQ(a.read_lines(0, lines), b.read_lines(0, lines));
}

// ---------------------------------------------------------------- hsiwaterfall

namespace {

// A harness around hsiwaterfall with `properties` set before it runs, fed
// GRAY8 blocks `width` wide; line n of the stream holds the value n + 1 in
// every pixel.
struct Waterfall {
  GstHarness *h;
  int width;
  guint64 next_line = 0;
  bool device_caps = false;  // the blocks' caps say memory:CudaSensing (the buffers are system memory, mapped alike)
  Waterfall(int block_width, std::initializer_list<std::pair<const char *, guint>> properties,
            bool newest_at_top = false)
      : width(block_width) {
    GstElement *e = gst_element_factory_make("hsiwaterfall", nullptr);
    for (const auto &[name, value] : properties) g_object_set(e, name, value, nullptr);
    g_object_set(e, "newest-at-top", newest_at_top, nullptr);
    h = gst_harness_new_with_element(e, "sink", "src");
    gst_object_unref(e);
  }
  ~Waterfall() { gst_harness_teardown(h); }
  // Pushes the next `lines` lines as one block (its caps' height), stamped `pts`.
  GstFlowReturn push(int lines, GstClockTime pts = GST_CLOCK_TIME_NONE) {
    GstVideoInfo info;
    gst_video_info_set_format(&info, GST_VIDEO_FORMAT_GRAY8, guint(width), guint(lines));
    GstCaps *caps = gst_video_info_to_caps(&info);
    if (device_caps) gst_caps_set_features(caps, 0, gst_caps_features_new(GST_CAPS_FEATURE_MEMORY_CS_DEVICE, nullptr));
    gst_harness_set_src_caps(h, caps);
    GstBuffer *buf = gst_buffer_new_allocate(nullptr, GST_VIDEO_INFO_SIZE(&info), nullptr);
    GstMapInfo map;
    gst_buffer_map(buf, &map, GST_MAP_WRITE);
    std::memset(map.data, 0xEE, map.size);  // poison the padding
    for (int y = 0; y < lines; ++y)
      std::memset(map.data + y * GST_VIDEO_INFO_PLANE_STRIDE(&info, 0), int(next_line + guint64(y) + 1), size_t(width));
    gst_buffer_unmap(buf, &map);
    GST_BUFFER_PTS(buf) = pts;
    next_line += guint64(lines);
    return gst_harness_push(h, buf);
  }
  // The rows of the frames that came out so far, by each row's first pixel.
  std::vector<std::vector<int>> frames() {
    std::vector<std::vector<int>> out;
    while (GstBuffer *b = gst_harness_try_pull(h)) {
      GstCaps *caps = gst_pad_get_current_caps(h->sinkpad);
      GstVideoInfo info;
      EXPECT_TRUE(gst_video_info_from_caps(&info, caps));
      gst_caps_unref(caps);
      GstMapInfo map;
      gst_buffer_map(b, &map, GST_MAP_READ);
      out.emplace_back();
      for (int y = 0; y < GST_VIDEO_INFO_HEIGHT(&info); ++y) {
        const uint8_t *row = map.data + y * GST_VIDEO_INFO_PLANE_STRIDE(&info, 0);
        for (int x = 1; x < width; ++x) EXPECT_EQ(row[x], row[0]) << "row " << y << " is one line";
        out.back().push_back(row[0]);
      }
      gst_buffer_unmap(b, &map);
      gst_buffer_unref(b);
    }
    return out;
  }
};

using Rows = std::vector<int>;

}  // namespace

// Each block gives a frame of the last `lines` lines, the newest at the
// bottom, lines not seen yet 0; a block taller than the window shows its end.
TEST(HsiWaterfall, FramesHoldTheLastLinesNewestAtTheBottom) {
  Waterfall w(7, {{"lines", 5}});
  for (int lines : {1, 2, 1, 3, 8}) ASSERT_EQ(w.push(lines), GST_FLOW_OK);
  const std::vector<Rows> frames = w.frames();
  ASSERT_EQ(frames.size(), 5u);
  EXPECT_EQ(frames[0], (Rows{0, 0, 0, 0, 1}));
  EXPECT_EQ(frames[1], (Rows{0, 0, 1, 2, 3}));
  EXPECT_EQ(frames[2], (Rows{0, 1, 2, 3, 4}));
  EXPECT_EQ(frames[3], (Rows{3, 4, 5, 6, 7}));
  EXPECT_EQ(frames[4], (Rows{11, 12, 13, 14, 15}));
  GstCaps *caps = gst_pad_get_current_caps(w.h->sinkpad);
  GstVideoInfo info;
  ASSERT_TRUE(gst_video_info_from_caps(&info, caps));
  EXPECT_EQ(GST_VIDEO_INFO_WIDTH(&info), 7);
  EXPECT_EQ(GST_VIDEO_INFO_HEIGHT(&info), 5);
  EXPECT_EQ(GST_VIDEO_INFO_FPS_N(&info), 0) << "a variable rate";
  gst_caps_unref(caps);
}

// Class maps in device memory (hsiclassify on CUDA) are mapped; the frames are system memory.
TEST(HsiWaterfall, DeviceMemoryBlocksGiveSystemMemoryFrames) {
  Waterfall w(5, {{"lines", 2}});
  w.device_caps = true;
  for (int lines : {1, 1, 1}) ASSERT_EQ(w.push(lines), GST_FLOW_OK);
  const std::vector<Rows> frames = w.frames();
  ASSERT_EQ(frames.size(), 3u);
  EXPECT_EQ(frames[2], (Rows{2, 3}));
  GstCaps *caps = gst_pad_get_current_caps(w.h->sinkpad);
  EXPECT_FALSE(gst_cs_caps_has_device_feature(caps));
  gst_caps_unref(caps);
}

TEST(HsiWaterfall, NewestAtTopScrollsDown) {
  Waterfall w(3, {{"lines", 4}}, true);
  for (int lines : {2, 3}) ASSERT_EQ(w.push(lines), GST_FLOW_OK);
  const std::vector<Rows> frames = w.frames();
  ASSERT_EQ(frames.size(), 2u);
  EXPECT_EQ(frames[0], (Rows{2, 1, 0, 0}));
  EXPECT_EQ(frames[1], (Rows{5, 4, 3, 2}));
}

// With a step, a frame every `step` new lines; the lines left at the end
// make a last frame, stamped with the last block's time.
TEST(HsiWaterfall, StepAndEndOfStream) {
  Waterfall w(4, {{"lines", 3}, {"step", 3}});
  for (int i = 0; i < 7; ++i) ASSERT_EQ(w.push(1, GstClockTime(i) * GST_MSECOND), GST_FLOW_OK);
  std::vector<Rows> frames = w.frames();
  ASSERT_EQ(frames.size(), 2u);
  EXPECT_EQ(frames[0], (Rows{1, 2, 3}));
  EXPECT_EQ(frames[1], (Rows{4, 5, 6}));
  ASSERT_TRUE(gst_harness_push_event(w.h, gst_event_new_eos()));
  GstBuffer *last = gst_harness_try_pull(w.h);
  ASSERT_NE(last, nullptr) << "the 7th line in a frame of its own";
  EXPECT_EQ(GST_BUFFER_PTS(last), 6 * GST_MSECOND);
  GstMapInfo map;
  gst_buffer_map(last, &map, GST_MAP_READ);
  const int stride = GST_ROUND_UP_4(4);
  EXPECT_EQ((Rows{map.data[0], map.data[stride], map.data[2 * stride]}), (Rows{5, 6, 7}));
  gst_buffer_unmap(last, &map);
  gst_buffer_unref(last);
}

// A flush (a seek) or a new stream starts an empty window.
TEST(HsiWaterfall, FlushStartsAnEmptyWindow) {
  Waterfall w(2, {{"lines", 3}});
  ASSERT_EQ(w.push(3), GST_FLOW_OK);
  ASSERT_TRUE(gst_harness_push_event(w.h, gst_event_new_flush_start()));
  ASSERT_TRUE(gst_harness_push_event(w.h, gst_event_new_flush_stop(TRUE)));
  GstSegment segment;
  gst_segment_init(&segment, GST_FORMAT_TIME);
  ASSERT_TRUE(gst_harness_push_event(w.h, gst_event_new_segment(&segment)));
  ASSERT_EQ(w.push(1), GST_FLOW_OK);
  const std::vector<Rows> frames = w.frames();
  ASSERT_FALSE(frames.empty());
  EXPECT_EQ(frames.back(), (Rows{0, 0, 4}));
}

// A push-broom stream (one line a block) classified and shown: the frame
// after the scene's last line is the scene's class map.
TEST(HsiWaterfall, LineStreamEndsOnTheSceneClassMap) {
  ScratchDir dir;
  const size_t samples = 11, lines = 9;
  const std::vector<uint8_t> expected = write_known_scene(dir, samples, lines);
  const RunResult r = run_pipeline("envisrc location=" + dir.file("scene.hdr") +
                                   " lines-per-buffer=1 ! hsiclassify backend=cpu library=" + dir.file("lib.csv") +
                                   " ! hsiwaterfall lines=" + std::to_string(lines) + " ! appsink name=sink");
  ASSERT_TRUE(r.error.empty()) << r.everything();
  ASSERT_EQ(r.samples.size(), lines) << "a frame a line";
  GstVideoInfo info;
  ASSERT_TRUE(gst_video_info_from_caps(&info, r.samples.back().caps));
  ASSERT_EQ(GST_VIDEO_INFO_HEIGHT(&info), int(lines));
  GstMapInfo map;
  gst_buffer_map(r.samples.back().buffer, &map, GST_MAP_READ);
  for (size_t l = 0; l < lines; ++l)
    for (size_t s = 0; s < samples; ++s)
      EXPECT_EQ(map.data[l * size_t(GST_VIDEO_INFO_PLANE_STRIDE(&info, 0)) + s], expected[l * samples + s])
          << "line " << l << ", sample " << s;
  gst_buffer_unmap(r.samples.back().buffer, &map);
}
