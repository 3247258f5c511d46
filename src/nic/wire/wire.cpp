#include "nic/wire/wire.hpp"

#include <cmath>
#include <stdexcept>
#include <string>

namespace hpam::nic {

uint64_t fault_rng::splitmix64(uint64_t& state) noexcept {
  uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

fault_rng::fault_rng(uint64_t seed) noexcept {
  uint64_t state = seed;
  for (uint64_t& s : s_) s = splitmix64(state);
}

uint64_t fault_rng::threshold_for(double p) noexcept {
  constexpr double scale = 9007199254740992.0;  // 2^53
  if (!(p > 0)) return 0;
  if (p >= 1) return uint64_t{1} << 53;
  return static_cast<uint64_t>(p * scale);
}

namespace {

void check_probability(double p, const char* what) {
  if (!(p >= 0 && p <= 1))
    throw std::invalid_argument(std::string("hpam: wire fault probability '") + what +
                                "' must be in [0, 1], got " + std::to_string(p));
}

// Mixes the process number into the seed so senders draw different sequences.
uint64_t mix_seed(uint64_t seed, int my_proc) {
  uint64_t state = static_cast<uint64_t>(static_cast<uint32_t>(my_proc)) * 0xd1b54a32d192ed03ull;
  return seed ^ fault_rng::splitmix64(state);
}

}  // namespace

wire::wire(const fault_config& faults, int my_proc, uint32_t max_packet, const sys::clock& clock)
    : faulty_(faults.any()),
      max_packet_(max_packet),
      drop_threshold_(fault_rng::threshold_for(faults.drop)),
      duplicate_threshold_(fault_rng::threshold_for(faults.duplicate)),
      corrupt_threshold_(fault_rng::threshold_for(faults.corrupt)),
      reorder_threshold_(fault_rng::threshold_for(faults.reorder)),
      delay_threshold_(fault_rng::threshold_for(faults.delay)),
      delay_ns_(faults.delay_ns),
      clock_(clock),
      rng_(mix_seed(faults.seed, my_proc)),
      held_{},
      free_slots_{} {
  check_probability(faults.drop, "drop");
  check_probability(faults.duplicate, "duplicate");
  check_probability(faults.corrupt, "corrupt");
  check_probability(faults.reorder, "reorder");
  check_probability(faults.delay, "delay");
  if (faults.delay_ns > max_delay_ns)
    throw std::invalid_argument("hpam: wire fault delay " + std::to_string(faults.delay_ns) +
                                " ns is above the bound of " + std::to_string(max_delay_ns) +
                                " ns (a delayed packet must never outlive its sequence number)");
  if (max_packet == 0) throw std::invalid_argument("hpam: wire max_packet must be positive");
  if (!faulty_) return;
  holding_ = std::make_unique<std::byte[]>(static_cast<size_t>(holding_capacity) * max_packet);
  scratch_ = std::make_unique<std::byte[]>(max_packet);
  for (uint32_t s = holding_capacity; s-- > 0;) free_slots_[free_count_++] = s;
}

const std::byte* wire::corrupt_copy(const std::byte* packet, uint32_t length) noexcept {
  std::memcpy(scratch_.get(), packet, length);
  const uint64_t bits = static_cast<uint64_t>(length) * 8;
  uint64_t flipped[max_corrupt_bits];
  const uint32_t n = 1 + static_cast<uint32_t>(rng_.below(max_corrupt_bits));
  for (uint32_t k = 0; k < n && k < bits; ++k) {
    uint64_t pos;
    bool fresh;
    do {  // distinct positions, so no flip undoes another
      pos = rng_.below(bits);
      fresh = true;
      for (uint32_t j = 0; j < k; ++j) fresh = fresh && flipped[j] != pos;
    } while (!fresh);
    flipped[k] = pos;
    scratch_[pos / 8] ^= std::byte{static_cast<unsigned char>(1u << (pos % 8))};
  }
  return scratch_.get();
}

bool wire::hold(int dest, const std::byte* packet, uint32_t length, uint32_t copies, hold_kind kind,
                uint64_t due_ns) noexcept {
  if (free_count_ == 0) return false;
  const uint32_t slot = free_slots_[--free_count_];
  std::memcpy(slot_buffer(slot), packet, length);
  held_[held_count_++] =
      held_packet{slot, dest, length, copies, kind, counters_.sent, due_ns, reorder_max_polls};
  return true;
}

}  // namespace hpam::nic
