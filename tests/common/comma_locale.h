// A comma decimal point for LC_NUMERIC, as a host application may set one (de_DE): for tests that what the library
// reads or writes does not follow the process's locale.
#pragma once

#include <unistd.h>

#include <clocale>
#include <cstdlib>
#include <filesystem>
#include <string>

namespace scn::test {

/// While alive, LC_NUMERIC is a locale whose decimal point is a comma: an installed one, or de_DE built by localedef
/// into a temporary folder (glibc reads LOCPATH at each setlocale). active() is false when neither works (a test
/// skips then, saying so); the destructor restores "C".
class CommaLocale {
 public:
  CommaLocale() {
    for (const char* name : {"de_DE.UTF-8", "de_DE.utf8", "fr_FR.UTF-8"})
      if (try_set(name)) return;
    namespace fs = std::filesystem;
    const fs::path dir = fs::temp_directory_path() / ("scn_locales_" + std::to_string(getpid()));
    std::error_code ec;
    fs::create_directories(dir, ec);
    const std::string cmd = "localedef -i de_DE -f UTF-8 '" + (dir / "de_DE.UTF-8").string() + "' > /dev/null 2>&1";
    if (ec || std::system(cmd.c_str()) != 0) return;
    setenv("LOCPATH", dir.c_str(), 1);
    try_set("de_DE.UTF-8");
  }
  ~CommaLocale() { std::setlocale(LC_NUMERIC, "C"); }
  CommaLocale(const CommaLocale&) = delete;
  CommaLocale& operator=(const CommaLocale&) = delete;
  bool active() const { return active_; }

 private:
  bool try_set(const char* name) {
    active_ = std::setlocale(LC_NUMERIC, name) && std::localeconv()->decimal_point[0] == ',';
    return active_;
  }
  bool active_ = false;
};

}  // namespace scn::test
