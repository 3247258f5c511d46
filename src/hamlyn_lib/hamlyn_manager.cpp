// The hamlyn_manager (OSDI'96 3.3): buffer memory, slots of its end points,
// seed checks, and the dispatch of notification entries.
#include "hamlyn_lib/hamlyn_manager.hpp"

#include <stdexcept>
#include <string>

namespace hpam::hamlyn_lib {

hamlyn_manager::hamlyn_manager(hw::card& c, uint32_t queue) : card_(c), queue_(queue) {
  if (queue >= c.view(c.my_proc()).geo.notification_queues)
    throw std::invalid_argument("hamlyn_manager: notification queue " + std::to_string(queue) +
                                " does not exist on this card");
  end_points_.assign(c.view(c.my_proc()).geo.slot_count, nullptr);
}

status hamlyn_manager::allocate_buffer(uint64_t bytes, uint64_t& offset) {
  return card_.slots().allocate_area(bytes, offset);
}

status hamlyn_manager::open_slot(uint64_t offset, uint64_t bytes, hw::slot_mode mode,
                                 uint32_t entries, uint32_t inline_limit, receiver_end_point* ep,
                                 uint32_t& slot) {
  hw::slot_spec spec;
  spec.memory = hw::area_memory::card;
  spec.base = offset;
  spec.bound = bytes;
  spec.mode = mode;
  spec.metadata_count = mode == hw::slot_mode::fast ? 0 : entries;
  spec.notification_queue = queue_;
  spec.inline_limit = inline_limit;
  const status st = card_.slots().create_slot(spec, slot);
  if (is_ok(st)) end_points_[slot] = ep;
  return st;
}

void hamlyn_manager::close_slot(uint32_t slot) {
  if (slot >= end_points_.size() || !end_points_[slot]) return;
  (void)card_.slots().release_slot(slot);
  end_points_[slot] = nullptr;
  if (kept_ && kept_n_.slot == slot) kept_ = false;
}

seed hamlyn_manager::make_seed(protocol kind, uint32_t slot, uint64_t offset, uint64_t bytes,
                               uint32_t entries, uint32_t entry_bytes) const {
  seed s{};
  s.magic = seed_magic;
  s.version = seed_version;
  s.kind = static_cast<uint32_t>(kind);
  s.target = card_.slots().make_ticket(slot, 0, offset, bytes, true);
  s.entries = entries;
  s.entry_bytes = entry_bytes;
  return s;
}

// The slot a ticket names, as the receiving interface would check it at
// arrival (its fields read once): active, the ticket's generation and key,
// the mode, `entries` metadata entries from the ticket's, the range inside
// the bound.
status hamlyn_manager::check_ticket(const hw::ticket& t, hw::slot_mode mode, uint32_t entries) {
  bool ok = t.node < static_cast<uint32_t>(card_.nprocs());
  if (ok) {
    try {
      card_.attach_peer(static_cast<int>(t.node));
    } catch (const std::exception&) {
      ok = false;
    }
  }
  if (ok) {
    const hw::card_view& v = card_.view(static_cast<int>(t.node));
    ok = t.slot < v.geo.slot_count && t.range > 0 &&
         (mode != hw::slot_mode::fast || t.metadata_index == 0);
    if (ok) {
      const hw::slot& sl = v.slots[t.slot];
      const uint64_t key = sl.protection_key.load(std::memory_order_acquire);
      ok = sl.state.load(std::memory_order_acquire) ==
               static_cast<uint32_t>(hw::slot_state::active) &&
           key != 0 && key == t.protection_key && sl.generation == t.generation &&
           sl.mode == static_cast<uint32_t>(mode) &&
           uint64_t{t.metadata_index} + entries <= sl.metadata_count &&
           sl.memory == static_cast<uint32_t>(hw::area_memory::card) && t.offset <= sl.bound &&
           t.range <= sl.bound - t.offset;
    }
  }
  if (ok) return status::ok;
  counters_.seeds_refused++;
  return status::rejected;
}

status hamlyn_manager::check_seed(const seed& s, protocol kind) {
  const bool fast = kind == protocol::tagged_write;
  const bool shape = s.magic == seed_magic && s.version == seed_version &&
                     s.kind == static_cast<uint32_t>(kind) && s.reserved == 0 &&
                     (fast ? s.entries == 0 : s.entries > 0) &&
                     (kind != protocol::datagram ||
                      (s.entry_bytes > 0 && uint64_t{s.entries} * s.entry_bytes <= s.target.range));
  if (!shape) {
    counters_.seeds_refused++;
    return status::rejected;
  }
  return check_ticket(s.target, fast ? hw::slot_mode::fast : hw::slot_mode::normal, s.entries);
}

bool hamlyn_manager::dispatch(const hw::notification& n, const std::byte* carried) {
  receiver_end_point* ep = n.slot < end_points_.size() ? end_points_[n.slot] : nullptr;
  if (!ep) {
    counters_.stray++;
    return true;
  }
  const hw::metadata_entry* entry = nullptr;
  if (n.metadata_index != hw::fast_index) {
    entry = card_.slots().metadata(n.slot, n.metadata_index);
    if (!entry) {
      counters_.malformed++;
      return true;
    }
  }
  const arrival a{n, n.carried ? carried : nullptr, entry};
  if (!ep->process_arrival(a)) {
    counters_.deferred++;
    return false;
  }
  counters_.dispatched++;
  return true;
}

[[gnu::noinline]] bool hamlyn_manager::retry_kept() {
  if (!dispatch(kept_n_, carried_)) return false;
  kept_ = false;
  return true;
}

bool hamlyn_manager::poll_nowait() {
  card_.terminus().kick();
  if (__builtin_expect(kept_, 0)) return retry_kept();
  hw::notification n;
  if (!card_.receiver().receive(queue_, n, carried_)) return false;
  if (__builtin_expect(!dispatch(n, carried_), 0)) {
    kept_ = true;  // carried_ holds its message until it is taken
    kept_n_ = n;
  }
  return true;
}

status hamlyn_manager::wait_sent(const hw::send_handle& h) {
  status why = status::ok;
  hw::send_state s = card_.terminus().state(h, &why);
  // Deposits into card memory never wait for the receiver: the engine
  // finishes every entry it is kicked for.
  // (A bound all the same: 10 s, then would_block.)
  const uint64_t deadline = sys::clock::monotonic_ns() + 10'000'000'000ull;
  for (uint32_t spins = 1; s == hw::send_state::pending; ++spins) {
    card_.terminus().kick();
    s = card_.terminus().state(h, &why);
    if ((spins & 1023) == 0 && sys::clock::monotonic_ns() >= deadline) return status::would_block;
  }
  return s == hw::send_state::sent ? status::ok : why;
}

}  // namespace hpam::hamlyn_lib
