// Calibration: |x| histograms and range methods, the attributes a Calibrator writes (precisions,
// output precisions, ranges that agree per int8 value), and `scn calibrate` end to end: the written
// model re-imports (`scn inspect`) and runs as INT8 (`scn run --precision int8 --device cpu`).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>

#include "centerpoint_graph.h"
#include "cli/cli_runner.h"
#include "onnx_writer.h"
#include "scn/calibrate.h"
#include "scn/onnx.h"
#include "test_helpers.h"

namespace {

using namespace scn;

TEST(Int8Calibration, HistogramGrowsExactly) {
  AbsHistogram h(64);
  const float a[] = {0.f, 0.5f, -1.f, 0.25f};
  h.add(a, 4);
  EXPECT_EQ(h.count(), 4);
  EXPECT_EQ(h.zeros(), 1);
  EXPECT_EQ(h.absmax(), 1.0);
  const double w0 = h.width();
  const float b[] = {-10.f, 3.f, 0.f};  // the range doubles 4 times; bins merge pairwise
  h.add(b, 3);
  EXPECT_EQ(h.count(), 7);
  EXPECT_EQ(h.zeros(), 2);
  EXPECT_EQ(h.absmax(), 10.0);
  EXPECT_EQ(h.width(), w0 * 16);
  int64_t sum = 0;
  for (int64_t c : h.bins()) sum += c;
  EXPECT_EQ(sum, 5);  // every non-zero value is still counted once
  EXPECT_EQ(h.percentile(100.0), 10.0);
}

TEST(Int8Calibration, RangeMethods) {
  std::mt19937_64 rng(3);
  std::normal_distribution<float> nd(0.f, 1.f);
  std::vector<float> x(200000);
  for (float& v : x) v = nd(rng);
  {
    // MSE for 8 bits on a Gaussian clips a few sigma
    AbsHistogram h(4096);
    h.add(x.data(), int64_t(x.size()));
    const double m = h.mse_range();
    EXPECT_GT(m, 2.5);
    EXPECT_LT(m, h.absmax());
  }
  x[7] = 40.f;  // one outlier
  AbsHistogram h(4096);
  h.add(x.data(), int64_t(x.size()));
  EXPECT_EQ(h.absmax(), 40.0);
  // |N(0,1)|: median 0.674, 99.9 % 3.29; the outlier does not move percentiles
  EXPECT_NEAR(h.percentile(50.0), 0.674, 0.02);
  EXPECT_NEAR(h.percentile(99.9), 3.29, 0.05);
  EXPECT_EQ(h.percentile(100.0), 40.0);
  EXPECT_EQ(parse_calibration_method("mse"), CalibrationMethod::Mse);
  EXPECT_THROW(parse_calibration_method("kl"), Error);
}

// small_centerpoint() with He-scaled weights (its fp16 test patterns overflow fp16 after a few
// layers) and biases N(0, 0.1), so fp16 / int8 engines stay finite.
test::ModelDef rescale_weights(test::ModelDef m) {
  std::mt19937_64 rng(17);
  std::normal_distribution<float> nd(0.f, 1.f);
  for (test::InitDef& t : m.initializers) {
    int64_t numel = 1;
    for (int64_t d : t.dims) numel *= d;
    const bool weight = t.dims.size() == 5;
    const float scale = weight ? std::sqrt(2.f / float(t.dims[1] * t.dims[2] * t.dims[3] * t.dims[4])) : 0.1f;
    std::vector<uint16_t> h(static_cast<size_t>(numel));
    for (auto& v : h) v = float_to_half(nd(rng) * scale);
    t.raw_data.assign(reinterpret_cast<const char*>(h.data()), h.size() * 2);
  }
  return m;
}

test::ModelDef sane_small_centerpoint() { return rescale_weights(test::small_centerpoint()); }

/// The message of the scn::Error that search_int8_plan throws; "" (and a test failure) when it returns a plan.
std::string search_error(Calibrator& cal, const std::vector<CalibrationFrame>& frames,
                         const PrecisionSearchOptions& po) {
  try {
    search_int8_plan(cal, frames, po);
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "no error";
  return "";
}

// What the calibrator's API once let through: a value id out of range (a crash), ranges and attributes from no frame
// (every range 1.0), an empty frame counted as one, and options outside their range (absmax used instead)
TEST(Int8Calibration, BadCallsAreErrorsNamingWhat) {
  const std::string src = test::write_model(sane_small_centerpoint(), "calib_bad.onnx");
  const EngineBuilder b = parse_onnx(src);
  auto message = [](auto&& f) -> std::string {
    try {
      f();
    } catch (const Error& e) {
      return e.what();
    }
    return "no error";
  };
  auto has = [](const std::string& m, const std::string& part) { return m.find(part) != std::string::npos; };
  EXPECT_TRUE(has(message([&] { Calibrator(b, 3, 2); }), "bins = 3 is not in [16, 2^20]"));
  Calibrator cal(b, 512, 2);
  EXPECT_TRUE(has(message([&] { cal.attributes({}); }), "no calibration frame was added"));
  EXPECT_TRUE(has(message([&] { cal.range(0, {}); }), "no calibration frame was added"));
  const Tensor none_f = Tensor::empty({0, 5}, DType::Float16), none_i = Tensor::empty({0, 4}, DType::Int32);
  EXPECT_TRUE(has(message([&] { cal.add_frame({none_f, none_i, {9, 8, 8}, 1, {}}); }), "needs voxels"));
  EXPECT_EQ(cal.frames(), 0);
  const test::SparseInput in = test::random_input(150, 5, {9, 8, 8}, 1, 7);
  cal.add_frame({in.features, in.indices, in.grid, 1, {}});
  const int values = int(cal.graph().values.size());
  EXPECT_TRUE(has(message([&] { cal.range(100000000, {}); }), "value 100000000 does not exist"));
  EXPECT_TRUE(has(message([&] { cal.range(-1, {}); }), "value -1 does not exist"));
  EXPECT_GT(cal.range(values - 1, {}), 0.f);
  for (double p : {0.0, -5.0, 150.0, std::nan("")}) {
    CalibrationOptions o;
    o.method = CalibrationMethod::Percentile;
    o.percentile = p;
    EXPECT_TRUE(has(message([&] { cal.attributes(o); }), "CalibrationOptions.percentile")) << p;
  }
  CalibrationOptions o;
  o.method = CalibrationMethod(42);
  EXPECT_TRUE(has(message([&] { cal.attributes(o); }), "CalibrationOptions.method = 42"));
  o = {};
  o.keep_fp16_first = -1;
  EXPECT_TRUE(has(message([&] { cal.attributes(o); }), "keep_fp16_first = -1"));
}

// Calibrates the small CenterPoint of the ONNX tests on random frames through the library API.
TEST(Int8Calibration, AttributesBuildAnInt8Engine) {
  const std::string src = test::write_model(sane_small_centerpoint(), "calib_src.onnx");
  EngineBuilder b = parse_onnx(src);
  const BuildOptions o = test::cpu_build_options(Precision::Fp32);
  auto e = b.build(o);
  Calibrator cal(b, 512, 2);
  for (int k = 0; k < 3; ++k) {
    const test::SparseInput in = test::random_input(150, 5, {9, 8, 8}, 1, 100 + uint64_t(k));
    cal.add_frame({in.features, in.indices, in.grid, 1, {}});
  }
  EXPECT_EQ(cal.frames(), 3);

  CalibrationOptions co;
  co.method = CalibrationMethod::Absmax;
  co.keep_fp16_first = 1;
  std::vector<CalibrationRow> rows;
  const auto q = cal.attributes(co, &rows);
  ASSERT_EQ(q.size(), 7u);  // conv0..conv4, add0, scatter0
  EXPECT_EQ(q.at("conv0").precision, Precision::Fp16);
  EXPECT_EQ(q.at("conv0").input_dynamic_range, -1.f);
  EXPECT_EQ(q.at("conv0").output_precision, Precision::Int8);  // read by conv1 and add0, both int8
  EXPECT_EQ(q.at("conv1").precision, Precision::Int8);
  EXPECT_EQ(q.at("conv1").weight_dynamic_ranges.size(), 8u);
  EXPECT_EQ(q.at("add0").precision, Precision::Int8);
  // conv0's output is read by conv1 and add0 (input 1): one range
  EXPECT_EQ(q.at("conv1").input_dynamic_range, q.at("add0").input1_dynamic_range);
  // the last conv feeds ScatterDense: fp16 output unless --int8-scatter
  EXPECT_EQ(q.at("conv4").output_precision, Precision::Fp16);
  EXPECT_GT(q.at("scatter0").input_dynamic_range, 0.f);
  // absmax: the ranges are the observed maxima
  for (const auto& r : rows)
    for (size_t i = 0; i < r.input_ranges.size(); ++i) EXPECT_FLOAT_EQ(r.input_ranges[i], float(r.input_absmax[i]));

  const std::string dst = test::temp_dir() + "/calib_dst.onnx";
  write_onnx_with_quant(src, dst, q);
  BuildOptions i8 = o;
  i8.precision = Precision::Int8;
  auto e8 = load_engine_from_onnx(dst, i8);
  const test::SparseInput in = test::random_input(150, 5, {9, 8, 8}, 1, 100);
  e8->set_input(0, in.features, in.indices, in.grid, 1);
  e8->forward();
  e->set_input(0, in.features, in.indices, in.grid, 1);
  e->forward();
  const Tensor a = e8->output(0).to_dtype(DType::Float32), r = e->output(0);
  double dot = 0, na = 0, nb = 0;
  for (int64_t i = 0; i < a.numel(); ++i) {
    dot += double(a.ptr<float>()[i]) * r.ptr<float>()[i];
    na += double(a.ptr<float>()[i]) * a.ptr<float>()[i];
    nb += double(r.ptr<float>()[i]) * r.ptr<float>()[i];
  }
  ASSERT_GT(nb, 0.0);
  EXPECT_GT(dot / std::sqrt(na * nb), 0.99) << "na " << na << " nb " << nb;  // calibrated on this very frame

  // --int8-scatter: conv4 writes int8 for ScatterDense; all convs int8 with keep-first 0
  co.int8_scatter = true;
  co.keep_fp16_first = 0;
  co.keep_fp16 = {"add0"};
  const auto q2 = cal.attributes(co);
  EXPECT_EQ(q2.at("conv4").output_precision, Precision::Int8);
  EXPECT_EQ(q2.at("conv0").precision, Precision::Int8);
  EXPECT_EQ(q2.at("add0").precision, Precision::Fp16);
  EXPECT_EQ(q2.at("conv0").output_precision, Precision::Fp16);  // add0 (fp16) reads it
  write_onnx_with_quant(src, dst, q2);
  EXPECT_NO_THROW(load_engine_from_onnx(dst, i8));

  co.keep_fp16 = {"relu0"};
  EXPECT_THROW(cal.attributes(co), Error);
  co.keep_fp16 = {"conv99"};
  try {
    cal.attributes(co);
    ADD_FAILURE() << "no error";
  } catch (const Error& err) {
    EXPECT_NE(std::string(err.what()).find("no node named 'conv99'"), std::string::npos) << err.what();
  }
}

// The in-memory plan (with_int8_attributes) is the written-and-reparsed one, bit for bit; the
// evaluation of the public API reports the same output cosine as a hand computation.
TEST(Int8Calibration, InMemoryPlanEqualsTheWrittenModel) {
  const std::string src = test::write_model(sane_small_centerpoint(), "calib_mem.onnx");
  Calibrator cal(parse_onnx(src), 512, 2);
  const test::SparseInput in = test::random_input(150, 5, {9, 8, 8}, 1, 300);
  cal.add_frame({in.features, in.indices, in.grid, 1, {}});
  CalibrationOptions co;
  co.keep_fp16_first = 1;
  const auto q = cal.attributes(co);
  const std::string dst = test::temp_dir() + "/calib_mem.int8.onnx";
  write_onnx_with_quant(src, dst, q);
  BuildOptions i8 = test::cpu_build_options(Precision::Int8);
  auto from_file = load_engine_from_onnx(dst, i8);
  auto in_memory = with_int8_attributes(cal.model(), q).build(i8);
  for (Engine* e : {from_file.get(), in_memory.get()}) {
    e->set_input(0, in.features, in.indices, in.grid, 1);
    e->forward();
  }
  const Tensor a = from_file->output(0), b = in_memory->output(0);
  ASSERT_EQ(a.bytes(), b.bytes());
  EXPECT_EQ(std::memcmp(a.data(), b.data(), a.bytes()), 0);
  EXPECT_EQ(count_int8_nodes(in_memory->graph()).int8, 5);  // conv1..conv4, add0
  EXPECT_EQ(count_int8_nodes(in_memory->graph()).total, 6);

  const AccuracyReport rep = evaluate_int8(cal, q, {in.features, in.indices, in.grid, 1, {}}, true);
  ASSERT_EQ(rep.outputs.size(), 1u);
  EXPECT_GT(rep.outputs[0].cosine, 0.99);
  EXPECT_LT(rep.outputs[0].cosine, 1.0);  // int8 is lossy here
  EXPECT_EQ(rep.min_cosine, rep.outputs[0].cosine);
  EXPECT_GE(rep.layers.size(), 6u);
  EXPECT_THROW(with_int8_attributes(cal.model(), {{"conv77", QuantAttrs{}}}), Error);
}

// INT8 by target accuracy on the small CenterPoint: the chosen plan meets the bound on the eval
// frame (checked again by an independent evaluation of the attributes it returns), a looser bound
// keeps at least as many int8 nodes as a tighter one, and a bound no plan reaches is an error.
TEST(Int8Calibration, SearchMeetsTheTargetCosine) {
  const std::string src = test::write_model(sane_small_centerpoint(), "calib_search.onnx");
  Calibrator cal(parse_onnx(src), 512, 2);
  for (int k = 0; k < 2; ++k) {
    const test::SparseInput in = test::random_input(150, 5, {9, 8, 8}, 1, 400 + uint64_t(k));
    cal.add_frame({in.features, in.indices, in.grid, 1, {}});
  }
  const test::SparseInput ev = test::random_input(150, 5, {9, 8, 8}, 1, 450);
  const std::vector<CalibrationFrame> frames = {{ev.features, ev.indices, ev.grid, 1, {}}};
  auto int8_count = [](const PrecisionPlan& p) {
    int n = 0;
    for (const PlanNode& x : p.nodes) n += x.int8;
    return n;
  };
  PrecisionSearchOptions po;
  po.min_cosine = 0.5;  // every plan meets it: all int8
  const PrecisionPlan loose = search_int8_plan(cal, frames, po);
  ASSERT_EQ(loose.nodes.size(), 6u);  // conv0..conv4, add0
  EXPECT_EQ(int8_count(loose), 6);
  EXPECT_EQ(loose.cosine, loose.all_int8_cosine);
  EXPECT_EQ(loose.int8_macs, loose.total_macs);
  // int8 is lossy on this model, fp16 nearly exact: bounds in between force fp16 nodes.
  ASSERT_LT(loose.all_int8_cosine, loose.fp16_cosine - 1e-4) << loose.all_int8_cosine << " " << loose.fp16_cosine;
  int previous = int8_count(loose);
  for (double f : {0.3, 0.6, 0.9}) {
    po.min_cosine = loose.all_int8_cosine + f * (loose.fp16_cosine - loose.all_int8_cosine);
    const PrecisionPlan p = search_int8_plan(cal, frames, po);
    EXPECT_GE(p.cosine, po.min_cosine);
    const AccuracyReport rep = evaluate_int8(cal, p.attributes, frames[0]);
    EXPECT_EQ(rep.min_cosine, p.cosine);  // the attributes are the plan that was measured
    EXPECT_GE(rep.min_cosine, po.min_cosine) << "bound " << po.min_cosine;
    EXPECT_LT(int8_count(p), 6);
    EXPECT_LE(int8_count(p), previous) << "a tighter bound kept more int8 nodes";
    previous = int8_count(p);
    for (const PlanNode& n : p.nodes) {
      EXPECT_GE(n.sensitivity, 0.0) << n.node;
      EXPECT_GT(n.macs, 0.0) << n.node;
      EXPECT_EQ(p.attributes.at(n.node).precision, n.int8 ? Precision::Int8 : Precision::Fp16) << n.node;
    }
  }
  po.min_cosine = 1.0;  // fp16 alone is lossy: no plan reaches it
  const std::string unreachable = search_error(cal, frames, po);
  EXPECT_NE(unreachable.find("no INT8 plan reaches cosine 1.000000"), std::string::npos) << unreachable;
  EXPECT_NE(unreachable.find("every node in fp16"), std::string::npos) << unreachable;
}

// A timed search (PrecisionSearchOptions::int8_savings_ms) tries only the nodes that save time: the
// others stay fp16 unmeasured (sensitivity -1), the chosen nodes' savings are summed, the bound still
// holds, and a model where no node saves time is an error rather than a plan of no int8 node.
TEST(Int8Calibration, TimedSearchTriesOnlyNodesThatSaveTime) {
  const std::string src = test::write_model(sane_small_centerpoint(), "calib_timed.onnx");
  Calibrator cal(parse_onnx(src), 512, 2);
  const test::SparseInput in = test::random_input(150, 5, {9, 8, 8}, 1, 410);
  cal.add_frame({in.features, in.indices, in.grid, 1, {}});
  const test::SparseInput ev = test::random_input(150, 5, {9, 8, 8}, 1, 451);
  const std::vector<CalibrationFrame> frames = {{ev.features, ev.indices, ev.grid, 1, {}}};
  PrecisionSearchOptions po;
  po.min_cosine = 0.5;
  const PrecisionPlan loose = search_int8_plan(cal, frames, po);
  EXPECT_FALSE(loose.timed);
  po.min_cosine = loose.all_int8_cosine + 0.2 * (loose.fp16_cosine - loose.all_int8_cosine);
  // conv2 costs time in int8, conv4 and add0 save none: only conv1 and conv3 are candidates
  po.int8_savings_ms = {{"conv1", 0.004}, {"conv2", -0.002}, {"conv3", 0.010}, {"conv4", 0.0}};
  const PrecisionPlan p = search_int8_plan(cal, frames, po);
  EXPECT_TRUE(p.timed);
  EXPECT_GE(p.cosine, po.min_cosine);
  double saved = 0;
  int int8 = 0;
  for (const PlanNode& n : p.nodes) {
    const bool candidate = n.node == "conv1" || n.node == "conv3";
    if (!candidate) {
      EXPECT_FALSE(n.int8) << n.node << " saves no time but runs int8";
      EXPECT_EQ(n.sensitivity, -1.0) << n.node << " was measured although it is no candidate";
    } else {
      EXPECT_GE(n.sensitivity, 0.0) << n.node;
    }
    EXPECT_EQ(n.saving_ms, po.int8_savings_ms.count(n.node) ? po.int8_savings_ms.at(n.node) : 0.0) << n.node;
    EXPECT_EQ(p.attributes.at(n.node).precision, n.int8 ? Precision::Int8 : Precision::Fp16) << n.node;
    if (n.int8) saved += n.saving_ms;
    int8 += n.int8;
  }
  EXPECT_GE(int8, 1) << "a bound near all-int8 admits a candidate";
  EXPECT_DOUBLE_EQ(p.int8_saving_ms, saved);
  EXPECT_EQ(evaluate_int8(cal, p.attributes, frames[0]).min_cosine, p.cosine);
  EXPECT_EQ(p.timings, 0) << "no plan timer given";

  // By plan time: a (fake) device where int8 conv3 is faster and int8 conv1 slower than fp16. conv1 is
  // tried first (more time saved per loss is not the point here: both are candidates) and must be
  // rejected by its time although it meets the bound; conv3 is kept; every timed plan was a real one.
  po.int8_savings_ms = {{"conv1", 0.004}, {"conv3", 0.004}};
  int timed_plans = 0;
  po.plan_ms = [&](const std::map<std::string, QuantAttrs>& q) {
    ++timed_plans;
    return 1.0 + (q.at("conv1").precision == Precision::Int8 ? 0.05 : 0.0) -
           (q.at("conv3").precision == Precision::Int8 ? 0.02 : 0.0);
  };
  const PrecisionPlan t = search_int8_plan(cal, frames, po);
  std::map<std::string, bool> is8;
  for (const PlanNode& n : t.nodes) is8[n.node] = n.int8;
  EXPECT_FALSE(is8["conv1"]) << "slower in int8, kept although it meets the bound";
  EXPECT_TRUE(is8["conv3"]) << "faster in int8 and within the bound, left fp16";
  EXPECT_DOUBLE_EQ(t.fp16_ms, 1.0);
  EXPECT_DOUBLE_EQ(t.ms, 0.98);
  EXPECT_EQ(t.timings, timed_plans);
  EXPECT_GE(t.timings, 3) << "fp16, then conv1 and conv3 in turn";
  // A level at once: conv1 and conv2 share level 0 with add0; on this (fake) device either alone is
  // slower than fp16 (conversions at its fp16 neighbour) and both together faster, so the one-node
  // greedy alone would keep neither. The level is tried whole first and kept.
  po.min_cosine = loose.all_int8_cosine + 0.05 * (loose.fp16_cosine - loose.all_int8_cosine);
  po.int8_savings_ms = {{"conv1", 0.004}, {"conv2", 0.004}};
  po.plan_ms = [&](const std::map<std::string, QuantAttrs>& q) {
    const bool c1 = q.at("conv1").precision == Precision::Int8, c2 = q.at("conv2").precision == Precision::Int8;
    return c1 && c2 ? 0.97 : (c1 || c2 ? 1.01 : 1.0);
  };
  const PrecisionPlan lv = search_int8_plan(cal, frames, po);
  std::map<std::string, bool> lv8;
  for (const PlanNode& n : lv.nodes) lv8[n.node] = n.int8;
  EXPECT_TRUE(lv8["conv1"] && lv8["conv2"] && lv8["add0"]) << "level 0 (conv1, conv2, add0) not kept whole";
  EXPECT_FALSE(lv8["conv0"] || lv8["conv3"] || lv8["conv4"]) << "a node that saves no time runs int8";
  EXPECT_DOUBLE_EQ(lv.ms, 0.97);
  EXPECT_GE(lv.cosine, po.min_cosine);
  // A run shorter than the level: conv0 saves step time too, but (on this fake device) costs more in a
  // plan than the conv1-conv2 pair saves, so the level whole (conv0, conv1, conv2, add0) is slower than
  // fp16; the run conv1-conv2 is faster and kept; longer runs and conv0 alone then gain nothing.
  po.int8_savings_ms = {{"conv0", 0.004}, {"conv1", 0.004}, {"conv2", 0.004}};
  int run_timings = 0;
  po.plan_ms = [&](const std::map<std::string, QuantAttrs>& q) {
    ++run_timings;
    const bool c0 = q.at("conv0").precision == Precision::Int8, c1 = q.at("conv1").precision == Precision::Int8,
               c2 = q.at("conv2").precision == Precision::Int8;
    return 1.0 + (c0 ? 0.05 : 0.0) + (c1 && c2 ? -0.03 : (c1 || c2 ? 0.01 : 0.0));
  };
  const PrecisionPlan run = search_int8_plan(cal, frames, po);
  std::map<std::string, bool> run8;
  for (const PlanNode& n : run.nodes) run8[n.node] = n.int8;
  EXPECT_TRUE(run8["conv1"] && run8["conv2"]) << "the run conv1-conv2 not kept";
  EXPECT_FALSE(run8["conv0"]) << "conv0 costs time in a plan, kept int8";
  EXPECT_DOUBLE_EQ(run.ms, 0.97);
  EXPECT_GE(run.cosine, po.min_cosine);
  EXPECT_EQ(run.timings, run_timings);
  EXPECT_GE(run.timings, 4) << "fp16, the level, then at least the runs conv0-conv1 and conv1-conv2";
  EXPECT_EQ(run.runs_skipped, 0) << "a bound near all-int8 leaves room for every run";
  // A bound that leaves 3e-5 of cosine (on these frames conv2 alone loses ~5e-4, conv0 ~2e-5, conv1
  // ~6e-6): the four runs with conv2 sum past twice that and are not evaluated; conv0-conv1 is. On a
  // device where every int8 node pays, the plan keeps only nodes within the bound.
  const double s0 = run.nodes[0].sensitivity, s1 = run.nodes[1].sensitivity, s2 = run.nodes[2].sensitivity;
  ASSERT_TRUE(s2 > 2 * 3e-5 && s0 + s1 < 2 * 3e-5) << "the frames no longer give this test's sensitivities";
  po.min_cosine = run.fp16_cosine - 3e-5;
  po.plan_ms = [](const std::map<std::string, QuantAttrs>& q) {
    double ms = 1.0;
    for (const auto& [node, attrs] : q) ms -= attrs.precision == Precision::Int8 ? 0.01 : 0.0;
    return ms;
  };
  const PrecisionPlan tight = search_int8_plan(cal, frames, po);
  EXPECT_EQ(tight.runs_skipped, 4) << "conv0-conv1-conv2, conv1-conv2-add0, conv1-conv2 and conv2-add0";
  std::map<std::string, bool> tight8;
  for (const PlanNode& n : tight.nodes) tight8[n.node] = n.int8;
  EXPECT_FALSE(tight8["conv2"]) << "conv2 alone exceeds the bound";
  EXPECT_TRUE(tight8["conv1"]) << "the least sensitive node fits and pays";
  EXPECT_GE(tight.cosine, po.min_cosine);
  po.min_cosine = loose.all_int8_cosine + 0.05 * (loose.fp16_cosine - loose.all_int8_cosine);
  // every plan slower than fp16: an error, not a plan
  po.plan_ms = [](const std::map<std::string, QuantAttrs>&) { return 1.0; };
  const std::string slower = search_error(cal, frames, po);
  EXPECT_NE(slower.find("runs faster than fp16 on the timed device"), std::string::npos) << slower;
  po.plan_ms = nullptr;
  po.int8_savings_ms = {{"conv0", -0.001}};
  const std::string no_saving = search_error(cal, frames, po);
  EXPECT_NE(no_saving.find("no INT8 plan saves time"), std::string::npos) << no_saving;
}

// measure_int8_savings on the CPU backend: one finite saving per SparseConvolution / Add node, and the
// per-node times it differences are real (some node's fp16 and int8 times differ).
TEST(Int8Calibration, MeasuredSavingsCoverEveryNode) {
  const std::string src = test::write_model(sane_small_centerpoint(), "calib_savings.onnx");
  Calibrator cal(parse_onnx(src), 512, 2);
  const test::SparseInput in = test::random_input(400, 5, {9, 8, 8}, 1, 412);
  cal.add_frame({in.features, in.indices, in.grid, 1, {}});
  BuildOptions d;
  d.backend = Backend::Cpu;
  d.num_threads = 2;
  const std::map<std::string, double> s =
      measure_int8_savings(cal, CalibrationOptions{}, {in.features, in.indices, in.grid, 1, {}}, d, 3);
  ASSERT_EQ(s.size(), 6u);  // conv0..conv4, add0
  bool differs = false;
  for (const char* n : {"conv0", "conv1", "conv2", "conv3", "conv4", "add0"}) {
    ASSERT_TRUE(s.count(n)) << n;
    EXPECT_TRUE(std::isfinite(s.at(n))) << n;
    differs = differs || s.at(n) != 0.0;
  }
  EXPECT_TRUE(differs) << "every saving is exactly zero: the profiles were not differenced";
  EXPECT_THROW(measure_int8_savings(cal, CalibrationOptions{}, {in.features, in.indices, in.grid, 1, {}}, d, 0), Error);
}

// ---- the CLI ------------------------------------------------------------------------------------

using Result = test::CliResult;

Result scn_cli(const std::string& args) { return test::run_cli(SCN_CLI_EXE, args, "calib_cli"); }

TEST(Int8CalibrateCli, RoundTrip) {
  const std::string dir = test::temp_dir();
  const std::string model = test::write_model(sane_small_centerpoint(), "cli_model.onnx");
  std::string frames;
  for (int k = 0; k < 2; ++k) {
    const test::SparseInput in = test::random_input(150, 5, {9, 8, 8}, 1, 200 + uint64_t(k));
    const std::string f = dir + "/f" + std::to_string(k) + ".tensor", i = dir + "/i" + std::to_string(k) + ".tensor";
    in.features.save(f);
    in.indices.save(i);
    frames += " --frame " + f + " " + i;
  }
  const std::string out = dir + "/cli_model.int8.onnx";
  Result r = scn_cli("calibrate " + model + " -o " + out + frames +
                     " --grid 9x8x8 --keep-fp16-first 1 --method mse --threads 2 --eval " + dir + "/f0.tensor " + dir +
                     "/i0.tensor");
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("calibrated"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("int8        4 of 5 SparseConvolution, 1 of 1 Add nodes"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("INT8 vs FP32 cosine"), std::string::npos) << r.out;

  r = scn_cli("inspect " + out);
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("int8"), std::string::npos) << r.out;

  r = scn_cli("run " + out + " --features " + dir + "/f1.tensor --indices " + dir +
              "/i1.tensor --grid 9x8x8 --precision int8 --device cpu --output " + dir + "/y.tensor");
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("precision int8"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("5 of 6 SparseConvolution / Add nodes run int8"), std::string::npos) << r.err;
  EXPECT_EQ(Tensor::load(dir + "/y.tensor").dtype(), DType::Float16);
  // The uncalibrated model in an int8 engine runs fp16 everywhere: said on stderr.
  r = scn_cli("run " + model + " --features " + dir + "/f1.tensor --indices " + dir +
              "/i1.tensor --grid 9x8x8 --precision int8 --device cpu");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("no node carries INT8 attributes"), std::string::npos) << r.err;
  r = scn_cli("run " + model + " --features " + dir + "/f1.tensor --indices " + dir +
              "/i1.tensor --grid 9x8x8 --precision fp16 --device cpu");
  EXPECT_EQ(r.err.find("INT8"), std::string::npos) << r.err;

  // Errors: an unknown --keep-fp16 name (no file written), no frames, the output over the input.
  const std::string bad = dir + "/bad.onnx";
  r = scn_cli("calibrate " + model + " -o " + bad + frames + " --grid 9x8x8 --keep-fp16 conv0,conv42");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("no node named 'conv42'"), std::string::npos) << r.err;
  EXPECT_FALSE(std::ifstream(bad).good());
  r = scn_cli("calibrate " + model + " -o " + bad);
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("--frame"), std::string::npos) << r.err;
  r = scn_cli("calibrate " + model + " -o " + model + frames + " --grid 9x8x8");
  EXPECT_EQ(r.code, 1);
  r = scn_cli("calibrate " + model + " -o " + bad + frames);
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("--grid"), std::string::npos) << r.err;
}

// `--min-cosine` prints the chosen plan as a Markdown table and writes it; an unreachable bound fails
// and writes nothing; a plain run with a poor --eval cosine warns.
TEST(Int8CalibrateCli, MinCosineAndPoorAccuracyWarning) {
  const std::string dir = test::temp_dir();
  const std::string model = test::write_model(sane_small_centerpoint(), "cli_mincos.onnx");
  const test::SparseInput in = test::random_input(150, 5, {9, 8, 8}, 1, 500);
  in.features.save(dir + "/mf.tensor");
  in.indices.save(dir + "/mi.tensor");
  const std::string frame = " --frame " + dir + "/mf.tensor " + dir + "/mi.tensor --grid 9x8x8 --threads 2";
  const std::string eval = " --eval " + dir + "/mf.tensor " + dir + "/mi.tensor";
  const std::string out = dir + "/cli_mincos.int8.onnx";
  Result r = scn_cli("calibrate " + model + " -o " + out + frame + eval + " --min-cosine 0.999 --quiet");
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  for (const char* s : {"| node | op | precision | sensitivity", "| conv0 | SparseConvolution |", "plan        ",
                        "cosine vs FP32: plan ", "fp16 nodes: "})
    EXPECT_NE(r.out.find(s), std::string::npos) << s << "\n" << r.out;
  const size_t at = r.out.find("cosine vs FP32: plan ");
  ASSERT_NE(at, std::string::npos);
  EXPECT_GE(std::stod(r.out.substr(at + 21)), 0.999) << r.out;
  const size_t ev = r.out.find("INT8 vs FP32 cosine ");
  ASSERT_NE(ev, std::string::npos) << r.out;
  EXPECT_GE(std::stod(r.out.substr(ev + 20)), 0.999) << r.out;  // the written model, evaluated again

  const std::string bad = dir + "/cli_mincos_bad.onnx";
  r = scn_cli("calibrate " + model + " -o " + bad + frame + eval + " --min-cosine 1");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.err.find("no INT8 plan reaches cosine 1.000000"), std::string::npos) << r.err;
  EXPECT_FALSE(std::ifstream(bad).good());
  r = scn_cli("calibrate " + model + " -o " + bad + frame + " --min-cosine 0.99");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("--min-cosine needs an evaluation frame"), std::string::npos) << r.err;
  r = scn_cli("calibrate " + model + " -o " + bad + frame + eval + " --time-on cpu");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("--time-on weighs the layers of a --min-cosine search"), std::string::npos) << r.err;

  // Timed on the CPU backend (the int8 oracle emulates int8 arithmetic, so it is rarely faster): the
  // per-node times are measured and printed, and the search either writes a plan that runs faster than
  // fp16 (the table gains the measured savings, the plan line the forward times) or fails naming why
  // int8 does not pay there, writing nothing.
  const std::string timed = dir + "/cli_mincos_timed.int8.onnx";
  r = scn_cli("calibrate " + model + " -o " + timed + frame + eval + " --min-cosine 0.99 --time-on cpu --quiet");
  EXPECT_NE(r.out.find("timed       int8 against fp16, per node, on cpu"), std::string::npos) << r.out;
  if (r.code == 0) {
    for (const char* s : {"| int8 saves (us) |", "the int8 nodes save ", "ms all fp16 ("})
      EXPECT_NE(r.out.find(s), std::string::npos) << s << "\n" << r.out;
    EXPECT_TRUE(std::ifstream(timed).good());
  } else {
    EXPECT_EQ(r.code, 1) << r.out << r.err;
    EXPECT_TRUE(r.err.find("no INT8 plan saves time") != std::string::npos ||
                r.err.find("runs faster than fp16 on the timed device") != std::string::npos)
        << r.err;
    EXPECT_FALSE(std::ifstream(timed).good());
  }
  // Timed on the GPU: without one, an error naming the model and the option; with one, a plan or the
  // error that int8 does not pay there, as on the CPU.
  r = scn_cli("calibrate " + model + " -o " + timed + frame + eval + " --min-cosine 0.99 --time-on cuda --quiet");
  if (r.code != 0) {
    EXPECT_EQ(r.code, 1) << r.out << r.err;
    EXPECT_NE(r.err.find(model + ": "), std::string::npos) << r.err;
    EXPECT_TRUE(r.err.find(": --time-on cuda: ") != std::string::npos ||
                r.err.find("no INT8 plan saves time") != std::string::npos ||
                r.err.find("runs faster than fp16 on the timed device") != std::string::npos)
        << r.err;
  } else {
    EXPECT_NE(r.out.find("the int8 nodes save "), std::string::npos) << r.out;
  }

  // Clipping at the median of |x| ruins the ranges: the plain run succeeds but warns.
  r = scn_cli("calibrate " + model + " -o " + out + frame + eval + " --method percentile --percentile 50 --quiet");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("warning: the INT8 model's cosine vs FP32"), std::string::npos) << r.out << r.err;
  r = scn_cli("calibrate " + model + " -o " + out + frame + eval + " --quiet --keep-fp16-first 5");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.err.find("warning"), std::string::npos) << r.err;
}

// A 5-conv model on the nuScenes grid 41 x 1440 x 1440 (three downsamplings to 2 x 180 x 180, like
// CenterPoint) with 8 channels, so synthetic nuScenes frames fit it.
test::ModelDef nuscenes_grid_model() {
  test::ModelDef m;
  m.inputs.push_back({"0", 10, {-1, 5}});
  test::ConvSpec c;
  c.name = "conv0", c.x = "0", c.y = "1", c.cin = 5, c.cout = 8, c.rulebook = "subm0";
  test::add_conv(m, c);
  const char* ys[] = {"2", "3", "4", "5"};
  for (int i = 1; i <= 4; ++i) {
    c = {};
    c.name = "conv" + std::to_string(i), c.x = std::to_string(i), c.y = ys[i - 1], c.cin = 8, c.cout = 8;
    c.subm = false, c.stride = {2, 2, 2}, c.seed = uint32_t(i + 1);
    if (i == 3) c.padding = {0, 1, 1};
    if (i == 4) c.kernel = {3, 1, 1}, c.stride = {2, 1, 1}, c.padding = {0, 0, 0};
    test::add_conv(m, c);
  }
  m.nodes.push_back({"ScatterDense",
                     "scatter0",
                     {"5"},
                     {"6"},
                     {test::attr_string("format", "zyx"), test::attr_ints("input_spatial_shape", {2, 180, 180}),
                      test::attr_ints("output_shape", {1, 8, 2, 180, 180})},
                     ""});
  m.nodes.push_back({"Reshape", "reshape0", {"6"}, {"7"}, {test::attr_ints("dims", {1, 16, 180, 180})}, ""});
  m.outputs.push_back({"7", 10, {1, 16, 180, 180}});
  return rescale_weights(m);
}

TEST(Int8CalibrateCli, SyntheticFrames) {
  const std::string dir = test::temp_dir();
  const std::string model = test::write_model(nuscenes_grid_model(), "cli_syn.onnx");
  const std::string out = dir + "/cli_syn.int8.onnx";
  Result r = scn_cli("calibrate " + model + " -o " + out +
                     " --synthetic 3000 --frames 2 --method percentile --percentile 99.9 --keep-fp16 conv0 --threads 2 "
                     "--int8-scatter --quiet");
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("on 2 frame(s), method percentile 99.9000 %"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("int8        4 of 5 SparseConvolution"), std::string::npos) << r.out;
  r = scn_cli("inspect " + out);
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  const EngineBuilder b = parse_onnx(out);
  for (const Node& n : b.graph().nodes) {
    if (n.name == "conv4") {
      EXPECT_EQ(n.quant.output_precision, Precision::Int8);  // --int8-scatter
    }
    if (n.name == "conv0") {
      EXPECT_EQ(n.quant.precision, Precision::Fp16);
    }
  }
  r = scn_cli("synth --voxels 2500 --seed 9 --features " + dir + "/sf.tensor --indices " + dir + "/si.tensor --quiet");
  ASSERT_EQ(r.code, 0) << r.err;
  r = scn_cli("run " + out + " --features " + dir + "/sf.tensor --indices " + dir +
              "/si.tensor --grid 41x1440x1440 --precision int8 --device cpu --threads 2");
  EXPECT_EQ(r.code, 0) << r.out << r.err;
}

}  // namespace
