// Asking for cache lines ahead of their use: the next cell or entry of a
// queue whose lines cross between a writer's and a reader's cores once a
// lap each way (Medusa's RX_READY cells, Hamlyn's notification entries).
// Hints only: no word changes, and a line another process writes
// meanwhile is fetched again when it is used.
#pragma once

namespace hpam::sys {

// The line at p, and the next one when `two`: `Write` for ownership (x86
// PREFETCHW, whose compare-and-swap or stores would otherwise wait for
// the line), else to read. (The write/read choice is a template argument:
// clang wants __builtin_prefetch's arguments constant.)
template <bool Write>
[[gnu::always_inline]] inline void prefetch_lines(const void* at, bool two) noexcept {
  const auto* p = static_cast<const char*>(at);
#if defined(__x86_64__)
  if constexpr (Write) {
    asm volatile("prefetchw %0" : : "m"(*p));
    if (two) asm volatile("prefetchw %0" : : "m"(*(p + 64)));
    return;
  }
#endif
  __builtin_prefetch(p, Write ? 1 : 0);
  if (two) __builtin_prefetch(p + 64, Write ? 1 : 0);
}

}  // namespace hpam::sys
