// The HPAM all-to-all D-way request-reply protocol (HPAM sections 4 and 5.2,
// appendices A and B), over any card that provides the interface of
// nic/card.hpp. The card is a template parameter: chosen once at setup.
//
// Send (HPAM_4): take the request instance the hint pointer names (search
// linearly on a miss; stall while serving the network, or return busy, when
// all D are in use), build the packet in that instance's own VRAM block,
// launch it, mark the descriptor busy and timestamp it.
// Receive (HPAM_poll): acceptance checks (CRC, header, key, type, instance,
// sequence), then dispatch: a new request runs its handler (an empty
// acknowledgement goes back if the handler did not reply), a duplicate
// request is answered by reflecting the stored reply, a matching reply runs
// its handler and frees the instance, a stale reply is dropped. Each poll
// checks K request descriptors for timeout in a circular walk over
// [peer][instance]: resend with doubled timeout, give up after give_up_ns.
#pragma once

#include <sys/uio.h>

#include <cstdint>
#include <string>
#include <vector>

#include "am/config.hpp"
#include "am/counters.hpp"
#include "am/descriptor.hpp"
#include "am/packet.hpp"
#include "am/token.hpp"
#include "nic/card.hpp"
#include "sys/clock.hpp"
#include "sys/status.hpp"

namespace hpam::am {

struct handler_entry {
  handler4_fn short4 = nullptr;     // for short requests/replies
  handler_bulk_fn bulk = nullptr;   // for store, medium and get replies
  void* ctx = nullptr;                 // passed back to the handler
};

// What the endpoint is doing right now, for the request-reply rules.
enum class handler_state : uint8_t { none, request, reply };

template <class Card>
class endpoint {
 public:
  // Throws std::invalid_argument for a bad configuration (message names the
  // parameter and range) and std::runtime_error when setup fails.
  explicit endpoint(const endpoint_config& cfg);
  endpoint(const endpoint&) = delete;
  endpoint& operator=(const endpoint&) = delete;

  // Attaches a peer's card (throws std::runtime_error after attach timeout).
  void connect(int proc);
  void connect_all();
  bool connected(int proc) const { return connected_[proc]; }

  int nprocs() const { return nprocs_; }
  int my_proc() const { return my_proc_; }
  uint32_t depth() const { return depth_; }
  size_t max_bulk() const { return card_.block_size() - packet_header_size; }
  // Opaque to the protocol: handed to handlers in every token.
  void set_owner(void* owner) { owner_ = owner; }

  status register_handler4(unsigned index, handler4_fn fn, void* ctx);
  status register_handler_bulk(unsigned index, handler_bulk_fn fn, void* ctx);

  // Requests. `block`: stall serving the network while all D instances to
  // dest are busy; otherwise return status::busy.
  status request_4(int dest, unsigned handler, const uint64_t (&args)[4], bool block);
  status request_store(int dest, unsigned handler, const void* src, size_t len, uint64_t target,
                       uint64_t arg, bool block);
  status request_medium(int dest, unsigned handler, const iovec* iov, int iovcnt, uint64_t arg,
                        bool block);
  status request_get(int dest, unsigned handler, uint64_t remote, void* local, size_t len,
                     uint64_t arg, bool block);
  // Replies, from a request handler only, through its token, at most once.
  status reply_4(hpam_token& token, unsigned handler, const uint64_t (&args)[4]);
  status reply_store(hpam_token& token, unsigned handler, const void* src, size_t len,
                     uint64_t target, uint64_t arg);

  // HPAM_poll. Returns status::peer_unreachable once when a peer has just
  // been given up on (see unreachable_peer()), rule_violation when called
  // from a handler, ok otherwise. *handled = packets processed.
  status poll(int* handled = nullptr);

  // Finalize: serve the network until no request of mine is outstanding and
  // every connected peer has finished too (or is dead / given up on).
  status drain();

  bool in_handler() const { return state_ != handler_state::none; }
  int unreachable_peer() const { return unreachable_peer_; }
  bool peer_lost(int proc) const { return lost_[proc]; }
  const std::string& last_error() const { return last_error_; }
  bool request_outstanding(int peer) const;
  protocol_counters totals() const;
  const protocol_counters& peer_counters(int proc) const { return counters_[proc]; }
  const Card& card() const { return card_; }
  Card& card() { return card_; }
  uint64_t now_ns() const { return clock_.now_ns(); }

 private:
  template <class Build>
  status send_request(int dest, msg_kind kind, unsigned handler, bool block, Build&& build);
  template <class Build>
  status send_reply(hpam_token& token, msg_kind kind, unsigned handler, Build&& build);
  bool acquire_instance(int dest, uint32_t& instance);
  status stall_for_instance(int dest, uint32_t& instance);
  status check_send(int dest, unsigned handler);
  [[gnu::cold]] status rule_broken(const char* what);

  void handle_packet(const nic::rx_packet& p);
  bool accept(const nic::rx_packet& p, int& src, const am_header*& h, control_word& c);
  void on_request(int src, const control_word& c, const am_header& h, const std::byte* payload,
                  uint32_t payload_len);
  void on_reply(int src, const control_word& c, const am_header& h, const std::byte* payload,
                uint32_t payload_len);
  bool run_request_handler(hpam_token& t, const control_word& c, const am_header& h,
                           const std::byte* payload, uint32_t payload_len);
  void serve_get(hpam_token& t, const am_header& h);
  void send_ack(int src, uint32_t instance, uint16_t sequence);
  void flush_acks();
  bool payload_ok(msg_kind kind, const am_header& h, uint32_t payload_len, bool is_request) const;

  void check_timeouts();
  [[gnu::cold]] void on_timeout(int peer, request_desc& d, uint64_t now);
  [[gnu::cold]] void give_up(int peer, uint64_t silent_ns);
  [[gnu::cold]] void connect_on_arrival(int src);

  status self_request(msg_kind kind, unsigned handler, const uint64_t (&w)[4], const void* data,
                      size_t len);
  status self_reply(hpam_token& token, msg_kind kind, unsigned handler, const uint64_t (&w)[4],
                    const void* data, size_t len);
  void dispatch(hpam_token& t, msg_kind kind, unsigned handler, const uint64_t (&w)[4],
                const std::byte* payload, size_t len);

  static uint64_t gather(std::byte* dst, const iovec* iov, int iovcnt, size_t limit, bool& fits);

  // Configuration, fixed at setup.
  std::string job_;
  int nprocs_;
  int my_proc_;
  uint32_t depth_;
  uint64_t key_;
  bool key_check_;
  uint64_t timeout_ns_;
  uint32_t backoff_limit_;
  uint64_t give_up_ns_;
  uint32_t checks_per_poll_;
  uint32_t receive_budget_;
  bool defer_acks_;
  sys::clock clock_;
  Card card_;
  void* owner_ = nullptr;

  // Protocol state (HPAM Figure 4).
  descriptor_table<request_desc> requests_;
  descriptor_table<reply_desc> replies_;
  std::vector<uint32_t> instance_hint_;  // per peer: next likely-free request instance
  int timeout_peer_ = 0;                 // timeout_cursor: peer part
  uint32_t timeout_instance_ = 0;        // timeout_cursor: instance part
  handler_entry handlers_[max_handlers];
  handler_state state_ = handler_state::none;
  hpam_token* current_token_ = nullptr;
  std::vector<uint8_t> connected_;
  std::vector<uint8_t> lost_;            // peers given up on
  int unreachable_peer_ = -1;
  bool newly_unreachable_ = false;
  std::string last_error_;
  std::vector<protocol_counters> counters_;  // per peer; [my_proc] holds unattributed events
  std::vector<std::byte> self_buffer_;       // gather area for messages to myself
  std::vector<uint32_t> pending_acks_;       // deferred acks: peer * D + instance
};

}  // namespace hpam::am
