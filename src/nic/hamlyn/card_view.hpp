// What the parts of a Hamlyn card share (Hamlyn OSDI'96 sections 2-3): the
// card's configuration, where the parts of a card segment lie (its
// geometry), and what a process knows about one card, its own or a peer's
// (card_view: the mapping, checked at attach). The setup code, the send
// terminus and the receiving interface all work through views; the card
// (hamlyn_card.hpp) makes them.
#pragma once

#include <sys/types.h>
#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>

#include "nic/card.hpp"
#include "nic/hamlyn/layout.hpp"
#include "nic/hamlyn/notification_queue.hpp"
#include "sys/cell_fifo.hpp"
#include "sys/ring.hpp"
#include "sys/shared_segment.hpp"

namespace hpam::nic::hamlyn {

// Messages up to this size are copied inline by default, at most
// max_direct_io_limit; the deposit card raises it to its batch_limit (knob
// batch_limit), which stays within the maximum.
constexpr uint32_t default_direct_io_limit = 256;
constexpr uint32_t max_direct_io_limit = 4096;
// The most slots a card's table holds; the deposit layer's
// max_registrations (knob max_registrations) stays within it.
constexpr uint32_t max_slot_count = 65536;

struct card_config {
  std::string job;                   // job id, same in every process
  int nprocs = 1;                    // processes in the job
  int my_proc = 0;                   // this process
  std::string what = "hamlyn";       // segment purpose (several cards per process may coexist)
  uint32_t slot_count = 64;          // slots in the table
  uint32_t metadata_entries = 1024;  // metadata pool shared by the slots' metadata areas
  uint32_t notification_queues = 1;  // queues (a slot names one)
  uint64_t notify_capacity = 1024;   // entries per queue (power of two)
  uint32_t notify_entry_bytes = min_notification_entry_bytes;  // bytes per entry (power of two,
                                                               // 128..512: room for messages
                                                               // of entry - 32 bytes)
  uint32_t packet_size = 4096;       // bytes per packet, 64-byte header included (>= 128)
  uint32_t rx_packets = 64;          // inbound packet buffers for the fallback path (power of two)
  uint64_t area_bytes = 16u << 20;   // message-area memory in the card segment
  uint32_t work_queue_entries = 64;  // send terminus work queue (power of two)
  uint32_t direct_io_limit = default_direct_io_limit;  // messages up to this size are copied
                                                       // inline
  uint32_t engine_budget = 0;  // packets the card sends per kick; 0 = all it can
  uint32_t batch_limit = 0;    // messages up to this size (<= direct_io_limit) to memory reached
                               // by cross-memory attach wait in the work queue and are deposited
                               // together at the next kick, full queue or flush; 0: each at once
  bool cross_memory = true;    // use/accept process_vm_writev/readv; false forces packets
  bool direct_holds = true;    // offer hold lines for direct deposits and fast-mode arrivals,
                               // and hold peers' slots by theirs (layout.hpp, hold_line);
                               // false: slot::users only
  uint64_t attach_timeout_ms = default_attach_timeout_ms;  // how long attach_peer waits for the
                                                           // peer's card
  uint64_t job_key = 0;       // published in the card header for the job (0: none)
  bool resident_area = true;  // the message area is mapped at setup with the rest of the card
                              // (shared_segment::prefault); false: its pages come at first use
                              // (a deposit card's memory for users, most of it never used)
};

// A card's counts and where its parts lie, computed from the counts alone
// (card_geometry_for), the same on every end. A peer's are read once from
// its header at attach, checked against what the counts imply and against
// the mapping, and used from then on: never the header again, which its
// owner (or any peer) could rewrite at any time.
struct card_geometry {
  uint32_t slot_count = 0;           // slots in the table
  uint32_t metadata_entries = 0;     // entries in the metadata pool
  uint32_t notification_queues = 0;  // queues
  uint32_t packet_size = 0;          // bytes per inbound packet buffer
  uint32_t rx_packets = 0;           // inbound packet buffers (power of two)
  uint64_t notify_capacity = 0;      // entries per queue (power of two)
  uint32_t notify_entry_bytes = 0;   // bytes per entry (power of two, 128..512)
  uint64_t area_bytes = 0;           // message-area memory
  uint64_t slots_offset = 0;         // card offsets of each part
  uint64_t metadata_offset = 0;
  uint64_t queues_offset = 0;
  uint64_t entries_offset = 0;  // entries of queue 0; queue q's follow at q * capacity entries
  uint64_t rx_free_offset = 0;
  uint64_t rx_ready_offset = 0;
  uint64_t rx_buffers_offset = 0;
  uint64_t area_offset = 0;
  uint64_t size = 0;  // card payload bytes in all
};
// The geometry the counts of `g` imply (its offsets are filled in).
card_geometry card_geometry_for(card_geometry g);

// Everything a process knows about one card (its own or a peer's).
struct card_view {
  sys::shared_segment segment;         // the mapping
  card_header* header = nullptr;       // at the start of the payload
  std::byte* base = nullptr;           // payload start: card offsets are relative to it
  slot* slots = nullptr;               // slot table
  metadata_entry* metadata = nullptr;  // metadata pool
  sys::mpmc_fifo* rx_free = nullptr;   // inbound buffers free for senders
  sys::cell_fifo rx_ready;             // inbound packets waiting for the owner (see push_packet)
  std::byte* area = nullptr;           // message-area memory
  pid_t pid = 0;                       // owner process
  bool cross_memory = false;           // process_vm_writev/readv into the owner works
  bool attached = false;               // mapped and validated
  card_geometry geo;                   // counts and offsets, checked at attach
  hold_line* holds = nullptr;          // its hold lines [nprocs], checked at attach; null: none
  uint64_t job_key = 0;                // the job key its header published, read at attach
  // q < geo.notification_queues, i < geo.rx_packets (callers check).
  notification_queue_control* queue(uint32_t q) const {
    return reinterpret_cast<notification_queue_control*>(base + geo.queues_offset) + q;
  }
  notification_ring ring(uint32_t q) const {
    return {base + geo.entries_offset + q * geo.notify_capacity * geo.notify_entry_bytes,
            static_cast<uint32_t>(geo.notify_capacity), geo.notify_entry_bytes};
  }
  std::byte* rx_buffer(uint64_t i) const {
    return base + geo.rx_buffers_offset + i * geo.packet_size;
  }
};

// What arrived at a card, as a reader sees it: the header's counters, with
// every hold line's fast arrivals added to packets and messages (layout.hpp,
// arrival_counters). Each counter read once, relaxed: statistics only.
struct arrival_totals {
  uint64_t packets = 0;             // packets deposited
  uint64_t messages = 0;            // messages completed (notified or not)
  uint64_t key_rejections = 0;      // wrong protection key
  uint64_t bounds_rejections = 0;   // outside the message area (or secondary range)
  uint64_t revoked_rejections = 0;  // slot revoked or free
  uint64_t mode_rejections = 0;     // one-shot used, fast-mode misuse
  uint64_t malformed = 0;           // bad slot/metadata index, lengths
  uint64_t fallback_packets = 0;    // packets that came through the inbound FIFO
};
// v's totals; v.holds (when not null) has `lines` lines.
arrival_totals arrival_totals_of(const card_view& v, int lines);

enum class client_lookup { not_yet, found, damaged };

// A copy of the client header of v's card, if its owner has published one
// with this magic, version and size, lying inside v's area memory; `offset`
// is where it lies. A copy: the owner's memory is read once and the copy is
// what the caller checks further.
client_lookup find_client(const card_view& v, const client_prefix& expected, void* copy,
                          uint64_t& offset);
template <class Header>
client_lookup find_client(const card_view& v, uint64_t magic, uint32_t version, Header& copy,
                          uint64_t& offset) {
  static_assert(std::is_trivially_copyable_v<Header> && sizeof(Header) >= sizeof(client_prefix));
  return find_client(v, client_prefix{magic, version, sizeof(Header)}, &copy, offset);
}

// The inbound FIFO (the fallback path: packets the owner serves when it
// polls). A sender takes a buffer from rx_free, then the next cell of
// rx_ready, and writes the packet, header then pieces, into the cell when
// it fits beside the cell's entry (rx_ready_cell bytes: a 64-byte header
// and 48 more, which holds an atomic operation and its answer), else into
// the buffer; the entry <length, buffer> is published last. So the owner
// finds a small packet in the cache lines it polls, one line transfer
// instead of entry then buffer. The buffer is still taken and given back
// for every packet, and the owner gives the cell back before the buffer:
// there is a cell for every buffer a sender holds, so a sender claims its
// cell without looking.
constexpr uint32_t rx_ready_cell = 128;
constexpr uint64_t rx_ready_capacity(uint32_t rx_packets) {
  return rx_packets < 2 ? 2 : rx_packets;
}
// rx_free has room for twice the buffers: the owner gives a buffer back
// half a ring away from the one senders take next, never into the same
// cache line (a full ring would put them side by side, and every sender's
// take would wait for the line the owner has just written).
constexpr uint64_t rx_free_capacity(uint32_t rx_packets) {
  return 2 * rx_ready_capacity(rx_packets);
}
constexpr uint64_t inbound_entry(uint32_t buffer, uint32_t length) {
  return (uint64_t{length} << 32) | buffer;
}
constexpr uint32_t inbound_buffer(uint64_t entry) {
  return static_cast<uint32_t>(entry);
}
constexpr uint32_t inbound_length(uint64_t entry) {
  return static_cast<uint32_t>(entry >> 32);
}

namespace detail {
// The pieces, one after the other, at dst.
inline void gather(std::byte* dst, const iovec* data, int n) {
  for (int i = 0; i < n; ++i) {
    if (data[i].iov_len) std::memcpy(dst, data[i].iov_base, data[i].iov_len);
    dst += data[i].iov_len;
  }
}
}  // namespace detail

// Places one raw packet in v's inbound FIFO: header, then the pieces. False
// when the FIFO has no free buffer (try again after polling) or the packet
// does not fit a buffer.
bool push_packet(const card_view& v, const packet_header& h, const iovec* pieces, int n);

}  // namespace hpam::nic::hamlyn
