// The stream protocol's receiver (OSDI'96 3.3): records put back in
// sequence order, returned without a copy, released in order with a
// cumulative credit to the sender, more regions granted when the
// application holds on to records.
#include <cstring>
#include <stdexcept>
#include <string>

#include "hamlyn_lib/stream.hpp"

namespace hpam::hamlyn_lib {

stream_receiver::stream_receiver(hamlyn_manager& m, const stream_config& cfg)
    : manager_(m), cfg_(cfg) {
  const uint64_t window = uint64_t{cfg.records} * cfg.max_regions;
  const uint64_t capacity = m.card().view(m.card().my_proc()).geo.notify_capacity;
  if (cfg.records == 0 || cfg.buffer_bytes == 0 || cfg.buffer_bytes >= (1ull << 32) ||
      cfg.max_regions == 0 || cfg.max_regions > stream_max_regions || window > capacity)
    throw std::invalid_argument(
        "stream_receiver: records and buffer_bytes (< 4 GiB) must be > 0, max_regions in [1, " +
        std::to_string(stream_max_regions) + "], records * max_regions (" + std::to_string(window) +
        ") at most the notification queue's " + std::to_string(capacity) + " entries");
  uint64_t w = 1;
  while (w <= window) w <<= 1;  // room for every record in flight, and one
  window_.assign(w, arrived{});
  mask_ = w - 1;
  regions_.reserve(cfg.max_regions);
  if (!is_ok(add_region()))
    throw std::runtime_error("stream_receiver: no card memory or slot for its buffer");
}

stream_receiver::~stream_receiver() {
  for (const region& r : regions_) {
    manager_.close_slot(r.slot);
    manager_.free_buffer(r.area);
  }
}

status stream_receiver::add_region() {
  region r{};
  status st = manager_.allocate_buffer(cfg_.buffer_bytes, r.area);
  if (!is_ok(st)) return st;
  st = manager_.open_slot(r.area, cfg_.buffer_bytes, hw::slot_mode::normal, cfg_.records, 0, this,
                          r.slot);
  if (!is_ok(st)) {
    manager_.free_buffer(r.area);
    return st;
  }
  r.base = manager_.address(r.area);
  regions_.push_back(r);
  counters_.regions++;
  return status::ok;
}

seed stream_receiver::make_seed() const {
  return manager_.make_seed(protocol::stream, regions_[0].slot, 0, cfg_.buffer_bytes, cfg_.records,
                            0);
}

// The record's metadata, copied once, against my own regions and window:
// a region of mine, inside it, in the window, not already there, from the
// one sender.
bool stream_receiver::process_arrival(const arrival& a) {
  uint32_t ri = 0;
  while (ri < regions_.size() && regions_[ri].slot != a.n.slot) ++ri;
  stream_record_metadata m{};
  const bool shaped = ri < regions_.size() && a.metadata &&
                      a.metadata->metadata_length >= stream_record_metadata_bytes;
  if (shaped) std::memcpy(&m, a.metadata->user_metadata, stream_record_metadata_bytes);
  arrived& slot = window_[m.sequence & mask_];
  if (!shaped || m.sequence < released_ || m.sequence - released_ > mask_ || slot.sequence_plus1 ||
      m.offset > cfg_.buffer_bytes || m.length > cfg_.buffer_bytes - m.offset ||
      (m.flags & ~stream_flag_hello) || (sender_ != ~0u && a.n.source != sender_)) {
    counters_.malformed++;
    return true;
  }
  slot = arrived{m.sequence + 1, regions_[ri].base + m.offset, m.length, m.flags};
  return true;
}

// The hello (record 0): the ticket of the sender's credit slot, checked as
// any ticket is before anything is sent on it.
void stream_receiver::hello(const arrived& a) {
  hw::ticket t;
  if (a.length != sizeof t) {
    counters_.malformed++;
    return;
  }
  std::memcpy(&t, a.data, sizeof t);
  if (!is_ok(manager_.check_ticket(t, hw::slot_mode::fast, 0)) || t.range < sizeof(stream_credit))
    return;  // counted by the manager: no credit will flow, the sender times out
  credit_ticket_ = t;
  credit_ticket_.metadata_index = hw::fast_index;
  has_credit_ticket_ = true;
  sender_ = t.node;
}

bool stream_receiver::receive(stream_record& r) {
  for (;;) {
    arrived& a = window_[next_ & mask_];
    if (a.sequence_plus1 != next_ + 1) {
      (void)manager_.poll_nowait();
      if (a.sequence_plus1 != next_ + 1) return false;
    }
    if (next_ == 0) {  // the hello: mine, not the application's
      if (a.flags & stream_flag_hello)
        hello(a);
      else
        counters_.malformed++;
      next_++;
      continue;
    }
    if (a.flags & stream_flag_hello) counters_.malformed++;  // a second hello: returned as data
    r.data = a.data;
    r.length = a.length;
    r.id = next_++;
    held_bytes_ += a.length;
    counters_.records++;
    maybe_grow();
    return true;
  }
}

bool stream_receiver::receive_block(stream_record& r, uint64_t timeout_ns) {
  return manager_.wait_until([&] { return receive(r); }, timeout_ns);
}

status stream_receiver::release(uint64_t id) {
  if (id < released_ || id >= next_ || id == 0) return status::invalid_argument;
  for (uint64_t s = released_; s <= id; ++s) {
    arrived& a = window_[s & mask_];
    if (s != 0) held_bytes_ -= a.length;
    a = arrived{};
  }
  released_ = id + 1;
  send_credit(stream_credit_release, 0, nullptr);
  return status::ok;
}

// More buffers when the application holds on to records: half of the
// granted bytes or entries unreleased.
void stream_receiver::maybe_grow() {
  const uint64_t n = regions_.size();
  if (n >= cfg_.max_regions || !has_credit_ticket_) return;
  const uint64_t held = next_ - released_;
  if (held_bytes_ * 2 <= n * cfg_.buffer_bytes && held * 2 <= n * cfg_.records) return;
  if (!is_ok(add_region())) return;
  const region& r = regions_.back();
  const hw::ticket t = manager_.card().slots().make_ticket(r.slot, 0, 0, cfg_.buffer_bytes, true);
  send_credit(stream_credit_grant, static_cast<uint32_t>(n), &t);
}

// One fast-mode message, carried in the sender's notification entry.
void stream_receiver::send_credit(uint32_t kind, uint32_t region, const hw::ticket* grant) {
  if (!has_credit_ticket_) return;
  stream_credit c{};
  c.released = released_;
  c.kind = kind;
  c.region = region;
  if (grant) c.grant = *grant;
  hw::send_handle h;
  status st = manager_.card().terminus().send_fast(
      credit_ticket_, 0, reinterpret_cast<const std::byte*>(&c), sizeof c, kind, h);
  if (is_ok(st)) st = manager_.wait_sent(h);
  if (is_ok(st))
    counters_.credits++;
  else
    counters_.refused_credit++;
}

}  // namespace hpam::hamlyn_lib
