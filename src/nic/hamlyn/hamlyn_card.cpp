// The Hamlyn card: segment layout, attach, liveness of peers, h_recv_block.
// Views, geometry and the inbound FIFO: card_view.cpp; setup code ("the
// OS"): slot_table.cpp; send terminus: send_terminus.cpp; receiving
// interface: receiving_interface.cpp; cross-memory attach: cross_memory.cpp.
#include "nic/hamlyn/hamlyn_card.hpp"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <thread>

#include "nic/hamlyn/cross_memory.hpp"
#include "sys/clock.hpp"
#include "sys/membarrier.hpp"
#include "sys/protection_key.hpp"

namespace hpam::nic::hamlyn {
namespace {

// c itself when every count is in range (throws otherwise).
const card_config& checked(const card_config& c) {
  using sys::ring_math::is_power_of_two;
  auto bad = [](const std::string& what) { throw std::invalid_argument("hpam hamlyn: " + what); };
  if (c.nprocs < 1 || c.nprocs > 65535) bad("nprocs must be in [1, 65535]");
  if (c.my_proc < 0 || c.my_proc >= c.nprocs) bad("my_proc must be in [0, nprocs-1]");
  if (c.slot_count < 1 || c.slot_count > max_slot_count)
    bad("slot_count must be in [1, " + std::to_string(max_slot_count) + "]");
  if (c.notification_queues < 1 || c.notification_queues > 64)
    bad("notification_queues must be in [1, 64]");
  if (!is_power_of_two(c.notify_capacity) || c.notify_capacity > (1u << 24))
    bad("notify_capacity must be a power of two, at most 2^24");
  if (!is_power_of_two(c.notify_entry_bytes) ||
      c.notify_entry_bytes < min_notification_entry_bytes ||
      c.notify_entry_bytes > max_notification_entry_bytes)
    bad("notify_entry_bytes must be 128, 256 or 512");
  if (c.packet_size < 128 || c.packet_size % 64)
    bad("packet_size must be a multiple of 64, >= 128");
  if (!is_power_of_two(c.rx_packets)) bad("rx_packets must be a power of two");
  if (!is_power_of_two(c.work_queue_entries)) bad("work_queue_entries must be a power of two");
  if (c.direct_io_limit > max_direct_io_limit) bad("direct_io_limit must be <= 4096");
  if (c.batch_limit > c.direct_io_limit) bad("batch_limit must be <= direct_io_limit");
  return c;
}

// Starts the view's pointers from its checked geometry.
void bind_view(card_view& v) {
  v.base = v.segment.payload();
  v.header = reinterpret_cast<card_header*>(v.base);
  v.slots = reinterpret_cast<slot*>(v.base + v.geo.slots_offset);
  v.metadata = reinterpret_cast<metadata_entry*>(v.base + v.geo.metadata_offset);
  v.rx_free = reinterpret_cast<sys::mpmc_fifo*>(v.base + v.geo.rx_free_offset);
  v.rx_ready = sys::cell_fifo(v.base + v.geo.rx_ready_offset, rx_ready_capacity(v.geo.rx_packets),
                              rx_ready_cell);
  v.area = v.base + v.geo.area_offset;
}

// The geometry of a card from its counts: my configuration, or a copy of a
// peer's header (the fields have the same names).
template <class Counts>
card_geometry geometry_of(const Counts& c) {
  card_geometry g;
  g.slot_count = c.slot_count;
  g.metadata_entries = c.metadata_entries;
  g.notification_queues = c.notification_queues;
  g.packet_size = c.packet_size;
  g.rx_packets = c.rx_packets;
  g.notify_capacity = c.notify_capacity;
  g.notify_entry_bytes = c.notify_entry_bytes;
  g.area_bytes = c.area_bytes;
  return card_geometry_for(g);
}

// Why a peer's header cannot be trusted, or empty. Its counts must be in
// the ranges setup allows, its offsets what the counts imply, and all of it
// inside the mapping.
std::string header_problem(const card_header& h, size_t mapped, int proc, int nprocs) {
  using sys::ring_math::is_power_of_two;
  if (h.magic != card_magic || h.version != card_version || h.header_size != sizeof(card_header))
    return "not a card of this version";
  if (h.my_proc != static_cast<uint32_t>(proc) || h.nprocs != static_cast<uint32_t>(nprocs))
    return "belongs to another process or job size";
  if (h.slot_count < 1 || h.slot_count > max_slot_count || h.metadata_entries > (1u << 24) ||
      h.notification_queues < 1 || h.notification_queues > 64 ||
      !is_power_of_two(h.notify_capacity) || h.notify_capacity > (1ull << 24) ||
      !is_power_of_two(h.notify_entry_bytes) ||
      h.notify_entry_bytes < min_notification_entry_bytes ||
      h.notify_entry_bytes > max_notification_entry_bytes || h.packet_size < 128 ||
      h.packet_size % 64 || h.packet_size > (1u << 26) || !is_power_of_two(h.rx_packets) ||
      h.rx_packets > (1u << 20) || h.area_bytes > (1ull << 40))
    return "counts out of range";
  const card_geometry g = geometry_of(h);
  if (h.slots_offset != g.slots_offset || h.metadata_offset != g.metadata_offset ||
      h.queues_offset != g.queues_offset || h.rx_free_offset != g.rx_free_offset ||
      h.rx_ready_offset != g.rx_ready_offset || h.rx_buffers_offset != g.rx_buffers_offset ||
      h.area_offset != g.area_offset || h.size < g.size || g.size > mapped)
    return "layout disagrees with its counts";
  return {};
}

}  // namespace

// What of a card is mapped at setup (shared_segment::prefault): all of it,
// or all but the message area when that is memory for users.
uint64_t card::resident_bytes(const card_geometry& g) const {
  return cfg_.resident_area ? g.size : g.area_offset;
}

uint64_t card::segment_bytes() const {
  return geometry_of(cfg_).size;
}

void card::layout_segment() {
  card_view& v = views_[my_proc_];
  v.geo = geometry_of(cfg_);
  const card_geometry& g = v.geo;
  auto* h = reinterpret_cast<card_header*>(v.segment.payload());
  h->version = card_version;
  h->header_size = sizeof(card_header);
  h->size = v.segment.payload_size();
  h->owner_pid = getpid();
  h->my_proc = static_cast<uint32_t>(my_proc_);
  h->nprocs = static_cast<uint32_t>(nprocs_);
  h->slot_count = g.slot_count;
  h->metadata_entries = g.metadata_entries;
  h->notification_queues = g.notification_queues;
  h->notify_capacity = static_cast<uint32_t>(g.notify_capacity);
  h->notify_entry_bytes = g.notify_entry_bytes;
  h->packet_size = g.packet_size;
  h->rx_packets = g.rx_packets;
  h->slots_offset = g.slots_offset;
  h->metadata_offset = g.metadata_offset;
  h->queues_offset = g.queues_offset;
  h->rx_free_offset = g.rx_free_offset;
  h->rx_ready_offset = g.rx_ready_offset;
  h->rx_buffers_offset = g.rx_buffers_offset;
  h->area_offset = g.area_offset;
  h->area_bytes = g.area_bytes;
  h->probe_value = probe_word_;
  h->probe_address = reinterpret_cast<uint64_t>(&probe_word_);
  h->cross_memory_forbidden = cfg_.cross_memory ? 0 : 1;
  h->job_key = cfg_.job_key;
  v.job_key = cfg_.job_key;
  v.pid = h->owner_pid;
  bind_view(v);
  for (uint32_t q = 0; q < g.notification_queues; ++q) {
    v.queue(q)->capacity = g.notify_capacity;  // informative: users take geo's
    v.queue(q)->entries_offset = g.entries_offset + q * g.notify_capacity * g.notify_entry_bytes;
    notification_queue_init(*v.queue(q), v.ring(q));
  }
  v.rx_free->init(rx_free_capacity(cfg_.rx_packets));
  v.rx_ready.init();
  for (uint32_t i = 0; i < cfg_.rx_packets; ++i) (void)v.rx_free->push(i);
  // Publish: every field above is written before the magic is.
  std::atomic_thread_fence(std::memory_order_release);
  h->magic = card_magic;
}

card::card(const card_config& cfg)
    : cfg_(checked(cfg)),
      my_proc_(cfg.my_proc),
      nprocs_(cfg.nprocs),
      receiver_(*this, views_, cfg_),
      terminus_(views_, receiver_, cfg_) {
  probe_word_ = sys::random_protection_key();
  views_.resize(static_cast<size_t>(nprocs_));
  segment_name_ = sys::segment_name(cfg_.job, cfg_.what, my_proc_);
  card_view& v = views_[my_proc_];
  v.segment = sys::shared_segment::create(segment_name_, segment_bytes());
  v.segment.prefault(resident_bytes(geometry_of(cfg_)));
  layout_segment();
  slots_.bind(v.slots, v.metadata, v.area,
              {cfg_.slot_count, cfg_.metadata_entries, cfg_.notification_queues, cfg_.area_bytes,
               static_cast<uint32_t>(my_proc_), notification_room(cfg_.notify_entry_bytes)});
  offer_hold_lines(v);
  v.segment.publish();  // peers attach from here: the header is complete
  v.attached = true;
  v.cross_memory = false;  // my own memory is written locally
  own_header_ = v.header;
}

// Hold lines for senders' direct deposits and fast-mode arrivals
// (layout.hpp, hold_line), one per process, at the end of the area memory
// (the clients' structures keep its beginning): offered where this kernel
// runs the global barriers a revoke needs; else (or when the area has no
// room) senders hold by slot::users, as the other arrivals do.
void card::offer_hold_lines(card_view& v) {
  uint64_t offset = 0;
  if (!cfg_.direct_holds || !sys::global_barriers_available() ||
      !is_ok(slots_.allocate_area_top(uint64_t{sizeof(hold_line)} * nprocs_, offset)))
    return;
  v.holds = reinterpret_cast<hold_line*>(v.area + offset);
  v.header->direct_holds = v.geo.area_offset + offset;
  slots_.use_hold_lines(v.holds, static_cast<uint32_t>(nprocs_));
}

// A peer's hold lines, where its header names them inside its area memory
// (64-byte aligned, one per process): null otherwise, and the deposits
// there hold by slot::users.
static hold_line* hold_lines_of(const card_header& h, const card_view& v, int nprocs) {
  const card_geometry& g = v.geo;
  const uint64_t bytes = uint64_t{sizeof(hold_line)} * static_cast<uint64_t>(nprocs);
  if (h.direct_holds == 0 || h.direct_holds % alignof(hold_line) != 0 ||
      h.direct_holds < g.area_offset || h.direct_holds - g.area_offset > g.area_bytes ||
      bytes > g.area_bytes - (h.direct_holds - g.area_offset))
    return nullptr;
  return reinterpret_cast<hold_line*>(v.base + h.direct_holds);
}

// The name goes once every peer has mapped the card; a card some peer never
// attached stays attachable (a peer may start late) and is removed as stale
// once this process is gone.
card::~card() {
  card_view& v = views_[my_proc_];
  if (v.segment.valid() && v.header->attached_peers.load(std::memory_order_acquire) >=
                               static_cast<uint32_t>(nprocs_ - 1))
    v.segment.unlink();
  for (int p = 0; p < nprocs_; ++p)  // cards of peers that died before they could remove them
    if (p != my_proc_ && views_[p].attached && !peer_alive(p)) views_[p].segment.unlink();
}

void card::attach_peer(int proc) {
  if (proc < 0 || proc >= nprocs_)
    throw std::invalid_argument("hpam hamlyn: attach_peer(" + std::to_string(proc) +
                                ") out of range");
  card_view& v = views_[proc];
  if (v.attached) return;
  v.segment = sys::shared_segment::attach(sys::segment_name(cfg_.job, cfg_.what, proc),
                                          cfg_.attach_timeout_ms);
  if (v.segment.payload_size() < sizeof(card_header))
    throw std::runtime_error("hpam hamlyn: card of process " + std::to_string(proc) +
                             " is too small");
  card_header h;  // one copy: checked, then its counts and offsets are the view's
  std::memcpy(static_cast<void*>(&h), v.segment.payload(), sizeof h);
  const std::string problem = header_problem(h, v.segment.payload_size(), proc, nprocs_);
  if (!problem.empty())
    throw std::runtime_error("hpam hamlyn: card of process " + std::to_string(proc) + " in job " +
                             cfg_.job + " has an incompatible layout: " + problem);
  v.geo = geometry_of(h);
  v.segment.prefault(resident_bytes(v.geo));
  v.pid = h.owner_pid;
  v.job_key = h.job_key;
  bind_view(v);
  if (cfg_.direct_holds) v.holds = hold_lines_of(h, v, nprocs_);
  v.header->attached_peers.fetch_add(1, std::memory_order_acq_rel);
  v.cross_memory = cfg_.cross_memory && !h.cross_memory_forbidden &&
                   cross_memory_probe(v.pid, h.probe_address, h.probe_value);
  v.attached = true;
}

void card::attach_all() {
  for (int p = 0; p < nprocs_; ++p) attach_peer(p);
}

void card::publish_client(uint64_t offset, uint64_t magic) {
  header().client_offset = offset;
  // Publish: a peer that sees the magic sees the offset and the header.
  header().client_magic.store(magic, std::memory_order_release);
}

bool card::peer_done(int proc) const {
  const card_view& v = views_[proc];
  return v.attached && v.header->done.load(std::memory_order_acquire) != 0;
}

bool card::peer_alive(int proc) const {
  return !views_[proc].attached || peer_process(proc) != sys::process_state::gone;
}

sys::process_state card::peer_process(int proc) const {
  if (proc == my_proc_) return sys::process_state::running;
  const card_view& v = views_[proc];
  return v.attached ? sys::observe_process(v.pid) : sys::process_state::gone;
}

bool card::receive_block(uint32_t q, notification& n, uint64_t timeout_ns) {
  const uint64_t deadline = sys::clock::monotonic_ns() + timeout_ns;
  for (uint32_t spins = 0;; ++spins) {
    if (receiver_.receive(q, n)) return true;
    terminus_.kick();  // my own sends may be what the peer waits for
    if ((spins & 255) == 255) {
      if (sys::clock::monotonic_ns() >= deadline) return false;
      std::this_thread::yield();
    }
  }
}

}  // namespace hpam::nic::hamlyn
