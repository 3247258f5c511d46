// The receiving interface (Hamlyn OSDI'96 2.2, 2.4-2.7; h_recv and
// h_recv_block, 3.2): for each packet, the key and bounds checks, the
// deposit at base + offset, the packet accumulator of the metadata entry,
// and on completion the notification queue entry.
//
// In this emulation its work on a data packet (arrive) is done by the
// sender's process in the receiver's card segment, so the receiving CPU
// does nothing until it looks at its notification queue (receive). Packets
// a sender could not deposit itself wait in the receiver's inbound FIFO
// (the fallback path): the receiver deposits them, answers read requests
// and hands other kinds to their handlers when it polls (poll_inbound).
// Every refusal is counted in the receiving card and writes nothing.
//
// Hot paths (arrive, receive) do not allocate, lock or throw; cross-memory
// writes are system calls by nature.
#pragma once

#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "nic/hamlyn/card_view.hpp"
#include "nic/hamlyn/layout.hpp"
#include "nic/hamlyn/notification_queue.hpp"
#include "nic/hamlyn/ticket.hpp"
#include "sys/status.hpp"

namespace hpam::nic::hamlyn {

class card;

// Handlers for packets that are not deposits (fallback requests and replies),
// run by the receiver when it polls its inbound FIFO. Returns false when it
// cannot finish now (the packet is served again later).
using packet_handler = bool (*)(void* ctx, card& c, const packet_header& h,
                                const std::byte* payload);

class receiving_interface {
 public:
  // Sized from cfg (nprocs, rx_packets, notification queues). Receives for
  // the card whose views of every card are `views` (indexed by process);
  // `c` is that card, handed to the packet handlers.
  receiving_interface(card& c, const std::vector<card_view>& views, const card_config& cfg);
  receiving_interface(const receiving_interface&) = delete;
  receiving_interface& operator=(const receiving_interface&) = delete;

  // Does the receiving interface's work for one packet at card v (the
  // sender's process on the receiver's behalf, or the receiver for a packet
  // from its FIFO). `local` is true in the owner's own process. `h` is the
  // caller's own copy; the data pieces must add up to h.length.
  status arrive(const card_view& v, const packet_header& h, const iovec* data, int n,
                const std::byte* meta, bool local);
  // arrive() for the one packet of a fast-mode message (OSDI'96 2.7:
  // metadata index all ones, flag_single, no metadata) sent on ticket t by
  // this process: `length` bytes of `data` for `offset` (from the area base)
  // with `word` for the notification. The same slot hold, mode, key and
  // bounds checks, deposit (or inline delivery), packet count and
  // notification, without building a packet header or the metadata entry's
  // cases.
  status arrive_fast(const card_view& v, const ticket& t, uint64_t offset, const std::byte* data,
                     uint32_t length, uint64_t word, bool local);
  // Resolves [offset, offset+len) of slot `s` at v after the key and bounds
  // checks (for gets and atomics): card memory gives a pointer; process
  // memory gives the owner's address with ptr = null.
  status resolve(const card_view& v, uint32_t s, uint64_t key, uint64_t offset, uint64_t len,
                 std::byte*& ptr, uint64_t& address);
  void unresolve(const card_view& v, uint32_t s);  // after a successful resolve

  // h_recv: deposits packets waiting in my inbound FIFO, then takes the next
  // notification of queue q, if any. A message the entry carried (inline
  // delivery, n.carried) is copied into `message` (room for
  // notification_inline_bytes), when given.
  bool receive(uint32_t q, notification& n, std::byte* message = nullptr);
  // My cursor of queue q (q < notification_queues) and what it passed over.
  const notification_reader& reader(uint32_t q) const { return readers_[q]; }
  // Deposits up to `budget` inbound packets (fallback path); returns how many.
  uint32_t poll_inbound(uint32_t budget = 64);
  void set_handler(packet_kind kind, packet_handler fn, void* ctx);

 private:
  // What an arrival uses of a slot, read once while the arrival holds it
  // (users): the owner cannot change it before the arrival is done.
  struct slot_copy {
    uint64_t key;                 // the slot's protection key (0: none matches)
    uint64_t base;                // card: area offset; process: owner's address
    uint64_t bound;               // bytes
    uint32_t mode;                // slot_mode
    uint32_t memory;              // area_memory
    uint32_t metadata_base;       // first metadata entry
    uint32_t metadata_count;      // entries
    uint32_t notification_queue;  // queue for its notifications
    uint32_t inline_limit;        // fast-mode messages up to this long go in the entry
  };
  // A fallback packet being served: its header copied once out of the
  // inbound buffer, and (read requests) how far the answer has got.
  struct inbound_packet {
    uint32_t buffer;       // inbound buffer number
    packet_header header;  // the copy every check and use reads
    uint64_t done;         // read requests: bytes already answered
  };
  struct handler_entry {
    packet_handler fn = nullptr;
    void* ctx = nullptr;
  };

  bool well_formed(const card_view& v, const packet_header& h) const;
  static bool hold_slot(const card_view& v, uint32_t index, slot_copy& s);
  static bool fast_mode_fits(const slot_copy& s, const packet_header& h);
  bool check_packet(const card_view& v, const packet_header& h, const slot_copy& s,
                    metadata_entry*& entry);
  static bool check_key_and_bounds(arrival_counters& c, uint64_t presented, uint64_t offset,
                                   uint64_t length, uint64_t key, uint64_t low, uint64_t high,
                                   uint64_t bound);
  void notify(const card_view& v, const slot_copy& s, const notification& n,
              const std::byte* message);
  void complete(const card_view& v, const slot_copy& s, const packet_header& h,
                metadata_entry* entry, const std::byte* message);
  status arrive_carried(const card_view& v, const slot_copy& s, const packet_header& h,
                        const iovec* data, int n);
  static status write_area(const card_view& v, const slot_copy& s, uint64_t offset,
                           uint64_t length, const iovec* data, int n, bool local);
  bool serve_read_request(inbound_packet& in);
  bool serve_packet(inbound_packet& in);

  card& card_;                           // the card this interface receives for (for handlers)
  const std::vector<card_view>& views_;  // its views of every card [proc]
  uint32_t nprocs_;                      // processes in the job (valid packet sources)
  uint32_t my_proc_;                     // my card's process
  uint32_t notification_queues_;         // queues of my card
  uint64_t notify_capacity_;             // entries per queue
  uint32_t rx_packets_;                  // inbound packet buffers of my card
  uint32_t packet_size_;                 // bytes per inbound packet buffer
  handler_entry handlers_[packet_kind_count];
  std::vector<inbound_packet> deferred_;  // inbound packets waiting to be served again
  std::vector<notification_reader> readers_;  // [queue]: my cursors, never in shared memory
};

}  // namespace hpam::nic::hamlyn
