#include "sar/geodesy.h"

#include <cmath>

namespace cs::sar {

namespace {
constexpr double kSemiMajor = 6378137.0;            // WGS-84 a
constexpr double kFlattening = 1.0 / 298.257223563;  // WGS-84 f
constexpr double kEccSq = kFlattening * (2.0 - kFlattening);
constexpr double kDegToRad = M_PI / 180.0;
}  // namespace

Vec3 llh_to_ecf(const Llh &p) {
  const double lat = p.lat_deg * kDegToRad, lon = p.lon_deg * kDegToRad;
  const double s = std::sin(lat), c = std::cos(lat);
  const double prime_vertical = kSemiMajor / std::sqrt(1.0 - kEccSq * s * s);
  return {(prime_vertical + p.hae_m) * c * std::cos(lon), (prime_vertical + p.hae_m) * c * std::sin(lon),
          (prime_vertical * (1.0 - kEccSq) + p.hae_m) * s};
}

Llh ecf_to_llh(const Vec3 &e) {
  const double lon = std::atan2(e.y, e.x);
  const double p = std::hypot(e.x, e.y);
  // Fixed-point iteration on latitude; starts from the spherical guess.
  double lat = std::atan2(e.z, p * (1.0 - kEccSq));
  double hae = 0;
  for (int i = 0; i < 10; ++i) {
    const double s = std::sin(lat);
    const double prime_vertical = kSemiMajor / std::sqrt(1.0 - kEccSq * s * s);
    hae = p / std::cos(lat) - prime_vertical;
    const double next = std::atan2(e.z, p * (1.0 - kEccSq * prime_vertical / (prime_vertical + hae)));
    if (std::fabs(next - lat) < 1e-15) {
      lat = next;
      break;
    }
    lat = next;
  }
  const double s = std::sin(lat);
  const double prime_vertical = kSemiMajor / std::sqrt(1.0 - kEccSq * s * s);
  hae = std::fabs(std::cos(lat)) > 1e-9 ? p / std::cos(lat) - prime_vertical
                                        : std::fabs(e.z) - prime_vertical * (1.0 - kEccSq);
  return {lat / kDegToRad, lon / kDegToRad, hae};
}

Vec3 ellipsoid_up(const Llh &p) {
  const double lat = p.lat_deg * kDegToRad, lon = p.lon_deg * kDegToRad;
  return {std::cos(lat) * std::cos(lon), std::cos(lat) * std::sin(lon), std::sin(lat)};
}

EnuFrame::EnuFrame(const Llh &origin) : origin_(origin), origin_ecf_(llh_to_ecf(origin)) {
  const double lat = origin.lat_deg * kDegToRad, lon = origin.lon_deg * kDegToRad;
  east_ = {-std::sin(lon), std::cos(lon), 0.0};
  north_ = {-std::sin(lat) * std::cos(lon), -std::sin(lat) * std::sin(lon), std::cos(lat)};
  up_ = ellipsoid_up(origin);
}

Vec3 EnuFrame::direction_to_ecf(const Vec3 &v) const { return v.x * east_ + v.y * north_ + v.z * up_; }

Vec3 EnuFrame::to_ecf(const Vec3 &enu) const { return origin_ecf_ + direction_to_ecf(enu); }

Vec3 EnuFrame::to_enu(const Vec3 &ecf) const {
  const Vec3 d = ecf - origin_ecf_;
  return {dot(d, east_), dot(d, north_), dot(d, up_)};
}

}  // namespace cs::sar
