// CPHD metadata <-> XML, and the PVP layout table.
#include <libxml/parser.h>
#include <libxml/tree.h>

#include <cerrno>
#include <cinttypes>
#include <cmath>
#include <cstdarg>
#include <cstdlib>
#include <cstring>
#include <set>

#include "sar/cphd.h"
#include "sar/geodesy.h"

namespace cs::sar {

const char *to_string(SampleFormat f) {
  switch (f) {
    case SampleFormat::CF8: return "CF8";
    case SampleFormat::CI4: return "CI4";
    case SampleFormat::CI2: return "CI2";
  }
  return "?";
}

const char *to_string(Domain d) { return d == Domain::FX ? "FX" : "TOA"; }

// ------------------------------------------------------------- PVP table

namespace {
// Schema order; "since_1_1" parameters exist only in CPHD 1.1 files.
const PvpDescriptor kPvps[kNumPvps] = {
    {"TxTime", "", PvpType::F8, true, false},      {"TxPos", "", PvpType::XYZ, true, false},
    {"TxVel", "", PvpType::XYZ, true, false},      {"RcvTime", "", PvpType::F8, true, false},
    {"RcvPos", "", PvpType::XYZ, true, false},     {"RcvVel", "", PvpType::XYZ, true, false},
    {"SRPPos", "", PvpType::XYZ, true, false},     {"AmpSF", "", PvpType::F8, false, false},
    {"aFDOP", "", PvpType::F8, true, false},       {"aFRR1", "", PvpType::F8, true, false},
    {"aFRR2", "", PvpType::F8, true, false},       {"FX1", "", PvpType::F8, true, false},
    {"FX2", "", PvpType::F8, true, false},         {"FXN1", "", PvpType::F8, false, false},
    {"FXN2", "", PvpType::F8, false, false},       {"TOA1", "", PvpType::F8, true, false},
    {"TOA2", "", PvpType::F8, true, false},        {"TOAE1", "", PvpType::F8, false, false},
    {"TOAE2", "", PvpType::F8, false, false},      {"TDTropoSRP", "", PvpType::F8, true, false},
    {"TDIonoSRP", "", PvpType::F8, false, false},  {"SC0", "", PvpType::F8, true, false},
    {"SCSS", "", PvpType::F8, true, false},        {"SIGNAL", "", PvpType::I8, false, false},
    {"TxACX", "TxAntenna", PvpType::XYZ, false, true}, {"TxACY", "TxAntenna", PvpType::XYZ, false, true},
    {"TxEB", "TxAntenna", PvpType::EB, false, true},   {"RcvACX", "RcvAntenna", PvpType::XYZ, false, true},
    {"RcvACY", "RcvAntenna", PvpType::XYZ, false, true}, {"RcvEB", "RcvAntenna", PvpType::EB, false, true},
};

// Where each parameter lives in PulseParameters (one place for the mapping).
struct PvpMember {
  double PulseParameters::*f8 = nullptr;
  Vec3 PulseParameters::*xyz = nullptr;
  int64_t PulseParameters::*i8 = nullptr;
  std::array<double, 2> PulseParameters::*eb = nullptr;
};
PvpMember member_of(Pvp p) {
  using P = PulseParameters;
  switch (p) {
    case Pvp::TxTime: return {&P::tx_time};
    case Pvp::TxPos: return {nullptr, &P::tx_pos};
    case Pvp::TxVel: return {nullptr, &P::tx_vel};
    case Pvp::RcvTime: return {&P::rcv_time};
    case Pvp::RcvPos: return {nullptr, &P::rcv_pos};
    case Pvp::RcvVel: return {nullptr, &P::rcv_vel};
    case Pvp::SRPPos: return {nullptr, &P::srp_pos};
    case Pvp::AmpSF: return {&P::amp_sf};
    case Pvp::aFDOP: return {&P::a_fdop};
    case Pvp::aFRR1: return {&P::a_frr1};
    case Pvp::aFRR2: return {&P::a_frr2};
    case Pvp::FX1: return {&P::fx1};
    case Pvp::FX2: return {&P::fx2};
    case Pvp::FXN1: return {&P::fxn1};
    case Pvp::FXN2: return {&P::fxn2};
    case Pvp::TOA1: return {&P::toa1};
    case Pvp::TOA2: return {&P::toa2};
    case Pvp::TOAE1: return {&P::toae1};
    case Pvp::TOAE2: return {&P::toae2};
    case Pvp::TDTropoSRP: return {&P::td_tropo_srp};
    case Pvp::TDIonoSRP: return {&P::td_iono_srp};
    case Pvp::SC0: return {&P::sc0};
    case Pvp::SCSS: return {&P::scss};
    case Pvp::SIGNAL: return {nullptr, nullptr, &P::signal};
    case Pvp::TxACX: return {nullptr, &P::tx_acx};
    case Pvp::TxACY: return {nullptr, &P::tx_acy};
    case Pvp::TxEB: return {nullptr, nullptr, nullptr, &P::tx_eb};
    case Pvp::RcvACX: return {nullptr, &P::rcv_acx};
    case Pvp::RcvACY: return {nullptr, &P::rcv_acy};
    case Pvp::RcvEB: return {nullptr, nullptr, nullptr, &P::rcv_eb};
    case Pvp::Count: break;
  }
  return {};
}

double load_be_f64(const uint8_t *p) {
  uint64_t u;
  std::memcpy(&u, p, 8);
  u = __builtin_bswap64(u);
  double d;
  std::memcpy(&d, &u, 8);
  return d;
}
void store_be_f64(double d, uint8_t *p) {
  uint64_t u;
  std::memcpy(&u, &d, 8);
  u = __builtin_bswap64(u);
  std::memcpy(p, &u, 8);
}
int64_t load_be_i64(const uint8_t *p) {
  uint64_t u;
  std::memcpy(&u, p, 8);
  return static_cast<int64_t>(__builtin_bswap64(u));
}
void store_be_i64(int64_t v, uint8_t *p) {
  uint64_t u = __builtin_bswap64(static_cast<uint64_t>(v));
  std::memcpy(p, &u, 8);
}
}  // namespace

const PvpDescriptor &describe(Pvp p) { return kPvps[static_cast<int>(p)]; }

int64_t size_in_words(PvpType t) {
  switch (t) {
    case PvpType::F8:
    case PvpType::I8: return 1;
    case PvpType::XYZ: return 3;
    case PvpType::EB: return 2;
  }
  return 0;
}

const char *format_string(PvpType t) {
  switch (t) {
    case PvpType::F8: return "F8";
    case PvpType::I8: return "I8";
    case PvpType::XYZ: return "X=F8;Y=F8;Z=F8;";
    case PvpType::EB: return "DCX=F8;DCY=F8;";
  }
  return "";
}

PvpLayout PvpLayout::packed(const std::vector<Pvp> &optional) {
  PvpLayout layout;
  int64_t next = 0;
  for (int i = 0; i < kNumPvps; ++i) {
    const Pvp p = static_cast<Pvp>(i);
    bool wanted = kPvps[i].required;
    for (Pvp o : optional) wanted = wanted || o == p;
    if (!wanted) continue;
    layout.offset_words[i] = next;
    next += size_in_words(kPvps[i].type);
  }
  layout.num_bytes = next * 8;
  return layout;
}

void PvpLayout::decode(const uint8_t *bytes, PulseParameters &out) const {
  for (int i = 0; i < kNumPvps; ++i) {
    if (offset_words[i] < 0) continue;
    const uint8_t *at = bytes + offset_words[i] * 8;
    const PvpMember m = member_of(static_cast<Pvp>(i));
    if (m.f8) out.*m.f8 = load_be_f64(at);
    if (m.i8) out.*m.i8 = load_be_i64(at);
    if (m.xyz) out.*m.xyz = {load_be_f64(at), load_be_f64(at + 8), load_be_f64(at + 16)};
    if (m.eb) out.*m.eb = {load_be_f64(at), load_be_f64(at + 8)};
  }
}

void PvpLayout::encode(const PulseParameters &in, uint8_t *bytes) const {
  std::memset(bytes, 0, static_cast<size_t>(num_bytes));
  for (int i = 0; i < kNumPvps; ++i) {
    if (offset_words[i] < 0) continue;
    uint8_t *at = bytes + offset_words[i] * 8;
    const PvpMember m = member_of(static_cast<Pvp>(i));
    if (m.f8) store_be_f64(in.*m.f8, at);
    if (m.i8) store_be_i64(in.*m.i8, at);
    if (m.xyz) {
      const Vec3 v = in.*m.xyz;
      store_be_f64(v.x, at);
      store_be_f64(v.y, at + 8);
      store_be_f64(v.z, at + 16);
    }
    if (m.eb) {
      store_be_f64((in.*m.eb)[0], at);
      store_be_f64((in.*m.eb)[1], at + 8);
    }
  }
}

size_t CphdMetadata::channel_index(const std::string &id) const {
  for (size_t i = 0; i < channels.size(); ++i)
    if (channels[i].identifier == id) return i;
  char *end = nullptr;
  const long index = std::strtol(id.c_str(), &end, 10);
  if (!id.empty() && *end == '\0' && index >= 0 && static_cast<size_t>(index) < channels.size())
    return static_cast<size_t>(index);
  throw CphdError("CPHD: no channel '" + id + "' (the file has " + std::to_string(channels.size()) +
                  " channel(s))");
}

// --------------------------------------------------------------- writing

namespace {

const char *mode_name(RadarMode m) {
  switch (m) {
    case RadarMode::Spotlight: return "SPOTLIGHT";
    case RadarMode::Stripmap: return "STRIPMAP";
    case RadarMode::DynamicStripmap: return "DYNAMIC STRIPMAP";
  }
  return "";
}

std::string escape(const std::string &s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '&': out += "&amp;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string number(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

// Indented element writer: open/close/leaf.
class XmlText {
 public:
  void open(const std::string &tag, const std::string &attrs = "") {
    indent();
    out_ += "<" + tag + (attrs.empty() ? "" : " " + attrs) + ">\n";
    stack_.push_back(tag);
  }
  void close() {
    const std::string tag = stack_.back();
    stack_.pop_back();
    indent();
    out_ += "</" + tag + ">\n";
  }
  void leaf(const std::string &tag, const std::string &text, const std::string &attrs = "") {
    indent();
    out_ += "<" + tag + (attrs.empty() ? "" : " " + attrs) + ">" + escape(text) + "</" + tag + ">\n";
  }
  void leaf(const std::string &tag, double v) { leaf(tag, number(v)); }
  void leaf_int(const std::string &tag, int64_t v) { leaf(tag, std::to_string(v)); }
  void leaf_bool(const std::string &tag, bool v) { leaf(tag, v ? "true" : "false"); }
  void xyz(const std::string &tag, Vec3 v) {
    open(tag);
    leaf("X", v.x);
    leaf("Y", v.y);
    leaf("Z", v.z);
    close();
  }
  void raw(const std::string &s) { out_ += s; }
  std::string str() const { return out_; }

 private:
  void indent() { out_.append(2 * stack_.size(), ' '); }
  std::string out_;
  std::vector<std::string> stack_;
};

double degrees(double rad) { return rad * 180.0 / M_PI; }
double wrap_360(double deg) {
  double d = std::fmod(deg, 360.0);
  if (d < 0) d += 360.0;
  return d >= 360.0 ? 0.0 : d;
}
double clamp(double v, double lo, double hi) { return v < lo ? lo : (v > hi ? hi : v); }

// Local vertical and north at the scene reference point. CPHD positions are
// ECF; a file in a local frame (|SRP| well below the Earth radius) gets +Z up.
void local_axes(Vec3 srp, Vec3 &up, Vec3 &north) {
  if (norm(srp) > 6.0e6) {
    const Llh llh = ecf_to_llh(srp);
    const EnuFrame frame(llh);
    up = frame.up();
    north = frame.north();
  } else {
    up = {0, 0, 1};
    north = {0, 1, 0};
  }
}

// ReferenceGeometry/Monostatic from the reference vector (CPHD 1.0 spec 6.5).
void write_reference_geometry(XmlText &x, const CphdMetadata &m) {
  const PulseParameters &v = m.reference_vector;
  const Vec3 arp = 0.5 * (v.tx_pos + v.rcv_pos);
  const Vec3 arp_vel = 0.5 * (v.tx_vel + v.rcv_vel);
  const Vec3 srp = v.srp_pos;
  Vec3 up, north;
  local_axes(srp, up, north);
  const Vec3 east = cross(north, up);
  // A reference vector without geometry (cphdsink's provisional header, written
  // before any pulse: all zeros) gives the angles of an antenna straight above
  // the reference point, not NaN from 0 / 0.
  const Vec3 to_arp = norm(arp - srp) > 0 ? arp - srp : up;
  const double slant = norm(to_arp);
  const Vec3 ground_vec = to_arp - dot(to_arp, up) * up;
  const double ground = norm(ground_vec);
  const double graze = degrees(std::asin(clamp(dot(to_arp, up) / slant, -1, 1)));
  const double speed = norm(arp_vel);
  const double doppler_cone =
      speed > 0 ? degrees(std::acos(clamp(dot(arp_vel, -1.0 * to_arp) / (speed * slant), -1, 1))) : 90.0;
  const double look = dot(up, cross(arp_vel, -1.0 * to_arp)) >= 0 ? 1.0 : -1.0;  // +1: left
  const double azimuth = wrap_360(degrees(std::atan2(dot(ground_vec, east), dot(ground_vec, north))));
  // Slant plane normal, pointing away from the ground.
  Vec3 slant_normal = speed > 0 ? unit(cross(to_arp, arp_vel)) : up;
  if (dot(slant_normal, up) < 0) slant_normal = -1.0 * slant_normal;
  const double slope = degrees(std::acos(clamp(dot(slant_normal, up), -1, 1)));
  const Vec3 gpx = ground > 0 ? unit(ground_vec) : east;
  const Vec3 gpy = cross(up, gpx);
  const double twist = -degrees(std::asin(clamp(dot(gpy, slant_normal), -1, 1)));
  const Vec3 layover = up - (1.0 / dot(slant_normal, up)) * slant_normal;
  const double layover_angle = wrap_360(degrees(std::atan2(dot(layover, east), dot(layover, north))));

  x.open("ReferenceGeometry");
  x.open("SRP");
  x.xyz("ECF", srp);
  const Vec3 d = srp - m.scene.iarp_ecf;
  x.xyz("IAC", {dot(d, m.scene.uiax), dot(d, m.scene.uiay), dot(d, unit(cross(m.scene.uiax, m.scene.uiay)))});
  x.close();
  x.leaf("ReferenceTime", std::max(0.0, v.tx_time));
  x.leaf("SRPCODTime", std::max(0.0, m.srp_cod_time));
  x.leaf("SRPDwellTime", std::max(0.0, m.srp_dwell_time));
  x.open("Monostatic");
  x.xyz("ARPPos", arp);
  x.xyz("ARPVel", arp_vel);
  x.leaf("SideOfTrack", look > 0 ? "L" : "R");
  x.leaf("SlantRange", slant);
  x.leaf("GroundRange", ground > 0 ? ground : 1e-9);
  x.leaf("DopplerConeAngle", std::min(doppler_cone, 179.999999));
  x.leaf("GrazeAngle", clamp(graze, 0, 89.999999));
  x.leaf("IncidenceAngle", clamp(90.0 - graze, 0, 89.999999));
  x.leaf("AzimuthAngle", azimuth);
  x.leaf("TwistAngle", twist);
  x.leaf("SlopeAngle", std::min(slope, 89.999999));
  x.leaf("LayoverAngle", layover_angle);
  x.close();
  x.close();
}

}  // namespace

std::string cphd_metadata_to_xml(const CphdMetadata &m) {
  const bool v11 = m.version.rfind("1.1", 0) == 0;
  XmlText x;
  x.raw("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
  x.open("CPHD", std::string("xmlns=\"http://api.nsgreg.nga.mil/schema/cphd/") + (v11 ? "1.1.0" : "1.0.1") + "\"");

  x.open("CollectionID");
  x.leaf("CollectorName", m.collector_name);
  x.leaf("CoreName", m.core_name);
  x.leaf("CollectType", "MONOSTATIC");
  x.open("RadarMode");
  x.leaf("ModeType", mode_name(m.radar_mode));
  x.close();
  x.leaf("Classification", m.classification);
  x.leaf("ReleaseInfo", m.release_info);
  x.close();

  x.open("Global");
  x.leaf("DomainType", to_string(m.domain));
  x.leaf("SGN", m.sgn > 0 ? "+1" : "-1");
  x.open("Timeline");
  x.leaf("CollectionStart", m.collection_start);
  x.leaf("TxTime1", m.tx_time1);
  x.leaf("TxTime2", m.tx_time2);
  x.close();
  x.open("FxBand");
  x.leaf("FxMin", m.fx_min);
  x.leaf("FxMax", m.fx_max);
  x.close();
  x.open("TOASwath");
  x.leaf("TOAMin", m.toa_min);
  x.leaf("TOAMax", m.toa_max);
  x.close();
  x.close();

  x.open("SceneCoordinates");
  x.leaf("EarthModel", "WGS_84");
  x.open("IARP");
  x.xyz("ECF", m.scene.iarp_ecf);
  const Llh iarp = ecf_to_llh(m.scene.iarp_ecf);
  x.open("LLH");
  x.leaf("Lat", iarp.lat_deg);
  x.leaf("Lon", iarp.lon_deg);
  x.leaf("HAE", iarp.hae_m);
  x.close();
  x.close();
  x.open("ReferenceSurface");
  x.open("Planar");
  x.xyz("uIAX", m.scene.uiax);
  x.xyz("uIAY", m.scene.uiay);
  x.close();
  x.close();
  x.open("ImageArea");
  x.open("X1Y1");
  x.leaf("X", m.scene.x1);
  x.leaf("Y", m.scene.y1);
  x.close();
  x.open("X2Y2");
  x.leaf("X", m.scene.x2);
  x.leaf("Y", m.scene.y2);
  x.close();
  x.close();
  x.open("ImageAreaCornerPoints");
  const double corners[4][2] = {{m.scene.x1, m.scene.y1}, {m.scene.x1, m.scene.y2},
                                {m.scene.x2, m.scene.y2}, {m.scene.x2, m.scene.y1}};
  for (int i = 0; i < 4; ++i) {
    const Llh c = ecf_to_llh(m.scene.iarp_ecf + corners[i][0] * m.scene.uiax + corners[i][1] * m.scene.uiay);
    x.open("IACP", "index=\"" + std::to_string(i + 1) + "\"");
    x.leaf("Lat", c.lat_deg);
    x.leaf("Lon", c.lon_deg);
    x.close();
  }
  x.close();
  x.close();

  x.open("Data");
  x.leaf("SignalArrayFormat", to_string(m.format));
  x.leaf_int("NumBytesPVP", m.pvp.num_bytes);
  x.leaf_int("NumCPHDChannels", static_cast<int64_t>(m.channels.size()));
  for (const CphdChannel &c : m.channels) {
    x.open("Channel");
    x.leaf("Identifier", c.identifier);
    x.leaf_int("NumVectors", c.num_vectors);
    x.leaf_int("NumSamples", c.num_samples);
    x.leaf_int("SignalArrayByteOffset", c.signal_array_byte_offset);
    x.leaf_int("PVPArrayByteOffset", c.pvp_array_byte_offset);
    x.close();
  }
  x.leaf_int("NumSupportArrays", 0);
  x.close();

  x.open("Channel");
  x.leaf("RefChId", m.channels.empty() ? "" : m.channels[0].identifier);
  bool fx_all = true, toa_all = true, srp_all = true;
  for (const CphdChannel &c : m.channels) {
    fx_all = fx_all && c.fx_fixed;
    toa_all = toa_all && c.toa_fixed;
    srp_all = srp_all && c.srp_fixed;
  }
  x.leaf_bool("FXFixedCPHD", fx_all);
  x.leaf_bool("TOAFixedCPHD", toa_all);
  x.leaf_bool("SRPFixedCPHD", srp_all);
  for (const CphdChannel &c : m.channels) {
    x.open("Parameters");
    x.leaf("Identifier", c.identifier);
    x.leaf_int("RefVectorIndex", c.ref_vector_index);
    x.leaf_bool("FXFixed", c.fx_fixed);
    x.leaf_bool("TOAFixed", c.toa_fixed);
    x.leaf_bool("SRPFixed", c.srp_fixed);
    x.open("Polarization");
    x.leaf("TxPol", c.tx_pol);
    x.leaf("RcvPol", c.rcv_pol);
    x.close();
    x.leaf("FxC", c.fx_c);
    x.leaf("FxBW", c.fx_bw);
    x.leaf("TOASaved", c.toa_saved);
    x.open("DwellTimes");
    x.leaf("CODId", "COD");
    x.leaf("DwellId", "DWELL");
    x.close();
    if (m.waveform) {
      x.open("TxRcv");
      x.leaf("TxWFId", "WF1");
      x.leaf("RcvId", "RCV1");
      x.close();
    }
    x.close();
  }
  x.close();

  x.open("PVP");
  std::string open_parent;
  for (int i = 0; i < kNumPvps; ++i) {
    if (m.pvp.offset_words[i] < 0) continue;
    const PvpDescriptor &d = kPvps[i];
    if (open_parent != d.parent) {
      if (!open_parent.empty()) x.close();
      open_parent = d.parent;
      if (!open_parent.empty()) x.open(open_parent);
    }
    x.open(d.name);
    x.leaf_int("Offset", m.pvp.offset_words[i]);
    x.leaf_int("Size", size_in_words(d.type));
    x.leaf("Format", format_string(d.type));
    x.close();
  }
  if (!open_parent.empty()) x.close();
  for (const AddedPvp &a : m.pvp.added) {
    x.open("AddedPVP");
    x.leaf("Name", a.name);
    x.leaf_int("Offset", a.offset_words);
    x.leaf_int("Size", a.size_words);
    x.leaf("Format", a.format);
    x.close();
  }
  x.close();

  x.open("Dwell");
  x.leaf_int("NumCODTimes", 1);
  x.open("CODTime");
  x.leaf("Identifier", "COD");
  x.open("CODTimePoly", "order1=\"0\" order2=\"0\"");
  x.leaf("Coef", number(m.srp_cod_time), "exponent1=\"0\" exponent2=\"0\"");
  x.close();
  x.close();
  x.leaf_int("NumDwellTimes", 1);
  x.open("DwellTime");
  x.leaf("Identifier", "DWELL");
  x.open("DwellTimePoly", "order1=\"0\" order2=\"0\"");
  x.leaf("Coef", number(m.srp_dwell_time), "exponent1=\"0\" exponent2=\"0\"");
  x.close();
  x.close();
  x.close();

  write_reference_geometry(x, m);

  if (m.waveform) {
    const CphdWaveform &w = *m.waveform;
    const std::string pol = m.channels.empty() ? "V" : m.channels[0].tx_pol;
    const std::string rcv_pol = m.channels.empty() ? "V" : m.channels[0].rcv_pol;
    x.open("TxRcv");
    x.leaf_int("NumTxWFs", 1);
    x.open("TxWFParameters");
    x.leaf("Identifier", "WF1");
    x.leaf("PulseLength", w.pulse_length_s);
    x.leaf("RFBandwidth", w.rf_bandwidth_hz);
    x.leaf("FreqCenter", w.freq_center_hz);
    x.leaf("LFMRate", w.lfm_rate_hz_per_s);
    x.leaf("Polarization", pol);
    x.close();
    x.leaf_int("NumRcvs", 1);
    x.open("RcvParameters");
    x.leaf("Identifier", "RCV1");
    x.leaf("WindowLength", w.rcv_window_length_s);
    x.leaf("SampleRate", w.sample_rate_hz);
    x.leaf("IFFilterBW", w.if_filter_bw_hz);
    x.leaf("FreqCenter", w.freq_center_hz);
    x.leaf("LFMRate", w.lfm_rate_hz_per_s);
    x.leaf("Polarization", rcv_pol);
    x.close();
    x.close();
  }
  x.close();
  return x.str();
}

// --------------------------------------------------------------- parsing

namespace {

// Parse context: names the element path, XML line and file byte offset in errors.
class XmlParser {
 public:
  XmlParser(const std::string &xml, uint64_t block_offset) : xml_(xml), block_offset_(block_offset) {
    line_starts_.push_back(0);
    for (size_t i = 0; i < xml.size(); ++i)
      if (xml[i] == '\n') line_starts_.push_back(i + 1);
  }

  [[noreturn]] void fail(const xmlNode *node, const std::string &path, const std::string &problem) const {
    std::string where = "CPHD XML " + path;
    if (node) {
      const long line = xmlGetLineNo(node);
      if (line > 0) {
        const size_t start = line_starts_[std::min(static_cast<size_t>(line - 1), line_starts_.size() - 1)];
        where += " (XML line " + std::to_string(line) + ", file byte offset " +
                 std::to_string(block_offset_ + start) + ")";
      }
    } else {
      where += " (XML block at file byte offset " + std::to_string(block_offset_) + ")";
    }
    throw CphdError(where + ": " + problem);
  }

  static const xmlNode *child(const xmlNode *parent, const char *name) {
    if (!parent) return nullptr;
    for (const xmlNode *c = parent->children; c; c = c->next)
      if (c->type == XML_ELEMENT_NODE && std::strcmp(reinterpret_cast<const char *>(c->name), name) == 0)
        return c;
    return nullptr;
  }
  static std::vector<const xmlNode *> children(const xmlNode *parent, const char *name) {
    std::vector<const xmlNode *> out;
    if (!parent) return out;
    for (const xmlNode *c = parent->children; c; c = c->next)
      if (c->type == XML_ELEMENT_NODE && std::strcmp(reinterpret_cast<const char *>(c->name), name) == 0)
        out.push_back(c);
    return out;
  }
  const xmlNode *need(const xmlNode *parent, const char *name, const std::string &path) const {
    const xmlNode *c = child(parent, name);
    if (!c) fail(parent, path + "/" + name, "required element is missing");
    return c;
  }
  static std::string text(const xmlNode *n) {
    xmlChar *t = xmlNodeGetContent(n);
    std::string s = t ? reinterpret_cast<const char *>(t) : "";
    xmlFree(t);
    const size_t b = s.find_first_not_of(" \t\r\n");
    const size_t e = s.find_last_not_of(" \t\r\n");
    return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
  }
  std::string str(const xmlNode *parent, const char *name, const std::string &path) const {
    return text(need(parent, name, path));
  }
  double dbl(const xmlNode *parent, const char *name, const std::string &path) const {
    const xmlNode *n = need(parent, name, path);
    const std::string t = text(n);
    char *end = nullptr;
    errno = 0;
    const double v = std::strtod(t.c_str(), &end);
    if (t.empty() || *end != '\0' || errno == ERANGE || !std::isfinite(v))
      fail(n, path + "/" + name, "'" + t + "' is not a finite number");
    return v;
  }
  int64_t integer(const xmlNode *parent, const char *name, const std::string &path, int64_t min_value) const {
    const xmlNode *n = need(parent, name, path);
    const std::string t = text(n);
    char *end = nullptr;
    errno = 0;
    const long long v = std::strtoll(t.c_str(), &end, 10);
    if (t.empty() || *end != '\0' || errno == ERANGE)
      fail(n, path + "/" + name, "'" + t + "' is not an integer");
    if (v < min_value) fail(n, path + "/" + name, std::to_string(v) + " is below " + std::to_string(min_value));
    return v;
  }
  bool boolean(const xmlNode *parent, const char *name, const std::string &path) const {
    const xmlNode *n = need(parent, name, path);
    const std::string t = text(n);
    if (t == "true" || t == "1") return true;
    if (t == "false" || t == "0") return false;
    fail(n, path + "/" + name, "'" + t + "' is not a boolean");
  }
  Vec3 xyz(const xmlNode *parent, const char *name, const std::string &path) const {
    const xmlNode *n = need(parent, name, path);
    const std::string p = path + "/" + name;
    return {dbl(n, "X", p), dbl(n, "Y", p), dbl(n, "Z", p)};
  }

 private:
  const std::string &xml_;
  uint64_t block_offset_;
  std::vector<size_t> line_starts_;
};

struct XmlDocDeleter {
  void operator()(xmlDoc *d) const { xmlFreeDoc(d); }
};

void parse_pvp_layout(const XmlParser &p, const xmlNode *pvp_node, CphdMetadata &m) {
  const std::string path = "/CPHD/PVP";
  const bool v11 = m.version.rfind("1.1", 0) == 0;
  m.pvp.num_bytes = 0;  // set from Data/NumBytesPVP by the caller
  for (int i = 0; i < kNumPvps; ++i) {
    const PvpDescriptor &d = kPvps[i];
    const xmlNode *parent = pvp_node;
    std::string parent_path = path;
    if (*d.parent) {
      parent = XmlParser::child(pvp_node, d.parent);
      parent_path += std::string("/") + d.parent;
    }
    const xmlNode *n = XmlParser::child(parent, d.name);
    if (!n) {
      if (d.required) p.fail(pvp_node, parent_path + "/" + d.name, "required per-vector parameter is missing");
      if (parent && *d.parent)
        p.fail(parent, parent_path + "/" + d.name, "is required inside <" + std::string(d.parent) + ">");
      continue;
    }
    const std::string np = parent_path + "/" + d.name;
    if (d.since_1_1 && !v11) p.fail(n, np, "is a CPHD 1.1 parameter in a version " + m.version + " file");
    const int64_t offset = p.integer(n, "Offset", np, 0);
    const int64_t size = p.integer(n, "Size", np, 1);
    if (size != size_in_words(d.type))
      p.fail(XmlParser::child(n, "Size"), np + "/Size",
             "is " + std::to_string(size) + ", must be " + std::to_string(size_in_words(d.type)));
    const std::string format = p.str(n, "Format", np);
    if (format != format_string(d.type))
      p.fail(XmlParser::child(n, "Format"), np + "/Format",
             "'" + format + "', must be '" + format_string(d.type) + "'");
    m.pvp.offset_words[i] = offset;
  }
  for (const xmlNode *a : XmlParser::children(pvp_node, "AddedPVP")) {
    const std::string ap = path + "/AddedPVP";
    AddedPvp added;
    added.name = p.str(a, "Name", ap);
    added.offset_words = p.integer(a, "Offset", ap, 0);
    added.size_words = p.integer(a, "Size", ap, 1);
    added.format = p.str(a, "Format", ap);
    m.pvp.added.push_back(added);
  }
}

}  // namespace

CphdMetadata cphd_metadata_from_xml(const std::string &xml, uint64_t block_offset) {
  XmlParser p(xml, block_offset);
  if (xml.size() > static_cast<size_t>(INT32_MAX)) p.fail(nullptr, "", "XML block larger than 2 GiB");
  // No network, no entity substitution (no external entities), huge-text limits kept.
  std::unique_ptr<xmlDoc, XmlDocDeleter> doc(
      xmlReadMemory(xml.data(), static_cast<int>(xml.size()), "cphd.xml", nullptr,
                    XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING));
  if (!doc) {
    const xmlError *e = xmlGetLastError();
    std::string msg = e && e->message ? e->message : "unknown error";
    while (!msg.empty() && (msg.back() == '\n' || msg.back() == ' ')) msg.pop_back();
    const int line = e ? e->line : 0;
    throw CphdError("CPHD XML block (file byte offset " + std::to_string(block_offset) +
                    "): not well-formed XML at XML line " + std::to_string(line) + ": " + msg);
  }
  const xmlNode *root = xmlDocGetRootElement(doc.get());
  if (!root || std::strcmp(reinterpret_cast<const char *>(root->name), "CPHD") != 0)
    p.fail(root, "/", "root element is not <CPHD>");

  CphdMetadata m;
  m.xml = xml;
  if (root->ns && root->ns->href) {
    const std::string ns = reinterpret_cast<const char *>(root->ns->href);
    const size_t slash = ns.rfind('/');
    if (ns.find("cphd") != std::string::npos && slash != std::string::npos) m.version = ns.substr(slash + 1);
  }

  const xmlNode *cid = p.need(root, "CollectionID", "/CPHD");
  m.collector_name = p.str(cid, "CollectorName", "/CPHD/CollectionID");
  m.core_name = p.str(cid, "CoreName", "/CPHD/CollectionID");
  m.classification = p.str(cid, "Classification", "/CPHD/CollectionID");
  m.release_info = p.str(cid, "ReleaseInfo", "/CPHD/CollectionID");
  const std::string mode = p.str(p.need(cid, "RadarMode", "/CPHD/CollectionID"), "ModeType",
                                 "/CPHD/CollectionID/RadarMode");
  if (mode == "SPOTLIGHT") m.radar_mode = RadarMode::Spotlight;
  else if (mode == "STRIPMAP") m.radar_mode = RadarMode::Stripmap;
  else if (mode == "DYNAMIC STRIPMAP") m.radar_mode = RadarMode::DynamicStripmap;
  else p.fail(cid, "/CPHD/CollectionID/RadarMode/ModeType", "unknown mode '" + mode + "'");

  const std::string gp = "/CPHD/Global";
  const xmlNode *global = p.need(root, "Global", "/CPHD");
  const std::string domain = p.str(global, "DomainType", gp);
  if (domain == "FX") m.domain = Domain::FX;
  else if (domain == "TOA") m.domain = Domain::TOA;
  else p.fail(XmlParser::child(global, "DomainType"), gp + "/DomainType", "'" + domain + "' is not FX or TOA");
  const int64_t sgn = p.integer(global, "SGN", gp, -1);
  if (sgn != 1 && sgn != -1) p.fail(XmlParser::child(global, "SGN"), gp + "/SGN", "must be +1 or -1");
  m.sgn = static_cast<int>(sgn);
  const xmlNode *timeline = p.need(global, "Timeline", gp);
  m.collection_start = p.str(timeline, "CollectionStart", gp + "/Timeline");
  m.tx_time1 = p.dbl(timeline, "TxTime1", gp + "/Timeline");
  m.tx_time2 = p.dbl(timeline, "TxTime2", gp + "/Timeline");
  const xmlNode *fx_band = p.need(global, "FxBand", gp);
  m.fx_min = p.dbl(fx_band, "FxMin", gp + "/FxBand");
  m.fx_max = p.dbl(fx_band, "FxMax", gp + "/FxBand");
  const xmlNode *swath = p.need(global, "TOASwath", gp);
  m.toa_min = p.dbl(swath, "TOAMin", gp + "/TOASwath");
  m.toa_max = p.dbl(swath, "TOAMax", gp + "/TOASwath");

  const std::string sp = "/CPHD/SceneCoordinates";
  const xmlNode *scene = p.need(root, "SceneCoordinates", "/CPHD");
  m.scene.iarp_ecf = p.xyz(p.need(scene, "IARP", sp), "ECF", sp + "/IARP");
  const xmlNode *surface = p.need(scene, "ReferenceSurface", sp);
  if (const xmlNode *planar = XmlParser::child(surface, "Planar")) {
    m.scene.uiax = p.xyz(planar, "uIAX", sp + "/ReferenceSurface/Planar");
    m.scene.uiay = p.xyz(planar, "uIAY", sp + "/ReferenceSurface/Planar");
  }
  const xmlNode *area = p.need(scene, "ImageArea", sp);
  const xmlNode *x1y1 = p.need(area, "X1Y1", sp + "/ImageArea");
  const xmlNode *x2y2 = p.need(area, "X2Y2", sp + "/ImageArea");
  m.scene.x1 = p.dbl(x1y1, "X", sp + "/ImageArea/X1Y1");
  m.scene.y1 = p.dbl(x1y1, "Y", sp + "/ImageArea/X1Y1");
  m.scene.x2 = p.dbl(x2y2, "X", sp + "/ImageArea/X2Y2");
  m.scene.y2 = p.dbl(x2y2, "Y", sp + "/ImageArea/X2Y2");

  const std::string dp = "/CPHD/Data";
  const xmlNode *data = p.need(root, "Data", "/CPHD");
  const std::string format = p.str(data, "SignalArrayFormat", dp);
  if (format == "CF8") m.format = SampleFormat::CF8;
  else if (format == "CI4") m.format = SampleFormat::CI4;
  else if (format == "CI2") m.format = SampleFormat::CI2;
  else p.fail(XmlParser::child(data, "SignalArrayFormat"), dp + "/SignalArrayFormat",
              "'" + format + "' is not CF8, CI4 or CI2");
  if (XmlParser::child(data, "SignalCompressionID"))
    p.fail(XmlParser::child(data, "SignalCompressionID"), dp + "/SignalCompressionID",
           "compressed signal arrays are not supported");
  const int64_t num_bytes_pvp = p.integer(data, "NumBytesPVP", dp, 8);
  const int64_t num_channels = p.integer(data, "NumCPHDChannels", dp, 1);
  const auto channel_sizes = XmlParser::children(data, "Channel");
  if (static_cast<int64_t>(channel_sizes.size()) != num_channels)
    p.fail(XmlParser::child(data, "NumCPHDChannels"), dp + "/NumCPHDChannels",
           "says " + std::to_string(num_channels) + " but there are " + std::to_string(channel_sizes.size()) +
               " <Channel> elements");
  for (size_t i = 0; i < channel_sizes.size(); ++i) {
    const std::string cp = dp + "/Channel[" + std::to_string(i + 1) + "]";
    CphdChannel c;
    c.identifier = p.str(channel_sizes[i], "Identifier", cp);
    c.num_vectors = p.integer(channel_sizes[i], "NumVectors", cp, 1);
    c.num_samples = p.integer(channel_sizes[i], "NumSamples", cp, 1);
    c.signal_array_byte_offset = p.integer(channel_sizes[i], "SignalArrayByteOffset", cp, 0);
    c.pvp_array_byte_offset = p.integer(channel_sizes[i], "PVPArrayByteOffset", cp, 0);
    m.channels.push_back(c);
  }

  const std::string chp = "/CPHD/Channel";
  const xmlNode *channel = p.need(root, "Channel", "/CPHD");
  for (const xmlNode *params : XmlParser::children(channel, "Parameters")) {
    const std::string pp = chp + "/Parameters";
    const std::string id = p.str(params, "Identifier", pp);
    CphdChannel *c = nullptr;
    for (CphdChannel &candidate : m.channels)
      if (candidate.identifier == id) c = &candidate;
    if (!c) p.fail(params, pp + "/Identifier", "'" + id + "' is not a channel listed in /CPHD/Data");
    c->ref_vector_index = p.integer(params, "RefVectorIndex", pp, 0);
    if (c->ref_vector_index >= c->num_vectors)
      p.fail(XmlParser::child(params, "RefVectorIndex"), pp + "/RefVectorIndex",
             std::to_string(c->ref_vector_index) + " is not below NumVectors " + std::to_string(c->num_vectors));
    c->fx_fixed = p.boolean(params, "FXFixed", pp);
    c->toa_fixed = p.boolean(params, "TOAFixed", pp);
    c->srp_fixed = p.boolean(params, "SRPFixed", pp);
    const xmlNode *pol = p.need(params, "Polarization", pp);
    c->tx_pol = p.str(pol, "TxPol", pp + "/Polarization");
    c->rcv_pol = p.str(pol, "RcvPol", pp + "/Polarization");
    c->fx_c = p.dbl(params, "FxC", pp);
    c->fx_bw = p.dbl(params, "FxBW", pp);
    c->toa_saved = p.dbl(params, "TOASaved", pp);
  }

  parse_pvp_layout(p, p.need(root, "PVP", "/CPHD"), m);
  m.pvp.num_bytes = num_bytes_pvp;

  if (const xmlNode *geometry = XmlParser::child(root, "ReferenceGeometry")) {
    const std::string rp = "/CPHD/ReferenceGeometry";
    m.srp_cod_time = p.dbl(geometry, "SRPCODTime", rp);
    m.srp_dwell_time = p.dbl(geometry, "SRPDwellTime", rp);
  }

  if (const xmlNode *txrcv = XmlParser::child(root, "TxRcv")) {
    const std::string tp = "/CPHD/TxRcv";
    const xmlNode *wf = p.need(txrcv, "TxWFParameters", tp);
    const xmlNode *rcv = p.need(txrcv, "RcvParameters", tp);
    CphdWaveform w;
    w.pulse_length_s = p.dbl(wf, "PulseLength", tp + "/TxWFParameters");
    w.rf_bandwidth_hz = p.dbl(wf, "RFBandwidth", tp + "/TxWFParameters");
    w.freq_center_hz = p.dbl(wf, "FreqCenter", tp + "/TxWFParameters");
    if (XmlParser::child(wf, "LFMRate")) w.lfm_rate_hz_per_s = p.dbl(wf, "LFMRate", tp + "/TxWFParameters");
    w.rcv_window_length_s = p.dbl(rcv, "WindowLength", tp + "/RcvParameters");
    w.sample_rate_hz = p.dbl(rcv, "SampleRate", tp + "/RcvParameters");
    w.if_filter_bw_hz = p.dbl(rcv, "IFFilterBW", tp + "/RcvParameters");
    m.waveform = w;
  }
  return m;
}

}  // namespace cs::sar
