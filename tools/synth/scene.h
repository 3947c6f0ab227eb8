// The synthetic scene the LiDAR scan of synthetic_frame.cpp is cast into: ground, road and objects
// (boxes, cylinders), built from a seed, and ray intersection with them.
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

#include "random.h"

namespace scn::synth::detail {

struct Object {
  bool cylinder = false;
  double cx = 0, cy = 0, z0 = 0, z1 = 0;
  double hx = 0, hy = 0, c = 1, s = 0;  // box: half extents and yaw
  double r = 0;                         // cylinder radius
  double bound = 0;                     // radius of the x/y footprint's bounding circle
  double reflect = 10;                  // mean intensity at normal incidence
  double porosity = 0;                  // chance that a ray passes through
};

struct Scene {
  double g0 = 0, gx = 0, gy = 0;  // ground z = g0 + gx x + gy y
  double bump_a = 0, bump_fx = 0, bump_fy = 0, bump_px = 0, bump_py = 0;
  double road_c = 1, road_s = 0, road_center = 0, road_half = 5;
  double speed = 0;
  double ego_back = 0;  // distance driven from the oldest sweep to the newest
  std::vector<Object> objects;

  double ground(double x, double y) const { return g0 + gx * x + gy * y; }
  double bumps(double x, double y) const { return bump_a * wave(bump_fx * x + bump_px) * wave(bump_fy * y + bump_py); }
  // A sine-like wave of period 2 pi made of parabolas (no libm call per point).
  static double wave(double u) {
    double t = u * (1 / (2 * kPi));
    t -= std::floor(t);
    return t < 0.5 ? 16 * t * (0.5 - t) : -16 * (t - 0.5) * (1 - t);
  }
  // Road frame (s along the road, l across; the ego starts at s = l = 0) to sensor frame.
  void to_xy(double s, double l, double& x, double& y) const {
    x = s * road_c - l * road_s;
    y = s * road_s + l * road_c;
  }
  void to_sl(double x, double y, double& s, double& l) const {
    s = x * road_c + y * road_s;
    l = -x * road_s + y * road_c;
  }
};

/// A parked-car street scene on sloped, bumpy ground, seeded.
Scene make_scene(uint64_t seed);
/// Adds `clutter` objects (cars, poles, walls, vegetation) within `extent` metres.
void populate(Scene& sc, uint64_t seed, int clutter, double extent);
/// Whether a ray origin lies inside a box's x/y footprint (the sensor inside an object's outline).
bool inside_footprint(const Object& o, const double* org);
/// Ray against one object; returns the entry distance (or a negative value) and the cosine of
/// the incidence angle.
double intersect(const Object& o, const double* org, const double* d, double& cos_inc);

}  // namespace scn::synth::detail
