// The simple datagram protocol (OSDI'96 3.3): raw Hamlyn semantics. send()
// wraps h_send_msg with a little metadata giving the data's offset and
// length and, optionally, a reply ticket. The receiver has one instance per
// metadata entry, each with its own buffer, and each instance is either
// ready or not ready: there is no queue (a message arriving on a ready
// instance replaces the one there, and is counted).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "hamlyn_lib/hamlyn_manager.hpp"

namespace hpam::hamlyn_lib {

// The metadata a datagram carries (60 bytes: the card's user metadata).
namespace datagram_metadata {
constexpr uint32_t flag_reply = 1u << 0;  // a reply ticket follows
constexpr uint32_t bytes = 12 + sizeof(hw::ticket);
static_assert(bytes == hw::user_metadata_bytes);
}  // namespace datagram_metadata

// One datagram as the receiver sees it (valid until release).
struct datagram {
  const std::byte* data = nullptr;  // in the instance's buffer (no copy)
  uint32_t length = 0;              // bytes
  uint32_t source = 0;              // sending process
  bool has_reply = false;           // `reply` is the sender's reply ticket
  hw::ticket reply{};               // (unchecked: the card checks it when it is used)
};

struct datagram_counters {
  uint64_t arrivals = 0;   // datagrams made ready
  uint64_t replaced = 0;   // arrivals on an instance that was still ready
  uint64_t malformed = 0;  // metadata outside the instance's buffer, or too short
};

class datagram_receiver final : public receiver_end_point {
 public:
  // `instances` metadata entries, each with `instance_bytes` of buffer
  // (throws std::runtime_error when the card has no room).
  datagram_receiver(hamlyn_manager& m, uint32_t instances, uint32_t instance_bytes);
  ~datagram_receiver() override;
  datagram_receiver(const datagram_receiver&) = delete;
  datagram_receiver& operator=(const datagram_receiver&) = delete;

  seed make_seed() const;
  // Ready: the datagram of `instance`; not ready: polls the manager once and
  // looks again. False when it is still not ready (or out of range).
  bool receive(uint32_t instance, datagram& d);
  // receive(), waiting up to timeout_ns (h_recv_block).
  bool receive_block(uint32_t instance, datagram& d, uint64_t timeout_ns) {
    return manager_.wait_until([&] { return receive(instance, d); }, timeout_ns);
  }
  // A ticket for `instance` alone, to send as a reply ticket.
  hw::ticket reply_ticket(uint32_t instance) const;
  bool ready(uint32_t instance) const { return instance < instances_ && ready_[instance]; }
  void release(uint32_t instance) {  // not ready again: its buffer may be written
    if (instance < instances_) ready_[instance] = 0;
  }
  uint32_t instances() const { return instances_; }
  const datagram_counters& counters() const { return counters_; }
  bool process_arrival(const arrival& a) override;

 private:
  hamlyn_manager& manager_;
  uint32_t instances_;
  uint32_t instance_bytes_;
  uint64_t area_ = 0;  // card offset of the buffers
  uint32_t slot_ = 0;  // the end point's slot
  std::byte* buffers_ = nullptr;
  std::vector<uint8_t> ready_;       // [instance]
  std::vector<datagram> datagrams_;  // [instance]: valid while ready
  datagram_counters counters_;
};

class datagram_sender {
 public:
  // A sender on a peer's seed: rejected (counted by the manager) when the
  // seed fails its checks.
  status open(hamlyn_manager& m, const seed& s);
  // A sender of one instance on a reply ticket a datagram brought (checked
  // as a seed is): instance 0 of this sender is the ticket's.
  status open_reply(hamlyn_manager& m, const hw::ticket& reply);
  // Sends `length` bytes to `instance` (h_send_msg), with an optional reply
  // ticket; returns once the card has sent it (the data may be reused).
  // invalid_argument: instance or length out of range; would_block: the
  // work queue is full; rejected: the receiving card refused it.
  status send(uint32_t instance, const void* data, uint32_t length,
              const hw::ticket* reply = nullptr);
  uint32_t instances() const { return seed_.entries; }
  uint32_t instance_bytes() const { return seed_.entry_bytes; }

 private:
  hamlyn_manager* manager_ = nullptr;
  seed seed_{};
};

}  // namespace hpam::hamlyn_lib
