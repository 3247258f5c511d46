// The HPAM protocol's card interface (nic/card.hpp) over the Hamlyn
// interface: the same D-way request-reply protocol runs unchanged on it.
//
// Sender-based memory management: each process's inbound area (card memory)
// is split into one region per sender of per_sender blocks (rx_blocks /
// (P-1), rounded up), each region a fast-mode Hamlyn slot with its own key. A sender alone decides
// which block of its region a packet goes to: launch() takes a block it
// believes free, sends the packet as a single-packet Hamlyn message into it
// (the fast-mode word names the block) and the arrival lands in the
// receiver's notification queue. The region's slot asks for inline delivery
// (card_setup::notify_inline): a packet that short travels in the
// notification entry itself and its block, still lent, is not written, so
// the receiver finds it in the cache lines it polls. receive() takes a
// notification and returns the packet (in place in the entry, which no honest writer reaches
// again before its block is released,
// or in place in the block); release() gives the block back to its sender:
// a sender lends its blocks in turn and the receiver releases its packets
// in the order they arrived, so one count per sender in the receiver's card
// (the given-back line, written by the receiver, read by that sender alone)
// says which blocks are free again. A sender
// with no free block in its region keeps the packet (a reference to its
// outbound block) in its terminus backlog, at most per_sender of them, and
// sends it when the receiver gives a block back (service, or the next
// launch); beyond that the packet is dropped and counted in the receiver's
// card (overflow_drops), as the Medusa card does when RX_FREE is empty, and
// the protocol retransmits it. A count the sender cannot believe (beyond
// the packets it sent, or going back) is refused and counted in
// malformed(); a packet released twice counts once (the receiver's
// malformed()): the sender never writes a block the receiver has not
// released.
//
// Headless packets (card_setup::headless_cells, on a wire without faults
// or CRC, as Medusa's headless cells): launch() does not write a packet's
// wire header, and nobody reads it, because the notification says what it
// would (the length the card deposited, the sender whose region's slot and
// key took it, the receiver whose queue it is in). The packet travels
// whole, its first wire_header_size bytes whatever its block held. The
// fast-mode word says so per packet (hamlyn::headless_word); a carried
// headless packet travels in a compact notification entry (layout.hpp):
// from the entry's first byte, the entry's wrap flag and fields where its
// wire header would be, one cache line fewer than after a full entry's 32
// bytes of fields. The receiver then checks no wire header, and a receiver
// that checks CRCs (a headless packet has none) refuses and counts such a
// word. (A sender's faults are its own wire's: its packets are then never
// headless, and it takes others' headless packets.) A packet in the full form (every packet
// on a wire with faults or CRC, and any a sender deposits by other means)
// has its wire header checked against the notification as before.
//
// Delivered by reference (card_setup::deliver_by_reference, on a wire
// without faults and without CRC, as Medusa's): a packet longer than
// card_setup::by_reference_above, launched the first time, is not copied
// into its block at the receiver. The outbound blocks lie in my card memory
// (their area offset and count published in my inbound header), and the
// packet travels as a fast-mode message of exactly an am_reference (my
// outbound block, the packet's length), carried in the notification entry,
// its word naming the region block it still takes (lent as any packet's,
// so flow control and the given-back count are unchanged) with
// reference_word set. The receiver checks every reference (a receiver that
// checks CRCs takes none; the message carried and exactly an am_reference;
// the block one of the sender's published outbound blocks; the length in
// [wire_header_size, block_size]; the wire header unless headless) and
// hands over the packet in the sender's block, mapping the sender's card
// at its first reference if it never attached it; anything else is refused
// and counted (malformed). The sender's side of the bargain: a block is
// written again only once the destination has taken its packet, which the
// AM protocol gives (a request's block once the request was answered, a
// reply's or an ack's once the next request on its instance came), and a
// further copy (relaunch, a copy the wire made) is always copied into a
// block. A sender sends by reference only to a receiver that says it
// takes references (am_inbound_header::takes_references) and whose region
// slot carries an am_reference in the entry (its inline_limit), both read
// at attach.
//
// Faults (card_setup.faults: drop, duplicate, corrupt, reorder, delay) come
// from the shared seeded wire (nic/wire/wire.hpp), the same as the Medusa
// card's: the wire decides, this card's sink deposits. The sink knows the
// outbound block it was given, so a packet the wire passes through untouched
// goes straight to its region (no search for the block it came from).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "nic/card.hpp"
#include "nic/hamlyn/am_inbound.hpp"
#include "nic/hamlyn/hamlyn_card.hpp"
#include "nic/wire/wire.hpp"
#include "sys/clock.hpp"
#include "sys/ring.hpp"

namespace hpam::nic {

// The purpose in a Hamlyn AM card's segment name (sys::segment_name).
inline constexpr const char* hamlyn_am_segment_purpose = "hamlyn-am";

// The fast-mode word of an AM card's packet: the block (low 32 bits), and
// hamlyn::headless_word (layout.hpp) for a headless packet (its wire header
// not written), which its notification may carry compact.
namespace hamlyn {
// Bit reference_shift: the packet is delivered by reference, the message
// carried in the entry exactly an am_reference.
constexpr uint32_t reference_shift = 33;
constexpr uint64_t reference_word = uint64_t{1} << reference_shift;
struct am_reference {
  uint32_t block;   // the sender's outbound block (below its published outbound_blocks)
  uint32_t length;  // the packet's bytes there, wire header included
};
static_assert(sizeof(am_reference) == 8);
}  // namespace hamlyn

class hamlyn_am_card {
 public:
  // A deliverable packet's source is never me, however its entry was
  // forged: on every path receive() hands one over (hand_over,
  // hand_over_reference) it is the sender whose slot the packet was
  // deposited in, and no slot maps to me (the constructor). The protocol
  // does not check it again (am::endpoint::accept).
  static constexpr bool may_deliver_mine = false;

  explicit hamlyn_am_card(const card_setup& setup);  // creates my card (throws on setup error)
  hamlyn_am_card(const hamlyn_am_card&) = delete;
  hamlyn_am_card& operator=(const hamlyn_am_card&) = delete;

  void attach_peer(int proc);  // maps proc's card (waits up to attach_timeout_ms; throws)
  int my_proc() const { return my_proc_; }
  int nprocs() const { return nprocs_; }
  uint32_t block_size() const { return block_size_; }
  uint32_t tx_blocks() const { return tx_blocks_; }
  std::byte* tx_block(uint32_t b) { return tx_memory_ + size_t{b} * block_size_; }
  bool claim_tx_block(uint32_t& b);
  // The packet's first 16 bytes are the wire header. Inline (below), with
  // the checks, the wire and the send to the destination's slot: a send's
  // only call into the card is none.
  [[gnu::always_inline]] inline void launch(int dest, uint32_t b, uint32_t len);
  // launch() of a packet the protocol built in its own block, whose
  // arguments the caller vouches for instead of the card checking them at
  // every packet: b one of my outbound blocks (claimed at setup), pkt =
  // tx_block(b), wire_header_size <= len <= block_size(), dest < nprocs()
  // (the AM endpoint's requests and replies). dest's card must still be
  // attached, and is checked (a packet to a card not attached, or to mine,
  // is refused and counted in malformed()).
  [[gnu::always_inline]] inline void launch_built(int dest, uint32_t b, std::byte* pkt,
                                                  uint32_t len);
  // A copy sent again (retransmission, reflected reply): now if my region at
  // dest has a free block, else dropped and counted (the protocol sends it
  // again if it is still needed). It never waits in the backlog, so copies
  // cannot take the blocks a first launch needs.
  void relaunch(int dest, uint32_t b, uint32_t len);
  // Inline, as launch: the protocol's receive loop takes a packet without a
  // call; a refused notification's successors out of line.
  [[gnu::always_inline]] inline bool receive(rx_packet& p);
  // An entry at my cursor (or a hole to pass over). Inline, as Medusa's:
  // every poll asks it first, and an idle one asks nothing else; out of
  // line, its call and frame were 7 of an idle progress call's ~176
  // instructions (docs/decisions.md, h32c).
  [[gnu::always_inline]] bool arrival_pending() {
    return hamlyn::notification_waiting(*port_.control, port_.ring, *port_.reader);
  }
  [[gnu::always_inline]] inline void release(const rx_packet& p);
  void service() {  // my processor polls: the heartbeat moves, then send_due()
    card_.beat();
    send_due();
  }
  void send_due() {  // the engine, held packets whose time has come, backlogs; no heartbeat
    card_.terminus().kick();
    if (__builtin_expect(wire_.held() != 0 || backlogged_ != 0, 0)) send_held();
  }

  const wire_counters& wire_stats() const { return wire_.counters(); }
  uint64_t overflow_drops() const { return my_overflow_->load(std::memory_order_relaxed); }
  uint64_t malformed() const { return malformed_; }
  uint64_t by_reference_sends() const { return by_reference_sends_; }
  void announce_done() { card_.announce_done(); }
  bool peer_done(int proc) const { return card_.peer_done(proc); }
  bool peer_alive(int proc) const { return card_.peer_alive(proc); }
  // The job key proc's card publishes (card_setup::job_key), after attaching it.
  uint64_t published_key(int proc);
  sys::process_state peer_process(int proc) const { return card_.peer_process(proc); }
  uint32_t peer_heartbeat(int proc) const { return card_.peer_heartbeat(proc); }

  uint32_t blocks_per_sender() const { return per_sender_; }
  hamlyn::card& hamlyn() { return card_; }

 private:
  // Where the wire delivers: into the destination's inbound slot.
  struct wire_sink {
    hamlyn_am_card* card;            // this card
    const std::byte* own = nullptr;  // my outbound block `block`, as transmitted (null: none)
    uint32_t block = 0;
    bool may_wait = false;  // a packet from `own` may wait in the backlog
    // The packet as transmitted (own block) or a copy the wire made
    // (corrupted, held back): only the first may wait for a free block.
    [[gnu::always_inline]] void deliver(int dest, const std::byte* packet,
                                        uint32_t length) noexcept {
      if (packet == own && may_wait)
        card->send_or_wait(dest, block, packet, length);
      else
        card->send_copy(dest, packet, length);
    }
  };
  struct waiting {
    uint32_t block;   // my outbound block
    uint32_t length;  // bytes
  };
  struct peer_state {
    uint64_t lent = 0;      // packets deposited in my region at the peer (blocks lent, in turn)
    uint64_t returned = 0;  // of them, released by the peer (its count, as last believed)
    uint32_t next = 0;      // lent mod per_sender: the block the next packet goes to
    // A first launch of at most this many bytes goes straight to transmit
    // (send_or_wait): by_reference_above, or 0 while packets wait in the
    // backlog or before the peer's card is attached, so that one compare
    // stands for the three tests.
    uint32_t send_now_up_to = 0;
    // Packets longer than this go to the peer by reference (~0u: none).
    uint32_t by_reference_above = ~0u;
    std::vector<waiting> backlog;               // packets waiting for a free block (FIFO, bounded)
    size_t backlog_head = 0;                    // first waiting entry
    std::atomic<uint64_t>* overflow = nullptr;  // the peer's count of packets dropped for it
    const std::atomic<uint64_t>* given_back = nullptr;  // the peer's count of mine it released
    hamlyn::ticket ticket;                              // my region at the peer (fast mode, notify)
    hamlyn::fast_route route;                           // the ticket's, found at attach
    // The peer's outbound blocks, in its card memory (null: not attached).
    const std::byte* outbound = nullptr;
    uint32_t outbound_blocks = 0;
  };
  // Per sender, in my own memory: its packets I handed over and released.
  struct sender_count {
    uint64_t taken = 0;
    uint64_t released = 0;
  };

  inline void transmit_block(int dest, uint32_t b, uint32_t len, bool may_wait);
  // transmit_block past its checks: the wire header and the wire.
  inline void transmit_built(int dest, uint32_t b, std::byte* pkt, uint32_t len, bool may_wait);
  // transmit_built on a wire with faults (out of line).
  void transmit_faulty(int dest, uint32_t b, std::byte* pkt, uint32_t len, bool may_wait);
  inline bool transmit(int dest, const std::byte* data, uint32_t len);
  bool transmit_reference(int dest, uint32_t block, uint32_t len);
  bool transmit_first(int dest, uint32_t block, uint32_t len);
  void send_or_wait_other(int dest, uint32_t block, uint32_t len);
  // dest's card not attached (or mine): counted malformed, true (refuse).
  bool refused_unattached(int dest) noexcept;
  // (n by value: the usual take's notification stays out of memory.)
  bool hand_over_reference(hamlyn::notification n, const std::byte* carried, rx_packet& p);
  bool map_outbound(int proc) noexcept;
  void note_outbound(int proc, const hamlyn::card_view& v, const hamlyn::am_inbound_header& in);
  inline void send_or_wait(int dest, uint32_t block, const std::byte* packet, uint32_t len);
  void send_held();
  inline bool hand_over(const hamlyn::notification& n, const std::byte* carried, rx_packet& p);
  [[gnu::cold]] bool receive_after_refusal(rx_packet& p);
  // step(q), an out-of-line path, into a packet of its own, copied to p
  // when it hands one over: no call sees p, so the caller's packet stays
  // in registers (else GCC stores its fields to the frame for the usual
  // path too).
  template <class Step>
  [[gnu::always_inline]] static bool out_of_line_into(rx_packet& p, Step&& step) {
    rx_packet q;
    if (!step(q)) return false;
    p = q;
    return true;
  }
  void wait_or_drop(int dest, uint32_t block, uint32_t len);
  void send_copy(int dest, const std::byte* packet, uint32_t len);
  bool flush_backlog(int dest);
  bool refill(peer_state& ps);
  void overflow(int dest);
  uint64_t region_bytes() const { return uint64_t{per_sender_} * block_size_; }
  uint64_t given_back_offset(int sender) const {  // from the inbound area's start
    return layout_.given_back + sizeof(hamlyn::am_given_back) * static_cast<uint64_t>(sender);
  }
  uint32_t create_sender_slot(uint64_t region);
  hamlyn::am_inbound_header expected_header(uint64_t at) const;
  uint64_t peer_inbound(int proc, const hamlyn::card_view& v, hamlyn::am_inbound_header& h) const;

  int my_proc_;
  int nprocs_;
  uint32_t block_size_;
  bool crc_;
  // My packets' word for headless packets: hamlyn::headless_word where
  // they are headless (card_setup::headless_cells, no faults, no CRC), else 0.
  uint64_t headless_bits_;
  // The words I take: the headless bit kept only where I take headless
  // packets (no CRC to check); elsewhere it leaves the block out of range.
  uint64_t word_mask_;
  // Packets longer than this go by reference where the peer takes them
  // (~0u: none; deliver_by_reference, no faults, no CRC).
  uint32_t by_reference_above_;
  sys::clock own_clock_;
  const sys::clock* clock_;
  uint64_t attach_timeout_ms_;
  uint32_t notify_inline_;            // my regions' slots carry packets this short in the entry
  uint32_t per_sender_ = 0;           // inbound blocks each sender owns here
  hamlyn::am_inbound_layout layout_;  // my inbound area, and every peer's
  hamlyn::card card_;
  // My notification queue 0, where every packet for me is notified: taken
  // directly, without the receiving interface's inbound FIFO (no sender
  // uses it here: the regions lie in card memory, so every sender deposits
  // itself; a packet pushed into it anyway is never served).
  hamlyn::receiving_interface::reader_port port_;
  std::vector<uint32_t> sender_slot_;  // [sender]: my slot over its region (~0u: none, me)
  std::vector<uint32_t> slot_sender_;  // [slot]: the sender whose region it is (~0u: none)
  uint32_t slot_senders_ = 0;          // its size (slots of my card)
  std::byte* my_area_ = nullptr;       // my inbound area (am_inbound.hpp), header first
  std::byte* inbound_ = nullptr;       // its regions
  hamlyn::am_given_back* given_back_ = nullptr;  // [sender]: the counts I write
  std::unique_ptr<sender_count[]> counts_;       // [sender]
  wire wire_;                                    // the seeded fault model between cards
  std::byte* tx_memory_ = nullptr;               // my outbound blocks, in my card memory
  uint64_t tx_at_ = 0;                           // their area offset
  uint32_t tx_blocks_ = 0;                       // outbound blocks
  std::vector<uint32_t> tx_free_;                // outbound blocks not yet claimed
  std::vector<peer_state> peers_;
  uint32_t backlogged_ = 0;  // peers with packets waiting in their backlog
  std::atomic<uint64_t>* my_overflow_ =
      nullptr;  // packets senders dropped for want of a block here
  uint64_t malformed_ = 0;
  uint64_t by_reference_sends_ = 0;
};

// ---- hot path (inline: the protocol's send reaches the destination's slot
// without a call) ----------------------------------------------------------

// The checks, the wire header, and the wire (inline into launch and
// relaunch); the wire hands the packet to send_or_wait (one call) or, when
// it made a copy, sends that without waiting.
[[gnu::always_inline]] inline void hamlyn_am_card::transmit_block(int dest, uint32_t b,
                                                                  uint32_t len, bool may_wait) {
  // (Unsigned compares: dest in [0, nprocs), len in [wire_header_size,
  // block_size]; my own entry has no given-back count.)
  if (static_cast<uint32_t>(dest) >= static_cast<uint32_t>(nprocs_) || b >= tx_blocks_ ||
      len - wire_header_size > block_size_ - wire_header_size || !peers_[dest].given_back) {
    malformed_++;
    return;
  }
  transmit_built(dest, b, tx_block(b), len, may_wait);
}

[[gnu::always_inline]] inline void hamlyn_am_card::transmit_built(int dest, uint32_t b,
                                                                  std::byte* pkt, uint32_t len,
                                                                  bool may_wait) {
  // A headless packet's wire header is not written: the clean wire hands
  // the packet straight to transmit (no faults: no copy, nothing held), and
  // its notification says what the header would. Packets are headless
  // only on a wire without faults (headless_bits_, decided at setup), so
  // that one test stands for both; a wire with faults goes out of line.
  if (__builtin_expect(headless_bits_ == 0, 0)) {
    stamp_wire_header(pkt, len, my_proc_, dest, crc_);
    if (__builtin_expect(wire_.faulty(), 0)) {
      transmit_faulty(dest, b, pkt, len, may_wait);
      return;
    }
  }
  // The clean wire hands the packet to the sink at once: the sink, passed
  // by reference only on the faulty wire (out of line), is not built in
  // memory here (it was: four stores a packet).
  wire_sink sink{this, pkt, b, may_wait};
  wire_.transmit_clean(sink, dest, pkt, len);
}

[[gnu::always_inline]] inline void hamlyn_am_card::launch(int dest, uint32_t b, uint32_t len) {
  transmit_block(dest, b, len, true);
}

[[gnu::always_inline]] inline void hamlyn_am_card::launch_built(int dest, uint32_t b,
                                                                std::byte* pkt, uint32_t len) {
  // Whether dest's card is attached (and is not mine) is not tested here:
  // on a clean wire send_or_wait's one compare fails for such a dest
  // (send_now_up_to stays 0 until attach_peer) and send_or_wait_other
  // refuses it (counted); a faulty wire, which may hold the packet, checks
  // before it (transmit_faulty).
  transmit_built(dest, b, pkt, len, true);
}

// Sends now when my region at dest has a free block and nothing is waiting
// before this packet; otherwise the packet waits in the backlog (or, when
// that is full, is dropped). A packet that goes by reference takes the
// same way out of line (send_or_wait_other).
[[gnu::always_inline]] inline void hamlyn_am_card::send_or_wait(int dest, uint32_t block,
                                                                const std::byte* packet,
                                                                uint32_t len) {
  const peer_state& ps = peers_[dest];
  if (__builtin_expect(len <= ps.send_now_up_to, 1) && transmit(dest, packet, len)) return;
  send_or_wait_other(dest, block, len);
}

// One packet (len <= block_size_: launch checks it, launch_built's callers
// vouch for it, and the wire's copies are no longer) into a block of my
// region at dest: a single-packet fast-mode Hamlyn message whose word
// names the block (and, headless, says so), on the block's ticket.
[[gnu::always_inline]] inline bool hamlyn_am_card::transmit(int dest, const std::byte* data,
                                                            uint32_t len) {
  peer_state& ps = peers_[dest];
  if (ps.lent - ps.returned >= per_sender_ && !refill(ps)) return false;
  const uint32_t blk = ps.next;
  // (Block blk lies within the ticket's range, and block_size_ <= the
  // card's packet data: checked at attach.)
  if (!is_ok(card_.terminus().send_fast_within(ps.route, ps.ticket, uint64_t{blk} * block_size_,
                                               data, len, blk | headless_bits_))) {
    malformed_++;  // refused by the receiving interface (revoked or wrong key): lost
    return true;
  }
  ps.lent++;
  ps.next = blk + 1 == per_sender_ ? 0 : blk + 1;
  return true;
}

// The packet's source is the sender whose region (slot) it was deposited
// in: the slot's key is that sender's alone. The notification's own source
// word must agree with it, and so must the packet's wire header unless the
// word says the packet is headless (where I take that form); otherwise the
// packet is refused. The wire header's address (length, source,
// destination) is read once, as one word. A headless packet's address is
// the notification's: the length the card deposited, the region's sender,
// and me; its header's bytes are not read. False (counted): a forged or
// damaged notification, nothing to hand over.
[[gnu::always_inline]] inline bool hamlyn_am_card::hand_over(const hamlyn::notification& n,
                                                             const std::byte* carried,
                                                             rx_packet& p) {
  // (Any bit beyond the block's, but the headless bit where I take it,
  // leaves blk out of range.)
  const uint64_t blk = n.metadata & word_mask_;
  // (A slot of no sender maps to ~0u, which no 16-bit source equals; the
  // length in [wire_header_size, block_size] by one unsigned compare.)
  const uint32_t sender = n.slot < slot_senders_ ? slot_sender_[n.slot] : ~0u;
  if (__builtin_expect(n.source != sender || n.metadata_index != hamlyn::fast_index ||
                           blk >= per_sender_ ||
                           n.length - wire_header_size > block_size_ - wire_header_size,
                       0)) {
    // (Or refused and counted.)
    return out_of_line_into(p, [&](rx_packet& q) { return hand_over_reference(n, carried, q); });
  }
  counts_[sender].taken++;
  p.block = static_cast<uint32_t>(sender * per_sender_ + blk);
  p.length = static_cast<uint32_t>(n.length);
  // Inline delivery: the packet lies in its entry (n.length <=
  // notify_inline_, the entry's room), which no honest writer reaches again before
  // this packet's block comes back (release()); otherwise in its block.
  p.data = n.carried ? carried : inbound_ + size_t{p.block} * block_size_;
  p.src = static_cast<uint16_t>(sender);
  p.rejected = false;
  p.crc_ok = true;
  // A headless packet (the word's headless bit, which word_mask_ keeps only
  // where no CRC is checked) has no header to check and no CRC: nothing more.
  if (n.metadata != blk) return true;
  if (__builtin_expect(crc_, 0)) {
    uint32_t sum;
    std::memcpy(&sum, p.data + offsetof(wire_header, crc), sizeof sum);
    p.crc_ok = sum == wire_crc(p.data, p.length);
  }
  if (__builtin_expect(
          p.crc_ok && read_wire_address(p.data) !=
                          wire_address(p.length, sender, static_cast<uint32_t>(my_proc_)),
          0)) {
    malformed_++;
    p.crc_ok = false;
    p.rejected = true;
  }
  return true;
}

// The usual take inline, its notification never in memory; the walk's
// cases (holes, entries claimed, damaged or malformed) and a refused
// notification's successors out of line.
[[gnu::always_inline]] inline bool hamlyn_am_card::receive(rx_packet& p) {
  hamlyn::notification n;
  const std::byte* carried = nullptr;
  switch (hamlyn::notification_take_in_place_usual(*port_.control, port_.ring, *port_.reader, n,
                                                   carried)) {
    case hamlyn::take_outcome::taken:
      if (hand_over(n, carried, p)) return true;
      break;
    case hamlyn::take_outcome::nothing:
      return false;
    case hamlyn::take_outcome::other:
      break;
  }
  return out_of_line_into(p, [this](rx_packet& q) { return receive_after_refusal(q); });
}

// One more of the sender's (p.src, as receive() found it) packets
// released: its count in my card moves, which tells the sender the block is
// free again. A sender I hold no packet of (a packet released twice, or a
// source out of range) changes nothing (counted).
[[gnu::always_inline]] inline void hamlyn_am_card::release(const rx_packet& p) {
  const uint32_t sender = p.src;
  if (__builtin_expect(sender >= static_cast<uint32_t>(nprocs_) ||
                           counts_[sender].released == counts_[sender].taken,
                       0)) {
    malformed_++;
    return;
  }
  given_back_[sender].count.store(++counts_[sender].released, std::memory_order_release);
}

}  // namespace hpam::nic
