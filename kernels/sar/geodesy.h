// WGS-84 geodesy needed by CPHD (its positions are Earth-centred, Earth-fixed)
// and a local east-north-up frame in which simulations and the Gotcha data
// are naturally described.
#pragma once

#include "sar/types.h"

namespace cs::sar {

struct Llh {
  double lat_deg = 0, lon_deg = 0, hae_m = 0;  // geodetic latitude, longitude, height above ellipsoid
};

Vec3 llh_to_ecf(const Llh &p);
// Iterative inverse (converges to well under a micrometre in a few steps).
Llh ecf_to_llh(const Vec3 &ecf);
// Unit normal of the ellipsoid (local "up") at a geodetic position.
Vec3 ellipsoid_up(const Llh &p);

// Right-handed local frame at a geodetic origin: x east, y north, z up.
class EnuFrame {
 public:
  explicit EnuFrame(const Llh &origin);
  Vec3 to_ecf(const Vec3 &enu) const;           // a position
  Vec3 direction_to_ecf(const Vec3 &enu) const;  // a velocity or axis
  Vec3 to_enu(const Vec3 &ecf) const;
  const Llh &origin() const { return origin_; }
  const Vec3 &origin_ecf() const { return origin_ecf_; }
  Vec3 east() const { return east_; }
  Vec3 north() const { return north_; }
  Vec3 up() const { return up_; }

 private:
  Llh origin_;
  Vec3 origin_ecf_, east_, north_, up_;
};

}  // namespace cs::sar
