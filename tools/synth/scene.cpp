#include "scene.h"

#include <algorithm>
#include <cmath>

namespace scn::synth::detail {

namespace {

void add_box(Scene& sc, double s, double l, double yaw, double len, double wid, double h, double reflect,
             double porosity = 0) {
  Object o;
  sc.to_xy(s, l, o.cx, o.cy);
  const double a = std::atan2(sc.road_s, sc.road_c) + yaw;
  o.c = std::cos(a);
  o.s = std::sin(a);
  o.hx = 0.5 * len;
  o.hy = 0.5 * wid;
  o.z0 = sc.ground(o.cx, o.cy) - 0.2;
  o.z1 = o.z0 + 0.2 + h;
  o.bound = std::hypot(o.hx, o.hy);
  o.reflect = reflect;
  o.porosity = porosity;
  sc.objects.push_back(o);
}

void add_cylinder(Scene& sc, double s, double l, double r, double z_from, double z_to, double reflect,
                  double porosity = 0) {
  Object o;
  o.cylinder = true;
  sc.to_xy(s, l, o.cx, o.cy);
  const double g = sc.ground(o.cx, o.cy);
  o.z0 = z_from <= 0 ? g - 0.2 : g + z_from;
  o.z1 = g + z_to;
  o.r = r;
  o.bound = r;
  o.reflect = reflect;
  o.porosity = porosity;
  sc.objects.push_back(o);
}

void add_car(Scene& sc, Rng& rng, double s, double l, double yaw) {
  const bool truck = rng.chance(0.12);
  const double len = truck ? rng.uniform(6.0, 10.0) : rng.uniform(3.8, 5.2);
  const double wid = truck ? rng.uniform(2.3, 2.6) : rng.uniform(1.7, 2.0);
  const double h = truck ? rng.uniform(2.6, 3.6) : rng.uniform(1.4, 1.9);
  const double reflect = rng.uniform(12, 45);
  // Keep clear of the stretch the ego vehicle drives during the sweeps (l = 0, s in [-back, 0]).
  if (std::abs(l) < 0.5 * wid + 1.5 && s + 0.5 * len > -sc.ego_back - 3 && s - 0.5 * len < 3) return;
  add_box(sc, s, l, yaw, len, wid, h, reflect);
}

}  // namespace

Scene make_scene(uint64_t seed) {
  Rng rng(mix64(seed ^ 0x5343454e45ull));
  Scene sc;
  const double yaw = rng.uniform(0, 2 * kPi);
  sc.road_c = std::cos(yaw);
  sc.road_s = std::sin(yaw);
  sc.g0 = 0;  // set by the caller (sensor height)
  sc.gx = 0.012 * rng.normal();
  sc.gy = 0.012 * rng.normal();
  sc.bump_a = rng.uniform(0.1, 0.3);
  sc.bump_fx = rng.uniform(0.05, 0.2);
  sc.bump_fy = rng.uniform(0.05, 0.2);
  sc.bump_px = rng.uniform(0, 2 * kPi);
  sc.bump_py = rng.uniform(0, 2 * kPi);
  sc.road_center = rng.uniform(-2.5, 2.5);
  sc.road_half = rng.uniform(4.0, 8.0);
  sc.speed = rng.chance(0.25) ? 0.0 : rng.uniform(2.0, 12.0);
  return sc;
}

void populate(Scene& sc, uint64_t seed, int clutter, double extent) {
  Rng rng(mix64(seed ^ 0x4f424a45435453ull));
  const double w = sc.road_half, c0 = sc.road_center;
  // Cross street: a stretch without buildings or parked cars (long views).
  const bool cross = rng.chance(0.5);
  const double cross_s = rng.uniform(-35, 35), cross_w = rng.uniform(6, 12);
  auto in_cross = [&](double s, double half_len) { return cross && std::abs(s - cross_s) < cross_w + half_len; };
  for (int side = -1; side <= 1; side += 2) {
    const double curb = c0 + side * w;
    const double walk = rng.uniform(2.0, 5.0);
    // Parked cars along the curb.
    const double p_park = rng.uniform(0.2, 0.8);
    for (double s = -extent + rng.uniform(0, 6); s < extent; s += rng.uniform(5.5, 8.5)) {
      if (!rng.chance(p_park) || in_cross(s, 3)) continue;
      add_car(sc, rng, s, curb - side * rng.uniform(1.0, 1.3), rng.normal() * 0.04);
    }
    // Poles, some with a sign plate.
    for (double s = -extent + rng.uniform(0, 20); s < extent; s += rng.uniform(15, 35)) {
      if (in_cross(s, 0)) continue;
      const double l = curb + side * 0.5;
      const double h = rng.uniform(4.0, 8.0);
      add_cylinder(sc, s, l, rng.uniform(0.08, 0.15), 0, h, rng.uniform(30, 80));
      if (rng.chance(0.3)) add_box(sc, s, l, kPi / 2, 0.7, 0.05, 0.6, rng.uniform(150, 255));
    }
    // Trees: trunk plus a porous crown.
    const double p_tree = rng.uniform(0.0, 0.7);
    for (double s = -extent + rng.uniform(0, 10); s < extent; s += rng.uniform(6, 12)) {
      if (!rng.chance(p_tree) || in_cross(s, 2)) continue;
      const double l = curb + side * rng.uniform(1.0, walk);
      const double trunk = rng.uniform(2.0, 3.5);
      add_cylinder(sc, s, l, rng.uniform(0.12, 0.3), 0, trunk, rng.uniform(10, 30));
      add_cylinder(sc, s, l, rng.uniform(1.2, 2.6), trunk - 0.3, trunk + rng.uniform(2, 5), rng.uniform(5, 25),
                   rng.uniform(0.3, 0.7));
    }
    // Buildings: a row of blocks with gaps, or an open field.
    if (rng.chance(0.75)) {
      const double setback = walk + rng.uniform(0, 6);
      for (double s = -extent - rng.uniform(0, 20); s < extent;) {
        const double len = rng.uniform(8, 35);
        const double mid = s + 0.5 * len;
        if (!in_cross(mid, 0.5 * len)) {
          const double depth = rng.uniform(8, 20);
          add_box(sc, mid, curb + side * (setback + 0.5 * depth), rng.normal() * 0.02, len, depth, rng.uniform(3.5, 18),
                  rng.uniform(15, 60));
          if (rng.chance(0.3))  // hedge or fence in front
            add_box(sc, mid, curb + side * (setback - 0.6), 0, len * rng.uniform(0.5, 1.0), 0.6, rng.uniform(0.6, 1.6),
                    rng.uniform(5, 25), 0.4);
        }
        s += len + (rng.chance(0.35) ? rng.uniform(3, 15) : rng.uniform(0, 1));
      }
    }
    // Pedestrians on the sidewalk.
    const int people = rng.below(8);
    for (int i = 0; i < people; ++i)
      add_cylinder(sc, rng.uniform(-40, 40), curb + side * rng.uniform(0.4, walk), rng.uniform(0.22, 0.32), 0,
                   rng.uniform(1.5, 1.9), rng.uniform(5, 30));
  }
  // Traffic in both lanes, away from the ego's own path.
  const int cars = rng.below(7);
  for (int i = 0; i < cars; ++i) {
    double s = rng.uniform(-60, 60);
    if (std::abs(s) < 10) s += s < 0 ? -10 : 10;
    const double lane = rng.chance(0.5) ? 1 : -1;
    add_car(sc, rng, s, c0 + lane * 0.5 * w, rng.normal() * 0.03);
  }
  // People crossing.
  const int crossing = rng.below(3);
  for (int i = 0; i < crossing; ++i) {
    double s = rng.uniform(-30, 30);
    if (std::abs(s) < 6) s += s < 0 ? -6 : 6;
    add_cylinder(sc, s, c0 + rng.uniform(-w, w), 0.28, 0, rng.uniform(1.5, 1.9), rng.uniform(5, 30));
  }
  // Clutter off the road: bins, barriers, bushes, posts, signs. More of it for denser frames.
  Rng crng(mix64(seed ^ 0x434c5554ull));
  for (int i = 0; i < clutter; ++i) {
    const double s = crng.uniform(-extent, extent);
    double l = crng.uniform(-extent, extent);
    if (std::abs(l - c0) < w + 0.5) l += (l < c0 ? -1 : 1) * (w + 0.5);
    switch (crng.below(4)) {
      case 0:
        add_box(sc, s, l, crng.uniform(0, kPi), crng.uniform(0.5, 3), crng.uniform(0.5, 2), crng.uniform(0.6, 2.5),
                crng.uniform(10, 60));
        break;
      case 1:
        add_box(sc, s, l, crng.uniform(0, kPi), crng.uniform(1, 4), crng.uniform(1, 3), crng.uniform(0.5, 1.5),
                crng.uniform(5, 25), 0.4);
        break;
      case 2:
        add_cylinder(sc, s, l, crng.uniform(0.05, 0.4), 0, crng.uniform(0.8, 6), crng.uniform(20, 90));
        break;
      default:
        add_box(sc, s, l, crng.uniform(0, kPi), crng.uniform(2, 8), crng.uniform(0.2, 0.5), crng.uniform(0.8, 2.5),
                crng.uniform(15, 50));
        break;
    }
  }
}

bool inside_footprint(const Object& o, const double* org) {
  const double px = org[0] - o.cx, py = org[1] - o.cy;
  const double lx = px * o.c + py * o.s, ly = -px * o.s + py * o.c;
  return std::abs(lx) <= o.hx + 0.01 && std::abs(ly) <= o.hy + 0.01;
}

// Ray against one object; returns the entry distance (or a negative value) and the cosine of
// the incidence angle.
double intersect(const Object& o, const double* org, const double* d, double& cos_inc) {
  constexpr double eps = 1e-6;
  const double px = org[0] - o.cx, py = org[1] - o.cy;
  if (!o.cylinder) {
    const double lo[3] = {px * o.c + py * o.s, -px * o.s + py * o.c, org[2]};
    const double ld[3] = {d[0] * o.c + d[1] * o.s, -d[0] * o.s + d[1] * o.c, d[2]};
    const double mn[3] = {-o.hx, -o.hy, o.z0}, mx[3] = {o.hx, o.hy, o.z1};
    double tn = -1e30, tf = 1e30;
    int axis = 0;
    for (int k = 0; k < 3; ++k) {
      if (std::abs(ld[k]) < 1e-12) {
        if (lo[k] < mn[k] || lo[k] > mx[k]) return -1;
        continue;
      }
      double t0 = (mn[k] - lo[k]) / ld[k], t1 = (mx[k] - lo[k]) / ld[k];
      if (t0 > t1) std::swap(t0, t1);
      if (t0 > tn) {
        tn = t0;
        axis = k;
      }
      tf = std::min(tf, t1);
    }
    if (tn > tf || tn <= eps) return -1;
    cos_inc = std::abs(ld[axis]);
    return tn;
  }
  const double a = d[0] * d[0] + d[1] * d[1];
  const double b = px * d[0] + py * d[1];
  const double cc = px * px + py * py - o.r * o.r;
  if (cc <= 0) return -1;  // sensor inside the footprint
  double best = -1;
  if (a > 1e-12) {
    const double disc = b * b - a * cc;
    if (disc >= 0) {
      const double t = (-b - std::sqrt(disc)) / a;
      const double z = org[2] + t * d[2];
      if (t > eps && z >= o.z0 && z <= o.z1) {
        best = t;
        cos_inc = std::abs(((px + t * d[0]) * d[0] + (py + t * d[1]) * d[1]) / o.r);
      }
    }
  }
  if (d[2] < 0) {  // top cap
    const double t = (o.z1 - org[2]) / d[2];
    const double qx = px + t * d[0], qy = py + t * d[1];
    if (t > eps && qx * qx + qy * qy <= o.r * o.r && (best < 0 || t < best)) {
      best = t;
      cos_inc = -d[2];
    }
  }
  return best;
}

}  // namespace scn::synth::detail
