// Cross-memory attach (process_vm_writev / process_vm_readv): the single-copy
// path into a peer's private memory. Whether the kernel allows it depends on
// ptrace permissions (Yama ptrace_scope, capabilities, containers); it is
// probed per peer at attach by reading a word the peer published, and can be
// forbidden by a parameter on either side.
#pragma once

#include <sys/types.h>
#include <sys/uio.h>

#include <cstddef>
#include <cstdint>

#include "sys/status.hpp"

namespace hpam::nic::hamlyn {

// Reads 8 bytes at `address` in process `pid` and compares them with
// `expected`. True only when cross-memory attach works to that process.
bool cross_memory_probe(pid_t pid, uint64_t address, uint64_t expected) noexcept;

// Writes the local iovecs to [remote, remote+total) in `pid`, looping over
// partial transfers. status::system_error when the kernel refuses.
status cross_memory_write(pid_t pid, const iovec* local, int n, uint64_t remote) noexcept;

// Reads [remote, remote+len) in `pid` into `local`.
status cross_memory_read(pid_t pid, void* local, size_t len, uint64_t remote) noexcept;

// Pairs of pieces in one call per IOV_MAX pairs (the send terminus's
// batches): local[i] and remote[i] have the same length; write: local[i] ->
// remote[i] in `pid`, else remote[i] -> local[i]. Partial transfers go on
// from where they stopped (both lists are the caller's scratch and are
// changed on the way). status::system_error when the kernel refuses.
status cross_memory_pairs(pid_t pid, bool write, iovec* local, iovec* remote, size_t n) noexcept;

// The kernel's ptrace_scope (Yama), or -1 when Yama is absent.
int yama_ptrace_scope() noexcept;

}  // namespace hpam::nic::hamlyn
