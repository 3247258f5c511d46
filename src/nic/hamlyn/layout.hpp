// The Hamlyn card's shared structures (Hamlyn OSDI'96 sections 2.2-2.7,
// HotInterconnects'95 sections 2.2-2.5), laid out in each process's card
// segment. A sender's process maps the receiver's segment and does the
// receiving interface's work there (checks, deposit, counting, notification),
// so every structure a sender touches lives in shared memory and holds
// offsets, never pointers.
//
// Card segment (after the sys::segment_header):
//   card_header | slot[slot_count] | metadata_entry[metadata_entries] |
//   notification queues (control + entries) | inbound packet FIFOs + buffers |
//   message-area memory (area_bytes, handed out by the owner's setup code)
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace hpam::nic::hamlyn {

constexpr uint64_t card_magic = 0x4e594c4d41484d50ull;  // "PMHAMLYN"
constexpr uint32_t card_version =
    9;  // 2: notification entries carry the whole cursor;
        // 3: entries of 128 bytes that can carry a message; inline_limit;
        // 4: the inbound ready FIFO's cells carry small packets;
        // 5: hold lines for direct deposits (card_header::direct_holds);
        // 6: hold lines hold fast-mode arrivals too (hold_line::arrival_plus_one);
        // 7: a fast-mode arrival held by a hold line is counted there
        //    (hold_line::fast_arrivals; readers add it: arrival_totals)
        // 8: notification entries of 128 to 512 bytes (card_header::notify_entry_bytes)
        // 9: compact entries (entry_state::written_compact, compact_fields)

// Slot modes (OSDI'96 2.7).
enum class slot_mode : uint32_t {
  normal = 0,             // key and bounds of the slot
  paranoid = 1,           // plus secondary base/bound/key of the metadata entry
  paranoid_one_shot = 2,  // paranoid, and one message per metadata entry until re-armed
  fast = 3,               // single-packet messages only, metadata index all ones
};
constexpr uint32_t slot_mode_count = 4;

// Where a slot's message area lives.
enum class area_memory : uint32_t {
  card = 0,     // in the owner's card segment: senders write it directly
  process = 1,  // the owner's private memory: cross-memory attach or packets
};

enum class slot_state : uint32_t { free = 0, active = 1, revoked = 2 };

// A slot: names and protects a message area (OSDI'96 2.2). Written only by
// the owner's setup code ("the OS"); read by every sender.
struct slot {
  std::atomic<uint64_t> protection_key;  // must match the packet's key; 0 = none matches
  std::atomic<uint32_t> state;           // slot_state, published after the fields below
  std::atomic<uint32_t> users;           // senders inside an arrival on this slot right now
  uint64_t base;                // card: offset in the area memory; process: owner's address
  uint64_t bound;               // bytes in the message area
  uint32_t mode;                // slot_mode
  uint32_t memory;              // area_memory
  uint32_t metadata_base;       // first entry of this slot's metadata area in the pool
  uint32_t metadata_count;      // entries in the metadata area (0 in fast mode)
  uint32_t notification_queue;  // which of the card's queues gets this slot's arrivals
  uint32_t generation;          // bumped each time the slot is set up
  uint32_t inline_limit;        // fast mode: a message of up to this many bytes travels
                                // in its notification entry, not at base + offset
                                // (0: never; at most the room of its queue's entries,
                                // notification_room)
  uint32_t reserved;            // zero
};
static_assert(std::is_standard_layout_v<slot>);
static_assert(sizeof(slot) == 64);
static_assert(offsetof(slot, base) == 16);
static_assert(offsetof(slot, inline_limit) == 56);
static_assert(std::atomic<uint32_t>::is_always_lock_free &&
              std::atomic<uint64_t>::is_always_lock_free);

constexpr uint32_t user_metadata_bytes = 60;  // OSDI'96: up to 60 bytes in the first packet
constexpr uint32_t fast_index = 0xFFFFFFFFu;  // metadata index all ones: fast mode (2.7)

// One entry of a metadata area (OSDI'96 Table 2), one per expected message.
struct metadata_entry {
  std::byte user_metadata[user_metadata_bytes];  // metadata of the message's first packet
  std::atomic<uint32_t> packet_accumulator;      // sum of deltas, mod 2^32; 0 = complete (2.5)
  std::atomic<uint64_t> paranoid_key;            // secondary protection key (paranoid modes)
  uint64_t paranoid_low;                         // secondary base: lowest offset allowed
  uint64_t paranoid_high;                        // secondary bound: first offset not allowed
  uint64_t receive_class;                        // the receiving library's cookie (opaque)
  std::atomic<uint32_t> one_shot_used;           // paranoid_one_shot: 1 after the first message
  uint32_t metadata_length;                      // bytes of user metadata deposited
  uint64_t messages;                             // messages completed on this entry
  uint64_t reserved[2];                          // zero
};
static_assert(std::is_standard_layout_v<metadata_entry>);
static_assert(sizeof(metadata_entry) == 128);
static_assert(offsetof(metadata_entry, packet_accumulator) == 60);
static_assert(offsetof(metadata_entry, paranoid_key) == 64);

// Bytes of a message a 128-byte notification entry can carry (inline
// delivery). A card's entries may be longer (card_header::notify_entry_bytes,
// a power of two from 128 to 512 bytes): the room then goes on past the
// struct below, up to the entry's end (notification_room).
constexpr uint32_t notification_inline_bytes = 96;
constexpr uint32_t min_notification_entry_bytes = 128;
constexpr uint32_t max_notification_entry_bytes = 512;

// notification_entry::flags
constexpr uint16_t entry_flag_carried = 1u << 0;  // the message itself is in the entry
constexpr uint16_t known_entry_flags = entry_flag_carried;

// One notification queue entry (OSDI'96 Table 3). The paper's wrap flag is
// widened here to the whole cursor value the entry is for and its state, so
// a reader that keeps its own cursor can tell an entry written for it from
// an unwritten one, one being filled, or one left from an earlier lap or
// written by a hostile process (any process that maps the card can write
// it): see notification_queue.hpp. A writer claims a free entry by
// compare-and-swap on the flag, fills the fields and then publishes the
// written flag (release); the reader compares the flag with the one it
// expects for its cursor (acquire), copies the fields and frees the entry
// for the next lap.
//
// Inline delivery, an extension of fast mode (2.7): the paper's fast mode
// writes one word of metadata into the entry in place of a metadata entry
// pointer; a slot that asks for it (slot::inline_limit) has its small
// fast-mode messages written into the entry too, in place of the message
// area, as a modern NIC writes small packets into its completion queue
// entry. The reader then finds the message in the lines it polls. The
// struct is an entry's first 128 bytes: a card whose entries are longer
// (the AM card's, 512 bytes by default, so that an MPI message of up to 440
// bytes with its packet's headers travels in its entry, as Medusa's in its
// RX_READY cell) spaces them notify_entry_bytes apart, and their room runs
// on to the entry's end.
struct notification_entry {
  std::atomic<uint64_t> wrap_flag;  // encode_wrap_flag(cursor value, entry_state)
  uint32_t slot;                    // slot index
  uint32_t metadata_index;          // notification index (fast_index in fast mode)
  uint16_t source;                  // sending process (emulation: who completed it; < 65535)
  uint16_t flags;                   // entry_flag_carried: `length` bytes of message follow
  uint32_t length;    // bytes of the completing packet's data (fast mode: the message)
  uint64_t metadata;  // card offset of the metadata entry, or the fast-mode word
  std::byte message[notification_inline_bytes];  // the message, when flags say it is carried
};
static_assert(std::is_standard_layout_v<notification_entry>);
static_assert(sizeof(notification_entry) == 128);
static_assert(offsetof(notification_entry, metadata) == 24);
static_assert(offsetof(notification_entry, message) == 32);
static_assert(std::atomic<uint64_t>::is_always_lock_free);

// Bytes of message an entry of entry_bytes carries.
constexpr uint32_t notification_room(uint32_t entry_bytes) {
  return entry_bytes - static_cast<uint32_t>(offsetof(notification_entry, message));
}
constexpr uint32_t max_notification_inline_bytes =
    notification_room(max_notification_entry_bytes);  // 480
static_assert(notification_room(min_notification_entry_bytes) == notification_inline_bytes);
// The entry size that carries messages of up to `inline_bytes` (<=
// max_notification_inline_bytes): the smallest power of two from 128 up.
constexpr uint32_t notification_entry_bytes_for(uint32_t inline_bytes) {
  uint32_t b = min_notification_entry_bytes;
  while (notification_room(b) < inline_bytes) b *= 2;
  return b;
}
static_assert(notification_entry_bytes_for(0) == 128 && notification_entry_bytes_for(96) == 128 &&
              notification_entry_bytes_for(97) == 256 && notification_entry_bytes_for(480) == 512);

// What an entry's wrap flag says of the cursor value it names.
enum class entry_state : uint64_t {
  free = 0,             // nobody has written it for this cursor value yet
  claimed = 1,          // a writer owns it and is filling the fields
  written = 2,          // ready for the reader
  written_compact = 3,  // ready for the reader, in the compact form (below)
};

// A fast-mode word with this bit (and a 16-bit value beside it) says that
// the message's first 16 bytes are not read by its receiver (a headless
// packet of the Hamlyn AM card, whose wire header is not written). A
// notification that carries such a message of 16 bytes or more, with a
// slot index below 2^16, may be written compact: the message from the
// entry's first byte, its first 16 bytes replaced by the wrap flag and
// one word of fields (compact_fields), so that a message of n bytes spans
// the lines of entry bytes [0, n) instead of [32, 32 + n): one line fewer
// when n modulo 64 is 0 or past 32 (a 0-byte MPI message's 64-byte
// packet: one line), as Medusa's headless cell; the writer goes compact
// only then (compact_fits). The reader gets the fast-mode word
// back whole (headless_word | its 16 bits), metadata_index fast_index,
// and the message at the entry's start, of its length.
constexpr uint32_t headless_shift = 32;
constexpr uint64_t headless_word = uint64_t{1} << headless_shift;
// The compact entry's word at byte 8: slot, source, length and the fast-mode
// word's low 16 bits, 16 bits each from the low end.
constexpr uint64_t compact_fields(uint64_t slot, uint64_t source, uint64_t length, uint64_t word) {
  return slot | uint64_t{static_cast<uint16_t>(source)} << 16 | length << 32 | word << 48;
}
// Whether a carried message (length <= its entry's room) goes compact:
// where that saves a line, i.e. its length modulo 64 is 0 or past 32
// (from byte 32 of the entry, the full form's message ends in the line
// after the compact one's; otherwise both end in the same line, as an
// 8-byte MPI message's 72-byte packet: the full form then, which costs
// fewer instructions), and may: the word headless, its other bits and
// the slot index below 2^16, the length from 16 bytes (the source,
// < 65535, fits).
constexpr bool compact_saves_a_line(uint64_t length) {
  return ((length + 31) & 63) < 32;
}
constexpr bool compact_fits(uint64_t slot, uint64_t length, uint64_t word) {
  return compact_saves_a_line(length) && ((word - headless_word) | slot | (length - 16)) < 0x10000;
}
static_assert(compact_saves_a_line(64) && compact_saves_a_line(128) && compact_saves_a_line(33) &&
              compact_saves_a_line(63) && !compact_saves_a_line(72) && !compact_saves_a_line(96) &&
              !compact_saves_a_line(65) && !compact_saves_a_line(16) && !compact_saves_a_line(32));
static_assert(compact_fits(0, 48, headless_word) && compact_fits(0, 64, headless_word) &&
              compact_fits(0xffff, 448, headless_word | 0xffff) &&
              !compact_fits(0, 15, headless_word) && !compact_fits(0x10000, 64, headless_word) &&
              !compact_fits(0, 64, 5) && !compact_fits(0, 64, headless_word << 1));
constexpr uint64_t encode_wrap_flag(uint64_t cursor, entry_state s) {
  return (cursor << 2) | static_cast<uint64_t>(s);
}
constexpr uint64_t wrap_flag_cursor(uint64_t flag) {
  return flag >> 2;
}
constexpr uint64_t wrap_flag_state(uint64_t flag) {
  return flag & 3;
}

// Notification queue control block (NQCB). Its cursor points at the tail:
// where the next writer will probably find a free entry. It is a hint
// only: writers start there and claim the first free entry at or after it
// (the entry's own flag names the cursor value), and the reader, which
// keeps its real cursor in its own memory, puts it back when it points
// nowhere useful. A process that rewrites it can cost a writer a longer
// walk, never an entry. A writer that finds no free entry counts the
// notification in `overruns` instead of overwriting one.
struct notification_queue_control {
  alignas(64) std::atomic<uint64_t> cursor;  // hint: next cursor value to write (writers)
  uint64_t pad0[7];                          // keeps the cursor on its own line
  alignas(64) uint64_t capacity;             // entries (power of two; informative: users
                                             // take it from their checked geometry)
  uint64_t entries_offset;                   // card offset of notification_entry[capacity]
  std::atomic<uint64_t> overruns;            // notifications lost because no entry was free
  uint64_t pad1[5];                          // zero
};
static_assert(std::is_standard_layout_v<notification_queue_control>);
static_assert(sizeof(notification_queue_control) == 128);
static_assert(offsetof(notification_queue_control, capacity) == 64);

// Packet kinds (flags field, low byte).
enum class packet_kind : uint32_t {
  data = 0,          // deposit into a message area (a Hamlyn message packet)
  read_request = 1,  // fallback get: send me [offset, offset+length) of the slot
  operation = 2,     // a hybrid deposit operation for the upper layer's handler
  reply = 3,         // answer to a read_request or operation of mine
};
constexpr uint32_t packet_kind_count = 4;
constexpr uint32_t flag_notify = 1u << 8;  // notify the receiver when the message completes
constexpr uint32_t flag_single =
    1u << 9;  // the message is this one packet (a 0 delta notifies at once)
constexpr uint32_t known_flags = 0xFFu | flag_notify | flag_single;

constexpr uint32_t encode_flags(packet_kind k, bool notify) {
  return static_cast<uint32_t>(k) | (notify ? flag_notify : 0u);
}
constexpr packet_kind flags_kind(uint32_t f) {
  return static_cast<packet_kind>(f & 0xFF);
}
constexpr bool flags_notify(uint32_t f) {
  return (f & flag_notify) != 0;
}

// Every packet's header (OSDI'96 Table 1), followed by metadata (first
// packet only) and then data.
struct packet_header {
  uint32_t destination;      // destination host (process)
  uint32_t source;           // sending process
  uint32_t slot;             // slot number at the destination
  uint32_t metadata_index;   // metadata entry (message identifier); fast_index = fast mode
  uint64_t protection_key;   // must match the slot's (or the entry's secondary) key
  uint64_t offset;           // where this packet's data go, from the message area base
  uint32_t length;           // data bytes in this packet
  uint32_t delta;            // added to the packet accumulator (2.5); 0 = single packet
  uint32_t metadata_length;  // metadata bytes following this header
  uint32_t flags;            // packet_kind | flag_notify
  uint64_t fast_word;        // fast mode: the one word of metadata; replies: operation id
  uint64_t reserved;         // zero
};
static_assert(std::is_standard_layout_v<packet_header> &&
              std::is_trivially_copyable_v<packet_header>);
static_assert(sizeof(packet_header) == 64);

// Counters of the receiving interface, in the card segment (senders add to
// them while doing the receiver's work). Relaxed atomics: statistics only.
// A fast-mode arrival held by its sender's hold line counts its packet and
// message in that line instead (hold_line::fast_arrivals: a plain store by
// that sender alone, no locked add on this line all senders share); a
// reader adds it to both (arrival_totals, card::arrivals).
struct arrival_counters {
  std::atomic<uint64_t> packets;             // packets deposited (besides the hold lines')
  std::atomic<uint64_t> messages;            // messages completed, notified or not (besides
                                             // the hold lines')
  std::atomic<uint64_t> key_rejections;      // wrong protection key
  std::atomic<uint64_t> bounds_rejections;   // outside the message area (or secondary range)
  std::atomic<uint64_t> revoked_rejections;  // slot revoked or free
  std::atomic<uint64_t> mode_rejections;     // one-shot used, fast-mode misuse
  std::atomic<uint64_t> malformed;           // bad slot/metadata index, lengths
  std::atomic<uint64_t> fallback_packets;    // packets that came through the inbound FIFO
};
static_assert(sizeof(arrival_counters) == 64);

// The card header at the start of the payload of every card segment.
struct card_header {
  uint64_t magic;                        // card_magic once valid
  uint32_t version;                      // card_version
  uint32_t header_size;                  // sizeof(card_header)
  uint64_t size;                         // payload bytes of the card segment
  int32_t owner_pid;                     // process that owns the card (for cross-memory attach)
  uint32_t my_proc;                      // owner's process index in the job
  uint32_t nprocs;                       // processes in the job
  uint32_t slot_count;                   // slots in the table
  uint32_t metadata_entries;             // entries in the metadata pool
  uint32_t notification_queues;          // notification queues
  uint32_t notify_capacity;              // entries per notification queue
  uint32_t notify_entry_bytes;           // bytes per entry (power of two, 128..512)
  uint32_t packet_size;                  // bytes per packet, header included
  uint32_t rx_packets;                   // inbound packet buffers (fallback path)
  uint64_t slots_offset;                 // card offset of slot[slot_count]
  uint64_t metadata_offset;              // card offset of metadata_entry[metadata_entries]
  uint64_t queues_offset;                // card offset of the notification queue controls
  uint64_t rx_free_offset;               // card offset of the inbound free FIFO (mpmc)
  uint64_t rx_ready_offset;              // card offset of the inbound ready FIFO (cell FIFO)
  uint64_t rx_buffers_offset;            // card offset of the inbound packet buffers
  uint64_t area_offset;                  // card offset of the message-area memory
  uint64_t area_bytes;                   // bytes of message-area memory
  uint64_t probe_value;                  // random; also held at probe_address in the owner
  uint64_t probe_address;                // owner's address of its private copy of probe_value
  std::atomic<uint32_t> done;            // owner has finished (drain) — read by peers
  uint32_t cross_memory_forbidden;       // owner forbids cross-memory attach into it
  uint64_t client_offset;                // area offset of the client header (client_prefix first)
  std::atomic<uint64_t> client_magic;    // its magic, published last (release); 0 = none yet
  uint64_t job_key;                      // the job key the owner publishes for the job's other
                                         // processes (0: none); written before the magic
  uint64_t direct_holds;                 // card offset of the hold lines (hold_line[nprocs],
                                         // in the area memory); 0: none (slot::users only)
  std::atomic<uint32_t> attached_peers;  // peers that have mapped this card
  std::atomic<uint32_t> heartbeat;       // owner: advanced each time it polls (card::beat)
  arrival_counters counters;             // what arrived here
};
static_assert(std::is_standard_layout_v<card_header>);
static_assert(offsetof(card_header, counters) % 64 == 0);
static_assert(sizeof(card_header) == 256);

// A sender's hold on a slot of this card for a direct deposit (one copied
// or read by the sender itself: receiving_interface::resolve) or for a
// fast-mode arrival (receiving_interface::arrive_fast, the AM card's every
// packet), when the card offers hold lines and the sender has joined the
// global barriers (sys/membarrier.hpp): the sender writes index + 1 into
// its own line before it reads the slot's state, and 0 when done, with
// plain stores (so no locked instruction waits for the store buffer, whose
// last store is the deposit into a line the owner may be reading); the
// owner's revoke stores the state, runs sys::barrier_all, then waits until
// no line names the slot. Of "line written, state read" and "state
// written, barrier, lines read", one sees the other: the deposit is
// refused, or the revoke waits for it. A direct deposit and a fast-mode
// arrival hold by a word each, so neither lets go of the other's hold.
// Each line is written by its sender only (any process could write any
// line, as it could slot::users: a revoke then waits its 2 s and says
// would_block, as for a sender that died inside).
// The line also counts its sender's fast-mode arrivals held by it, each one
// packet and one completed message, which then leave the header's shared
// counters alone: a load and a store by that sender, on the line it writes
// anyway.
struct alignas(64) hold_line {
  std::atomic<uint64_t> slot_plus_one;     // direct deposit: the slot held + 1; 0: none
  std::atomic<uint64_t> arrival_plus_one;  // fast-mode arrival: the slot held + 1; 0: none
  std::atomic<uint64_t> fast_arrivals;     // fast-mode arrivals held here and deposited: a
                                           // packet and a message each (arrival_counters)
  uint64_t pad[5];
};
static_assert(sizeof(hold_line) == 64);

// The layer above a card (the AM card, the deposit layer) keeps its own
// shared structures in the card's message-area memory, under a header of its
// own that starts with this prefix; card_header::client_offset names it.
struct client_prefix {
  uint64_t magic;    // the client's own magic, equal to card_header::client_magic
  uint32_t version;  // the client's layout version
  uint32_t size;     // sizeof the client's header
};
static_assert(std::is_standard_layout_v<client_prefix> && sizeof(client_prefix) == 16);

}  // namespace hpam::nic::hamlyn
