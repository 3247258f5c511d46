// A victim endpoint (process 0) and a hostile process 1 that holds the
// job's protection key but drives its card by hand: it sees the raw packets
// the victim sends and launches any packet it likes. Tests built on it get
// past the key check and reach the checks behind it.
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <vector>

#include "am/endpoint_receive.hpp"
#include "am/endpoint_send.hpp"
#include "../common/test_util.hpp"

namespace hpam::test {

template <class Card>
class hostile_peer {
 public:
  static constexpr uint64_t key = 0x6a6f622d6b657921ull;  // the job's key, known to both

  explicit hostile_peer(uint32_t depth = 4) : job_(unique_job("hostile")) {
    victim_ = std::make_unique<am::endpoint<Card>>(config(0, depth));
    const am::endpoint_config c1 = config(1, depth);
    card_ = std::make_unique<Card>(am::detail::card_setup_for(c1, &clock_));
    victim_->connect_all();
    card_->attach_peer(0);
    EXPECT_TRUE(card_->claim_tx_block(block_));
  }

  am::endpoint<Card>& victim() { return *victim_; }
  Card& card() { return *card_; }

  static am::am_header header(am::msg_class cls, am::msg_kind kind, uint32_t instance,
                              uint32_t sequence, uint16_t handler) {
    am::am_header h{};
    h.key = key;
    h.control = am::encode_control({cls, kind, instance, sequence});
    h.handler = handler;
    return h;
  }

  // Launches one packet to the victim: `h`, then `len` payload bytes right
  // after header_bytes(kind) (or after `header_len` bytes when given).
  void send(const am::am_header& h, const void* payload = nullptr, uint32_t len = 0,
            uint32_t header_len = 0) {
    std::byte* pkt = card_->tx_block(block_);
    const uint32_t hdr = header_len ? header_len : am::header_bytes(am::decode_control(h.control).kind);
    std::memset(pkt, 0, card_->block_size());
    std::memcpy(pkt + nic::wire_header_size, &h, std::min<uint32_t>(sizeof h, hdr - nic::wire_header_size));
    if (len) std::memcpy(pkt + hdr, payload, len);
    card_->launch(0, block_, hdr + len);
  }

  // The next packet the victim sent to process 1: its header (and payload).
  bool receive(am::am_header& h, std::vector<std::byte>* payload = nullptr) {
    card_->service();
    nic::rx_packet p;
    if (!card_->receive(p)) return false;
    h = am::am_header{};
    std::memcpy(&h, p.data + nic::wire_header_size,
                std::min<size_t>(sizeof h, p.length - nic::wire_header_size));
    const uint32_t hdr = am::header_bytes(am::decode_control(h.control).kind);
    if (payload && p.length > hdr) payload->assign(p.data + hdr, p.data + p.length);
    card_->release(p);
    return true;
  }

 private:
  am::endpoint_config config(int p, uint32_t depth) {
    am::endpoint_config c;
    c.card.job = job_;
    c.card.nprocs = 2;
    c.card.my_proc = p;
    c.card.attach_timeout_ms = 5000;
    c.depth = depth;
    c.key = key;
    c.manual_time = &time_;
    c.defer_acks = false;  // an acknowledgement leaves within the poll that caused it
    return c;
  }

  std::string job_;
  sys::manual_time time_;
  sys::clock clock_;
  std::unique_ptr<am::endpoint<Card>> victim_;
  std::unique_ptr<Card> card_;
  uint32_t block_ = 0;
};

}  // namespace hpam::test
