// ONNX file -> EngineBuilder: reads and parses the file, checks the graph's input, sorts the
// nodes topologically, runs one importer per node and marks the graph outputs.
#include <sys/stat.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <new>
#include <queue>

#include "scn/inspect.h"
#include "importers.h"
#include "onnx.pb.h"
#include "scn/onnx.h"

namespace scn {
namespace onnx_import {

namespace {

std::string read_file(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) SCN_FAIL(path, ": cannot open (", std::strerror(errno), ")");
  if (S_ISDIR(st.st_mode)) SCN_FAIL(path, ": cannot open (it is a directory)");
  std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!f) SCN_FAIL(path, ": cannot open (", std::strerror(errno), ")");
  std::string data;
  if (S_ISREG(st.st_mode) && st.st_size > 0 && st.st_size <= INT_MAX)
    data.reserve(size_t(st.st_size));
  char buf[1 << 16];
  size_t got;
  while ((got = std::fread(buf, 1, sizeof buf, f.get())) > 0) {
    data.append(buf, got);
    SCN_CHECK(data.size() <= size_t(INT_MAX), path,
              ": not a valid ONNX model (larger than 2 GiB, the most protobuf can parse)");
  }
  SCN_CHECK(!std::ferror(f.get()), path, ": read error (", std::strerror(errno), ")");
  return data;
}

void parse_model(const std::string& path, const std::string& data, onnx::ModelProto& model) {
  SCN_CHECK(!data.empty(), path, ": not a valid ONNX model (the file is empty)");
  // ParseFromArray has no 64 MiB limit (only CodedInputStream's default had one) and fails on
  // truncated fields, impossible lengths and malformed tags.
  SCN_CHECK(model.ParseFromArray(data.data(), int(data.size())), path,
            ": not a valid ONNX model (protobuf parse failed: the file is truncated, corrupt or "
            "not ONNX)");
  SCN_CHECK(model.has_graph(), path, ": not a valid ONNX model (it has no graph)");
}

class GraphImporter {
 public:
  GraphImporter(const std::string& path, bool collect) : collect_(collect), builder_(path) {
    ctx_.file = path;
    ctx_.builder = &builder_;
  }

  void run(const onnx::GraphProto& g) {
    read_initializers(g);
    read_input(g);
    for (int i : sort_nodes(g)) import_node(g.node(i), i);
    read_outputs(g);
    if (errors_.empty()) {
      try {
        builder_.check_graph();  // whole-graph checks, e.g. inverse conv rulebooks (kept for build())
      } catch (const Error& e) {
        report(e);
      }
    }
  }

  const std::vector<std::string>& errors() const { return errors_; }
  const EngineBuilder& builder() const { return builder_; }

  /// Records an error (collecting) or throws it.
  void report(const std::string& msg) { report(Error(msg)); }
  /// Keeps the error's parts (file, node, op, attribute) when it is thrown.
  void report(const Error& e) {
    if (!collect_) throw e;
    errors_.push_back(e.what());
  }

 private:
  ErrorContext where(const onnx::NodeProto& node, int i) const {
    return {ctx_.file, names_[size_t(i)], node.op_type(), "", ""};
  }

  void mark_failed(const onnx::NodeProto& node, const std::string& reason) {
    for (const std::string& out : node.output())
      if (!out.empty()) ctx_.failed.emplace(out, reason);
  }

  void read_initializers(const onnx::GraphProto& g) {
    for (const onnx::TensorProto& t : g.initializer()) {
      if (t.name().empty()) {
        report(detail::concat(ctx_.file, ": an initializer has an empty name"));
        continue;
      }
      if (!ctx_.initializers.emplace(t.name(), &t).second)
        report(detail::concat(ctx_.file, ": initializer '", t.name(), "' is defined twice"));
    }
  }

  // Exactly one graph input that is not an initializer: the voxel features [N, Cin].
  void read_input(const onnx::GraphProto& g) {
    std::vector<const onnx::ValueInfoProto*> inputs;
    std::string listed;
    for (const onnx::ValueInfoProto& vi : g.input()) {
      if (ctx_.initializers.count(vi.name())) continue;
      inputs.push_back(&vi);
      graph_inputs_.insert(vi.name());
      listed += detail::concat(listed.empty() ? "" : ", ", "'", vi.name(), "'");
    }
    if (inputs.size() != 1) {
      const std::string msg =
          inputs.empty()
              ? detail::concat(ctx_.file,
                               ": the graph has no input; scn models take exactly one, "
                               "the voxel features FLOAT16 [N, Cin]")
              : detail::concat(ctx_.file, ": the graph has ", inputs.size(), " inputs (", listed,
                               "); scn models take exactly one, the voxel features FLOAT16 "
                               "[N, Cin]");
      report(msg);
      for (const auto* vi : inputs) ctx_.failed.emplace(vi->name(), "the graph input is invalid");
      return;
    }
    const onnx::ValueInfoProto& vi = *inputs[0];
    const std::string where = detail::concat(ctx_.file, ": graph input '", vi.name(), "'");
    try {
      SCN_CHECK(!vi.name().empty(), ctx_.file, ": the graph input has an empty name");
      SCN_CHECK(vi.has_type() && vi.type().has_tensor_type(), where,
                ": has no tensor type; expected FLOAT16 [N, Cin]");
      const auto& tt = vi.type().tensor_type();
      SCN_CHECK(tt.elem_type() == onnx::TensorProto::FLOAT16 ||
                    tt.elem_type() == onnx::TensorProto::FLOAT,
                where, ": element type ", onnx_data_type_name(tt.elem_type()), "; expected ",
                onnx_data_type_name(onnx::TensorProto::FLOAT16), " or ",
                onnx_data_type_name(onnx::TensorProto::FLOAT));
      SCN_CHECK(tt.has_shape() && tt.shape().dim_size() == 2, where, ": has ",
                tt.has_shape() ? std::to_string(tt.shape().dim_size()) : std::string("no"),
                " dimensions; expected [N, Cin]");
      const auto& cin = tt.shape().dim(1);
      SCN_CHECK(cin.has_dim_value() && cin.dim_value() > 0 && cin.dim_value() <= INT32_MAX, where,
                ": the channel count (dims[1]) must be a known positive number, found ",
                cin.has_dim_value()   ? std::to_string(cin.dim_value())
                : cin.has_dim_param() ? "'" + cin.dim_param() + "'"
                                      : "nothing");
      ctx_.values[vi.name()] = builder_.push_input(vi.name(), int32_t(cin.dim_value()));
    } catch (const Error& e) {
      report(e);
      ctx_.failed.emplace(vi.name(), "the graph input is invalid");
    }
  }

  // Kahn's algorithm, taking the lowest file position first so a sorted file keeps its order.
  std::vector<int> sort_nodes(const onnx::GraphProto& g) {
    const int n = g.node_size();
    names_.resize(size_t(n));
    bad_.assign(size_t(n), false);
    for (int i = 0; i < n; ++i) {
      const onnx::NodeProto& node = g.node(i);
      if (!node.name().empty())
        names_[size_t(i)] = node.name();
      else if (node.output_size() > 0 && !node.output(0).empty())
        names_[size_t(i)] = "node_of_" + node.output(0);
      else
        names_[size_t(i)] = detail::concat("node_", i);
    }
    std::unordered_map<std::string, int> producer;
    for (int i = 0; i < n; ++i) {
      const onnx::NodeProto& node = g.node(i);
      for (int k = 0; k < node.output_size(); ++k) {
        const std::string& out = node.output(k);
        std::string problem;
        const auto p = producer.find(out);
        if (out.empty())
          problem = detail::concat("output ", k, " has an empty name");
        else if (p != producer.end())
          problem = detail::concat("output '", out, "' is also produced by node '",
                                   names_[size_t(p->second)], "' (output names must be unique)");
        else if (graph_inputs_.count(out))
          problem = detail::concat("output '", out, "' has the name of the graph input");
        else if (ctx_.initializers.count(out))
          problem = detail::concat("output '", out, "' has the name of an initializer");
        if (problem.empty()) {
          producer.emplace(out, i);
        } else {
          report(detail::concat(where(node, i), ": ", problem));
          bad_[size_t(i)] = true;
        }
      }
    }
    std::vector<std::vector<int>> consumers(static_cast<size_t>(n));
    std::vector<int> pending(size_t(n), 0);  // inputs whose producer is not emitted yet
    for (int i = 0; i < n; ++i) {
      const onnx::NodeProto& node = g.node(i);
      for (const std::string& in : node.input()) {
        if (in.empty()) continue;  // an absent optional input
        const auto p = producer.find(in);
        if (p != producer.end()) {
          consumers[size_t(p->second)].push_back(i);
          ++pending[size_t(i)];
        } else if (!graph_inputs_.count(in) && !ctx_.initializers.count(in)) {
          report(detail::concat(where(node, i), ": input '", in,
                                "' was not produced by any node, and is neither an initializer "
                                "nor the graph input"));
          bad_[size_t(i)] = true;
        }
      }
    }
    std::priority_queue<int, std::vector<int>, std::greater<int>> ready;
    for (int i = 0; i < n; ++i)
      if (pending[size_t(i)] == 0) ready.push(i);
    std::vector<int> order;
    std::vector<bool> done(size_t(n), false);
    while (!ready.empty()) {
      const int i = ready.top();
      ready.pop();
      order.push_back(i);
      done[size_t(i)] = true;
      for (int c : consumers[size_t(i)])
        if (--pending[size_t(c)] == 0) ready.push(c);
    }
    if (int(order.size()) < n) report_cycle(g, producer, done, n - int(order.size()));
    return order;
  }

  // Every node left unsorted waits on another unsorted node, so walking producers from any of
  // them must come back to a node already seen: that loop is a cycle.
  void report_cycle(const onnx::GraphProto& g, const std::unordered_map<std::string, int>& producer,
                    const std::vector<bool>& done, int left) {
    int cur = 0;
    while (done[size_t(cur)]) ++cur;
    std::vector<int> path, pos(done.size(), -1);
    while (pos[size_t(cur)] < 0) {
      pos[size_t(cur)] = int(path.size());
      path.push_back(cur);
      int next = -1;
      for (const std::string& in : g.node(cur).input()) {
        const auto p = producer.find(in);
        if (p != producer.end() && !done[size_t(p->second)]) {
          next = p->second;
          break;
        }
      }
      if (next < 0) break;  // cannot happen; keeps the walk finite regardless
      cur = next;
    }
    // The walk went consumer -> producer; print in data-flow order.
    const std::vector<int> cycle(path.begin() + pos[size_t(cur)], path.end());
    std::string text;
    for (auto it = cycle.rbegin(); it != cycle.rend(); ++it)
      text += detail::concat("node '", names_[size_t(*it)], "' (", g.node(*it).op_type(), ") -> ");
    text += detail::concat("node '", names_[size_t(cycle.back())], "'");
    const int others = left - int(cycle.size());
    report(detail::concat(ctx_.file, ": the graph has a cycle: ", text,
                          others > 0
                              ? detail::concat(" (", others, " more node", others == 1 ? "" : "s",
                                               " depend on it or form other cycles)")
                              : std::string()));
    for (size_t i = 0; i < done.size(); ++i)
      if (!done[i])
        mark_failed(g.node(int(i)),
                    detail::concat("node '", names_[i], "' is in or after a cycle"));
  }

  void import_node(const onnx::NodeProto& node, int i) {
    const std::string& name = names_[size_t(i)];
    const std::string failed_reason = detail::concat("node '", name, "' failed to import");
    if (bad_[size_t(i)]) {
      mark_failed(node, failed_reason);
      return;
    }
    std::string error;
    try {
      SCN_CHECK(node.output_size() == 1, where(node, i), ": has ", node.output_size(),
                " outputs; scn ops produce exactly one");
      const ImporterRegistry& registry = importer_registry();
      const ImporterFn fn = registry.find(node.op_type());
      SCN_CHECK(fn != nullptr, where(node, i), ": unknown op type '", node.op_type(), "'",
                node.domain().empty() ? "" : " (domain '" + node.domain() + "')", "; scn imports ",
                registry.op_types());
      NodeImport n(ctx_, node, name);
      const ValueId y = fn(n);
      ctx_.values[node.output(0)] = y;
      for (const auto& kv : n.attrs().unused()) builder_.annotate_last(kv.first, kv.second);
      return;
    } catch (const Error& e) {
      mark_failed(node, failed_reason);
      report(e);
      return;
    } catch (const std::bad_alloc&) {
      error = detail::concat(where(node, i), ": out of memory");
    } catch (const std::exception& e) {
      error = detail::concat(where(node, i), ": ", e.what());
    }
    mark_failed(node, failed_reason);
    report(error);
  }

  void read_outputs(const onnx::GraphProto& g) {
    if (g.output_size() == 0) report(detail::concat(ctx_.file, ": the graph has no output"));
    for (const onnx::ValueInfoProto& vi : g.output()) {
      const std::string& s = vi.name();
      const auto v = ctx_.values.find(s);
      if (v != ctx_.values.end()) {
        try {
          builder_.push_output(v->second);
        } catch (const Error& e) {
          report(e);
        }
      } else if (ctx_.failed.count(s)) {
        report(detail::concat(ctx_.file, ": graph output '", s, "' was not produced (",
                              ctx_.failed.at(s), ")"));
      } else if (ctx_.initializers.count(s)) {
        report(detail::concat(ctx_.file, ": graph output '", s,
                              "' is an initializer; outputs must be computed by the graph"));
      } else {
        report(detail::concat(ctx_.file, ": graph output '", s, "' is not produced by any node"));
      }
    }
  }

  bool collect_;
  EngineBuilder builder_;
  ImportContext ctx_;
  std::set<std::string> graph_inputs_;
  std::vector<std::string> names_;  // per node: its name, or node_of_<output0>
  std::vector<bool> bad_;           // per node: failed before import (sorting problems)
  std::vector<std::string> errors_;
};

}  // namespace
}  // namespace onnx_import

EngineBuilder parse_onnx(const std::string& path) {
  try {
    const std::string data = onnx_import::read_file(path);
    onnx::ModelProto model;
    onnx_import::parse_model(path, data, model);
    onnx_import::GraphImporter importer(path, /*collect=*/false);
    importer.run(model.graph());
    return importer.builder();
  } catch (const Error&) {
    throw;
  } catch (const std::bad_alloc&) {
    SCN_FAIL(path, ": out of memory while importing");
  } catch (const std::exception& e) {
    SCN_FAIL(path, ": ", e.what());
  }
}

std::unique_ptr<Engine> load_engine_from_onnx(const std::string& path,
                                              const BuildOptions& options) {
  return parse_onnx(path).build(options);
}

OnnxReport inspect_onnx(const std::string& path) {
  OnnxReport report;
  onnx::ModelProto model;
  try {
    const std::string data = onnx_import::read_file(path);
    onnx_import::parse_model(path, data, model);
  } catch (const std::exception& e) {
    report.errors.push_back(e.what());
    return report;
  }
  onnx_import::GraphImporter importer(path, /*collect=*/true);
  try {
    importer.run(model.graph());
  } catch (const Error& e) {  // not expected: collecting mode records instead of throwing
    importer.report(e);
  } catch (const std::exception& e) {
    importer.report(detail::concat(path, ": ", e.what()));
  }
  report.errors = importer.errors();
  report.partial = std::make_unique<EngineBuilder>(importer.builder());
  if (report.errors.empty()) report.builder = std::make_unique<EngineBuilder>(importer.builder());
  return report;
}

}  // namespace scn
