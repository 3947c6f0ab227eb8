// The progress line of long CLI steps (tools/cli/progress.h) with a hand-driven clock.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "progress.h"

namespace {

using scn::cli::Progress;

// Everything written to a memory stream.
struct Capture {
  char* buf = nullptr;
  size_t size = 0;
  std::FILE* f = open_memstream(&buf, &size);
  ~Capture() {
    if (f) std::fclose(f);
    std::free(buf);
  }
  std::string text() {
    std::fflush(f);
    return std::string(buf, size);
  }
};

TEST(Progress, LineShowsCountShareAndTimeLeft) {
  EXPECT_EQ(Progress::line("runs", 50, 200, 10.0), "  runs  50/200  25 %  ~30 s left");
  EXPECT_EQ(Progress::line("runs", 10, 200, 10.0), "  runs  10/200  5 %  ~4 min left");  // 190 s
  EXPECT_EQ(Progress::line("runs", 200, 200, 10.0), "  runs  200/200  100 %");
}

TEST(Progress, SilentDuringTheQuietPeriodThenRewritesOneLine) {
  Capture c;
  double now = 0;
  {
    Progress p("runs", 100, true, c.f, 3.0);
    p.clock = [&] { return now; };
    now = 1.0;
    p.update(10);
    EXPECT_EQ(c.text(), "");  // shorter than the quiet period
    now = 4.0;
    p.update(40);
    EXPECT_EQ(c.text(), "\r  runs  40/100  40 %  ~6 s left");
    now = 4.1;
    p.update(41);  // within 0.25 s of the last line: not printed
    EXPECT_EQ(c.text(), "\r  runs  40/100  40 %  ~6 s left");
  }
  // The destructor erases the line: carriage return, blanks over it, carriage return.
  const std::string line = "  runs  40/100  40 %  ~6 s left";
  EXPECT_EQ(c.text(), "\r" + line + "\r" + std::string(line.size(), ' ') + "\r");
}

TEST(Progress, DisabledNeverPrints) {
  Capture c;
  Progress p("runs", 100, false, c.f, 0.0);
  double now = 10;
  p.clock = [&] { return now; };
  p.update(50);
  p.finish();
  EXPECT_EQ(c.text(), "");
}

}  // namespace
