#include "core/interrupt.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <mutex>

#include "core/atomic_file.h"

namespace isim {

namespace {

// Two note buffers: a writer fills the one not shown, then publishes it, so the handler never
// reads a half-written note.
char g_notes[2][kNoteMax + 1];
std::atomic<int> g_shown{-1};
std::mutex g_note_mutex;

void say(const char* s) {
  size_t left = std::strlen(s);
  while (left > 0) {
    const ssize_t n = ::write(STDERR_FILENO, s, left);
    if (n <= 0) return;
    s += n;
    left -= static_cast<size_t>(n);
  }
}

extern "C" void on_signal(int sig) {
  isim::remove_temp_files_signal_safe();
  say(sig == SIGINT ? "\nisim: interrupted (Ctrl-C)" : "\nisim: interrupted (signal)");
  const int shown = g_shown.load();
  if (shown >= 0) {
    say("; ");
    say(g_notes[shown]);
  }
  say("\n");
  ::_exit(128 + sig);
}

}  // namespace

void install_interrupt_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaction(sig, &sa, nullptr);
}

void set_interrupt_note(const std::string& text) {
  std::lock_guard<std::mutex> lock(g_note_mutex);
  const int next = g_shown.load() == 0 ? 1 : 0;
  const size_t n = std::min(text.size(), kNoteMax);
  std::memcpy(g_notes[next], text.data(), n);
  g_notes[next][n] = '\0';
  g_shown.store(next);
}

}  // namespace isim
