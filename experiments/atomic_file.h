// Files that appear whole or not at all, and journals that survive a kill.
//
// Contract:
// - write_file_atomic(path, text): writes `text` to "<path>.tmp-<pid>" in the same folder,
//   flushes it to disk (fsync) and renames it over `path`, so a reader (or a run killed midway)
//   sees the old file or the new one, never a part. InputError "PATH: cannot write: <reason>"
//   on failure; the temporary file is removed.
// - AppendFile: a file opened for appending (created when missing). append(line) writes the
//   line (which must end in '\n') with one write(2) and fsyncs it before returning, so a line
//   that append() returned from is on disk whatever happens to the process next.
#pragma once

#include <string>

namespace isim::exp {

void write_file_atomic(const std::string& path, const std::string& text);

class AppendFile {
 public:
  explicit AppendFile(const std::string& path);
  ~AppendFile();
  AppendFile(const AppendFile&) = delete;
  AppendFile& operator=(const AppendFile&) = delete;
  void append(const std::string& line);
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  int fd_ = -1;
};

}  // namespace isim::exp
