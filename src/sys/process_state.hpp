// What the kernel says about another process of the job: the facts a
// protocol may trust when a peer stops answering. A process that computes,
// sleeps or waits on I/O is running; one stopped by a signal or a debugger
// is stopped; one that exited (or is a zombie) is gone.
#pragma once

#include <sys/types.h>

namespace hpam::sys {

enum class process_state {
  running,  // exists and may run (R, S, D, ...): it may only be busy
  stopped,  // SIGSTOP, SIGTSTP or traced (T, t): frozen until someone continues it
  gone,     // no such process, or exited and not yet reaped (Z, X)
};

// Reads kill(pid, 0) and /proc/<pid>/stat. A system call or three: call it
// on cold paths only (a peer silent for its give-up time).
process_state observe_process(pid_t pid) noexcept;

const char* to_string(process_state s) noexcept;

}  // namespace hpam::sys
