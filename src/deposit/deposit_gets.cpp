// deposit::endpoint: batches of small gets from other processes' private
// memory (deposit.hpp, Batches): which gets wait for one, and carrying a
// batch out with one process_vm_readv per destination.
//
// The kernel's work in process_vm_readv is per remote piece (the mapping
// lock, the lookup of the area, pinning the page), not per byte: entries
// of one registration (slot) that follow each other in the batch and lie in
// one page are read as one piece into a page of scratch and copied to their
// destinations from there, as a card reads a line once for the requests
// that name it. Only bytes inside the registration whose key every one of
// them passed are read.
#include <algorithm>
#include <cstring>

#include "deposit/deposit.hpp"
#include "deposit/op_record.hpp"
#include "nic/hamlyn/cross_memory.hpp"

namespace hpam::deposit {
namespace {

constexpr uint64_t page = 4096;
uint64_t page_of(uint64_t address) {
  return address / page;
}

}  // namespace

// Whether a get waits for a batch: small, in the ticket's range, from
// another process whose private memory I read by cross-memory attach (card
// memory and my own are copied at once).
bool endpoint::batches_get(const ticket& t, uint64_t offset, size_t len) const {
  if (batch_limit_ == 0 || len > batch_limit_ || t.node >= static_cast<uint32_t>(nprocs_) ||
      static_cast<int>(t.node) == my_proc_ || offset > t.range || len > t.range - offset)
    return false;
  const nic::hamlyn::card_view& v = card_.view(static_cast<int>(t.node));
  return v.attached && v.cross_memory &&
         !(t.slot < v.geo.slot_count &&
           v.slots[t.slot].memory == static_cast<uint32_t>(nic::hamlyn::area_memory::card));
}

// The waiting gets, one batch per destination in the order they came.
void endpoint::run_batched_gets() {
  for (size_t first = 0; first < batched_gets_.size(); ++first)
    if (batched_gets_[first] != ~0u) run_gets_from(ops_[batched_gets_[first]].dest, first);
  batched_gets_.clear();
}

// A checked entry (batch_ops_[k], remote [address, +length)) into the
// batch's pieces: into the last piece when both are of one slot and in one
// page (that piece then reads into a page of scratch; batch_from_[k] is
// where in scratch the entry's bytes are), else a piece of its own read
// straight into its destination.
void endpoint::add_piece(uint32_t k, uint32_t slot, uint64_t address, uint32_t& pieces,
                         uint32_t& pages) {
  const op_record& r = ops_[batch_ops_[k]];
  const uint64_t end = address + r.length;
  batch_from_[k] = ~0u;
  if (pieces != 0) {
    batch_piece& p = batch_pieces_[pieces - 1];
    const bool one_page = page_of(address) == page_of(p.lo) && page_of(end - 1) == page_of(p.lo);
    if (p.slot == slot && one_page && (p.scratch_page >= 0 || pages < scratch_pages)) {
      if (p.scratch_page < 0) {  // its first entry now reads from scratch too
        p.scratch_page = static_cast<int32_t>(pages++);
        batch_from_[p.first] = static_cast<uint32_t>(p.scratch_page * page + p.lo % page);
      }
      p.lo = std::min(p.lo, address);
      p.hi = std::max(p.hi, end);
      batch_from_[k] = static_cast<uint32_t>(p.scratch_page * page + address % page);
      return;
    }
  }
  batch_pieces_[pieces++] = batch_piece{slot, -1, k, address, end};
}

// The waiting gets from `dest` (from batched_gets_[first] on): each checked
// and its slot held (resolve, as a get at once), then one process_vm_readv
// for the accepted ones; a refused one fails alone. When the kernel refuses
// after all they go as read requests.
void endpoint::run_gets_from(int dest, size_t first) {
  const nic::hamlyn::card_view& v = card_.view(dest);
  uint32_t held = 0, pieces = 0, pages = 0;
  for (size_t e = first; e < batched_gets_.size() && held < nic::hamlyn::max_batch; ++e) {
    const uint32_t i = batched_gets_[e];
    if (i == ~0u || ops_[i].dest != dest) continue;
    batched_gets_[e] = ~0u;
    op_record& r = ops_[i];
    std::byte* ptr = nullptr;
    uint64_t address = 0;
    const status st = card_.receiver().resolve(v, r.request.slot, r.request.protection_key,
                                               r.request.offset, r.length, ptr, address);
    if (!is_ok(st) || ptr) {  // refused, or card memory after all: copied here
      if (ptr && r.length) std::memcpy(r.local, ptr, r.length);
      if (ptr) card_.receiver().unresolve(v, r.request.slot);
      finish(r, st);
      continue;
    }
    batch_ops_[held] = i;
    batch_from_[held] = ~0u;
    if (r.length != 0) add_piece(held, r.request.slot, address, pieces, pages);
    held++;
  }
  for (uint32_t n = 0; n < pieces; ++n) {
    const batch_piece& p = batch_pieces_[n];
    void* to = p.scratch_page < 0 ? static_cast<void*>(ops_[batch_ops_[p.first]].local)
                                  : batch_scratch_.data() + p.scratch_page * page + p.lo % page;
    batch_local_[n] = iovec{to, p.hi - p.lo};
    batch_remote_[n] = iovec{reinterpret_cast<void*>(p.lo), p.hi - p.lo};
  }
  get_batches_ += pieces ? 1 : 0;
  const status st = pieces ? nic::hamlyn::cross_memory_pairs(v.pid, false, batch_local_.data(),
                                                             batch_remote_.data(), pieces)
                           : status::ok;
  for (uint32_t k = 0; k < held; ++k) {
    op_record& r = ops_[batch_ops_[k]];
    card_.receiver().unresolve(v, r.request.slot);
    if (st == status::system_error) {
      request_get(r);
      continue;
    }
    if (is_ok(st) && batch_from_[k] != ~0u)
      std::memcpy(r.local, &batch_scratch_[batch_from_[k]], r.length);
    finish(r, st);
  }
}

}  // namespace hpam::deposit
