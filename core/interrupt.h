// Ctrl-C and kill: an interrupted isim leaves only whole files, and says what it left.
//
// Contract:
// - install_interrupt_handlers(): SIGINT and SIGTERM (and SIGHUP) make the process remove the
//   temporary files being written (core/atomic_file.h), print "isim: interrupted" and the
//   current note to stderr, and exit at once with 128 + the signal (130 for Ctrl-C, 143 for
//   kill). Only async-signal-safe calls run in the handler; threads at work are abandoned with
//   the process, and no file under a final name is touched.
// - set_interrupt_note(text): what an interrupt at this moment leaves behind, e.g. "12 of 30
//   runs are kept in OUT/shards/...; rerun the same command to resume". Callers update it as
//   they finish work; any thread may call it. At most kNoteMax bytes are kept.
#pragma once

#include <cstddef>
#include <string>

namespace isim {

inline constexpr size_t kNoteMax = 2048;

void install_interrupt_handlers();
void set_interrupt_note(const std::string& text);

}  // namespace isim
