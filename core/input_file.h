// Opening a user's input file: the one door for every reader (specs, profiles, models, traces,
// journals, CSV and JSON-lines files, importers, validate's inputs).
//
// Contract:
// - check_input_file(path, expected) looks at the path with stat() and never opens it, so a FIFO
//   cannot block: it throws InputError "PATH: cannot open: <system reason>" when there is
//   nothing to stat, and "PATH: is a directory; expected a regular file (EXPECTED)" (likewise
//   "is a FIFO (named pipe)", "is a character device", "is a block device", "is a socket")
//   for anything but a regular file. EXPECTED names what the reader wants ("a YAML profile").
//   A symbolic link is followed: a link to a regular file is a regular file.
// - open_input_file checks, then opens: "PATH: cannot open: <system reason>" when open fails.
// - read_input_file reads a whole file of at most `max_bytes` (checked on its size before
//   reading): "PATH: is N bytes; expected a regular file (EXPECTED) of at most M bytes".
// - check_read, after a reader's loop: when the stream's bad bit is set (a read failed half-way,
//   which getline reports as an end of file), throws "PATH:LINE: read error; the file could
//   not be read to its end", LINE being the line the reader was at. No reader
//   treats a failed read as the end of its input.
#pragma once

#include <cstdint>
#include <fstream>
#include <istream>
#include <string>

namespace isim {

// The default cap of read_input_file: 64 MiB, far above any spec, profile or model we read
// whole (the largest shipped profile is under 1 MiB), far below what the machine holds.
inline constexpr uint64_t kMaxWholeFileBytes = 64ull << 20;
// The cap for data read whole (a JSON trace document, a journal, a results CSV): 1 GiB, some
// 20 times the largest data set we ship (51 MB, all of shared/data).
inline constexpr uint64_t kMaxWholeDataBytes = 1ull << 30;

void check_input_file(const std::string& path, const std::string& expected);

std::ifstream open_input_file(const std::string& path, const std::string& expected,
                              std::ios::openmode mode = std::ios::in | std::ios::binary);

std::string read_input_file(const std::string& path, const std::string& expected,
                            uint64_t max_bytes = kMaxWholeFileBytes);

// Reads all of `in` (already open on `path`), checking for a read error (check_read, at the
// line the failure was in).
std::string read_stream_whole(std::istream& in, const std::string& path);

void check_read(const std::istream& in, const std::string& path, int64_t line);

}  // namespace isim
