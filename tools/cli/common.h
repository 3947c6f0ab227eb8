// Pieces shared by the `scn` subcommands: argument parsing helpers, statistics, formatting,
// and all-or-nothing writing of output files.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "scn/engine.h"
#include "scn/timing.h"

namespace scn::cli {

/// "41x1440x1440" -> {41, 1440, 1440}. Throws scn::Error on anything else.
Int3 parse_grid(const std::string& text);

/// "10000,20000,...,100000" (arithmetic progression with the step of the first two) or a plain
/// comma-separated list "5000,80000". Values must be positive.
std::vector<int64_t> parse_count_list(const std::string& text);

std::string format_bytes(double bytes);
/// Fixed notation with `digits` decimals.
std::string fixed(double v, int digits = 3);
/// "median M ms, p99 P ms, mean A ms, min L ms, max H ms, std S ms" (3 decimals): scn bench's latency line.
std::string latency_text(const TimingStats& st);
/// Shape and dtype: "float16 [79745, 5]".
std::string describe_tensor(const Tensor& t);

/// Left-aligned text table with a header row and a dashed rule.
class Table {
 public:
  explicit Table(std::vector<std::string> header) : header_(std::move(header)) {}
  void add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  std::string str(const std::string& indent = "") const;
  bool empty() const { return rows_.empty(); }

 private:
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> rows_;
};

/// Writes a set of files all or nothing: each save is atomic (Tensor::save, or a temporary file
/// renamed into place), and when one fails the files already written by this writer are removed.
class OutputSet {
 public:
  void add_tensor(std::string path, Tensor tensor);
  void add_text(std::string path, std::string text) { add_bytes(std::move(path), std::move(text)); }
  /// Any bytes (a raw point file), written as they are.
  void add_bytes(std::string path, std::string bytes);
  /// Writes everything; throws scn::Error (after removing what it wrote) on the first failure.
  std::vector<std::string> commit();

 private:
  struct Item {
    std::string path;
    Tensor tensor;
    std::string text;
    bool is_bytes = false;
  };
  std::vector<Item> items_;
};

/// Checks before any work starts that `path` can be created: its folder exists, is a folder and is
/// writable. Throws scn::Error naming `option` and the path.
void check_output_file(const std::string& option, const std::string& path);
/// True when both paths name one file: equivalent existing files (links included), else the same normalized path.
bool same_file(const std::string& a, const std::string& b);
/// Checks that `dir` exists, is a folder and is writable (scn::Error naming `option` and the path).
void check_output_dir(const std::string& option, const std::string& dir);

/// Atomically writes a text file (temporary name, then rename).
void write_text_file(const std::string& path, const std::string& text);

/// "out.tensor" -> "out.indices.tensor"; "out" -> "out.indices.tensor".
std::string indices_path_for(const std::string& features_path);

/// A graph value name usable as a file name ("/" and other awkward characters become '_').
std::string file_safe(const std::string& name);

/// Index order of the model's inputs: the format of its first ScatterDense ("zyx" when none).
std::string model_index_order(const Graph& graph);

/// Wall-clock milliseconds since `since` (a steady_clock time point in nanoseconds).
double ms_since(int64_t since_ns);
int64_t now_ns();

}  // namespace scn::cli
