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
#include <cstring>
#include <memory>
#include <vector>

#include "nic/hamlyn/card_view.hpp"
#include "nic/hamlyn/cross_memory.hpp"
#include "nic/hamlyn/layout.hpp"
#include "nic/hamlyn/notification_queue.hpp"
#include "nic/hamlyn/ticket.hpp"
#include "sys/status.hpp"

namespace hpam::nic::hamlyn {

class card;

// Packets one batched arrival takes at most (Linux's IOV_MAX: one
// process_vm_writev call).
constexpr uint32_t max_batch = 1024;

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
  // arrive_fast for a ticket whose arrival at card v was found once
  // (send_terminus::fast_route_for: fast mode, a node of the job, its card
  // attached): `at` is its slot there (t.slot < v.geo.slot_count), `line`
  // my hold line there (arrival_line(v), null: slot::users). Per packet the
  // same hold, state, generation, key and bounds checks, deposit, counting
  // and notification as arrive_fast; only what the route fixed is not
  // looked up again (the line, the slot's place, the ticket's mode, its
  // node one of the job).
  status arrive_fast_routed(const card_view& v, slot& at, hold_line* line, const ticket& t,
                            uint64_t offset, const std::byte* data, uint32_t length, uint64_t word,
                            bool local);
  // My hold line on v's card for a fast-mode arrival, or null (slot::users):
  // it holds by the line's other word, so that an arrival and a direct
  // deposit never let go of each other, and counts there. Fixed once v is
  // attached.
  hold_line* arrival_line(const card_view& v) const {
    return direct_holds_ && v.holds ? &v.holds[my_proc_] : nullptr;
  }
  // arrive() for a batch of single-packet messages from this process to
  // card v, a peer reached by cross-memory attach (the send terminus's
  // batched deposits; at most max_batch, data[i] the one piece of packet
  // i, no user metadata, no fast mode). Every packet is checked as arrive()
  // checks it (well formed, its slot held, mode, key, bounds) before any
  // byte moves; the accepted ones are written by one cross-memory call,
  // then counted and completed while their slots are still held. A refused
  // packet writes nothing and is counted; the others land. outcome[i] is
  // each packet's fate. system_error: the kernel refused the write; the
  // accepted packets (outcome system_error) were neither written nor
  // counted, the refused ones keep their refusal.
  status arrive_batch(const card_view& v, const packet_header* h, const iovec* data, uint32_t n,
                      status* outcome);
  // Resolves [offset, offset+len) of slot `s` at v after the key and bounds
  // checks (for gets and atomics): card memory gives a pointer; process
  // memory gives the owner's address with ptr = null.
  status resolve(const card_view& v, uint32_t s, uint64_t key, uint64_t offset, uint64_t len,
                 std::byte*& ptr, uint64_t& address);
  void unresolve(const card_view& v, uint32_t s);  // after a successful resolve
  // resolve and unresolve for a direct deposit: one the sender carries out
  // itself within the call and lets go before its next (the deposit layer's
  // put_now, get_now and atomic_now), one at a time on this card. Where v's
  // card offers hold lines and this process has joined the global barriers,
  // the hold is announced in my line there with plain stores (layout.hpp,
  // hold_line), else by slot::users as resolve does. With a line, the
  // slot's fields are checked once per set-up of the slot (direct_window).
  status resolve_direct(const card_view& v, uint32_t s, uint64_t key, uint64_t offset, uint64_t len,
                        std::byte*& ptr, uint64_t& address);
  void unresolve_direct(const card_view& v, uint32_t s) {
    drop_hold(v, v.slots[s], direct_line(v));
  }

  // h_recv: deposits packets waiting in my inbound FIFO, then takes the next
  // notification of queue q, if any. A message the entry carried (inline
  // delivery, n.carried) is copied into `message` (room for my entries'
  // notification_room(card_config::notify_entry_bytes)), when given.
  bool receive(uint32_t q, notification& n, std::byte* message = nullptr);
  // Whether receive(q) has anything to do: inbound packets to deposit, or
  // an entry at my cursor of queue q (notification_waiting).
  bool waiting(uint32_t q);
  // My cursor of queue q (q < notification_queues) and what it passed over.
  const notification_reader& reader(uint32_t q) const { return readers_[q]; }
  // Queue q of my card as its reader sees it (q < notification_queues):
  // the control block, the entries as my configuration places them and
  // my cursor, fixed for the card's life. For a client that takes its
  // notifications itself (notification_take, notification_waiting) with no
  // inbound FIFO to serve: the AM card, whose senders always deposit
  // directly (its regions lie in card memory: detail::direct_to), so that
  // its take is the queue's alone, with no view looked up.
  struct reader_port {
    notification_queue_control* control;
    notification_ring ring;
    notification_reader* reader;
  };
  reader_port port(uint32_t q) {
    const card_view& v = views_[my_proc_];
    return {v.queue(q), v.ring(q), &readers_[q]};
  }
  // Deposits up to `budget` inbound packets (fallback path); returns how many.
  uint32_t poll_inbound(uint32_t budget = 64);
  // Whether poll_inbound has anything to do: a packet in my inbound FIFO, or
  // one waiting to be served again (one load when idle).
  bool inbound_waiting() const {
    uint64_t e;
    return has_deferred_ || views_[my_proc_].rx_ready.ready(rx_cursor_, e);
  }
  // The two words inbound_waiting reads beside the FIFO's cell, for a test
  // made inline where this class is not seen (deposit::endpoint::quiet).
  const uint64_t* inbound_cursor() const { return &rx_cursor_; }
  const bool* inbound_deferred() const { return &has_deferred_; }
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
  // A fallback packet being served: where it lies (its rx_ready cell or its
  // buffer, both the owner's until given back), its header copied once out
  // of it, and (read requests) how far the answer has got.
  struct inbound_packet {
    uint64_t position;        // its rx_ready cell
    uint32_t buffer;          // inbound buffer number
    uint32_t length;          // bytes the sender wrote, header included (<= packet_size)
    const std::byte* packet;  // the header, then the payload
    packet_header header;     // the copy every check and use reads
    uint64_t done;            // read requests: bytes already answered
  };
  // A slot a batch holds, with what the batch's packets use of it.
  struct batch_hold {
    uint32_t slot;   // its index
    slot_copy copy;  // read once, while held
  };
  // A packet of a batch that passed its checks.
  struct batch_item {
    uint32_t packet;        // its index in the batch
    uint32_t hold;          // the batch_hold of its slot
    metadata_entry* entry;  // its metadata entry (null: fast mode)
  };
  uint32_t batch_hold_for(const card_view& v, uint32_t slot, uint32_t& holds);
  struct handler_entry {
    packet_handler fn = nullptr;
    void* ctx = nullptr;
  };

  bool well_formed(const card_view& v, const packet_header& h) const;
  // A fast-mode slot of one destination as the last arrive_fast there
  // found it: where it is, its generation then, and the copy hold_slot
  // made and checked (its key aside, which is read again every time).
  struct fast_slot_cache {
    const slot* at = nullptr;  // the slot, in the destination's mapped card (null: none)
    uint32_t generation = 0;   // slot::generation when copied
    slot_copy copy;            // checked, not paranoid
    // Its notification queue (copy.notification_queue, one the card has)
    // in the destination's mapped card.
    notification_queue_control* queue = nullptr;
    notification_ring ring;
  };
  // fast_only: a fast-mode arrival, which uses no metadata area (its
  // fields are neither copied nor checked).
  template <bool fast_only = false>
  static bool hold_slot(const card_view& v, uint32_t index, slot_copy& s);
  static bool announce_hold(const card_view& v, slot& sl);
  // My hold line's word on v's card for a direct deposit, or null
  // (slot::users).
  std::atomic<uint64_t>* direct_line(const card_view& v) const {
    return direct_holds_ && v.holds ? &v.holds[my_proc_].slot_plus_one : nullptr;
  }
  // The hold announced in my line's `word` (null: slot::users), and let go.
  static bool announce_direct(const card_view& v, slot& sl, uint32_t index,
                              std::atomic<uint64_t>* word);
  static void drop_hold(const card_view& v, slot& sl, std::atomic<uint64_t>* word) {
    if (word)
      word->store(0, std::memory_order_release);  // after the deposit (TSO)
    else
      sl.users.fetch_sub(1, std::memory_order_release);
  }
  status resolve_held(const card_view& v, uint32_t s, uint64_t key, uint64_t offset, uint64_t len,
                      std::byte*& ptr, uint64_t& address, std::atomic<uint64_t>* word);
  // A normal slot a direct deposit held in my hold line lately, as
  // resolve_held found it: where it is, its generation then and its checked
  // fields, so that the next direct deposit there reads only what may change
  // without a new set-up (the state, by announcing itself; the generation;
  // the key, which a rekey changes), as hold_fast_slot keeps a fast-mode
  // slot for arrivals. The card's check per deposit stays whole: hold,
  // state, key and bounds against the slot's set-up. Direct-mapped by the
  // slot's address (a UCX or MPI window's operations go to one or a few).
  struct direct_window {
    const slot* at = nullptr;  // the slot, in its owner's mapped card (null: none)
    uint32_t generation = 0;   // slot::generation when checked
    bool card_memory = false;  // area_memory::card: base is an offset in v.area
    uint64_t base = 0;         // checked: inside the area when card memory
    uint64_t bound = 0;
  };
  // The key presented against the slot's `key` (0: none matches) and
  // [offset, offset + len) inside w's bound, then where it lies: card
  // memory gives ptr, process memory the owner's address (ptr null). A
  // refusal is counted.
  static status place(const card_view& v, const direct_window& w, uint64_t presented, uint64_t key,
                      uint64_t offset, uint64_t len, std::byte*& ptr, uint64_t& address);
  static constexpr uint32_t direct_windows = 16;
  static uint32_t window_of(const slot* sl) {
    return static_cast<uint32_t>(reinterpret_cast<uintptr_t>(sl) / sizeof(slot)) % direct_windows;
  }
  template <bool fast_only>
  static bool copy_slot(const card_view& v, const slot& sl, slot_copy& s);
  static bool fast_mode_slot(const card_view& v, const slot& sl, slot_copy& s);
  // (in_job: the caller knows node < nprocs_, a routed arrival's ticket.)
  template <bool in_job = false>
  const fast_slot_cache* hold_fast_slot(const card_view& v, uint32_t node, uint32_t index, slot& sl,
                                        std::atomic<uint64_t>* word, uint64_t& key);
  static bool fast_slot_for(const card_view& v, const slot& sl, fast_slot_cache& fc);
  static bool fast_mode_fits(const slot_copy& s, const packet_header& h);
  bool check_packet(const card_view& v, const packet_header& h, const slot_copy& s,
                    metadata_entry*& entry);
  static bool check_key_and_bounds(arrival_counters& c, uint64_t presented, uint64_t offset,
                                   uint64_t length, uint64_t key, uint64_t low, uint64_t high,
                                   uint64_t bound);
  void notify(const card_view& v, const slot_copy& s, const notification& n,
              const std::byte* message);
  // notify into a queue already located (the fast-slot cache's), the
  // message counted by the caller.
  static void notify_into(const card_view& v, notification_queue_control& q,
                          const notification_ring& ring, const notification& n,
                          const std::byte* message);
  void complete(const card_view& v, const slot_copy& s, const packet_header& h,
                metadata_entry* entry, const std::byte* message);
  status arrive_carried(const card_view& v, const slot_copy& s, const packet_header& h,
                        const iovec* data, int n);
  static status write_area(const card_view& v, const slot_copy& s, uint64_t offset, uint64_t length,
                           const iovec* data, int n, bool local);
  // routed: the ticket is in fast mode (its route says so).
  template <bool routed = false>
  [[gnu::always_inline]] inline status arrive_fast_held(const card_view& v, slot& sl,
                                                        const ticket& t, uint64_t offset,
                                                        const std::byte* data, uint32_t length,
                                                        uint64_t word, bool local, hold_line* line);
  [[gnu::noinline]] status arrive_fast_by_users(const card_view& v, const ticket& t,
                                                uint64_t offset, const std::byte* data,
                                                uint32_t length, uint64_t word, bool local);
  bool serve_read_request(inbound_packet& in);
  bool serve_packet(inbound_packet& in);
  // Gives a served packet's cell, then its buffer, back (see push_packet).
  // The push checks for room: a forged entry naming a buffer that is still
  // free must not overfill rx_free (it is dropped once every buffer waits).
  // A buffer whose rx_free cell a sender has not yet freed waits
  // (sys::token_return) and goes at a later give_back or poll.
  void give_back(const card_view& v, const inbound_packet& in) {
    v.rx_ready.release(in.position);
    if (!rx_free_return_.give_back(*v.rx_free, in.buffer))
      v.header->counters.malformed.fetch_add(1, std::memory_order_relaxed);
  }

  card& card_;                           // the card this interface receives for (for handlers)
  const std::vector<card_view>& views_;  // its views of every card [proc]
  uint32_t nprocs_;                      // processes in the job (valid packet sources)
  uint32_t my_proc_;                     // my card's process
  uint32_t notification_queues_;         // queues of my card
  uint32_t rx_packets_;                  // inbound packet buffers of my card
  sys::token_return rx_free_return_;     // buffers whose rx_free cell a sender still holds
  uint32_t packet_size_;                 // bytes per inbound packet buffer
  handler_entry handlers_[packet_kind_count];
  uint64_t rx_cursor_ = 0;     // my next rx_ready cell (mine alone, never in shared memory)
  bool has_deferred_ = false;  // deferred_ waits to be served again, holding its cell:
  inbound_packet deferred_{};  // the cells after it wait too, so cells go back in order
  std::vector<notification_reader> readers_;  // [queue]: my cursors, never in shared memory
  // [destination < nprocs_]: its fast-mode slot, checked (an array: the
  // index is checked against nprocs_, one load, not a vector's size);
  // [nprocs_]: the copy for a node outside the job, never kept (`at` null),
  // so an arrival builds no scratch copy on its stack.
  std::unique_ptr<fast_slot_cache[]> fast_cache_;
  direct_window windows_[direct_windows];  // resolve_direct's (private memory, never shared)
  bool direct_holds_;  // card_config::direct_holds, and this process joined the global barriers
  // arrive_batch's scratch, max_batch each once a batch is first carried out.
  std::vector<batch_hold> batch_holds_;
  std::vector<batch_item> batch_items_;
  std::vector<iovec> batch_local_, batch_remote_;
};

// h_recv, inline: the receiver's poll.
[[gnu::always_inline]] inline bool receiving_interface::receive(uint32_t q, notification& n,
                                                                std::byte* message) {
  const card_view& v = views_[my_proc_];
  if (q >= notification_queues_) return false;
  if (__builtin_expect(inbound_waiting(), 0)) (void)poll_inbound();
  return notification_take(*v.queue(q), v.ring(q), readers_[q], n, message);
}

[[gnu::always_inline]] inline bool receiving_interface::waiting(uint32_t q) {
  const card_view& v = views_[my_proc_];
  if (q >= notification_queues_) return false;
  return inbound_waiting() || notification_waiting(*v.queue(q), v.ring(q), readers_[q]);
}

// The fast path of an arrival, inline: the AM card's sends (send_terminus::
// send_fast) run it in the sender's process without a call.

namespace detail {
inline bool paranoid(uint32_t mode) {
  return mode == static_cast<uint32_t>(slot_mode::paranoid) ||
         mode == static_cast<uint32_t>(slot_mode::paranoid_one_shot);
}

inline void count(std::atomic<uint64_t>& c) {
  c.fetch_add(1, std::memory_order_relaxed);
}
// A counter this process alone writes (its hold line's): no locked add.
[[gnu::always_inline]] inline void count_own(std::atomic<uint64_t>& c) {
  c.store(c.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
}

// [offset, offset+length) inside [low, high) without overflow.
inline bool inside(uint64_t offset, uint64_t length, uint64_t low, uint64_t high) {
  return offset >= low && offset <= high && length <= high - offset;
}
}  // namespace detail

// Takes the slot for an arrival: announces it (users) before looking, so a
// revoke either makes the state check fail or waits until the arrival is
// done (seq_cst on both sides); then copies the fields. False (counted):
// not active, or its memory lies outside the card's area. The caller drops
// users whatever the answer.
template <bool fast_only>
[[gnu::always_inline]] inline bool receiving_interface::hold_slot(const card_view& v,
                                                                  uint32_t index, slot_copy& s) {
  slot& sl = v.slots[index];
  return announce_hold(v, sl) && copy_slot<fast_only>(v, sl, s);
}

// The revoke protocol's half on the arrival's side (slot_table::revoke is
// the other): users + 1, then the state. Both sequentially consistent, so
// of "users + 1 here, state read" and "state revoked there, users read" one
// sees the other: the arrival is refused, or the revoke waits for it.
[[gnu::always_inline]] inline bool receiving_interface::announce_hold(const card_view& v,
                                                                      slot& sl) {
  sl.users.fetch_add(1, std::memory_order_seq_cst);
  if (sl.state.load(std::memory_order_seq_cst) != static_cast<uint32_t>(slot_state::active)) {
    detail::count(v.header->counters.revoked_rejections);
    return false;
  }
  return true;
}

// The hold in my line's word: announced (plain store), then the state
// read; the compiler keeps that order, the CPU may not (a load may pass an
// earlier store), and the owner's barrier_all in revoke covers it
// (layout.hpp, hold_line). Refused (counted) when the slot is not active;
// the caller lets go whatever the answer, as after announce_hold.
[[gnu::always_inline]] inline bool receiving_interface::announce_direct(
    const card_view& v, slot& sl, uint32_t index, std::atomic<uint64_t>* word) {
  if (!word) return announce_hold(v, sl);
  word->store(uint64_t{index} + 1, std::memory_order_relaxed);
  std::atomic_signal_fence(std::memory_order_seq_cst);
  if (sl.state.load(std::memory_order_acquire) != static_cast<uint32_t>(slot_state::active)) {
    detail::count(v.header->counters.revoked_rejections);
    return false;
  }
  return true;
}

[[gnu::always_inline]] inline status receiving_interface::place(
    const card_view& v, const direct_window& w, uint64_t presented, uint64_t key, uint64_t offset,
    uint64_t len, std::byte*& ptr, uint64_t& address) {
  if (presented == 0 || presented != key) {
    detail::count(v.header->counters.key_rejections);
    return status::rejected;
  }
  if (!detail::inside(offset, len, 0, w.bound)) {
    detail::count(v.header->counters.bounds_rejections);
    return status::rejected;
  }
  ptr = w.card_memory ? v.area + w.base + offset : nullptr;
  address = w.card_memory ? 0 : w.base + offset;
  return status::ok;
}

// resolve_direct. A slot held lately and not set up again since (same
// place, same generation: create_slot, the only writer of the fields kept,
// bumps the generation before it publishes the state, and this hold read
// the state active after announcing itself) is checked against the kept
// copy; anything else takes resolve_held, which checks the slot's fields
// and keeps them. A refusal is counted where it is found.
[[gnu::always_inline]] inline status receiving_interface::resolve_direct(
    const card_view& v, uint32_t s_index, uint64_t key, uint64_t offset, uint64_t len,
    std::byte*& ptr, uint64_t& address) {
  std::atomic<uint64_t>* line = direct_line(v);
  if (__builtin_expect(line != nullptr && s_index < v.geo.slot_count, 1)) {
    slot& sl = v.slots[s_index];
    const direct_window& w = windows_[window_of(&sl)];
    if (__builtin_expect(w.at == &sl, 1)) {
      if (!announce_direct(v, sl, s_index, line)) {  // counted
        drop_hold(v, sl, line);
        return status::rejected;
      }
      if (__builtin_expect(w.generation == sl.generation, 1)) {
        const status st = place(v, w, key, sl.protection_key.load(std::memory_order_acquire),
                                offset, len, ptr, address);
        if (!is_ok(st)) drop_hold(v, sl, line);
        return st;
      }
      drop_hold(v, sl, line);  // set up again since: checked afresh
    }
  }
  return resolve_held(v, s_index, key, offset, len, ptr, address, line);
}

// The fields an arrival uses, read once while held and active (the owner
// wrote them before publishing the state, and changes them only after a
// revoke, which waits for this hold), and checked: false (counted
// malformed) when the owner's table is damaged.
template <bool fast_only>
[[gnu::always_inline]] inline bool receiving_interface::copy_slot(const card_view& v,
                                                                  const slot& sl, slot_copy& s) {
  s.key = sl.protection_key.load(std::memory_order_acquire);
  s.base = sl.base;
  s.bound = sl.bound;
  s.mode = sl.mode;
  s.memory = sl.memory;
  s.notification_queue = sl.notification_queue;
  s.inline_limit = sl.inline_limit;
  bool metadata_ok = true;
  if constexpr (!fast_only) {
    s.metadata_base = sl.metadata_base;
    s.metadata_count = sl.metadata_count;
    metadata_ok = uint64_t{s.metadata_base} + s.metadata_count <= v.geo.metadata_entries;
  } else {
    s.metadata_base = s.metadata_count = 0;  // not used by a fast-mode arrival
  }
  // A queue the card does not have: the arrival goes to queue 0 (notify).
  if (s.notification_queue >= v.geo.notification_queues) s.notification_queue = 0;
  const bool card_memory = s.memory == static_cast<uint32_t>(area_memory::card);
  if (s.mode >= slot_mode_count ||
      (card_memory && !detail::inside(s.base, s.bound, 0, v.geo.area_bytes)) || !metadata_ok ||
      s.inline_limit > notification_room(v.geo.notify_entry_bytes)) {
    detail::count(v.header->counters.malformed);  // the owner's table is damaged: touch nothing
    return false;
  }
  return true;
}

// hold_slot for a fast-mode arrival at destination `node`, with the slot's
// fields checked once per slot set-up instead of per packet. Every packet
// still announces its hold and reads the state (announce_direct: in my hold
// line's `word` where the card offers lines, else by users; a revoked slot
// refuses it), and reads the key (a rekey changes only the key and the
// state). The cached copy stands while the slot is the one cached and its
// generation is unchanged: create_slot, the only writer of the other
// fields, bumps the generation before it publishes the state (release), and
// this hold read the state active after announcing itself, so it reads the
// generation of the set-up it holds; while it holds, no create_slot can run
// on the slot (release_slot's revoke waits for the hold to go first). A stale copy
// would need 2^32 set-ups of one slot between two packets of one sender.
// Only checked values are ever used: an owner that scribbles its own slot
// without a new set-up gets the copy checked before, inside its area.
// fast_cache_[nprocs_] holds the copy for a node outside the job (never
// kept); a routed arrival's node is one of the job (fast_route_for checked
// it), so it does not compare it again (in_job). The key read for this
// packet goes to `key`, not into the kept copy (a store a packet).
// Null (counted): refused (a paranoid slot too: mode_rejections); the
// caller drops users whatever the answer.
template <bool in_job>
[[gnu::always_inline]] inline const receiving_interface::fast_slot_cache*
receiving_interface::hold_fast_slot(const card_view& v, uint32_t node, uint32_t index, slot& sl,
                                    std::atomic<uint64_t>* word, uint64_t& key) {
  if (!announce_direct(v, sl, index, word)) return nullptr;
  if (__builtin_expect(in_job || node < nprocs_, 1)) {
    fast_slot_cache& fc = fast_cache_[node];
    if (__builtin_expect(fc.at == &sl && fc.generation == sl.generation, 1)) {
      key = sl.protection_key.load(std::memory_order_acquire);
      return &fc;
    }
    const uint32_t generation = sl.generation;
    fc.at = nullptr;
    if (!fast_slot_for(v, sl, fc)) return nullptr;
    fc.at = &sl;
    fc.generation = generation;
    key = fc.copy.key;
    return &fc;
  }
  fast_slot_cache& other = fast_cache_[nprocs_];  // (its `at` stays null)
  if (!fast_slot_for(v, sl, other)) return nullptr;
  key = other.copy.key;
  return &other;
}

// fast_mode_slot into a cache entry, with the slot's queue located.
inline bool receiving_interface::fast_slot_for(const card_view& v, const slot& sl,
                                               fast_slot_cache& fc) {
  if (!fast_mode_slot(v, sl, fc.copy)) return false;
  fc.queue = v.queue(fc.copy.notification_queue);
  fc.ring = v.ring(fc.copy.notification_queue);
  return true;
}

// copy_slot for a fast-mode arrival, and the slot's mode: a paranoid slot
// refuses fast mode (counted). A copy it accepts is one to keep.
[[gnu::always_inline]] inline bool receiving_interface::fast_mode_slot(const card_view& v,
                                                                       const slot& sl,
                                                                       slot_copy& s) {
  if (!copy_slot<true>(v, sl, s)) return false;
  if (!detail::paranoid(s.mode)) return true;
  detail::count(v.header->counters.mode_rejections);
  return false;
}

// The presented key against `key` (0: none matches), [offset, offset+length)
// inside the slot's bound and inside [low, high); a refusal is counted.
[[gnu::always_inline]] inline bool receiving_interface::check_key_and_bounds(
    arrival_counters& c, uint64_t presented, uint64_t offset, uint64_t length, uint64_t key,
    uint64_t low, uint64_t high, uint64_t bound) {
  if (key == 0 || presented != key) {
    detail::count(c.key_rejections);
    return false;
  }
  if (!detail::inside(offset, length, 0, bound) || !detail::inside(offset, length, low, high)) {
    detail::count(c.bounds_rejections);
    return false;
  }
  return true;
}

// Deposits the pieces (length bytes in all) at base + offset.
[[gnu::always_inline]] inline status receiving_interface::write_area(
    const card_view& v, const slot_copy& s, uint64_t offset, uint64_t length, const iovec* data,
    int n, bool local) {
  const bool card = s.memory == static_cast<uint32_t>(area_memory::card);
  if (card || local) {
    // Card memory: hold_slot and the bounds check bounded it; my own
    // process's memory: the slot's base is my address.
    detail::gather(card ? v.area + s.base + offset : reinterpret_cast<std::byte*>(s.base + offset),
                   data, n);
    return status::ok;
  }
  if (length == 0) return status::ok;
  return cross_memory_write(v.pid, data, n, s.base + offset);
}

// A completed message: counted, and its notification appended to the
// slot's queue (a full queue counts the overrun); with `message`, the entry
// carries it (n.length <= the slot's inline_limit).
[[gnu::always_inline]] inline void receiving_interface::notify(const card_view& v,
                                                               const slot_copy& s,
                                                               const notification& n,
                                                               const std::byte* message) {
  const uint32_t q = s.notification_queue;  // one the card has (copy_slot)
  detail::count(v.header->counters.messages);
  notify_into(v, *v.queue(q), v.ring(q), n, message);
}

[[gnu::always_inline]] inline void receiving_interface::notify_into(const card_view& v,
                                                                    notification_queue_control& q,
                                                                    const notification_ring& ring,
                                                                    const notification& n,
                                                                    const std::byte* message) {
  (void)v;
  // A message only when n.length <= the slot's inline_limit, which
  // copy_slot checked against the room of this card's entries.
  (void)notification_append<true>(q, ring, n, message);
}

// Works from the ticket: no packet header is built. The flags a fast-mode
// packet would carry (data, single, notify, no metadata) are this path's
// own, so only the slot, index, key and range need checking. Held by my
// hold line where the card offers lines (inline), else by slot::users
// (out of line: arrive_fast_by_users).
[[gnu::always_inline]] inline status receiving_interface::arrive_fast(
    const card_view& v, const ticket& t, uint64_t offset, const std::byte* data, uint32_t length,
    uint64_t word, bool local) {
  hold_line* const line = arrival_line(v);
  if (__builtin_expect(line == nullptr, 0))
    return arrive_fast_by_users(v, t, offset, data, length, word, local);
  if (t.slot >= v.geo.slot_count) {
    detail::count(v.header->counters.malformed);
    return status::rejected;
  }
  return arrive_fast_held(v, v.slots[t.slot], t, offset, data, length, word, local, line);
}

// The route's line and slot instead of finding them (the AM card's every
// packet, through send_terminus::send_fast_routed).
[[gnu::always_inline]] inline status receiving_interface::arrive_fast_routed(
    const card_view& v, slot& at, hold_line* line, const ticket& t, uint64_t offset,
    const std::byte* data, uint32_t length, uint64_t word, bool local) {
  if (__builtin_expect(line == nullptr, 0))
    return arrive_fast_by_users(v, t, offset, data, length, word, local);
  return arrive_fast_held<true>(v, at, t, offset, data, length, word, local, line);
}

// arrive_fast held by `line` (null: slot::users). A deposited arrival is
// one packet and one message: counted in my line where it holds (a plain
// store, layout.hpp), else by the header's two shared counters.
template <bool routed>
[[gnu::always_inline]] inline status receiving_interface::arrive_fast_held(
    const card_view& v, slot& sl, const ticket& t, uint64_t offset, const std::byte* data,
    uint32_t length, uint64_t word, bool local, hold_line* line) {
  arrival_counters& c = v.header->counters;
  status st = status::rejected;
  std::atomic<uint64_t>* const hold = line ? &line->arrival_plus_one : nullptr;
  uint64_t key = 0;  // the slot's, read while held
  const fast_slot_cache* held = hold_fast_slot<routed>(v, t.node, t.slot, sl, hold, key);
  if (!held) {
    // counted by hold_fast_slot
  } else if (!routed && t.metadata_index != fast_index) {  // (a paranoid slot: refused in the
                                                           // hold)
    detail::count(c.mode_rejections);
  } else if (key == 0 || t.protection_key != key) {
    detail::count(c.key_rejections);
  } else if (!detail::inside(offset, length, 0, held->copy.bound)) {
    detail::count(c.bounds_rejections);
  } else {
    const slot_copy& s = held->copy;
    const bool carry = length <= s.inline_limit;  // inline delivery: the entry carries it
    if (!carry) {
      const iovec piece{const_cast<std::byte*>(data), length};
      st = write_area(v, s, offset, length, &piece, 1, local);
    } else {
      st = status::ok;
    }
    if (is_ok(st)) {
      if (line) {
        detail::count_own(line->fast_arrivals);
      } else {
        detail::count(c.packets);
        detail::count(c.messages);
      }
      // (An empty message is carried too: any pointer will do for 0 bytes.)
      const std::byte* carried =
          carry ? (data ? data : reinterpret_cast<const std::byte*>(&word)) : nullptr;
      notify_into(v, *held->queue, held->ring,  // the queue the hold located
                  notification{t.slot, fast_index, my_proc_, word, length}, carried);
    }
  }
  drop_hold(v, sl, hold);
  return st;
}

}  // namespace hpam::nic::hamlyn
