// Tagged remote write (OSDI'96 3.3).
#include "hamlyn_lib/tagged_write.hpp"

#include <stdexcept>
#include <string>

namespace hpam::hamlyn_lib {

tagged_write_receiver::tagged_write_receiver(hamlyn_manager& m, uint64_t bytes,
                                             uint32_t tag_capacity)
    : manager_(m), bytes_(bytes), mask_(tag_capacity - 1u) {
  if (bytes == 0 || tag_capacity == 0 || (tag_capacity & (tag_capacity - 1)) != 0)
    throw std::invalid_argument("tagged_write_receiver: bytes > 0 and a power-of-two tag capacity");
  if (!is_ok(m.allocate_buffer(bytes, area_)))
    throw std::runtime_error("tagged_write_receiver: no card memory for " + std::to_string(bytes) +
                             " bytes");
  if (!is_ok(m.open_slot(area_, bytes, hw::slot_mode::fast, 0, 0, this, slot_))) {
    m.free_buffer(area_);
    throw std::runtime_error("tagged_write_receiver: no free slot");
  }
  buffer_ = m.address(area_);
  tags_.resize(tag_capacity);
}

tagged_write_receiver::~tagged_write_receiver() {
  manager_.close_slot(slot_);
  manager_.free_buffer(area_);
}

seed tagged_write_receiver::make_seed() const {
  seed s = manager_.make_seed(protocol::tagged_write, slot_, 0, bytes_, 0, 0);
  return s;
}

bool tagged_write_receiver::process_arrival(const arrival& a) {
  if (a.metadata || a.n.metadata_index != hw::fast_index || a.n.length > bytes_) {
    counters_.malformed++;
    return true;
  }
  if (tail_ - head_ > mask_) return false;  // full: the manager keeps it
  tags_[tail_++ & mask_] =
      tagged_arrival{a.n.metadata, a.n.source, static_cast<uint32_t>(a.n.length)};
  counters_.arrivals++;
  return true;
}

// Found: the older tags move up one place, so the rest keep their order.
bool tagged_write_receiver::take_specific(uint64_t tag, tagged_arrival* out) {
  for (uint64_t i = head_; i != tail_; ++i) {
    if (tags_[i & mask_].tag != tag) continue;
    if (out) *out = tags_[i & mask_];
    for (uint64_t j = i; j != head_; --j) tags_[j & mask_] = tags_[(j - 1) & mask_];
    head_++;
    return true;
  }
  return false;
}

bool tagged_write_receiver::get_specific_tag(uint64_t tag, tagged_arrival* out) {
  if (take_specific(tag, out)) return true;
  // Dispatch what has arrived (bounded: at most a queue's worth) and look again.
  for (uint64_t budget = tags_.size(); budget > 0 && manager_.poll_nowait(); --budget)
    if (take_specific(tag, out)) return true;
  return false;
}

status tagged_write_sender::open(hamlyn_manager& m, const seed& s) {
  const status st = m.check_seed(s, protocol::tagged_write);
  if (!is_ok(st)) return st;
  manager_ = &m;
  ticket_ = s.target;
  ticket_.metadata_index = hw::fast_index;
  return status::ok;
}

}  // namespace hpam::hamlyn_lib
