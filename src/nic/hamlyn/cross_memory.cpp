#include "nic/hamlyn/cross_memory.hpp"

#include <fcntl.h>
#include <limits.h>
#include <unistd.h>

#include <algorithm>

namespace hpam::nic::hamlyn {

bool cross_memory_probe(pid_t pid, uint64_t address, uint64_t expected) noexcept {
  uint64_t got = 0;
  return is_ok(cross_memory_read(pid, &got, sizeof got, address)) && got == expected;
}

status cross_memory_write(pid_t pid, const iovec* local, int n, uint64_t remote) noexcept {
  size_t total = 0;
  for (int i = 0; i < n; ++i) total += local[i].iov_len;
  size_t done = 0;
  if (total != 0 && n <= 8) {  // mostly all in one call, from the caller's own list
    iovec r{reinterpret_cast<void*>(remote), total};
    const ssize_t w = process_vm_writev(pid, local, static_cast<unsigned long>(n), &r, 1, 0);
    if (w <= 0) return status::system_error;
    done = static_cast<size_t>(w);
  }
  iovec l[8];
  while (done < total) {
    // Rebuild the local list past `done` bytes (partial transfers are rare).
    int m = 0;
    size_t skip = done;
    for (int i = 0; i < n && m < 8; ++i) {
      if (skip >= local[i].iov_len) {
        skip -= local[i].iov_len;
        continue;
      }
      l[m].iov_base = static_cast<char*>(local[i].iov_base) + skip;
      l[m].iov_len = local[i].iov_len - skip;
      skip = 0;
      ++m;
    }
    iovec r{reinterpret_cast<void*>(remote + done), total - done};
    const ssize_t w = process_vm_writev(pid, l, static_cast<unsigned long>(m), &r, 1, 0);
    if (w <= 0) return status::system_error;
    done += static_cast<size_t>(w);
  }
  return status::ok;
}

status cross_memory_read(pid_t pid, void* local, size_t len, uint64_t remote) noexcept {
  size_t done = 0;
  while (done < len) {
    iovec l{static_cast<char*>(local) + done, len - done};
    iovec r{reinterpret_cast<void*>(remote + done), len - done};
    const ssize_t got = process_vm_readv(pid, &l, 1, &r, 1, 0);
    if (got <= 0) return status::system_error;
    done += static_cast<size_t>(got);
  }
  return status::ok;
}

status cross_memory_pairs(pid_t pid, bool write, iovec* local, iovec* remote, size_t n) noexcept {
  size_t i = 0;
  while (i < n) {
    const size_t m = std::min<size_t>(n - i, IOV_MAX);
    const ssize_t moved = write ? process_vm_writev(pid, local + i, m, remote + i, m, 0)
                                : process_vm_readv(pid, local + i, m, remote + i, m, 0);
    if (moved <= 0) return status::system_error;
    // Past the pairs the call finished; into the one it stopped inside.
    size_t left = static_cast<size_t>(moved);
    while (i < n && left >= local[i].iov_len) left -= local[i++].iov_len;
    if (left) {
      local[i].iov_base = static_cast<char*>(local[i].iov_base) + left;
      remote[i].iov_base = static_cast<char*>(remote[i].iov_base) + left;
      local[i].iov_len -= left;
      remote[i].iov_len -= left;
    }
  }
  return status::ok;
}

int yama_ptrace_scope() noexcept {
  const int fd = open("/proc/sys/kernel/yama/ptrace_scope", O_RDONLY);
  if (fd < 0) return -1;
  char c = 0;
  const ssize_t n = read(fd, &c, 1);
  close(fd);
  return n == 1 && c >= '0' && c <= '9' ? c - '0' : -1;
}

}  // namespace hpam::nic::hamlyn
