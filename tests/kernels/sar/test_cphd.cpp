// CPHD reader/writer: bit-exact round trips on simulated data, every sample
// format, multi-channel and 1.1 layouts, and malformed files rejected with
// an error that names the field and the byte offset.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <random>

#include "sar/cphd.h"
#include "sar/simulator.h"
#include "sar_test_util.h"
#include "test_support.h"

using namespace cs::sar;
using sar_test::TempDir;

namespace {

bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }
bool same_bits(const Vec3 &a, const Vec3 &b) { return same_bits(a.x, b.x) && same_bits(a.y, b.y) && same_bits(a.z, b.z); }

void expect_same_pvp(const PulseParameters &a, const PulseParameters &b, const PvpLayout &layout) {
  EXPECT_TRUE(same_bits(a.tx_time, b.tx_time));
  EXPECT_TRUE(same_bits(a.tx_pos, b.tx_pos));
  EXPECT_TRUE(same_bits(a.tx_vel, b.tx_vel));
  EXPECT_TRUE(same_bits(a.rcv_time, b.rcv_time));
  EXPECT_TRUE(same_bits(a.rcv_pos, b.rcv_pos));
  EXPECT_TRUE(same_bits(a.rcv_vel, b.rcv_vel));
  EXPECT_TRUE(same_bits(a.srp_pos, b.srp_pos));
  EXPECT_TRUE(same_bits(a.a_fdop, b.a_fdop));
  EXPECT_TRUE(same_bits(a.a_frr1, b.a_frr1));
  EXPECT_TRUE(same_bits(a.a_frr2, b.a_frr2));
  EXPECT_TRUE(same_bits(a.fx1, b.fx1));
  EXPECT_TRUE(same_bits(a.fx2, b.fx2));
  EXPECT_TRUE(same_bits(a.toa1, b.toa1));
  EXPECT_TRUE(same_bits(a.toa2, b.toa2));
  EXPECT_TRUE(same_bits(a.td_tropo_srp, b.td_tropo_srp));
  EXPECT_TRUE(same_bits(a.sc0, b.sc0));
  EXPECT_TRUE(same_bits(a.scss, b.scss));
  if (layout.has(Pvp::AmpSF)) {
    EXPECT_TRUE(same_bits(a.amp_sf, b.amp_sf));
  }
  if (layout.has(Pvp::SIGNAL)) {
    EXPECT_EQ(a.signal, b.signal);
  }
  if (layout.has(Pvp::TDIonoSRP)) {
    EXPECT_TRUE(same_bits(a.td_iono_srp, b.td_iono_srp));
  }
  if (layout.has(Pvp::TxACX)) {
    EXPECT_TRUE(same_bits(a.tx_acx, b.tx_acx));
    EXPECT_TRUE(same_bits(a.rcv_acy, b.rcv_acy));
    EXPECT_TRUE(same_bits(a.tx_eb[1], b.tx_eb[1]));
    EXPECT_TRUE(same_bits(a.rcv_eb[0], b.rcv_eb[0]));
  }
}

SimulatorConfig small_collection(Domain domain, uint32_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> pos(-40.0, 40.0), amp(0.5, 2.0);
  SimulatorConfig c;
  c.domain = domain;
  c.num_pulses = 37;
  c.bandwidth_hz = 100e6;
  c.pulse_length_s = 2e-6;
  c.sample_rate_hz = 120e6;
  c.snr_db = 10;
  c.noise_seed = rng();
  for (int i = 0; i < 3; ++i) c.targets.push_back({{pos(rng), pos(rng), 0.0}, {amp(rng), amp(rng)}});
  return c;
}

// Simulates, writes in uneven blocks, and returns what was written.
struct Written {
  CphdMetadata meta;
  std::vector<PulseParameters> pvp;
  std::vector<std::complex<float>> samples;
};

Written write_simulated(const std::string &path, const SimulatorConfig &config) {
  PhaseHistorySimulator sim(config);
  Written w;
  const int64_t n = config.num_pulses, s = sim.samples_per_pulse();
  w.pvp.resize(static_cast<size_t>(n));
  w.samples.resize(static_cast<size_t>(n * s));
  sim.generate(0, n, w.pvp.data(), w.samples.data());
  CphdWriter writer(path, sim.cphd_metadata(n));
  for (int64_t first = 0; first < n;) {
    const int64_t count = std::min<int64_t>(n - first, 1 + first % 7);
    writer.write(0, std::vector<PulseParameters>(w.pvp.begin() + first, w.pvp.begin() + first + count),
                 w.samples.data() + first * s);
    first += count;
  }
  writer.close();
  w.meta = writer.metadata();
  return w;
}

}  // namespace

class CphdRoundTrip : public ::testing::TestWithParam<Domain> {};

TEST_P(CphdRoundTrip, SimulatedDataIsBitExact) {
  TempDir tmp;
  const std::string path = tmp.file("sim.cphd");
  const SimulatorConfig config = small_collection(GetParam(), cs_test::fresh_seed());
  const Written w = write_simulated(path, config);

  CphdReader reader(path);
  const CphdMetadata &m = reader.metadata();
  EXPECT_EQ(m.version, "1.0.1");
  EXPECT_EQ(m.domain, GetParam());
  EXPECT_EQ(m.format, SampleFormat::CF8);
  ASSERT_EQ(m.channels.size(), 1u);
  const int64_t s = w.meta.channels[0].num_samples;
  EXPECT_EQ(m.channels[0].num_vectors, config.num_pulses);
  EXPECT_EQ(m.channels[0].num_samples, s);
  EXPECT_EQ(m.channels[0].ref_vector_index, config.num_pulses / 2);
  EXPECT_EQ(m.tx_time1, w.pvp.front().tx_time);
  EXPECT_EQ(m.tx_time2, w.pvp.back().tx_time);
  EXPECT_EQ(m.fx_min, w.pvp.front().fx1);
  EXPECT_TRUE(m.channels[0].fx_fixed);
  EXPECT_TRUE(m.channels[0].srp_fixed);  // spotlight
  EXPECT_TRUE(same_bits(m.scene.iarp_ecf, w.meta.scene.iarp_ecf));
  EXPECT_EQ(m.waveform.has_value(), GetParam() == Domain::TOA);
  if (m.waveform) {
    EXPECT_EQ(m.waveform->lfm_rate_hz_per_s, config.bandwidth_hz / config.pulse_length_s);
    EXPECT_EQ(m.waveform->sample_rate_hz, config.sample_rate_hz);
  }
  expect_same_pvp(m.reference_vector, w.pvp[static_cast<size_t>(config.num_pulses / 2)], m.pvp);

  // Read back in blocks of another size than written.
  for (int64_t first = 0; first < config.num_pulses; first += 5) {
    const PulseBlock block = reader.read_block(0, first, 5);
    ASSERT_EQ(block.first_vector, first);
    for (size_t v = 0; v < block.pvp.size(); ++v)
      expect_same_pvp(block.pvp[v], w.pvp[static_cast<size_t>(first) + v], m.pvp);
    ASSERT_EQ(0, std::memcmp(block.samples.data(), w.samples.data() + first * s,
                             block.samples.size() * sizeof(std::complex<float>)))
        << "samples differ in block at " << first;
  }
}

INSTANTIATE_TEST_SUITE_P(Domains, CphdRoundTrip, ::testing::Values(Domain::FX, Domain::TOA),
                         [](const auto &info) { return std::string(to_string(info.param)); });

// Every sample format, two channels, optional and CPHD 1.1 parameters, and
// fewer vectors written than declared.
TEST(Cphd, AllFormatsChannelsAndOptionalParameters) {
  const uint32_t seed = cs_test::fresh_seed();
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-1e6, 1e6);
  for (SampleFormat format : {SampleFormat::CF8, SampleFormat::CI4, SampleFormat::CI2}) {
    for (const char *version : {"1.0.1", "1.1.0"}) {
      SCOPED_TRACE(std::string(to_string(format)) + " " + version);
      TempDir tmp;
      const std::string path = tmp.file("f.cphd");
      CphdMetadata meta;
      meta.version = version;
      meta.format = format;
      meta.domain = Domain::FX;
      meta.scene.iarp_ecf = llh_to_ecf({30.0, 10.0, 100.0});
      std::vector<Pvp> optional = {Pvp::AmpSF, Pvp::SIGNAL, Pvp::TDIonoSRP};
      if (std::string(version) == "1.1.0")
        optional.insert(optional.end(), {Pvp::TxACX, Pvp::TxACY, Pvp::TxEB, Pvp::RcvACX, Pvp::RcvACY, Pvp::RcvEB});
      meta.pvp = PvpLayout::packed(optional);
      meta.pvp.added.push_back({"UserWord", meta.pvp.num_bytes / 8, 1, "I8"});
      meta.pvp.num_bytes += 16;  // one added word plus one spare
      const int64_t declared[2] = {20, 9}, written[2] = {13, 9}, samples[2] = {24, 7};
      for (int c = 0; c < 2; ++c) {
        CphdChannel ch;
        ch.identifier = c == 0 ? "HH" : "VV";
        ch.num_vectors = declared[c];
        ch.num_samples = samples[c];
        ch.ref_vector_index = 100;  // clipped to the vectors written
        meta.channels.push_back(ch);
      }
      const float full_scale = format == SampleFormat::CI2 ? 127.f : (format == SampleFormat::CI4 ? 32767.f : 1e3f);
      std::vector<std::vector<PulseParameters>> pvps(2);
      std::vector<std::vector<std::complex<float>>> data(2);
      {
        CphdWriter writer(path, meta);
        for (int c = 0; c < 2; ++c) {
          for (int64_t v = 0; v < written[c]; ++v) {
            PulseParameters p;
            p.tx_time = 0.01 * static_cast<double>(v) + 1e-3 * (u(rng) / 1e6 + 1);
            p.tx_pos = {u(rng), u(rng), u(rng)};
            p.tx_vel = {u(rng), u(rng), u(rng)};
            p.rcv_time = p.tx_time + 1e-4;
            p.rcv_pos = {u(rng), u(rng), u(rng)};
            p.rcv_vel = {u(rng), u(rng), u(rng)};
            p.srp_pos = {u(rng), u(rng), u(rng)};
            p.amp_sf = 1.0 + u(rng) / 4e6;
            p.a_fdop = u(rng);
            p.a_frr1 = u(rng);
            p.a_frr2 = u(rng);
            p.fx1 = 9e9 + u(rng);
            p.fx2 = 10e9 + u(rng);
            p.toa1 = -1e-6 + u(rng) * 1e-13;
            p.toa2 = 1e-6 + u(rng) * 1e-13;
            p.td_tropo_srp = u(rng) * 1e-12;
            p.td_iono_srp = u(rng) * 1e-12;
            p.sc0 = 9e9 + u(rng);
            p.scss = 1e6 + u(rng);
            p.signal = static_cast<int64_t>(rng() % 2);
            p.tx_acx = {u(rng), u(rng), u(rng)};
            p.tx_acy = {u(rng), u(rng), u(rng)};
            p.rcv_acx = {u(rng), u(rng), u(rng)};
            p.rcv_acy = {u(rng), u(rng), u(rng)};
            p.tx_eb = {u(rng), u(rng)};
            p.rcv_eb = {u(rng), u(rng)};
            pvps[c].push_back(p);
          }
          // Integer formats take integral values: then the round trip is exact.
          std::uniform_int_distribution<int> level(-static_cast<int>(full_scale), static_cast<int>(full_scale));
          std::normal_distribution<float> g(0.f, full_scale);
          data[c].resize(static_cast<size_t>(written[c] * samples[c]));
          for (auto &x : data[c])
            x = format == SampleFormat::CF8 ? std::complex<float>(g(rng), g(rng))
                                            : std::complex<float>(float(level(rng)), float(level(rng)));
        }
        // Interleave the channels' blocks.
        writer.write(1, std::vector<PulseParameters>(pvps[1].begin(), pvps[1].begin() + 4), data[1].data());
        writer.write(0, pvps[0], data[0].data());
        writer.write(1, std::vector<PulseParameters>(pvps[1].begin() + 4, pvps[1].end()), data[1].data() + 4 * samples[1]);
        EXPECT_THROW(writer.write(1, {pvps[1][0]}, data[1].data()), CphdError);  // past the declared count
        writer.close();
      }
      CphdReader reader(path);
      const CphdMetadata &m = reader.metadata();
      EXPECT_EQ(m.version, version);
      EXPECT_EQ(m.format, format);
      ASSERT_EQ(m.channels.size(), 2u);
      EXPECT_EQ(m.channel_index("VV"), 1u);
      ASSERT_EQ(m.pvp.added.size(), 1u);
      EXPECT_EQ(m.pvp.added[0].name, "UserWord");
      for (int c = 0; c < 2; ++c) {
        EXPECT_EQ(m.channels[c].num_vectors, written[c]);
        EXPECT_EQ(m.channels[c].ref_vector_index, written[c] - 1);
        const std::vector<PulseParameters> back = reader.read_pvp(c, 0, written[c]);
        for (int64_t v = 0; v < written[c]; ++v) expect_same_pvp(back[v], pvps[c][v], m.pvp);
        std::vector<std::complex<float>> samples_back(data[c].size());
        reader.read_signal(c, 0, written[c], samples_back.data(), /*apply_amp_sf=*/false);
        EXPECT_EQ(0, std::memcmp(samples_back.data(), data[c].data(), data[c].size() * sizeof(data[c][0])));
        // AmpSF applied on request.
        reader.read_signal(c, 0, written[c], samples_back.data(), /*apply_amp_sf=*/true);
        EXPECT_EQ(samples_back[samples[c]], data[c][samples[c]] * static_cast<float>(pvps[c][1].amp_sf));
        // Raw reading: host-order components, and back through write_raw.
        std::vector<uint8_t> raw(data[c].size() * bytes_per_sample(format));
        reader.read_signal_raw(c, 0, written[c], raw.data());
        if (format == SampleFormat::CI4) {
          int16_t first[2];
          std::memcpy(first, raw.data(), 4);
          EXPECT_EQ(first[0], static_cast<int16_t>(data[c][0].real()));
          EXPECT_EQ(first[1], static_cast<int16_t>(data[c][0].imag()));
        }
        if (c == 0) {
          const std::string copy = tmp.file("copy.cphd");
          CphdMetadata copy_meta = m;
          copy_meta.channels.resize(1);
          CphdWriter raw_writer(copy, copy_meta);
          raw_writer.write_raw(0, back, raw.data());
          raw_writer.close();
          CphdReader copy_reader(copy);
          std::vector<uint8_t> raw_again(raw.size());
          copy_reader.read_signal_raw(0, 0, written[0], raw_again.data());
          EXPECT_EQ(raw, raw_again);
        }
      }
      EXPECT_THROW(reader.read_pvp(0, written[0] - 1, 2), CphdError);
      EXPECT_THROW(reader.read_pvp(2, 0, 1), CphdError);
    }
  }
}

// Large signal reads split over threads (read, byte swap and conversion per
// piece) give what one thread gives, raw and converted with AmpSF, for a
// vector size that does not divide the pieces evenly.
TEST(Cphd, SignalReadsSplitOverThreadsEqualOneThread) {
  std::mt19937_64 rng(cs_test::fresh_seed());
  std::normal_distribution<float> g(0.f, 3000.f);
  for (SampleFormat format : {SampleFormat::CF8, SampleFormat::CI4}) {
    SCOPED_TRACE(to_string(format));
    TempDir tmp;
    const std::string path = tmp.file("big.cphd");
    const int64_t vectors = 700, samples = 4099;  // 23 MB of CF8, 11.5 MB of CI4
    CphdMetadata meta;
    meta.format = format;
    meta.domain = Domain::FX;
    meta.scene.iarp_ecf = llh_to_ecf({30.0, 10.0, 100.0});
    meta.pvp = PvpLayout::packed({Pvp::AmpSF});
    CphdChannel ch;
    ch.identifier = "HH";
    ch.num_vectors = vectors;
    ch.num_samples = samples;
    meta.channels.push_back(ch);
    std::vector<PulseParameters> pvp(static_cast<size_t>(vectors));
    for (int64_t v = 0; v < vectors; ++v) {
      PulseParameters &p = pvp[static_cast<size_t>(v)];
      p.tx_time = 1e-3 * double(v);
      p.rcv_time = p.tx_time + 1e-4;
      p.amp_sf = 0.5 + 1e-3 * double(v);
      p.fx1 = 9e9;
      p.fx2 = 10e9;
      p.sc0 = 9e9;
      p.scss = 1e9 / double(samples);
    }
    std::vector<std::complex<float>> data(static_cast<size_t>(vectors * samples));
    for (auto &x : data) x = {std::round(g(rng)), std::round(g(rng))};
    {
      CphdWriter writer(path, meta);
      writer.write(0, pvp, data.data());
      writer.close();
    }
    CphdReader one(path);
    EXPECT_EQ(one.read_threads(), 1);
    const size_t raw_bytes = size_t(vectors * samples) * (format == SampleFormat::CF8 ? 8 : 4);
    std::vector<uint8_t> raw_one(raw_bytes), raw_split(raw_bytes);
    std::vector<std::complex<float>> converted_one(data.size()), converted_split(data.size());
    one.read_signal_raw(0, 0, vectors, raw_one.data());
    one.read_signal(0, 0, vectors, converted_one.data());
    for (int threads : {3, 0}) {
      SCOPED_TRACE("threads " + std::to_string(threads));
      CphdReader split(path);
      split.set_read_threads(threads);
      EXPECT_GE(split.read_threads(), 1);
      split.read_signal_raw(0, 0, vectors, raw_split.data());
      EXPECT_TRUE(raw_split == raw_one);
      split.read_signal(0, 0, vectors, converted_split.data());
      EXPECT_EQ(0, std::memcmp(converted_split.data(), converted_one.data(), data.size() * sizeof(data[0])));
      const int64_t first = 123, count = 511;  // a block off the pieces' boundaries
      std::vector<std::complex<float>> part(static_cast<size_t>(count * samples));
      split.read_signal(0, first, count, part.data());
      EXPECT_EQ(0, std::memcmp(part.data(), converted_one.data() + first * samples, part.size() * sizeof(part[0])));
    }
    // The samples themselves, with their AmpSF, for the first and last vectors.
    for (int64_t v : {int64_t(0), vectors - 1})
      for (int64_t i : {int64_t(0), samples - 1}) {
        const std::complex<float> stored = data[static_cast<size_t>(v * samples + i)];
        const std::complex<float> read = converted_one[static_cast<size_t>(v * samples + i)];
        EXPECT_FLOAT_EQ(read.real(), stored.real() * static_cast<float>(pvp[size_t(v)].amp_sf));
        EXPECT_FLOAT_EQ(read.imag(), stored.imag() * static_cast<float>(pvp[size_t(v)].amp_sf));
      }
  }
}

TEST(Cphd, IntegerFormatsRejectNonFiniteSamples) {
  TempDir tmp;
  CphdMetadata meta;
  meta.format = SampleFormat::CI4;
  meta.channels.push_back({});
  meta.channels[0].num_vectors = 1;
  meta.channels[0].num_samples = 2;
  CphdWriter writer(tmp.file("nan.cphd"), meta);
  const std::complex<float> samples[2] = {{1.f, std::nanf("")}, {2.f, 3.f}};
  EXPECT_THROW(writer.write(0, {PulseParameters{}}, samples), CphdError);
}

TEST(Cphd, WrittenXmlHasTheRequiredStructure) {
  TempDir tmp;
  const std::string path = tmp.file("x.cphd");
  write_simulated(path, small_collection(Domain::TOA, cs_test::fresh_seed()));
  CphdReader reader(path);
  const std::string &xml = reader.metadata().xml;
  for (const char *element : {"<CollectionID>", "<Global>", "<SceneCoordinates>", "<Data>", "<Channel>", "<PVP>",
                              "<Dwell>", "<ReferenceGeometry>", "<Monostatic>", "<TxRcv>",
                              "xmlns=\"http://api.nsgreg.nga.mil/schema/cphd/1.0.1\""})
    EXPECT_NE(xml.find(element), std::string::npos) << element;
  // The simulated platform looks left (north from south of the scene).
  EXPECT_NE(xml.find("<SideOfTrack>L</SideOfTrack>"), std::string::npos);
  const std::string file = sar_test::read_file(path);
  EXPECT_EQ(file.rfind("CPHD/1.0.1\n", 0), 0u);
}

// cphdsink writes its header before the first pulse, from a reference vector
// of zeros: the reference geometry is written with finite numbers all the same.
TEST(Cphd, ReferenceGeometryWithoutAReferenceVectorIsFinite) {
  CphdMetadata m = PhaseHistorySimulator(small_collection(Domain::TOA, cs_test::fresh_seed())).cphd_metadata(4);
  m.reference_vector = PulseParameters{};
  const std::string xml = cphd_metadata_to_xml(m);
  const size_t start = xml.find("<ReferenceGeometry>"), end = xml.find("</ReferenceGeometry>");
  ASSERT_NE(start, std::string::npos);
  ASSERT_NE(end, std::string::npos);
  const std::string geometry = xml.substr(start, end - start);
  for (const char *bad : {"nan", "NaN", "inf"}) EXPECT_EQ(geometry.find(bad), std::string::npos) << bad << geometry;
}

// ------------------------------------------------------------ malformed files

namespace {

struct Corruptible {
  TempDir tmp;
  std::string path, original;
  size_t header_end = 0, xml_offset = 0, xml_size = 0, pvp_offset = 0, signal_offset = 0;

  Corruptible() {
    path = tmp.file("good.cphd");
    write_simulated(path, small_collection(Domain::FX, cs_test::fresh_seed()));
    original = sar_test::read_file(path);
    header_end = original.find("\f\n") + 2;
    xml_offset = header_value("XML_BLOCK_BYTE_OFFSET");
    xml_size = header_value("XML_BLOCK_SIZE");
    pvp_offset = header_value("PVP_BLOCK_BYTE_OFFSET");
    signal_offset = header_value("SIGNAL_BLOCK_BYTE_OFFSET");
  }
  size_t header_value(const std::string &key) const {
    const size_t at = original.find(key + " := ");
    return std::stoull(original.substr(at + key.size() + 4));
  }
  // The header with one text replacement (the header is padded up to the XML).
  std::string with_header(const std::string &from, const std::string &to) const {
    std::string header = original.substr(0, header_end);
    const size_t at = header.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    header.replace(at, from.size(), to);
    EXPECT_LE(header.size(), xml_offset);
    header.resize(xml_offset, '\0');
    return header + original.substr(xml_offset);
  }
  // The XML with one text replacement, XML_BLOCK_SIZE updated.
  std::string with_xml(const std::string &from, const std::string &to) const {
    std::string xml = original.substr(xml_offset, xml_size);
    const size_t at = xml.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    xml.replace(at, from.size(), to);
    std::string file = original;
    std::string section = xml + "\f\n";
    EXPECT_LE(xml_offset + section.size(), pvp_offset);
    section.resize(pvp_offset - xml_offset, '\0');
    file.replace(xml_offset, section.size(), section);
    const std::string key = "XML_BLOCK_SIZE := " + std::to_string(xml_size) + "\n";
    const size_t k = file.find(key);
    std::string header = file.substr(0, header_end);
    header.replace(k, key.size(), "XML_BLOCK_SIZE := " + std::to_string(xml.size()) + "\n");
    header.resize(xml_offset, '\0');
    return header + file.substr(xml_offset);
  }
  // Opening `bytes` must throw a CphdError whose message holds every piece of `expected`.
  void expect_error(const std::string &bytes, std::vector<std::string> expected, const std::string &label) {
    const std::string bad = tmp.file("bad.cphd");
    sar_test::write_file(bad, bytes);
    try {
      CphdReader reader(bad);
      ADD_FAILURE() << label << ": accepted";
    } catch (const CphdError &e) {
      const std::string what = e.what();
      for (const std::string &piece : expected)
        EXPECT_NE(what.find(piece), std::string::npos) << label << ": '" << what << "' lacks '" << piece << "'";
    } catch (const std::exception &e) {
      ADD_FAILURE() << label << ": threw a non-CPHD error: " << e.what();
    }
  }
};

}  // namespace

TEST(CphdMalformed, TruncatedAnywhereNamesTheBlockAndOffset) {
  Corruptible f;
  std::mt19937_64 rng(cs_test::fresh_seed());
  std::vector<size_t> cuts = {0, 3, 12, f.header_end - 2, f.header_end, f.xml_offset + 17,
                              f.xml_offset + f.xml_size - 1, f.pvp_offset + 5, f.signal_offset - 1,
                              f.signal_offset + 8, f.original.size() - 1};
  for (int i = 0; i < 20; ++i) cuts.push_back(rng() % f.original.size());
  for (size_t cut : cuts) {
    const std::string label = "cut at " + std::to_string(cut);
    if (cut < f.header_end) {
      f.expect_error(f.original.substr(0, cut), {"CPHD", "offset"}, label);
    } else {
      // Past the header: the block that no longer fits is named with its header field.
      f.expect_error(f.original.substr(0, cut), {"_BLOCK_SIZE", "byte offset", "past the end of the file"}, label);
    }
  }
}

TEST(CphdMalformed, BadHeaderFields) {
  Corruptible f;
  const std::string pvp_offset = "PVP_BLOCK_BYTE_OFFSET := " + std::to_string(f.pvp_offset);
  f.expect_error(f.with_header(pvp_offset, "PVP_BLOCK_BYTE_OFFSET := 99999999999999"),
                 {"PVP_BLOCK_SIZE", "byte offset", "past the end"}, "absurd PVP offset");
  f.expect_error(f.with_header(pvp_offset, "PVP_BLOCK_BYTE_OFFSET := -8"), {"PVP_BLOCK_BYTE_OFFSET", "byte offset"},
                 "negative offset");
  f.expect_error(f.with_header(pvp_offset, "PVP_BLOCK_BYTE_OFFSET := 12"),
                 {"PVP_BLOCK_BYTE_OFFSET", "points into the file header"}, "offset into the header");
  f.expect_error(f.with_header(pvp_offset, "PVP_BLOCK_BYTE_OFFSET := 1x"), {"PVP_BLOCK_BYTE_OFFSET", "not a non-negative integer"},
                 "not a number");
  f.expect_error(f.with_header(pvp_offset, "PVP_BLOCK_OFFSET := 1"), {"PVP_BLOCK_BYTE_OFFSET", "missing"}, "missing key");
  f.expect_error(f.with_header("CLASSIFICATION", "XML_BLOCK_SIZE := 1\nCLASSIFICATION"), {"XML_BLOCK_SIZE", "twice"},
                 "duplicate key");
  f.expect_error(f.with_header("CPHD/1.0.1", "CPHD/0.3.0"), {"version", "0.3.0"}, "old version");
  f.expect_error(f.with_header("\f\n", "\n\n"), {"CPHD header", "byte offset"}, "no terminator");
  const std::string signal_size = "SIGNAL_BLOCK_SIZE := " + std::to_string(f.header_value("SIGNAL_BLOCK_SIZE"));
  f.expect_error(f.with_header(signal_size, "SIGNAL_BLOCK_SIZE := 8"),
                 {"SignalArrayByteOffset", "SIGNAL_BLOCK_SIZE", "file byte offset"}, "signal block too small");
}

TEST(CphdMalformed, BadXml) {
  Corruptible f;
  f.expect_error(f.with_xml("</Data>", "</Dta>"), {"XML", "not well-formed", "file byte offset"}, "broken tag");
  f.expect_error(f.with_xml("<NumVectors>37</NumVectors>", "<NumVectors>3x7</NumVectors>"),
                 {"/CPHD/Data/Channel[1]/NumVectors", "not an integer", "file byte offset"}, "bad integer");
  f.expect_error(f.with_xml("<NumVectors>37</NumVectors>", "<NumVectors>99999999999999</NumVectors>"),
                 {"NumVectors", "PVP_BLOCK_SIZE"}, "absurd NumVectors");
  f.expect_error(f.with_xml("<NumVectors>37</NumVectors>", "<NumVectors>4611686018427387904</NumVectors>"),
                 {"NumVectors", "overflow"}, "overflowing NumVectors");
  f.expect_error(f.with_xml("<SignalArrayByteOffset>0<", "<SignalArrayByteOffset>64<"),
                 {"SignalArrayByteOffset", "exceeds SIGNAL_BLOCK_SIZE"}, "wrong signal offset");
  f.expect_error(f.with_xml("<PVPArrayByteOffset>0<", "<PVPArrayByteOffset>8<"),
                 {"PVPArrayByteOffset", "exceeds PVP_BLOCK_SIZE"}, "wrong PVP array offset");
  // The packed layout puts SCSS, the last required parameter, at word 26 of 27.
  f.expect_error(f.with_xml("<Offset>26</Offset>", "<Offset>0</Offset>"), {"/CPHD/PVP/SCSS", "overlaps TxTime"},
                 "overlapping PVPs");
  f.expect_error(f.with_xml("<Offset>26</Offset>", "<Offset>1000</Offset>"),
                 {"/CPHD/PVP/SCSS", "outside NumBytesPVP"}, "PVP outside the vector");
  f.expect_error(f.with_xml("<NumBytesPVP>216<", "<NumBytesPVP>220<"), {"NumBytesPVP", "multiple of 8"},
                 "NumBytesPVP not in words");
  f.expect_error(f.with_xml("<Format>X=F8;Y=F8;Z=F8;</Format>", "<Format>X=F4;Y=F4;Z=F4;</Format>"),
                 {"/CPHD/PVP/TxPos/Format", "must be"}, "wrong PVP format");
  f.expect_error(f.with_xml("<TxPos>", "<TxPosition>"), {"XML"}, "mismatched renamed element");
  f.expect_error(f.with_xml("<SignalArrayFormat>CF8<", "<SignalArrayFormat>CF16<"),
                 {"SignalArrayFormat", "CF16"}, "unknown format");
  f.expect_error(f.with_xml("<DomainType>FX<", "<DomainType>XX<"), {"DomainType"}, "unknown domain");
  f.expect_error(f.with_xml("<RefVectorIndex>18<", "<RefVectorIndex>37<"), {"RefVectorIndex", "NumVectors"},
                 "reference vector out of range");
  f.expect_error(f.with_xml("<TxTime1>0<", "<TxTime1>nan<"), {"TxTime1", "finite"}, "NaN in XML");
  f.expect_error(f.with_xml("cphd/1.0.1", "cphd/1.1.0"), {"disagrees"}, "namespace vs header");
  f.expect_error(f.with_xml("<CollectorName>gst-cuda-sensing</CollectorName>", ""),
                 {"/CPHD/CollectionID/CollectorName", "required element is missing", "file byte offset"},
                 "missing element");
}

// An external entity in the XML is neither fetched nor expanded.
TEST(CphdMalformed, ExternalEntitiesAreNotExpanded) {
  Corruptible f;
  std::string bytes = f.with_xml("<CoreName>SARSIM</CoreName>", "<CoreName>&secret;</CoreName>");
  // Insert a DOCTYPE after the XML declaration (the padding before the PVP block absorbs it).
  const std::string doctype = "<!DOCTYPE CPHD [<!ENTITY secret SYSTEM \"file:///etc/hostname\">]>\n";
  const std::string key = "XML_BLOCK_SIZE := ";
  const size_t k = bytes.find(key) + key.size();
  const size_t eol = bytes.find('\n', k);
  const size_t xml_size = std::stoull(bytes.substr(k, eol - k));
  bytes.replace(k, eol - k, std::to_string(xml_size + doctype.size()));
  bytes.erase(f.xml_offset - (std::to_string(xml_size + doctype.size()).size() - (eol - k)),
              std::to_string(xml_size + doctype.size()).size() - (eol - k));  // keep the XML offset
  const size_t decl_end = bytes.find("?>\n", f.xml_offset) + 3;
  bytes.insert(decl_end, doctype);
  bytes.erase(f.pvp_offset, doctype.size());  // keep the PVP block where it was
  const std::string path = f.tmp.file("entity.cphd");
  sar_test::write_file(path, bytes);
  try {
    CphdReader reader(path);
    EXPECT_TRUE(reader.metadata().core_name.empty()) << reader.metadata().core_name;
  } catch (const CphdError &e) {
    SUCCEED() << "rejected: " << e.what();
  }
}

// Random byte flips must never crash or hang the reader: either it opens (the
// flip hit samples or padding) or it throws CphdError.
TEST(CphdMalformed, RandomByteFlipsNeverCrash) {
  Corruptible f;
  std::mt19937_64 rng(cs_test::fresh_seed());
  const std::string bad = f.tmp.file("flip.cphd");
  int rejected = 0;
  for (int i = 0; i < 300; ++i) {
    std::string bytes = f.original;
    const size_t limit = i % 2 ? f.pvp_offset : bytes.size();  // half of them in the header and XML
    for (int k = 0; k < 3; ++k) bytes[rng() % limit] = static_cast<char>(rng());
    sar_test::write_file(bad, bytes);
    try {
      CphdReader reader(bad);
      const auto &c = reader.metadata().channels[0];
      reader.read_block(0, 0, c.num_vectors);
    } catch (const CphdError &) {
      ++rejected;
    }
  }
  EXPECT_GT(rejected, 0);
}
