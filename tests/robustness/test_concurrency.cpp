// Concurrency: separate engines are independent. Two engines driven from two threads at once
// (CUDA: each on its own stream) give bitwise the outputs that one engine gives frame after
// frame; parsing and building from several threads at once is safe. docs/threading.md says what
// may be shared between threads and what may not.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "onnx_parser/onnx_writer.h"
#include "robustness/robust_util.h"
#include "scn/onnx.h"

namespace scn::robust {
namespace {

class Concurrency : public ::testing::TestWithParam<Backend> {};

/// Runs fn(0) and fn(1) on two threads released together; rethrows the first failure.
template <typename Fn>
void on_two_threads(Fn fn) {
  std::atomic<int> ready{0};
  std::exception_ptr err[2];
  auto body = [&](int k) {
    ready.fetch_add(1);
    while (ready.load() < 2) std::this_thread::yield();
    try {
      fn(k);
    } catch (...) {
      err[k] = std::current_exception();
    }
  };
  std::thread t0(body, 0), t1(body, 1);
  t0.join();
  t1.join();
  for (auto& e : err)
    if (e) std::rethrow_exception(e);
}

TEST_P(Concurrency, TwoEnginesOnTwoThreadsMatchOneAfterTheOther) {
  SCN_SKIP_WITHOUT_BACKEND(GetParam());
  const int64_t kVoxels = 30000;
  std::vector<Frame> frames;
  for (uint64_t s = 0; s < 4; ++s) frames.push_back(make_frame(kVoxels - int64_t(s) * 3000, 50 + s));
  const EngineBuilder builder = small_backbone();
  const BuildOptions opts = options_for(GetParam(), kVoxels);

  // One engine, one frame after the other: the reference.
  std::vector<std::vector<Tensor>> want;
  {
    std::unique_ptr<Engine> e = builder.build(opts);
    for (const Frame& f : frames) want.push_back(run_once(*e, f));
  }

  // Two engines built from the same builder (they share its immutable graph), each on its own
  // thread; thread k runs frames k, k+2 several times, interleaved with the other thread.
  std::unique_ptr<Engine> engines[2] = {builder.build(opts), builder.build(opts)};
  std::vector<std::string> diffs[2];
  constexpr int kRounds = 3;
  on_two_threads([&](int k) {
    for (int round = 0; round < kRounds; ++round)
      for (size_t f = size_t(k); f < frames.size(); f += 2) {
        const std::string d = bitwise_diff(run_once(*engines[k], frames[f]), want[f]);
        if (!d.empty()) diffs[k].push_back("round " + std::to_string(round) + ", frame " + std::to_string(f) + ": " + d);
      }
  });
  for (int k = 0; k < 2; ++k) EXPECT_TRUE(diffs[k].empty()) << "thread " << k << ": " << diffs[k].front();
}

TEST_P(Concurrency, BuildingFromOneBuilderOnTwoThreads) {
  SCN_SKIP_WITHOUT_BACKEND(GetParam());
  const EngineBuilder builder = small_backbone();
  const BuildOptions opts = options_for(GetParam(), 20000);
  const Frame f = make_frame(20000, 7);
  std::unique_ptr<Engine> built[2];
  on_two_threads([&](int k) { built[k] = builder.build(opts); });
  std::vector<Tensor> out[2];
  on_two_threads([&](int k) { out[k] = run_once(*built[k], f); });
  EXPECT_EQ(bitwise_diff(out[0], out[1]), "");
}

TEST(ConcurrencyParse, ParsingOneFileOnTwoThreads) {
  // The importer's registry is built on first use; two threads racing to it, and to protobuf,
  // must both get the complete graph.
  const std::string path = test::write_model(test::small_centerpoint(), "concurrency_parse.onnx");
  std::vector<std::vector<std::string>> got;
  for (int attempt = 0; attempt < 20; ++attempt) {
    std::vector<std::string> names[2];
    on_two_threads([&](int k) {
      const EngineBuilder b = parse_onnx(path);
      for (const Node& n : b.graph().nodes) names[k].push_back(n.name);
      const OnnxReport r = inspect_onnx(path);
      if (!r.errors.empty()) names[k].push_back("inspect error: " + r.errors[0]);
    });
    got.push_back(names[0]);
    got.push_back(names[1]);
  }
  // The reference, parsed alone after the races.
  std::vector<std::string> want;
  const EngineBuilder alone = parse_onnx(path);
  for (const Node& n : alone.graph().nodes) want.push_back(n.name);
  ASSERT_EQ(want.size(), 10u);  // the input and 9 nodes
  for (const auto& g : got) ASSERT_EQ(g, want);
}

INSTANTIATE_TEST_SUITE_P(Backends, Concurrency, ::testing::Values(Backend::Cpu, Backend::Cuda), backend_label);

}  // namespace
}  // namespace scn::robust
