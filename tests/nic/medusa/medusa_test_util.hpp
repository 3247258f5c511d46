// Helpers shared by the Medusa card tests: unique job names, setups, and
// packets whose payload is a function of a sequence number so every received
// byte can be checked.
#pragma once

#include <unistd.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>

#include "nic/card.hpp"
#include "nic/medusa/medusa_card.hpp"
#include "sys/clock.hpp"

namespace hpam::nic::test {

// A job id no other test (or concurrent test run) uses.
inline std::string unique_job(const char* tag) {
  static std::atomic<int> n{0};
  return std::string("t") + tag + "-" + std::to_string(getpid()) + "-" + std::to_string(n++);
}

inline card_setup make_setup(const std::string& job, int nprocs, int proc, uint32_t tx_blocks,
                             uint32_t rx_blocks, uint32_t block_size = 1024) {
  card_setup s;
  s.job = job;
  s.nprocs = nprocs;
  s.my_proc = proc;
  s.block_size = block_size;
  s.tx_blocks = tx_blocks;
  s.rx_blocks = rx_blocks;
  s.attach_timeout_ms = 10'000;
  s.rx_ready_cell = 128;  // the cell the tests' packet lengths are chosen around (112 inline)
  return s;
}

constexpr uint32_t payload_offset = wire_header_size + sizeof(uint64_t);

// Packet length for sequence number `seq`: covers every length from the
// smallest (header + seq) to a full block.
inline uint32_t length_for(uint64_t seq, uint32_t block_size) {
  return payload_offset + static_cast<uint32_t>((seq * 37) % (block_size - payload_offset + 1));
}

inline std::byte pattern(uint64_t seq, uint32_t i) {
  return static_cast<std::byte>((seq * 131 + i * 7 + (i >> 8)) & 0xff);
}

// Writes the packet for `seq` into `pkt` (after the wire header); returns its length.
inline uint32_t build_packet(std::byte* pkt, uint64_t seq, uint32_t block_size) {
  const uint32_t len = length_for(seq, block_size);
  std::memcpy(pkt + wire_header_size, &seq, sizeof seq);
  for (uint32_t i = payload_offset; i < len; ++i) pkt[i] = pattern(seq, i);
  return len;
}

// Checks a received packet against the one built for its sequence number;
// returns the sequence number, or UINT64_MAX if anything differs.
inline uint64_t check_packet(const rx_packet& p, int src, int dst, uint32_t block_size) {
  if (p.length < payload_offset) return UINT64_MAX;
  uint64_t seq;
  std::memcpy(&seq, p.data + wire_header_size, sizeof seq);
  if (p.length != length_for(seq, block_size)) return UINT64_MAX;
  wire_header h;
  std::memcpy(&h, p.data, sizeof h);
  if (h.length != p.length || h.src != src || h.dst != dst || h.pad != 0) return UINT64_MAX;
  for (uint32_t i = payload_offset; i < p.length; ++i)
    if (p.data[i] != pattern(seq, i)) return UINT64_MAX;
  return seq;
}

// A packet of exactly `len` bytes (after the wire header: the tag, then a
// pattern of it), and its check.
inline uint32_t build_exact(std::byte* pkt, uint32_t len, uint64_t tag) {
  std::memcpy(pkt + wire_header_size, &tag, sizeof tag);
  for (uint32_t i = payload_offset; i < len; ++i) pkt[i] = pattern(tag, i);
  return len;
}
inline bool exact(const rx_packet& r, uint32_t len, uint64_t tag) {
  uint64_t got;
  if (r.length != len || !r.crc_ok) return false;
  std::memcpy(&got, r.data + wire_header_size, sizeof got);
  if (got != tag) return false;
  for (uint32_t i = payload_offset; i < len; ++i)
    if (r.data[i] != pattern(tag, i)) return false;
  return true;
}

// Two cards of one job in one process, a (process 0) attached to b, and b
// to a unless b_attaches_a is false; a's wire has the faults, and both
// deliver by reference when by_reference (card_setup::deliver_by_reference).
struct card_pair {
  explicit card_pair(const char* tag, uint32_t tx = 16, uint32_t rx = 64, uint32_t block = 1024,
                     fault_config faults = {}, const sys::clock* clk = nullptr,
                     bool direct_tx = true, bool by_reference = false, bool b_attaches_a = true) {
    const std::string job = unique_job(tag);
    card_setup s0 = make_setup(job, 2, 0, tx, rx, block);
    card_setup s1 = make_setup(job, 2, 1, tx, rx, block);
    s0.direct_tx = s1.direct_tx = direct_tx;
    s0.deliver_by_reference = s1.deliver_by_reference = by_reference;
    s0.faults = faults;
    s0.clock = clk;
    a = std::make_unique<medusa_card>(s0);
    b = std::make_unique<medusa_card>(s1);
    a->attach_peer(1);
    if (b_attaches_a) b->attach_peer(0);
  }
  std::unique_ptr<medusa_card> a, b;
};

// Puts an entry on c's RX_READY as a card engine would: the entry, and the
// packet's bytes in the cell when `packet` is given and fits there (a
// packet longer than that must already be in the entry's block). Tests
// forge entries, or deliver a packet again, with it.
inline bool forge_rx_ready(medusa_card& c, uint64_t entry, const std::byte* packet = nullptr) {
  uint64_t pos;
  std::byte* cell = c.rx_ready_fifo().claim(pos);
  if (!cell) return false;
  const uint32_t len = medusa::entry_length(entry);
  if (packet && len <= c.inline_bytes())
    std::memcpy(cell + sys::cell_fifo::head_bytes, packet, len);
  c.rx_ready_fifo().publish(cell, pos, entry);
  return true;
}

// Delivers received packet r to c again through a new RX_READY entry for
// the same block (r's bytes, as they are now, go with it) and gives r's own
// cell back without its block, which the new entry now holds.
inline bool redeliver(medusa_card& c, const rx_packet& r) {
  if (!forge_rx_ready(c, medusa::encode_entry(r.block, r.length, r.src), r.data)) return false;
  rx_packet cell_only = r;
  cell_only.block = medusa_card::no_block;
  c.release(cell_only);
  return true;
}

}  // namespace hpam::nic::test
