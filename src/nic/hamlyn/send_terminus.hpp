// The send terminus and the card's send engine (Hamlyn OSDI'96 2.3, 2.5;
// h_send_msg, 3.2): a work queue of transmission requests and a completion
// word the card advances as entries are sent. Small messages are copied
// into the entry (direct I/O); large ones are described by a gather list
// and read from the caller's memory while they are sent (DMA: the buffers
// must stay untouched until the handle says sent). The engine segments each
// message into packets of the card's packet size (header included), each
// carrying slot, metadata index, key, offset, length, delta and metadata
// length, and delivers each one: the receiving interface's work done here,
// in the receiver's card, or a packet in the receiver's inbound FIFO.
//
// Batches (card_config::batch_limit): a message of one packet, up to
// batch_limit bytes, for another process's private memory reached by
// cross-memory attach is copied into its entry and waits there; the engine
// carries out all such waiting entries together, one batch per destination
// (receiving_interface::arrive_batch: every packet checked, one
// process_vm_writev), at the next kick, when the queue is full, or before
// an entry that is not batched (so entries still take effect in order).
// A lone deposit does not come here: the deposit layer carries it out
// within the call itself (deposit::endpoint::put_whole), past the queue.
//
// Private to the sending process (its emulated card engine runs in the same
// process); one terminus per card. Hot path: no allocation, lock or throw.
#pragma once

#include <sys/uio.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "nic/hamlyn/card_view.hpp"
#include "nic/hamlyn/layout.hpp"
#include "nic/hamlyn/receiving_interface.hpp"
#include "nic/hamlyn/ticket.hpp"
#include "sys/status.hpp"

namespace hpam::nic::hamlyn {

// A posted message: its sequence number in the send terminus.
struct send_handle {
  uint64_t sequence = ~0ull;  // ~0 = nothing was posted
};
enum class send_state : uint8_t { pending, sent, error };

constexpr int max_gather = 4;

// A message to send (h_send_msg's arguments).
struct message {
  const iovec* gather = nullptr;   // data, gathered in order (at most max_gather pieces)
  int gather_count = 0;            // pieces
  uint64_t offset = 0;             // destination offset within the ticket's range
  const void* metadata = nullptr;  // user metadata for the metadata entry (first packet)
  uint32_t metadata_length = 0;    // <= user_metadata_bytes
  uint64_t fast_word = 0;          // fast mode: the word written into the notification
};

// One transmission request in the work queue, with the engine's progress.
struct work_entry {
  ticket target;                            // destination, slot, metadata index, key
  uint64_t offset;                          // destination offset of byte 0, from the area base
  uint64_t length;                          // data bytes in the message
  uint64_t fast_word;                       // fast mode: the word for the notification
  uint32_t metadata_length;                 // bytes of user metadata (first packet)
  uint32_t flags;                           // packet flags (kind data | notify)
  std::byte metadata[user_metadata_bytes];  // user metadata, copied at post
  int gather_count;                         // pieces of data
  iovec gather[max_gather];                 // the data (direct I/O: the inline copy)
  uint32_t packets;                         // packets this message takes
  uint32_t counter;                         // the terminus packet counter (2.5)
  uint32_t next_packet;                     // engine progress: packets sent so far
  uint64_t sent;                            // engine progress: data bytes sent so far
  bool two_first;                           // first packet's delta is 2 (avoids a 0 last delta)
  uint8_t batch;                            // batch_state: waits for its batch, or done by it
  uint64_t sequence;                        // position in the work queue
};

// work_entry::batch
enum batch_state : uint8_t {
  batch_none = 0,     // sent by run_entry (not batched, or the kernel refused its batch)
  batch_waiting = 1,  // waits in the queue for its batch
  batch_done = 2,     // carried out by its batch (result recorded)
};

// A fast-mode ticket's destination, found once (send_terminus::fast_route_for).
struct fast_route {
  const card_view* view = nullptr;  // the destination card's view, attached
  bool local = false;               // my own card
  slot* at = nullptr;               // the ticket's slot there (a slot that card has)
  hold_line* line = nullptr;        // my hold line there (receiving_interface::arrival_line)
  // Whether its packets are delivered here (detail::direct_to), decided
  // when the route is found: my own card, a card whose process I may write
  // (cross-memory attach), or a slot in card memory (the AM card's regions).
  // Should the slot be set up again later in process memory the kernel
  // does not let me write, the write fails (system_error, nothing written)
  // and the packet takes the work queue, as a refused direct write did.
  bool direct = false;
};

class send_terminus {
 public:
  // Sized from cfg (work_queue_entries, direct_io_limit, engine_budget,
  // packet_size). Sends to the cards of `views` (indexed by process; a view
  // whose kernel refuses cross-memory writes after all is told so here) and
  // does their receiving interface's work through `receiver`.
  send_terminus(std::vector<card_view>& views, receiving_interface& receiver,
                const card_config& cfg);
  send_terminus(const send_terminus&) = delete;
  send_terminus& operator=(const send_terminus&) = delete;

  // Posts a message to t (h_send_msg) and kicks the card. would_block when
  // the work queue is full; invalid_argument when it exceeds the ticket.
  status send(const ticket& t, const message& m, send_handle& h);
  // h_send_msg for a fast-mode message (OSDI'96 2.7: metadata index all
  // ones, one packet, `word` written into the notification) of `length`
  // bytes at `offset` within the ticket's range: the same checks and effects
  // as send() (a work-queue position and the completion word; the receiving
  // interface's slot, key, range and mode checks, the deposit or inline
  // delivery, packet count and notification), without the work entry, the
  // segmentation or a packet header when the card is idle. ok: sent, or
  // posted behind earlier entries (state(h) tells); otherwise why it was
  // refused (invalid_argument, would_block, or the receiving side's refusal,
  // counted in rejected_sends and in the receiver's card).
  status send_fast(const ticket& t, uint64_t offset, const std::byte* data, uint32_t length,
                   uint64_t word, send_handle& h);
  // The route of fast-mode ticket t, what send_fast finds at every packet
  // and a caller of send_fast_routed finds once: fast mode, a node of
  // the job, its card attached (a view once attached stays so, and views_
  // is sized at setup), a slot that card has; and where the arrival holds
  // the slot (my hold line there, fixed once attached). False: t has no
  // route (not fast mode, its card not attached yet, or no such slot:
  // send refuses it and counts).
  inline bool fast_route_for(const ticket& t, fast_route& r) const;
  // send_fast on a ticket fast_route_for gave route r (the same results and
  // effects); per packet only what can change: the card idle, the range
  // (whether the destination is written directly is the route's: direct).
  status send_fast_routed(const fast_route& r, const ticket& t, uint64_t offset,
                          const std::byte* data, uint32_t length, uint64_t word, send_handle& h);
  // send_fast_routed for a caller that vouches for the range, which then
  // goes unchecked here: offset + length <= t.range and length <=
  // packet_data_bytes() (the AM card: a block of its region at the peer,
  // on the ticket it made for that region, no block longer than a packet
  // carries; checked once at its attach). Per packet the card idle (and
  // the route's direct); the receiving interface's checks (the slot's
  // state, key and bounds) are the same. The caller keeps no handle and needs none: a
  // message delivered at once is no work-queue entry (it takes no
  // sequence, and the completion word, which counts entries, does not
  // move), its outcome the status returned (a refusal also counted in
  // rejected_sends); behind a busy engine it is posted in order as
  // send_fast_routed posts it, and the engine counts a refusal there.
  status send_fast_within(const fast_route& r, const ticket& t, uint64_t offset,
                          const std::byte* data, uint32_t length, uint64_t word);
  uint32_t packet_data_bytes() const { return packet_data_bytes_; }  // data bytes per packet
  send_state state(const send_handle& h, status* error = nullptr) const;
  // The completion word: entries before it (and their buffers) may be reused.
  uint64_t completion_word() const { return completion_.load(std::memory_order_acquire); }
  void kick() {  // the card sends what it can (the engine); cheap when idle
    if (running_ != posted_) run_engine();
  }
  uint64_t rejected_sends() const {
    return rejected_sends_;
  }                                              // messages the receiving side refused
  uint64_t batches() const { return batches_; }  // batches carried out
  uint64_t batched_messages() const { return batched_messages_; }  // messages they carried
  bool holds_batch() const { return waiting_in_batch_ != 0; }      // entries wait for their batch
  bool idle() const { return running_ == posted_ && !holds_batch(); }  // nothing queued

 private:
  struct result {
    uint64_t sequence;  // which entry this result belongs to
    status outcome;     // ok, or why the message was refused
  };
  static constexpr uint32_t results_kept = 1024;  // finished entries whose outcome can be asked

  void run_engine();
  bool batchable(const ticket& t, uint64_t length, uint32_t packets,
                 uint32_t metadata_length) const;
  void run_batches();
  void deposit_batch(uint32_t destination, uint32_t n);
  bool run_entry(work_entry& w, uint32_t& budget);
  status send_fast_posted(const ticket& t, uint64_t offset, const std::byte* data, uint32_t length,
                          uint64_t word, send_handle& h);
  // send_fast past its checks: the arrival done here on v's card.
  status deliver_fast(const fast_route& r, const ticket& t, uint64_t offset, const std::byte* data,
                      uint32_t length, uint64_t word, send_handle& h);
  // One packet of a message to its destination card: arrival done here (card
  // memory, cross-memory attach) or a packet in the destination's inbound FIFO.
  status send_packet(const packet_header& h, const iovec* data, int n, const std::byte* meta,
                     bool& retry);
  void finish(uint64_t sequence, status outcome) {
    results_[sequence % results_kept] = {sequence, outcome};
  }

  std::vector<card_view>& views_;        // the card's views of every card [proc]
  receiving_interface& receiver_;        // does the arrival work of direct deliveries
  std::vector<work_entry> queue_;        // the work queue
  std::vector<std::byte> inline_data_;   // direct I/O copies, direct_io_limit_ per entry
  uint32_t direct_io_limit_;             // bytes copied inline at most
  uint32_t engine_budget_;               // packets per kick (never 0: 0 in the config = all)
  uint32_t packet_data_bytes_;           // data bytes a packet carries (packet size - header)
  uint32_t my_proc_;                     // the source every packet names
  uint32_t nprocs_;                      // processes in the job (valid destinations)
  uint64_t mask_;                        // entries - 1
  uint64_t posted_ = 0;                  // entries posted (tail)
  uint64_t running_ = 0;                 // next entry the engine sends (head)
  std::atomic<uint64_t> completion_{0};  // entries sent (the completion word)
  std::vector<result> results_;          // outcome of finished entries
  uint64_t rejected_sends_ = 0;          // messages the receiving side refused
  uint32_t batch_limit_;                 // batched messages are at most this long (0: none)
  uint32_t waiting_in_batch_ = 0;        // entries in state batch_waiting
  uint64_t batches_ = 0;                 // batches carried out
  uint64_t batched_messages_ = 0;        // messages they carried
  // deposit_batch's scratch (max_batch each when batch_limit_ != 0): the
  // entries of one batch, their packet headers, data and outcomes.
  std::vector<work_entry*> batch_entries_;
  std::vector<packet_header> batch_headers_;
  std::vector<iovec> batch_data_;
  std::vector<status> batch_outcomes_;
};

namespace detail {
// Whether a packet to v's card can be delivered by doing the receiving
// interface's work here: my own card, a card whose process lets me write its
// memory (cross-memory attach), or a slot whose area lies in card memory.
// Otherwise the packet goes into the card's inbound FIFO.
inline bool direct_to(const card_view& v, bool local, uint32_t slot) {
  return local || v.cross_memory ||
         (slot < v.geo.slot_count &&
          v.slots[slot].memory == static_cast<uint32_t>(area_memory::card));
}
}  // namespace detail

// Inline: the send path of every short message (the AM card's packets).
[[gnu::always_inline]] inline status send_terminus::send_fast(const ticket& t, uint64_t offset,
                                                              const std::byte* data,
                                                              uint32_t length, uint64_t word,
                                                              send_handle& h) {
  fast_route r;
  if (__builtin_expect(!fast_route_for(t, r), 0))
    return send_fast_posted(t, offset, data, length, word, h);  // send() refuses it
  return send_fast_routed(r, t, offset, data, length, word, h);
}

[[gnu::always_inline]] inline bool send_terminus::fast_route_for(const ticket& t,
                                                                 fast_route& r) const {
  if (t.metadata_index != fast_index || t.node >= nprocs_ || !views_[t.node].attached) return false;
  const card_view& v = views_[t.node];
  if (t.slot >= v.geo.slot_count) return false;
  r.view = &v;
  r.local = t.node == my_proc_;
  r.at = &v.slots[t.slot];
  r.line = receiver_.arrival_line(v);
  r.direct = detail::direct_to(v, r.local, t.slot);
  return true;
}

// Delivered here when the card is idle and the destination's memory can be
// written directly (the route's direct, as send_packet decides); otherwise (a busy card,
// a range send() refuses), and when the kernel refuses a cross-memory
// write, through the work queue and send_packet.
[[gnu::always_inline]] inline status send_terminus::send_fast_routed(
    const fast_route& r, const ticket& t, uint64_t offset, const std::byte* data, uint32_t length,
    uint64_t word, send_handle& h) {
  if (__builtin_expect(running_ != posted_ || offset > t.range || length > t.range - offset ||
                           length > packet_data_bytes_ || !r.direct,
                       0))
    return send_fast_posted(t, offset, data, length, word, h);
  return deliver_fast(r, t, offset, data, length, word, h);
}

[[gnu::always_inline]] inline status send_terminus::send_fast_within(
    const fast_route& r, const ticket& t, uint64_t offset, const std::byte* data, uint32_t length,
    uint64_t word) {
  if (__builtin_expect(running_ != posted_ || !r.direct, 0)) {
    send_handle posted;  // (the posted entry's, which nobody asks for)
    return send_fast_posted(t, offset, data, length, word, posted);
  }
  const status st = receiver_.arrive_fast_routed(*r.view, *r.at, r.line, t, t.offset + offset, data,
                                                 length, word, r.local);
  if (__builtin_expect(st == status::system_error, 0)) {  // nothing written: the slow path
    send_handle posted;
    return send_fast_posted(t, offset, data, length, word, posted);
  }
  if (__builtin_expect(!is_ok(st), 0)) rejected_sends_++;
  return st;
}

[[gnu::always_inline]] inline status send_terminus::deliver_fast(const fast_route& r,
                                                                 const ticket& t, uint64_t offset,
                                                                 const std::byte* data,
                                                                 uint32_t length, uint64_t word,
                                                                 send_handle& h) {
  const status st = receiver_.arrive_fast_routed(*r.view, *r.at, r.line, t, t.offset + offset, data,
                                                 length, word, r.local);
  if (__builtin_expect(st == status::system_error, 0))  // nothing written: the slow path
    return send_fast_posted(t, offset, data, length, word, h);
  h.sequence = posted_++;
  running_ = posted_;
  if (__builtin_expect(!is_ok(st), 0)) {
    rejected_sends_++;
    finish(h.sequence, st);
  }
  // The completion word: this entry (and the caller's buffer) may be reused.
  completion_.store(running_, std::memory_order_release);
  return st;
}

}  // namespace hpam::nic::hamlyn
