// The AM card's inbound area, in the receiving card's message-area memory
// (one allocation, named by the card header's client_offset):
//
//   am_inbound_header | am_sender_entry[nprocs] | given-back line per sender |
//   overflow counter | inbound regions (per_sender blocks per sender)
//
// and, in a second allocation the header names (outbound_offset), the
// owner's outbound blocks, which receivers read a packet in when it is
// delivered by reference.
//
// Each sender owns one region, under a fast-mode slot with its own key
// (OSDI'96 2.7): it writes only there, its blocks in turn, and learns from
// its given-back count how many of its packets the receiver has released
// (in the order they arrived, which is the order it lent their blocks). The layout follows from
// four numbers alone (compute_inbound_layout), so a sender checks a peer's header against the
// layout it computes itself and trusts no offset it did not.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "nic/hamlyn/layout.hpp"

namespace hpam::nic::hamlyn {

constexpr uint64_t am_inbound_magic = 0x444e42494d414d50ull;  // "PMAMIBND"
constexpr uint32_t am_inbound_version = 3;  // 3: the outbound area (delivery by reference)

// One sender's way in: the slot over its region and that slot's key.
struct am_sender_entry {
  uint32_t slot;      // slot index at the receiver
  uint32_t reserved;  // zero
  uint64_t key;       // the slot's protection key
};
static_assert(std::is_standard_layout_v<am_sender_entry> && sizeof(am_sender_entry) == 16);

// How many of one sender's packets the receiver has released: written by
// the receiver alone (release), read by that sender; a cache line each.
struct alignas(64) am_given_back {
  std::atomic<uint64_t> count;
  uint64_t pad[7];
};
static_assert(sizeof(am_given_back) == 64);

struct am_inbound_header {
  client_prefix prefix;        // am_inbound_magic, am_inbound_version, sizeof(am_inbound_header)
  uint32_t nprocs;             // processes (senders and the receiver)
  uint32_t per_sender;         // inbound blocks per sender region
  uint32_t block_size;         // bytes per block
  uint32_t given_back_stride;  // bytes between two senders' given-back lines (64)
  uint64_t senders_offset;     // area offset of am_sender_entry[nprocs]
  uint64_t given_back_offset;  // area offset of sender 0's given-back line (am_given_back)
  uint64_t overflow_offset;    // area offset of the overflow counter (atomic u64)
  uint64_t regions_offset;     // area offset of sender 0's region
  // The owner's outbound blocks, in its card memory, where a receiver reads
  // a packet delivered by reference (hamlyn_am_card.hpp): outbound_blocks
  // blocks of block_size bytes from this area offset. A reader checks them
  // against the area's size; nothing else in the layout depends on them,
  // nor on whether the owner takes references.
  uint64_t outbound_offset;
  uint32_t outbound_blocks;
  uint32_t takes_references;  // 1: the owner takes packets by reference (it checks no CRC), else 0
};
static_assert(std::is_standard_layout_v<am_inbound_header> &&
              std::is_trivially_copyable_v<am_inbound_header>);
static_assert(sizeof(am_inbound_header) == 80);
static_assert(offsetof(am_inbound_header, senders_offset) == 32);

// Offsets relative to the start of the allocation (the header).
struct am_inbound_layout {
  uint64_t senders;     // am_sender_entry[nprocs]
  uint64_t given_back;  // am_given_back[nprocs]
  uint64_t overflow;    // the overflow counter, on its own cache line
  uint64_t regions;     // inbound regions, per_sender * block_size apart
  uint64_t total;       // bytes of the whole allocation
};

constexpr uint64_t cache_lines(uint64_t bytes) {
  return (bytes + 63) / 64 * 64;
}

constexpr am_inbound_layout compute_inbound_layout(uint32_t nprocs, uint32_t per_sender,
                                                   uint32_t block_size) {
  am_inbound_layout l{};
  l.senders = sizeof(am_inbound_header);
  l.given_back = cache_lines(l.senders + sizeof(am_sender_entry) * uint64_t{nprocs});
  l.overflow = l.given_back + sizeof(am_given_back) * uint64_t{nprocs};
  l.regions = cache_lines(l.overflow + 8);
  l.total = l.regions + uint64_t{per_sender} * block_size * nprocs;
  return l;
}

}  // namespace hpam::nic::hamlyn
