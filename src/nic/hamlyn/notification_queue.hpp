// Notification queue operations (OSDI'96 2.6): a circular list of entries.
// Writers (whoever completes a message: a sender's process doing the
// receiving interface's work, or the receiver itself for packets that came
// through its inbound FIFO) append; one reader, the card's owner, takes the
// entries in cursor order. As in the paper, the reader "maintains its own
// cursor and wrap flag": its cursor lives in its own memory
// (notification_reader), and an entry is for it when the entry's wrap flag
// equals the one it expects for that cursor.
//
// Every word of the queue lies in memory that any process mapping the card
// can write, so nothing shared is believed beyond a hint:
// * the NQCB cursor only tells writers where to start looking; a writer
//   claims an entry by compare-and-swap on the entry's own wrap flag, for the
//   cursor value that flag names, and never needs the reader's position
//   (a free flag is the room);
// * the reader's cursor is never shared: no shared word can make it skip
//   ahead, go back, or take an entry of an earlier lap again;
// * an entry's fields are copied once; the copy is what the caller checks;
// * the reader passes over an entry that cannot be for it (a flag naming
//   another cursor value, or no state: damaged) and a free entry that writers
//   have gone past (a hole, left when the NQCB cursor pointed ahead), counting
//   each. A hostile writer can lose notifications (its own, or others' by
//   overwriting their entries) but cannot stop the reader for good; one that
//   moves the NQCB cursor only makes writers walk further (and, while the
//   reader has not yet looked at the cursor, may let a later notification
//   fill an earlier hole: see detail::is_hole for when an idle reader looks).
// * an entry held in the claimed state for the reader's cursor makes the
//   reader wait, as for a writer that is slow to finish, but only for
//   patience_ns (1 s): then the reader takes the entry back for the next lap
//   and counts it abandoned; a writer that does finish after that finds its
//   entry gone (its publishing compare-and-swap fails) and counts an overrun.
//   A mapper that holds an entry claimed, or a writer killed between its
//   claim and its publish, cannot stop the reader for good.
// * an entry that says it carries a message (inline delivery, layout.hpp)
//   longer than an entry holds, or has flags no writer sets, is passed over
//   and counted (malformed): the reader copies at most what an entry holds.
// Cost, not trust: an idle reader polls its entry's flag and the next
// entry's, lines no writer touches until it writes them; it reads the NQCB
// cursor, which every append writes, only now and then (detail::is_hole).
// A writer claims the entry the cursor names with one compare-and-swap when
// the cursor is right, and walks only when it is not. Each entry's two
// lines move between the writer's and the reader's cores once a lap each
// way; both ask for the next entry's lines ahead (sys::prefetch_lines): the
// writer after its publish (for ownership: its next claim and publish
// are locked instructions, which wait for them), the AM card's reader
// after a take (in a stream the next entry is written already).
// Left to the caller: a forged entry written exactly for the reader's cursor
// looks like any other, so its fields must be checked (hamlyn_am_card does).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "nic/hamlyn/layout.hpp"
#include "sys/clock.hpp"
#include "sys/prefetch.hpp"
#include "sys/ring.hpp"
#include "sys/short_copy.hpp"

namespace hpam::nic::hamlyn {

// What a notification says, as the reader gets it. A carried message
// travels beside it (notification_append's and notification_take's
// `message`).
struct notification {
  uint32_t slot;            // slot index
  uint32_t metadata_index;  // metadata entry, or fast_index
  uint32_t source;          // sending process
  uint64_t metadata;        // card offset of the metadata entry, or the fast-mode word
  uint64_t length;          // data bytes of the completing packet (< 2^32)
  bool carried = false;     // reader: the entry carried the message itself (its `length`
                            // bytes, <= its queue's notification_ring::room: inline delivery)
};

// Where one queue's entries lie as its user knows them (its card_view's
// checked geometry, or its own configuration), never the control block's
// copy, which any process mapping the card could change: the entry for
// cursor value 0, the capacity and the spacing of the entries (a power of
// two from 128 to 512 bytes: layout.hpp).
struct notification_ring {
  std::byte* base = nullptr;                          // the entry for cursor value 0
  uint32_t cap = 0;                                   // entries (power of two)
  uint32_t entry_bytes = sizeof(notification_entry);  // bytes per entry
  // The entry for cursor value c.
  notification_entry& at(uint64_t c) const noexcept {
    return *reinterpret_cast<notification_entry*>(base +
                                                  sys::ring_math::slot(c, cap) * entry_bytes);
  }
  // Bytes of message one entry carries.
  uint32_t room() const noexcept { return notification_room(entry_bytes); }
  // Where the entry after e is asked for ahead (a prefetch hint): e's address
  // plus the spacing, not found again from a cursor (the fields loaded, a
  // mask and a multiply). At the lap's last entry that is the line past the
  // ring, a hint never read (a prefetch does not fault); the first entry's
  // lines then come when they are used, once a lap.
  const void* after(const notification_entry& e) const noexcept {
    return reinterpret_cast<const std::byte*>(&e) + entry_bytes;
  }
};
// An entry's room (room() bytes from here on).
[[gnu::always_inline]] inline std::byte* entry_message(notification_entry& e) noexcept {
  return reinterpret_cast<std::byte*>(&e) + offsetof(notification_entry, message);
}

namespace detail {
// How an idle reader looks for holes: see is_hole.
constexpr uint64_t hole_check_period = 64;
constexpr uint32_t wary_looks = 1024;
}  // namespace detail

// The reader's side of one queue, in the reader's own memory.
struct notification_reader {
  uint64_t cursor = 0;     // cursor value of the next entry to take
  uint64_t damaged = 0;    // entries passed over: their flag named no cursor value of mine
  uint64_t holes = 0;      // free entries passed over: writers had gone past them
  uint64_t abandoned = 0;  // entries taken back: held claimed for my cursor past patience_ns
  uint64_t malformed = 0;  // entries written for me passed over: unknown flags, or a carried
                           // message longer than an entry holds
  uint64_t patience_ns = 1'000'000'000;  // how long a claimed entry may hold me up
  uint64_t idle_polls = 0;             // looks that found my entry free (calm) or claimed since my
                                       // cursor moved
  uint32_t wary = detail::wary_looks;  // 0: calm; else in-place looks of the NQCB cursor
                                       // to go before calm (detail::is_hole)
  uint64_t claimed_cursor = 0;         // the cursor value I found claimed ...
  uint64_t claimed_looks = 0;          // ... how often I looked (0: not waiting) ...
  uint64_t claimed_since = 0;          // ... and when the clock was first read (monotonic ns;
                                       // 0: not yet)
};

// Sets a new queue's entries free for cursor values 0 .. cap-1 (the owner,
// before it publishes the card).
inline void notification_queue_init(notification_queue_control& q,
                                    const notification_ring& ring) noexcept {
  for (uint64_t i = 0; i < ring.cap; ++i)
    ring.at(i).wrap_flag.store(encode_wrap_flag(i, entry_state::free), std::memory_order_relaxed);
  q.cursor.store(0, std::memory_order_relaxed);
}

namespace detail {
// Whether `flag` says written for cursor value c, in either form (written
// and written_compact differ in the low bit alone).
[[gnu::always_inline]] inline bool written_for(uint64_t flag, uint64_t c) noexcept {
  static_assert((static_cast<uint64_t>(entry_state::written) | 1) ==
                static_cast<uint64_t>(entry_state::written_compact));
  return (flag | 1) == encode_wrap_flag(c, entry_state::written_compact);
}

// The first of the run of free entries that ends at the free entry for
// cursor value `from`: where the writers' tail really is.
inline uint64_t first_free(const notification_ring& ring, uint64_t from) noexcept {
  for (uint64_t back = 1; back < ring.cap; ++back, --from)
    if (ring.at(from - 1).wrap_flag.load(std::memory_order_relaxed) !=
        encode_wrap_flag(from - 1, entry_state::free))
      break;
  return from;
}
}  // namespace detail

namespace detail {
// A carried message of n <= its ring's room bytes into entry e's room,
// after the fields, every store to the entry's first line before any to
// the rest. The store buffer writes stores back in
// program order: a store to the second line (which the writer may have to
// take back from the reader, which read the entry a lap before) between two
// stores to the first holds the later ones back until that line comes,
// while the reader's polls take the first line away again, and they wait
// for it a second time. Left to itself the compiler may interleave the two
// lines' stores (it did: an 8-byte MPI message's one-way latency went from
// 0.29 to 0.31 µs). So a message longer than 64 bytes (the first line's
// 32 and more than 32 for the second) goes in two parts around an empty
// asm that reads the first line and writes the rest of the entry, which
// keeps the compiler's stores on either side of it (and nothing else). Up to 64
// bytes the one copy stays when n is known only at run time (its
// first-line moves before its second-line ones, as GCC makes it: split
// there, a 0-byte MPI message's 64-byte packet took 0.30 µs one way
// instead of 0.29). A length the compiler knows (the native 4-word request,
// 64 bytes, since send_request keeps its length in a local) becomes fixed
// moves that GCC schedules freely: it stored 0x20, 0x50, 0x30, 0x40 of the
// entry, and the round trip over Hamlyn (am_bench) went from ~520 to ~570
// ns. Such a length is split too: it costs no branch. Past the first line,
// up to 96 bytes go by copy_up_to_96's moves, more (an entry longer than
// 128 bytes) by memcpy.
[[gnu::always_inline]] inline void copy_into_entry(notification_entry& e, const std::byte* message,
                                                   uint32_t n) noexcept {
  constexpr uint32_t first = 64 - offsetof(notification_entry, message);  // room in line one
  static_assert(offsetof(notification_entry, message) < 64 && sizeof(notification_entry) == 128);
  std::byte* room = entry_message(e);
  if (n <= 2 * first && !(__builtin_constant_p(n) && n > first)) {
    sys::copy_up_to_96(room, message, n);
    return;
  }
  sys::copy_up_to_96(room, message, first);
  using line = std::byte[64];
  using rest = std::byte[max_notification_entry_bytes - 64];
  auto* lines = reinterpret_cast<line*>(&e);
  asm volatile("" : "+m"(*reinterpret_cast<rest*>(lines + 1)) : "m"(lines[0]));
  if (__builtin_expect(n - first <= 96, 1))
    sys::copy_up_to_96(room + first, message + first, n - first);
  else
    std::memcpy(room + first, message + first, n - first);
}

// A compact entry (layout.hpp): its fields' word at byte 8 and the carried
// message's bytes [16, n), 16 <= n <= the ring's room, at the same bytes of
// the entry (its first 16 the entry's own), every store to the first line
// before any to the rest, as copy_into_entry: up to 64 bytes one copy, which
// stays in the first line; past it the first line's 48 bytes, the empty
// asm, then the rest.
[[gnu::always_inline]] inline void fill_compact(notification_entry& e, uint64_t fields,
                                                const std::byte* message, uint32_t n) noexcept {
  constexpr uint32_t head = 16, first = 64 - head;  // the message's bytes in line one past it
  auto* base = reinterpret_cast<std::byte*>(&e);
  std::memcpy(base + 8, &fields, sizeof fields);
  if (n <= 64) {
    sys::copy_up_to_96(base + head, message + head, n - head);
    return;
  }
  sys::copy_up_to_96(base + head, message + head, first);
  using line = std::byte[64];
  using rest = std::byte[max_notification_entry_bytes - 64];
  auto* lines = reinterpret_cast<line*>(&e);
  asm volatile("" : "+m"(*reinterpret_cast<rest*>(lines + 1)) : "m"(lines[0]));
  // The rest: up to 32 bytes (an MPI message of up to 32 bytes: its riding
  // ack and a few payload bytes) in two moves of the widest word that fits,
  // inline (copy_up_to_96 calls sys::short_copy below 32 bytes: a call
  // with its spills, 26 instructions a send against 8 here); 33 to 96 by
  // copy_up_to_96's moves; more by memcpy.
  const uint32_t r = n - 64;
  std::byte* to = base + 64;
  const std::byte* from = message + 64;
  if (__builtin_expect(r <= 16, 1)) {
    if (r >= 8)
      sys::detail::copy_two<uint64_t>(to, from, r);
    else if (r >= 4)
      sys::detail::copy_two<uint32_t>(to, from, r);
    else
      sys::short_copy(to, from, r);
  } else if (r <= 32) {
    sys::detail::copy_two<unsigned __int128>(to, from, r);
  } else if (r <= 96) {
    sys::copy_up_to_96(to, from, r);
  } else {
    std::memcpy(to, from, r);
  }
}

// Fills entry e, claimed for cursor value `at`, and publishes it: false when
// the reader had passed over it meanwhile (it is no longer mine). A carried
// message whose first 16 bytes its reader does not read (a headless
// fast-mode word: compact_fits) goes compact; any other entry in the full
// form. room_checked: see notification_append.
template <bool room_checked = false>
[[gnu::always_inline]] inline bool fill_and_publish(notification_entry& e, uint32_t room,
                                                    uint64_t at, const notification& n,
                                                    const std::byte* message) noexcept {
  const bool carry = message != nullptr && (room_checked || n.length <= room);
  entry_state written = entry_state::written;
  if (carry && compact_fits(n.slot, n.length, n.metadata)) {
    fill_compact(e, compact_fields(n.slot, n.source, n.length, n.metadata), message,
                 static_cast<uint32_t>(n.length));
    written = entry_state::written_compact;
  } else {
    e.slot = n.slot;
    e.metadata_index = n.metadata_index;
    e.source = static_cast<uint16_t>(n.source);
    e.length = static_cast<uint32_t>(n.length);
    e.metadata = n.metadata;
    e.flags = carry ? entry_flag_carried : 0;
    if (carry) copy_into_entry(e, message, static_cast<uint32_t>(n.length));
  }
  // Publish: the fields above (and the deposit that preceded this call)
  // are visible to a reader that sees the written flag. A compare-and-swap:
  // if the reader passed over the entry meanwhile, it is no longer mine.
  uint64_t expect = encode_wrap_flag(at, entry_state::claimed);
  return e.wrap_flag.compare_exchange_strong(expect, encode_wrap_flag(at, written),
                                             std::memory_order_release, std::memory_order_relaxed);
}

// notification_append when the entry the hint names is not free for it:
// walks from there to the first entry free for its own cursor value. (The
// notification by value: a reference would make every caller build it in
// memory before its usual case, which stores the fields straight from
// registers.)
[[gnu::noinline]] inline bool append_walk(notification_queue_control& q,
                                          const notification_ring ring, const notification n,
                                          const std::byte* message, uint64_t at) noexcept {
  const uint64_t cap = ring.cap;
  for (uint64_t looked = 0; looked < cap; ++looked, ++at) {
    notification_entry& e = ring.at(at);
    uint64_t flag = e.wrap_flag.load(std::memory_order_acquire);
    const uint64_t mine = wrap_flag_cursor(flag);
    if (wrap_flag_state(flag) != static_cast<uint64_t>(entry_state::free) ||
        sys::ring_math::slot(mine, cap) != sys::ring_math::slot(at, cap))
      continue;        // claimed, written or damaged: not mine to take
    if (mine != at) {  // the hint was a lap or more off: go to the first free entry
      at = first_free(ring, mine) - 1;
      continue;
    }
    if (!e.wrap_flag.compare_exchange_strong(flag, encode_wrap_flag(mine, entry_state::claimed),
                                             std::memory_order_acquire, std::memory_order_relaxed))
      continue;  // another writer (or the reader) got there first
    if (!fill_and_publish(e, ring.room(), mine, n, message)) break;
    q.cursor.store(mine + 1, std::memory_order_relaxed);
    return true;
  }
  q.overruns.fetch_add(1, std::memory_order_relaxed);
  return false;
}
}  // namespace detail

// Appends one entry; false (and overruns+1) when no entry was free, or the
// one claimed was taken away before it could be published. With `message`
// (n.length <= ring.room() bytes; a longer one is not carried), the entry
// carries the message itself (inline delivery). The usual case first: the
// hint names the entry free for it, claimed by one compare-and-swap;
// otherwise the walk. room_checked: the caller passes a message only when
// it fits (the receiving interface: a slot's inline_limit, checked against
// its card's room when the slot is copied), so the usual case does not
// compare its length again.
template <bool room_checked = false>
[[gnu::always_inline]] inline bool notification_append(
    notification_queue_control& q, const notification_ring& ring, const notification& n,
    const std::byte* message = nullptr) noexcept {
  const uint64_t at = q.cursor.load(std::memory_order_relaxed);  // where to start: a hint
  notification_entry& e = ring.at(at);
  uint64_t flag = encode_wrap_flag(at, entry_state::free);
  if (__builtin_expect(!e.wrap_flag.compare_exchange_strong(
                           flag, encode_wrap_flag(at, entry_state::claimed),
                           std::memory_order_acquire, std::memory_order_relaxed),
                       0))
    return detail::append_walk(q, ring, n, message, at);
  if (__builtin_expect(!detail::fill_and_publish<room_checked>(e, ring.room(), at, n, message),
                       0)) {
    q.overruns.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  q.cursor.store(at + 1, std::memory_order_relaxed);
  // The entry the next append will claim, owned before then: the claim's
  // compare-and-swap and the publish's (which waits for the fill's stores)
  // need both its lines, last written by the reader, which frees each entry
  // it takes; fetched now, they come while the sender does other work.
  sys::prefetch_lines<true>(ring.after(e), true);
  return true;
}

namespace detail {
// The entry at the reader's cursor c is claimed: true once it has been
// claimed for patience_ns. The clock is read only at every
// hole_check_period-th look at one claimed entry (the first such read
// starts its wait), not at each: a writer's claim usually ends within a
// few looks, and a clock read costs more than the look.
inline bool claimed_too_long(notification_reader& r, uint64_t c) noexcept {
  if (r.claimed_looks == 0 || r.claimed_cursor != c) {
    r.claimed_cursor = c;
    r.claimed_looks = 1;
    r.claimed_since = 0;
    return false;
  }
  if (++r.claimed_looks % hole_check_period != 0) return false;
  const uint64_t now = sys::clock::monotonic_ns();
  if (r.claimed_since == 0) {
    r.claimed_since = now;
    return false;
  }
  return now - r.claimed_since >= r.patience_ns;
}

// The entry at the reader's cursor c is free: true when writers have gone
// past it (some entry between it and the NQCB cursor is claimed or
// written), so it is a hole to pass over. A cursor that points nowhere a
// writer could have reached from c is put back at c.
[[gnu::noinline]] inline bool writers_went_past(notification_queue_control& q,
                                                const notification_ring ring, uint64_t c,
                                                uint64_t hint) noexcept {
  const uint64_t cap = ring.cap;
  const uint64_t ahead = hint - c;  // hint: the caller's one copy of the NQCB cursor
  if (ahead == 0) return false;
  if (ahead > cap) {  // behind me or more than a lap ahead: only a scribble puts it there
    (void)q.cursor.compare_exchange_strong(hint, c, std::memory_order_relaxed);
    return false;
  }
  for (uint64_t i = 1; i < ahead; ++i) {
    const uint64_t f = ring.at(c + i).wrap_flag.load(std::memory_order_acquire);
    if (f == encode_wrap_flag(c + i, entry_state::claimed) || written_for(f, c + i)) return true;
  }
  return false;
}

// When an idle reader looks at the NQCB cursor (writers_went_past). Each
// writer moves that cursor with every notification, so a reader that read
// it during every wait would often be waiting for that line (a miss) when
// its entry is written, and notice the entry late. So a calm reader looks
// only when it has found its entry free hole_check_period times at one
// cursor value (in a steady exchange the next entry comes sooner); a wary
// one at every idle take. A reader starts wary, and is wary again as soon
// as it finds a hole, or the cursor anywhere but where it stands (or one
// behind: a writer that has published the entry just taken and not yet
// moved the cursor past it); it calms down once it has found the cursor in
// place wary_looks times in a row. Holes come only from a cursor moved
// ahead, which honest writers never do, so a hostile mapper that keeps
// moving it keeps the reader wary.
// (hole_check_period, wary_looks: defined before notification_reader.)

// notification_waiting found the entry at the reader's cursor claimed: a
// writer is filling it, and publishes it within a few hundred
// instructions, so a poll that finds it so has nothing to take yet, as
// when it is free. Only every hole_check_period-th such look (counted with
// the free ones, in idle_polls) says there is something to do, so that the
// take's walk can give up on an entry held past patience_ns
// (claimed_too_long). Before, every poll that came while a writer filled
// the entry ran the receive loop, the walk and a clock read: a cost, and
// the AM card's count per received message moved with the two processes'
// timing (decisions.md, h31h). A take (notification_take, the AM card's
// receive) still walks at every claimed look, as before.
[[gnu::always_inline]] inline bool claimed_look_due(notification_reader& r) noexcept {
  return ++r.idle_polls % hole_check_period == 0;
}

// The entry at the reader's cursor c is free: is it a hole? At once when
// the next entry is claimed or written for its own cursor value (writers,
// which take the first free entry from the hint on, went past c): that
// line is one no writer touches until the message after this one. A longer
// run of free entries behind the writers: writers_went_past, when the
// schedule above says. The reader does not ask for its own entry's second
// line at each idle look: one that did took that line back from the
// writer (which asks for it for ownership after each publish) again and
// again, so the writer's fill waited for it between its claim and its
// publish while the reader's polls took the first line away too (the
// native round trip over Hamlyn 606 -> 566 ns; decisions.md, h28h). The
// second line comes when the message is read, or by the take's prefetch
// of the next entry (notification_take_in_place_usual).
[[gnu::always_inline]] inline bool is_hole(notification_queue_control& q,
                                           const notification_ring& ring, notification_reader& r,
                                           uint64_t c) noexcept {
  const uint64_t next = ring.at(c + 1).wrap_flag.load(std::memory_order_acquire);
  if (next == encode_wrap_flag(c + 1, entry_state::claimed) || written_for(next, c + 1)) {
    r.wary = wary_looks;
    return true;
  }
  if (__builtin_expect(r.wary == 0 && ++r.idle_polls % hole_check_period != 0, 1)) return false;
  const uint64_t hint = q.cursor.load(std::memory_order_relaxed);  // copied once
  if (hint == c || hint == c - 1) {                                // in place
    if (r.wary) --r.wary;
    return false;
  }
  r.wary = wary_looks;
  return writers_went_past(q, ring, c, hint);
}
}  // namespace detail

namespace detail {
// Where the message of an entry taken in place lies: a compact entry's at
// its first byte, a full one's after its fields.
[[gnu::always_inline]] inline const std::byte* carried_at(notification_entry& e,
                                                          bool compact) noexcept {
  return compact ? reinterpret_cast<const std::byte*>(&e) : entry_message(e);
}

// The entry e at the reader's cursor c is written for it (compact: in the
// compact form): copies it out (each field read once), gives it to the
// next lap's writers and advances. False (counted) when it cannot be a
// writer's: unknown flags, a carried message longer than an entry holds
// (`room`), or a compact one shorter than its 16 bytes of head.
// In place (notification_take_in_place): the message is not copied.
template <bool in_place = false>
[[gnu::always_inline]] inline bool take_written(notification_entry& e, uint64_t c, uint64_t cap,
                                                uint32_t room, notification_reader& r,
                                                notification& out, std::byte* message,
                                                bool compact = false) noexcept {
  bool good;
  if (compact) {
    uint64_t f;  // copied once
    std::memcpy(&f, reinterpret_cast<const std::byte*>(&e) + 8, sizeof f);
    out.slot = static_cast<uint32_t>(f & 0xffff);
    out.metadata_index = fast_index;
    out.source = static_cast<uint32_t>(f >> 16 & 0xffff);
    out.metadata = headless_word | f >> 48;
    out.length = f >> 32 & 0xffff;
    out.carried = true;
    good = out.length - 16 <= room - 16;
  } else {
    out.slot = e.slot;
    out.metadata_index = e.metadata_index;
    out.source = e.source;
    out.metadata = e.metadata;
    out.length = e.length;
    const uint16_t flags = e.flags;  // copied once
    out.carried = flags == entry_flag_carried;
    good = (flags & ~known_entry_flags) == 0 && (!out.carried || out.length <= room);
  }
  // A 128-byte entry's whole room, whatever the length: a fixed-size copy
  // is a few moves; from a longer entry, the message's length.
  if constexpr (!in_place)
    if (out.carried && good && message)
      std::memcpy(message, carried_at(e, compact),
                  room == notification_inline_bytes ? notification_inline_bytes : out.length);
  // Give the entry to the next lap's writers only after it has been copied out.
  e.wrap_flag.store(encode_wrap_flag(c + cap, entry_state::free), std::memory_order_release);
  r.cursor = c + 1;
  r.idle_polls = 0;
  if (__builtin_expect(good, 1)) return true;
  ++r.malformed;  // a forged entry: passed over
  return false;
}

// notification_take beyond its usual cases: passes over (and counts)
// entries that cannot be for the reader, at most cap of them per call.
// In place: `at` is where the taken entry's message lies (carried_at).
template <bool in_place = false>
[[gnu::noinline]] inline bool take_walk(notification_queue_control& q, const notification_ring ring,
                                        notification_reader& r, notification& out,
                                        std::byte* message,
                                        const std::byte** at = nullptr) noexcept {
  const uint64_t cap = ring.cap;
  for (uint64_t looked = 0; looked < cap; ++looked) {
    const uint64_t c = r.cursor;
    notification_entry& e = ring.at(c);
    uint64_t flag = e.wrap_flag.load(std::memory_order_acquire);
    if (written_for(flag, c)) {
      const bool compact = flag & 1;
      if (take_written<in_place>(e, c, cap, ring.room(), r, out, message, compact)) {
        if (at) *at = carried_at(e, compact);
        return true;
      }
      continue;
    }
    const bool claimed = flag == encode_wrap_flag(c, entry_state::claimed);
    if (claimed && !claimed_too_long(r, c)) return false;  // a writer is filling it
    const bool hole = flag == encode_wrap_flag(c, entry_state::free);
    if (hole && !is_hole(q, ring, r, c)) return false;  // nothing yet
    // Not for me: free it for the next lap. A compare-and-swap, so a writer
    // that claims (or publishes) it meanwhile keeps it (and I look at it again).
    if (!e.wrap_flag.compare_exchange_strong(flag, encode_wrap_flag(c + cap, entry_state::free),
                                             std::memory_order_acq_rel, std::memory_order_relaxed))
      continue;
    ++(claimed ? r.abandoned : hole ? r.holes : r.damaged);
    r.claimed_looks = 0;
    r.cursor = c + 1;
    r.idle_polls = 0;
  }
  return false;
}
}  // namespace detail

// Takes the entry at the reader's cursor if it was written for it, passing
// over (and counting) entries that cannot be (at most cap of them per call).
// Each field is read once, into `out`; the caller checks the copy. When the
// entry carries the message (out.carried), its room is copied into
// `message` (room for ring.room() bytes; a reader that set up no inline
// delivery may pass none and must then refuse it). Inline: the two
// usual cases (an entry written for the cursor, or a free one that is no
// hole); the rest in take_walk.
[[gnu::always_inline]] inline bool notification_take(notification_queue_control& q,
                                                     const notification_ring& ring,
                                                     notification_reader& r, notification& out,
                                                     std::byte* message = nullptr) noexcept {
  const uint64_t c = r.cursor;
  notification_entry& e = ring.at(c);
  const uint64_t flag = e.wrap_flag.load(std::memory_order_acquire);
  if (detail::written_for(flag, c)) {
    if (__builtin_expect(
            detail::take_written(e, c, ring.cap, ring.room(), r, out, message, flag & 1), 1))
      return true;
  } else if (flag == encode_wrap_flag(c, entry_state::free) && !detail::is_hole(q, ring, r, c)) {
    return false;  // nothing yet
  }
  return detail::take_walk(q, ring, r, out, message);
}

// notification_take for a reader that reads a carried message where it
// lies (the AM card): the fields are copied out and checked as
// notification_take does, but not the message: `message` points at it in
// the entry (when out.carried). The entry is free for the next lap's
// writers at once, so only a reader whose honest writers cannot come round
// to it before it is done with the message may take in place: the AM
// card, each of whose entries stands for a block its sender has lent and
// gets back only when the packet is released, in a queue with an entry
// for every block. A hostile mapper may rewrite the entry meanwhile, as
// it may any packet buffer in card memory: the reader copies what it
// checks.
// What notification_take_in_place_usual found.
enum class take_outcome {
  taken,    // an entry written for the cursor, taken
  nothing,  // the entry at the cursor is free and no hole: nothing yet
  other,    // anything else (a hole, a claimed, damaged or malformed entry): the walk's
};

// notification_take_in_place's usual cases alone, for a caller that keeps
// `out` out of memory (no call sees it: the AM card's receive) and leaves
// the rest (other) to notification_take_in_place, which takes them as
// before. A malformed entry written for the cursor is passed over and
// counted here, as there.
[[gnu::always_inline]] inline take_outcome notification_take_in_place_usual(
    notification_queue_control& q, const notification_ring& ring, notification_reader& r,
    notification& out, const std::byte*& message) noexcept {
  const uint64_t c = r.cursor;
  notification_entry& e = ring.at(c);
  const uint64_t flag = e.wrap_flag.load(std::memory_order_acquire);
  if (detail::written_for(flag, c)) {
    const bool compact = flag & 1;
    if (__builtin_expect(
            detail::take_written<true>(e, c, ring.cap, ring.room(), r, out, nullptr, compact), 1)) {
      message = detail::carried_at(e, compact);
      // A compact entry's second line, asked for as soon as its first has
      // come, when the message ends there (97-128 bytes compact: an MPI
      // message of 33-64 B): its last bytes (the riding ack) are read only
      // after the first line's. (Measured at 72 bytes, when 8 B went
      // compact: 8 B no slower than the full form with it, slower
      // without; past the second line, 136 bytes, slower with it.)
      if (compact && out.length - 65 < 64) __builtin_prefetch(message + 64);
      // The next entry, asked for while this packet is handled: in a
      // stream it is written already, and its two lines are the next take's
      // misses.
      sys::prefetch_lines<false>(ring.after(e), true);
      return take_outcome::taken;
    }
  } else if (flag == encode_wrap_flag(c, entry_state::free) && !detail::is_hole(q, ring, r, c)) {
    return take_outcome::nothing;
  }
  return take_outcome::other;
}

[[gnu::always_inline]] inline bool notification_take_in_place(notification_queue_control& q,
                                                              const notification_ring& ring,
                                                              notification_reader& r,
                                                              notification& out,
                                                              const std::byte*& message) noexcept {
  const take_outcome got = notification_take_in_place_usual(q, ring, r, out, message);
  if (got != take_outcome::other) return got == take_outcome::taken;
  return detail::take_walk<true>(q, ring, r, out, nullptr, &message);
}

// Whether notification_take has something to do at the reader's cursor: an
// entry there that is written (or damaged), a free one that is a hole
// (is_hole's schedule, which this look advances as a take's would), or a
// claimed one at its scheduled look (claimed_look_due). A poll that finds
// nothing stops here.
[[gnu::always_inline]] inline bool notification_waiting(notification_queue_control& q,
                                                        const notification_ring& ring,
                                                        notification_reader& r) noexcept {
  const uint64_t c = r.cursor;
  const uint64_t flag = ring.at(c).wrap_flag.load(std::memory_order_acquire);
  if (flag == encode_wrap_flag(c, entry_state::free)) return detail::is_hole(q, ring, r, c);
  return flag != encode_wrap_flag(c, entry_state::claimed) || detail::claimed_look_due(r);
}

}  // namespace hpam::nic::hamlyn
