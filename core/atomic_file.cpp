#include "core/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "core/input_error.h"

namespace isim {

namespace {

[[noreturn]] void fail(const std::string& path, const std::string& what, int err) {
  throw InputError(path + ": " + what + ": " + std::strerror(err));
}

// Writes all of `text` to fd; false (errno set) on failure.
bool write_all(int fd, std::string_view text) {
  const char* p = text.data();
  size_t left = text.size();
  while (left > 0) {
    const ssize_t n = ::write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  return true;
}

// The registry of temporary files: a slot is claimed (state 1), filled, then published
// (state 2); the signal handler reads only published slots.
constexpr size_t kPathMax = 4096;
struct Slot {
  std::atomic<int> state{0};
  char path[kPathMax];
};
std::array<Slot, kMaxTempFiles> g_slots;

}  // namespace

TempFile::TempFile(const std::string& path) {
  if (path.size() >= kPathMax) return;
  for (size_t i = 0; i < g_slots.size(); ++i) {
    int free = 0;
    if (!g_slots[i].state.compare_exchange_strong(free, 1)) continue;
    std::memcpy(g_slots[i].path, path.c_str(), path.size() + 1);
    g_slots[i].state.store(2);
    slot_ = static_cast<int>(i);
    return;
  }
}

TempFile::~TempFile() {
  if (slot_ >= 0) g_slots[static_cast<size_t>(slot_)].state.store(0);
}

int remove_temp_files_signal_safe() {
  int removed = 0;
  for (auto& s : g_slots)
    if (s.state.load() == 2 && ::unlink(s.path) == 0) ++removed;
  return removed;
}

void write_file_atomic(const std::string& path, const std::string& text) {
  write_file_atomic(path, [&](const PutText& put) { put(text); });
}

void write_file_atomic(const std::string& path,
                       const std::function<void(const PutText&)>& produce) {
  const std::string tmp = path + ".tmp-" + std::to_string(::getpid());
  const TempFile registered(tmp);
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) fail(path, "cannot write", errno);
  bool ok = true;
  int err = 0;
  try {
    produce([&](std::string_view piece) {
      if (ok && !write_all(fd, piece)) {
        ok = false;
        err = errno;
      }
    });
  } catch (...) {
    ::close(fd);
    ::unlink(tmp.c_str());
    throw;
  }
  if (ok && ::fsync(fd) != 0) {
    ok = false;
    err = errno;
  }
  if (::close(fd) != 0 || !ok) {
    ::unlink(tmp.c_str());
    fail(path, "cannot write", ok ? errno : err);
  }
  if (const char* pause = std::getenv("ISIM_TEST_PAUSE_BEFORE_RENAME");
      pause && *pause && path.find(pause) != std::string::npos)
    ::sleep(60);
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int e = errno;
    ::unlink(tmp.c_str());
    fail(path, "cannot write", e);
  }
}

void remove_file(const std::string& path) {
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) fail(path, "cannot remove", errno);
}

AppendFile::AppendFile(const std::string& path) : path_(path) {
  fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd_ < 0) fail(path, "cannot open for appending", errno);
}

AppendFile::~AppendFile() {
  if (fd_ >= 0) ::close(fd_);
}

void AppendFile::append(const std::string& line) {
  if (!write_all(fd_, line) || ::fsync(fd_) != 0) fail(path_, "cannot append", errno);
}

}  // namespace isim
