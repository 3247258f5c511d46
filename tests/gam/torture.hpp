// What test_xfer and test_med (HP-LAM 4.1) share: the three patterns
// (1-to-1, all-to-1, all-to-all), the layout of every process's segment
// (a slot per incoming store, per get source and per get landing, each
// between guard bytes and at a shifting misalignment), the data each
// transfer must carry, and the final check that every process's segment,
// and the memory just past it, is exactly what the transfers should have
// left: data in every destination block, guard bytes everywhere else.
// The two tests differ only in how a store and a get travel (bulk
// store/get, or medium messages), given as a torture_ops table.
#pragma once

#include <deque>

#include "gam_harness.hpp"

namespace hpam::gam {

struct torture_layout {
  int procs = 2;
  uint64_t per_pair = 16;  // K: stores and gets per (source, destination) pair
  size_t max_len = 1;      // largest transfer (the endpoint's max_bulk)
  static constexpr size_t guard = 64;
  size_t slot = 0;  // bytes per slot: guard, up to 7 bytes of misalignment, data, guard

  void init(int p, uint64_t k, size_t most) {
    procs = p;
    per_pair = k;
    max_len = most;
    slot = (max_len + 2 * guard + 8 + 63) / 64 * 64;
  }
  // region 0: stores from p; 1: get sources for p; 2: gets from p landing here
  size_t offset(int region, int p, uint64_t k) const {
    return ((static_cast<size_t>(region) * procs + p) * per_pair + k) * slot + guard + k % 8;
  }
  size_t segment_bytes() const { return 3 * static_cast<size_t>(procs) * per_pair * slot; }
  static constexpr size_t tail = 4096;  // mapped past the segment, guarded, outside it
  // Length of the k-th transfer from s to d: the extremes first, then spread out.
  size_t length(int s, int d, uint64_t k) const {
    if (k == 0) return 1;
    if (k == 1) return max_len;
    if (k == 2) return max_len - 1;
    return 1 +
           app_like_mix(static_cast<uint64_t>(s) * 1000003 + static_cast<uint64_t>(d) * 1009 + k) %
               max_len;
  }
  static uint64_t app_like_mix(uint64_t x) {
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
  }
};

inline uint8_t guard_byte(size_t pos) {
  return static_cast<uint8_t>(pos * 131 + 0x5a);
}
// Byte b of the k-th store from s to d; a get's bytes have the top bit flipped.
inline uint8_t store_byte(int s, int d, uint64_t k, size_t b) {
  return static_cast<uint8_t>(s * 37 + d * 11 + k * 5 + b * 3 + 1);
}
inline uint8_t get_byte(int owner, int reader, uint64_t k, size_t b) {
  return static_cast<uint8_t>(store_byte(owner, reader, k, b) ^ 0x80);
}

// Which (source, destination) pairs transfer in a pattern.
inline bool in_pattern(const std::string& pattern, int s, int d) {
  if (s == d) return false;
  if (pattern == "1to1") return (s == 0 && d == 1) || (s == 1 && d == 0);
  if (pattern == "all-to-1") return d == 0;
  return pattern == "all-to-all";
}

struct torture_state {
  torture_layout lay;
  std::string pattern;
  int me = 0;
  uint8_t* seg = nullptr;
  std::vector<uint64_t> stores_in;               // per source: stores that landed here, checked
  std::vector<uint64_t> gets_in;                 // per owner: gets that landed here, checked
  uint64_t misplaced = 0;                        // a handler saw the wrong place, length or source
  std::deque<std::pair<int, uint64_t>> pending;  // medium gets to answer: (reader, k)
  std::vector<std::vector<uint8_t>> sources;     // store data, kept until the end
  uint64_t expect_stores() const;
  uint64_t expect_gets() const;
};

inline uint64_t torture_state::expect_stores() const {
  uint64_t n = 0;
  for (int s = 0; s < lay.procs; ++s) n += in_pattern(pattern, s, me) ? lay.per_pair : 0;
  return n;
}
inline uint64_t torture_state::expect_gets() const {
  uint64_t n = 0;
  for (int d = 0; d < lay.procs; ++d) n += in_pattern(pattern, me, d) ? lay.per_pair : 0;
  return n;
}
inline uint64_t sum(const std::vector<uint64_t>& v) {
  uint64_t n = 0;
  for (uint64_t x : v) n += x;
  return n;
}

// The argument word of a transfer: (k, source process).
inline uint64_t encode(int proc, uint64_t k) {
  return k << 16 | static_cast<uint64_t>(proc);
}
inline int proc_of(uint64_t arg) {
  return static_cast<int>(arg & 0xffff);
}
inline uint64_t k_of(uint64_t arg) {
  return arg >> 16;
}

struct torture_ops {
  const char* name;
  void (*install)(hpam_ep_t* ep, torture_state* s);
  int (*store)(hpam_ep_t* ep, torture_state& s, int d, uint64_t k);
  int (*get)(hpam_ep_t* ep, torture_state& s, int d, uint64_t k);
  void (*serve)(hpam_ep_t* ep, torture_state& s);  // may be null
  bool probe_segment;  // also check that the layer refuses transfers outside the segment
};

// The bytes of my k-th store to d, kept until the end (a transfer may read
// its source after the call returns).
inline const std::vector<uint8_t>& store_source(torture_state& s, int d, uint64_t k) {
  s.sources.emplace_back(s.lay.length(s.me, d, k));
  auto& src = s.sources.back();
  for (size_t b = 0; b < src.size(); ++b) src[b] = store_byte(s.me, d, k, b);
  return src;
}

// Guard bytes everywhere (tail included), then the get sources others will read.
inline void fill_segment(torture_state& s) {
  const size_t n = s.lay.segment_bytes() + torture_layout::tail;
  for (size_t pos = 0; pos < n; ++pos) s.seg[pos] = guard_byte(pos);
  for (int r = 0; r < s.lay.procs; ++r)
    if (in_pattern(s.pattern, r, s.me))
      for (uint64_t k = 0; k < s.lay.per_pair; ++k) {
        uint8_t* at = s.seg + s.lay.offset(1, r, k);
        for (size_t b = 0; b < s.lay.length(r, s.me, k); ++b) at[b] = get_byte(s.me, r, k, b);
      }
}

// The first byte of my segment (or of the tail) that differs from what the
// pattern should have left, or SIZE_MAX.
inline size_t first_wrong_byte(const torture_state& s) {
  const size_t n = s.lay.segment_bytes() + torture_layout::tail;
  std::vector<uint8_t> want(n);
  for (size_t pos = 0; pos < n; ++pos) want[pos] = guard_byte(pos);
  for (int p = 0; p < s.lay.procs; ++p)
    for (uint64_t k = 0; k < s.lay.per_pair; ++k) {
      if (in_pattern(s.pattern, p, s.me))  // p stored to me and reads my get sources
        for (size_t b = 0; b < s.lay.length(p, s.me, k); ++b) {
          want[s.lay.offset(0, p, k) + b] = store_byte(p, s.me, k, b);
          want[s.lay.offset(1, p, k) + b] = get_byte(s.me, p, k, b);
        }
      if (in_pattern(s.pattern, s.me, p))  // I read p's get sources
        for (size_t b = 0; b < s.lay.length(s.me, p, k); ++b)
          want[s.lay.offset(2, p, k) + b] = get_byte(p, s.me, k, b);
    }
  for (size_t pos = 0; pos < n; ++pos)
    if (s.seg[pos] != want[pos]) return pos;
  return SIZE_MAX;
}

int torture_main(int argc, char** argv, const torture_ops& ops);

}  // namespace hpam::gam
