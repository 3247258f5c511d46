#include "nic/medusa/medusa_card.hpp"


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
    bad("block_size must be a power of two in [64, 1 MiB], got " + std::to_string(s.block_size));
  if (static_cast<uint64_t>(s.tx_blocks) + s.rx_blocks > medusa::max_blocks)
    bad("tx_blocks + rx_blocks must be at most " + std::to_string(medusa::max_blocks));
  if (s.job.empty()) bad("job id is empty");
}

// The card header fields that must be equal on both ends, and the layout a
// header's counts imply: a peer whose header disagrees is not trusted.
std::string peer_problem(const card_header& h, size_t mapped, int proc, uint32_t block_size,
                         int nprocs, uint32_t flags) {
  if (h.magic != medusa::card_magic) return "bad magic";
  if (h.version != medusa::card_version) return "version " + std::to_string(h.version);
  if (h.header_size != sizeof(card_header)) return "header size differs";
  if (h.block_size != block_size)
    return "block size " + std::to_string(h.block_size) + " != " + std::to_string(block_size);
  if (h.owner_proc != proc) return "card belongs to process " + std::to_string(h.owner_proc);
  if (h.nprocs != nprocs) return "job has " + std::to_string(h.nprocs) + " processes";
  if (h.flags != flags) return "CRC setting differs";
  if (static_cast<uint64_t>(h.tx_blocks) + h.rx_blocks > medusa::max_blocks)
    return "too many blocks";
  const card_layout l = medusa::compute_layout(h.block_size, h.tx_blocks, h.rx_blocks);
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
      attach_timeout_ms_(setup.attach_timeout_ms),
      job_key_(setup.job_key),
      job_(setup.job),
      wire_((check_setup(setup), setup.faults), setup.my_proc, setup.block_size, clock_for(setup)) {
  sys::remove_stale_segments();
  const card_layout l = medusa::compute_layout(block_size_, tx_blocks_, rx_blocks_);
  segment_ = sys::shared_segment::create(sys::segment_name(job_, "medusa", my_proc_), l.size);
  try {
    init_memory();
    // The card sits near its host: bind its memory to this process's NUMA node.
    sys::place_near_this_process(segment_.header(), segment_.header()->size);
    peers_.resize(static_cast<size_t>(nprocs_));
    view_card(peers_[my_proc_], segment_.payload());  // loopback to my own card
    spare_tx_.reserve(tx_blocks_);
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

void medusa_card::init_memory() {
  const card_layout l = medusa::compute_layout(block_size_, tx_blocks_, rx_blocks_);
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
  tx_ready_ = reinterpret_cast<sys::spsc_fifo*>(base + l.tx_ready_offset);
  tx_free_ = reinterpret_cast<sys::spsc_fifo*>(base + l.tx_free_offset);
  rx_free_ = reinterpret_cast<sys::mpmc_fifo*>(base + l.rx_free_offset);
  rx_ready_ = reinterpret_cast<sys::mpmc_fifo*>(base + l.rx_ready_offset);
  vram_ = base + l.vram_offset;
  tx_ready_->init(l.tx_fifo_capacity);
  tx_free_->init(l.tx_fifo_capacity);
  rx_free_->init(l.rx_fifo_capacity);
  rx_ready_->init(l.rx_fifo_capacity);
  for (uint32_t b = 0; b < tx_blocks_; ++b)
    (void)tx_free_->push(medusa::encode_entry(b, block_size_));
  for (uint32_t b = tx_blocks_; b < tx_blocks_ + rx_blocks_; ++b)
    (void)rx_free_->push(medusa::encode_entry(b, block_size_));
  header_->magic = medusa::card_magic;
}

void medusa_card::view_card(peer_view& v, std::byte* base) noexcept {
  v.header = reinterpret_cast<card_header*>(base);
  v.rx_free = reinterpret_cast<sys::mpmc_fifo*>(base + v.header->rx_free_offset);
  v.rx_ready = reinterpret_cast<sys::mpmc_fifo*>(base + v.header->rx_ready_offset);
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
  if (proc < 0 || proc >= nprocs_)
    throw std::invalid_argument("hpam: attach_peer: process " + std::to_string(proc) +
                                " is not in [0, " + std::to_string(nprocs_) + ")");
  if (peers_[proc].vram) return;  // already attached (or my own card)
  const std::string name = sys::segment_name(job_, "medusa", proc);
  sys::shared_segment seg;
  try {
    seg = sys::shared_segment::attach(name, attach_timeout_ms_);
  } catch (const std::exception& e) {
    throw std::runtime_error("hpam: process " + std::to_string(my_proc_) +
                             " could not reach the Medusa card of process " + std::to_string(proc) +
                             " (job " + job_ + "): " + e.what());
  }
  if (seg.payload_size() < sizeof(card_header))
    throw std::runtime_error("hpam: the Medusa card of process " + std::to_string(proc) +
                             " is too small");
  const auto& h = *reinterpret_cast<const card_header*>(seg.payload());
  const std::string problem = peer_problem(h, seg.payload_size(), proc, block_size_, nprocs_,
                                           crc_ ? medusa::card_flag_crc : 0);
  if (!problem.empty())
    throw std::runtime_error("hpam: the Medusa card of process " + std::to_string(proc) +
                             " is incompatible with process " + std::to_string(my_proc_) +
                             "'s: " + problem + " (mixed hpam versions or settings?)");
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

void medusa_card::reject_entry(rx_packet& p, uint32_t b) noexcept {
  ++malformed_;
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

}  // namespace hpam::nic
