// Helpers shared by the multi-process and protocol tests.
#pragma once

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace hpam::test {

// A job id unique to this test process and call, so parallel and repeated
// runs never share segments.
inline std::string unique_job(const char* tag) {
  static std::atomic<int> counter{0};
  return std::string(tag) + "-" + std::to_string(getpid()) + "-" + std::to_string(counter++);
}

// Runs fn in a forked child that exits with fn's return value; a child still
// running after the test's deadline is killed by the parent (see reap).
inline pid_t fork_child(const std::function<int()>& fn, unsigned alarm_seconds = 60) {
  pid_t pid = fork();
  if (pid == 0) {
    alarm(alarm_seconds);  // a hung child dies instead of hanging the suite
    int rc = 1;
    try {
      rc = fn();
    } catch (...) {
      rc = 99;
    }
    _exit(rc);
  }
  return pid;
}

// Waits for a child up to timeout_ms, killing it after that. Returns its exit
// status, or -1 if it had to be killed or died by a signal.
inline int reap(pid_t pid, int timeout_ms = 60'000) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    int st = 0;
    pid_t r = waitpid(pid, &st, WNOHANG);
    if (r == pid) return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    if (r < 0) return -1;
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &st, 0);
      return -1;
    }
    usleep(1000);
  }
}

// Polls step() until it returns true or timeout_ms passes; returns whether it did.
template <class Step>
bool spin_until(Step&& step, int timeout_ms = 20'000) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (!step())
    if (std::chrono::steady_clock::now() > deadline) return false;
  return true;
}

// n bytes of a pattern that differs with seed and with the position (and
// is not periodic at a power of two), for byte-exact checks.
inline std::vector<std::byte> bytes_of(size_t n, uint8_t seed) {
  std::vector<std::byte> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = std::byte{static_cast<uint8_t>(seed + i * 13 + (i >> 3))};
  return v;
}

}  // namespace hpam::test
