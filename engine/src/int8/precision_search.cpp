// search_int8_plan (scn/calibrate.h): which SparseConvolution / Add nodes run int8 for a target
// cosine against FP32, measured on the CPU backend (the oracle; the CUDA INT8 engine is bitwise
// equal to it on all-int8 plans).
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>

#include "backends/cpu/int8_observer.h"
#include "graph/analysis.h"
#include "int8/agreement.h"
#include "scn/calibrate.h"
#include "scn/error.h"

namespace scn {

namespace {

class PlanEvaluator {
 public:
  PlanEvaluator(Calibrator& cal, const std::vector<CalibrationFrame>& frames, const CalibrationOptions& base)
      : cal_(cal), frames_(frames), base_(base) {
    Engine& e = cal.fp32_engine();
    const Graph& g = cal.graph();
    rows_.assign(g.values.size(), 0.0);
    cpu::set_value_observer(e, [&](const cpu::ObservedValue& v) {
      if (v.coords) rows_[size_t(v.value)] += double(v.rows);
    });
    try {
      for (const CalibrationFrame& f : frames) {
        e.set_input(0, f.features, f.indices, f.grid, f.batch_size, f.labels);
        e.forward();
        std::vector<Tensor> outs;
        for (int i = 0; i < e.num_outputs(); ++i) outs.push_back(e.output(i).to_dtype(DType::Float32));
        ref_.push_back(std::move(outs));
      }
    } catch (...) {
      cpu::set_value_observer(e, {});
      throw;
    }
    cpu::set_value_observer(e, {});
  }

  /// Sites (summed over the frames) of every value.
  double rows(int value) const { return rows_[size_t(value)]; }

  CalibrationOptions options(const std::set<std::string>& int8) const { return with_int8_nodes(base_, int8); }

  /// The INT8 attributes of the plan running `int8` nodes in int8.
  std::map<std::string, QuantAttrs> attributes(const std::set<std::string>& int8) const {
    return cal_.attributes(options(int8));
  }

  /// The smallest output cosine over every frame of the plan running `int8` nodes in int8.
  double operator()(const std::set<std::string>& int8) { return cosine_of(attributes(int8)); }

  /// The same for a plan's attributes.
  double cosine_of(const std::map<std::string, QuantAttrs>& quant) {
    ++evaluations;
    BuildOptions i8;
    i8.backend = Backend::Cpu;
    i8.precision = Precision::Int8;
    i8.num_threads = cal_.num_threads();
    std::unique_ptr<Engine> e = with_int8_attributes(cal_.model(), quant).build(i8);
    double worst = 1.0;
    for (size_t k = 0; k < frames_.size(); ++k) {
      const CalibrationFrame& f = frames_[k];
      e->set_input(0, f.features, f.indices, f.grid, f.batch_size, f.labels);
      e->forward();
      for (int i = 0; i < e->num_outputs(); ++i)
        worst = std::min(worst, agreement(e->output(i).to_dtype(DType::Float32), ref_[k][size_t(i)]).cosine());
    }
    return worst;
  }

  int evaluations = 0;

 private:
  Calibrator& cal_;
  const std::vector<CalibrationFrame>& frames_;
  CalibrationOptions base_;
  std::vector<double> rows_;
  std::vector<std::vector<Tensor>> ref_;
};

std::string fixed6(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6f", x);
  return buf;
}

}  // namespace

PrecisionPlan search_int8_plan(Calibrator& cal, const std::vector<CalibrationFrame>& frames,
                               const PrecisionSearchOptions& options) {
  const Graph& g = cal.graph();
  const double bound = options.min_cosine;
  SCN_CHECK(!frames.empty(), g.source, ": the INT8 plan search needs at least one evaluation frame");
  SCN_CHECK(bound > 0.0 && bound <= 1.0, g.source, ": the target cosine must lie in (0, 1], got ", bound);
  PlanEvaluator eval(cal, frames, options.calibration);

  PrecisionPlan plan;
  plan.timed = !options.int8_savings_ms.empty();
  std::vector<size_t> cand;  // indices into plan.nodes
  // per plan node: the site set of its output (graph/analysis.h): the nodes of one level share it
  const GraphAnalysis analysis = analyze_graph(g);
  std::vector<int> node_level;
  for (const Node& n : g.nodes) {
    if (!has_precision(n.op)) continue;
    PlanNode p;
    p.node = n.name;
    p.op = op_type_name(n.op);
    const double sites = eval.rows(n.output);
    if (n.op == OpType::SparseConv)
      p.macs = sites * double(n.conv.kernel_size[0]) * n.conv.kernel_size[1] * n.conv.kernel_size[2] *
               n.conv.in_channels * n.conv.out_channels;
    else
      p.macs = sites * g.values[size_t(n.output)].channels;
    if (plan.timed) {
      const auto it = options.int8_savings_ms.find(n.name);
      p.saving_ms = it == options.int8_savings_ms.end() ? 0.0 : it->second;
    }
    plan.total_macs += p.macs;
    node_level.push_back(analysis.value_sites[size_t(n.output)]);
    cand.push_back(plan.nodes.size());
    plan.nodes.push_back(p);
  }
  SCN_CHECK(!cand.empty(), g.source, ": the model has no SparseConvolution or Add node to run in int8");

  std::set<std::string> all;
  for (const PlanNode& p : plan.nodes) all.insert(p.node);
  plan.fp16_cosine = eval({});
  plan.all_int8_cosine = eval(all);
  std::set<std::string> chosen;
  const bool by_time = plan.timed && bool(options.plan_ms);
  auto time_attributes = [&](const std::map<std::string, QuantAttrs>& quant) {
    ++plan.timings;
    return options.plan_ms(quant);
  };
  auto time_plan = [&](const std::set<std::string>& int8) { return time_attributes(eval.attributes(int8)); };
  if (by_time) plan.fp16_ms = plan.ms = time_plan({});
  // A search by plan time takes the all-int8 plan only when it is also faster than fp16.
  bool take_all = plan.all_int8_cosine >= bound;
  if (take_all && by_time) {
    const double t = time_plan(all);
    take_all = t < plan.fp16_ms - options.plan_ms_margin;
    if (take_all) plan.ms = t;
  }
  if (take_all) {
    chosen = all;
    plan.cosine = plan.all_int8_cosine;
    for (PlanNode& p : plan.nodes) p.sensitivity = -1.0;  // not measured: nothing to choose
  } else {
    SCN_CHECK(plan.fp16_cosine >= bound, g.source, ": no INT8 plan reaches cosine ", fixed6(bound),
              " on the evaluation frames: even with every node in fp16 the cosine against FP32 is ",
              fixed6(plan.fp16_cosine), " (all int8: ", fixed6(plan.all_int8_cosine),
              "); lower --min-cosine or run the model in fp16");
    // A timed search tries only the nodes that save time (the others are not measured: sensitivity -1).
    if (plan.timed)
      cand.erase(std::remove_if(cand.begin(), cand.end(),
                                [&](size_t i) {
                                  if (plan.nodes[i].saving_ms > 0.0) return false;
                                  plan.nodes[i].sensitivity = -1.0;
                                  return true;
                                }),
                 cand.end());
    double best_single = 0.0;
    for (size_t i : cand) {
      PlanNode& p = plan.nodes[i];
      const double c = eval({p.node});
      p.sensitivity = std::max(0.0, plan.fp16_cosine - c);
      best_single = std::max(best_single, c);
    }
    // Cheapest accuracy per unit of work (per ms saved) first; ties (e.g. no measurable loss) by more
    // work (more time saved) first.
    auto weight = [&](const PlanNode& p) { return plan.timed ? p.saving_ms : std::max(p.macs, 1.0); };
    std::stable_sort(cand.begin(), cand.end(), [&](size_t a, size_t b) {
      const PlanNode &x = plan.nodes[a], &y = plan.nodes[b];
      const double rx = x.sensitivity / weight(x), ry = y.sensitivity / weight(y);
      if (rx != ry) return rx < ry;
      return weight(x) > weight(y);
    });
    plan.cosine = plan.fp16_cosine;
    // A trial plan is kept when it meets the bound and (by time) runs faster than the best so far.
    auto keep_if_better = [&](const std::set<std::string>& trial) {
      const std::map<std::string, QuantAttrs> quant = eval.attributes(trial);  // once for both measurements
      const double c = eval.cosine_of(quant);
      if (c < bound) return;
      if (by_time) {
        const double t = time_attributes(quant);
        if (!(t < plan.ms - options.plan_ms_margin)) return;
        plan.ms = t;
      }
      chosen = trial;
      plan.cosine = c;
    };
    if (by_time) {
      // Whole levels first: an int8 conv between fp16 ones pays for the conversions at both ends, so a
      // level's candidates together with its Adds (the nodes whose outputs are the level's site set) can
      // be faster where each alone is not. Levels in increasing sensitivity per ms saved.
      std::map<int, std::vector<size_t>> level;
      for (size_t i : cand) level[node_level[i]].push_back(i);
      std::vector<std::vector<size_t>> levels;
      for (auto& [sites, members] : level) {
        // its Adds that are not candidates already (an Add that saves time is one)
        for (size_t i = 0; i < plan.nodes.size(); ++i)
          if (plan.nodes[i].op == op_type_name(OpType::Add) && node_level[i] == sites &&
              std::find(members.begin(), members.end(), i) == members.end())
            members.push_back(i);
        if (members.size() >= 2) levels.push_back(members);
      }
      auto per_ms = [&](const std::vector<size_t>& m) {
        double sens = 0, ms = 0;
        for (size_t i : m)
          if (plan.nodes[i].saving_ms > 0.0) sens += plan.nodes[i].sensitivity, ms += plan.nodes[i].saving_ms;
        return ms > 0 ? sens / ms : std::numeric_limits<double>::infinity();
      };
      std::stable_sort(levels.begin(), levels.end(), [&](const std::vector<size_t>& a, const std::vector<size_t>& b) {
        return per_ms(a) < per_ms(b);
      });
      auto try_members = [&](const std::vector<size_t>& m) {
        std::set<std::string> trial = chosen;
        for (size_t i : m) trial.insert(plan.nodes[i].node);
        if (trial != chosen) keep_if_better(trial);
      };
      for (const std::vector<size_t>& m : levels) try_members(m);
      // Then runs shorter than a level: two or more consecutive members (graph order, its Adds among
      // them), where a level whole misses the bound or runs slower (e.g. its most sensitive conv), yet
      // some of its neighbours together pay for their conversions. Sensitivities roughly add, so a run
      // whose single-node losses already sum past twice what the bound leaves is not evaluated.
      std::vector<std::vector<size_t>> runs;
      for (std::vector<size_t> m : levels) {
        std::sort(m.begin(), m.end());  // plan.nodes follow the graph's node order
        for (size_t len = m.size() - 1; len >= 2; --len)
          for (size_t at = 0; at + len <= m.size(); ++at)
            runs.emplace_back(m.begin() + std::ptrdiff_t(at), m.begin() + std::ptrdiff_t(at + len));
      }
      std::stable_sort(runs.begin(), runs.end(), [&](const std::vector<size_t>& a, const std::vector<size_t>& b) {
        return per_ms(a) < per_ms(b);
      });
      for (const std::vector<size_t>& r : runs) {
        double loss = 0;
        for (size_t i : r)
          if (!chosen.count(plan.nodes[i].node)) loss += std::max(0.0, plan.nodes[i].sensitivity);
        if (loss > 2.0 * (plan.cosine - bound)) {
          ++plan.runs_skipped;
          continue;
        }
        try_members(r);
      }
    }
    for (size_t i : cand) {
      if (chosen.count(plan.nodes[i].node)) continue;
      std::set<std::string> trial = chosen;
      trial.insert(plan.nodes[i].node);
      keep_if_better(trial);
    }
    SCN_CHECK(!plan.timed || !cand.empty(), g.source, ": no INT8 plan saves time: no node of the model runs faster ",
              "in int8 than in fp16 on the timed device; run the model in fp16");
    SCN_CHECK(!by_time || !chosen.empty(), g.source, ": no INT8 plan that reaches cosine ", fixed6(bound),
              " runs faster than fp16 on the timed device (all fp16: ", plan.fp16_ms, " ms; ", plan.timings,
              " plans timed); run the model in fp16");
    SCN_CHECK(!chosen.empty(), g.source, ": no INT8 plan reaches cosine ", fixed6(bound),
              " on the evaluation frames: every node in fp16 gives ", fixed6(plan.fp16_cosine), ", but any single node",
              plan.timed ? " that saves time" : "", " in int8 drops it below the bound (best ", fixed6(best_single),
              "); run the model in fp16 or lower --min-cosine");
  }
  for (PlanNode& p : plan.nodes) {
    p.int8 = chosen.count(p.node) > 0;
    if (p.int8) plan.int8_macs += p.macs;
    if (p.int8) plan.int8_saving_ms += p.saving_ms;
  }
  plan.attributes = eval.attributes(chosen);
  plan.evaluations = eval.evaluations;
  return plan;
}

}  // namespace scn
