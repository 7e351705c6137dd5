// CPHD file reader and writer (header, block layout, PVP and signal arrays).
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>

#include "common/split_work.h"
#include "sar/cphd.h"

namespace cs::sar {

namespace {

constexpr char kSectionTerminator[] = "\f\n";
constexpr size_t kMaxHeaderBytes = 64 * 1024;  // far above any real header; bounds the search
constexpr uint64_t kBlockAlignment = 64;

uint64_t align_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

// a * b, or throws when it would not fit in 63 bits.
int64_t checked_mul(int64_t a, int64_t b, const std::string &what) {
  if (a < 0 || b < 0 || (a != 0 && b > std::numeric_limits<int64_t>::max() / a))
    throw CphdError("CPHD: " + what + ": size overflows (" + std::to_string(a) + " x " + std::to_string(b) + ")");
  return a * b;
}

bool is_supported_version(const std::string &v) { return v.rfind("1.0", 0) == 0 || v.rfind("1.1", 0) == 0; }

std::string major_minor(const std::string &v) { return v.substr(0, std::min<size_t>(3, v.size())); }

uint32_t bswap(uint32_t v) { return __builtin_bswap32(v); }
uint16_t bswap(uint16_t v) { return __builtin_bswap16(v); }

}  // namespace

// ------------------------------------------------------------ samples

// The sample loops below are built twice, for AVX2 and the baseline, and the
// loader picks one: the baseline has no byte shuffle, so its swaps go one
// component at a time (a third of the AVX2 rate, measured on read_signal).
#if defined(__x86_64__) && defined(__GNUC__)
#define CS_SAMPLE_LOOPS __attribute__((target_clones("avx2", "default")))
#else
#define CS_SAMPLE_LOOPS
#endif

CS_SAMPLE_LOOPS
void decode_samples(SampleFormat f, const uint8_t *in, size_t count, std::complex<float> *out, float scale) {
  auto *to = reinterpret_cast<float *>(out);
  switch (f) {
    case SampleFormat::CF8:
      for (size_t i = 0; i < 2 * count; ++i) {
        uint32_t u;
        std::memcpy(&u, in + 4 * i, 4);
        u = bswap(u);
        float v;
        std::memcpy(&v, &u, 4);
        to[i] = v * scale;
      }
      break;
    case SampleFormat::CI4:
      for (size_t i = 0; i < 2 * count; ++i) {
        uint16_t u;
        std::memcpy(&u, in + 2 * i, 2);
        to[i] = static_cast<float>(static_cast<int16_t>(bswap(u))) * scale;
      }
      break;
    case SampleFormat::CI2:
      for (size_t i = 0; i < 2 * count; ++i) to[i] = static_cast<float>(static_cast<int8_t>(in[i])) * scale;
      break;
  }
}

namespace {
template <typename Int>
Int saturate(float v) {
  if (!std::isfinite(v)) throw CphdError("CPHD: a NaN or Inf sample cannot be stored in an integer format");
  const float r = std::nearbyint(v);
  if (r < static_cast<float>(std::numeric_limits<Int>::min())) return std::numeric_limits<Int>::min();
  if (r > static_cast<float>(std::numeric_limits<Int>::max())) return std::numeric_limits<Int>::max();
  return static_cast<Int>(r);
}
}  // namespace

void encode_samples(SampleFormat f, const std::complex<float> *in, size_t count, uint8_t *out) {
  const float *v = reinterpret_cast<const float *>(in);
  switch (f) {
    case SampleFormat::CF8:
      for (size_t i = 0; i < 2 * count; ++i) {
        uint32_t u;
        std::memcpy(&u, &v[i], 4);
        u = bswap(u);
        std::memcpy(out + 4 * i, &u, 4);
      }
      break;
    case SampleFormat::CI4:
      for (size_t i = 0; i < 2 * count; ++i) {
        const uint16_t u = bswap(static_cast<uint16_t>(saturate<int16_t>(v[i])));
        std::memcpy(out + 2 * i, &u, 2);
      }
      break;
    case SampleFormat::CI2:
      for (size_t i = 0; i < 2 * count; ++i) out[i] = static_cast<uint8_t>(saturate<int8_t>(v[i]));
      break;
  }
}

// Host-order components <-> big-endian file bytes (a swap is its own inverse).
CS_SAMPLE_LOOPS
static void swap_components(SampleFormat f, const void *in, size_t count, void *out) {
  const size_t components = 2 * count;
  if (f == SampleFormat::CF8) {
    for (size_t i = 0; i < components; ++i) {
      uint32_t u;
      std::memcpy(&u, static_cast<const uint8_t *>(in) + 4 * i, 4);
      u = bswap(u);
      std::memcpy(static_cast<uint8_t *>(out) + 4 * i, &u, 4);
    }
  } else if (f == SampleFormat::CI4) {
    for (size_t i = 0; i < components; ++i) {
      uint16_t u;
      std::memcpy(&u, static_cast<const uint8_t *>(in) + 2 * i, 2);
      u = bswap(u);
      std::memcpy(static_cast<uint8_t *>(out) + 2 * i, &u, 2);
    }
  } else {
    std::memmove(out, in, components);
  }
}

// ------------------------------------------------------------ reader

CphdReader::CphdReader(const std::string &path) : path_(path) {
  file_ = std::fopen(path.c_str(), "rb");
  if (!file_) throw CphdError("CPHD: cannot open '" + path + "': " + std::strerror(errno));
  try {
    if (fseeko(file_, 0, SEEK_END) != 0) throw CphdError("CPHD: cannot seek in '" + path + "'");
    const off_t end = ftello(file_);
    if (end < 0) throw CphdError("CPHD: cannot size '" + path + "'");
    file_size_ = static_cast<uint64_t>(end);
    parse_header();
    check_layout();
  } catch (...) {
    std::fclose(file_);
    file_ = nullptr;
    throw;
  }
}

CphdReader::~CphdReader() {
  if (file_) std::fclose(file_);
}

namespace {
constexpr size_t kRunBytes = size_t(512) << 10;

// Calls body(at, size) over [begin, begin + bytes) in runs of at most
// kRunBytes (whole samples of `sample_bytes`), so that a run read from the
// file is converted while it is still in the core's cache.
template <class Body>
void for_each_run(size_t begin, size_t bytes, size_t sample_bytes, Body &&body) {
  const size_t run = kRunBytes / sample_bytes * sample_bytes;
  for (size_t at = begin, end = begin + bytes; at < end; at += run) body(at, std::min(run, end - at));
}
}  // namespace

void CphdReader::set_read_threads(int threads) { read_threads_ = threads > 0 ? threads : default_read_threads(); }

// pread on the file's descriptor: no shared file position, so pieces of one
// read may run on several threads.
void CphdReader::read_at(uint64_t offset, void *dst, size_t bytes, const char *what) const {
  if (offset > file_size_ || bytes > file_size_ - offset)
    throw CphdError(std::string("CPHD: ") + what + ": bytes [" + std::to_string(offset) + ", " +
                    std::to_string(offset + bytes) + ") lie past the end of the file (" +
                    std::to_string(file_size_) + " bytes)");
  auto *out = static_cast<uint8_t *>(dst);
  for (size_t done = 0; done < bytes;) {
    const ssize_t got = ::pread(fileno(file_), out + done, bytes - done, static_cast<off_t>(offset + done));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0)
      throw CphdError(std::string("CPHD: ") + what + ": read of " + std::to_string(bytes) + " bytes at byte offset " +
                      std::to_string(offset) + " failed (file changed or I/O error)");
    done += size_t(got);
  }
}

void CphdReader::parse_header() {
  const size_t probe = static_cast<size_t>(std::min<uint64_t>(file_size_, kMaxHeaderBytes));
  std::string text(probe, '\0');
  read_at(0, text.data(), probe, "file header");
  if (text.rfind("CPHD/", 0) != 0)
    throw CphdError("CPHD header (byte offset 0): the file does not start with 'CPHD/' (not a CPHD file)");
  const size_t first_eol = text.find('\n');
  if (first_eol == std::string::npos)
    throw CphdError("CPHD header (byte offset 0): version line has no end of line");
  const std::string version = text.substr(5, first_eol - 5);
  if (!is_supported_version(version))
    throw CphdError("CPHD header (byte offset 5): version '" + version + "' is not supported (1.0.x and 1.1.x are)");

  struct Field {
    std::string value;
    uint64_t line_offset;
  };
  std::map<std::string, Field> fields;
  size_t pos = first_eol + 1;
  bool terminated = false;
  while (pos < text.size()) {
    if (text.compare(pos, 2, kSectionTerminator) == 0) {
      terminated = true;
      break;
    }
    const size_t eol = text.find('\n', pos);
    if (eol == std::string::npos) break;
    const std::string line = text.substr(pos, eol - pos);
    const size_t sep = line.find(" := ");
    if (sep == std::string::npos)
      throw CphdError("CPHD header (byte offset " + std::to_string(pos) + "): line '" + line +
                      "' is not 'KEY := value'");
    const std::string key = line.substr(0, sep);
    if (fields.count(key))
      throw CphdError("CPHD header field " + key + " (byte offset " + std::to_string(pos) + "): appears twice");
    fields[key] = {line.substr(sep + 4), pos};
    pos = eol + 1;
  }
  if (!terminated)
    throw CphdError("CPHD header (byte offset " + std::to_string(pos) + "): no section terminator (\\f\\n) within " +
                    std::to_string(probe) + " bytes (truncated file or not CPHD)");

  auto number = [&](const char *key, Header &out, bool required) {
    const auto it = fields.find(key);
    if (it == fields.end()) {
      if (required)
        throw CphdError(std::string("CPHD header field ") + key + ": missing (header ends at byte offset " +
                        std::to_string(pos) + ")");
      return;
    }
    const std::string &v = it->second.value;
    char *end = nullptr;
    errno = 0;
    const long long n = std::strtoll(v.c_str(), &end, 10);
    if (v.empty() || *end != '\0' || errno == ERANGE || n < 0)
      throw CphdError(std::string("CPHD header field ") + key + " (byte offset " +
                      std::to_string(it->second.line_offset) + "): '" + v + "' is not a non-negative integer");
    out.value = n;
    out.line_offset = it->second.line_offset;
  };
  number("XML_BLOCK_SIZE", xml_size_, true);
  number("XML_BLOCK_BYTE_OFFSET", xml_offset_, true);
  number("PVP_BLOCK_SIZE", pvp_size_, true);
  number("PVP_BLOCK_BYTE_OFFSET", pvp_offset_, true);
  number("SIGNAL_BLOCK_SIZE", signal_size_, true);
  number("SIGNAL_BLOCK_BYTE_OFFSET", signal_offset_, true);
  number("SUPPORT_BLOCK_SIZE", support_size_, false);
  number("SUPPORT_BLOCK_BYTE_OFFSET", support_offset_, false);
  for (const char *key : {"CLASSIFICATION", "RELEASE_INFO"})
    if (!fields.count(key))
      throw CphdError(std::string("CPHD header field ") + key + ": missing (header ends at byte offset " +
                      std::to_string(pos) + ")");
  if ((support_size_.value < 0) != (support_offset_.value < 0))
    throw CphdError("CPHD header: SUPPORT_BLOCK_SIZE and SUPPORT_BLOCK_BYTE_OFFSET must come together");

  const uint64_t header_end = pos + 2;
  // Every block must lie inside the file, after the header.
  auto check_block = [&](const char *name, const Header &offset, const Header &size) {
    const uint64_t o = static_cast<uint64_t>(offset.value), s = static_cast<uint64_t>(size.value);
    if (o < header_end)
      throw CphdError(std::string("CPHD header field ") + name + "_BYTE_OFFSET (byte offset " +
                      std::to_string(offset.line_offset) + "): " + std::to_string(o) +
                      " points into the file header (which ends at byte " + std::to_string(header_end) + ")");
    if (o > file_size_ || s > file_size_ - o)
      throw CphdError(std::string("CPHD header field ") + name + "_SIZE (byte offset " +
                      std::to_string(size.line_offset) + "): block [" + std::to_string(o) + ", " +
                      std::to_string(o + s) + ") extends past the end of the file (" + std::to_string(file_size_) +
                      " bytes; truncated?)");
  };
  check_block("XML_BLOCK", xml_offset_, xml_size_);
  check_block("PVP_BLOCK", pvp_offset_, pvp_size_);
  check_block("SIGNAL_BLOCK", signal_offset_, signal_size_);
  if (support_size_.value >= 0) check_block("SUPPORT_BLOCK", support_offset_, support_size_);

  std::string xml(static_cast<size_t>(xml_size_.value), '\0');
  read_at(static_cast<uint64_t>(xml_offset_.value), xml.data(), xml.size(), "XML block");
  meta_ = cphd_metadata_from_xml(xml, static_cast<uint64_t>(xml_offset_.value));
  if (major_minor(meta_.version) != major_minor(version))
    throw CphdError("CPHD XML (file byte offset " + std::to_string(xml_offset_.value) + "): namespace version " +
                    meta_.version + " disagrees with the header's CPHD/" + version);
  meta_.version = version;
}

void CphdReader::check_layout() {
  const CphdMetadata &m = meta_;
  const std::string pvp_where =
      "CPHD XML /CPHD/Data/NumBytesPVP (XML block at file byte offset " + std::to_string(xml_offset_.value) + ")";
  if (m.pvp.num_bytes % 8 != 0)
    throw CphdError(pvp_where + ": " + std::to_string(m.pvp.num_bytes) + " is not a multiple of 8");
  const int64_t words = m.pvp.num_bytes / 8;
  // Each parameter inside the vector, none overlapping another.
  std::vector<std::string> owner(static_cast<size_t>(words));
  auto claim = [&](const std::string &name, int64_t offset, int64_t size) {
    if (offset + size > words)
      throw CphdError("CPHD XML /CPHD/PVP/" + name + "/Offset (XML block at file byte offset " +
                      std::to_string(xml_offset_.value) + "): words [" + std::to_string(offset) + ", " +
                      std::to_string(offset + size) + ") lie outside NumBytesPVP = " +
                      std::to_string(m.pvp.num_bytes) + " bytes");
    for (int64_t w = offset; w < offset + size; ++w) {
      if (!owner[static_cast<size_t>(w)].empty())
        throw CphdError("CPHD XML /CPHD/PVP/" + name + "/Offset (XML block at file byte offset " +
                        std::to_string(xml_offset_.value) + "): word " + std::to_string(w) + " overlaps " +
                        owner[static_cast<size_t>(w)]);
      owner[static_cast<size_t>(w)] = name;
    }
  };
  for (int i = 0; i < kNumPvps; ++i)
    if (m.pvp.offset_words[i] >= 0)
      claim(describe(static_cast<Pvp>(i)).name, m.pvp.offset_words[i],
            size_in_words(describe(static_cast<Pvp>(i)).type));
  for (const AddedPvp &a : m.pvp.added) claim("AddedPVP " + a.name, a.offset_words, a.size_words);

  const size_t bps = bytes_per_sample(m.format);
  for (size_t i = 0; i < m.channels.size(); ++i) {
    const CphdChannel &c = m.channels[i];
    const std::string where = "CPHD XML /CPHD/Data/Channel[" + std::to_string(i + 1) + "] (XML block at file byte offset " +
                              std::to_string(xml_offset_.value) + ")";
    const int64_t pvp_bytes = checked_mul(c.num_vectors, m.pvp.num_bytes, where + " NumVectors x NumBytesPVP");
    if (c.pvp_array_byte_offset > pvp_size_.value || pvp_bytes > pvp_size_.value - c.pvp_array_byte_offset)
      throw CphdError(where + "/PVPArrayByteOffset: PVP array [" + std::to_string(c.pvp_array_byte_offset) + ", " +
                      std::to_string(c.pvp_array_byte_offset + pvp_bytes) + ") of NumVectors " +
                      std::to_string(c.num_vectors) + " x NumBytesPVP " + std::to_string(m.pvp.num_bytes) +
                      " exceeds PVP_BLOCK_SIZE " + std::to_string(pvp_size_.value));
    const int64_t signal_bytes =
        checked_mul(checked_mul(c.num_vectors, c.num_samples, where + " NumVectors x NumSamples"),
                    static_cast<int64_t>(bps), where + " signal array bytes");
    if (c.signal_array_byte_offset > signal_size_.value ||
        signal_bytes > signal_size_.value - c.signal_array_byte_offset)
      throw CphdError(where + "/SignalArrayByteOffset: signal array [" + std::to_string(c.signal_array_byte_offset) +
                      ", " + std::to_string(c.signal_array_byte_offset + signal_bytes) + ") of NumVectors " +
                      std::to_string(c.num_vectors) + " x NumSamples " + std::to_string(c.num_samples) +
                      " exceeds SIGNAL_BLOCK_SIZE " + std::to_string(signal_size_.value));
  }
  // The first channel's reference vector, for the reference geometry.
  const CphdChannel &ref = m.channels.front();
  meta_.reference_vector = read_pvp(0, ref.ref_vector_index, 1).front();
}

void CphdReader::check_range(size_t channel, int64_t first, int64_t count) const {
  if (channel >= meta_.channels.size())
    throw CphdError("CPHD: channel index " + std::to_string(channel) + " out of range (" +
                    std::to_string(meta_.channels.size()) + " channels)");
  const int64_t n = meta_.channels[channel].num_vectors;
  if (first < 0 || count < 0 || first > n || count > n - first)
    throw CphdError("CPHD: vectors [" + std::to_string(first) + ", " + std::to_string(first + count) +
                    ") out of range for channel '" + meta_.channels[channel].identifier + "' (NumVectors " +
                    std::to_string(n) + ")");
}

std::vector<PulseParameters> CphdReader::read_pvp(size_t channel, int64_t first, int64_t count) {
  check_range(channel, first, count);
  const CphdChannel &c = meta_.channels[channel];
  const size_t vector_bytes = static_cast<size_t>(meta_.pvp.num_bytes);
  scratch_.resize(static_cast<size_t>(count) * vector_bytes);
  read_at(static_cast<uint64_t>(pvp_offset_.value + c.pvp_array_byte_offset + first * meta_.pvp.num_bytes),
          scratch_.data(), scratch_.size(), "PVP array");
  std::vector<PulseParameters> out(static_cast<size_t>(count));
  for (size_t v = 0; v < out.size(); ++v) meta_.pvp.decode(scratch_.data() + v * vector_bytes, out[v]);
  return out;
}

void CphdReader::read_signal_raw(size_t channel, int64_t first, int64_t count, void *out) {
  check_range(channel, first, count);
  const CphdChannel &c = meta_.channels[channel];
  const size_t bps = bytes_per_sample(meta_.format);
  const size_t samples = static_cast<size_t>(count * c.num_samples);
  const uint64_t offset = static_cast<uint64_t>(signal_offset_.value + c.signal_array_byte_offset) +
                          static_cast<uint64_t>(first * c.num_samples) * bps;
  auto *bytes = static_cast<uint8_t *>(out);
  for_each_piece(samples * bps, bps, read_threads_, kReadPiece, [&](size_t begin, size_t size) {
    for_each_run(begin, size, bps, [&](size_t at, size_t n) {
      read_at(offset + at, bytes + at, n, "signal array");
      swap_components(meta_.format, bytes + at, n / bps, bytes + at);
    });
  });
}

void CphdReader::read_signal(size_t channel, int64_t first, int64_t count, std::complex<float> *out,
                             bool apply_amp_sf) {
  check_range(channel, first, count);
  const CphdChannel &c = meta_.channels[channel];
  const size_t bps = bytes_per_sample(meta_.format);
  const size_t samples = static_cast<size_t>(count * c.num_samples);
  const bool scaled = apply_amp_sf && meta_.pvp.has(Pvp::AmpSF);
  const std::vector<PulseParameters> pvp = scaled ? read_pvp(channel, first, count) : std::vector<PulseParameters>();
  const uint64_t offset = static_cast<uint64_t>(signal_offset_.value + c.signal_array_byte_offset) +
                          static_cast<uint64_t>(first * c.num_samples) * bps;
  const size_t per_vector = static_cast<size_t>(c.num_samples);
  // Each piece on its own thread, read in cache-sized runs into one run
  // buffer, each run decoded (and scaled by its vectors' AmpSF) in one pass
  // while still in cache.
  for_each_piece(samples * bps, bps, read_threads_, kReadPiece, [&](size_t begin, size_t size) {
    std::vector<uint8_t> run(std::min(kRunBytes, size));
    for_each_run(begin, size, bps, [&](size_t at, size_t n) {
      read_at(offset + at, run.data(), n, "signal array");
      for (size_t i = at / bps, end = (at + n) / bps; i < end;) {
        const size_t vector = i / per_vector, stop = std::min(end, (vector + 1) * per_vector);
        const float scale = scaled ? static_cast<float>(pvp[vector].amp_sf) : 1.0f;
        decode_samples(meta_.format, run.data() + (i * bps - at), stop - i, out + i, scale);
        i = stop;
      }
    });
  });
}

PulseBlock CphdReader::read_block(size_t channel, int64_t first, int64_t count, bool apply_amp_sf) {
  check_range(channel, first, 0);
  const CphdChannel &c = meta_.channels[channel];
  count = std::max<int64_t>(0, std::min(count, c.num_vectors - first));
  PulseBlock block;
  block.first_vector = first;
  block.num_samples = c.num_samples;
  block.pvp = read_pvp(channel, first, count);
  block.samples.resize(static_cast<size_t>(count * c.num_samples));
  read_signal(channel, first, count, block.samples.data(), apply_amp_sf);
  return block;
}

// ------------------------------------------------------------ writer

struct CphdWriter::ChannelStats {
  bool any = false;
  PulseParameters first;
  double tx_min = 0, tx_max = 0, fx_min = 0, fx_max = 0, toa_min = 0, toa_max = 0;
  bool fx_fixed = true, toa_fixed = true, srp_fixed = true;

  void add(const PulseParameters &p) {
    if (!any) {
      any = true;
      first = p;
      tx_min = tx_max = p.tx_time;
      fx_min = p.fx1;
      fx_max = p.fx2;
      toa_min = p.toa1;
      toa_max = p.toa2;
    }
    tx_min = std::min(tx_min, p.tx_time);
    tx_max = std::max(tx_max, p.tx_time);
    fx_min = std::min(fx_min, p.fx1);
    fx_max = std::max(fx_max, p.fx2);
    toa_min = std::min(toa_min, p.toa1);
    toa_max = std::max(toa_max, p.toa2);
    fx_fixed = fx_fixed && p.fx1 == first.fx1 && p.fx2 == first.fx2;
    toa_fixed = toa_fixed && p.toa1 == first.toa1 && p.toa2 == first.toa2;
    srp_fixed = srp_fixed && p.srp_pos == first.srp_pos;
  }
};

namespace {
std::string header_text(const std::string &version, const std::map<std::string, std::string> &kv) {
  std::string h = "CPHD/" + version + "\n";
  for (const char *key : {"XML_BLOCK_SIZE", "XML_BLOCK_BYTE_OFFSET", "PVP_BLOCK_SIZE", "PVP_BLOCK_BYTE_OFFSET",
                          "SIGNAL_BLOCK_SIZE", "SIGNAL_BLOCK_BYTE_OFFSET", "CLASSIFICATION", "RELEASE_INFO"})
    h += std::string(key) + " := " + kv.at(key) + "\n";
  return h + kSectionTerminator;
}

void check_header_value(const std::string &name, const std::string &v) {
  if (v.find('\n') != std::string::npos || v.find('\f') != std::string::npos)
    throw CphdError("CPHD writer: " + name + " must not contain line breaks");
}
}  // namespace

CphdWriter::CphdWriter(const std::string &path, CphdMetadata meta) : path_(path), meta_(std::move(meta)) {
  CphdMetadata &m = meta_;
  if (m.version.rfind("1.0", 0) == 0) m.version = "1.0.1";
  else if (m.version.rfind("1.1", 0) == 0) m.version = "1.1.0";
  else throw CphdError("CPHD writer: version '" + m.version + "' (1.0.1 or 1.1.0 can be written)");
  if (m.channels.empty()) throw CphdError("CPHD writer: no channels");
  if (m.sgn != 1 && m.sgn != -1) throw CphdError("CPHD writer: SGN must be +1 or -1");
  check_header_value("classification", m.classification);
  check_header_value("release_info", m.release_info);
  int64_t needed_words = 0;
  for (int i = 0; i < kNumPvps; ++i) {
    const PvpDescriptor &d = describe(static_cast<Pvp>(i));
    if (d.required && !m.pvp.has(static_cast<Pvp>(i)))
      throw CphdError(std::string("CPHD writer: the PVP layout lacks required parameter ") + d.name);
    if (d.since_1_1 && m.pvp.has(static_cast<Pvp>(i)) && m.version != "1.1.0")
      throw CphdError(std::string("CPHD writer: ") + d.name + " needs version 1.1.0");
    if (m.pvp.has(static_cast<Pvp>(i)))
      needed_words = std::max(needed_words, m.pvp.offset_words[i] + size_in_words(d.type));
  }
  for (const AddedPvp &a : m.pvp.added) needed_words = std::max(needed_words, a.offset_words + a.size_words);
  if (m.pvp.num_bytes % 8 != 0 || m.pvp.num_bytes < needed_words * 8)
    throw CphdError("CPHD writer: NumBytesPVP " + std::to_string(m.pvp.num_bytes) +
                    " must be a multiple of 8 holding all parameters (" + std::to_string(needed_words * 8) + ")");

  // Layout: header, XML (with room for the values computed at close), PVP arrays, signal arrays.
  const std::string long_number(20, '9');
  const std::map<std::string, std::string> widest = {
      {"XML_BLOCK_SIZE", long_number},    {"XML_BLOCK_BYTE_OFFSET", long_number},
      {"PVP_BLOCK_SIZE", long_number},    {"PVP_BLOCK_BYTE_OFFSET", long_number},
      {"SIGNAL_BLOCK_SIZE", long_number}, {"SIGNAL_BLOCK_BYTE_OFFSET", long_number},
      {"CLASSIFICATION", m.classification}, {"RELEASE_INFO", m.release_info}};
  xml_offset_ = align_up(header_text(m.version, widest).size(), kBlockAlignment);
  // Data-dependent XML values are numbers of at most 24 characters; 64 per
  // value leaves ample room for all of them.
  xml_reserved_ = cphd_metadata_to_xml(m).size() + 8192 + 1024 * m.channels.size();
  pvp_offset_ = align_up(xml_offset_ + xml_reserved_ + 2, kBlockAlignment);
  int64_t pvp_bytes = 0, signal_bytes = 0;
  for (CphdChannel &c : m.channels) {
    if (c.num_vectors < 1 || c.num_samples < 1)
      throw CphdError("CPHD writer: channel '" + c.identifier + "' needs NumVectors and NumSamples >= 1");
    c.pvp_array_byte_offset = pvp_bytes;
    c.signal_array_byte_offset = signal_bytes;
    pvp_bytes += checked_mul(c.num_vectors, m.pvp.num_bytes, "writer PVP array");
    signal_bytes += checked_mul(checked_mul(c.num_vectors, c.num_samples, "writer signal array"),
                                static_cast<int64_t>(bytes_per_sample(m.format)), "writer signal array");
  }
  signal_offset_ = align_up(pvp_offset_ + static_cast<uint64_t>(pvp_bytes), kBlockAlignment);
  written_.assign(m.channels.size(), 0);
  for (const CphdChannel &c : m.channels) capacity_.push_back(c.num_vectors);
  stats_.resize(m.channels.size());

  file_ = std::fopen(path.c_str(), "w+b");
  if (!file_) throw CphdError("CPHD writer: cannot create '" + path + "': " + std::strerror(errno));
}

CphdWriter::~CphdWriter() {
  if (file_) {
    try {
      close();
    } catch (...) {
    }
    if (file_) std::fclose(file_);
  }
}

void CphdWriter::write_at(uint64_t offset, const void *src, size_t bytes) {
  if (fseeko(file_, static_cast<off_t>(offset), SEEK_SET) != 0 || std::fwrite(src, 1, bytes, file_) != bytes)
    throw CphdError("CPHD writer: write of " + std::to_string(bytes) + " bytes at byte offset " +
                    std::to_string(offset) + " to '" + path_ + "' failed: " + std::strerror(errno));
}

void CphdWriter::append_pvp(size_t channel, const std::vector<PulseParameters> &pvp) {
  if (!file_) throw CphdError("CPHD writer: already closed");
  if (channel >= meta_.channels.size()) throw CphdError("CPHD writer: no channel " + std::to_string(channel));
  const int64_t n = static_cast<int64_t>(pvp.size());
  if (n > capacity_[channel] - written_[channel])
    throw CphdError("CPHD writer: channel '" + meta_.channels[channel].identifier + "' was declared with " +
                    std::to_string(capacity_[channel]) + " vectors; cannot write " + std::to_string(n) +
                    " more after " + std::to_string(written_[channel]));
  const size_t vb = static_cast<size_t>(meta_.pvp.num_bytes);
  scratch_.resize(pvp.size() * vb);
  for (size_t v = 0; v < pvp.size(); ++v) {
    meta_.pvp.encode(pvp[v], scratch_.data() + v * vb);
    stats_[channel].add(pvp[v]);
  }
  write_at(pvp_offset_ + static_cast<uint64_t>(meta_.channels[channel].pvp_array_byte_offset +
                                               written_[channel] * meta_.pvp.num_bytes),
           scratch_.data(), scratch_.size());
}

void CphdWriter::write(size_t channel, const std::vector<PulseParameters> &pvp, const std::complex<float> *samples) {
  append_pvp(channel, pvp);
  const CphdChannel &c = meta_.channels[channel];
  const size_t bps = bytes_per_sample(meta_.format);
  const size_t count = pvp.size() * static_cast<size_t>(c.num_samples);
  scratch_.resize(count * bps);
  encode_samples(meta_.format, samples, count, scratch_.data());
  write_at(signal_offset_ + static_cast<uint64_t>(c.signal_array_byte_offset) +
               static_cast<uint64_t>(written_[channel] * c.num_samples) * bps,
           scratch_.data(), scratch_.size());
  written_[channel] += static_cast<int64_t>(pvp.size());
}

void CphdWriter::write_raw(size_t channel, const std::vector<PulseParameters> &pvp, const void *samples) {
  append_pvp(channel, pvp);
  const CphdChannel &c = meta_.channels[channel];
  const size_t bps = bytes_per_sample(meta_.format);
  const size_t count = pvp.size() * static_cast<size_t>(c.num_samples);
  scratch_.resize(count * bps);
  swap_components(meta_.format, samples, count, scratch_.data());
  write_at(signal_offset_ + static_cast<uint64_t>(c.signal_array_byte_offset) +
               static_cast<uint64_t>(written_[channel] * c.num_samples) * bps,
           scratch_.data(), scratch_.size());
  written_[channel] += static_cast<int64_t>(pvp.size());
}

void CphdWriter::close() {
  if (!file_) return;
  CphdMetadata &m = meta_;
  for (size_t i = 0; i < m.channels.size(); ++i)
    if (written_[i] == 0)
      throw CphdError("CPHD writer: no vectors were written to channel '" + m.channels[i].identifier + "'");

  // Fields that follow from the data.
  bool first = true;
  int64_t pvp_end = 0, signal_end = 0;
  const size_t bps = bytes_per_sample(m.format);
  for (size_t i = 0; i < m.channels.size(); ++i) {
    CphdChannel &c = m.channels[i];
    const ChannelStats &s = stats_[i];
    c.num_vectors = written_[i];
    c.ref_vector_index = std::min(c.ref_vector_index, c.num_vectors - 1);
    c.fx_fixed = s.fx_fixed;
    c.toa_fixed = s.toa_fixed;
    c.srp_fixed = s.srp_fixed;
    c.fx_c = 0.5 * (s.fx_min + s.fx_max);
    c.fx_bw = s.fx_max - s.fx_min;
    c.toa_saved = s.toa_max - s.toa_min;
    m.tx_time1 = first ? s.tx_min : std::min(m.tx_time1, s.tx_min);
    m.tx_time2 = first ? s.tx_max : std::max(m.tx_time2, s.tx_max);
    m.fx_min = first ? s.fx_min : std::min(m.fx_min, s.fx_min);
    m.fx_max = first ? s.fx_max : std::max(m.fx_max, s.fx_max);
    m.toa_min = first ? s.toa_min : std::min(m.toa_min, s.toa_min);
    m.toa_max = first ? s.toa_max : std::max(m.toa_max, s.toa_max);
    first = false;
    pvp_end = std::max(pvp_end, c.pvp_array_byte_offset + c.num_vectors * m.pvp.num_bytes);
    signal_end = std::max(signal_end, c.signal_array_byte_offset + c.num_vectors * c.num_samples *
                                                                        static_cast<int64_t>(bps));
  }
  // The reference vector's PVPs, read back from what was written.
  {
    const CphdChannel &c = m.channels.front();
    std::vector<uint8_t> bytes(static_cast<size_t>(m.pvp.num_bytes));
    const uint64_t at = pvp_offset_ + static_cast<uint64_t>(c.pvp_array_byte_offset +
                                                            c.ref_vector_index * m.pvp.num_bytes);
    if (fflush(file_) != 0 || fseeko(file_, static_cast<off_t>(at), SEEK_SET) != 0 ||
        std::fread(bytes.data(), 1, bytes.size(), file_) != bytes.size())
      throw CphdError("CPHD writer: cannot read back the reference vector from '" + path_ + "'");
    m.pvp.decode(bytes.data(), m.reference_vector);
  }
  m.srp_cod_time = m.reference_vector.tx_time;
  m.srp_dwell_time = m.tx_time2 - m.tx_time1;

  const std::string xml = cphd_metadata_to_xml(m);
  if (xml.size() > xml_reserved_)
    throw CphdError("CPHD writer: XML grew past its reserved " + std::to_string(xml_reserved_) + " bytes");
  const std::map<std::string, std::string> kv = {
      {"XML_BLOCK_SIZE", std::to_string(xml.size())},
      {"XML_BLOCK_BYTE_OFFSET", std::to_string(xml_offset_)},
      {"PVP_BLOCK_SIZE", std::to_string(pvp_end)},
      {"PVP_BLOCK_BYTE_OFFSET", std::to_string(pvp_offset_)},
      {"SIGNAL_BLOCK_SIZE", std::to_string(signal_end)},
      {"SIGNAL_BLOCK_BYTE_OFFSET", std::to_string(signal_offset_)},
      {"CLASSIFICATION", m.classification},
      {"RELEASE_INFO", m.release_info}};
  std::string head = header_text(m.version, kv);
  head.resize(static_cast<size_t>(xml_offset_), '\0');
  std::string xml_section = xml + kSectionTerminator;
  xml_section.resize(static_cast<size_t>(pvp_offset_ - xml_offset_), '\0');
  write_at(0, head.data(), head.size());
  write_at(xml_offset_, xml_section.data(), xml_section.size());
  const uint64_t end = signal_offset_ + static_cast<uint64_t>(signal_end);
  if (std::fflush(file_) != 0 || ftruncate(fileno(file_), static_cast<off_t>(end)) != 0)
    throw CphdError("CPHD writer: cannot finish '" + path_ + "': " + std::strerror(errno));
  const int rc = std::fclose(file_);
  file_ = nullptr;
  if (rc != 0) throw CphdError("CPHD writer: closing '" + path_ + "' failed: " + std::strerror(errno));
}

}  // namespace cs::sar
