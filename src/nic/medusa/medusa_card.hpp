// The emulated Medusa FDDI card (HPAM 5.1): card memory in a shared segment
// (card_memory.hpp), four FIFOs of <block, length> entries controlling block
// ownership, and a card engine that runs synchronously in the sender's
// process: it moves each launched packet over the wire (wire.hpp) into a
// cell it claims on the destination card's RX_READY — a packet that fits
// there is written into the cell, a longer one into a block popped from
// the destination's RX_FREE (card_memory.hpp), or left in the sender's
// block when delivered by reference (card_setup::deliver_by_reference) —
// and publishes the cell.
// Provides the card interface of nic/card.hpp.
//
// Hot path (launch, receive, release, service): inline, no allocation,
// system call, lock, exception or logging. Bad entries and packets are
// rejected and counted in malformed(), never trusted.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "nic/card.hpp"
#include "nic/medusa/card_memory.hpp"
#include "nic/wire/wire.hpp"
#include "sys/cell_fifo.hpp"
#include "sys/crc32c.hpp"
#include "sys/process_state.hpp"
#include "sys/ring.hpp"
#include "sys/shared_segment.hpp"

namespace hpam::nic {

// The purpose in a Medusa card's segment name (sys::segment_name).
inline constexpr const char* medusa_segment_purpose = "medusa";

class medusa_card {
 public:
  // rx_packet::block of a packet with no block: carried in its RX_READY
  // cell, a void entry, or an entry whose block number was out of range.
  static constexpr uint32_t no_block = 0xffffffffu;
  // A packet of at most this many bytes (an 8-byte MPI message is 72) is
  // copied into its RX_READY cell as this many bytes, in constant moves,
  // when the cell holds them and every packet source (a block, the wire's
  // buffers) has them to read (short_copy_up_to_).
  static constexpr uint32_t short_packet = 112;
  // A deliverable packet's source may be me: an RX_READY cell written by
  // hand may name me, so the protocol checks it (am::endpoint::accept).
  static constexpr bool may_deliver_mine = true;

  // Creates this process's card (throws std::invalid_argument on a bad setup,
  // std::runtime_error / std::system_error if the segment cannot be made).
  explicit medusa_card(const card_setup& setup);
  ~medusa_card();
  medusa_card(const medusa_card&) = delete;
  medusa_card& operator=(const medusa_card&) = delete;

  // Maps proc's card, waiting up to attach_timeout_ms; throws a
  // std::runtime_error naming the peer on timeout or an incompatible card.
  void attach_peer(int proc);
  bool attached(int proc) const noexcept {
    return proc >= 0 && proc < nprocs_ && peers_[proc].vram != nullptr;
  }

  int my_proc() const noexcept { return my_proc_; }
  int nprocs() const noexcept { return nprocs_; }
  uint32_t block_size() const noexcept { return block_size_; }
  uint32_t tx_blocks() const noexcept { return tx_blocks_; }
  uint32_t rx_blocks() const noexcept { return rx_blocks_; }
  // Packets of at most this many bytes travel in the RX_READY cell.
  uint32_t inline_bytes() const noexcept { return rx_ready_.inline_bytes(); }

  // Setup: takes a block from TX_FREE for a descriptor to own for the run.
  bool claim_tx_block(uint32_t& b);
  std::byte* tx_block(uint32_t b) noexcept { return vram_ + static_cast<size_t>(b) * block_size_; }

  // Sends the packet built in block b (bytes after the wire header) to dest.
  // The card fills the wire header, pushes <b, len> on TX_READY, the engine
  // transmits it and returns b on TX_FREE, which is drained here: when launch
  // returns, b belongs to the processor again. An idle engine (TX_READY
  // empty, card_setup::direct_tx) takes the block at once instead: the
  // entry would be popped as soon as pushed and the block returned as soon
  // as sent, so the push and both pops are skipped (counted in direct_sends()).
  [[gnu::always_inline]] void launch(int dest, uint32_t b, uint32_t len) noexcept {
    launch_as(dest, b, len, by_reference_);
  }
  // launch() of a packet the protocol built in its own block, whose
  // arguments the caller vouches for instead of the card checking them at
  // every packet: b one of my outbound blocks (claimed at setup), pkt =
  // tx_block(b), wire_header_size <= len <= block_size(), dest < nprocs().
  // The AM endpoint's requests and replies: a descriptor's block is fixed at
  // setup, the length bounded by max_bulk() and the trailer's room, the
  // destination checked by check_send.
  [[gnu::always_inline]] void launch_built(int dest, uint32_t b, std::byte* pkt,
                                           uint32_t len) noexcept {
    send_built(dest, b, pkt, len, by_reference_);
  }
  // A copy sent again: as launch, but never by reference (an entry naming
  // the block for its first copy may still wait unread when the sender,
  // answered through this copy, writes the block again): copied into a
  // block of dest's (a full RX_READY or an empty RX_FREE drops it anyway).
  void relaunch(int dest, uint32_t b, uint32_t len) noexcept { launch_as(dest, b, len, false); }
  // The processor's half of a send as the paper has it: push <b, len> on
  // TX_READY and let the engine transmit the block as written, wire header
  // included (launch writes that header first). Whatever the header says,
  // the engine stamps its own process as the source of what it delivers.
  void transmit_block(uint32_t b, uint32_t len) noexcept { transmit_as(b, len, by_reference_); }

  // Pops RX_READY. crc_ok is false when the CRC failed or the entry/header was
  // malformed, or the entry is void (then rejected is true too); then the
  // packet must not be processed, only released. src comes from the entry
  // (see card_memory.hpp). A packet that came inline lies in its RX_READY
  // cell (block no_block), which stays the processor's until release.
  // Inline as far as a headless cell (a clean wire's short packet); every
  // other form of entry is taken out of line (receive_entry).
  [[gnu::always_inline]] bool receive(rx_packet& p) noexcept;
  // Whether receive() would find a packet (one load); while it would not,
  // the RX_READY cell the next packet comes in starts being fetched.
  bool arrival_pending() const noexcept {
    uint64_t e;
    if (rx_ready_.ready(rx_cursor_, e)) return true;
    rx_ready_.prefetch_second_line(rx_cursor_);
    return false;
  }
  // Gives the packet's RX_READY cell, and its block if it has one, back to
  // the card (the block is pushed on RX_FREE). Every received packet is
  // released once.
  void release(const rx_packet& p) noexcept;
  // The processor polls: the heartbeat advances, then send_due().
  void service() noexcept {
    header_->heartbeat.store(++beats_, std::memory_order_relaxed);
    send_due();
  }
  // Delivers packets the wire held back whose time has come (no heartbeat:
  // a walk of the timeouts by a processor busy elsewhere is not a poll).
  void send_due() noexcept {
    engine_sink sink{*this, false};
    wire_.service(sink);
  }
  // Delivers every held packet now (tests, shutdown).
  void flush_wire() noexcept {
    engine_sink sink{*this, false};
    wire_.flush(sink);
  }

  // Finalize handshake: my processor has finished; has proc's? Is it alive?
  void announce_done() noexcept { header_->processor_done.store(1, std::memory_order_release); }
  bool peer_done(int proc) const noexcept {
    return attached(proc) &&
           peers_[proc].header->processor_done.load(std::memory_order_acquire) != 0;
  }
  bool peer_alive(int proc) const noexcept;
  // The job key proc's card publishes (card_setup::job_key), after attaching it.
  uint64_t published_key(int proc) {
    attach_peer(proc);
    return peers_[proc].header->job_key;
  }
  // Liveness of a silent peer (cold path: system calls): what the kernel
  // says of its process, and how often it has polled.
  sys::process_state peer_process(int proc) const noexcept;
  uint32_t peer_heartbeat(int proc) const noexcept {  // modulo 2^32
    return attached(proc) ? static_cast<uint32_t>(
                                peers_[proc].header->heartbeat.load(std::memory_order_relaxed))
                          : 0;
  }

  // What the wire did to packets this card sent.
  const wire_counters& wire_stats() const noexcept { return wire_.counters(); }
  // Packets dropped at this card: no free RX_READY cell, or RX_FREE empty
  // for a packet that needs a block (each such drop is a void entry here).
  uint64_t overflow_drops() const noexcept {
    return header_->overflow_drops.load(std::memory_order_relaxed);
  }
  // Entries and packets this card rejected (bad block/length in a FIFO entry,
  // bad launch arguments, a wire header naming another destination; not a
  // void entry, whose drop the sender counted in overflow_drops).
  uint64_t malformed() const noexcept { return malformed_; }
  // Packets launch() handed to an idle engine without the TX FIFOs.
  uint64_t direct_sends() const noexcept { return direct_sends_; }
  // Packets this card delivered by reference (left in their outbound block).
  uint64_t by_reference_sends() const noexcept { return by_reference_sends_; }
  bool delivers_by_reference() const noexcept { return by_reference_; }
  // Received packets whose CRC did not match.
  uint64_t crc_failures() const noexcept { return crc_failures_; }
  // Packets held back on the wire right now.
  uint32_t held_on_wire() const noexcept { return wire_.held(); }

  // Test access to the card memory (forging entries, inspecting FIFOs).
  medusa::card_header& header() noexcept { return *header_; }
  sys::cell_fifo& rx_ready_fifo() noexcept { return rx_ready_; }
  sys::mpmc_fifo& rx_free_fifo() noexcept { return *rx_free_; }
  sys::spsc_fifo& tx_free_fifo() noexcept { return *tx_free_; }
  sys::spsc_fifo& tx_ready_fifo() noexcept { return *tx_ready_; }

 private:
  // This process's view of a card it sends to (its own included).
  struct peer_view {
    sys::shared_segment segment;            // the mapping (empty for my own card)
    medusa::card_header* header = nullptr;  // the peer's card header
    sys::mpmc_fifo* rx_free = nullptr;      // its RX_FREE
    sys::cell_fifo rx_ready;                // its RX_READY (geometry checked at attach)
    std::byte* vram = nullptr;              // its block 0; null until attached
    uint32_t first_rx_block = 0;            // its tx_blocks, checked at attach
    uint32_t rx_blocks = 0;                 // its rx_blocks, checked at attach
  };

  // Where the wire delivers: the card engine's receive side.
  // `refer`: a packet longer than a cell may be delivered by reference (a
  // first copy, by_reference_); a relaunch and a held packet never are.
  struct engine_sink {
    medusa_card& card;
    bool refer;
    [[gnu::always_inline]] void deliver(int dest, const std::byte* packet,
                                        uint32_t length) noexcept {
      card.deliver(dest, packet, length, refer);
    }
  };

  // Lays out my card in the new segment (l: its layout for rx_ready_cell).
  void init_memory(const medusa::card_layout& l, uint32_t rx_ready_cell);
  void view_card(peer_view& v, std::byte* base) noexcept;
  [[gnu::always_inline]] inline void launch_as(int dest, uint32_t b, uint32_t len,
                                               bool refer) noexcept;
  // launch_as past its checks: the wire header where it is read, then the
  // idle engine's step or TX_READY.
  [[gnu::always_inline]] inline void send_built(int dest, uint32_t b, std::byte* pkt, uint32_t len,
                                                bool refer) noexcept;
  void transmit_as(uint32_t b, uint32_t len, bool refer) noexcept;
  void run_tx_engine(bool refer) noexcept;
  // The engine's step for one packet to dest (< nprocs): onto the wire, or
  // counted malformed when dest's card is not mapped here. `refer` as in
  // engine_sink.
  void engine_send(int dest, const std::byte* packet, uint32_t length, bool refer) noexcept;
  void deliver(int dest, const std::byte* packet, uint32_t length, bool refer) noexcept;
  // deliver's part for a packet in its cell without its wire header
  // (headless_): the packet's `copy` first bytes but the header, in place.
  [[gnu::always_inline]] void deliver_headless(peer_view& p, std::byte* cell, uint64_t pos,
                                               const std::byte* packet, uint32_t copy,
                                               uint32_t length) noexcept {
    std::memcpy(cell + wire_header_size, packet + wire_header_size, copy - wire_header_size);
    p.rx_ready.publish(cell, pos, headless_entry_ | length);
  }
  // deliver's part for a packet longer than a cell: a block from RX_FREE,
  // or the claimed cell published void (out of line: its copy dwarfs a call).
  [[gnu::noinline]] void deliver_in_block(peer_view& p, std::byte* cell, uint64_t pos,
                                          const std::byte* packet, uint32_t length) noexcept;
  // The packet in proc's outbound block b, which an RX_READY entry of proc's
  // names (delivered by reference), or null when b is not one of proc's
  // outbound blocks or proc's card cannot be mapped.
  const std::byte* sender_block(uint32_t proc, uint32_t b) noexcept;
  [[gnu::cold, gnu::noinline]] bool attach_to_read(uint32_t proc) noexcept;
  void attach_within(int proc, uint64_t timeout_ms);  // attach_peer, waiting at most timeout_ms
  void receive_entry(rx_packet& p, const std::byte* cell, uint64_t e) noexcept;  // out of line
  bool packet_ok(rx_packet& p, uint32_t src) noexcept;
  [[gnu::cold, gnu::noinline]] void reject_entry(rx_packet& p, uint64_t entry) noexcept;
  [[gnu::cold, gnu::noinline]] void refuse_rx_free_entry(peer_view& p) noexcept;
  [[gnu::cold, gnu::noinline]] void release_out_of_order(uint64_t position,
                                                         uint32_t block) noexcept;
  void give_back_block(uint32_t b) noexcept;
  [[gnu::cold, gnu::noinline]] void reconcile_tx_free(uint32_t b, uint32_t first) noexcept;

  int my_proc_;
  int nprocs_;
  uint32_t block_size_;
  uint32_t tx_blocks_;
  uint32_t rx_blocks_;
  bool crc_;
  bool direct_tx_;
  bool by_reference_;     // deliver_by_reference, on a wire without faults
  bool headless_;         // headless_cells, on a wire without faults or CRC
  uint32_t block_shift_;  // log2(block_size_)
  // Packets up to this length are copied into their cell as short_packet
  // bytes: short_packet when cells hold that many and blocks are at least
  // that long, else 0 (none: a packet is at least a wire header). Decided
  // at setup, one compare a packet.
  uint32_t short_copy_up_to_;
  // A packet launched to an idle engine with at most this many bytes
  // travels headless in its cell (the whole rx_ready_cell when headless_,
  // the cell's head standing where the wire header was; else 0): nothing
  // reads its wire header, so launch does not write it. Decided at setup,
  // one compare a packet.
  uint32_t headless_up_to_;
  medusa::length_range packet_lengths_;  // what a packet may be: [wire_header_size, block_size]
  // The lengths an RX_READY entry may give a packet in its cell, and one in
  // a block: [wire_header_size, inline_bytes()] and the rest up to a block.
  medusa::length_range cell_lengths_;
  medusa::length_range block_lengths_;
  // The lengths a headless entry may give ([wire_header_size,
  // rx_ready_cell]: the whole cell), none when I check CRCs: a sender whose
  // packets carry one never leaves the header out.
  medusa::length_range headless_lengths_;
  uint64_t cell_entry_;      // entry of a packet of mine in a cell, but its length (the void entry)
  uint64_t headless_entry_;  // the same, its wire header left out
  uint64_t attach_timeout_ms_;
  uint64_t job_key_;
  std::string job_;
  sys::shared_segment segment_;
  medusa::card_header* header_ = nullptr;
  sys::spsc_fifo* tx_ready_ = nullptr;
  sys::spsc_fifo* tx_free_ = nullptr;
  sys::mpmc_fifo* rx_free_ = nullptr;
  sys::token_return rx_free_return_;   // blocks whose RX_FREE cell a sender still holds
  sys::cell_fifo rx_ready_;            // my RX_READY
  uint64_t rx_cursor_ = 0;             // next RX_READY position to pop (mine alone)
  uint64_t rx_freed_ = 0;              // next RX_READY position to give back
  std::vector<uint64_t> rx_released_;  // [position % capacity]: released early, not yet
                                       // given back: 2^32 | its block (0: not released)
  std::byte* vram_ = nullptr;
  std::vector<peer_view> peers_;              // indexed by process, sized at setup
  std::vector<uint32_t> spare_tx_;            // unclaimed tx blocks taken off TX_FREE
  std::unique_ptr<std::byte[]> null_packet_;  // zeroed; data of a rejected entry
  wire wire_;
  uint64_t malformed_ = 0;
  uint64_t crc_failures_ = 0;
  uint64_t direct_sends_ = 0;
  uint64_t by_reference_sends_ = 0;
  uint64_t beats_ = 0;  // my heartbeat, mirrored in header_->heartbeat
};

// ---- hot path ------------------------------------------------------------

inline void medusa_card::launch_as(int dest, uint32_t b, uint32_t len, bool refer) noexcept {
  if (__builtin_expect(b >= tx_blocks_ || !packet_lengths_.holds(len) ||
                           static_cast<unsigned>(dest) >= static_cast<unsigned>(nprocs_),
                       0)) {
    ++malformed_;
    return;
  }
  send_built(dest, b, tx_block(b), len, refer);
}

inline void medusa_card::send_built(int dest, uint32_t b, std::byte* pkt, uint32_t len,
                                    bool refer) noexcept {
  // (The block's address computed once, by the caller: the header's store
  // below could alias the fields it is computed from.)
  if (__builtin_expect(direct_tx_ && tx_ready_->empty(), 1)) {
    // The idle engine's step for this one entry (run_tx_engine), b never
    // leaving the processor: it is transmitted before launch returns. A
    // packet its cell carries headless needs no wire header: the clean wire
    // hands it straight to deliver, which copies what follows the header,
    // and its entry says what the header would (length, source). Any other
    // packet (by reference, in a block, or through TX_READY below, whose
    // engine reads the destination there) has its header written.
    if (__builtin_expect(len > headless_up_to_, 0))
      stamp_wire_header(pkt, len, my_proc_, dest, crc_);
    ++direct_sends_;
    engine_send(dest, pkt, len, refer);
    return;
  }
  stamp_wire_header(pkt, len, my_proc_, dest, crc_);
  transmit_as(b, len, refer);
}

inline void medusa_card::transmit_as(uint32_t b, uint32_t len, bool refer) noexcept {
  // Always room: TX_READY holds every tx block and is emptied below.
  (void)tx_ready_->push(medusa::encode_entry(b, len));
  run_tx_engine(refer);
  // "Service": the processor takes the transmitted block back from TX_FREE.
  uint64_t done;
  const bool got = tx_free_->pop(done);
  if (__builtin_expect(!got || medusa::entry_block(done) != b, 0))
    reconcile_tx_free(b, got ? medusa::entry_block(done) : no_block);
}

inline void medusa_card::run_tx_engine(bool refer) noexcept {
  uint64_t e;
  while (tx_ready_->pop(e)) {
    const uint32_t b = medusa::entry_block(e);
    const uint32_t len = medusa::entry_length(e);
    if (b < tx_blocks_ && packet_lengths_.holds(len)) {
      const std::byte* pkt = tx_block(b);
      uint16_t dst;
      std::memcpy(&dst, pkt + offsetof(wire_header, dst), sizeof dst);
      // The card reads the destination address from the packet, like the FDDI header.
      if (dst < nprocs_)
        engine_send(dst, pkt, len, refer);
      else
        ++malformed_;
    } else {
      ++malformed_;
    }
    // Transmitted: the VRAM is unchanged, the block goes to TX_FREE.
    (void)tx_free_->push(medusa::encode_entry(b, len));
  }
}

// dest is an int, as deliver's: the peer's view is found once for both
// (an unsigned index here and a signed one there were two computations).
// The sink is made on each side of the wire's test: on the clean wire its
// address is never taken (transmit's faulty branch folds away), so it is
// not built in memory at every send.
[[gnu::always_inline]] inline void medusa_card::engine_send(int dest, const std::byte* packet,
                                                            uint32_t length, bool refer) noexcept {
  if (__builtin_expect(peers_[dest].vram == nullptr, 0)) {
    ++malformed_;
    return;
  }
  if (__builtin_expect(!wire_.faulty(), 1)) {
    engine_sink sink{*this, refer};
    wire_.transmit(sink, dest, packet, length);
  } else {
    engine_sink sink{*this, refer};
    wire_.transmit(sink, dest, packet, length);
  }
}

// Inline into the engine's step: a packet's only call on the way out. The
// cell first, checked (its lap stamp: the processor may still hold the
// cell of the previous lap, having popped it but not released it); a
// packet that fits travels in it and takes no block.
[[gnu::always_inline]] inline void medusa_card::deliver(int dest, const std::byte* packet,
                                                        uint32_t length, bool refer) noexcept {
  peer_view& p = peers_[dest];
  uint64_t pos;
  std::byte* cell = p.rx_ready.claim(pos);
  if (__builtin_expect(!cell, 0)) {
    p.header->overflow_drops.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  static_assert(sys::cell_fifo::head_bytes == wire_header_size);  // the head stands in its place
  if (__builtin_expect(length <= short_copy_up_to_, 1)) {
    if (__builtin_expect(headless_, 1))
      return deliver_headless(p, cell, pos, packet, short_packet, length);  // constant moves
    std::memcpy(cell + sys::cell_fifo::head_bytes, packet, short_packet);
  } else if (length <= headless_up_to_) {
    // The whole cell: its head stands where the wire header was.
    return deliver_headless(p, cell, pos, packet, length, length);
  } else if (length <= p.rx_ready.inline_bytes()) {
    std::memcpy(cell + sys::cell_fifo::head_bytes, packet, length);
  } else {
    // By reference: the packet stays in its outbound block (the wire is
    // clean, so the packet is that block), named by the entry.
    const uint64_t b = (reinterpret_cast<uintptr_t>(packet) - reinterpret_cast<uintptr_t>(vram_)) >>
                       block_shift_;  // a packet the wire held lies elsewhere: b out of range
    if (refer && b < tx_blocks_ && packet == tx_block(static_cast<uint32_t>(b))) {
      ++by_reference_sends_;
      p.rx_ready.publish(
          cell, pos,
          medusa::encode_entry(static_cast<uint32_t>(b), length, static_cast<uint32_t>(my_proc_)));
      return;
    }
    deliver_in_block(p, cell, pos, packet, length);
    return;
  }
  // Publish: the packet bytes are visible before the receiver sees the
  // entry, which names me, the sending card, as the packet's source.
  p.rx_ready.publish(cell, pos, cell_entry_ | length);
}

inline bool medusa_card::receive(rx_packet& p) noexcept {
  const uint64_t pos = rx_cursor_;  // read once: the cell's acquiring load would reload it
  uint64_t e;
  const std::byte* cell = rx_ready_.ready(pos, e);
  if (!cell) return false;
  p.position = pos;
  rx_cursor_ = pos + 1;
  // The next cell, asked for while this packet is handled: in a stream it
  // is published already, and its lines are the next receive's misses.
  rx_ready_.prefetch_cell<false>(pos + 1);
  const uint32_t b = medusa::entry_block(e);
  const uint32_t len = medusa::entry_length(e);
  const uint32_t src = medusa::entry_source(e);
  if (__builtin_expect(b == medusa::entry_headless && headless_lengths_.holds(len) &&
                           src < static_cast<uint32_t>(nprocs_),
                       1)) {
    // No wire header to check: the entry is all the wire header said.
    p.block = no_block;
    p.data = cell;
    p.length = len;
    p.src = static_cast<uint16_t>(src);
    p.rejected = false;
    p.crc_ok = true;
    return true;
  }
  receive_entry(p, cell, e);
  return true;
}

// An entry that names block b of the sending process src, below its
// tx_blocks: the packet it delivered by reference. Its card is mapped at
// the first such packet (a sender need not be one I send to).
inline const std::byte* medusa_card::sender_block(uint32_t src, uint32_t b) noexcept {
  if (src >= static_cast<uint32_t>(nprocs_)) return nullptr;
  const peer_view& v = peers_[src];
  if (__builtin_expect(v.vram == nullptr, 0) && !attach_to_read(src)) return nullptr;
  if (b >= v.first_rx_block) return nullptr;
  return v.vram + static_cast<size_t>(b) * block_size_;
}

// The CRC, then the wire header (one copy of it) against what the entry
// says: its length, its source, me as destination.
inline bool medusa_card::packet_ok(rx_packet& p, uint32_t src) noexcept {
  uint32_t crc;
  std::memcpy(&crc, p.data + offsetof(wire_header, crc), sizeof crc);
  if (crc_ && __builtin_expect(wire_crc(p.data, p.length) != crc, 0)) {
    ++crc_failures_;
    return false;
  }
  if (__builtin_expect(read_wire_address(p.data) != wire_address(p.length, src, my_proc_) ||
                           src >= static_cast<uint32_t>(nprocs_),
                       0)) {
    ++malformed_;
    p.rejected = true;
    return false;
  }
  return true;
}

inline void medusa_card::release(const rx_packet& p) noexcept {
  // Cells go back in the order they were popped, whatever the order of the
  // releases: one released early waits, with its block, for the ones
  // before it. That order is what tells a position released twice, stale
  // or made up (ignored) from one still held; the engine's claim itself
  // would take cells given back in any order. The common case, tested
  // first: the only cell held is this one (the endpoint releases each
  // packet before it takes the next), so none waits released early
  // (a cell released early waits behind an earlier one still held).
  const uint64_t pos = p.position;
  if (__builtin_expect(pos == rx_freed_ && pos + 1 == rx_cursor_, 1)) {
    rx_freed_ = pos + 1;
    rx_ready_.release(pos);
    give_back_block(p.block);
  } else {
    release_out_of_order(p.position, p.block);
  }
}

// Only blocks of my inbound range go back; no_block (a packet in its cell,
// a void or rejected entry) has nothing to give. Room by construction:
// RX_FREE holds every inbound block, and I push back only a block I popped
// from RX_READY (each at most once: see release); a block whose RX_FREE
// cell a sender has not yet freed waits (sys::token_return), and goes at
// the next give-back or the next entry other than a headless cell's
// (receive_entry). Not at every receive: only a packet that needs a block
// misses it, and each such packet's entry tries again, a void one (a
// sender found RX_FREE dry) included.
inline void medusa_card::give_back_block(uint32_t b) noexcept {
  // no_block first: one compare with a constant, where most packets stop.
  if (__builtin_expect(b != no_block, 0) && b - tx_blocks_ < rx_blocks_)
    (void)rx_free_return_.give_back(*rx_free_, medusa::encode_entry(b, block_size_));
}

}  // namespace hpam::nic
