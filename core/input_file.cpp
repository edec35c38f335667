#include "core/input_file.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "core/input_error.h"

namespace isim {

namespace {

const char* not_regular(mode_t m) {
  if (S_ISDIR(m)) return "a directory";
  if (S_ISFIFO(m)) return "a FIFO (named pipe)";
  if (S_ISCHR(m)) return "a character device";
  if (S_ISBLK(m)) return "a block device";
  if (S_ISSOCK(m)) return "a socket";
  return "not a regular file";
}

struct stat stat_input(const std::string& path, const std::string& expected) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)
    throw InputError(path + ": cannot open: " + std::strerror(errno));
  if (!S_ISREG(st.st_mode))
    throw InputError(fmt::format("{}: is {}; expected a regular file ({})", path,
                                 not_regular(st.st_mode), expected));
  return st;
}

}  // namespace

void check_input_file(const std::string& path, const std::string& expected) {
  stat_input(path, expected);
}

std::ifstream open_input_file(const std::string& path, const std::string& expected,
                              std::ios::openmode mode) {
  check_input_file(path, expected);
  errno = 0;
  std::ifstream in(path, mode);
  if (!in) throw InputError(path + ": cannot open: " + std::strerror(errno != 0 ? errno : EACCES));
  return in;
}

std::string read_stream_whole(std::istream& in, const std::string& path) {
  std::string text;
  char buf[65536];
  while (in.read(buf, sizeof buf) || in.gcount() > 0)
    text.append(buf, static_cast<size_t>(in.gcount()));
  check_read(in, path, 1 + std::count(text.begin(), text.end(), '\n'));
  return text;
}

std::string read_input_file(const std::string& path, const std::string& expected,
                            uint64_t max_bytes) {
  const struct stat st = stat_input(path, expected);
  if (static_cast<uint64_t>(st.st_size) > max_bytes)
    throw InputError(
        fmt::format("{}: is {} bytes; expected a regular file ({}) of at most {} bytes", path,
                    st.st_size, expected, max_bytes));
  std::ifstream in = open_input_file(path, expected);
  return read_stream_whole(in, path);
}

void check_read(const std::istream& in, const std::string& path, int64_t line) {
  if (!in.bad()) return;
  throw InputError(
      fmt::format("{}:{}: read error; the file could not be read to its end", path, line));
}

}  // namespace isim
