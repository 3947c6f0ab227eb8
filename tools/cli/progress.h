// A one-line progress report on stderr for the long steps of a command (`scn bench` on the CPU):
// "  timed runs  37/200  18 %  ~41 s left", rewritten in place. It stays silent for steps shorter
// than `quiet_s` seconds and when stderr is not a terminal (logs and pipes get no carriage
// returns), and clears its line when the step ends.
#pragma once

#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>

namespace scn::cli {

class Progress {
 public:
  /// `enabled` false: never prints (Progress::for_stderr() sets it from isatty(stderr)).
  Progress(std::string label, int64_t total, bool enabled, std::FILE* out = stderr, double quiet_s = 3.0);
  ~Progress() { finish(); }
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  /// A progress line on stderr when it is a terminal.
  static Progress for_stderr(std::string label, int64_t total);

  /// `done` of `total` steps are complete; prints at most every 0.25 s once the step is older
  /// than `quiet_s`, with the share done and the time left estimated from the pace so far.
  void update(int64_t done);
  /// Erases the line (if one was printed).
  void finish();

  /// The line printed for `done` of `total` after `elapsed_s` seconds (no carriage return).
  static std::string line(const std::string& label, int64_t done, int64_t total, double elapsed_s);

  /// Seconds since construction; replaceable for tests.
  std::function<double()> clock;

 private:
  std::string label_;
  int64_t total_;
  bool enabled_;
  std::FILE* out_;
  double quiet_s_;
  double last_print_ = -1.0;
  size_t printed_width_ = 0;
};

}  // namespace scn::cli
