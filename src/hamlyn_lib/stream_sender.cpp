// The stream protocol's sender (OSDI'96 3.3): sender-based placement of
// each record in a region of the receiver, coalescing of small sends,
// waiting (while polling) for credit when out of tickets or room.
#include <algorithm>
#include <cstring>

#include "hamlyn_lib/stream.hpp"

namespace hpam::hamlyn_lib {

// A record as it crosses the wire when faults are set: where it goes, then
// its bytes.
struct record_packet {
  uint32_t region;
  uint32_t entry;
  stream_record_metadata meta;
};

struct stream_sender::wire_sink {
  stream_sender* s;
  void deliver(int, const std::byte* packet, uint32_t length) noexcept {
    record_packet p;
    std::memcpy(&p, packet, sizeof p);
    if (length == sizeof p + p.meta.length)
      (void)s->deliver(p.region, p.entry, p.meta, packet + sizeof p);
  }
};

stream_sender::~stream_sender() {
  if (!manager_) return;
  manager_->close_slot(credit_slot_);
  manager_->free_buffer(credit_area_);
}

status stream_sender::set_faults(const nic::fault_config& f) {
  if (manager_ || f.drop > 0 || f.duplicate > 0 || f.corrupt > 0) return status::invalid_argument;
  faults_ = f;
  return status::ok;
}

status stream_sender::open(hamlyn_manager& m, const seed& s, uint32_t coalesce_bytes,
                           uint64_t wait_ns) {
  if (manager_) return status::invalid_argument;
  status st = m.check_seed(s, protocol::stream);
  if (!is_ok(st)) return st;
  if (s.target.range >= (1ull << 32) || coalesce_bytes > s.target.range)
    return status::invalid_argument;
  st = m.allocate_buffer(sizeof(stream_credit), credit_area_);
  if (!is_ok(st)) return st;
  st = m.open_slot(credit_area_, sizeof(stream_credit), hw::slot_mode::fast, 0,
                   sizeof(stream_credit), this, credit_slot_);
  if (!is_ok(st)) {
    m.free_buffer(credit_area_);
    return st;
  }
  manager_ = &m;
  records_ = s.entries;
  max_record_ = s.target.range;
  wait_ns_ = wait_ns;
  regions_.reserve(stream_max_regions);
  add_region(s.target, s.entries);
  flight_.assign(size_t{stream_max_regions} * records_, in_flight{});
  coalesce_.assign(coalesce_bytes, std::byte{0});
  if (faults_.any()) {
    wire_ = std::make_unique<nic::wire>(faults_, m.card().my_proc(),
                                        static_cast<uint32_t>(sizeof(record_packet) + max_record_),
                                        clock_);
    staging_.assign(sizeof(record_packet) + max_record_, std::byte{0});
  }
  // The hello: my credit slot's ticket, as record 0.
  const hw::ticket t =
      m.card().slots().make_ticket(credit_slot_, 0, 0, sizeof(stream_credit), true);
  return post(&t, sizeof t, stream_flag_hello);
}

void stream_sender::add_region(const hw::ticket& t, uint32_t entries) {
  region r;
  r.ticket = t;
  r.bytes = t.range;
  r.entries = entries;
  regions_.push_back(r);
}

// A place for `length` bytes, contiguous, in a region with a free entry:
// the region tried first, then the others.
bool stream_sender::place(uint64_t length, placement& p) {
  if (flight_tail_ - flight_head_ >= flight_.size()) return false;
  const uint32_t n = static_cast<uint32_t>(regions_.size());
  for (uint32_t k = 0; k < n; ++k) {
    const uint32_t i = (current_ + k) % n;
    region& r = regions_[i];
    if (r.used - r.freed >= r.entries || length > r.bytes) continue;
    const uint64_t pos = r.head % r.bytes;
    const uint64_t start = pos + length > r.bytes ? r.head + (r.bytes - pos) : r.head;
    if (start + length - r.tail > r.bytes) continue;
    p = placement{i, start};
    current_ = i;
    return true;
  }
  return false;
}

// Out of tickets or room: wait while polling for credit (the paper's
// sender blocks); never write over an unreleased record.
[[gnu::noinline]] bool stream_sender::place_or_wait(uint64_t length, placement& p) {
  counters_.waits++;
  return manager_->wait_until(
      [&] {
        if (wire_) {
          wire_sink sink{this};
          wire_->service(sink);
        }
        return place(length, p);
      },
      wait_ns_);
}

status stream_sender::post(const void* data, uint64_t length, uint32_t flags) {
  placement p;
  if (!place(length, p) && !place_or_wait(length, p)) return status::would_block;
  region& r = regions_[p.region];
  const stream_record_metadata meta{next_sequence_, static_cast<uint32_t>(p.start % r.bytes),
                                    static_cast<uint32_t>(length), flags};
  const uint32_t entry = static_cast<uint32_t>(r.used % r.entries);
  r.used++;
  r.head = p.start + length;
  flight_[flight_tail_++ % flight_.size()] = in_flight{next_sequence_, p.region, r.head};
  next_sequence_++;
  counters_.records++;
  if (!wire_) return deliver(p.region, entry, meta, data);
  const record_packet rp{p.region, entry, meta};
  std::memcpy(staging_.data(), &rp, sizeof rp);
  if (length) std::memcpy(staging_.data() + sizeof rp, data, length);
  wire_sink sink{this};
  wire_->transmit(sink, manager_->card().my_proc(), staging_.data(),
                  static_cast<uint32_t>(sizeof rp + length));
  return status::ok;
}

// h_send_msg of one record on its region's entry.
status stream_sender::deliver(uint32_t region_index, uint32_t entry,
                              const stream_record_metadata& meta, const void* data) {
  const region& r = regions_[region_index];
  hw::ticket t = r.ticket;
  t.metadata_index = entry;
  t.offset = r.ticket.offset + meta.offset;
  t.range = meta.length;
  std::byte m[stream_record_metadata_bytes];
  std::memcpy(m, &meta, sizeof m);
  const iovec piece{const_cast<void*>(data), meta.length};
  hw::message msg;
  msg.gather = &piece;
  msg.gather_count = 1;
  msg.metadata = m;
  msg.metadata_length = sizeof m;
  hw::send_handle h;
  status st = manager_->card().terminus().send(t, msg, h);
  while (st == status::would_block) {  // the work queue is full: the card drains it
    manager_->card().terminus().kick();
    st = manager_->card().terminus().send(t, msg, h);
  }
  if (!is_ok(st)) return st;
  return manager_->wait_sent(h);
}

status stream_sender::send(const void* data, uint64_t length) {
  if (!manager_) return status::invalid_argument;
  if (length == 0) return status::ok;
  if (length < coalesce_.size()) {  // small: copied together
    if (fill_ + length > coalesce_.size()) {
      const status st = flush();
      if (!is_ok(st)) return st;
    }
    std::memcpy(coalesce_.data() + fill_, data, length);
    fill_ += length;
    counters_.coalesced++;
    return status::ok;
  }
  status st = flush();  // order: what was coalesced goes first
  const auto* p = static_cast<const std::byte*>(data);
  while (is_ok(st) && length) {  // large: as it is, a region at most per record
    const uint64_t chunk = std::min(length, max_record_);
    st = post(p, chunk, 0);
    p += chunk;
    length -= chunk;
  }
  return st;
}

status stream_sender::flush() {
  if (!manager_) return status::invalid_argument;
  status st = status::ok;
  if (fill_) {
    st = post(coalesce_.data(), fill_, 0);
    if (is_ok(st)) fill_ = 0;
  }
  if (wire_) {
    wire_sink sink{this};
    wire_->flush(sink);
  }
  return st;
}

void stream_sender::apply_release(uint64_t released) {
  released_ = released;
  while (flight_head_ != flight_tail_) {
    const in_flight& f = flight_[flight_head_ % flight_.size()];
    if (f.sequence >= released) break;
    region& r = regions_[f.region];
    r.tail = f.end;
    r.freed++;
    flight_head_++;
  }
}

// A credit from the receiver, carried in the entry: checked against what I
// sent (a release of records I never sent, or going back, is a lie).
bool stream_sender::process_arrival(const arrival& a) {
  stream_credit c;
  if (!a.carried || a.n.length != sizeof c || a.n.slot != credit_slot_) {
    counters_.malformed++;
    return true;
  }
  std::memcpy(&c, a.carried, sizeof c);
  if (c.released > next_sequence_ || c.released < released_ ||
      (c.kind != stream_credit_release && c.kind != stream_credit_grant)) {
    counters_.malformed++;
    return true;
  }
  apply_release(c.released);
  if (c.kind == stream_credit_grant) {
    if (c.region != regions_.size() || regions_.size() >= stream_max_regions ||
        c.grant.node != regions_[0].ticket.node || c.grant.range >= (1ull << 32) ||
        !is_ok(manager_->check_ticket(c.grant, hw::slot_mode::normal, records_))) {
      counters_.malformed++;
      return true;
    }
    add_region(c.grant, records_);
    counters_.grants++;
  }
  return true;
}

}  // namespace hpam::hamlyn_lib
