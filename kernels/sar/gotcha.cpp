#include "sar/gotcha.h"

#include <cmath>
#include <complex>
#include <stdexcept>

#include "sar/cphd.h"
#include "sar/matlab_v5.h"

namespace cs::sar {

namespace {

struct GotchaFile {
  std::string path;
  int64_t samples = 0, pulses = 0;
  std::vector<double> freq, x, y, z, r0;
  std::vector<std::complex<float>> fp;  // pulses x samples (MATLAB's column-major frequencies x pulses)
};

GotchaFile load(const std::string &path) {
  const MatArray data = read_mat_variable(path, "data");
  if (data.mat_class != MatClass::Struct) throw MatError("MAT file '" + path + "': 'data' is not a struct");
  GotchaFile f;
  f.path = path;
  const MatArray &fp = data.field("fp");
  if (fp.dims.size() != 2 || !fp.is_complex)
    throw MatError("MAT file '" + path + "': data.fp is not a complex 2-D array");
  f.samples = fp.dims[0];
  f.pulses = fp.dims[1];
  auto vector_field = [&](const char *name, int64_t expected) {
    const MatArray &a = data.field(name);
    if (a.numel() != expected || a.is_complex)
      throw MatError("MAT file '" + path + "': data." + name + " has " + std::to_string(a.numel()) +
                     " real values, expected " + std::to_string(expected));
    return a.real;
  };
  f.freq = vector_field("freq", f.samples);
  f.x = vector_field("x", f.pulses);
  f.y = vector_field("y", f.pulses);
  f.z = vector_field("z", f.pulses);
  f.r0 = vector_field("r0", f.pulses);
  f.fp.resize(fp.real.size());
  for (size_t i = 0; i < fp.real.size(); ++i)
    f.fp[i] = {static_cast<float>(fp.real[i]), static_cast<float>(fp.imag[i])};  // exact: stored as single
  return f;
}

}  // namespace

GotchaSummary convert_gotcha_to_cphd(const std::vector<std::string> &mat_files, const std::string &cphd_path,
                                     const GotchaOptions &options) {
  if (mat_files.empty()) throw std::invalid_argument("Gotcha: no input files");
  if (!(options.assumed_speed_m_s > 0)) throw std::invalid_argument("Gotcha: the assumed speed must be positive");
  std::vector<GotchaFile> files;
  for (const std::string &p : mat_files) files.push_back(load(p));
  const int64_t samples = files.front().samples;
  std::vector<Vec3> positions;
  std::vector<double> r0;
  for (const GotchaFile &f : files) {
    if (f.samples != samples || f.freq != files.front().freq)
      throw MatError("MAT file '" + f.path + "': its frequencies differ from '" + files.front().path + "'");
    for (int64_t p = 0; p < f.pulses; ++p) {
      positions.push_back({f.x[p], f.y[p], f.z[p]});
      r0.push_back(f.r0[p]);
    }
  }
  const int64_t pulses = static_cast<int64_t>(positions.size());

  // Times from the distance flown; velocities by central differences.
  std::vector<double> times(positions.size(), 0.0);
  for (size_t i = 1; i < positions.size(); ++i)
    times[i] = times[i - 1] + norm(positions[i] - positions[i - 1]) / options.assumed_speed_m_s;
  const EnuFrame frame(options.scene_origin);
  const std::vector<double> &freq = files.front().freq;
  const double sc0 = freq.front();
  const double scss = samples > 1 ? (freq.back() - freq.front()) / static_cast<double>(samples - 1) : 1.0;

  CphdMetadata meta;
  meta.core_name = options.core_name;
  meta.collector_name = "AFRL GOTCHA";
  meta.radar_mode = RadarMode::Spotlight;
  meta.domain = Domain::FX;
  meta.sgn = -1;
  meta.format = SampleFormat::CF8;
  meta.pvp = PvpLayout::packed();
  CphdChannel channel;
  channel.identifier = options.polarization + options.polarization;
  channel.num_vectors = pulses;
  channel.num_samples = samples;
  channel.ref_vector_index = pulses / 2;
  channel.tx_pol = channel.rcv_pol = options.polarization;
  meta.channels.push_back(channel);
  meta.scene.iarp_ecf = frame.origin_ecf();
  meta.scene.uiax = frame.east();
  meta.scene.uiay = frame.north();
  meta.scene.x1 = meta.scene.y1 = -50;
  meta.scene.x2 = meta.scene.y2 = 50;

  CphdWriter writer(cphd_path, meta);
  const Vec3 srp = frame.origin_ecf();
  int64_t index = 0;
  for (const GotchaFile &f : files) {
    std::vector<PulseParameters> pvp(static_cast<size_t>(f.pulses));
    for (int64_t p = 0; p < f.pulses; ++p, ++index) {
      const size_t i = static_cast<size_t>(index);
      const size_t before = i > 0 ? i - 1 : i, after = i + 1 < positions.size() ? i + 1 : i;
      const double dt = times[after] - times[before];
      const Vec3 velocity_enu = dt > 0 ? (1.0 / dt) * (positions[after] - positions[before]) : Vec3{};
      PulseParameters &v = pvp[static_cast<size_t>(p)];
      v.tx_time = times[i];
      v.tx_pos = frame.to_ecf(positions[i]);
      v.tx_vel = frame.direction_to_ecf(velocity_enu);
      v.rcv_time = times[i] + 2.0 * r0[i] / kSpeedOfLight;
      v.rcv_pos = v.tx_pos;
      v.rcv_vel = v.tx_vel;
      v.srp_pos = srp;
      v.a_fdop = -2.0 * dot(velocity_enu, unit(positions[i])) / kSpeedOfLight;
      v.sc0 = sc0;
      v.scss = scss;
      v.fx1 = sc0 - 0.5 * scss;
      v.fx2 = sc0 + (static_cast<double>(samples) - 0.5) * scss;
      v.toa1 = -0.5 / scss;
      v.toa2 = 0.5 / scss;
    }
    writer.write(0, pvp, f.fp.data());
  }
  writer.close();
  return {pulses, samples, sc0, scss};
}

}  // namespace cs::sar
