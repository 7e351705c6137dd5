// envisrc: ENVI images as blocks of lines; the block meta; bad files.
#include <gst/check/gstharness.h>
#include <gtest/gtest.h>

#include <cmath>
#include <tuple>
#include <utility>
#include <vector>

#include "hsi/envi.h"
#include "source_allocation.h"
#include "test_hsi_support.h"

using namespace cs::hsi;
using hsi_element_test::run_pipeline;
using hsi_element_test::RunResult;
using hsi_element_test::SyntheticCube;
using hsi_test::ScratchDir;

namespace {

std::string launch_envisrc(const std::string &location, size_t lines_per_buffer, const std::string &extra = "") {
  return "envisrc name=envisrc0 location=\"" + location + "\" lines-per-buffer=" + std::to_string(lines_per_buffer) + " " + extra +
         " ! appsink name=sink";
}

// Every block: the bytes expected, the meta, the offsets.
void expect_blocks(const RunResult &r, const SyntheticCube &cube, const std::vector<uint8_t> &data, size_t per) {
  const size_t blocks = (cube.lines + per - 1) / per;
  ASSERT_EQ(r.samples.size(), blocks) << r.everything();
  for (size_t i = 0; i < blocks; ++i) {
    SCOPED_TRACE("block " + std::to_string(i));
    const size_t first = i * per, count = std::min(per, cube.lines - first);
    EXPECT_EQ(r.bytes(i), cube.expected_block(data, first, count));
    GstHsiBlockMeta *meta = gst_buffer_get_hsi_block_meta(r.samples[i].buffer);
    ASSERT_NE(meta, nullptr);
    EXPECT_EQ(meta->first_line, first);
    EXPECT_EQ(meta->line_count, count);
    EXPECT_EQ(meta->scene_lines, cube.lines);
    EXPECT_EQ(GST_BUFFER_OFFSET(r.samples[i].buffer), first);
    EXPECT_EQ(GST_BUFFER_OFFSET_END(r.samples[i].buffer), first + count);
    EXPECT_FALSE(GST_BUFFER_PTS_IS_VALID(r.samples[i].buffer)) << "no timestamps unless line-duration is set";
  }
}

}  // namespace

// Every interleave x several data types x both byte orders, with a header
// offset: each block holds exactly the file's bytes of its lines (BSQ: band
// planes of those lines), and the caps describe the file.
TEST(EnviSrc, SyntheticCubesEveryInterleaveTypeAndByteOrder) {
  const uint32_t seed = cs_test::fresh_seed();
  ScratchDir dir;
  int n = 0;
  for (Interleave il : {Interleave::bsq, Interleave::bil, Interleave::bip})
    for (DataType type : {DataType::u8, DataType::i16, DataType::u16, DataType::i32, DataType::f32, DataType::f64,
                          DataType::u64})
      for (ByteOrder order : {ByteOrder::little_endian, ByteOrder::big_endian}) {
        SyntheticCube cube;
        cube.interleave = il;
        cube.type = type;
        cube.order = order;
        cube.header_offset = 13;
        cube.extra = "wavelength units = Micrometers\nwavelength = {0.4, 0.5, 0.6, 0.7, 0.8}\n"
                     "fwhm = {0.01, 0.01, 0.01, 0.01, 0.01}\nbbl = {1, 1, 0, 1, 1}\n"
                     "data ignore value = -9999\nreflectance scale factor = 10000\n";
        SCOPED_TRACE(std::string(interleave_name(il)) + " " + data_type_name(type) + " byte order " +
                     std::to_string(int(order)));
        const std::vector<uint8_t> data =
            cs_test::random_bytes(cube.samples * cube.lines * cube.bands * cube.sample_bytes(), seed + n);
        const std::string base = dir.file("cube" + std::to_string(n++));
        cube.write(base, data);
        // Alternate between naming the header and the data file.
        const RunResult r = run_pipeline(launch_envisrc(base + (n % 2 ? ".hdr" : ".img"), 3));
        ASSERT_TRUE(r.error.empty()) << r.everything();
        EXPECT_TRUE(r.eos);
        expect_blocks(r, cube, data, 3);
        if (r.samples.empty()) continue;
        const GstStructure *s = gst_caps_get_structure(r.samples[0].caps, 0);
        EXPECT_TRUE(gst_structure_has_name(s, "application/x-hyperspectral"));
        int v = 0;
        EXPECT_TRUE(gst_structure_get_int(s, "samples", &v) && v == 7);
        EXPECT_TRUE(gst_structure_get_int(s, "bands", &v) && v == 5);
        EXPECT_TRUE(gst_structure_get_int(s, "lines", &v) && v == 10);
        EXPECT_TRUE(gst_structure_get_int(s, "block-lines", &v) && v == 3);
        EXPECT_TRUE(gst_structure_get_int(s, "endianness", &v) &&
                    v == (order == ByteOrder::big_endian ? G_BIG_ENDIAN : G_LITTLE_ENDIAN));
        EXPECT_STREQ(gst_structure_get_string(s, "interleave"), interleave_name(il));
        EXPECT_STREQ(gst_structure_get_string(s, "format"), data_type_name(type));
        const GValue *wl = gst_structure_get_value(s, "wavelengths");
        ASSERT_NE(wl, nullptr);
        ASSERT_EQ(gst_value_array_get_size(wl), 5u);
        EXPECT_NEAR(g_value_get_double(gst_value_array_get_value(wl, 2)), 600.0, 1e-9) << "nanometres";
        const GValue *fwhm = gst_structure_get_value(s, "fwhm");
        ASSERT_NE(fwhm, nullptr);
        EXPECT_NEAR(g_value_get_double(gst_value_array_get_value(fwhm, 0)), 10.0, 1e-9);
        const GValue *bbl = gst_structure_get_value(s, "bbl");
        ASSERT_NE(bbl, nullptr);
        EXPECT_EQ(g_value_get_int(gst_value_array_get_value(bbl, 2)), 0);
        EXPECT_EQ(g_value_get_int(gst_value_array_get_value(bbl, 3)), 1);
        double d = 0;
        EXPECT_TRUE(gst_structure_get_double(s, "data-ignore-value", &d) && d == -9999);
        EXPECT_TRUE(gst_structure_get_double(s, "reflectance-scale-factor", &d) && d == 10000);
      }
}

TEST(EnviSrc, BlockSizesOneLineAndWholeScene) {
  const uint32_t seed = cs_test::fresh_seed();
  ScratchDir dir;
  SyntheticCube cube;
  cube.interleave = Interleave::bsq;
  cube.type = DataType::i16;
  const std::vector<uint8_t> data = cs_test::random_bytes(cube.samples * cube.lines * cube.bands * 2, seed);
  cube.write(dir.file("c"), data);
  for (size_t per : {size_t(1), size_t(4), size_t(10), size_t(1000)}) {
    SCOPED_TRACE("lines-per-buffer " + std::to_string(per));
    const RunResult r = run_pipeline(launch_envisrc(dir.file("c.hdr"), per));
    ASSERT_TRUE(r.error.empty()) << r.everything();
    expect_blocks(r, cube, data, std::min(per, cube.lines));
  }
}

TEST(EnviSrc, LineDurationTimestampsBlocks) {
  ScratchDir dir;
  SyntheticCube cube;
  const std::vector<uint8_t> data = cs_test::random_bytes(cube.samples * cube.lines * cube.bands * 4, cs_test::fresh_seed());
  cube.write(dir.file("c"), data);
  const RunResult r = run_pipeline(launch_envisrc(dir.file("c.hdr"), 4, "line-duration=2000000"));
  ASSERT_TRUE(r.error.empty()) << r.everything();
  ASSERT_EQ(r.samples.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(GST_BUFFER_PTS(r.samples[i].buffer), i * 4 * 2 * GST_MSECOND);
    EXPECT_EQ(GST_BUFFER_DURATION(r.samples[i].buffer), (i < 2 ? 4u : 2u) * 2 * GST_MSECOND);
  }
}

// Blocks are read into pooled buffers of the allocator negotiated downstream
// (page-locked memory before gpuupload), holding the file's bytes; system
// memory when nothing downstream proposes one.
TEST(EnviSrc, ReadsIntoTheAllocatorProposedDownstream) {
  ScratchDir dir;
  SyntheticCube cube;
  cube.interleave = Interleave::bil;
  const std::vector<uint8_t> data =
      cs_test::random_bytes(cube.samples * cube.lines * cube.bands * 4, cs_test::fresh_seed());
  cube.write(dir.file("c"), data);
  const std::string launch = "envisrc location=\"" + dir.file("c.hdr") + "\" lines-per-buffer=4 ! fakesink name=probed";
  const std::vector<uint8_t> expected = cube.expected_block(data, 0, cube.lines);  // BIL blocks: consecutive lines
  for (bool propose : {true, false}) {
    SCOPED_TRACE(propose ? "allocator proposed" : "none proposed");
    const auto count = source_allocation_test::count_allocations(launch, propose);
    ASSERT_TRUE(count.eos) << count.error;
    EXPECT_EQ(count.buffers, 3);
    EXPECT_EQ(count.from_proposed, propose ? 3 : 0);
    EXPECT_EQ(count.pooled, 3) << "blocks come from a pool, not a fresh allocation each";
    EXPECT_EQ(count.bytes, expected);
  }
}

TEST(GpuEnviSrc, GpuUploadReceivesPageLockedBlocks) {
  CS_REQUIRE_GPU();
  ScratchDir dir;
  SyntheticCube cube;
  const std::vector<uint8_t> data =
      cs_test::random_bytes(cube.samples * cube.lines * cube.bands * 4, cs_test::fresh_seed());
  cube.write(dir.file("c"), data);
  const auto count = source_allocation_test::count_allocations(
      "envisrc location=\"" + dir.file("c.hdr") + "\" lines-per-buffer=3 ! gpuupload name=probed ! fakesink", false);
  ASSERT_TRUE(count.eos) << count.error;
  EXPECT_EQ(count.buffers, 4);
  EXPECT_EQ(count.page_locked, 4) << "gpuupload offers page-locked memory upstream";
  EXPECT_EQ(count.pooled, 4);
  EXPECT_EQ(count.bytes, cube.expected_block(data, 0, cube.lines));
}

// The real AVIRIS-NG tiles: every block equals EnviReader's read of the same
// lines, and the caps carry the header's wavelengths (nm), FWHM and bbl.
TEST(EnviSrcRealData, AvirisNgBlocksEqualEnviReader) {
  for (const std::string &t : hsi_test::aviris_ng_tiles()) {
    HSI_REQUIRE_SHARED(tile, t);
    SCOPED_TRACE(tile);
    const EnviReader reader(tile);
    const EnviHeader &h = reader.header();
    const RunResult r = run_pipeline(launch_envisrc(tile, 3));
    ASSERT_TRUE(r.error.empty()) << r.everything();
    ASSERT_EQ(r.samples.size(), (h.lines + 2) / 3);
    for (size_t i = 0; i < r.samples.size(); ++i) {
      const size_t first = i * 3, count = std::min<size_t>(3, h.lines - first);
      EXPECT_EQ(r.bytes(i), reader.read_lines(first, count)) << "block " << i;
    }
    const GstStructure *s = gst_caps_get_structure(r.samples[0].caps, 0);
    const std::vector<double> nm = h.wavelengths_nm(), fwhm = h.fwhm_nm();
    const GValue *wl = gst_structure_get_value(s, "wavelengths");
    const GValue *fw = gst_structure_get_value(s, "fwhm");
    const GValue *bbl = gst_structure_get_value(s, "bbl");
    ASSERT_TRUE(wl && fw && bbl);
    ASSERT_EQ(gst_value_array_get_size(wl), h.bands);
    ASSERT_EQ(gst_value_array_get_size(fw), h.bands);
    ASSERT_EQ(gst_value_array_get_size(bbl), h.bands);
    for (size_t b = 0; b < h.bands; ++b) {
      EXPECT_EQ(g_value_get_double(gst_value_array_get_value(wl, guint(b))), nm[b]);
      EXPECT_EQ(g_value_get_double(gst_value_array_get_value(fw, guint(b))), fwhm[b]);
      EXPECT_EQ(g_value_get_int(gst_value_array_get_value(bbl, guint(b))), h.band_is_good(b) ? 1 : 0);
    }
  }
}

// --- bad input: a clear element error, never a crash ---

TEST(EnviSrcErrors, MalformedHeaderNamesKeyAndLine) {
  ScratchDir dir;
  SyntheticCube cube;
  cube.write(dir.file("c"), std::vector<uint8_t>(cube.samples * cube.lines * cube.bands * 4, 1));
  std::string text = cube.header_text();
  text.replace(text.find("bands = 5"), 9, "bands = five");
  hsi_test::write_text(dir.file("c.hdr"), text);
  const RunResult r = run_pipeline(launch_envisrc(dir.file("c.hdr"), 3));
  ASSERT_FALSE(r.error.empty());
  EXPECT_EQ(r.error_source, "envisrc0");
  EXPECT_EQ(r.samples.size(), 0u);
  EXPECT_NE(r.error_debug.find("bands"), std::string::npos) << r.everything();
  EXPECT_NE(r.error_debug.find("line 5"), std::string::npos) << r.everything();
}

TEST(EnviSrcErrors, DataFileShorterThanHeaderSays) {
  ScratchDir dir;
  SyntheticCube cube;
  const size_t full = cube.samples * cube.lines * cube.bands * 4;
  cube.write(dir.file("c"), std::vector<uint8_t>(full - 100, 1));
  const RunResult r = run_pipeline(launch_envisrc(dir.file("c.hdr"), 3));
  ASSERT_FALSE(r.error.empty());
  EXPECT_EQ(r.error_source, "envisrc0");
  EXPECT_EQ(r.samples.size(), 0u) << "no partial block is invented";
  std::printf("[ message  ] %s\n", r.everything().c_str());
}

// A missing file or a directory is said to be that (not a missing data file
// next to a header that does not exist either).
TEST(EnviSrcErrors, MissingFileAndNoLocation) {
  ScratchDir dir;
  RunResult r = run_pipeline(launch_envisrc(dir.file("absent.hdr"), 3));
  EXPECT_FALSE(r.error.empty());
  EXPECT_EQ(r.error_source, "envisrc0");
  EXPECT_NE(r.error_debug.find("the ENVI header does not exist"), std::string::npos) << r.everything();
  r = run_pipeline(launch_envisrc(dir.file("absent.img"), 3));
  EXPECT_NE(r.error_debug.find("the ENVI data file does not exist"), std::string::npos) << r.everything();
  r = run_pipeline(launch_envisrc(dir.path(), 3));
  EXPECT_NE(r.error_debug.find("is a directory"), std::string::npos) << r.everything();
  r = run_pipeline("envisrc ! appsink name=sink");
  EXPECT_FALSE(r.error.empty());
  EXPECT_NE(r.error.find("No file name"), std::string::npos) << r.everything();
}

// Line times beyond GStreamer's clock (2^63 ns) are refused at the start,
// not wrapped around.
TEST(EnviSrcErrors, LineDurationBeyondTheClockIsRefused) {
  ScratchDir dir;
  SyntheticCube cube;  // 10 lines
  cube.write(dir.file("c"), cs_test::random_bytes(cube.samples * cube.lines * cube.bands * 4, cs_test::fresh_seed()));
  RunResult r = run_pipeline(launch_envisrc(dir.file("c.hdr"), 4, "line-duration=1000000000000000000"));
  EXPECT_NE(r.error.find("line-duration is too long"), std::string::npos) << r.everything();
  EXPECT_EQ(r.samples.size(), 0u);
  r = run_pipeline(launch_envisrc(dir.file("c.hdr"), 4, "line-duration=900000000000000000"));  // 9e18 ns, just fits
  EXPECT_EQ(r.error, "") << r.everything();
  ASSERT_EQ(r.samples.size(), 3u);
  EXPECT_EQ(GST_BUFFER_PTS(r.samples[2].buffer), 8 * 900000000000000000ull);
}

// A block holds at most the scene: lines-per-buffer beyond it gives one
// block of the scene's lines, which hsiclassify classifies (its class map's
// height is the block's, not the property's).
TEST(EnviSrc, LinesPerBufferBeyondTheSceneIsOneBlock) {
  ScratchDir dir;
  const std::string cube = hsi_element_test::write_small_cube(dir);  // 10 lines
  hsi_test::write_text(dir.file("lib.csv"), "wavelength (nm), a, b\n450, 0.1, 0.2\n550, 0.2, 0.3\n650, 0.3, 0.1\n"
                                            "750, 0.3, 0.1\n850, 0.3, 0.1\n");
  const RunResult r = run_pipeline("envisrc location=" + cube + " lines-per-buffer=100000000 ! hsiclassify backend=cpu "
                                   "library=" + dir.file("lib.csv") + " ! appsink name=sink");
  ASSERT_EQ(r.error, "") << r.everything();
  ASSERT_EQ(r.samples.size(), 1u);
  int height = 0;
  gst_structure_get_int(gst_caps_get_structure(r.samples[0].caps, 0), "height", &height);
  EXPECT_EQ(height, 10);
}

TEST(EnviSrcErrors, UnsupportedDataTypeNamesTheKey) {
  ScratchDir dir;
  SyntheticCube cube;
  cube.write(dir.file("c"), std::vector<uint8_t>(cube.samples * cube.lines * cube.bands * 8, 1));
  std::string text = cube.header_text();
  text.replace(text.find("data type = 4"), 13, "data type = 6");  // complex
  hsi_test::write_text(dir.file("c.hdr"), text);
  const RunResult r = run_pipeline(launch_envisrc(dir.file("c.hdr"), 3));
  ASSERT_FALSE(r.error.empty());
  EXPECT_NE(r.error_debug.find("data type"), std::string::npos) << r.everything();
}

// --- the block meta ---

TEST(HsiBlockMeta, CopiedWithBufferDroppedForRegions) {
  GstBuffer *buf = gst_buffer_new_allocate(nullptr, 100, nullptr);
  gst_buffer_add_hsi_block_meta(buf, 42, 7, 1000);
  GstBuffer *copy = gst_buffer_copy(buf);
  GstHsiBlockMeta *m = gst_buffer_get_hsi_block_meta(copy);
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->first_line, 42u);
  EXPECT_EQ(m->line_count, 7u);
  EXPECT_EQ(m->scene_lines, 1000u);
  GstBuffer *part = gst_buffer_copy_region(buf, GST_BUFFER_COPY_ALL, 10, 20);
  EXPECT_EQ(gst_buffer_get_hsi_block_meta(part), nullptr) << "a part of a block does not know its lines";
  const gchar *const *tags = gst_meta_api_type_get_tags(GST_HSI_BLOCK_META_API_TYPE);
  EXPECT_TRUE(tags == nullptr || tags[0] == nullptr) << "no tags: transforms keep it";
  gst_buffer_unref(part);
  gst_buffer_unref(copy);
  gst_buffer_unref(buf);
}

namespace {
void expect_meta_through(const std::string &transfers) {
  ScratchDir dir;
  SyntheticCube cube;
  cube.type = DataType::i16;
  const std::vector<uint8_t> data = cs_test::random_bytes(cube.samples * cube.lines * cube.bands * 2, cs_test::fresh_seed());
  cube.write(dir.file("c"), data);
  const RunResult r = run_pipeline("envisrc location=" + dir.file("c.hdr") + " lines-per-buffer=4 ! " + transfers +
                                   " ! appsink name=sink");
  ASSERT_TRUE(r.error.empty()) << r.everything();
  ASSERT_EQ(r.samples.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    GstHsiBlockMeta *m = gst_buffer_get_hsi_block_meta(r.samples[i].buffer);
    ASSERT_NE(m, nullptr) << "block " << i;
    EXPECT_EQ(m->first_line, 4 * i);
    EXPECT_EQ(m->line_count, i < 2 ? 4u : 2u);
    EXPECT_EQ(r.bytes(i), cube.expected_block(data, 4 * i, m->line_count));
  }
}
}  // namespace

// On the CPU backend the transfers pass buffers through.
TEST(HsiBlockMeta, SurvivesTransfersOnCpuBackend) {
  expect_meta_through("gpuupload backend=cpu ! gpudownload backend=cpu");
}

TEST(GpuHsiBlockMeta, SurvivesUploadAndDownload) {
  CS_REQUIRE_GPU();
  expect_meta_through("gpuupload backend=cuda ! gpudownload backend=cuda");
}

namespace {

// "envisrc ! appsink" over a random f32 cube of 10 lines in blocks of 3,
// paused: seeks and queries go to `src`, and blocks() plays the rest.
class SeekableCube {
 public:
  explicit SeekableCube(const std::string &envisrc_options) {
    data_ = cs_test::random_bytes(cube_.samples * cube_.lines * cube_.bands * 4, cs_test::fresh_seed());
    cube_.write(dir_.file("c"), data_);
    pipeline_ = gst_parse_launch(("envisrc name=src location=" + dir_.file("c.hdr") + " lines-per-buffer=3 " +
                                  envisrc_options + " ! appsink name=sink sync=false")
                                     .c_str(),
                                 nullptr);
    src = gst_bin_get_by_name(GST_BIN(pipeline_), "src");
    sink_ = gst_bin_get_by_name(GST_BIN(pipeline_), "sink");
    gst_element_set_state(pipeline_, GST_STATE_PAUSED);
    paused = gst_element_get_state(pipeline_, nullptr, nullptr, 10 * GST_SECOND) == GST_STATE_CHANGE_SUCCESS;
  }
  ~SeekableCube() {
    gst_element_set_state(pipeline_, GST_STATE_NULL);
    gst_object_unref(src);
    gst_object_unref(sink_);
    gst_object_unref(pipeline_);
  }
  bool seek(gdouble rate, GstFormat format, gint64 start, gint64 stop) {
    return gst_element_seek(pipeline_, rate, format, GstSeekFlags(GST_SEEK_FLAG_FLUSH | GST_SEEK_FLAG_ACCURATE),
                            GST_SEEK_TYPE_SET, start, stop < 0 ? GST_SEEK_TYPE_NONE : GST_SEEK_TYPE_SET, stop);
  }
  // Plays to the end: each block's (first line, line count, PTS), its bytes checked against the file.
  std::vector<std::tuple<guint64, guint, GstClockTime>> blocks() {
    gst_element_set_state(pipeline_, GST_STATE_PLAYING);
    std::vector<std::tuple<guint64, guint, GstClockTime>> out;
    while (GstSample *sample = gst_app_sink_try_pull_sample(GST_APP_SINK(sink_), 5 * GST_SECOND)) {
      GstBuffer *buf = gst_sample_get_buffer(sample);
      if (GstHsiBlockMeta *m = gst_buffer_get_hsi_block_meta(buf)) {
        out.emplace_back(m->first_line, m->line_count, GST_BUFFER_PTS(buf));
        GstMapInfo map;
        gst_buffer_map(buf, &map, GST_MAP_READ);
        EXPECT_EQ(std::vector<uint8_t>(map.data, map.data + map.size),
                  cube_.expected_block(data_, m->first_line, m->line_count));
        gst_buffer_unmap(buf, &map);
      }
      gst_sample_unref(sample);
    }
    return out;
  }

  GstElement *src = nullptr;
  bool paused = false;

 private:
  ScratchDir dir_;
  SyntheticCube cube_;  // 10 lines
  std::vector<uint8_t> data_;
  GstElement *pipeline_ = nullptr, *sink_ = nullptr;
};

// What a SEEKING query on `element` says for `format`: seekable, and the end.
std::pair<bool, gint64> seeking(GstElement *element, GstFormat format) {
  GstQuery *query = gst_query_new_seeking(format);
  gboolean seekable = FALSE;
  gint64 end = 0;
  if (gst_element_query(element, query)) gst_query_parse_seeking(query, nullptr, &seekable, nullptr, &end);
  gst_query_unref(query);
  return {bool(seekable), end};
}

using Block = std::tuple<guint64, guint, GstClockTime>;

}  // namespace

// With line-duration the stream has a duration and seeks to the line at the
// requested time.
TEST(EnviSrc, DurationAndSeekWithLineDuration) {
  SeekableCube c("line-duration=1000000");
  ASSERT_TRUE(c.paused);
  gint64 duration = 0;
  EXPECT_TRUE(gst_element_query_duration(c.src, GST_FORMAT_TIME, &duration));
  EXPECT_EQ(duration, gint64(10 * GST_MSECOND));
  EXPECT_EQ(seeking(c.src, GST_FORMAT_TIME), std::make_pair(true, gint64(10 * GST_MSECOND)));
  ASSERT_TRUE(c.seek(1.0, GST_FORMAT_TIME, 5 * GST_MSECOND, -1));
  // The first block starts at the line of the seek time; each is stamped with its first line's time.
  EXPECT_EQ(c.blocks(), (std::vector<Block>{{5, 3, 5 * GST_MSECOND}, {8, 2, 8 * GST_MSECOND}}));
}

// Lines are the pad's unit (GST_FORMAT_DEFAULT): without line-duration the
// stream has no time axis, yet it is seekable by line, a seek's stop ends it
// after that line, and position and duration answer in lines. Time seeks
// fail clearly there, and no rate plays lines backwards.
TEST(EnviSrc, SeekByLineWithoutATimeAxis) {
  SeekableCube c("");
  ASSERT_TRUE(c.paused);
  gint64 value = 0;
  EXPECT_TRUE(gst_element_query_duration(c.src, GST_FORMAT_DEFAULT, &value));
  EXPECT_EQ(value, 10);
  if (gst_element_query_duration(c.src, GST_FORMAT_TIME, &value)) {
    EXPECT_EQ(value, -1) << "no time axis: unknown";
  }
  EXPECT_EQ(seeking(c.src, GST_FORMAT_DEFAULT), std::make_pair(true, gint64(10)));
  EXPECT_FALSE(seeking(c.src, GST_FORMAT_TIME).first);
  EXPECT_FALSE(c.seek(1.0, GST_FORMAT_TIME, 5 * GST_MSECOND, -1)) << "no time to seek to";
  EXPECT_FALSE(c.seek(-1.0, GST_FORMAT_DEFAULT, 0, 4)) << "lines are read forwards only";
  ASSERT_TRUE(c.seek(1.0, GST_FORMAT_DEFAULT, 4, 9));
  EXPECT_EQ(c.blocks(), (std::vector<Block>{{4, 3, GST_CLOCK_TIME_NONE}, {7, 2, GST_CLOCK_TIME_NONE}}));
  EXPECT_TRUE(gst_element_query_position(c.src, GST_FORMAT_DEFAULT, &value));
  EXPECT_EQ(value, 9) << "the line after the last one pushed";
}

// A seek the source refuses (in time without a time axis; a start after the
// stop) is refused before anything is flushed: the stream goes on as it was,
// every line from the first.
TEST(EnviSrc, RefusedSeeksLeaveTheStreamAsItWas) {
  for (const char *options : {"", "line-duration=1000000"}) {
    SCOPED_TRACE(options);
    const bool timed = *options != '\0';
    SeekableCube c(options);
    ASSERT_TRUE(c.paused);
    if (!timed) {
      EXPECT_FALSE(c.seek(1.0, GST_FORMAT_TIME, 2500 * GST_USECOND, 4500 * GST_USECOND)) << "no time axis";
    }
    EXPECT_FALSE(c.seek(1.0, GST_FORMAT_DEFAULT, 7, 2)) << "lines 7 to 2";
    EXPECT_FALSE(c.seek(1.0, GST_FORMAT_TIME, 7 * GST_MSECOND, 2 * GST_MSECOND)) << "7 ms to 2 ms";
    auto at = [timed](guint64 line) { return timed ? line * GST_MSECOND : GST_CLOCK_TIME_NONE; };
    EXPECT_EQ(c.blocks(), (std::vector<Block>{{0, 3, at(0)}, {3, 3, at(3)}, {6, 3, at(6)}, {9, 1, at(9)}}));
  }
}

// With line-duration a seek by line is a seek to that line's time (lines and
// time convert both ways), and its stop ends the stream after that line.
TEST(EnviSrc, SeekByLineWithLineDuration) {
  SeekableCube c("line-duration=1000000");
  ASSERT_TRUE(c.paused);
  gint64 value = 0;
  EXPECT_TRUE(gst_element_query_convert(c.src, GST_FORMAT_DEFAULT, 4, GST_FORMAT_TIME, &value));
  EXPECT_EQ(value, gint64(4 * GST_MSECOND));
  EXPECT_TRUE(gst_element_query_convert(c.src, GST_FORMAT_TIME, gint64(7500 * GST_USECOND), GST_FORMAT_DEFAULT,
                                        &value));
  EXPECT_EQ(value, 7) << "the line being scanned at that time";
  EXPECT_EQ(seeking(c.src, GST_FORMAT_DEFAULT), std::make_pair(true, gint64(10)));
  ASSERT_TRUE(c.seek(1.0, GST_FORMAT_DEFAULT, 2, 7));
  EXPECT_EQ(c.blocks(), (std::vector<Block>{{2, 3, 2 * GST_MSECOND}, {5, 2, 5 * GST_MSECOND}}));
}
