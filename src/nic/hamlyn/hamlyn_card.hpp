// The emulated Hamlyn interface of one process (OSDI'96 sections 2-3,
// HotInterconnects'95 sections 2-3).
//
// Setup code (the "OS" of the emulation, slot_table.hpp: create_slot,
// revoke, release_slot, allocate_area) writes the slot table; everything
// else is user level.
//
// Sending: a send terminus per process, a work queue of work_queue_entries
// transmission requests and a completion word the card advances as entries
// are sent. Small messages are copied into the entry (direct I/O); large
// ones are described by a gather list and read from the caller's memory
// while they are sent (DMA: the buffers must stay untouched until the handle
// says sent). The card segments each message into packets of packet_size
// bytes (header included), each carrying slot, metadata index, key, offset,
// length, delta and metadata length.
//
// Arrival: in this emulation the receiving interface's work (key and bounds
// checks, deposit at base + offset, the packet accumulator, the notification
// queue entry) is done by the sender's process on the receiver's behalf, in
// the receiver's card segment, so the receiving CPU does nothing until it
// looks at its notification queue. Message areas in card memory are written
// directly; areas in the receiver's private memory with process_vm_writev
// when the kernel allows it (probed per peer at attach, or forbidden by the
// cross_memory parameter), and otherwise by packets placed in the receiver's
// inbound FIFO, which the receiver deposits when it polls (the fallback).
//
// Hot paths (send, engine, arrival, poll) do not allocate, lock or throw;
// cross-memory writes are system calls by nature.
#pragma once

#include <sys/types.h>
#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <memory>
#include <string>
#include <vector>

#include "nic/hamlyn/layout.hpp"
#include "nic/hamlyn/notification_queue.hpp"
#include "nic/hamlyn/slot_table.hpp"
#include "nic/hamlyn/ticket.hpp"
#include "sys/process_state.hpp"
#include "sys/ring.hpp"
#include "sys/shared_segment.hpp"
#include "sys/status.hpp"

namespace hpam::nic::hamlyn {

struct card_config {
  std::string job;                    // job id, same in every process
  int nprocs = 1;                     // processes in the job
  int my_proc = 0;                    // this process
  std::string what = "hamlyn";        // segment purpose (several cards per process may coexist)
  uint32_t slot_count = 64;           // slots in the table
  uint32_t metadata_entries = 1024;   // metadata pool shared by the slots' metadata areas
  uint32_t notification_queues = 1;   // queues (a slot names one)
  uint64_t notify_capacity = 1024;    // entries per queue (power of two)
  uint32_t packet_size = 4096;        // bytes per packet, 64-byte header included (>= 128)
  uint32_t rx_packets = 64;           // inbound packet buffers for the fallback path (power of two)
  uint64_t area_bytes = 16u << 20;    // message-area memory in the card segment
  uint32_t work_queue_entries = 64;   // send terminus work queue (power of two)
  uint32_t direct_io_limit = 256;     // messages up to this size are copied inline
  uint32_t engine_budget = 0;         // packets the card sends per kick; 0 = all it can
  bool cross_memory = true;           // use/accept process_vm_writev/readv; false forces packets
  uint64_t attach_timeout_ms = 60'000;  // how long attach_peer waits for the peer's card
  uint64_t job_key = 0;               // published in the card header for the job (0: none)
};

// A posted message: its sequence number in the send terminus.
struct send_handle {
  uint64_t sequence = ~0ull;  // ~0 = nothing was posted
};
enum class send_state : uint8_t { pending, sent, error };

// A message to send (h_send_msg's arguments).
struct message {
  const iovec* gather = nullptr;     // data, gathered in order (at most max_gather pieces)
  int gather_count = 0;              // pieces
  uint64_t offset = 0;               // destination offset within the ticket's range
  const void* metadata = nullptr;    // user metadata for the metadata entry (first packet)
  uint32_t metadata_length = 0;      // <= user_metadata_bytes
  uint64_t fast_word = 0;            // fast mode: the word written into the notification
};
constexpr int max_gather = 4;

// Handlers for packets that are not deposits (fallback requests and replies),
// run by the receiver when it polls its inbound FIFO.
class card;
// Returns false when it cannot finish now (the packet is served again later).
using packet_handler = bool (*)(void* ctx, card& c, const packet_header& h, const std::byte* payload);

// A card's counts and where its parts lie, computed from the counts alone
// (card_geometry_for), the same on every end. A peer's are read once from
// its header at attach, checked against what the counts imply and against
// the mapping, and used from then on: never the header again, which its
// owner (or any peer) could rewrite at any time.
struct card_geometry {
  uint32_t slot_count = 0;          // slots in the table
  uint32_t metadata_entries = 0;    // entries in the metadata pool
  uint32_t notification_queues = 0; // queues
  uint32_t packet_size = 0;         // bytes per inbound packet buffer
  uint32_t rx_packets = 0;          // inbound packet buffers (power of two)
  uint64_t notify_capacity = 0;     // entries per queue (power of two)
  uint64_t area_bytes = 0;          // message-area memory
  uint64_t slots_offset = 0;        // card offsets of each part
  uint64_t metadata_offset = 0;
  uint64_t queues_offset = 0;
  uint64_t entries_offset = 0;      // entries of queue 0; queue q's follow at q * capacity
  uint64_t rx_free_offset = 0;
  uint64_t rx_ready_offset = 0;
  uint64_t rx_buffers_offset = 0;
  uint64_t area_offset = 0;
  uint64_t size = 0;                // card payload bytes in all
};
// The geometry the counts of `g` imply (its offsets are filled in).
card_geometry card_geometry_for(card_geometry g);

// Everything a process knows about one card (its own or a peer's).
struct card_view {
  sys::shared_segment segment;           // the mapping
  card_header* header = nullptr;          // at the start of the payload
  std::byte* base = nullptr;              // payload start: card offsets are relative to it
  slot* slots = nullptr;                  // slot table
  metadata_entry* metadata = nullptr;     // metadata pool
  sys::mpmc_fifo* rx_free = nullptr;      // inbound buffers free for senders
  sys::mpmc_fifo* rx_ready = nullptr;     // inbound packets waiting for the owner
  std::byte* area = nullptr;              // message-area memory
  pid_t pid = 0;                          // owner process
  bool cross_memory = false;              // process_vm_writev/readv into the owner works
  bool attached = false;                  // mapped and validated
  card_geometry geo;                      // counts and offsets, checked at attach
  uint64_t job_key = 0;                   // the job key its header published, read at attach
  // q < geo.notification_queues, i < geo.rx_packets (callers check).
  notification_queue_control* queue(uint32_t q) const {
    return reinterpret_cast<notification_queue_control*>(base + geo.queues_offset) + q;
  }
  notification_entry* entries(uint32_t q) const {
    return reinterpret_cast<notification_entry*>(base + geo.entries_offset) + q * geo.notify_capacity;
  }
  std::byte* rx_buffer(uint64_t i) const { return base + geo.rx_buffers_offset + i * geo.packet_size; }
};

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

class card {
 public:
  explicit card(const card_config& cfg);  // creates my card segment (throws on setup error)
  ~card();
  card(const card&) = delete;
  card& operator=(const card&) = delete;

  void attach_peer(int proc);  // maps proc's card and probes cross-memory attach (throws on timeout)
  void attach_all();
  bool attached(int proc) const { return views_[proc].attached; }
  bool cross_memory_to(int proc) const { return views_[proc].cross_memory; }
  int my_proc() const { return my_proc_; }
  int nprocs() const { return nprocs_; }
  uint32_t packet_size() const { return cfg_.packet_size; }
  uint32_t packet_data_bytes() const { return cfg_.packet_size - sizeof(packet_header); }

  // --- setup code (the "OS"): areas, slots, keys, tickets -----------------
  slot_table& slots() { return slots_; }
  const slot_table& slots() const { return slots_; }

  // --- send terminus ----------------------------------------------------
  // Posts a message to t (h_send_msg) and kicks the card. would_block when
  // the work queue is full; invalid_argument when it exceeds the ticket.
  status send(const ticket& t, const message& m, send_handle& h);
  send_state state(const send_handle& h, status* error = nullptr) const;
  uint64_t completion_word() const { return completion_.load(std::memory_order_acquire); }
  void kick();                          // the card sends what it can (engine)

  // --- receiving --------------------------------------------------------
  // h_recv: deposits packets waiting in my inbound FIFO, then takes the next
  // notification of queue q, if any.
  bool receive(uint32_t q, notification& n);
  // h_recv_block: waits up to timeout_ns for a notification (spinning, then
  // yielding the processor; the emulation has no interrupt to sleep on).
  bool receive_block(uint32_t q, notification& n, uint64_t timeout_ns);
  // My cursor of queue q (q < notification_queues) and what it passed over.
  const notification_reader& reader(uint32_t q) const { return readers_[q]; }
  // Deposits up to `budget` inbound packets (fallback path); returns how many.
  uint32_t poll_inbound(uint32_t budget = 64);
  void set_handler(packet_kind kind, packet_handler fn, void* ctx);

  // --- for the layers above (deposit, AM card) ---------------------------
  const card_view& view(int proc) const { return views_[proc]; }
  card_header& header() const { return *views_[my_proc_].header; }
  const arrival_counters& counters() const { return views_[my_proc_].header->counters; }
  // Places one raw packet in proc's inbound FIFO: header, then the pieces.
  // False when the FIFO has no free buffer (try again after polling).
  bool push_packet(int proc, const packet_header& h, const iovec* pieces, int n);
  // Does the receiving interface's work for one packet at card v (the
  // sender's process on the receiver's behalf, or the receiver for a packet
  // from its FIFO). `local` is true in the owner's own process.
  status arrive(const card_view& v, const packet_header& h, const iovec* data, int n,
                const std::byte* meta, bool local);
  // Resolves [offset, offset+len) of slot `s` at v after the key and bounds
  // checks (for gets and atomics): card memory gives a pointer; process
  // memory gives the owner's address with ptr = null.
  status resolve(const card_view& v, uint32_t s, uint64_t key, uint64_t offset, uint64_t len,
                 std::byte*& ptr, uint64_t& address);
  void unresolve(const card_view& v, uint32_t s);  // after a successful resolve
  // Publishes the layer above's header, at area offset `offset` (it starts
  // with a client_prefix carrying `magic`); peers find it with find_client.
  void publish_client(uint64_t offset, uint64_t magic);
  void announce_done() { header().done.store(1, std::memory_order_release); }
  bool peer_done(int proc) const;
  // The job key proc's card publishes (card_config::job_key): attaches proc.
  uint64_t published_key(int proc) {
    attach_peer(proc);
    return views_[proc].job_key;
  }
  bool peer_alive(int proc) const;
  // Liveness of a silent peer (cold path: system calls): what the kernel
  // says of its process, and how often it has polled (beat()).
  sys::process_state peer_process(int proc) const;
  uint32_t peer_heartbeat(int proc) const {  // modulo 2^32
    return views_[proc].attached ? views_[proc].header->heartbeat.load(std::memory_order_relaxed) : 0;
  }
  // The owner is polling: advance the heartbeat peers read.
  void beat() { header().heartbeat.store(++beats_, std::memory_order_relaxed); }
  uint64_t rejected_sends() const { return rejected_sends_; }

 private:
  struct work_entry;
  struct terminus;
  bool run_entry(work_entry& w, uint32_t& budget);
  // One packet of a message to its destination card: arrival done here (card
  // memory, cross-memory attach) or a packet in the destination's inbound FIFO.
  status send_packet(const packet_header& h, const iovec* data, int n, const std::byte* meta,
                     bool& retry);
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
  };
  // A fallback packet being served: its header copied once out of the
  // inbound buffer, and (read requests) how far the answer has got.
  struct inbound_packet {
    uint32_t buffer;       // inbound buffer number
    packet_header header;  // the copy every check and use reads
    uint64_t done;         // read requests: bytes already answered
  };
  static bool hold_slot(const card_view& v, uint32_t index, slot_copy& s);
  bool check_packet(const card_view& v, const packet_header& h, const slot_copy& s,
                    metadata_entry*& entry);
  void complete(const card_view& v, const slot_copy& s, const packet_header& h, metadata_entry* entry);
  status write_area(const card_view& v, const slot_copy& s, const packet_header& h, const iovec* data,
                    int n, bool local);
  bool serve_read_request(inbound_packet& in);
  bool serve_packet(inbound_packet& in);
  void layout_segment();
  uint64_t segment_bytes() const;

  card_config cfg_;
  int my_proc_;
  int nprocs_;
  std::string segment_name_;
  std::vector<card_view> views_;                  // [proc]; views_[my_proc_] is my own card
  uint64_t probe_word_ = 0;                       // read by peers to probe cross-memory attach
  slot_table slots_;                              // the setup code's part of my card
  std::unique_ptr<terminus> terminus_;
  std::atomic<uint64_t> completion_{0};           // entries sent (the completion word)
  struct handler_entry {
    packet_handler fn = nullptr;
    void* ctx = nullptr;
  } handlers_[packet_kind_count];
  std::vector<inbound_packet> deferred_;          // inbound packets waiting to be served again
  std::vector<notification_reader> readers_;      // [queue]: my cursors, never in shared memory
  uint64_t rejected_sends_ = 0;                   // messages the receiving side refused
  uint32_t beats_ = 0;                            // my heartbeat, mirrored in the header
};

}  // namespace hpam::nic::hamlyn
