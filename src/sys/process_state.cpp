#include "sys/process_state.hpp"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace hpam::sys {

namespace {

// The state letter of /proc/<pid>/stat ("pid (comm) S ..."; comm may hold
// spaces and parentheses, so the letter follows the last ')'), or 0.
char stat_letter(pid_t pid) noexcept {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d/stat", static_cast<int>(pid));
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  char buf[512];
  const ssize_t n = ::read(fd, buf, sizeof buf - 1);
  ::close(fd);
  if (n <= 0) return 0;
  buf[n] = '\0';
  const char* paren = std::strrchr(buf, ')');
  return paren && paren[1] == ' ' ? paren[2] : 0;
}

}  // namespace

process_state observe_process(pid_t pid) noexcept {
  if (pid <= 0) return process_state::gone;
  if (::kill(pid, 0) != 0 && errno == ESRCH) return process_state::gone;
  switch (stat_letter(pid)) {
    case 'Z':
    case 'X':
      return process_state::gone;
    case 'T':
    case 't':
      return process_state::stopped;
    default:
      return process_state::running;  // R, S, D, I, ...; or /proc unreadable
  }
}

const char* to_string(process_state s) noexcept {
  switch (s) {
    case process_state::running:
      return "running";
    case process_state::stopped:
      return "stopped";
    case process_state::gone:
      return "gone";
  }
  return "?";
}

}  // namespace hpam::sys
