// The descriptor table of the all-to-all D-way protocol (HPAM 5.2.2,
// Figure 4): per peer, D request descriptors and D reply descriptors, each
// owning one outbound VRAM block for the whole run.
#pragma once

#include <cstdint>
#include <vector>

#include "am/packet.hpp"

namespace hpam::am {

// One outstanding-request slot ("hpam_req_state[dest][buf]").
struct request_desc {
  uint32_t block = 0;            // VRAM block holding the request packet (kept for retransmission)
  uint32_t length = 0;           // packet length, for retransmission
  uint32_t sequence = 0;         // id of the last request sent on this instance
  bool busy = false;             // waiting for the reply (the paper's !TX_RD)
  uint8_t retries = 0;           // retransmissions by timeout so far (the backoff's count)
  bool resent = false;           // sent again at least once (a timeout, early, in the background)
  bool timed_out = false;        // a timeout came since the send (peer_beat taken)
  bool waited_arrivals = false;  // a timeout found arrivals in my card (its answer may be among
                                 // them): not resent before they are read (answer_may_wait)
  bool beat_known = false;       // sent_beat is the peer's heartbeat at or before the (re)send
  bool stamped = false;          // timestamp and first_sent are set (see endpoint::check_timeout)
  bool suspected = false;        // lossy: taken for lost (resend_early); resent at the timeout
                                 // walk's next look, after my card's arrivals are read
  uint64_t timestamp = 0;        // when last (re)sent, ns
  uint64_t first_sent = 0;       // when first sent, ns; the give-up time runs from here
  uint64_t timeout = 0;          // current timeout, ns; doubles on each retransmission
  uint32_t peer_beat = 0;        // the peer's card heartbeat at this request's first timeout
  uint32_t sent_beat = 0;        // the peer's heartbeat seen at or before the (re)send, or (the
                                 // walk stamped it) at its first timeout: resend_premature
  uint32_t read_mark = 0;        // my polls when waited_arrivals was set (endpoint::polls_)
  uint32_t own_polls = 0;  // my polls when the peer had polled enough to answer (endpoint::polls_)
  bool peer_drained = false;         // the peer has polled enough since peer_beat to have answered
  msg_kind kind = msg_kind::short4;  // what was asked: a reply is checked against it
  uint16_t handler = 0;              // the handler index the request named
  // A get: where its reply's bytes go and what runs there. Recorded when a
  // get request is sent (left as they were by other kinds, which never read
  // them); the reply's own words (the peer's echo) are never used.
  uint32_t get_length = 0;  // bytes asked for
  uint64_t get_local = 0;   // my address for them
  uint64_t get_arg = 0;     // argument word for my reply handler
};

// What a get request asks for, recorded in its request descriptor.
struct expected_get {
  uint32_t length = 0;  // bytes
  uint64_t local = 0;   // the requester's address for them
  uint64_t arg = 0;     // argument word for the requester's reply handler
};

// One reply slot ("hpam_rep_state[src][buf]"): the last reply sent on this
// instance, reflected when a duplicate request arrives.
struct reply_desc {
  uint32_t block = 0;           // VRAM block holding the stored reply packet
  uint32_t length = 0;          // stored reply length; 0 = no reply sent yet
  uint32_t expected = 1;        // sequence number the next new request must carry
  uint32_t ack_sequence = 0;    // the sequence of the last ack made here (a deferred one's
                                // waiting state is in endpoint::acks_, am/ack_rows.hpp)
  uint8_t ack_refusal = 0;      // that ack's refusal value
  bool unstamped = false;       // the stored reply is that ack, not yet written into the block:
                                // stamped when first launched or reflected (a deferred ack
                                // carried as an entry never touches its block)
  bool answers_resend = false;  // the request it answers came as a resent copy, or a resent
                                // copy of it was answered with it (packet.hpp: answers_resend)
};

// [peer][instance] tables, flat, sized once at setup.
template <class Desc>
class descriptor_table {
 public:
  void resize(int nprocs, uint32_t depth) {
    depth_ = depth;
    table_.assign(static_cast<size_t>(nprocs) * depth, Desc{});
  }
  Desc& at(int peer, uint32_t instance) {
    return table_[static_cast<size_t>(peer) * depth_ + instance];
  }
  const Desc& at(int peer, uint32_t instance) const {
    return table_[static_cast<size_t>(peer) * depth_ + instance];
  }
  // By flat index peer * depth + instance (the timeout walk's cursor).
  Desc& at_index(uint32_t i) { return table_[i]; }
  uint32_t depth() const { return depth_; }

 private:
  uint32_t depth_ = 0;
  std::vector<Desc> table_;
};

}  // namespace hpam::am
