#include "nic/medusa/medusa_card.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "sys/placement.hpp"

namespace hpam::nic {

using medusa::card_header;
using medusa::card_layout;

namespace {

sys::clock clock_for(const card_setup& setup) {
  return setup.clock ? *setup.clock : sys::clock();
}

void check_setup(const card_setup& s) {
  auto bad = [](const std::string& what) {
    throw std::invalid_argument("hpam: medusa card setup: " + what);
  };
  if (s.nprocs < 1 || s.nprocs > 65535) bad("nprocs must be in [1, 65535]");
  if (s.my_proc < 0 || s.my_proc >= s.nprocs) bad("my_proc must be in [0, nprocs)");
  if (!sys::ring_math::is_power_of_two(s.block_size) || s.block_size < medusa::min_block_size ||
      s.block_size > medusa::max_block_size)
    bad("block_size must be a power of two in [" + std::to_string(medusa::min_block_size) + ", " +
        std::to_string(medusa::max_block_size) + "], got " + std::to_string(s.block_size));
  if (static_cast<uint64_t>(s.tx_blocks) + s.rx_blocks > medusa::max_blocks)
    bad("tx_blocks + rx_blocks must be at most " + std::to_string(medusa::max_blocks));
  if (!sys::ring_math::is_power_of_two(s.rx_ready_cell) ||
      s.rx_ready_cell < medusa::min_rx_ready_cell || s.rx_ready_cell > medusa::max_rx_ready_cell)
    bad("rx_ready_cell must be a power of two in [" + std::to_string(medusa::min_rx_ready_cell) +
        ", " + std::to_string(medusa::max_rx_ready_cell) + "], got " +
        std::to_string(s.rx_ready_cell));
  if (s.job.empty()) bad("job id is empty");
}

// The card header fields that must be equal on both ends, and the layout a
// header's counts imply: a peer whose header disagrees is not trusted.
std::string peer_problem(const card_header& h, size_t mapped, int proc, uint32_t block_size,
                         int nprocs, uint32_t flags, uint32_t rx_ready_cell) {
  if (h.magic != medusa::card_magic) return "bad magic";
  if (h.version != medusa::card_version) return "version " + std::to_string(h.version);
  if (h.header_size != sizeof(card_header)) return "header size differs";
  if (h.block_size != block_size)
    return "block size " + std::to_string(h.block_size) + " != " + std::to_string(block_size);
  if (h.owner_proc != proc) return "card belongs to process " + std::to_string(h.owner_proc);
  if (h.nprocs != nprocs) return "job has " + std::to_string(h.nprocs) + " processes";
  if (h.flags != flags) return "CRC setting differs";
  if (h.rx_ready_cell != rx_ready_cell)
    return "RX_READY cell " + std::to_string(h.rx_ready_cell) +
           " != " + std::to_string(rx_ready_cell);
  if (static_cast<uint64_t>(h.tx_blocks) + h.rx_blocks > medusa::max_blocks)
    return "too many blocks";
  const card_layout l =
      medusa::compute_layout(h.block_size, h.tx_blocks, h.rx_blocks, h.rx_ready_cell);
  if (h.size != l.size || l.size > mapped || h.rx_free_offset != l.rx_free_offset ||
      h.rx_ready_offset != l.rx_ready_offset || h.vram_offset != l.vram_offset ||
      h.rx_fifo_capacity != l.rx_fifo_capacity)
    return "inconsistent layout";
  return {};
}

}  // namespace

medusa_card::medusa_card(const card_setup& setup)
    : my_proc_(setup.my_proc),
      nprocs_(setup.nprocs),
      block_size_(setup.block_size),
      tx_blocks_(setup.tx_blocks),
      rx_blocks_(setup.rx_blocks),
      crc_(setup.crc),
      direct_tx_(setup.direct_tx),
      by_reference_(setup.deliver_by_reference && !setup.faults.any()),
      headless_(setup.headless_cells && !setup.faults.any() && !setup.crc),
      block_shift_(static_cast<uint32_t>(__builtin_ctz(setup.block_size))),
      short_copy_up_to_(setup.rx_ready_cell - sys::cell_fifo::head_bytes >= short_packet &&
                                setup.block_size >= short_packet
                            ? short_packet
                            : 0),
      headless_up_to_(
          headless_ && setup.rx_ready_cell > sys::cell_fifo::head_bytes ? setup.rx_ready_cell : 0),
      packet_lengths_(medusa::lengths_between(wire_header_size, setup.block_size)),
      cell_lengths_(medusa::lengths_between(wire_header_size,
                                            setup.rx_ready_cell - sys::cell_fifo::head_bytes)),
      block_lengths_(medusa::lengths_between(
          std::max(wire_header_size, setup.rx_ready_cell - sys::cell_fifo::head_bytes + 1),
          setup.block_size)),
      headless_lengths_(setup.crc || setup.rx_ready_cell <= sys::cell_fifo::head_bytes
                            ? medusa::lengths_between(1, 0)
                            : medusa::lengths_between(wire_header_size, setup.rx_ready_cell)),
      cell_entry_(
          medusa::encode_entry(medusa::entry_in_cell, 0, static_cast<uint32_t>(setup.my_proc))),
      headless_entry_(
          medusa::encode_entry(medusa::entry_headless, 0, static_cast<uint32_t>(setup.my_proc))),
      attach_timeout_ms_(setup.attach_timeout_ms),
      job_key_(setup.job_key),
      job_(setup.job),
      wire_((check_setup(setup), setup.faults), setup.my_proc, setup.block_size, clock_for(setup)) {
  sys::remove_stale_segments();
  const card_layout l =
      medusa::compute_layout(block_size_, tx_blocks_, rx_blocks_, setup.rx_ready_cell);
  segment_ = sys::shared_segment::create(sys::segment_name(job_, medusa_segment_purpose, my_proc_),
                                         l.size);
  try {
    segment_.prefault(l.size);  // the card's VRAM is resident: no page fault at a block's first use
    init_memory(l, setup.rx_ready_cell);
    // The card sits near its host: bind its memory to this process's NUMA node.
    sys::place_near_this_process(segment_.header(), segment_.header()->size);
    peers_.resize(static_cast<size_t>(nprocs_));
    view_card(peers_[my_proc_], segment_.payload());  // loopback to my own card
    spare_tx_.reserve(tx_blocks_);
    rx_released_.assign(rx_ready_.capacity(), 0);
    null_packet_ = std::make_unique<std::byte[]>(block_size_);
  } catch (...) {
    segment_.unlink();  // no half-made card left under the job's name
    throw;
  }
  // Publish: the card is initialised before any peer may attach to it.
  segment_.publish();
}

medusa_card::~medusa_card() {
  segment_.unlink();
}

void medusa_card::init_memory(const card_layout& l, uint32_t rx_ready_cell) {
  std::byte* base = segment_.payload();
  header_ = new (base) card_header{};
  header_->version = medusa::card_version;
  header_->header_size = sizeof(card_header);
  header_->size = l.size;
  header_->block_size = block_size_;
  header_->tx_blocks = tx_blocks_;
  header_->rx_blocks = rx_blocks_;
  header_->tx_fifo_capacity = static_cast<uint32_t>(l.tx_fifo_capacity);
  header_->rx_fifo_capacity = static_cast<uint32_t>(l.rx_fifo_capacity);
  header_->owner_proc = my_proc_;
  header_->nprocs = nprocs_;
  header_->flags = crc_ ? medusa::card_flag_crc : 0;
  header_->tx_ready_offset = l.tx_ready_offset;
  header_->tx_free_offset = l.tx_free_offset;
  header_->rx_free_offset = l.rx_free_offset;
  header_->rx_ready_offset = l.rx_ready_offset;
  header_->vram_offset = l.vram_offset;
  header_->job_key = job_key_;
  header_->rx_ready_cell = rx_ready_cell;
  tx_ready_ = reinterpret_cast<sys::spsc_fifo*>(base + l.tx_ready_offset);
  tx_free_ = reinterpret_cast<sys::spsc_fifo*>(base + l.tx_free_offset);
  rx_free_ = reinterpret_cast<sys::mpmc_fifo*>(base + l.rx_free_offset);
  rx_ready_ = sys::cell_fifo(base + l.rx_ready_offset, l.rx_fifo_capacity, rx_ready_cell);
  vram_ = base + l.vram_offset;
  tx_ready_->init(l.tx_fifo_capacity);
  tx_free_->init(l.tx_fifo_capacity);
  rx_free_->init(l.rx_fifo_capacity);
  rx_free_return_.init(rx_blocks_);
  rx_ready_.init();
  for (uint32_t b = 0; b < tx_blocks_; ++b)
    (void)tx_free_->push(medusa::encode_entry(b, block_size_));
  for (uint32_t b = tx_blocks_; b < tx_blocks_ + rx_blocks_; ++b)
    (void)rx_free_->push(medusa::encode_entry(b, block_size_));
  header_->magic = medusa::card_magic;
}

void medusa_card::view_card(peer_view& v, std::byte* base) noexcept {
  v.header = reinterpret_cast<card_header*>(base);
  v.rx_free = reinterpret_cast<sys::mpmc_fifo*>(base + v.header->rx_free_offset);
  // The header's geometry was checked against my own (peer_problem).
  v.rx_ready = sys::cell_fifo(base + v.header->rx_ready_offset, v.header->rx_fifo_capacity,
                              v.header->rx_ready_cell);
  v.first_rx_block = v.header->tx_blocks;
  v.rx_blocks = v.header->rx_blocks;
  v.vram = base + v.header->vram_offset;
}

bool medusa_card::peer_alive(int proc) const noexcept {
  return proc == my_proc_ || peer_process(proc) != sys::process_state::gone;
}

sys::process_state medusa_card::peer_process(int proc) const noexcept {
  if (proc == my_proc_) return sys::process_state::running;
  if (!attached(proc)) return sys::process_state::gone;
  return sys::observe_process(peers_[proc].segment.header()->creator_pid);
}

void medusa_card::attach_peer(int proc) {
  attach_within(proc, attach_timeout_ms_);
}

void medusa_card::attach_within(int proc, uint64_t timeout_ms) {
  if (proc < 0 || proc >= nprocs_)
    throw std::invalid_argument("hpam: attach_peer: process " + std::to_string(proc) +
                                " is not in [0, " + std::to_string(nprocs_) + ")");
  if (peers_[proc].vram) return;  // already attached (or my own card)
  const std::string name = sys::segment_name(job_, medusa_segment_purpose, proc);
  sys::shared_segment seg;
  try {
    seg = sys::shared_segment::attach(name, timeout_ms);
  } catch (const std::exception& e) {
    throw std::runtime_error("hpam: process " + std::to_string(my_proc_) +
                             " could not reach the Medusa card of process " + std::to_string(proc) +
                             " (job " + job_ + "): " + e.what());
  }
  if (seg.payload_size() < sizeof(card_header))
    throw std::runtime_error("hpam: the Medusa card of process " + std::to_string(proc) +
                             " is too small");
  const auto& h = *reinterpret_cast<const card_header*>(seg.payload());
  const std::string problem =
      peer_problem(h, seg.payload_size(), proc, block_size_, nprocs_,
                   crc_ ? medusa::card_flag_crc : 0, rx_ready_.cell_bytes());
  if (!problem.empty())
    throw std::runtime_error("hpam: the Medusa card of process " + std::to_string(proc) +
                             " is incompatible with process " + std::to_string(my_proc_) +
                             "'s: " + problem + " (mixed hpam versions or settings?)");
  seg.prefault(seg.payload_size());  // its blocks mapped now, not at a packet's first use
  peer_view& v = peers_[proc];
  v.segment = std::move(seg);
  view_card(v, v.segment.payload());
}

bool medusa_card::claim_tx_block(uint32_t& b) {
  uint64_t e;
  if (tx_free_->pop(e)) {
    b = medusa::entry_block(e);
    return true;
  }
  if (spare_tx_.empty()) return false;
  b = spare_tx_.back();
  spare_tx_.pop_back();
  return true;
}

// TX_FREE held unclaimed blocks ahead of the one just transmitted (or the
// entry was missing): move the unclaimed ones aside so TX_FREE is empty
// between launches and each launch takes back exactly its own block.
void medusa_card::reconcile_tx_free(uint32_t b, uint32_t first) noexcept {
  bool found = false;
  auto sort_out = [&](uint32_t blk) {
    if (blk == b && !found)
      found = true;
    else if (blk < tx_blocks_ && spare_tx_.size() < spare_tx_.capacity())
      spare_tx_.push_back(blk);
  };
  if (first != no_block) sort_out(first);
  uint64_t e;
  while (tx_free_->pop(e)) sort_out(medusa::entry_block(e));
}

// A packet longer than a cell, its cell claimed: into a block popped from
// dest's RX_FREE. No block (or one that is not an inbound block of dest's)
// drops the packet, but the cell is taken and the processor polls it in
// order: it is published with a void entry, to be released as refused.
void medusa_card::deliver_in_block(peer_view& p, std::byte* cell, uint64_t pos,
                                   const std::byte* packet, uint32_t length) noexcept {
  uint64_t e;
  if (__builtin_expect(!p.rx_free->pop(e), 0)) {
    p.header->overflow_drops.fetch_add(1, std::memory_order_relaxed);
    p.rx_ready.publish(cell, pos, cell_entry_);
    return;
  }
  const uint32_t blk = medusa::entry_block(e);
  if (__builtin_expect(blk - p.first_rx_block >= p.rx_blocks, 0)) {
    refuse_rx_free_entry(p);
    p.rx_ready.publish(cell, pos, cell_entry_);
    return;
  }
  std::memcpy(p.vram + static_cast<size_t>(blk) * block_size_, packet, length);
  // Publish: the packet in its block is visible before the entry naming it.
  p.rx_ready.publish(cell, pos, medusa::encode_entry(blk, length, static_cast<uint32_t>(my_proc_)));
  p.rx_free->prefetch_pop();  // the next long packet to dest takes the next free block
}

// A packet delivered by reference from a process whose card I have not
// mapped (I never sent to it): mapped now, once, without waiting (a real
// sender's card exists; an entry forged to name one that does not must not
// stall the poll). A card that cannot be mapped leaves the entry malformed
// (a real packet would be lost, and resent as a copy: a resend is never by
// reference).
bool medusa_card::attach_to_read(uint32_t proc) noexcept {
  try {
    attach_within(static_cast<int>(proc), 0);
    return true;
  } catch (const std::exception&) {
    return false;
  }
}

// The block popped from dest's RX_FREE is not one of its inbound blocks (a
// damaged or forged entry): counted, and nothing is written.
void medusa_card::refuse_rx_free_entry(peer_view& p) noexcept {
  p.header->bad_rx_free.fetch_add(1, std::memory_order_relaxed);
  ++malformed_;
}

// A cell released while others are held (before an older one, or the
// oldest of several): kept, with its block, and given back together with
// every consecutive released one once the oldest comes.
// Released twice, or not popped (a stale or made-up position): ignored.
void medusa_card::release_out_of_order(uint64_t position, uint32_t block) noexcept {
  constexpr uint64_t released = 1ull << 32;
  const uint64_t mask = rx_ready_.capacity() - 1;
  if (position < rx_freed_ || position >= rx_cursor_ || rx_released_[position & mask]) return;
  rx_released_[position & mask] = released | block;
  while (rx_freed_ < rx_cursor_ && rx_released_[rx_freed_ & mask]) {
    const auto b = static_cast<uint32_t>(rx_released_[rx_freed_ & mask]);
    rx_released_[rx_freed_ & mask] = 0;
    rx_ready_.release(rx_freed_++);
    give_back_block(b);
  }
}

// An RX_READY entry that names no packet: void (the sender counted the
// drop in my overflow_drops), or malformed (a block out of range, a length
// its place cannot hold: counted here).
void medusa_card::reject_entry(rx_packet& p, uint64_t entry) noexcept {
  const uint32_t b = medusa::entry_block(entry);
  if (!medusa::is_void_entry(entry)) ++malformed_;
  p.crc_ok = false;
  p.rejected = true;
  p.src = 0;
  p.length = 0;
  if (b - tx_blocks_ < rx_blocks_) {  // a real inbound block with a bad length: give it back later
    p.block = b;
    p.data = vram_ + static_cast<size_t>(b) * block_size_;
  } else {
    p.block = no_block;
    p.data = null_packet_.get();
  }
}

// An entry in any other form than a headless cell's (out of line: the
// clean wire's packets in their cells go headless): a packet in its cell
// with its wire header, in an inbound block, in the sender's block (by
// reference), else refused.
void medusa_card::receive_entry(rx_packet& p, const std::byte* cell, uint64_t e) noexcept {
  rx_free_return_.retry(*rx_free_);  // blocks whose RX_FREE cell was held (give_back_block)
  const uint32_t b = medusa::entry_block(e);
  const uint32_t len = medusa::entry_length(e);
  const uint32_t src = medusa::entry_source(e);
  if (__builtin_expect(b == medusa::entry_in_cell && cell_lengths_.holds(len), 1)) {
    p.block = no_block;
    p.data = cell + sys::cell_fifo::head_bytes;
  } else if (b - tx_blocks_ < rx_blocks_ && block_lengths_.holds(len)) {
    rx_free_->prefetch_push();  // the release of this block writes there
    p.block = b;
    p.data = vram_ + static_cast<size_t>(b) * block_size_;
  } else if (const std::byte* at = block_lengths_.holds(len) ? sender_block(src, b) : nullptr) {
    p.block = no_block;  // the sender's: only the cell comes back
    p.data = at;
  } else {
    reject_entry(p, e);  // a void entry, or a malformed one
    return;
  }
  p.length = len;
  p.src = static_cast<uint16_t>(src);
  p.rejected = false;
  p.crc_ok = packet_ok(p, src);
}

}  // namespace hpam::nic
