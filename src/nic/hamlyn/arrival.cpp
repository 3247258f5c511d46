// The receiving interface (OSDI'96 2.2, 2.5-2.7): for each packet, the key
// and bounds checks, the deposit at base + offset, the packet accumulator of
// the metadata entry, and on completion the notification queue entry. Run
// by the sender's process in the receiver's card, or by the receiver for
// packets from its inbound FIFO (poll_inbound). Every refusal is counted in
// the receiver's card and writes nothing.
#include <cstring>
#include <thread>

#include "nic/hamlyn/cross_memory.hpp"
#include "nic/hamlyn/hamlyn_card.hpp"
#include "sys/clock.hpp"

namespace hpam::nic::hamlyn {
namespace {

bool paranoid(uint32_t mode) {
  return mode == static_cast<uint32_t>(slot_mode::paranoid) ||
         mode == static_cast<uint32_t>(slot_mode::paranoid_one_shot);
}

void count(std::atomic<uint64_t>& c) { c.fetch_add(1, std::memory_order_relaxed); }

// [offset, offset+length) inside [low, high) without overflow.
bool inside(uint64_t offset, uint64_t length, uint64_t low, uint64_t high) {
  return offset >= low && offset <= high && length <= high - offset;
}

}  // namespace

bool card::check_packet(const card_view& v, const packet_header& h, slot& s,
                        metadata_entry*& entry) {
  arrival_counters& c = v.header->counters;
  if (s.state.load(std::memory_order_seq_cst) != static_cast<uint32_t>(slot_state::active)) {
    count(c.revoked_rejections);
    return false;
  }
  const uint32_t mode = s.mode;
  const bool fast = h.metadata_index == fast_index;
  entry = nullptr;
  if (fast) {
    if (paranoid(mode) || !(h.flags & flag_single) || h.metadata_length) {
      count(c.mode_rejections);
      return false;
    }
  } else {
    if (mode == static_cast<uint32_t>(slot_mode::fast)) {
      count(c.mode_rejections);
      return false;
    }
    if (h.metadata_index >= s.metadata_count || h.metadata_length > user_metadata_bytes ||
        s.metadata_base + uint64_t{s.metadata_count} > v.header->metadata_entries) {
      count(c.malformed);
      return false;
    }
    entry = &v.metadata[s.metadata_base + h.metadata_index];
  }
  const uint64_t key = paranoid(mode) ? entry->paranoid_key.load(std::memory_order_acquire)
                                      : s.protection_key.load(std::memory_order_acquire);
  if (key == 0 || h.protection_key != key) {
    count(c.key_rejections);
    return false;
  }
  if (!inside(h.offset, h.length, 0, s.bound) ||
      (paranoid(mode) && !inside(h.offset, h.length, entry->paranoid_low, entry->paranoid_high))) {
    count(c.bounds_rejections);
    return false;
  }
  if (mode == static_cast<uint32_t>(slot_mode::paranoid_one_shot) &&
      entry->one_shot_used.load(std::memory_order_acquire)) {
    count(c.mode_rejections);
    return false;
  }
  if (h.delta == 0 && !(h.flags & flag_single) && flags_notify(h.flags)) {
    count(c.malformed);  // a zero delta is only meaningful for a single-packet message
    return false;
  }
  return true;
}

status card::write_area(const card_view& v, const slot& s, const packet_header& h,
                        const iovec* data, int n, bool local) {
  if (s.memory == static_cast<uint32_t>(area_memory::card)) {
    if (s.base > v.header->area_bytes || s.bound > v.header->area_bytes - s.base) return status::rejected;
    std::byte* dst = v.area + s.base + h.offset;
    for (int i = 0; i < n; ++i) {
      if (data[i].iov_len) std::memcpy(dst, data[i].iov_base, data[i].iov_len);
      dst += data[i].iov_len;
    }
    return status::ok;
  }
  if (local) {
    auto* dst = reinterpret_cast<std::byte*>(s.base + h.offset);
    for (int i = 0; i < n; ++i) {
      if (data[i].iov_len) std::memcpy(dst, data[i].iov_base, data[i].iov_len);
      dst += data[i].iov_len;
    }
    return status::ok;
  }
  if (h.length == 0) return status::ok;
  return cross_memory_write(v.pid, data, n, s.base + h.offset);
}

status card::arrive(const card_view& v, const packet_header& h, const iovec* data, int n,
                    const std::byte* meta, bool local) {
  arrival_counters& c = v.header->counters;
  if (h.slot >= v.header->slot_count || flags_kind(h.flags) != packet_kind::data ||
      (h.flags & ~known_flags)) {
    count(c.malformed);
    return status::rejected;
  }
  slot& s = v.slots[h.slot];
  // Announce this arrival before checking, so a revoke either makes the
  // checks fail or waits for the deposit to finish (seq_cst on both sides).
  s.users.fetch_add(1, std::memory_order_seq_cst);
  metadata_entry* entry = nullptr;
  status st = status::rejected;
  if (check_packet(v, h, s, entry)) {
    st = write_area(v, s, h, data, n, local);
    if (is_ok(st) && entry && h.metadata_length) {
      std::memcpy(entry->user_metadata, meta, h.metadata_length);
      entry->metadata_length = h.metadata_length;
    }
  }
  s.users.fetch_sub(1, std::memory_order_release);
  if (!is_ok(st)) return st;
  count(c.packets);
  if (flags_notify(h.flags) || h.metadata_index == fast_index) complete(v, s, h, entry);
  return status::ok;
}

// Packet counting and notification (2.5, 2.6).
void card::complete(const card_view& v, slot& s, const packet_header& h, metadata_entry* entry) {
  if (entry && h.delta != 0) {
    const uint32_t before = entry->packet_accumulator.fetch_add(h.delta, std::memory_order_acq_rel);
    if (static_cast<uint32_t>(before + h.delta) != 0) return;  // more packets to come
  }
  notification n{h.slot, h.metadata_index, h.source, h.fast_word, h.length};
  if (entry) {
    n.metadata = static_cast<uint64_t>(reinterpret_cast<std::byte*>(entry) - v.base);
    entry->messages++;
    if (s.mode == static_cast<uint32_t>(slot_mode::paranoid_one_shot))
      entry->one_shot_used.store(1, std::memory_order_release);
  }
  count(v.header->counters.messages);
  const uint32_t q = s.notification_queue < v.header->notification_queues ? s.notification_queue : 0;
  (void)notification_append(*v.queue(q), v.entries(q), n);
}

status card::resolve(const card_view& v, uint32_t s_index, uint64_t key, uint64_t offset,
                     uint64_t len, std::byte*& ptr, uint64_t& address) {
  arrival_counters& c = v.header->counters;
  if (s_index >= v.header->slot_count) {
    count(c.malformed);
    return status::rejected;
  }
  slot& s = v.slots[s_index];
  s.users.fetch_add(1, std::memory_order_seq_cst);
  status st = status::rejected;
  if (s.state.load(std::memory_order_seq_cst) != static_cast<uint32_t>(slot_state::active)) {
    count(c.revoked_rejections);
  } else if (paranoid(s.mode) || s.mode == static_cast<uint32_t>(slot_mode::fast)) {
    count(c.mode_rejections);
  } else if (key == 0 || key != s.protection_key.load(std::memory_order_acquire)) {
    count(c.key_rejections);
  } else if (!inside(offset, len, 0, s.bound)) {
    count(c.bounds_rejections);
  } else if (s.memory == static_cast<uint32_t>(area_memory::card)) {
    if (s.base <= v.header->area_bytes && s.bound <= v.header->area_bytes - s.base) {
      ptr = v.area + s.base + offset;
      address = 0;
      st = status::ok;
    }
  } else {
    ptr = nullptr;
    address = s.base + offset;
    st = status::ok;
  }
  if (!is_ok(st)) s.users.fetch_sub(1, std::memory_order_release);
  return st;  // on ok the caller calls unresolve when done with the memory
}

void card::unresolve(const card_view& v, uint32_t s_index) {
  v.slots[s_index].users.fetch_sub(1, std::memory_order_release);
}

bool card::receive(uint32_t q, notification& n) {
  const card_view& v = views_[my_proc_];
  if (q >= cfg_.notification_queues) return false;
  if (__builtin_expect(v.rx_ready->size() != 0 || !deferred_.empty(), 0)) (void)poll_inbound();
  return notification_take(*v.queue(q), v.entries(q), n);
}

bool card::receive_block(uint32_t q, notification& n, uint64_t timeout_ns) {
  const uint64_t deadline = sys::clock::monotonic_ns() + timeout_ns;
  for (uint32_t spins = 0;; ++spins) {
    if (receive(q, n)) return true;
    kick();  // my own sends may be what the peer waits for
    if ((spins & 255) == 255) {
      if (sys::clock::monotonic_ns() >= deadline) return false;
      std::this_thread::yield();
    }
  }
}

// The fallback path: packets senders could not deposit themselves. A
// packet that cannot be finished now (its answer meets a full FIFO) keeps
// its buffer and is served again, first, at the next poll.
uint32_t card::poll_inbound(uint32_t budget) {
  const card_view& v = views_[my_proc_];
  while (!deferred_.empty()) {
    if (!serve_packet(deferred_.front())) return 0;
    (void)v.rx_free->push(deferred_.front());
    deferred_.erase(deferred_.begin());
  }
  uint32_t done = 0;
  uint64_t buffer;
  while (done < budget && v.rx_ready->pop(buffer)) {
    ++done;
    if (buffer >= cfg_.rx_packets) {  // a forged buffer number: not ours to touch or free
      count(v.header->counters.malformed);
      continue;
    }
    count(v.header->counters.fallback_packets);
    if (!serve_packet(static_cast<uint32_t>(buffer))) {
      deferred_.push_back(static_cast<uint32_t>(buffer));  // capacity reserved at setup
      break;
    }
    (void)v.rx_free->push(buffer);
  }
  return done;
}

bool card::serve_packet(uint32_t buffer) {
  const card_view& v = views_[my_proc_];
  std::byte* p = v.rx_buffer(buffer);
  auto& h = *reinterpret_cast<packet_header*>(p);
  const std::byte* payload = p + sizeof h;
  const packet_kind kind = flags_kind(h.flags);
  if (kind == packet_kind::read_request) return serve_read_request(h);
  if (sizeof h + uint64_t{h.metadata_length} + h.length > cfg_.packet_size) {
    count(v.header->counters.malformed);
    return true;
  }
  if (kind == packet_kind::data) {
    iovec d{const_cast<std::byte*>(payload + h.metadata_length), h.length};
    (void)arrive(v, h, &d, 1, payload, true);
    return true;
  }
  const uint32_t k = static_cast<uint32_t>(kind);
  if (k < packet_kind_count && handlers_[k].fn) return handlers_[k].fn(handlers_[k].ctx, *this, h, payload);
  count(v.header->counters.malformed);
  return true;
}

// A get through the fallback path: the owner reads its own memory and sends
// the bytes back as reply packets (fast_word = the requester's operation id,
// offset = position in the requested range). Progress is kept in the request
// packet itself (reserved = bytes already replied), so a request that meets
// a full FIFO at the requester resumes where it stopped.
bool card::serve_read_request(packet_header& h) {
  bool finished = true;
  const card_view& v = views_[my_proc_];
  if (h.source >= static_cast<uint32_t>(nprocs_) || !views_[h.source].attached) {
    count(v.header->counters.malformed);
    return true;
  }
  std::byte* ptr = nullptr;
  uint64_t address = 0;
  packet_header r{};
  r.destination = h.source;
  r.source = static_cast<uint32_t>(my_proc_);
  r.flags = encode_flags(packet_kind::reply, false);
  r.fast_word = h.fast_word;
  if (!is_ok(resolve(v, h.slot, h.protection_key, h.offset, h.length, ptr, address))) {
    r.reserved = static_cast<uint64_t>(status::rejected);
    return push_packet(static_cast<int>(h.source), r, nullptr, 0);
  }
  const std::byte* src = ptr ? ptr : reinterpret_cast<const std::byte*>(address);
  const uint32_t per_packet = packet_data_bytes();
  do {
    const uint64_t at = h.reserved;
    const uint64_t len = std::min<uint64_t>(per_packet, h.length - at);
    r.offset = at;
    r.length = static_cast<uint32_t>(len);
    iovec piece{const_cast<std::byte*>(src + at), len};
    if (!push_packet(static_cast<int>(h.source), r, &piece, 1)) {
      finished = false;
      break;
    }
    h.reserved = at + len;
  } while (h.reserved < h.length);
  unresolve(v, h.slot);
  return finished;
}

}  // namespace hpam::nic::hamlyn
