// ENVI header parsing and block reading: synthetic files of every data type,
// byte order and interleave (fresh random samples each run), malformed
// headers and short files, and the real AVIRIS-NG tiles.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>

#include "hsi/convert.h"
#include "hsi/envi.h"
#include "hsi_test_util.h"

using namespace cs::hsi;
using hsi_test::ScratchDir;

namespace {

// Random samples of `type` as bit patterns (uint64) plus their exact values
// (double; integers beyond 2^53 are not drawn so the double is exact).
struct RandomSamples {
  std::vector<uint64_t> bits;
  std::vector<double> values;
};

RandomSamples random_samples(DataType type, size_t n, std::mt19937_64 &rng) {
  RandomSamples s;
  s.bits.resize(n);
  s.values.resize(n);
  std::normal_distribution<double> normal(0.0, 1.0);
  for (size_t i = 0; i < n; ++i) {
    const uint64_t r = rng();
    uint64_t bits = 0;
    double value = 0;
    switch (type) {
      case DataType::u8: bits = r & 0xff, value = double(bits); break;
      case DataType::i16: bits = r & 0xffff, value = double(int16_t(uint16_t(bits))); break;
      case DataType::u16: bits = r & 0xffff, value = double(bits); break;
      case DataType::i32: bits = r & 0xffffffffu, value = double(int32_t(uint32_t(bits))); break;
      case DataType::u32: bits = r & 0xffffffffu, value = double(bits); break;
      case DataType::i64: {
        const int64_t v = int64_t(r) >> 11;  // |v| < 2^53
        bits = uint64_t(v), value = double(v);
        break;
      }
      case DataType::u64: bits = r >> 11, value = double(bits); break;
      case DataType::f32: {
        const float f = float(normal(rng) * std::pow(10.0, double(r % 9) - 4));
        uint32_t u;
        std::memcpy(&u, &f, 4);
        bits = u, value = f;
        break;
      }
      case DataType::f64: {
        const double d = normal(rng) * std::pow(10.0, double(r % 13) - 6);
        std::memcpy(&bits, &d, 8);
        value = d;
        break;
      }
    }
    s.bits[i] = bits;
    s.values[i] = value;
  }
  return s;
}

struct SyntheticCube {
  size_t samples, lines, bands;
  DataType type;
  Interleave interleave;
  ByteOrder order;
  std::vector<double> values;  // [line][sample][band]
  std::string header_path;
};

// Writes a cube with random samples and `extra_header` lines; the data file
// starts with `header_offset` bytes of junk.
SyntheticCube write_cube(const ScratchDir &dir, const std::string &name, size_t samples, size_t lines, size_t bands,
                         DataType type, Interleave il, ByteOrder order, size_t header_offset, std::mt19937_64 &rng,
                         const std::string &extra_header = "") {
  SyntheticCube c{samples, lines, bands, type, il, order, {}, dir.file(name + ".hdr")};
  const size_t n = samples * lines * bands, size = sample_size(type);
  RandomSamples s = random_samples(type, n, rng);
  std::vector<uint8_t> file(header_offset + n * size);
  for (size_t i = 0; i < header_offset; ++i) file[i] = uint8_t(rng());
  c.values.resize(n);
  for (size_t l = 0; l < lines; ++l)
    for (size_t x = 0; x < samples; ++x)
      for (size_t b = 0; b < bands; ++b) {
        const size_t logical = (l * samples + x) * bands + b;
        const size_t stored = hsi_test::file_index(il, lines, samples, bands, l, x, b);
        hsi_test::put_sample(file, header_offset + stored * size, s.bits[logical], size, order);
        c.values[logical] = s.values[logical];
      }
  hsi_test::write_bytes(dir.file(name + ".img"), file.data(), file.size());
  hsi_test::write_text(c.header_path,
                       hsi_test::basic_header(samples, lines, bands, type, il, order, header_offset) + extra_header);
  return c;
}

// Reads the whole cube in blocks of `lines_per_block` lines and converts each
// block to float BIP.
std::vector<float> read_as_bip(const EnviReader &reader, size_t lines_per_block) {
  const EnviHeader &h = reader.header();
  std::vector<float> all(h.samples * h.lines * h.bands);
  for (size_t first = 0; first < h.lines; first += lines_per_block) {
    const size_t count = std::min(lines_per_block, h.lines - first);
    const std::vector<uint8_t> block = reader.read_lines(first, count);
    convert_to_bip_float(make_cube_block(h, block.data(), count), all.data() + first * h.samples * h.bands);
  }
  return all;
}

bool same_float(float a, float b) { return (std::isnan(a) && std::isnan(b)) || std::memcmp(&a, &b, 4) == 0; }

}  // namespace

TEST(EnviReader, EveryTypeByteOrderAndInterleaveReadsBack) {
  const uint32_t seed = cs_test::fresh_seed();
  std::mt19937_64 rng(seed);
  ScratchDir dir;
  int checked = 0;
  for (DataType type : kAllDataTypes)
    for (ByteOrder order : {ByteOrder::little_endian, ByteOrder::big_endian})
      for (Interleave il : {Interleave::bsq, Interleave::bil, Interleave::bip}) {
        const size_t samples = 3 + rng() % 9, lines = 2 + rng() % 8, bands = 1 + rng() % 13;
        const size_t offset = rng() % 3 == 0 ? 0 : rng() % 300;
        const std::string name = std::string(data_type_name(type)) + "_" + std::to_string(int(order)) + "_" +
                                 interleave_name(il);
        SCOPED_TRACE(name + " " + std::to_string(samples) + "x" + std::to_string(lines) + "x" +
                     std::to_string(bands) + " offset " + std::to_string(offset));
        const SyntheticCube cube = write_cube(dir, name, samples, lines, bands, type, il, order, offset, rng);
        EnviReader reader(cube.header_path);
        EXPECT_EQ(reader.header().data_type, type);
        EXPECT_EQ(reader.header().interleave, il);
        EXPECT_EQ(reader.header().byte_order, order);
        EXPECT_EQ(reader.header().header_offset, offset);
        const size_t lines_per_block = 1 + rng() % lines;
        const std::vector<float> got = read_as_bip(reader, lines_per_block);
        size_t wrong = 0;
        for (size_t i = 0; i < got.size(); ++i)
          if (!same_float(got[i], float(cube.values[i])) && wrong++ < 3)
            ADD_FAILURE() << "value " << i << ": read " << got[i] << ", stored " << cube.values[i];
        EXPECT_EQ(wrong, 0u);
        ++checked;
      }
  EXPECT_EQ(checked, 9 * 2 * 3);
}

TEST(EnviReader, DataFileNamedDirectlyFindsItsHeader) {
  std::mt19937_64 rng(cs_test::fresh_seed());
  ScratchDir dir;
  write_cube(dir, "cube", 4, 3, 2, DataType::i16, Interleave::bil, ByteOrder::big_endian, 0, rng);
  EnviReader by_data(dir.file("cube.img"));
  EXPECT_EQ(by_data.header_path(), dir.file("cube.hdr"));
  EnviReader by_header(dir.file("cube.hdr"));
  EXPECT_EQ(by_header.data_path(), dir.file("cube.img"));
  EXPECT_EQ(by_data.read_lines(0, 3), by_header.read_lines(0, 3));
}

TEST(EnviReader, IgnoreValueBecomesNaNAndScaleFactorDivides) {
  std::mt19937_64 rng(cs_test::fresh_seed());
  ScratchDir dir;
  for (DataType type : {DataType::i16, DataType::u16, DataType::f32, DataType::f64, DataType::i32}) {
    SCOPED_TRACE(data_type_name(type));
    // First write with random samples to learn one of them; use it as the
    // ignore value, so every sample equal to it must read as NaN.
    const std::string name = std::string("ign_") + data_type_name(type);
    SyntheticCube cube =
        write_cube(dir, name, 6, 5, 4, type, Interleave::bsq, ByteOrder::big_endian, 0, rng);
    const double ignore = cube.values[rng() % cube.values.size()];
    const double scale = 1000.0 + double(rng() % 9000);
    std::ostringstream extra;
    extra.precision(17);
    extra << "data ignore value = " << ignore << "\nreflectance scale factor = " << scale << "\n";
    hsi_test::write_text(cube.header_path, hsi_test::basic_header(6, 5, 4, type, Interleave::bsq,
                                                                  ByteOrder::big_endian) +
                                               extra.str());
    EnviReader reader(cube.header_path);
    ASSERT_TRUE(reader.header().data_ignore_value.has_value());
    const std::vector<float> got = read_as_bip(reader, 2);
    size_t ignored = 0;
    for (size_t i = 0; i < got.size(); ++i) {
      if (cube.values[i] == ignore) {
        EXPECT_TRUE(std::isnan(got[i])) << i;
        ++ignored;
      } else {
        EXPECT_TRUE(same_float(got[i], float(cube.values[i] * (1.0 / scale)))) << i << ": " << got[i];
      }
    }
    EXPECT_GE(ignored, 1u);
  }
}

TEST(EnviHeader, ParsesListsSpanningLinesAndAllKnownKeys) {
  const std::string text =
      "ENVI\n"
      "description = {\n  a cube,\n  two lines}\n"
      "samples = 2\nlines = 3\nbands = 4\n"
      "header offset = 16\nfile type = ENVI Standard\ndata type = 12\ninterleave = BIL\n"
      "; a comment line\n"
      "byte order = 1\n"
      "wavelength units = Micrometers\n"
      "wavelength = { 0.4, 0.5,\n 0.6,\n 0.7 }\n"
      "fwhm = {0.01, 0.01, 0.02, 0.02}\n"
      "bbl = {1, 0.0, 1.0, 1}\n"
      "data ignore value = -9999\n"
      "reflectance scale factor = 10000.0\n"
      "band names = {b1, b2, b3, b4}\n"
      "map info = {UTM, 1.0, 1.0, 277811.6, 4483607.4, 3.1, 3.1, 13, North, WGS-84}\n";
  const EnviHeader h = parse_envi_header(text, "test.hdr");
  EXPECT_EQ(h.samples, 2u);
  EXPECT_EQ(h.lines, 3u);
  EXPECT_EQ(h.bands, 4u);
  EXPECT_EQ(h.header_offset, 16u);
  EXPECT_EQ(h.data_type, DataType::u16);
  EXPECT_EQ(h.interleave, Interleave::bil);
  EXPECT_EQ(h.byte_order, ByteOrder::big_endian);
  EXPECT_EQ(h.description, "a cube,\n  two lines");
  ASSERT_EQ(h.wavelength.size(), 4u);
  EXPECT_DOUBLE_EQ(h.wavelength[2], 0.6);
  const std::vector<double> nm = h.wavelengths_nm();
  EXPECT_DOUBLE_EQ(nm[3], 700.0);
  EXPECT_DOUBLE_EQ(h.fwhm_nm()[2], 20.0);
  EXPECT_EQ(h.bbl, (std::vector<uint8_t>{1, 0, 1, 1}));
  EXPECT_FALSE(h.band_is_good(1));
  EXPECT_DOUBLE_EQ(*h.data_ignore_value, -9999.0);
  EXPECT_DOUBLE_EQ(*h.reflectance_scale_factor, 10000.0);
  EXPECT_EQ(h.band_names, (std::vector<std::string>{"b1", "b2", "b3", "b4"}));
  ASSERT_NE(h.find("map info"), nullptr);
  EXPECT_EQ(h.find("map info")->line, 23);
  EXPECT_EQ(h.find("wavelength")->line, 15);
  EXPECT_EQ(h.data_bytes(), 2u * 3 * 4 * 2);
}

TEST(EnviHeader, MalformedHeadersNameTheKeyAndLine) {
  const std::string base = "ENVI\nsamples = 4\nlines = 3\nbands = 2\ndata type = 2\ninterleave = bsq\nbyte order = 0\n";
  struct Case {
    std::string text;
    std::vector<std::string> expected;  // every one must appear in the message
  };
  const std::vector<Case> cases = {
      {"ENVY\nsamples = 1\n", {"bad.hdr line 1", "not an ENVI header"}},
      {"ENVI\nlines = 3\nbands = 2\ndata type = 4\n", {"'samples' is missing"}},
      {"ENVI\nsamples = 0\nlines = 3\nbands = 2\ndata type = 1\n", {"line 2", "key 'samples'", "at least 1"}},
      {"ENVI\nsamples = ten\nlines = 3\nbands = 2\ndata type = 1\n", {"line 2", "key 'samples'", "whole number"}},
      {"ENVI\nsamples = 4\nlines = -3\nbands = 2\ndata type = 1\n", {"line 3", "key 'lines'"}},
      {"ENVI\nsamples = 4\nlines = 3\nbands = 2\ndata type = 7\n", {"line 5", "key 'data type'", "'7'"}},
      {"ENVI\nsamples = 4\nlines = 3\nbands = 2\ndata type = 6\n", {"line 5", "key 'data type'", "complex"}},
      {base + "byte order = 2\n", {"key 'byte order'", "appears twice"}},
      {"ENVI\nsamples = 4\nlines = 3\nbands = 2\ndata type = 2\ninterleave = bsq\nbyte order = 2\n",
       {"line 7", "key 'byte order'", "'2'"}},
      {"ENVI\nsamples = 4\nlines = 3\nbands = 2\ndata type = 2\nbyte order = 0\ninterleave = bsx\n",
       {"line 7", "key 'interleave'", "bsx"}},
      {"ENVI\nsamples = 4\nlines = 3\nbands = 2\ndata type = 2\ninterleave = bil\n", {"'byte order' is missing"}},
      {"ENVI\nsamples = 4\nlines = 3\nbands = 2\ndata type = 1\n", {"'interleave' is missing"}},
      {base + "wavelength = {400, 500, 600}\n", {"line 8", "key 'wavelength'", "3 values", "2 bands"}},
      {base + "wavelength = {400,\n abc}\n", {"line 8", "key 'wavelength'", "item 2"}},
      {base + "fwhm = {10, -1}\n", {"line 8", "key 'fwhm'", "item 2"}},
      {base + "wavelength = {400,\n 500\n", {"line 8", "key 'wavelength'", "never closed"}},
      {base + "wavelength = {400, 500} 600\n", {"line 8", "key 'wavelength'", "after the closing"}},
      {base + "this line has no equals sign\n", {"line 8", "expected 'key = value'"}},
      {base + "samples = 4\n", {"line 8", "key 'samples'", "appears twice (first at line 2)"}},
      {base + "bbl = {1, 2}\n", {"line 8", "key 'bbl'", "item 2"}},
      {base + "reflectance scale factor = 0\n", {"line 8", "key 'reflectance scale factor'"}},
      {base + "data ignore value = none\n", {"line 8", "key 'data ignore value'"}},
      {base + "header offset = -5\n", {"line 8", "key 'header offset'"}},
      {base + "band names = {a, b, c}\n", {"line 8", "key 'band names'", "3 values"}},
      {"ENVI\nsamples = 99999999999\nlines = 99999999999\nbands = 2\ndata type = 5\ninterleave = bip\nbyte order = 0\n",
       {"key 'samples'", "not a plausible file size"}},
  };
  for (const Case &c : cases) {
    try {
      parse_envi_header(c.text, "bad.hdr");
      ADD_FAILURE() << "accepted:\n" << c.text;
    } catch (const EnviError &e) {
      const std::string what = e.what();
      for (const std::string &needle : c.expected)
        EXPECT_NE(what.find(needle), std::string::npos) << "'" << needle << "' not in: " << what;
    }
  }
}

TEST(EnviReader, ShortDataFileIsAnError) {
  std::mt19937_64 rng(cs_test::fresh_seed());
  ScratchDir dir;
  write_cube(dir, "short", 5, 4, 3, DataType::f32, Interleave::bip, ByteOrder::little_endian, 20, rng);
  std::filesystem::resize_file(dir.file("short.img"), 20 + 5 * 4 * 3 * 4 - 1);
  try {
    EnviReader reader(dir.file("short.hdr"));
    FAIL() << "a truncated data file was accepted";
  } catch (const EnviError &e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("259 bytes"), std::string::npos) << what;
    EXPECT_NE(what.find("needs 260"), std::string::npos) << what;
    EXPECT_NE(what.find("truncated"), std::string::npos) << what;
  }
}

TEST(EnviReader, MissingFilesAreErrors) {
  ScratchDir dir;
  EXPECT_THROW(EnviReader(dir.file("nothing.hdr")), EnviError);
  hsi_test::write_text(dir.file("lonely.hdr"), "ENVI\nsamples = 1\nlines = 1\nbands = 1\ndata type = 1\n");
  EXPECT_THROW(EnviReader(dir.file("lonely.hdr")), EnviError);
  hsi_test::write_text(dir.file("data.img"), "xyz");
  EXPECT_THROW(EnviReader(dir.file("data.img")), EnviError);
  // What is missing, or a directory, is named as such.
  auto what = [](const std::function<void()> &f) {
    try {
      f();
    } catch (const EnviError &e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(what([&] { EnviReader r(dir.file("nothing.hdr")); }).find("the ENVI header does not exist"),
            std::string::npos);
  EXPECT_NE(what([&] { EnviReader r(dir.file("nothing.img")); }).find("the ENVI data file does not exist"),
            std::string::npos);
  EXPECT_NE(what([&] { read_envi_header(dir.path()); }).find("is a directory"), std::string::npos);
  EXPECT_EQ(not_a_regular_file(dir.file("data.img")), "");
}

TEST(EnviReader, ReadsOutsideTheImageThrow) {
  std::mt19937_64 rng(cs_test::fresh_seed());
  ScratchDir dir;
  write_cube(dir, "c", 3, 4, 2, DataType::u8, Interleave::bsq, ByteOrder::little_endian, 0, rng);
  EnviReader reader(dir.file("c.hdr"));
  EXPECT_THROW(reader.read_lines(3, 2), std::out_of_range);
  EXPECT_NO_THROW(reader.read_lines(3, 1));
}

// Large blocks are read by several threads in pieces: the same bytes as one
// thread reads, for blocks that split unevenly, and a read that fails in a
// helper thread (the file shrank after it was opened) is the same error.
TEST(EnviReader, ReadsSplitOverThreadsEqualOneThread) {
  std::mt19937_64 rng(cs_test::fresh_seed());
  ScratchDir dir;
  // 1021 x 531 bytes a line: 37 lines are 20 MB, five pieces of 4 MiB and some.
  write_cube(dir, "big", 1021, 37, 531, DataType::u8, Interleave::bip, ByteOrder::little_endian, 97, rng);
  EnviReader one(dir.file("big.hdr"));
  EXPECT_EQ(one.read_threads(), 1);
  const std::vector<uint8_t> whole = one.read_lines(0, 37);
  for (int threads : {2, 3, 8, 0}) {
    SCOPED_TRACE("threads " + std::to_string(threads));
    EnviReader split(dir.file("big.hdr"));
    split.set_read_threads(threads);
    EXPECT_GE(split.read_threads(), 1);
    EXPECT_EQ(split.read_lines(0, 37), whole);
    for (size_t first : {size_t(0), size_t(5), size_t(19)}) {
      const size_t count = 37 - first - (first % 3);
      const std::vector<uint8_t> part = split.read_lines(first, count);
      EXPECT_TRUE(std::equal(part.begin(), part.end(), whole.begin() + long(first * one.line_bytes())))
          << "lines " << first << " + " << count;
    }
  }
  EnviReader shrinking(dir.file("big.hdr"));
  shrinking.set_read_threads(4);
  std::filesystem::resize_file(dir.file("big.img"), 97 + 30 * one.line_bytes());
  try {
    shrinking.read_lines(0, 37);
    FAIL() << "a read past the end of the shrunk file succeeded";
  } catch (const EnviError &e) {
    EXPECT_NE(std::string(e.what()).find("unexpected end of file"), std::string::npos) << e.what();
  }
}

TEST(EnviReaderRealData, AvirisNgTiles) {
  for (const std::string &tile : hsi_test::aviris_ng_tiles()) {
    HSI_REQUIRE_SHARED(path, tile);
    SCOPED_TRACE(path);
    EnviReader reader(path);
    const EnviHeader &h = reader.header();
    EXPECT_EQ(h.samples, 10u);
    EXPECT_EQ(h.lines, 10u);
    EXPECT_EQ(h.bands, 432u);
    EXPECT_EQ(h.data_type, DataType::f32);
    EXPECT_EQ(h.interleave, Interleave::bip);
    EXPECT_EQ(h.byte_order, ByteOrder::little_endian);
    ASSERT_EQ(h.wavelength.size(), 432u);
    EXPECT_DOUBLE_EQ(h.wavelength[0], 346.2995778);
    EXPECT_DOUBLE_EQ(h.wavelengths_nm()[0], 346.2995778);  // "Nanometers"
    EXPECT_EQ(h.fwhm.size(), 432u);
    ASSERT_EQ(h.bbl.size(), 432u);
    EXPECT_EQ(std::count(h.bbl.begin(), h.bbl.end(), 1), 373);
    ASSERT_NE(h.find("map info"), nullptr);
    EXPECT_NE(h.find("map info")->value.find("UTM"), std::string::npos);
    EXPECT_NE(h.find("correction factors"), nullptr);

    // Blocks of 3 lines decode to exactly the little-endian floats on disk.
    const std::vector<float> got = read_as_bip(reader, 3);
    const std::vector<float> raw = hsi_test::read_raw<float>(reader.data_path(), 10 * 10 * 432);
    EXPECT_EQ(std::memcmp(got.data(), raw.data(), raw.size() * 4), 0);
  }
}
