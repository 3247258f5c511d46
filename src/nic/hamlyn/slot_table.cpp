// The setup code of a Hamlyn card: card memory for message areas, the
// slot table, the metadata pool, tickets (Hamlyn OSDI'96 section 2.3).
#include "nic/hamlyn/slot_table.hpp"

#include <cstring>
#include <thread>

#include "sys/align.hpp"
#include "sys/clock.hpp"
#include "sys/membarrier.hpp"
#include "sys/protection_key.hpp"

namespace hpam::nic::hamlyn {
void slot_table::bind(slot* slots, metadata_entry* metadata, std::byte* area,
                      const slot_limits& l) {
  slots_ = slots;
  metadata_ = metadata;
  area_ = area;
  limits_ = l;
  free_area_.clear();
  used_area_.clear();
  free_metadata_.clear();
  spare_metadata_node_ = {};
  spare_count_ = 0;
  spare_mark_.assign(l.slot_count, 0);
  free_area_[0] = l.area_bytes;
  if (l.metadata_entries) free_metadata_[0] = l.metadata_entries;
}

status slot_table::allocate_area(uint64_t bytes, uint64_t& offset) {
  if (bytes == 0) return status::invalid_argument;
  const uint64_t need = sys::align_up(bytes, 64);
  for (auto it = free_area_.begin(); it != free_area_.end(); ++it) {
    if (it->second < need) continue;
    offset = it->first;
    const uint64_t rest = it->second - need;
    free_area_.erase(it);
    if (rest) free_area_[offset + need] = rest;
    used_area_[offset] = need;
    return status::ok;
  }
  return status::no_resource;
}

// The end of the highest free range that has room: for the card's own
// structures (hold lines), so that clients' allocations keep starting at
// the area's beginning.
status slot_table::allocate_area_top(uint64_t bytes, uint64_t& offset) {
  if (bytes == 0) return status::invalid_argument;
  const uint64_t need = sys::align_up(bytes, 64);
  for (auto it = free_area_.rbegin(); it != free_area_.rend(); ++it) {
    const uint64_t first = it->first, end = first + it->second;
    if (it->second < need || ((end - need) & ~uint64_t{63}) < first) continue;
    offset = (end - need) & ~uint64_t{63};  // 64-byte aligned, as allocate_area's
    free_area_.erase(first);
    if (offset > first) free_area_[first] = offset - first;
    if (end > offset + need) free_area_[offset + need] = end - offset - need;
    used_area_[offset] = need;
    return status::ok;
  }
  return status::no_resource;
}

void slot_table::free_area(uint64_t offset) {
  auto it = used_area_.find(offset);
  if (it == used_area_.end()) return;
  uint64_t start = offset, len = it->second;
  used_area_.erase(it);
  std::memset(area_address(start), 0, len);  // free area memory is zero (bind)
  auto next = free_area_.lower_bound(start);
  if (next != free_area_.end() && start + len == next->first) {
    len += next->second;
    free_area_.erase(next);
  }
  auto prev = free_area_.lower_bound(start);
  if (prev != free_area_.begin()) {
    --prev;
    if (prev->first + prev->second == start) {
      start = prev->first;
      len += prev->second;
      free_area_.erase(prev);
    }
  }
  free_area_[start] = len;
}

// A free slot and `count` entries of the metadata pool (none taken if
// either is missing: no_resource).
status slot_table::take_slot_and_metadata(uint32_t count, uint32_t& index,
                                          uint32_t& metadata_base) {
  uint32_t s = 0;
  while (s < limits_.slot_count && slots_[s].state.load(std::memory_order_relaxed) != 0) ++s;
  if (s == limits_.slot_count) return status::no_resource;
  uint32_t meta_base = 0;
  if (count) {
    auto it = free_metadata_.begin();
    while (it != free_metadata_.end() && it->second < count) ++it;
    if (it == free_metadata_.end()) return status::no_resource;
    meta_base = it->first;
    const uint32_t rest = it->second - count;
    auto node = free_metadata_.extract(it);  // the node is reused, not freed
    if (rest) {
      node.key() = meta_base + count;
      node.mapped() = rest;
      free_metadata_.insert(std::move(node));
    } else {
      spare_metadata_node_ = std::move(node);
    }
  }
  index = s;
  metadata_base = meta_base;
  return status::ok;
}

void slot_table::give_back_spares() {
  while (spare_count_ != 0) {
    const spare_slot& sp = spare_slots_[--spare_count_];
    spare_mark_[sp.index] = 0;
    free_metadata_range(sp.metadata_base, 1);
    slots_[sp.index].state.store(static_cast<uint32_t>(slot_state::free),
                                 std::memory_order_release);
  }
}

status slot_table::create_slot(const slot_spec& spec, uint32_t& index) {
  const bool fast = spec.mode == slot_mode::fast;
  if (static_cast<uint32_t>(spec.mode) >= slot_mode_count || spec.bound == 0 ||
      spec.notification_queue >= limits_.notification_queues ||
      (!fast && spec.metadata_count == 0) || spec.inline_limit > limits_.inline_room)
    return status::invalid_argument;
  if (spec.memory == area_memory::card &&
      (spec.base > limits_.area_bytes || spec.bound > limits_.area_bytes - spec.base))
    return status::invalid_argument;
  const uint32_t count = fast ? 0 : spec.metadata_count;
  uint32_t s = 0, meta_base = 0;
  if (count == 1 && spare_count_ != 0) {  // the last slot released with one entry, revoked
    const spare_slot& sp = spare_slots_[--spare_count_];
    spare_mark_[sp.index] = 0;
    s = sp.index;
    meta_base = sp.metadata_base;
  } else {
    status st = take_slot_and_metadata(count, s, meta_base);
    if (st == status::no_resource && spare_count_ != 0) {
      give_back_spares();
      st = take_slot_and_metadata(count, s, meta_base);
    }
    if (!is_ok(st)) return st;
  }
  for (uint32_t i = 0; i < count; ++i) {
    metadata_entry& e = metadata_[meta_base + i];
    e.packet_accumulator.store(0, std::memory_order_relaxed);
    e.paranoid_key.store(0, std::memory_order_relaxed);
    e.paranoid_low = e.paranoid_high = 0;
    e.one_shot_used.store(0, std::memory_order_relaxed);
    e.metadata_length = 0;
    e.messages = 0;
  }
  slot& sl = slots_[s];
  sl.base = spec.base;
  sl.bound = spec.bound;
  sl.mode = static_cast<uint32_t>(spec.mode);
  sl.memory = static_cast<uint32_t>(spec.memory);
  sl.metadata_base = meta_base;
  sl.metadata_count = count;
  sl.notification_queue = spec.notification_queue;
  sl.inline_limit = spec.inline_limit;
  sl.generation++;
  sl.protection_key.store(spec.key ? spec.key : sys::random_protection_key(),
                          std::memory_order_relaxed);
  // Publish: a sender that sees the slot active sees every field above.
  sl.state.store(static_cast<uint32_t>(slot_state::active), std::memory_order_release);
  index = s;
  return status::ok;
}

status slot_table::revoke(uint32_t index) {
  if (index >= limits_.slot_count) return status::invalid_argument;
  slot& sl = slots_[index];
  if (sl.state.load(std::memory_order_relaxed) == static_cast<uint32_t>(slot_state::free))
    return status::invalid_argument;
  sl.state.store(static_cast<uint32_t>(slot_state::revoked), std::memory_order_seq_cst);
  sl.protection_key.store(0, std::memory_order_seq_cst);
  // Senders that announce a direct deposit or a fast-mode arrival in their
  // hold line with a plain store, then read the state: after the barrier
  // each has either seen the state revoked or made its announcement visible
  // here (layout.hpp, hold_line). Only card memory takes direct deposits
  // from other processes: over process memory the one direct depositor is
  // this card itself (deposit::endpoint::direct, `mine`), in this thread,
  // so the barrier (a system call and an interrupt to every CPU running a
  // joined process) is not paid for the registrations an MPI rendezvous
  // makes and drops per message; fast-mode arrivals from other processes
  // may land in either memory, so a fast-mode slot always pays it. A
  // refused barrier (never expected: the lines are offered only where it
  // runs) leaves the wait below to a store buffer's drain.
  if (hold_lines_ && (sl.memory == static_cast<uint32_t>(area_memory::card) ||
                      sl.mode == static_cast<uint32_t>(slot_mode::fast)))
    (void)sys::barrier_all();
  // Wait (bounded) for arrivals and direct deposits that passed the checks
  // before the revoke, so no byte lands in the area after this returns. The
  // clock is read only once there is something to wait for: a revoke with
  // no sender inside (every deregistration of an MPI rendezvous) reads it
  // never.
  uint64_t deadline = 0;
  while (sl.users.load(std::memory_order_seq_cst) != 0 || held(index)) {
    const uint64_t now = sys::clock::monotonic_ns();
    if (deadline == 0)
      deadline = now + 2'000'000'000ull;
    else if (now > deadline)
      return status::would_block;  // a sender died inside
    std::this_thread::yield();
  }
  return status::ok;
}

bool slot_table::held(uint32_t index) const {
  for (uint32_t p = 0; p < hold_line_count_; ++p)
    if (hold_lines_[p].slot_plus_one.load(std::memory_order_acquire) == uint64_t{index} + 1 ||
        hold_lines_[p].arrival_plus_one.load(std::memory_order_acquire) == uint64_t{index} + 1)
      return true;
  return false;
}

status slot_table::rekey(uint32_t index, uint64_t key) {
  if (index >= limits_.slot_count || key == 0 || is_spare(index)) return status::invalid_argument;
  slot& sl = slots_[index];
  if (sl.state.load(std::memory_order_relaxed) == static_cast<uint32_t>(slot_state::free))
    return status::invalid_argument;
  sl.protection_key.store(key, std::memory_order_relaxed);
  sl.state.store(static_cast<uint32_t>(slot_state::active), std::memory_order_release);
  return status::ok;
}

// The range goes back into the metadata pool, joined with the free ranges
// it touches (else a pool of single entries, all free, could not give two
// in a row). Nodes come from and go to the spare: a register-release cycle
// allocates and frees nothing.
void slot_table::free_metadata_range(uint32_t base, uint32_t count) {
  auto it = free_metadata_.end();
  if (spare_metadata_node_.empty()) {
    it = free_metadata_.emplace(base, count).first;
  } else {
    spare_metadata_node_.key() = base;
    spare_metadata_node_.mapped() = count;
    it = free_metadata_.insert(std::move(spare_metadata_node_)).position;
  }
  const auto keep_spare = [this](std::map<uint32_t, uint32_t>::node_type node) {
    if (spare_metadata_node_.empty()) spare_metadata_node_ = std::move(node);
  };
  if (auto next = std::next(it); next != free_metadata_.end() && base + count == next->first) {
    it->second += next->second;
    keep_spare(free_metadata_.extract(next));
  }
  if (it != free_metadata_.begin()) {
    if (auto prev = std::prev(it); prev->first + prev->second == it->first) {
      prev->second += it->second;
      keep_spare(free_metadata_.extract(it));
    }
  }
}

status slot_table::release_slot(uint32_t index) {
  if (is_spare(index)) return status::invalid_argument;  // released already
  const status r = revoke(index);
  if (!is_ok(r)) return r;
  slot& sl = slots_[index];
  if (sl.metadata_count == 1 && spare_count_ < spare_slots_max) {  // kept revoked, a spare
    spare_slots_[spare_count_++] = {index, sl.metadata_base};
    spare_mark_[index] = 1;
    sl.metadata_count = 0;
    return status::ok;
  }
  if (sl.metadata_count) free_metadata_range(sl.metadata_base, sl.metadata_count);
  sl.metadata_count = 0;
  sl.state.store(static_cast<uint32_t>(slot_state::free), std::memory_order_release);
  return status::ok;
}

metadata_entry* slot_table::metadata(uint32_t slot_index, uint32_t metadata_index) {
  if (slot_index >= limits_.slot_count) return nullptr;
  const slot& sl = slots_[slot_index];
  if (metadata_index >= sl.metadata_count) return nullptr;
  return &metadata_[sl.metadata_base + metadata_index];
}

status slot_table::set_paranoid(uint32_t slot_index, uint32_t metadata_index, uint64_t key,
                                uint64_t low, uint64_t high) {
  metadata_entry* e = metadata(slot_index, metadata_index);
  if (!e || low > high) return status::invalid_argument;
  e->paranoid_low = low;
  e->paranoid_high = high;
  e->paranoid_key.store(key, std::memory_order_release);
  return status::ok;
}

status slot_table::rearm(uint32_t slot_index, uint32_t metadata_index) {
  metadata_entry* e = metadata(slot_index, metadata_index);
  if (!e) return status::invalid_argument;
  e->one_shot_used.store(0, std::memory_order_release);
  return status::ok;
}

ticket slot_table::make_ticket(uint32_t slot_index, uint32_t metadata_index, uint64_t offset,
                               uint64_t range, bool notify) const {
  const slot& sl = slots_[slot_index];
  ticket t{};
  t.node = limits_.my_proc;
  t.slot = slot_index;
  t.metadata_index = metadata_index;
  t.delta = 0;
  const bool paranoid = sl.mode == static_cast<uint32_t>(slot_mode::paranoid) ||
                        sl.mode == static_cast<uint32_t>(slot_mode::paranoid_one_shot);
  t.protection_key = sl.protection_key.load(std::memory_order_relaxed);
  if (paranoid && metadata_index < sl.metadata_count)
    t.protection_key =
        metadata_[sl.metadata_base + metadata_index].paranoid_key.load(std::memory_order_relaxed);
  t.offset = offset;
  t.range = range;
  t.flags = notify ? ticket_flags::notify : 0;
  t.generation = sl.generation;
  return t;
}

}  // namespace hpam::nic::hamlyn
