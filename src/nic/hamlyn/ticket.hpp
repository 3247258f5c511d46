// A ticket names a place a sender may write (OSDI'96 3.2, Rats "seed"):
// destination, slot, metadata index, protection key, and the range of the
// message area it covers. It is plain data and can travel inside messages.
#pragma once

#include <cstdint>
#include <type_traits>

#include "sys/status.hpp"

namespace hpam::nic::hamlyn {

namespace ticket_flags {
constexpr uint32_t notify = 1u << 0;  // the receiver is notified when a message completes
}

struct ticket {
  uint32_t node;            // destination process (index in the job)
  uint32_t slot;            // slot number at the destination
  uint32_t metadata_index;  // metadata entry (message identifier); fast_index = fast mode
  uint32_t delta;           // start value Y of the packet counter (group receive splits it)
  uint64_t protection_key;  // the slot's key, or the entry's secondary key (paranoid modes)
  uint64_t offset;          // first byte of the range this ticket covers, from the area base
  uint64_t range;           // bytes in the range
  uint32_t flags;           // ticket_flags
  uint32_t generation;      // the slot's generation when the ticket was made
};
static_assert(std::is_standard_layout_v<ticket> && std::is_trivially_copyable_v<ticket>);
static_assert(sizeof(ticket) == 48);

// Group receive (OSDI'96 2.5, Rats split_seed): carves the last `bytes` of
// t's range into a new ticket and splits t's counter start value between the
// two so that they still sum to the old one (mod 2^32) and neither is 0 (a
// zero start would make a single-packet message notify on its own). Fails
// with invalid_argument when the range or the counter cannot be split.
inline status split_ticket(ticket& t, uint64_t bytes, ticket& out) noexcept {
  if (bytes == 0 || bytes >= t.range) return status::invalid_argument;
  const uint32_t old = t.delta;
  const uint32_t part = old == 0 ? 0x80000000u : old / 2;
  if (part == 0 || static_cast<uint32_t>(old - part) == 0) return status::invalid_argument;
  out = t;
  out.offset = t.offset + (t.range - bytes);
  out.range = bytes;
  out.delta = part;
  t.range -= bytes;
  t.delta = old - part;
  return status::ok;
}

}  // namespace hpam::nic::hamlyn
