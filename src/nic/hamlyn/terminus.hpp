// The send terminus (OSDI'96 2.3): a work queue of transmission requests and
// the per-entry engine state. Private to the sending process (its emulated
// card engine runs in the same process); the completion word is
// card::completion_.
#pragma once

#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "nic/hamlyn/hamlyn_card.hpp"

namespace hpam::nic::hamlyn {

struct card::work_entry {
  ticket target;                              // destination, slot, metadata index, key
  uint64_t offset;                            // destination offset of byte 0, from the area base
  uint64_t length;                            // data bytes in the message
  uint64_t fast_word;                         // fast mode: the word for the notification
  uint32_t metadata_length;                   // bytes of user metadata (first packet)
  uint32_t flags;                             // packet flags (kind data | notify)
  std::byte metadata[user_metadata_bytes];    // user metadata, copied at post
  int gather_count;                           // pieces of data
  iovec gather[max_gather];                   // the data (direct I/O: the inline copy)
  uint32_t packets;                           // packets this message takes
  uint32_t counter;                           // the terminus packet counter (2.5)
  uint32_t next_packet;                       // engine progress: packets sent so far
  uint64_t sent;                              // engine progress: data bytes sent so far
  bool two_first;                             // first packet's delta is 2 (avoids a 0 last delta)
  uint64_t sequence;                          // position in the work queue
};

struct card::terminus {
  struct result {
    uint64_t sequence;  // which entry this result belongs to
    status outcome;     // ok, or why the message was refused
  };
  static constexpr uint32_t results_kept = 1024;  // finished entries whose outcome can be asked

  terminus(uint32_t entries, uint32_t direct_io)
      : queue(entries), inline_data(size_t{entries} * direct_io), direct_io_limit(direct_io),
        mask(entries - 1), results(results_kept, result{~0ull, status::ok}) {}

  std::vector<work_entry> queue;         // the work queue
  std::vector<std::byte> inline_data;    // direct I/O copies, direct_io_limit per entry
  uint32_t direct_io_limit;              // bytes copied inline at most
  uint64_t mask;                         // entries - 1
  uint64_t posted = 0;                   // entries posted (tail)
  uint64_t running = 0;                  // next entry the engine sends (head)
  std::vector<result> results;           // outcome of finished entries
};

}  // namespace hpam::nic::hamlyn
