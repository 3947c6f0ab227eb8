#include "synthetic_frame.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <random>

#include "scene.h"
#include "scn/error.h"
#include "scn/half.h"

namespace scn::synth {

namespace {

using namespace detail;

// One record per occupied voxel, in first-hit order, found through a per-(y, x) column head
// table: consecutive points of a scan fall into neighbouring columns, so lookups stay in cache.
class VoxelAccumulator {
 public:
  explicit VoxelAccumulator(const std::array<int32_t, 3>& grid_zyx, int keep_point_columns = 0)
      : nx_(grid_zyx[2]), keep_(keep_point_columns), head_(size_t(grid_zyx[1]) * size_t(grid_zyx[2]), -1) {}
  void add(int32_t iz, int32_t iy, int32_t ix, const double* f) {
    const size_t col = size_t(iy) * size_t(nx_) + size_t(ix);
    for (int32_t id = head_[col]; id >= 0; id = recs_[size_t(id)].next) {
      Rec& r = recs_[size_t(id)];
      if (r.iz == iz) {
        ++r.count;
        for (int c = 0; c < 5; ++c) r.sum[c] += float(f[c]);
        return;
      }
    }
    Rec r;
    for (int c = 0; c < 5; ++c) r.sum[c] = float(f[c]);
    r.iz = iz;
    r.iy = iy;
    r.ix = ix;
    r.next = head_[col];
    head_[col] = int32_t(recs_.size());
    recs_.push_back(r);
  }
  struct Point {
    int32_t iz, iy, ix;
    double f[5];
  };
  // Adds a batch, prefetching the column heads and then the records first so that the cache
  // misses of the batch overlap.
  void add_batch(const std::vector<Point>& pts) {
    for (const Point& p : pts) __builtin_prefetch(&head_[col(p)]);
    for (const Point& p : pts) {
      const int32_t id = head_[col(p)];
      if (id >= 0) __builtin_prefetch(&recs_[size_t(id)]);
    }
    for (const Point& p : pts) add(p.iz, p.iy, p.ix, p.f);
    for (const Point& p : pts)
      for (int c = 0; c < keep_; ++c) points_.push_back(float(p.f[c]));
  }
  std::vector<float>& points() { return points_; }
  int64_t size() const { return int64_t(recs_.size()); }
  void coords(int64_t i, int32_t& iz, int32_t& iy, int32_t& ix) const {
    const Rec& r = recs_[size_t(i)];
    iz = r.iz, iy = r.iy, ix = r.ix;
  }
  double mean(int64_t i, int c) const { return double(recs_[size_t(i)].sum[c]) / recs_[size_t(i)].count; }

 private:
  struct Rec {
    float sum[5];
    int32_t count = 1, next = -1, iz = 0, iy = 0, ix = 0;
  };
  size_t col(const Point& p) const { return size_t(p.iy) * size_t(nx_) + size_t(p.ix); }
  int32_t nx_;
  int keep_;  // columns of each point kept in points_ (0: none)
  std::vector<float> points_;
  std::vector<int32_t> head_;
  std::vector<Rec> recs_;
};

struct ScanParams {
  int beams = 32;
  int azimuth_steps = 1084;
};

// Fewer beams (then fewer azimuth steps) for frames far smaller than one sweep gives.
ScanParams thinned(const FrameOptions& o, double density) {
  ScanParams p;
  p.beams = std::max(4, std::min(o.beams, int(std::lround(o.beams * density))));
  const double left = density * o.beams / p.beams;  // what the beam count could not absorb
  p.azimuth_steps = std::max(64, int(std::lround(o.azimuth_steps * std::min(1.0, left))));
  return p;
}

struct ScanResult {
  int sweeps = 0;  ///< sweeps of the first pass that ran
  int passes = 0;  ///< passes over the sweeps (each adds beams between the earlier ones)
  int64_t points = 0;
};

constexpr int kMaxPasses = 64;

// Elevation offset of pass p, in beam spacings: 0, 1/2, 1/4, 3/4, 1/8, ... (van der Corput), so
// every prefix of passes spreads its beams evenly.
double pass_offset(int p) {
  double off = 0, f = 0.5;
  for (unsigned q = unsigned(p); q; q >>= 1, f *= 0.5)
    if (q & 1u) off += f;
  return off;
}

class Scanner {
 public:
  Scanner(const FrameOptions& o, const std::array<int32_t, 3>& g) : o_(o), grid_(g) {}

  // Runs passes of all sweeps until `target` voxels exist; target 0: one pass.
  ScanResult scan(const Scene& sc, const ScanParams& p, int64_t target, VoxelAccumulator& acc) const {
    ScanResult res;
    const double spacing = p.beams > 1 ? (o_.elevation_max_deg - o_.elevation_min_deg) / double(p.beams - 1) : 0.0;
    const int max_passes = target > 0 && p.beams > 1 ? kMaxPasses : 1;
    for (int pass = 0; pass < max_passes; ++pass) {
      // Beam spacing once this pass's level of halving is complete (pass 1: 1/2, 2-3: 1/4, ...).
      double dtheta = spacing * kPi / 180;
      for (int q = pass; q > 0; q >>= 1) dtheta *= 0.5;
      std::vector<double> ce, se;
      for (int b = 0; b < p.beams; ++b) {
        const double e = p.beams == 1 ? 0.5 * (o_.elevation_min_deg + o_.elevation_max_deg)
                                      : o_.elevation_min_deg + (b + pass_offset(pass)) * spacing;
        if (e > o_.elevation_max_deg + 1e-9) continue;
        const double er = e * kPi / 180;
        if (pass > 0 && !useful_beam(er, dtheta)) continue;
        ce.push_back(std::cos(er));
        se.push_back(std::sin(er));
      }
      if (ce.empty()) break;
      res.passes = pass + 1;
      const int64_t before = acc.size();
      for (int k = 0; k < o_.sweeps; ++k) {
        res.points += sweep(sc, p, pass, k, ce, se, acc);
        if (pass == 0) res.sweeps = k + 1;
        if (target > 0 && acc.size() >= target) return res;
      }
      // A pass that adds almost nothing means the scene is saturated: the target is out of reach.
      if (pass > 0 && acc.size() - before < std::max<int64_t>(1, target / 500)) break;
    }
    return res;
  }

 private:
  static constexpr int kSectors = 2048;

  // Extra beams only where the scan is still sparser than the voxels: ground rings further apart
  // than a voxel (ring spacing ~ r^2 / h * dtheta), or walls at the range's edge sampled more
  // coarsely than the voxel height. Near-field ground is saturated after the first passes.
  bool useful_beam(double elevation, double dtheta) const {
    const double h = o_.sensor_height;
    const double reach = std::min<double>(o_.max_range, std::max({std::abs(o_.range[0]), std::abs(o_.range[1]),
                                                                  std::abs(o_.range[3]), std::abs(o_.range[4])}));
    if (elevation < 0) {
      const double r = h / std::tan(-elevation);
      if (r < reach) return r * r / h * dtheta > std::min(o_.voxel_size[0], o_.voxel_size[1]);
    }
    return reach * dtheta > o_.voxel_size[2];
  }

  int64_t sweep(const Scene& sc, const ScanParams& p, int pass, int k, const std::vector<double>& ce,
                const std::vector<double>& se, VoxelAccumulator& acc) const {
    FastRng rng(mix64(o_.seed * 0x100000001b3ull + uint64_t(k) * 0x9e37ull + uint64_t(pass) * 0x51ed27ull +
                      uint64_t(p.beams) * 131 + uint64_t(p.azimuth_steps)));
    const double lag = k * double(o_.sweep_interval);
    double org[3];
    sc.to_xy(-sc.speed * lag, 0, org[0], org[1]);
    org[2] = 0;

    // Objects binned by the azimuth sectors they cover, seen from this sweep's origin, each bin
    // sorted by the nearest distance an object can have.
    std::vector<int> start(kSectors + 1, 0), list;
    std::vector<double> near;
    {
      std::vector<std::vector<std::pair<double, int>>> bins(kSectors);
      const double per = kSectors / (2 * kPi);
      for (size_t i = 0; i < sc.objects.size(); ++i) {
        const Object& ob = sc.objects[i];
        const double dx = ob.cx - org[0], dy = ob.cy - org[1];
        const double dist = std::hypot(dx, dy);
        if (dist - ob.bound > o_.max_range) continue;
        int lo = 0, hi = kSectors - 1;
        const double a = std::atan2(dy, dx) + kPi;
        if (ob.cylinder && dist > ob.bound + 1e-3) {
          const double half = std::asin(ob.bound / dist) + 1e-3;
          lo = int(std::floor((a - half) * per));
          hi = int(std::floor((a + half) * per));
        } else if (!ob.cylinder && !inside_footprint(ob, org)) {
          // Angular span of the four corners (less than pi when the origin is outside).
          double amin = 0, amax = 0;
          for (int c = 0; c < 4; ++c) {
            const double u = (c & 1 ? 1 : -1) * ob.hx, v = (c & 2 ? 1 : -1) * ob.hy;
            const double qx = ob.cx + u * ob.c - v * ob.s - org[0];
            const double qy = ob.cy + u * ob.s + v * ob.c - org[1];
            double da = std::atan2(qy, qx) + kPi - a;
            if (da > kPi) da -= 2 * kPi;
            if (da < -kPi) da += 2 * kPi;
            amin = std::min(amin, da);
            amax = std::max(amax, da);
          }
          lo = int(std::floor((a + amin - 1e-3) * per));
          hi = int(std::floor((a + amax + 1e-3) * per));
        }
        const double nd = std::max(0.0, dist - ob.bound - 0.01);
        for (int s = lo; s <= hi; ++s) bins[size_t(((s % kSectors) + kSectors) % kSectors)].emplace_back(nd, int(i));
      }
      for (int s = 0; s < kSectors; ++s) {
        auto& b = bins[size_t(s)];
        std::sort(b.begin(), b.end());
        start[size_t(s) + 1] = start[size_t(s)] + int(b.size());
        for (const auto& e : b) {
          near.push_back(e.first);
          list.push_back(e.second);
        }
      }
    }

    const double x0 = o_.range[0], y0 = o_.range[1], z0 = o_.range[2];
    const double x1 = o_.range[3], y1 = o_.range[4], z1 = o_.range[5];
    const double vx = o_.voxel_size[0], vy = o_.voxel_size[1], vz = o_.voxel_size[2];
    const double g_org = sc.ground(org[0], org[1]);
    const double phase = rng.uniform(0, 2 * kPi);
    const int beams = int(ce.size());
    int64_t points = 0;
    std::vector<VoxelAccumulator::Point> batch;
    const double iscale = o_.intensity_max / 255.0;
    std::vector<double> cas(size_t(p.azimuth_steps)), sas(size_t(p.azimuth_steps));
    std::vector<int> sectors(size_t(p.azimuth_steps));
    for (int a = 0; a < p.azimuth_steps; ++a) {
      double az = phase + 2 * kPi * a / p.azimuth_steps;
      if (az >= kPi) az -= 2 * kPi;
      cas[size_t(a)] = std::cos(az);
      sas[size_t(a)] = std::sin(az);
      sectors[size_t(a)] = std::min(kSectors - 1, int((az + kPi) * (kSectors / (2 * kPi))));
    }
    for (int a = 0; a < p.azimuth_steps; ++a) {
      const int sector = sectors[size_t(a)];
      const int j0 = start[size_t(sector)], j1 = start[size_t(sector) + 1];
      for (int b = 0; b < beams; ++b) {
        const double d[3] = {ce[size_t(b)] * cas[size_t(a)], ce[size_t(b)] * sas[size_t(a)], se[size_t(b)]};
        // Nothing beyond the point where the ray leaves the voxelized box can be kept.
        double best = o_.max_range;
        for (int ax = 0; ax < 3; ++ax) {
          if (d[ax] > 1e-12) best = std::min(best, (o_.range[size_t(ax) + 3] - org[ax]) / d[ax]);
          if (d[ax] < -1e-12) best = std::min(best, (o_.range[size_t(ax)] - org[ax]) / d[ax]);
        }
        if (best < 1.5) continue;
        double cos_inc = 0, reflect = 0;
        int hit = -2;  // -2 nothing, -1 ground, >= 0 object
        const double denom = d[2] - sc.gx * d[0] - sc.gy * d[1];
        if (denom < -1e-9) {
          const double t = (g_org - org[2]) / denom;
          if (t > 0 && t < best) {
            best = t;
            hit = -1;
            cos_inc = -denom;
          }
        }
        for (int j = j0; j < j1 && near[size_t(j)] < best; ++j) {
          const Object& ob = sc.objects[size_t(list[size_t(j)])];
          double ci = 0;
          const double t = intersect(ob, org, d, ci);
          if (t > 0 && t < best) {
            if (ob.porosity > 0 && rng.chance(ob.porosity)) continue;
            best = t;
            hit = list[size_t(j)];
            cos_inc = ci;
            reflect = ob.reflect;
          }
        }
        if (hit == -2 || best < 1.5) continue;  // no return, or the ego vehicle's own body
        if (rng.chance(0.03)) continue;         // dropped return
        const double t = best + 0.015 * rng.normal();
        const double px = org[0] + t * d[0], py = org[1] + t * d[1];
        double pz = org[2] + t * d[2];
        if (hit == -1) {
          double s, l;
          sc.to_sl(px, py, s, l);
          const double off = l - sc.road_center;
          // Undulation, the road's crown and raised sidewalks, applied as a height offset.
          const double aoff = std::abs(off);
          pz += sc.bumps(px, py) + 0.01 * rng.normal() +
                (aoff < sc.road_half ? -0.02 * aoff : 0.15 - 0.02 * sc.road_half);
          // Lane markings: dashed centre line and solid edges are bright; the rest is asphalt.
          const bool marking =
              (aoff < 0.08 && std::fmod(std::abs(s) + 100, 9.0) < 3.0) || std::abs(aoff - sc.road_half + 0.3) < 0.08;
          reflect = marking ? 70 : (aoff < sc.road_half ? 10 : 20);
        }
        if (px < x0 || py < y0 || pz < z0 || px >= x1 || py >= y1 || pz >= z1) continue;
        const int64_t ix = int64_t(std::floor((px - x0) / vx));
        const int64_t iy = int64_t(std::floor((py - y0) / vy));
        const int64_t iz = int64_t(std::floor((pz - z0) / vz));
        if (ix < 0 || iy < 0 || iz < 0 || ix >= grid_[2] || iy >= grid_[1] || iz >= grid_[0]) continue;
        const double inten = reflect * (0.3 + 0.7 * cos_inc) * (1 + 0.15 * rng.normal());
        VoxelAccumulator::Point pt{int32_t(iz),
                                   int32_t(iy),
                                   int32_t(ix),
                                   {px, py, pz, std::min(255.0, std::max(0.0, std::round(inten))) * iscale, lag}};
        batch.push_back(pt);
      }
      acc.add_batch(batch);
      points += int64_t(batch.size());
      batch.clear();
    }
    return points;
  }

  const FrameOptions& o_;
  std::array<int32_t, 3> grid_;
};

void validate(const FrameOptions& o) {
  SCN_CHECK(o.voxels >= 0, "synthetic frame: voxel count must be >= 0, got ", o.voxels);
  SCN_CHECK(o.channels == 4 || o.channels == 5, "synthetic frame: channels must be 4 or 5, got ", o.channels);
  SCN_CHECK(o.batch_index >= 0, "synthetic frame: batch index must be >= 0, got ", o.batch_index);
  for (int d = 0; d < 3; ++d) {
    SCN_CHECK(o.voxel_size[size_t(d)] > 0, "synthetic frame: voxel size must be positive");
    SCN_CHECK(o.range[size_t(d) + 3] > o.range[size_t(d)], "synthetic frame: range max must exceed min");
  }
  SCN_CHECK(o.intensity_max > 0, "synthetic frame: intensity_max must be positive");
  SCN_CHECK(o.beams >= 1 && o.azimuth_steps >= 1 && o.sweeps >= 1,
            "synthetic frame: beams, azimuth steps and sweeps must be >= 1");
  SCN_CHECK(o.elevation_max_deg >= o.elevation_min_deg && o.elevation_min_deg > -90 && o.elevation_max_deg < 90,
            "synthetic frame: elevation range must lie within (-90, 90) degrees");
}

}  // namespace

FrameOptions FrameOptions::nuscenes() { return FrameOptions{}; }

FrameOptions FrameOptions::kitti() {
  FrameOptions o;
  o.channels = 4;
  o.intensity_max = 1.f;
  o.range = {0.f, -40.f, -3.f, 70.4f, 40.f, 1.f};
  o.voxel_size = {0.05f, 0.05f, 0.1f};
  o.beams = 64;
  o.elevation_min_deg = -24.9f;
  o.elevation_max_deg = 2.f;
  o.azimuth_steps = 2048;
  o.sensor_height = 1.73f;
  o.max_range = 120.f;
  o.sweeps = 1;
  return o;
}

namespace {
struct NamedPreset {
  const char* name;
  FrameOptions (*make)();
};
// the one list of scene presets: preset_names() and preset() read it
constexpr NamedPreset kPresets[] = {{"nuscenes", &FrameOptions::nuscenes}, {"kitti", &FrameOptions::kitti}};
}  // namespace

const std::vector<std::string>& FrameOptions::preset_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    for (const NamedPreset& p : kPresets) v.emplace_back(p.name);
    return v;
  }();
  return names;
}

FrameOptions FrameOptions::preset(const std::string& name) {
  std::string known;
  for (const NamedPreset& p : kPresets) {
    if (name == p.name) return p.make();
    known += (known.empty() ? "" : ", ") + std::string(p.name);
  }
  SCN_FAIL("synthetic scene preset '", name, "' is unknown (presets: ", known, ")");
}

std::array<int32_t, 3> grid_zyx(const FrameOptions& o) {
  std::array<int32_t, 3> g = o.grid_zyx;
  const int32_t n[3] = {
      int32_t(std::lround((o.range[5] - o.range[2]) / o.voxel_size[2])) + 1,
      int32_t(std::lround((o.range[4] - o.range[1]) / o.voxel_size[1])),
      int32_t(std::lround((o.range[3] - o.range[0]) / o.voxel_size[0])),
  };
  for (int d = 0; d < 3; ++d)
    if (g[size_t(d)] <= 0) g[size_t(d)] = n[d];
  return g;
}

Frame generate_frame(const FrameOptions& opts) {
  validate(opts);
  const std::array<int32_t, 3> g = grid_zyx(opts);
  SCN_CHECK(g[0] >= 1 && g[1] >= 1 && g[2] >= 1 && int64_t(g[1]) * g[2] <= (int64_t(1) << 26), "synthetic frame: grid ",
            g[0], "x", g[1], "x", g[2], " must be positive with at most 2^26 cells per z plane");
  const Scanner scanner(opts, g);
  const int64_t target = opts.voxels;

  double extent =
      std::max({std::abs(opts.range[0]), std::abs(opts.range[1]), std::abs(opts.range[3]), std::abs(opts.range[4])});
  extent = std::min<double>(extent + 30, opts.max_range);

  // Thin the scan when one sweep already gives far more than wanted; otherwise passes of extra
  // beams are added until the count is reached.
  struct Attempt {
    std::unique_ptr<VoxelAccumulator> acc;
    ScanParams params;
    ScanResult res;
  };
  Scene sc = make_scene(opts.seed);
  sc.g0 = -double(opts.sensor_height);
  sc.ego_back = sc.speed * (opts.sweeps - 1) * double(opts.sweep_interval);
  populate(sc, opts.seed, 30 + int(std::min<int64_t>(300, target / 4000)), extent);
  Attempt best;
  int attempts = 0;
  double density = 1.0;
  while (attempts < 8) {
    Attempt at;
    at.params = thinned(opts, density);
    at.acc = std::make_unique<VoxelAccumulator>(g, opts.keep_points ? opts.channels : 0);
    at.res = scanner.scan(sc, at.params, target, *at.acc);
    ++attempts;
    const int64_t n = at.acc->size();
    if (target > 0 && n < target) break;  // the densest scan fell short, or a thinned one did
    const bool overshoot = target > 0 && at.res.passes == 1 && at.res.sweeps == 1 && n > target + target / 2 &&
                           (at.params.beams > 4 || at.params.azimuth_steps > 64);
    best = std::move(at);
    if (!overshoot) break;
    density *= std::max(0.02, std::min(0.9, 1.15 * double(target) / double(n)));
  }
  SCN_CHECK(best.acc, "synthetic frame: cannot reach ", target, " voxels with this grid and range (seed ", opts.seed,
            ")");

  const VoxelAccumulator& acc = *best.acc;
  const int64_t m = acc.size();
  std::vector<int64_t> keep(static_cast<size_t>(m));
  for (int64_t i = 0; i < m; ++i) keep[size_t(i)] = i;
  if (target > 0 && m > target) {
    if (opts.trim == Trim::Random) {
      Rng rng(mix64(opts.seed ^ 0x5452494dull));
      for (int64_t i = 0; i < target; ++i) {
        const int64_t j = i + int64_t(rng.uniform() * double(m - i));
        std::swap(keep[size_t(i)], keep[size_t(std::min(j, m - 1))]);
      }
    } else {
      std::vector<double> dist(static_cast<size_t>(m));
      for (int64_t i = 0; i < m; ++i) dist[size_t(i)] = std::hypot(acc.mean(i, 0), acc.mean(i, 1));
      std::stable_sort(keep.begin(), keep.end(),
                       [&](int64_t a, int64_t b) { return dist[size_t(a)] < dist[size_t(b)]; });
    }
    keep.resize(size_t(target));
    std::sort(keep.begin(), keep.end());
  }

  Frame fr;
  fr.channels = opts.channels;
  fr.num_voxels = int64_t(keep.size());
  fr.grid = opts.order == IndexOrder::Zyx ? g : std::array<int32_t, 3>{g[2], g[1], g[0]};
  fr.sweeps = best.res.sweeps;
  fr.beams = best.params.beams;
  fr.azimuth_steps = best.params.azimuth_steps;
  fr.passes = best.res.passes;
  fr.objects = int(sc.objects.size());
  fr.attempts = attempts;
  fr.points = best.res.points;
  fr.voxels_before_trim = m;
  fr.raw_points = std::move(best.acc->points());
  fr.features.resize(keep.size() * size_t(opts.channels));
  fr.indices.resize(keep.size() * 4);
  for (size_t r = 0; r < keep.size(); ++r) {
    const int64_t v = keep[r];
    int32_t iz, iy, ix;
    acc.coords(v, iz, iy, ix);
    int32_t* out = &fr.indices[4 * r];
    out[0] = opts.batch_index;
    if (opts.order == IndexOrder::Zyx) {
      out[1] = iz, out[2] = iy, out[3] = ix;
    } else {
      out[1] = ix, out[2] = iy, out[3] = iz;
    }
    for (int c = 0; c < opts.channels; ++c)
      fr.features[r * size_t(opts.channels) + size_t(c)] = float_to_half(float(acc.mean(v, c)));
  }
  return fr;
}

Frame generate_batch(const FrameOptions& options, int batch_size) {
  SCN_CHECK(batch_size >= 1, "synthetic frame: batch size must be >= 1, got ", batch_size);
  Frame all;
  for (int b = 0; b < batch_size; ++b) {
    FrameOptions o = options;
    o.batch_index = b;
    o.seed = b == 0 ? options.seed : mix64(options.seed + uint64_t(b));
    Frame f = generate_frame(o);
    if (b == 0) {
      all = std::move(f);
      continue;
    }
    all.features.insert(all.features.end(), f.features.begin(), f.features.end());
    all.indices.insert(all.indices.end(), f.indices.begin(), f.indices.end());
    all.num_voxels += f.num_voxels;
    all.points += f.points;
    all.voxels_before_trim += f.voxels_before_trim;
    all.attempts += f.attempts;
  }
  return all;
}

Tensor features_tensor(const Frame& f) {
  return Tensor::from_host(f.features.data(), {f.num_voxels, f.channels}, DType::Float16);
}

Tensor indices_tensor(const Frame& f) { return Tensor::from_host(f.indices.data(), {f.num_voxels, 4}, DType::Int32); }

}  // namespace scn::synth
