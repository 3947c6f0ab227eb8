// scn compare A.tensor B.tensor: difference metrics in float64, optional pass/fail bounds.
#include <cmath>
#include <cstdio>

#include "commands.h"
#include "common.h"
#include "compare.h"
#include "compare_layers.h"

namespace scn::cli {

CLI::App* add_compare(CLI::App& app, CompareArgs& a) {
  CLI::App* c = app.add_subcommand(
      "compare", "Compare two .tensor files (A = result, B = reference); exit 1 when a bound fails");
  c->add_option("A", a.a, "Tensor A (float16, float32 or int32)")->required();
  c->add_option("B", a.b, "Tensor B, the reference (rel-L2 is |A-B| / |B|)")->required();
  c->add_flag("--detail", a.detail, "Value statistics, difference distribution and the largest differences");
  c->add_option("--top", a.top, "Largest differences listed with --detail")->capture_default_str()->check(CLI::Range(0, 100000));
  c->add_option("--max-rel-l2", a.max_rel_l2, "Fail when |A-B| / |B| exceeds this");
  c->add_option("--min-cosine", a.min_cosine, "Fail when the cosine similarity is below this");
  c->add_option("--max-abs", a.max_abs, "Fail when the largest absolute difference exceeds this");
  CLI::Option* ia = c->add_option("--indices-a", a.indices_a,
                                  "Sparse compare: indices [N, 4] of A; rows are matched by site");
  CLI::Option* ib = c->add_option("--indices-b", a.indices_b, "Sparse compare: indices [N, 4] of B");
  ia->needs(ib);
  ib->needs(ia);
  // Bisect: A = MODEL.onnx, B = the exporter's intermediates_dir (compare_layers.h).
  CLI::Option* layers = c->add_flag(
      "--layers", a.layers,
      "Bisect: A is a model, B the exporter's intermediates_dir; run the model on --features/--indices/--grid "
      "with every value exposed and compare each with B/<value>.tensor, in graph order");
  const std::vector<CLI::Option*> run_opts = {
      c->add_option("--features", a.features, "--layers: input features .tensor"),
      c->add_option("--indices", a.indices, "--layers: input indices .tensor"),
      c->add_option("--grid", a.grid, "--layers: grid in the model's index order")->check(grid_validator()),
      c->add_option("--precision", a.precision, "--layers: activation precision")
          ->capture_default_str()
          ->check(CLI::IsMember({"fp32", "fp16", "int8"})),
      c->add_option("--device", a.device, "--layers: backend")
          ->capture_default_str()
          ->check(CLI::IsMember({"cpu", "cuda", "auto"})),
      c->add_option("--batch", a.batch, "--layers: batch size")->capture_default_str()->check(CLI::Range(1, 1 << 16)),
      c->add_option("--threads", a.threads, "--layers: CPU threads (0: all cores)")->check(CLI::Range(0, 4096))};
  for (CLI::Option* o : run_opts) o->needs(layers);
  layers->excludes(ia);
  return c;
}

namespace {

std::string num(double v) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

std::string pct(int64_t n, int64_t total) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f %%", total ? 100.0 * double(n) / double(total) : 0.0);
  return buf;
}

void print_values(const char* label, const std::string& path, const Tensor& t, const ValueStats& s) {
  std::printf("%s  %s  %s\n", label, describe_tensor(t).c_str(), path.c_str());
  std::printf("   absmax %s, min %s, max %s, mean %s, std %s, non-finite %lld\n", num(s.absmax).c_str(),
              num(s.min).c_str(), num(s.max).c_str(), num(s.mean).c_str(), num(s.stddev).c_str(),
              static_cast<long long>(s.nonfinite));
}

}  // namespace

int run_compare(const CompareArgs& a) {
  if (a.layers) return run_compare_layers(a);
  const Tensor ta = Tensor::load(a.a);
  Tensor tb = Tensor::load(a.b);
  if (!a.indices_a.empty()) {
    const Tensor ia = Tensor::load(a.indices_a);
    const Tensor ib = Tensor::load(a.indices_b);
    SCN_CHECK(ta.ndim() == 2 && ta.dim(0) == ia.dim(0), a.a, ": ", ta.shape_string(), " does not match the ",
              ia.dim(0), " rows of ", a.indices_a);
    tb = align_sparse_rows(ia, tb, ib, a.indices_a, a.indices_b);
  }
  const CompareResult r = compare_tensors(ta, tb, a.detail ? a.top : 0, a.a, a.b);

  if (a.detail) {
    print_values("A", a.a, ta, r.a);
    print_values("B", a.b, tb, r.b);
  } else {
    std::printf("A  %s  %s\nB  %s  %s\n", describe_tensor(ta).c_str(), a.a.c_str(), describe_tensor(tb).c_str(),
                a.b.c_str());
  }
  std::printf("elements        %lld (%s identical)\n", static_cast<long long>(r.numel), pct(r.exact, r.numel).c_str());
  std::printf("max abs diff    %s\n", num(r.max_abs).c_str());
  std::printf("mean abs diff   %s\n", num(r.mean_abs).c_str());
  std::printf("sum abs diff    %s\n", num(r.sum_abs).c_str());
  std::printf("cosine          %.9f\n", r.cosine);
  std::printf("rel-L2          %s\n", num(r.rel_l2).c_str());
  std::printf("non-finite      A %lld, B %lld\n", static_cast<long long>(r.a.nonfinite),
              static_cast<long long>(r.b.nonfinite));

  if (a.detail) {
    std::printf("\nabs diff relative to the largest:\n");
    Table rel({"bucket", "count", "share"});
    for (const Bucket& b : r.relative_buckets) rel.add({b.label, std::to_string(b.count), pct(b.count, r.numel)});
    std::printf("%s", rel.str("  ").c_str());
    std::printf("\nabs diff by magnitude:\n");
    Table dec({"range", "count", "share"});
    for (const Bucket& b : r.decade_buckets) dec.add({b.label, std::to_string(b.count), pct(b.count, r.numel)});
    std::printf("%s", dec.str("  ").c_str());
    if (!r.top.empty()) {
      std::printf("\nlargest differences:\n");
      Table top({"index", "A", "B", "|A-B|"});
      for (const DiffEntry& e : r.top) {
        std::string idx = "[";
        for (size_t d = 0; d < e.index.size(); ++d) idx += (d ? ", " : "") + std::to_string(e.index[d]);
        top.add({idx + "]", num(e.a), num(e.b), num(e.diff)});
      }
      std::printf("%s", top.str("  ").c_str());
    }
  }

  std::vector<BoundCheck> checks;
  if (!std::isnan(a.max_abs)) checks.push_back(check_bound("max-abs", r.max_abs, a.max_abs, true));
  if (!std::isnan(a.max_rel_l2)) checks.push_back(check_bound("rel-L2", r.rel_l2, a.max_rel_l2, true));
  if (!std::isnan(a.min_cosine)) checks.push_back(check_bound("cosine", r.cosine, a.min_cosine, false));
  if (checks.empty()) return 0;
  // Any NaN or infinity in either tensor fails too: bounds on finite metrics would hide it.
  BoundCheck finite;
  finite.name = "finite";
  finite.value = double(r.a.nonfinite + r.b.nonfinite);
  finite.limit = 0;
  finite.pass = finite.value == 0;
  checks.push_back(finite);

  std::printf("\nbounds:\n");
  std::string failed;
  for (const BoundCheck& c : checks) {
    std::string rule;
    if (c.name == "finite")
      rule = "non-finite values: " + num(c.value) + (c.pass ? "" : " (must be 0)");
    else if (c.pass || !std::isnan(c.value))
      rule = c.name + " " + num(c.value) + (c.pass ? (c.upper ? " <= " : " >= ") : (c.upper ? " > " : " < ")) +
             num(c.limit);
    else
      rule = c.name + " is NaN (fails every bound)";
    std::printf("  %-4s %s\n", c.pass ? "ok" : "FAIL", rule.c_str());
    if (!c.pass) failed += (failed.empty() ? "" : "; ") + rule;
  }
  if (failed.empty()) {
    std::printf("PASS\n");
    return 0;
  }
  std::printf("FAIL\n");
  std::fflush(stdout);
  std::fprintf(stderr, "scn compare: bound failed: %s\n", failed.c_str());
  return 1;
}

}  // namespace scn::cli
