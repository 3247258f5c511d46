// The HPAM all-to-all D-way request-reply protocol (HPAM sections 4 and 5.2,
// appendices A and B), over any card that provides the interface of
// nic/card.hpp. The card is a template parameter: chosen once at setup.
//
// Send (HPAM_4): take the request instance the hint pointer names (search
// linearly on a miss; stall while serving the network, or return busy, when
// all D are in use), build the packet in that instance's own VRAM block,
// launch it, mark the descriptor busy and timestamp it.
// Receive (HPAM_poll): the packet's header is copied once out of the card
// block, and only the copy is checked (CRC, header, key, type, instance,
// sequence) and used. Then dispatch: a new request runs its handler (an
// empty acknowledgement goes back if the handler did not reply), a
// duplicate request is answered by reflecting the stored reply, a matching
// reply runs its handler and frees the instance, a stale reply is dropped.
// A well-formed request the receiver refuses (no such handler; a store
// target or get source outside its segment) is answered by a negative
// acknowledgement that the requester counts and reports; a malformed one is
// dropped and counted without consuming its sequence number. A reply is
// checked against what its request asked (a get's bytes go where the
// request descriptor says, never where the reply says). Each poll checks K
// request descriptors for timeout in a circular walk over [peer][instance]:
// resend with doubled timeout; after give_up_ns, give up on a peer whose
// process exited or is stopped, that has finished, or that polls without ever answering, but
// keep retransmitting (every recheck_ns at most) to one that lives and does
// not poll: a peer that computes is not a dead peer.
// Ordered (endpoint_config::ordered): requests to a peer take its instances
// strictly in turn, so request n leaves only after request n-D was answered
// and a receiver can restore the order of launch holding at most D-1.
//
// This header declares the class; its member functions are defined one
// header per mechanism, all included by am/endpoint_impl.hpp: setup and
// finalize (endpoint_setup.hpp), send (endpoint_send.hpp), receive and
// dispatch (endpoint_receive.hpp), acknowledgements (endpoint_acks.hpp),
// the timeout walk and give-up (endpoint_timeouts.hpp), loss recovery
// (endpoint_loss_recovery.hpp), messages to oneself (endpoint_self.hpp).
#pragma once

#include <sys/uio.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "am/config.hpp"
#include "am/counters.hpp"
#include "am/deferred_acks.hpp"
#include "am/descriptor.hpp"
#include "am/packet.hpp"
#include "am/rtt_estimator.hpp"
#include "am/token.hpp"
#include "nic/card.hpp"
#include "sys/clock.hpp"
#include "sys/hot_page.hpp"
#include "sys/process_state.hpp"
#include "sys/status.hpp"

namespace hpam::am {

struct handler_entry {
  handler4_fn short4 = nullptr;    // for short requests/replies
  handler_bulk_fn bulk = nullptr;  // for store, medium and get replies
  void* ctx = nullptr;             // passed back to the handler
};

// A packet's protocol header as accept() copied and checked it: everything
// after accept reads this copy, never the card block. Its control word,
// decoded, is not kept here: accept hands it to the inline request path
// (in registers), and the replies' out-of-line functions decode it again
// from h.control (stored in the arrival at every packet, it cost about 9
// instructions of vector shuffles a packet).
struct arrival {
  int src;                        // sending process, as the card knows it
  am_header h;                    // the header (words beyond header_bytes(c.kind) unused)
  const std::byte* payload;       // bytes after the header, in the card block
  uint32_t payload_len;           // their number (an ack trailer not included)
  uint32_t more_acks;             // an ack packet: the further ack_entry records it carries
  ack_entry more[max_depth - 1];  // their copies (multi_ack); more_acks of them are set
};

// Once a peer has been silent for the give-up time and is only busy, its
// outstanding requests are retransmitted and its liveness looked at again
// at least this often: a death after that is noticed within it.
constexpr uint64_t liveness_recheck_ns = 500'000'000;

// What a peer silent for the give-up time was seen doing (on_timeout).
enum class silence : uint8_t {
  busy,      // its process lives and does not poll (computes, sleeps): keep waiting
  gone,      // its process has exited
  finished,  // it announced it has finished (drained and closed its card): it will not answer
  stopped,   // its process is stopped (SIGSTOP, a debugger)
  ignoring,  // it lives and polls, yet never answered: it rejects or never gets my packets
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
  uint64_t key() const { return key_; }  // the job's protection key
  uint32_t depth() const { return depth_; }
  size_t max_bulk() const { return card_.block_size() - packet_header_size; }
  // Opaque to the protocol: handed to handlers in every token.
  void set_owner(void* owner) { owner_ = owner; }
  void* owner() const { return owner_; }

  // The memory peers may store into and get from (GAM's segment): a store
  // target or get source must lie entirely inside it, else the request is
  // refused, counted and negatively acknowledged. len 0: no segment (every
  // store and get is refused). Replaces the previous segment.
  status set_segment(void* base, size_t len);

  status register_handler4(unsigned index, handler4_fn fn, void* ctx);
  status register_handler_bulk(unsigned index, handler_bulk_fn fn, void* ctx);
  // Tells the sender that a request of its own was answered: fn runs for
  // each request to another process, once, when its answer is taken (a
  // reply, after the reply handler; the layer's empty acknowledgement,
  // deferred or riding; a refusal, which poll also reports), from inside
  // the poll or the send that took it. A transport that needs to know what
  // its peer has taken (UCX's flush and window) learns it from the
  // acknowledgements the protocol sends anyway, not from a reply of its own
  // per message. fn must not send. Null: no hook (the default).
  void set_answer_hook(answer_fn fn, void* ctx) {
    answer_hook_ = fn;
    answer_ctx_ = ctx;
    answer_more_ = lossy_ || fn != nullptr;
  }

  // Requests. `block`: stall serving the network while all D instances to
  // dest are busy; otherwise return status::busy.
  status request_4(int dest, unsigned handler, const uint64_t (&args)[4], bool block);
  status request_store(int dest, unsigned handler, const void* src, size_t len, uint64_t target,
                       uint64_t arg, bool block);
  status request_medium(int dest, unsigned handler, const iovec* iov, int iovcnt, uint64_t arg,
                        bool block);
  status request_get(int dest, unsigned handler, uint64_t remote, void* local, size_t len,
                     uint64_t arg, bool block);
  // The small-message fast path (hpam_send_medium_now): a medium request of
  // a head and a body (either may be empty), sent now or not at all:
  // status::busy when all D instances to dest are in use, and from a
  // handler, where a request would break the rule (nothing is sent or
  // counted then); else as request_medium. Inline into its one caller, the
  // C API's entry (a call with eight arguments costs about twenty
  // instructions). `check_pointers` false: the caller vouches that head and
  // body point at head_len and body_len bytes, as memcpy's caller does (a
  // front end's bound send, hpam_send_now), and a null one is not looked
  // for; every other check stays.
  template <bool check_pointers = true>
  [[gnu::always_inline]] inline status try_medium_now(int dest, unsigned handler, const void* head,
                                                      size_t head_len, const void* body,
                                                      size_t body_len, uint64_t arg);
  // try_medium_now whose payload `pack` writes straight into the outbound
  // block once an instance is free (no copy in between; UCX's am_bcopy):
  // pack must write at most max_bulk() bytes and return how many (more is
  // a broken contract: the process stops with a message, since the bytes
  // past the block are already written).
  status try_medium_packed(int dest, unsigned handler, pack_fn pack, void* pack_arg, uint64_t arg);
  // Replies, from a request handler only, through its token, at most once.
  status reply_4(hpam_token& token, unsigned handler, const uint64_t (&args)[4]);
  status reply_store(hpam_token& token, unsigned handler, const void* src, size_t len,
                     uint64_t target, uint64_t arg);

  // HPAM_poll. Returns status::peer_unreachable once when a peer has just
  // been given up on (see unreachable_peer()), else status::rejected once
  // when a request of mine was refused or answered with a reply that failed
  // its checks since the last report (last_error() says which), else
  // rule_violation when called from a handler, ok otherwise. *handled =
  // packets processed. With report false, nothing is reported (and nothing
  // is forgotten): the next reporting poll returns it.
  status poll(int* handled = nullptr, bool report = true);

  // The sending half of a poll, for an owner busy elsewhere (a transport
  // whose user waits on another interface): deferred acks launched, held
  // packets whose time has come sent, K request descriptors checked and
  // resent. Nothing is received and the heartbeat does not move: peers
  // judge my liveness by my polls, and I have not looked at what they sent.
  // A peer given up on here is reported by the next poll. From a handler:
  // rule_violation.
  status resend_due();

  // The sending half of a poll for an owner that makes no call at all (it
  // computes, or spins on memory another process writes), called by a
  // helper thread under the owner's guard (capi/background_resend.hpp):
  // when I have not polled since the last call (`mark` holds my poll count
  // then), launch deferred acks, send held packets whose time has come and
  // check every request descriptor for timeout (stamp or resend; the walk's
  // cursor stays where it is); otherwise only note my poll count. Returns
  // the requests resent (also counted as background_resends); from a
  // handler, nothing is done.
  uint32_t resend_idle(uint32_t& mark);

  // The timeout new requests to peer get now: its adaptive one when the
  // wire can lose packets (am/rtt_estimator.hpp), else timeout_ns.
  uint64_t current_timeout(int peer) const { return timers_[peer].rtt.rto_ns; }

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
  // Setup (endpoint_setup.hpp).
  uint64_t key_of_process_0();
  [[gnu::cold]] void connect_on_arrival(int src);
  inline bool in_segment(uint64_t address, uint64_t len) const;

  // Send (endpoint_send.hpp). Inline into each request kind: its build step
  // and arguments stay in registers (a call cost the small-message path
  // about 30 instructions).
  template <class Build>
  [[gnu::always_inline]] inline status send_request(int dest, msg_kind kind, unsigned handler,
                                                    bool block, Build&& build,
                                                    const expected_get& get = {});
  template <class Build>
  status send_reply(hpam_token& token, msg_kind kind, unsigned handler, Build&& build);
  inline bool acquire_instance(int dest, uint32_t& instance);
  bool search_instance(int dest, uint32_t& instance);
  status stall_for_instance(int dest, uint32_t& instance);
  inline status check_send(int dest, unsigned handler);
  inline bool may_send_to(int dest, unsigned handler) const;
  [[gnu::noinline]] status check_send_slow(int dest, unsigned handler);
  [[gnu::cold]] status rule_broken(const char* what);
  // Copies the pieces to dst in order; the caller has checked that they fit.
  static void gather(std::byte* dst, const iovec* iov, int iovcnt);

  // Receive (endpoint_receive.hpp). The packets waiting in the card, up to
  // the receive budget, with the deferred acks around them, are served in
  // one function out of line (an idle poll stays short); the loop and each
  // packet, from acceptance to dispatch, are inline into it (their calls
  // cost the receive path about a hundred instructions, and the loop's and
  // the packet's own frames another 20 (medusa) to 75 (hamlyn) a message:
  // docs/decisions.md, issue 26), the rare cases out of line.
  [[gnu::noinline, HPAM_HOT_PAGE]] uint32_t serve_arrivals();
  [[gnu::always_inline]] inline uint32_t receive_packets(uint32_t budget);
  [[gnu::cold]] status news();
  [[gnu::always_inline]] inline void handle_packet(const nic::rx_packet& p);
  // has_rider: a request carries an ack_entry (piggyback_acks), copied to
  // rider. Not in the arrival: the replies' out-of-line functions take the
  // arrival's address, which keeps its fields in memory.
  [[gnu::always_inline]] inline bool accept(const nic::rx_packet& p, arrival& a, control_word& c,
                                            bool& has_rider, ack_entry& rider);
  [[gnu::always_inline]] inline refusal check_request(const arrival& a, msg_kind kind) const;
  [[gnu::always_inline]] inline void on_request(const arrival& a, control_word c);
  [[gnu::always_inline]] inline void run_request_handler(hpam_token& t, const arrival& a,
                                                         msg_kind kind);
  void serve_get(hpam_token& t, const am_header& h);
  void on_reply(arrival& a);
  bool reply_ok(const request_desc& d, const arrival& a, msg_kind kind) const;
  [[gnu::always_inline]] inline void answered(int src, request_desc& d, uint32_t instance,
                                              bool answers_resend);
  [[gnu::cold]] void refused(int peer, const request_desc& d, const char* why);
  void tell_answered(int src, const request_desc& d);
  [[noreturn, gnu::cold]] void packed_too_long(size_t n) const;
  [[gnu::always_inline]] inline void dispatch(hpam_token& t, msg_kind kind, unsigned handler,
                                              const uint64_t (&w)[4], const std::byte* payload,
                                              size_t len);

  // Acknowledgements (endpoint_acks.hpp).
  [[gnu::always_inline]] inline void send_ack(int src, uint32_t instance, uint32_t sequence,
                                              refusal why, reply_desc& r);
  [[gnu::noinline]] void launch_ack_now(int src, uint32_t instance, reply_desc& r);
  static inline uint32_t stored_ack_word(const reply_desc& r);
  // The words of peer's stored acks by instance (an ack that waited behind
  // another becomes the row's next rider: ack_rows::take_rider).
  auto stored_ack_words(int peer) {
    return [this, peer](uint32_t i) { return stored_ack_word(replies_.at(peer, i)); };
  }
  void stamp_stored_ack(int src, uint32_t instance, reply_desc& r);
  [[gnu::always_inline]] inline void ride_ack(int dest, msg_kind kind, am_header& h, std::byte* pkt,
                                              uint32_t& length);
  // What launches one peer's deferred acks, handed to acks_ (deferred_acks.hpp).
  auto ack_launcher() {
    return [this](int peer, uint64_t waiting) { launch_acks(peer, waiting); };
  }
  void launch_acks(int peer, uint64_t waiting);
  bool acks_well_formed(arrival& a) const;
  void on_ack_packet(arrival& a, control_word c);
  // An ack of my request [instance] at sequence (why: its refusal value),
  // from an ack packet or carried inside another packet.
  // sequence: with entry_answers_resend when the ack was made for a resent copy.
  [[gnu::always_inline]] inline void take_ack(int src, uint32_t instance, uint32_t sequence,
                                              uint16_t why);
  [[gnu::always_inline]] inline void on_ack(int src, request_desc& d, uint16_t why);

  // The timeout walk and give-up (endpoint_timeouts.hpp).
  // reading: the walk runs in a poll, which reads my card (not resend_due
  // or resend_idle, the sending half alone).
  inline void check_timeouts(bool reading);
  inline uint32_t next_timeout_index(uint32_t i) const;
  inline void check_timeout(request_desc& d, uint32_t index, bool reading);
  [[gnu::cold]] void on_timeout(int peer, request_desc& d, uint64_t now, bool reading);
  inline bool resend_premature(int peer, request_desc& d, uint64_t now);
  inline bool answer_may_wait(request_desc& d, bool reading);
  inline void defer_resend(int peer, request_desc& d, uint64_t from);
  // The request goes out again, marked resent (packet.hpp).
  void resend(int peer, request_desc& d, uint64_t now);
  [[gnu::cold]] silence observe(int peer, request_desc& d);
  [[gnu::cold]] void give_up(int peer, uint64_t silent_ns, silence why, uint32_t beats);

  // Loss recovery, only when the wire can lose packets (lossy_;
  // endpoint_loss_recovery.hpp).
  inline void stamp_sent(int dest, request_desc& d);
  // An answer to my request d: a round trip measured (Karn: never of a
  // resent request), a spurious resend counted, earlier requests resent.
  [[gnu::noinline]] void on_answer_when_lossy(int src, request_desc& d, uint32_t instance,
                                              bool answers_resend);
  // Ordered: the request sent as `launch` to src was answered; the oldest
  // unanswered one, if early_resend_after or more were sent after it, is
  // resent now (once).
  void resend_early(int src, uint64_t launch);
  void take_holes_for_lost(int src, uint64_t launch);
  void resend_suspects(int src);
  [[gnu::cold]] void resend_suspected(int peer, request_desc& d, uint64_t now);
  void resend_lost(int peer, request_desc& d, uint64_t now);
  // Lossy and ordered: the answers one ack packet carries are judged
  // together, once it is read (close_answer_batch), as one sign of a hole,
  // as a TCP acknowledgement is one however much it covers: the packet lists
  // them by instance, which wraps around the launch order, and judged one by
  // one the later ones took the oldest for lost before its own entry came.
  struct answer_batch {
    bool open = false;
    bool answered = false;  // some answer came in it
    uint64_t farthest = 0;  // the launch of the latest request it answered
  };
  void close_answer_batch(int src);
  inline uint64_t launch_of(uint32_t instance, uint32_t sequence) const;
  // Launches from `from` to `to`, going forward modulo launch_span_.
  uint64_t launches_between(uint64_t from, uint64_t to) const {
    return (to + launch_span_ - from) % launch_span_;
  }

  // Messages to oneself (endpoint_self.hpp).
  status self_request(msg_kind kind, unsigned handler, const uint64_t (&w)[4], const void* data,
                      size_t len);
  status self_reply(hpam_token& token, msg_kind kind, unsigned handler, const uint64_t (&w)[4],
                    const void* data, size_t len);

  // Configuration, fixed at setup (some state of a mechanism sits with its
  // settings), by the file that uses it. Identity and protection:
  std::string job_;
  int nprocs_;
  int my_proc_;
  uint32_t depth_;
  uint64_t key_;
  bool key_check_;
  // The timeout walk, give-up and the liveness rule (endpoint_timeouts.hpp):
  uint64_t timeout_ns_;
  uint32_t backoff_limit_;
  uint64_t give_up_ns_;
  uint64_t recheck_ns_;      // a busy peer is looked at again this often
  uint32_t polls_to_drain_;  // polls in which a live peer handles all it was sent
  uint32_t young_polls_;     // resend_premature: the peer's polls before a young request's resend
  uint32_t polls_ = 0;       // my polls (modulo 2^32): my own queue drained?
  uint32_t checks_per_poll_;
  uint32_t receive_budget_;    // packets one poll of a stream takes (endpoint_receive.hpp)
  uint32_t lone_budget_;       // after a poll that took none: 1 (receive_budget_ if lossy)
  bool took_packets_ = false;  // the last poll took packets (a stream)
  bool ordered_;               // instances strictly in turn per peer (endpoint_send.hpp)
  // Loss recovery (endpoint_loss_recovery.hpp):
  bool lossy_;               // can_lose(cfg): loss recovery on (am/config.hpp)
  bool stamp_at_send_;       // lossy_ or a manual clock: stamped as sent, not by the walk
  bool adaptive_timeout_;    // lossy_: timers_ follow the round trip
  bool defer_premature_;     // resend only to a peer that polled since (resend_premature)
  bool early_resend_;        // lossy_ and ordered_: resend_early
  bool answer_more_;         // lossy_ or an answer hook: answered's out-of-the-way steps
  uint64_t timeout_min_ns_;  // the adaptive timeout's floor (timeout_ns_ its ceiling)
  uint64_t launch_span_;     // launch_of's modulus: 2^30 sequences of D instances
  // The clock, the card, and the owner handed to handlers:
  sys::clock clock_;
  Card card_;
  void* owner_ = nullptr;

  // Protocol state: the descriptor table (HPAM Figure 4), the hint
  // pointers (send), the walk's cursor (timeouts), handlers and rules,
  // peers, segment, errors and counters, deferred acks, loss recovery.
  descriptor_table<request_desc> requests_;
  descriptor_table<reply_desc> replies_;
  std::vector<uint32_t> instance_hint_;  // per peer: next likely-free request instance
  uint32_t timeout_cursor_ = 0;          // timeout_cursor: flat [peer][instance] index last checked
  uint32_t timeout_end_ = 0;             // nprocs * depth
  uint32_t my_row_ = 0;                  // my_proc * depth: my own row, skipped
  handler_entry handlers_[max_handlers];
  answer_fn answer_hook_ = nullptr;  // set_answer_hook
  void* answer_ctx_ = nullptr;
  handler_state state_ = handler_state::none;
  hpam_token* current_token_ = nullptr;
  std::vector<uint8_t> connected_;
  std::vector<uint8_t> lost_;  // peers given up on
  // Per peer: connected, not lost and not me (check_send's one load; my own
  // entry stays 0, so a send to myself takes the full checks).
  std::vector<uint8_t> sendable_;
  int unreachable_peer_ = -1;
  bool newly_unreachable_ = false;
  bool newly_refused_ = false;  // a refusal waits to be reported by poll
  uint64_t segment_base_ = 0;   // my segment: peers' stores and gets land in it
  uint64_t segment_len_ = 0;    // 0: no segment
  std::string last_error_;
  std::vector<protocol_counters> counters_;  // per peer; [my_proc] holds unattributed events
  std::vector<std::byte> self_buffer_;       // gather area for messages to myself
  deferred_acks acks_;                       // deferred acks and when they leave
  // Per peer, when lossy_: the adaptive timeout, and (ordered) the launch
  // number of the oldest request that may be unanswered.
  struct peer_timer {
    rtt_estimator rtt;
    uint64_t oldest = 0;      // ordered: launch number of the oldest maybe unanswered
    uint64_t highest = 0;     // ordered: launch number of the highest answered request
    bool recovering = false;  // ordered: holes below `highest` are resent (resend_early)
    uint32_t suspects = 0;    // ordered: requests taken for lost, not yet resent
    uint32_t beat = 0;        // the peer's heartbeat, read at beat_at (stamp_sent)
    uint64_t beat_at = 0;
  };
  std::vector<peer_timer> timers_;
  answer_batch answer_batch_;
};

}  // namespace hpam::am
