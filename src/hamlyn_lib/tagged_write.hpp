// Tagged remote write (OSDI'96 3.3): send(ticket, source, length,
// destination offset, tag) writes the data at the offset of the receiver's
// buffer as one fast-mode message (one packet; the tag is the word fast
// mode writes into the notification entry). Tags queue at the receiver and
// are taken by get_tag (any) or get_specific_tag (that one). In-order
// delivery is not guaranteed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "hamlyn_lib/hamlyn_manager.hpp"

namespace hpam::hamlyn_lib {

// A tag as the receiver takes it.
struct tagged_arrival {
  uint64_t tag = 0;     // the sender's tag
  uint32_t source = 0;  // sending process
  uint32_t length = 0;  // bytes written
};

struct tagged_counters {
  uint64_t arrivals = 0;   // tags queued
  uint64_t malformed = 0;  // entries that were not fast mode
};

class tagged_write_receiver final : public receiver_end_point {
 public:
  // A buffer of `bytes` and a queue of `tag_capacity` tags (a power of two;
  // arrivals beyond it wait in the card's notification queue).
  tagged_write_receiver(hamlyn_manager& m, uint64_t bytes, uint32_t tag_capacity = 1024);
  ~tagged_write_receiver() override;
  tagged_write_receiver(const tagged_write_receiver&) = delete;
  tagged_write_receiver& operator=(const tagged_write_receiver&) = delete;

  seed make_seed() const;
  std::byte* buffer() const { return buffer_; }
  uint64_t bytes() const { return bytes_; }
  // The oldest queued tag; polls the manager once when none is queued.
  bool get_tag(tagged_arrival& t);
  bool get_tag(uint64_t& tag) {
    tagged_arrival t;
    if (!get_tag(t)) return false;
    tag = t.tag;
    return true;
  }
  // Takes `tag` if it is queued (polling the manager until none is left to
  // dispatch); the other tags stay queued.
  bool get_specific_tag(uint64_t tag, tagged_arrival* out = nullptr);
  // get_tag / get_specific_tag, waiting up to timeout_ns (h_recv_block).
  bool get_tag_block(uint64_t& tag, uint64_t timeout_ns) {
    return manager_.wait_until([&] { return get_tag(tag); }, timeout_ns);
  }
  bool get_specific_tag_block(uint64_t tag, uint64_t timeout_ns) {
    return manager_.wait_until([&] { return get_specific_tag(tag); }, timeout_ns);
  }
  size_t queued() const { return static_cast<size_t>(tail_ - head_); }
  const tagged_counters& counters() const { return counters_; }
  bool process_arrival(const arrival& a) override;

 private:
  bool take_specific(uint64_t tag, tagged_arrival* out);

  hamlyn_manager& manager_;
  uint64_t bytes_;
  uint64_t area_ = 0;
  uint32_t slot_ = 0;
  std::byte* buffer_ = nullptr;
  std::vector<tagged_arrival> tags_;  // ring [tag_capacity]
  uint64_t mask_;
  uint64_t head_ = 0;  // next tag to take
  uint64_t tail_ = 0;  // next free place
  tagged_counters counters_;
};

class tagged_write_sender {
 public:
  status open(hamlyn_manager& m, const seed& s);  // rejected: the seed failed its checks
  // Writes [source, source+length) at `offset` of the receiver's buffer and
  // queues `tag` there (one packet: length <= the card's packet data bytes).
  // Returns once the card has sent it.
  status send(const void* source, uint32_t length, uint64_t offset, uint64_t tag);

 private:
  hamlyn_manager* manager_ = nullptr;
  hw::ticket ticket_{};
};

// Inline: the whole send is one fast-mode h_send_msg.
[[gnu::always_inline]] inline status tagged_write_sender::send(const void* source, uint32_t length,
                                                               uint64_t offset, uint64_t tag) {
  if (__builtin_expect(!manager_, 0)) return status::invalid_argument;
  hw::send_handle h;
  const status st = manager_->card().terminus().send_fast(
      ticket_, offset, static_cast<const std::byte*>(source), length, tag, h);
  if (__builtin_expect(!is_ok(st), 0)) return st;
  if (__builtin_expect(manager_->card().terminus().completion_word() <= h.sequence, 0))
    return manager_->wait_sent(h);  // posted behind earlier entries
  return status::ok;
}

// Inline: the receiver's poll for any tag.
[[gnu::always_inline]] inline bool tagged_write_receiver::get_tag(tagged_arrival& t) {
  if (head_ == tail_) (void)manager_.poll_nowait();
  if (head_ == tail_) return false;
  t = tags_[head_++ & mask_];
  return true;
}

}  // namespace hpam::hamlyn_lib
