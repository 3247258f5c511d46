// The private records behind deposit::endpoint: one per operation in
// flight, one per registration. Not part of the public API.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "deposit/deposit.hpp"

namespace hpam::deposit {

struct endpoint::op_record {
  uint32_t generation = 0;               // bumped at each reuse (stale handles are refused)
  bool in_use = false;                   // allocated
  bool user_handle = false;              // the caller holds a handle (else freed on completion)
  bool is_get = false;                   // completes when `length` bytes have come back
  op_state state = op_state::sent;       // pending until finished
  status error = status::ok;             // why it failed
  std::byte* local = nullptr;            // get / read: where the bytes go
  uint64_t length = 0;                   // get / read: bytes expected
  uint64_t received = 0;                 // get: bytes arrived so far
  uint64_t* fetched = nullptr;           // atomics: where the old value goes (may be null)
  int dest = -1;                         // request waiting for room: its destination
  nic::hamlyn::packet_header request{};  // that request's header
  hybrid_op op{};                        // operation requests: the operation
  const std::byte* data = nullptr;       // operation requests: the caller's data
  uint32_t data_len = 0;                 // its length
};

struct endpoint::registration {
  bool in_use = false;       // a slot of mine made by register_memory / allocate_memory
  bool card_memory = false;  // allocate_memory: area_offset is to be freed
  uint64_t area_offset = 0;  // card memory offset
};

// An answer that met a full FIFO at its requester (sent at the next progress).
struct endpoint::pending_reply {
  int dest = -1;                        // requester
  nic::hamlyn::packet_header header{};  // the reply's header
  std::vector<std::byte> bytes;         // its payload (sized at setup: one packet)
};
constexpr uint32_t pending_replies = 16;  // answers an endpoint can hold back at once

// Operation ids in packets: record index and generation.
constexpr uint64_t op_id(uint32_t index, uint32_t generation) {
  return (uint64_t{generation} << 32) | index;
}
constexpr uint32_t op_index(uint64_t id) {
  return static_cast<uint32_t>(id);
}
constexpr uint32_t op_generation(uint64_t id) {
  return static_cast<uint32_t>(id >> 32);
}

// The metadata index of an operation packet that names no connection (a
// plain ticket atomic): the slot and key are the ticket's.
constexpr uint32_t no_connection = 0xFFFFFFFFu;

}  // namespace hpam::deposit
