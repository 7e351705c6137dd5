// NGA CPHD (Compensated Phase History Data) 1.0 / 1.1: reader and writer.
//
// File layout (CPHD 1.0.1 spec, section 2):
//   "CPHD/1.0.1\n" then "KEY := value\n" lines, then the terminator "\f\n";
//   the XML block at XML_BLOCK_BYTE_OFFSET (XML_BLOCK_SIZE bytes, followed by
//   "\f\n"); optional support block; the PVP block (per-vector parameters,
//   big-endian, each parameter at an offset counted in 8-byte words within a
//   vector's NumBytesPVP bytes); the signal block (per channel NumVectors x
//   NumSamples complex samples, CF8 / CI4 / CI2, big-endian).
//
// The reader checks every size and offset against the file and against each
// other before it reads anything; a malformed file throws CphdError naming
// the field and its byte offset. It reads pulses in blocks, on demand.
#pragma once

#include <complex>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "sar/types.h"

namespace cs::sar {

class CphdError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// ---------------------------------------------------------------- PVP layout

enum class PvpType { F8, I8, XYZ, EB };  // EB: two F8, "DCX=F8;DCY=F8;"

// The standard per-vector parameters, in schema order.
enum class Pvp {
  TxTime, TxPos, TxVel, RcvTime, RcvPos, RcvVel, SRPPos, AmpSF, aFDOP, aFRR1, aFRR2,
  FX1, FX2, FXN1, FXN2, TOA1, TOA2, TOAE1, TOAE2, TDTropoSRP, TDIonoSRP, SC0, SCSS, SIGNAL,
  TxACX, TxACY, TxEB, RcvACX, RcvACY, RcvEB,  // CPHD 1.1, under TxAntenna / RcvAntenna
  Count
};
constexpr int kNumPvps = static_cast<int>(Pvp::Count);

struct PvpDescriptor {
  const char *name;    // XML element name
  const char *parent;  // enclosing element under <PVP> ("" for most)
  PvpType type;
  bool required;
  bool since_1_1;
};
const PvpDescriptor &describe(Pvp p);
int64_t size_in_words(PvpType t);
const char *format_string(PvpType t);  // "F8", "I8", "X=F8;Y=F8;Z=F8;", "DCX=F8;DCY=F8;"

// A user-defined parameter (PVP/AddedPVP): kept so that layouts validate and
// round-trip; its bytes are not decoded.
struct AddedPvp {
  std::string name;
  int64_t offset_words = 0;
  int64_t size_words = 1;
  std::string format = "F8";
};

struct PvpLayout {
  std::vector<int64_t> offset_words = std::vector<int64_t>(kNumPvps, -1);  // -1: absent
  std::vector<AddedPvp> added;
  int64_t num_bytes = 0;  // Data/NumBytesPVP

  bool has(Pvp p) const { return offset_words[static_cast<int>(p)] >= 0; }
  // The required parameters plus `optional` ones, packed in schema order.
  static PvpLayout packed(const std::vector<Pvp> &optional = {});
  void decode(const uint8_t *vector_bytes, PulseParameters &out) const;
  // Added parameters' words are written as zeros.
  void encode(const PulseParameters &in, uint8_t *vector_bytes) const;
};

// ------------------------------------------------------------------ metadata

enum class RadarMode { Spotlight, Stripmap, DynamicStripmap };

struct CphdChannel {
  std::string identifier = "1";
  int64_t num_vectors = 0;
  int64_t num_samples = 0;
  int64_t signal_array_byte_offset = 0;  // within the signal block (filled by the writer)
  int64_t pvp_array_byte_offset = 0;     // within the PVP block (filled by the writer)
  // Channel/Parameters
  int64_t ref_vector_index = 0;
  bool fx_fixed = false, toa_fixed = false, srp_fixed = false;  // writer: computed from the data
  std::string tx_pol = "V", rcv_pol = "V";
  double fx_c = 0, fx_bw = 0, toa_saved = 0;  // writer: computed from the data
};

// The transmitted waveform and receiver (TxRcv, optional): how raw fast-time
// data can be range compressed.
struct CphdWaveform {
  double pulse_length_s = 0;
  double rf_bandwidth_hz = 0;
  double freq_center_hz = 0;
  double lfm_rate_hz_per_s = 0;
  double rcv_window_length_s = 0;
  double sample_rate_hz = 0;
  double if_filter_bw_hz = 0;
};

// Planar image area around the image area reference point (SceneCoordinates).
struct CphdScene {
  Vec3 iarp_ecf;
  Vec3 uiax{1, 0, 0}, uiay{0, 1, 0};  // unit axes of the reference plane, ECF
  double x1 = -100, y1 = -100, x2 = 100, y2 = 100;  // image area in metres along uIAX/uIAY
};

struct CphdMetadata {
  std::string version = "1.0.1";  // "1.0.x" or "1.1.x"
  // CollectionID
  std::string collector_name = "gst-cuda-sensing";
  std::string core_name = "SIMULATED";
  RadarMode radar_mode = RadarMode::Spotlight;
  std::string classification = "UNCLASSIFIED";
  std::string release_info = "UNRESTRICTED";
  // Global
  Domain domain = Domain::FX;
  int sgn = -1;  // phase sign convention of the signal arrays
  std::string collection_start = "2000-01-01T00:00:00.000000Z";
  double tx_time1 = 0, tx_time2 = 0, fx_min = 0, fx_max = 0, toa_min = 0, toa_max = 0;  // writer: computed
  CphdScene scene;
  // Data
  SampleFormat format = SampleFormat::CF8;
  PvpLayout pvp = PvpLayout::packed();
  std::vector<CphdChannel> channels;
  std::optional<CphdWaveform> waveform;
  // PVPs of the first channel's reference vector (Channel/Parameters/RefVectorIndex):
  // ReferenceGeometry follows from it. Reader: read from the file; writer: as written.
  PulseParameters reference_vector;
  // ReferenceGeometry/SRPCODTime and SRPDwellTime (writer: the reference
  // vector's TxTime and TxTime2 - TxTime1, as constant Dwell polynomials).
  double srp_cod_time = 0, srp_dwell_time = 0;
  // The XML block as read (reader only).
  std::string xml;

  // Index of the channel with this identifier, or of the decimal index "0", "1"...; throws when absent.
  size_t channel_index(const std::string &id_or_index) const;
};

// ---------------------------------------------------------------- pulses

// A block of consecutive vectors of one channel.
struct PulseBlock {
  int64_t first_vector = 0;
  int64_t num_samples = 0;
  std::vector<PulseParameters> pvp;
  std::vector<std::complex<float>> samples;  // pvp.size() x num_samples, row-major
};

// Converts `count` samples of a file format, big-endian, to complex float,
// each component times `scale` (a vector's AmpSF; 1 leaves them as stored).
void decode_samples(SampleFormat f, const uint8_t *in, size_t count, std::complex<float> *out, float scale = 1.0f);
// Encodes complex float to a file format. Integer formats round to nearest and
// saturate; a NaN or Inf sample throws CphdError (an integer format cannot hold it).
void encode_samples(SampleFormat f, const std::complex<float> *in, size_t count, uint8_t *out);

// ---------------------------------------------------------------- reader

class CphdReader {
 public:
  // Opens and validates the header, XML and layout; reads no signal yet.
  explicit CphdReader(const std::string &path);
  ~CphdReader();
  CphdReader(const CphdReader &) = delete;
  CphdReader &operator=(const CphdReader &) = delete;

  const CphdMetadata &metadata() const { return meta_; }
  uint64_t file_size() const { return file_size_; }

  std::vector<PulseParameters> read_pvp(size_t channel, int64_t first, int64_t count);
  // Samples converted to complex float. With apply_amp_sf and an AmpSF
  // parameter in the file, each vector is multiplied by its AmpSF.
  void read_signal(size_t channel, int64_t first, int64_t count, std::complex<float> *out,
                   bool apply_amp_sf = true);
  // Samples as stored, converted to host byte order (float/int16/int8 pairs).
  void read_signal_raw(size_t channel, int64_t first, int64_t count, void *out);
  // PVPs and converted samples of vectors [first, first + count), clipped to the channel.
  PulseBlock read_block(size_t channel, int64_t first, int64_t count, bool apply_amp_sf = true);

  // Threads a large signal read (and its conversion) is split over, in
  // pieces of at least kReadPiece bytes (common/split_work.h); 0 =
  // default_read_threads(). One by default.
  void set_read_threads(int threads);
  int read_threads() const { return read_threads_; }
  static constexpr size_t kReadPiece = size_t(4) << 20;

 private:
  void parse_header();
  void check_layout();
  void read_at(uint64_t offset, void *dst, size_t bytes, const char *what) const;
  void check_range(size_t channel, int64_t first, int64_t count) const;

  std::string path_;
  std::FILE *file_ = nullptr;
  uint64_t file_size_ = 0;
  CphdMetadata meta_;
  struct Header {
    int64_t value = -1;
    uint64_t line_offset = 0;
  };
  Header xml_size_, xml_offset_, support_size_, support_offset_, pvp_size_, pvp_offset_, signal_size_,
      signal_offset_;
  std::vector<uint8_t> scratch_;
  int read_threads_ = 1;
};

// ---------------------------------------------------------------- writer

// Writes a CPHD file (version 1.0.1 by default, or 1.1.0). Give the metadata
// with channels' identifiers, NumVectors (an upper bound: fewer may be written)
// and NumSamples, the format and the PVP layout; the writer computes the block
// layout, and at close() the fields that follow from the data (TxTime1/2,
// FxMin/Max, TOAMin/Max, FxC, FxBW, TOASaved, the Fixed flags, Dwell and
// ReferenceGeometry from the reference vector) and NumVectors as written.
class CphdWriter {
 public:
  CphdWriter(const std::string &path, CphdMetadata meta);
  ~CphdWriter();  // closes if close() was not called (errors are then swallowed)
  CphdWriter(const CphdWriter &) = delete;
  CphdWriter &operator=(const CphdWriter &) = delete;

  // Appends vectors to a channel: pvp.size() vectors, samples row-major.
  void write(size_t channel, const std::vector<PulseParameters> &pvp, const std::complex<float> *samples);
  // Appends vectors whose samples are already in the file's format, host byte order.
  void write_raw(size_t channel, const std::vector<PulseParameters> &pvp, const void *samples);
  int64_t vectors_written(size_t channel) const { return written_.at(channel); }
  void close();
  const CphdMetadata &metadata() const { return meta_; }

 private:
  void write_at(uint64_t offset, const void *src, size_t bytes);
  void append_pvp(size_t channel, const std::vector<PulseParameters> &pvp);

  std::string path_;
  std::FILE *file_ = nullptr;
  CphdMetadata meta_;
  std::vector<int64_t> written_;
  std::vector<int64_t> capacity_;
  uint64_t xml_offset_ = 0, xml_reserved_ = 0, pvp_offset_ = 0, signal_offset_ = 0;
  // Running statistics over written vectors for the computed XML fields.
  struct ChannelStats;
  std::vector<ChannelStats> stats_;
  std::vector<uint8_t> scratch_;
};

// XML text of the metadata as the writer writes it (sizes and offsets as they
// are in `meta`; ReferenceGeometry from meta.reference_vector).
std::string cphd_metadata_to_xml(const CphdMetadata &meta);
// Parses an XML block. `block_offset` (bytes) is only used in error messages.
CphdMetadata cphd_metadata_from_xml(const std::string &xml, uint64_t block_offset);

}  // namespace cs::sar
