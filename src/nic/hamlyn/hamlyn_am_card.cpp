#include "nic/hamlyn/hamlyn_am_card.hpp"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>
#include <thread>

#include "sys/align.hpp"

namespace hpam::nic {
namespace {

uint64_t next_pow2(uint64_t n) {
  uint64_t p = 1;
  while (p < n) p <<= 1;
  return p;
}

uint32_t per_sender_for(const card_setup& s) {
  const uint32_t senders = s.nprocs > 1 ? static_cast<uint32_t>(s.nprocs - 1) : 1;
  const uint32_t per = (s.rx_blocks + senders - 1) / senders;
  return per ? per : 1;
}

hamlyn::am_inbound_layout inbound_layout_for(const card_setup& s, uint32_t per_sender) {
  return hamlyn::compute_inbound_layout(static_cast<uint32_t>(s.nprocs), per_sender, s.block_size);
}

uint64_t outbound_bytes(const card_setup& s) {
  return uint64_t{s.tx_blocks ? s.tx_blocks : 1} * s.block_size;
}

hamlyn::card_config inner_config(const card_setup& s, uint32_t per_sender) {
  if (s.block_size < 64 || (s.block_size & (s.block_size - 1)))
    throw std::invalid_argument("hpam hamlyn: block_size must be a power of two >= 64");
  hamlyn::card_config c;
  c.job = s.job;
  c.nprocs = s.nprocs;
  c.my_proc = s.my_proc;
  c.what = hamlyn_am_segment_purpose;
  c.slot_count = static_cast<uint32_t>(s.nprocs) + 1;  // one slot per sender region
  c.metadata_entries = 0;
  c.notification_queues = 1;
  // Every notification names a block some sender owns, so the queue can
  // never hold more entries than there are inbound blocks.
  c.notify_capacity = next_pow2(uint64_t{per_sender} * static_cast<uint64_t>(s.nprocs));
  c.packet_size = s.block_size + static_cast<uint32_t>(sizeof(hamlyn::packet_header));
  c.rx_packets = 2;
  // The inbound area, the outbound blocks (card memory, so that a receiver
  // can read a packet delivered by reference there), and room for the hold
  // lines (one per process) in which senders hold a region's slot for each
  // packet (hold_line).
  c.area_bytes = sys::align_up(inbound_layout_for(s, per_sender).total, 64) +
                 sys::align_up(outbound_bytes(s), 64) +
                 sizeof(hamlyn::hold_line) * static_cast<uint64_t>(s.nprocs);
  c.direct_holds = true;
  c.direct_io_limit = 256;
  if (s.notify_inline > hamlyn::max_notification_inline_bytes)
    throw std::invalid_argument("hpam hamlyn: notify_inline must be at most " +
                                std::to_string(hamlyn::max_notification_inline_bytes) + " bytes");
  // Entries with room for notify_inline bytes (128 bytes up to 96, 512 for
  // the default 480: an MPI message of up to 440 bytes in its entry).
  c.notify_entry_bytes = hamlyn::notification_entry_bytes_for(s.notify_inline);
  c.attach_timeout_ms = s.attach_timeout_ms;
  c.job_key = s.job_key;
  return c;
}

}  // namespace

hamlyn_am_card::hamlyn_am_card(const card_setup& s)
    : my_proc_(s.my_proc),
      nprocs_(s.nprocs),
      block_size_(s.block_size),
      crc_(s.crc),
      headless_bits_(s.headless_cells && !s.faults.any() && !s.crc ? hamlyn::headless_word : 0),
      word_mask_(s.crc ? ~uint64_t{0} : ~hamlyn::headless_word),
      by_reference_above_(s.deliver_by_reference && !s.faults.any() && !s.crc
                              ? std::max(s.by_reference_above, uint32_t{wire_header_size})
                              : ~0u),
      clock_(s.clock ? s.clock : &own_clock_),
      attach_timeout_ms_(s.attach_timeout_ms),
      notify_inline_(s.notify_inline),
      per_sender_(per_sender_for(s)),
      layout_(inbound_layout_for(s, per_sender_)),
      card_(inner_config(s, per_sender_)),
      port_(card_.receiver().port(0)),
      wire_(s.faults, s.my_proc, s.block_size, *clock_) {
  uint64_t at = 0;
  if (!is_ok(card_.slots().allocate_area(layout_.total, at)))
    throw std::runtime_error("hpam hamlyn: card memory too small for the inbound area");
  my_area_ = card_.slots().area_address(at);
  inbound_ = my_area_ + layout_.regions;
  auto* senders =
      reinterpret_cast<hamlyn::am_sender_entry*>(card_.slots().area_address(at + layout_.senders));
  sender_slot_.assign(static_cast<size_t>(nprocs_), ~0u);
  slot_sender_.assign(static_cast<size_t>(nprocs_) + 1, ~0u);
  slot_senders_ = static_cast<uint32_t>(slot_sender_.size());
  for (int p = 0; p < nprocs_; ++p) {
    if (p == my_proc_) continue;
    sender_slot_[p] =
        create_sender_slot(at + layout_.regions + region_bytes() * static_cast<uint64_t>(p));
    slot_sender_.at(sender_slot_[p]) = static_cast<uint32_t>(p);
    senders[p] = {sender_slot_[p], 0, card_.slots().slot_at(sender_slot_[p]).protection_key.load()};
  }
  given_back_ = reinterpret_cast<hamlyn::am_given_back*>(my_area_ + layout_.given_back);
  for (int p = 0; p < nprocs_; ++p) given_back_[p].count.store(0, std::memory_order_relaxed);
  counts_ = std::make_unique<sender_count[]>(static_cast<size_t>(nprocs_));
  my_overflow_ =
      reinterpret_cast<std::atomic<uint64_t>*>(card_.slots().area_address(at + layout_.overflow));
  tx_blocks_ = s.tx_blocks;
  if (!is_ok(card_.slots().allocate_area(outbound_bytes(s), tx_at_)))
    throw std::runtime_error("hpam hamlyn: card memory too small for the outbound blocks");
  tx_memory_ = card_.slots().area_address(tx_at_);
  auto* h = reinterpret_cast<hamlyn::am_inbound_header*>(card_.slots().area_address(at));
  *h = expected_header(at);
  card_.publish_client(at, hamlyn::am_inbound_magic);  // peers wait for it
  for (uint32_t b = s.tx_blocks; b-- > 0;) tx_free_.push_back(b);
  peers_.resize(static_cast<size_t>(nprocs_));
}

// One fast-mode slot, with its own key, per sender region: a sender can
// write only its own region, and could be revoked alone (OSDI'96 2.7).
uint32_t hamlyn_am_card::create_sender_slot(uint64_t region) {
  hamlyn::slot_spec spec;
  spec.memory = hamlyn::area_memory::card;
  spec.base = region;
  spec.bound = region_bytes();
  spec.mode = hamlyn::slot_mode::fast;
  spec.inline_limit = notify_inline_;  // short packets travel in the notification entry
  uint32_t slot = 0;
  if (!is_ok(card_.slots().create_slot(spec, slot)))
    throw std::runtime_error("hpam hamlyn: cannot create the inbound slots");
  return slot;
}

// The header an inbound area at area offset `at` must carry, here and at
// every peer (the same configuration gives the same layout).
hamlyn::am_inbound_header hamlyn_am_card::expected_header(uint64_t at) const {
  hamlyn::am_inbound_header h{};
  h.prefix = {hamlyn::am_inbound_magic, hamlyn::am_inbound_version,
              sizeof(hamlyn::am_inbound_header)};
  h.nprocs = static_cast<uint32_t>(nprocs_);
  h.per_sender = per_sender_;
  h.block_size = block_size_;
  h.given_back_stride = sizeof(hamlyn::am_given_back);
  h.senders_offset = at + layout_.senders;
  h.given_back_offset = at + layout_.given_back;
  h.overflow_offset = at + layout_.overflow;
  h.regions_offset = at + layout_.regions;
  h.outbound_offset = tx_at_;
  h.outbound_blocks = tx_blocks_;
  h.takes_references = crc_ ? 0 : 1;
  return h;
}

void hamlyn_am_card::attach_peer(int proc) {
  card_.attach_peer(proc);
  if (proc == my_proc_) return;
  const hamlyn::card_view& v = card_.view(proc);
  peer_state& ps = peers_[proc];
  if (ps.given_back) return;
  hamlyn::am_inbound_header in;
  const uint64_t at = peer_inbound(proc, v, in);
  hamlyn::am_sender_entry mine;
  std::memcpy(&mine, v.area + at + layout_.senders + sizeof mine * static_cast<uint64_t>(my_proc_),
              sizeof mine);
  if (mine.slot >= v.geo.slot_count)  // (its route could not name it)
    throw std::runtime_error("hpam hamlyn: process " + std::to_string(proc) +
                             " has a damaged card (my region's slot is not one of its slots)");
  ps.given_back =
      reinterpret_cast<const std::atomic<uint64_t>*>(v.area + at + given_back_offset(my_proc_));
  ps.overflow = reinterpret_cast<std::atomic<uint64_t>*>(v.area + at + layout_.overflow);
  note_outbound(proc, v, in);
  // By reference only to a receiver that takes references, where the
  // am_reference travels in the entry.
  const uint32_t inline_limit = v.slots[mine.slot].inline_limit;
  ps.by_reference_above = in.takes_references && inline_limit >= sizeof(hamlyn::am_reference)
                              ? by_reference_above_
                              : ~0u;
  ps.send_now_up_to = ps.by_reference_above;
  ps.backlog.reserve(per_sender_);
  // The ticket of my region at proc, made once (my slot there, its key, the
  // region's range, fast mode: the word names the block, notify); block b
  // is at offset b * block_size in it.
  hamlyn::ticket& t = ps.ticket;
  t = hamlyn::ticket{};
  t.node = static_cast<uint32_t>(proc);
  t.slot = mine.slot;
  t.metadata_index = hamlyn::fast_index;
  t.protection_key = mine.key;
  t.range = region_bytes();
  t.flags = hamlyn::ticket_flags::notify;
  // Its route, found once: the terminus then checks per packet only what
  // can change (the card idle, the slot written directly). The range is
  // this card's to keep (send_fast_within): block b < per_sender_ at
  // b * block_size_, at most block_size_ bytes (launch, launch_built), is
  // inside the region, so inside the ticket; and no block is longer than
  // the terminus's packets carry.
  if (!card_.terminus().fast_route_for(t, ps.route))
    throw std::logic_error("hpam hamlyn: no fast-mode route to attached process " +
                           std::to_string(proc));
  if (uint64_t{per_sender_} * block_size_ > t.range ||
      block_size_ > card_.terminus().packet_data_bytes())
    throw std::logic_error("hpam hamlyn: my blocks do not fit my region's ticket");
}

// proc's outbound blocks, as its inbound header publishes them (within its
// area: peer_inbound checked them).
void hamlyn_am_card::note_outbound(int proc, const hamlyn::card_view& v,
                                   const hamlyn::am_inbound_header& in) {
  peers_[proc].outbound = v.area + in.outbound_offset;
  peers_[proc].outbound_blocks = in.outbound_blocks;
}

// A sender's first reference, its card never attached here: maps its card
// and finds its outbound blocks, nothing else (attach_peer sets up my way
// to it when I first send). False: it cannot be mapped (its card damaged).
bool hamlyn_am_card::map_outbound(int proc) noexcept {
  try {
    card_.attach_peer(proc);
    hamlyn::am_inbound_header in;
    const hamlyn::card_view& v = card_.view(proc);
    (void)peer_inbound(proc, v, in);
    note_outbound(proc, v, in);
    return true;
  } catch (const std::exception&) {
    return false;
  }
}

// Waits for proc's inbound header and checks it against the layout this
// card computes for the same configuration. Returns its area offset.
uint64_t hamlyn_am_card::peer_inbound(int proc, const hamlyn::card_view& v,
                                      hamlyn::am_inbound_header& h) const {
  const uint64_t deadline = sys::clock::monotonic_ns() + attach_timeout_ms_ * 1'000'000ull;
  uint64_t at = 0;
  hamlyn::client_lookup found;
  while ((found = hamlyn::find_client(v, hamlyn::am_inbound_magic, hamlyn::am_inbound_version, h,
                                      at)) == hamlyn::client_lookup::not_yet) {
    if (sys::clock::monotonic_ns() > deadline)
      throw std::runtime_error("hpam hamlyn: process " + std::to_string(proc) +
                               " never finished setting up its inbound area");
    std::this_thread::yield();
  }
  hamlyn::am_inbound_header want = expected_header(at);
  // Its outbound blocks, wherever it put them, within its area.
  const uint64_t area = v.header->area_bytes;
  if (found != hamlyn::client_lookup::found || layout_.total > area - at ||
      h.outbound_blocks > area / block_size_ ||
      h.outbound_offset > area - uint64_t{h.outbound_blocks} * block_size_ ||
      h.takes_references > 1)
    throw std::runtime_error("hpam hamlyn: process " + std::to_string(proc) +
                             " has a damaged card");
  want.outbound_offset = h.outbound_offset;
  want.outbound_blocks = h.outbound_blocks;
  want.takes_references = h.takes_references;
  if (std::memcmp(&h, &want, sizeof h) != 0)
    throw std::runtime_error(
        "hpam hamlyn: process " + std::to_string(proc) +
        " has a different inbound layout (rx_blocks, block_size or nprocs differ)");
  return at;
}

uint64_t hamlyn_am_card::published_key(int proc) {
  attach_peer(proc);
  return card_.published_key(proc);
}

bool hamlyn_am_card::claim_tx_block(uint32_t& b) {
  if (tx_free_.empty()) return false;
  b = tx_free_.back();
  tx_free_.pop_back();
  return true;
}

void hamlyn_am_card::relaunch(int dest, uint32_t b, uint32_t len) {
  transmit_block(dest, b, len, false);
}

// A first launch, out of line (a backlog's packets): by reference where
// the packet is long enough and the peer takes references, else copied.
bool hamlyn_am_card::transmit_first(int dest, uint32_t block, uint32_t len) {
  return len > peers_[dest].by_reference_above ? transmit_reference(dest, block, len)
                                               : transmit(dest, tx_block(block), len);
}

// transmit() of a first launch by reference: the next block of my region
// at dest is lent as for any packet, but not written; the message, carried
// in the entry, names my outbound block and the packet's length.
bool hamlyn_am_card::transmit_reference(int dest, uint32_t block, uint32_t len) {
  peer_state& ps = peers_[dest];
  if (ps.lent - ps.returned >= per_sender_ && !refill(ps)) return false;
  const uint32_t blk = ps.next;
  const hamlyn::am_reference ref{block, len};
  if (!is_ok(card_.terminus().send_fast_within(ps.route, ps.ticket, uint64_t{blk} * block_size_,
                                               reinterpret_cast<const std::byte*>(&ref), sizeof ref,
                                               blk | hamlyn::reference_word | headless_bits_))) {
    malformed_++;  // refused by the receiving interface (revoked or wrong key): lost
    return true;
  }
  by_reference_sends_++;
  ps.lent++;
  ps.next = blk + 1 == per_sender_ ? 0 : blk + 1;
  return true;
}

// hand_over's refusals, and the packets delivered by reference, which it
// leaves here: a reference is taken only by a receiver that checks no CRC,
// its message carried and exactly an am_reference, in the sender's own
// region (slot, source and word agree as for any packet), naming one of
// the sender's published outbound blocks and a length in
// [wire_header_size, block_size]; the wire header is checked unless the
// word says headless. Anything else is refused and counted.
[[gnu::noinline]] bool hamlyn_am_card::hand_over_reference(hamlyn::notification n,
                                                           const std::byte* carried, rx_packet& p) {
  const uint32_t sender = n.slot < slot_senders_ ? slot_sender_[n.slot] : ~0u;
  const uint64_t blk = n.metadata & ~(hamlyn::reference_word | hamlyn::headless_word);
  if (crc_ || !(n.metadata & hamlyn::reference_word) || n.source != sender ||
      n.metadata_index != hamlyn::fast_index || blk >= per_sender_ || !n.carried ||
      n.length != sizeof(hamlyn::am_reference)) {
    malformed_++;
    return false;
  }
  hamlyn::am_reference ref;
  std::memcpy(&ref, carried, sizeof ref);
  peer_state& ps = peers_[sender];
  // (Its first reference, its card never attached here: mapped now.)
  if ((!ps.outbound && !map_outbound(static_cast<int>(sender))) ||
      ref.block >= ps.outbound_blocks ||
      ref.length - wire_header_size > block_size_ - wire_header_size) {
    malformed_++;
    return false;
  }
  counts_[sender].taken++;
  p.block = static_cast<uint32_t>(sender * per_sender_ + blk);
  p.length = ref.length;
  p.data = ps.outbound + size_t{ref.block} * block_size_;
  p.src = static_cast<uint16_t>(sender);
  p.rejected = false;
  p.crc_ok = true;
  if (!(n.metadata & hamlyn::headless_word) &&
      read_wire_address(p.data) !=
          wire_address(p.length, sender, static_cast<uint32_t>(my_proc_))) {
    malformed_++;
    p.crc_ok = false;
    p.rejected = true;
  }
  return true;
}

// A packet that may not wait (a copy sent again, or one the wire made: held
// back, corrupted): now, or dropped and counted at dest.
[[gnu::noinline]] void hamlyn_am_card::send_copy(int dest, const std::byte* packet, uint32_t len) {
  if (!transmit(dest, packet, len)) overflow(dest);
}

void hamlyn_am_card::overflow(int dest) {
  peers_[dest].overflow->fetch_add(1, std::memory_order_relaxed);
}

// A packet to a card not attached, or to mine (no region given back), is
// refused and counted malformed: true when dest is such a card.
bool hamlyn_am_card::refused_unattached(int dest) noexcept {
  if (peers_[dest].given_back) return false;
  malformed_++;
  return true;
}

// send_or_wait's cases out of line: a packet by reference sent now if
// nothing is waiting and a block is free; otherwise wait_or_drop.
[[gnu::noinline]] void hamlyn_am_card::send_or_wait_other(int dest, uint32_t block, uint32_t len) {
  if (refused_unattached(dest)) return;  // (send_now_up_to stays 0 for such a dest)
  const peer_state& ps = peers_[dest];
  if (ps.backlog.empty() && len > ps.by_reference_above && transmit_reference(dest, block, len))
    return;
  wait_or_drop(dest, block, len);
}

// send_or_wait's other cases: packets already waiting go first; then this
// one is sent if a block is left, or waits, or (backlog full) is dropped.
[[gnu::cold, gnu::noinline]] void hamlyn_am_card::wait_or_drop(int dest, uint32_t block,
                                                               uint32_t len) {
  peer_state& ps = peers_[dest];
  if (!ps.backlog.empty() && flush_backlog(dest) && transmit_first(dest, block, len)) return;
  for (size_t i = ps.backlog_head; i < ps.backlog.size(); ++i)
    if (ps.backlog[i].block == block) {  // already waiting: it goes out with its latest bytes
      ps.backlog[i].length = len;
      return;
    }
  if (ps.backlog.size() - ps.backlog_head >= per_sender_) {
    overflow(dest);
    return;
  }
  if (ps.backlog_head > 0 && ps.backlog.size() == ps.backlog.capacity()) {
    ps.backlog.erase(ps.backlog.begin(), ps.backlog.begin() + static_cast<long>(ps.backlog_head));
    ps.backlog_head = 0;
  }
  if (ps.backlog.empty()) {
    backlogged_++;
    ps.send_now_up_to = 0;  // send_or_wait: every first launch comes here while some wait
  }
  ps.backlog.push_back(waiting{block, len});
}

// Sends waiting packets while blocks are free; true when none is left.
bool hamlyn_am_card::flush_backlog(int dest) {
  peer_state& ps = peers_[dest];
  while (ps.backlog_head < ps.backlog.size()) {
    const waiting w = ps.backlog[ps.backlog_head];
    if (!transmit_first(dest, w.block, w.length)) return false;
    ps.backlog_head++;
  }
  if (!ps.backlog.empty()) backlogged_--;
  ps.send_now_up_to = ps.by_reference_above;
  ps.backlog.clear();
  ps.backlog_head = 0;
  return true;
}

// Reads the peer's count of my packets it released: a count beyond what I
// sent, or below what it said before, cannot be an honest receiver's and
// is refused (counted), so I never write a block I have not lent and had
// back. True when a block is free.
bool hamlyn_am_card::refill(peer_state& ps) {
  const uint64_t back = ps.given_back->load(std::memory_order_acquire);
  if (back > ps.lent || back < ps.returned) {
    malformed_++;
    return false;
  }
  ps.returned = back;
  return ps.lent - back < per_sender_;
}

// receive() past a refused notification, or past an entry its usual take
// does not take (the walk's cases): the next ones, until one is handed
// over or none is left.
[[gnu::noinline]] bool hamlyn_am_card::receive_after_refusal(rx_packet& p) {
  hamlyn::notification n;
  const std::byte* carried = nullptr;
  while (hamlyn::notification_take_in_place(*port_.control, port_.ring, *port_.reader, n, carried))
    if (hand_over(n, carried, p)) return true;
  return false;
}

[[gnu::noinline]] void hamlyn_am_card::transmit_faulty(int dest, uint32_t b, std::byte* pkt,
                                                       uint32_t len, bool may_wait) {
  if (refused_unattached(dest)) return;  // launch_built's check, before the wire may hold it
  wire_sink sink{this, pkt, b, may_wait};
  wire_.transmit(sink, dest, pkt, len);
}

// send_due's work when there is some: packets the wire held back, backlogs.
void hamlyn_am_card::send_held() {
  wire_sink sink{this};  // held packets: copies, none may wait
  wire_.service(sink);
  if (backlogged_ != 0)
    for (int p = 0; p < nprocs_; ++p)
      if (!peers_[p].backlog.empty()) (void)flush_backlog(p);
}

}  // namespace hpam::nic
