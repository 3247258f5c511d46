// A victim endpoint (process 0) and a hostile process 1 that holds the
// job's protection key but drives its card by hand: it sees the raw packets
// the victim sends and launches any packet it likes. Tests built on it get
// past the key check and reach the checks behind it.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <memory>
#include <type_traits>
#include <vector>

#include "../common/test_util.hpp"
#include "am/endpoint_impl.hpp"
#include "nic/hamlyn/am_inbound.hpp"
#include "nic/hamlyn/hamlyn_am_card.hpp"
#include "nic/medusa/medusa_card.hpp"
#include "sys/crc32c.hpp"

namespace hpam::test {

// A card that lets a test act between the endpoint's acceptance of a packet
// and its dispatch: an endpoint connects to a sender it has not met when that
// sender's first packet is accepted, after the header was copied out of the
// block and before the handler is looked up. There, this card rewrites the
// packet's handler index in the shared block, as the sender could.
template <class Base>
class rewriting_card : public Base {
 public:
  using Base::Base;
  bool receive(nic::rx_packet& p) {
    if (!Base::receive(p)) return false;
    last_ = const_cast<std::byte*>(p.data);  // the block, writable by the peer that filled it
    return true;
  }
  void attach_peer(int proc) {
    Base::attach_peer(proc);
    if (!last_ || !rewrite_) return;
    const uint16_t handler = rewrite_to_;
    std::memcpy(last_ + nic::wire_header_size + offsetof(am::am_header, handler), &handler,
                sizeof handler);
    rewrites_++;
  }
  void rewrite_handler_to(uint16_t h) {
    rewrite_ = true;
    rewrite_to_ = h;
  }
  int rewrites() const { return rewrites_; }
  // The handler index the last packet's block holds now.
  uint16_t handler_in_block() const {
    uint16_t h;
    std::memcpy(&h, last_ + nic::wire_header_size + offsetof(am::am_header, handler), sizeof h);
    return h;
  }

 private:
  std::byte* last_ = nullptr;
  bool rewrite_ = false;
  uint16_t rewrite_to_ = 0;
  int rewrites_ = 0;
};

template <class Card>
class hostile_peer {
 public:
  static constexpr uint64_t key = 0x6a6f622d6b657921ull;  // the job's key, known to both

  // nprocs 3 adds an innocent endpoint as process 2 (for impersonation).
  // Without victim_connects the victim meets process 1 only when its first
  // packet arrives (connect on arrival).
  // defer_acks: the victim defers its acks (and gathers them, multi_ack).
  explicit hostile_peer(uint32_t depth = 4, int nprocs = 2, bool victim_connects = true,
                        bool defer_acks = false)
      : job_(unique_job("hostile")), nprocs_(nprocs), defer_acks_(defer_acks) {
    victim_ = std::make_unique<am::endpoint<Card>>(config(0, depth));
    const am::endpoint_config c1 = config(1, depth);
    card_ = std::make_unique<Card>(am::detail::card_setup_for(c1, &clock_));
    if (nprocs > 2) innocent_ = std::make_unique<am::endpoint<Card>>(config(2, depth));
    if (victim_connects) victim_->connect_all();
    if (innocent_) innocent_->connect_all();
    card_->attach_peer(0);
    EXPECT_TRUE(card_->claim_tx_block(block_));
  }

  am::endpoint<Card>& victim() { return *victim_; }
  am::endpoint<Card>& innocent() { return *innocent_; }
  sys::manual_time& time() { return time_; }
  Card& card() { return *card_; }

  static am::am_header header(am::msg_class cls, am::msg_kind kind, uint32_t instance,
                              uint32_t sequence, uint16_t handler) {
    am::am_header h{};
    h.key = key;
    am::write_control(h, {cls, kind, instance, sequence});
    h.handler = handler;
    return h;
  }

  // Launches one packet to the victim: `h`, then `len` payload bytes right
  // after header_bytes(kind) (or after `header_len` bytes when given).
  void send(const am::am_header& h, const void* payload = nullptr, uint32_t len = 0,
            uint32_t header_len = 0) {
    std::byte* pkt = card_->tx_block(block_);
    const uint32_t hdr = header_len ? header_len : am::header_bytes(am::read_control(h).kind);
    std::memset(pkt, 0, card_->block_size());
    std::memcpy(pkt + nic::wire_header_size, &h,
                std::min<uint32_t>(sizeof h, hdr - nic::wire_header_size));
    if (len) std::memcpy(pkt + hdr, payload, len);
    card_->launch(0, block_, hdr + len);
  }

  // Delivers `len` bytes to the victim exactly as given, wire header
  // included, through the card's own paths: Medusa, the processor's TX_READY
  // push; Hamlyn, a deposit into this process's own region at the victim
  // with its region key (block `block` of it). The bytes may lie about
  // anything; the cards must not believe them.
  void forge(const std::byte* packet, uint32_t len, uint32_t block = 7) {
    if constexpr (std::is_same_v<Card, nic::medusa_card>) {
      std::memcpy(card_->tx_block(block_), packet, len);
      card_->transmit_block(block_, len);
    } else {
      const nic::hamlyn::card_view& v = card_->hamlyn().view(0);
      nic::hamlyn::am_inbound_header in{};
      uint64_t at = 0;
      ASSERT_EQ(nic::hamlyn::find_client(v, nic::hamlyn::am_inbound_magic,
                                         nic::hamlyn::am_inbound_version, in, at),
                nic::hamlyn::client_lookup::found);
      nic::hamlyn::am_sender_entry mine;  // my region's slot and key at the victim
      std::memcpy(&mine, v.area + in.senders_offset + sizeof mine * 1, sizeof mine);
      nic::hamlyn::ticket t{};
      t.node = 0;
      t.slot = mine.slot;
      t.metadata_index = nic::hamlyn::fast_index;
      t.protection_key = mine.key;
      t.offset = uint64_t{block} * card_->block_size();
      t.range = card_->block_size();
      t.flags = nic::hamlyn::ticket_flags::notify;
      iovec piece{const_cast<std::byte*>(packet), len};
      nic::hamlyn::message m;
      m.gather = &piece;
      m.gather_count = 1;
      m.fast_word = block;
      nic::hamlyn::send_handle h;
      ASSERT_EQ(card_->hamlyn().terminus().send(t, m, h), status::ok);
      ASSERT_EQ(card_->hamlyn().terminus().state(h), nic::hamlyn::send_state::sent);
    }
  }

  // A packet with a wire header of my choosing (CRC made to match), the
  // protocol header `h` and `len` payload bytes.
  static std::vector<std::byte> packet(const nic::wire_header& w, const am::am_header& h,
                                       const void* payload = nullptr, uint32_t len = 0) {
    const uint32_t hdr = am::header_bytes(am::read_control(h).kind);
    std::byte head[am::packet_header_size] = {};
    std::memcpy(head + nic::wire_header_size, &h, sizeof h);
    std::vector<std::byte> p(head, head + hdr);
    const auto* bytes = static_cast<const std::byte*>(payload);
    if (len) p.insert(p.end(), bytes, bytes + len);
    nic::wire_header wh = w;
    wh.length = w.length ? w.length : static_cast<uint32_t>(p.size());
    std::memcpy(p.data(), &wh, sizeof wh);
    constexpr size_t from = offsetof(nic::wire_header, length);
    wh.crc = sys::crc32c(p.data() + from, p.size() - from);
    std::memcpy(p.data(), &wh, sizeof wh);
    return p;
  }

  // The next packet the victim sent to process 1: its header (and payload).
  bool receive(am::am_header& h, std::vector<std::byte>* payload = nullptr) {
    card_->service();
    nic::rx_packet p;
    if (!card_->receive(p)) return false;
    h = am::am_header{};
    std::memcpy(&h, p.data + nic::wire_header_size,
                std::min<size_t>(sizeof h, p.length - nic::wire_header_size));
    const uint32_t hdr = am::header_bytes(am::read_control(h).kind);
    if (payload && p.length > hdr) payload->assign(p.data + hdr, p.data + p.length);
    card_->release(p);
    return true;
  }

 private:
  am::endpoint_config config(int p, uint32_t depth) {
    am::endpoint_config c;
    c.card.job = job_;
    c.card.nprocs = nprocs_;
    c.card.my_proc = p;
    c.card.attach_timeout_ms = 5000;
    c.depth = depth;
    c.key = key;
    c.manual_time = &time_;
    c.defer_acks = defer_acks_;  // off: an acknowledgement leaves within the poll that caused it
    return c;
  }

  std::string job_;
  int nprocs_;
  bool defer_acks_;
  sys::manual_time time_;
  sys::clock clock_;
  std::unique_ptr<am::endpoint<Card>> victim_;
  std::unique_ptr<Card> card_;
  std::unique_ptr<am::endpoint<Card>> innocent_;
  uint32_t block_ = 0;
};

}  // namespace hpam::test
