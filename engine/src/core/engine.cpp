#include "scn/engine.h"

#include <chrono>

#include "scn/timing.h"

namespace scn {

const std::string& Engine::input_name(int i) const {
  SCN_CHECK(i >= 0 && i < num_inputs(), "input index ", i, " out of range (", num_inputs(), " inputs)");
  return graph_->values[size_t(graph_->inputs[size_t(i)])].name;
}

const std::string& Engine::output_name(int i) const {
  SCN_CHECK(i >= 0 && i < num_outputs(), "output index ", i, " out of range (", num_outputs(), " outputs)");
  return graph_->values[size_t(graph_->outputs[size_t(i)])].name;
}

int Engine::input_index(const std::string& name) const {
  for (int i = 0; i < num_inputs(); ++i)
    if (input_name(i) == name) return i;
  SCN_FAIL(graph_->source, ": the model has no input named '", name, "'");
}

int Engine::output_index(const std::string& name) const {
  for (int i = 0; i < num_outputs(); ++i)
    if (output_name(i) == name) return i;
  SCN_FAIL(graph_->source, ": the model has no output named '", name, "'");
}

void Engine::set_input_device_count(int index, const Tensor&, const Tensor&, const int32_t*, const Int3&, int,
                                    const InputLabels&) {
  SCN_FAIL(graph_->source, ": input '", input_name(index), "': the ", backend_name(backend()),
           " engine does not take a device-side input count (set_input_device_count); bind with set_input");
}

std::vector<double> Engine::time_forward(int warmup, int runs) {
  check_timing_counts(graph_->source + ": time_forward", warmup, runs);
  for (int i = 0; i < warmup; ++i) forward();
  std::vector<double> ms;
  for (int i = 0; i < runs; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    forward();
    check_errors();
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  return ms;
}

bool Engine::output_is_sparse(int i) const {
  output_name(i);  // range check
  return graph_->values[size_t(graph_->outputs[size_t(i)])].sparse;
}

}  // namespace scn
