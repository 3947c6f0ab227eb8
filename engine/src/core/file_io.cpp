// write_file_atomic (scn/file_io.h): temporary file + fsync + rename.
#include "scn/file_io.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "scn/error.h"

namespace scn {

void write_file_atomic(const std::string& path, const std::string& bytes) {
  const std::string tmp = path + ".partial";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  SCN_CHECK(fd >= 0, path, ": cannot open for writing (", std::strerror(errno), ")");
  size_t done = 0;
  int err = 0;
  while (err == 0 && done < bytes.size()) {
    const ssize_t w = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0)
      err = w < 0 ? errno : EIO;
    else
      done += size_t(w);
  }
  // fsync before the rename: after a crash the target is the old file or the whole new one.
  if (err == 0 && ::fsync(fd) != 0) err = errno;
  if (::close(fd) != 0 && err == 0) err = errno;
  if (err != 0) {
    std::remove(tmp.c_str());
    SCN_FAIL(path, ": write failed (", std::strerror(err), ")");
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    err = errno;
    std::remove(tmp.c_str());
    SCN_FAIL(path, ": cannot rename the written file into place (", std::strerror(err), ")");
  }
}

}  // namespace scn
