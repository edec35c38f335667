// Files that appear whole or not at all, and journals that survive a kill.
//
// Contract:
// - write_file_atomic(path, text): writes `text` to "<path>.tmp-<pid>" in the same folder,
//   flushes it to disk (fsync) and renames it over `path`, so a reader (or a run killed midway)
//   sees the old file or the new one, never a part. InputError "PATH: cannot write: <reason>"
//   on failure; the temporary file is removed.
// - While it writes, the temporary name is registered (TempFile), and
//   remove_temp_files_signal_safe() unlinks every registered one: a signal handler calls it
//   (core/interrupt.h), so an interrupted process leaves no temporary behind either. It
//   uses only unlink(2) and atomics, which are async-signal-safe. At most kMaxTempFiles are
//   registered at once (one per writing thread); a registration past that still writes, but
//   is not removed by the handler.
// - For tests only: when the environment variable ISIM_TEST_PAUSE_BEFORE_RENAME is set to a
//   non-empty text that `path` contains, write_file_atomic sleeps 60 s after the temporary file
//   is written and before the rename, so that a test can interrupt a write at a known point.
// - write_file_atomic(path, produce): the same for a text made in pieces: produce(put) calls
//   put(piece) for each piece, in order; each goes to the temporary file as it comes, so a large
//   file is never held whole in memory. An exception from produce removes the temporary file
//   and propagates; `path` is left as it was.
// - remove_file(path): removes `path` when it exists (a file that is absent is no error);
//   InputError "PATH: cannot remove: <reason>" when it cannot.
// - AppendFile: a file opened for appending (created when missing). append(line) writes the
//   line (which must end in '\n') with one write(2) and fsyncs it before returning, so a line
//   that append() returned from is on disk whatever happens to the process next.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

namespace isim {

void write_file_atomic(const std::string& path, const std::string& text);
using PutText = std::function<void(std::string_view)>;
void write_file_atomic(const std::string& path, const std::function<void(const PutText&)>& produce);
void remove_file(const std::string& path);

inline constexpr size_t kMaxTempFiles = 64;

// Registers `path` for remove_temp_files_signal_safe while it lives.
class TempFile {
 public:
  explicit TempFile(const std::string& path);
  ~TempFile();
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;

 private:
  int slot_ = -1;
};

// Unlinks every registered temporary file; returns how many it removed.
int remove_temp_files_signal_safe();

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

}  // namespace isim
