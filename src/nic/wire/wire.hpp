// The emulated network between cards, with a seeded fault model (HPAM 5.2:
// "the probability of packet loss is very small, but not completely
// negligible"; the wire here can also duplicate, corrupt, reorder and delay).
//
// The wire only decides what happens to each packet and when; moving bytes
// into a destination is the job of a Sink given by the card:
//
//   struct Sink { void deliver(int dest, const std::byte* packet, uint32_t length) noexcept; };
//
// so Medusa (copy into a block popped from the destination's RX_FREE) and
// Hamlyn (deposit into a slot) share the same wire. A fault-free wire costs
// one predictable branch per packet and one per service() call.
//
// Packets the wire holds back (reorder, delay) are copied into a holding area
// sized at setup, so the sender may reuse its buffer as soon as transmit()
// returns. When the holding area is full the packet is delivered at once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>

#include "nic/card.hpp"
#include "sys/clock.hpp"

namespace hpam::nic {

// xoshiro256** seeded through splitmix64: small, fast, repeatable.
class fault_rng {
 public:
  explicit fault_rng(uint64_t seed) noexcept;
  uint64_t next() noexcept {
    const uint64_t result = rotl(s_[1] * 5, 7) * 9;
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }
  // Uniform in [0, n) for n > 0 (multiply-shift; bias is negligible here).
  uint64_t below(uint64_t n) noexcept {
    return static_cast<uint64_t>((static_cast<unsigned __int128>(next()) * n) >> 64);
  }
  // True with the probability encoded by threshold_for(p).
  bool chance(uint64_t threshold) noexcept { return (next() >> 11) < threshold; }
  // A probability in [0, 1] as a 53-bit threshold: 0 never, 2^53 always.
  static uint64_t threshold_for(double p) noexcept;

  static uint64_t splitmix64(uint64_t& state) noexcept;

 private:
  static uint64_t rotl(uint64_t x, int k) noexcept { return (x << k) | (x >> (64 - k)); }
  uint64_t s_[4];
};

class wire {
 public:
  // Packets the holding area can keep back at once.
  static constexpr uint32_t holding_capacity = 64;
  // A packet held for reordering goes out after the next packet transmitted,
  // or after this many service() calls if no packet follows.
  static constexpr uint32_t reorder_max_polls = 16;
  // At most this many bits are flipped in a corrupted packet (CRC32C detects
  // every error of up to 3 bits in packets far longer than any block).
  static constexpr uint32_t max_corrupt_bits = 3;
  // The longest a delayed packet is held: far below the time a protocol
  // sequence number takes to wrap (am/packet.hpp), so an old copy never
  // passes for a new packet.
  static constexpr uint64_t max_delay_ns = 10'000'000'000ull;

  // `faults` probabilities must be in [0, 1] and delay_ns at most
  // max_delay_ns (throws std::invalid_argument naming the value);
  // `my_proc` is mixed into the seed so each sender draws its own sequence;
  // `max_packet` bounds the packets transmitted; `clock` times delays.
  wire(const fault_config& faults, int my_proc, uint32_t max_packet, const sys::clock& clock);
  wire(const wire&) = delete;
  wire& operator=(const wire&) = delete;

  // Sends one packet of `length` (<= max_packet) bytes to `dest`.
  template <class Sink>
  [[gnu::always_inline]] void transmit(Sink& sink, int dest, const std::byte* packet,
                                       uint32_t length) noexcept {
    if (__builtin_expect(!faulty_, 1)) {
      transmit_clean(sink, dest, packet, length);
      return;
    }
    ++counters_.sent;
    transmit_faulty(sink, dest, packet, length);
  }

  // transmit() for a caller that knows this wire has no faults (!faulty(),
  // fixed at construction): the packet goes to the sink at once, and the
  // sink, never passed out of line, need not be built in memory.
  template <class Sink>
  [[gnu::always_inline]] void transmit_clean(Sink& sink, int dest, const std::byte* packet,
                                             uint32_t length) noexcept {
    ++counters_.sent;
    sink.deliver(dest, packet, length);
  }

  // Delivers held packets whose time has come; cheap when nothing is held.
  template <class Sink>
  void service(Sink& sink) noexcept {
    if (__builtin_expect(held_count_ == 0, 1)) return;
    service_held(sink, false);
  }

  // Delivers every held packet now (tests, orderly shutdown).
  template <class Sink>
  void flush(Sink& sink) noexcept {
    if (held_count_ != 0) service_held(sink, true);
  }

  const wire_counters& counters() const noexcept { return counters_; }
  uint32_t held() const noexcept { return held_count_; }
  bool faulty() const noexcept { return faulty_; }

 private:
  enum class hold_kind : uint8_t { reorder, delay };
  struct held_packet {
    uint32_t slot;        // index of its buffer in the holding area
    int32_t dest;         // destination process
    uint32_t length;      // packet bytes
    uint32_t copies;      // 1, or 2 when the packet was also duplicated
    hold_kind kind;       // why it is held
    uint64_t launch_seq;  // counters_.sent when it was transmitted
    uint64_t due_ns;      // delay: deliver at or after this time
    uint32_t polls_left;  // reorder: service() calls before it goes out anyway
  };

  template <class Sink>
  [[gnu::noinline]] void transmit_faulty(Sink& sink, int dest, const std::byte* packet,
                                         uint32_t length) noexcept;
  template <class Sink>
  [[gnu::noinline]] void service_held(Sink& sink, bool all) noexcept;
  template <class Sink>
  void release_reordered_before(Sink& sink, uint64_t seq) noexcept;
  template <class Sink>
  void deliver_held(Sink& sink, uint32_t index) noexcept;

  // Copies `packet` into `scratch_` and flips 1..max_corrupt_bits distinct bits.
  const std::byte* corrupt_copy(const std::byte* packet, uint32_t length) noexcept;
  // Holds a copy; false when the holding area is full.
  bool hold(int dest, const std::byte* packet, uint32_t length, uint32_t copies, hold_kind kind,
            uint64_t now_ns) noexcept;
  std::byte* slot_buffer(uint32_t slot) noexcept {
    return holding_.get() + static_cast<size_t>(slot) * max_packet_;
  }

  bool faulty_;              // any fault probability is nonzero
  uint32_t max_packet_;      // largest packet, bytes
  uint64_t drop_threshold_;  // fault_rng thresholds, one per fault kind
  uint64_t duplicate_threshold_;
  uint64_t corrupt_threshold_;
  uint64_t reorder_threshold_;
  uint64_t delay_threshold_;
  uint64_t delay_ns_;
  sys::clock clock_;
  fault_rng rng_;
  wire_counters counters_;
  uint32_t held_count_ = 0;                // entries used in held_
  uint32_t free_count_ = 0;                // entries used in free_slots_
  held_packet held_[holding_capacity];     // packets held back, compact
  uint32_t free_slots_[holding_capacity];  // unused holding buffers
  std::unique_ptr<std::byte[]> holding_;   // holding_capacity * max_packet_ (faulty only)
  std::unique_ptr<std::byte[]> scratch_;   // one packet, for corruption (faulty only)
};

template <class Sink>
void wire::transmit_faulty(Sink& sink, int dest, const std::byte* packet,
                           uint32_t length) noexcept {
  const uint64_t seq = counters_.sent;
  if (rng_.chance(drop_threshold_)) {
    ++counters_.dropped;
    release_reordered_before(sink, seq);
    return;
  }
  const std::byte* data = packet;
  if (rng_.chance(corrupt_threshold_)) {
    data = corrupt_copy(packet, length);
    ++counters_.corrupted;
  }
  uint32_t copies = 1;
  if (rng_.chance(duplicate_threshold_)) {
    copies = 2;
    ++counters_.duplicated;
  }
  bool held = false;
  if (rng_.chance(reorder_threshold_)) {
    held = hold(dest, data, length, copies, hold_kind::reorder, 0);
    if (held) ++counters_.reordered;
  } else if (rng_.chance(delay_threshold_)) {
    held = hold(dest, data, length, copies, hold_kind::delay, clock_.now_ns() + delay_ns_);
    if (held) ++counters_.delayed;
  }
  if (!held)
    for (uint32_t i = 0; i < copies; ++i) sink.deliver(dest, data, length);
  release_reordered_before(sink, seq);
}

template <class Sink>
void wire::release_reordered_before(Sink& sink, uint64_t seq) noexcept {
  for (uint32_t i = 0; i < held_count_;) {
    if (held_[i].kind == hold_kind::reorder && held_[i].launch_seq < seq)
      deliver_held(sink, i);  // moves the last entry into i
    else
      ++i;
  }
}

template <class Sink>
void wire::service_held(Sink& sink, bool all) noexcept {
  const uint64_t now = clock_.now_ns();
  for (uint32_t i = 0; i < held_count_;) {
    held_packet& h = held_[i];
    bool due = all;
    if (h.kind == hold_kind::reorder)
      due = due || --h.polls_left == 0;
    else
      due = due || now >= h.due_ns;
    if (due)
      deliver_held(sink, i);
    else
      ++i;
  }
}

template <class Sink>
void wire::deliver_held(Sink& sink, uint32_t index) noexcept {
  const held_packet h = held_[index];
  held_[index] = held_[--held_count_];
  free_slots_[free_count_++] = h.slot;
  for (uint32_t c = 0; c < h.copies; ++c) sink.deliver(h.dest, slot_buffer(h.slot), h.length);
}

}  // namespace hpam::nic
