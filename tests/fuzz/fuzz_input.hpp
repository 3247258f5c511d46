// The fuzzer's bytes, taken in order as the fields a harness needs; reads
// past the end give zeros, so every input means something.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>

namespace hpam::fuzz {

class input {
 public:
  input(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  template <class T>
  T take() {
    static_assert(std::is_trivially_copyable_v<T>);
    T v{};
    const size_t n = sizeof(T) < size_ - at_ ? sizeof(T) : size_ - at_;
    if (n) std::memcpy(&v, data_ + at_, n);
    at_ += n;
    return v;
  }
  // Up to `max` of the remaining bytes (all of them by default).
  const uint8_t* rest(size_t& n, size_t max = SIZE_MAX) {
    n = size_ - at_ < max ? size_ - at_ : max;
    const uint8_t* p = data_ + at_;
    at_ += n;
    return p;
  }
  bool empty() const { return at_ >= size_; }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t at_ = 0;
};

// Memory with guard bytes on both sides; intact() checks them.
template <size_t Bytes, size_t Guard = 256>
struct guarded {
  static constexpr uint8_t pattern = 0xA5;
  alignas(64) uint8_t raw[Guard + Bytes + Guard];
  guarded() { std::memset(raw, pattern, sizeof raw); }
  uint8_t* data() { return raw + Guard; }
  static constexpr size_t size() { return Bytes; }
  bool intact() const {
    for (size_t i = 0; i < Guard; ++i)
      if (raw[i] != pattern || raw[Guard + Bytes + i] != pattern) return false;
    return true;
  }
};

// A finding: stop here so libFuzzer saves the input.
[[noreturn]] inline void violated() {
  __builtin_trap();
}

template <class W, class = void>
struct has_begin : std::false_type {};
template <class W>
struct has_begin<W, std::void_t<decltype(std::declval<W&>().begin())>> : std::true_type {};

// One input: up to max_steps steps of World (built once, at the first
// input: its cards live for the whole run), then its invariants. A World
// with begin() is called before each input (to undo what an earlier input
// broke for good, so every input starts from a working world).
template <class World, int max_steps>
int run(const uint8_t* data, size_t size) {
  static World w;
  if constexpr (has_begin<World>::value) w.begin();
  input in(data, size);
  for (int steps = 0; steps < max_steps && !in.empty(); ++steps) w.step(in);
  if (!w.intact()) violated();
  return 0;
}

}  // namespace hpam::fuzz
