// The Hamlyn library's upper layer (OSDI'96 section 3.3): the hamlyn_manager
// of one send terminus, the receiver end points it dispatches to, and the
// seeds that carry an end point's tickets to a peer.
//
// One manager per card (the emulated card has one send terminus). It owns
// the card's notification queue `queue`, hands out buffer memory (card
// memory, which every sender deposits into directly), opens the slots of its
// end points, and dispatches each notification entry to the end point whose
// slot it names (process_arrival). poll_nowait takes one entry; wait_until
// polls until the caller's condition holds or a time-out passes (the paper's
// blocking receive; the emulation has no interrupt to sleep on, so it spins,
// then yields).
//
// Everything a notification says was written by a sender (any process that
// maps my card), so the manager believes nothing in it beyond a hint: the
// end point is found through my own table [slot], the metadata entry through
// my own slot table, and what the end point reads of the entry it copies
// once and checks. Entries for no end point are counted (stray) and dropped.
//
// Not thread-safe (as in the paper). Hot paths (poll_nowait, dispatch) do not
// allocate, lock or throw; setup (constructors, open_slot, allocate_buffer)
// may allocate and throw.
#pragma once

#include <cstddef>
#include <cstdint>
#include <thread>
#include <type_traits>
#include <vector>

#include "nic/hamlyn/hamlyn_card.hpp"
#include "sys/clock.hpp"
#include "sys/status.hpp"

namespace hpam::hamlyn_lib {

namespace hw = nic::hamlyn;

// What the manager hands an end point for one notification entry.
struct arrival {
  hw::notification n;                  // the entry, copied once out of the queue
  const std::byte* carried;            // the message the entry carried (n.carried), else null
  const hw::metadata_entry* metadata;  // my slot's entry n.metadata_index (null: fast mode)
};

// A receiver end point (the paper's receiver classes): it owns slots opened
// through the manager and records each arrival the manager gives it.
class receiver_end_point {
 public:
  virtual ~receiver_end_point() = default;
  // Records one arrival (called by the manager). false: no room now; the
  // manager keeps the arrival and offers it again at its next poll.
  virtual bool process_arrival(const arrival& a) = 0;
};

// What the manager counts (its own memory: statistics and the hostile tests).
struct manager_counters {
  uint64_t dispatched = 0;     // entries given to an end point
  uint64_t stray = 0;          // entries for a slot with no end point of mine: dropped
  uint64_t malformed = 0;      // entries naming a metadata entry the slot does not have
  uint64_t deferred = 0;       // times an end point had no room (the entry was kept)
  uint64_t seeds_refused = 0;  // seeds (and granted tickets) that failed their checks
};

// Protocols a seed can be for.
enum class protocol : uint32_t { datagram = 1, stream = 2, tagged_write = 3 };

// A seed (OSDI'96 3.3): the tickets of a receiver end point's preallocated
// buffers and metadata, sent to a peer to create the matching sender there.
// Plain data; it can travel inside messages.
struct seed {
  uint64_t magic;        // seed_magic
  uint32_t version;      // seed_version
  uint32_t kind;         // protocol
  hw::ticket target;     // the end point's slot: its first metadata entry, range = its buffer
  uint32_t entries;      // metadata entries (datagram instances, stream records; 0: fast)
  uint32_t entry_bytes;  // datagram: buffer bytes of each instance; else 0
  uint64_t reserved;     // zero
};
static_assert(std::is_standard_layout_v<seed> && std::is_trivially_copyable_v<seed>);
static_assert(sizeof(seed) == 80);
constexpr uint64_t seed_magic = 0x44454553594c4d48ull;  // "HMLYSEED"
constexpr uint32_t seed_version = 1;

class hamlyn_manager {
 public:
  // Manages card c (attached to its peers) and its notification queue `queue`.
  explicit hamlyn_manager(hw::card& c, uint32_t queue = 0);
  hamlyn_manager(const hamlyn_manager&) = delete;
  hamlyn_manager& operator=(const hamlyn_manager&) = delete;

  hw::card& card() { return card_; }
  uint32_t queue() const { return queue_; }

  // --- buffer memory and slots (setup) -------------------------------------
  // Card memory for buffers: `offset` in the card's area, address(offset).
  status allocate_buffer(uint64_t bytes, uint64_t& offset);
  void free_buffer(uint64_t offset) { card_.slots().free_area(offset); }
  std::byte* address(uint64_t offset) const { return card_.slots().area_address(offset); }
  // A slot over card memory [offset, offset+bytes) whose notifications go to
  // my queue and to `ep`.
  status open_slot(uint64_t offset, uint64_t bytes, hw::slot_mode mode, uint32_t entries,
                   uint32_t inline_limit, receiver_end_point* ep, uint32_t& slot);
  void close_slot(uint32_t slot);  // revoked and freed; nothing for it is dispatched again
  // A seed for slot `slot` of mine.
  seed make_seed(protocol kind, uint32_t slot, uint64_t offset, uint64_t bytes, uint32_t entries,
                 uint32_t entry_bytes) const;
  // Checks a seed from a peer the way the receiving interface checks a
  // ticket (its node's card, slot active with that generation and key,
  // mode, metadata entries and range inside the slot), before a sender is
  // built on it; rejected (counted in seeds_refused) or ok.
  status check_seed(const seed& s, protocol kind);
  // The same checks for a bare ticket granted later (stream regions).
  status check_ticket(const hw::ticket& t, hw::slot_mode mode, uint32_t entries);

  // --- dispatch --------------------------------------------------------------
  // Takes the next notification entry of my queue, if any, and gives it to
  // its end point (process_arrival). Also kicks my send terminus (my own
  // sends may be what a peer waits for). True if an entry was dispatched.
  bool poll_nowait();
  // Polls until done() holds or timeout_ns passes; whether done() held.
  template <class Done>
  bool wait_until(Done&& done, uint64_t timeout_ns);
  // Gives one notification (as taken from the queue) to its end point; the
  // fuzz harness drives it with arbitrary entries. False when it was kept
  // for later (the end point had no room).
  bool dispatch(const hw::notification& n, const std::byte* carried);

  // Waits until the terminus has sent h (DMA buffers may then be reused);
  // the outcome the receiving side gave it.
  status wait_sent(const hw::send_handle& h);

  const manager_counters& counters() const { return counters_; }

 private:
  bool retry_kept();

  hw::card& card_;
  uint32_t queue_;
  std::vector<receiver_end_point*> end_points_;  // [slot]: my end point for it, or null
  manager_counters counters_;
  bool kept_ = false;          // an entry waits for its end point's room
  hw::notification kept_n_{};  // ... that entry
  alignas(
      64) std::byte carried_[hw::max_notification_inline_bytes];  // the message an entry carried
};

template <class Done>
bool hamlyn_manager::wait_until(Done&& done, uint64_t timeout_ns) {
  if (done()) return true;
  const uint64_t deadline = sys::clock::monotonic_ns() + timeout_ns;
  for (uint32_t spins = 1;; ++spins) {
    (void)poll_nowait();
    if (done()) return true;
    if ((spins & 255) == 0) {
      if (sys::clock::monotonic_ns() >= deadline) return false;
      std::this_thread::yield();
    }
  }
}

}  // namespace hpam::hamlyn_lib
