// The stream protocol (OSDI'96 3.3): a one-way, one-to-one, in-order
// connection from a sender to a receiver.
//
// * The receiver owns buffer regions in card memory, each a slot whose
//   metadata entries are the records' tickets; its seed carries region 0.
// * The sender writes each record (a message) into a region at a place of
//   its choosing (sender-based memory management: a ring of bytes per
//   region) on a metadata entry of that region, with metadata naming the
//   record's sequence number, offset and length. Large buffers are sent as
//   they are (as records of at most a region's bytes); small ones are
//   coalesced by copying into one record, sent when it is full or at
//   flush(), which forces out everything posted.
// * Records may complete at the receiver in any order; receive() returns
//   them in sequence order as (address, length) in the region, without a
//   copy; release(id) frees every record up to and including id and sends
//   the cumulative count back to the sender (a fast-mode message carried in
//   the sender's notification entry: the credit).
// * A sender with no ticket (metadata entry) or no room left waits while
//   polling for credit (the emulation's "block"), up to wait_ns; it never
//   writes over a record the receiver has not released.
// * The receiver allocates more buffers when the application holds on to
//   records (more than half of the granted bytes or entries unreleased): a
//   new region, whose ticket it grants the sender in a credit, up to
//   max_regions.
// * The first record (id 0, internal) carries the ticket of the sender's
//   credit slot; the application's records start at id 1.
//
// Faults: the Hamlyn network is assumed reliable (no drop, duplicate or
// corruption, OSDI'96 2), but packets may arrive out of order (adaptive
// routing). set_faults passes each record through the seeded wire
// (nic/wire) with reorder and delay only, so tests show the receiver puts
// them back in order; drop, duplicate and corrupt are refused.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "hamlyn_lib/hamlyn_manager.hpp"
#include "nic/card.hpp"
#include "nic/wire/wire.hpp"

namespace hpam::hamlyn_lib {

struct stream_config {
  uint32_t records = 64;             // metadata entries (tickets) per region
  uint64_t buffer_bytes = 64 << 10;  // bytes per region (< 4 GiB)
  uint32_t max_regions = 4;          // regions the receiver may allocate in all
};
constexpr uint32_t stream_max_regions = 16;  // the most a sender accepts

// What travels with a record (in its metadata entry's user metadata).
struct stream_record_metadata {
  uint64_t sequence;  // record id
  uint32_t offset;    // in the region
  uint32_t length;    // bytes
  uint32_t flags;     // stream_flag_hello: the data is the sender's credit ticket
};
constexpr uint32_t stream_record_metadata_bytes = 20;
constexpr uint32_t stream_flag_hello = 1u << 0;

// What the receiver sends back (carried in the sender's notification entry).
struct stream_credit {
  uint64_t released;  // records with id < released are freed
  uint32_t kind;      // stream_credit_release or stream_credit_grant
  uint32_t region;    // grant: the region index the ticket is for
  hw::ticket grant;   // grant: the new region (metadata index 0, range its bytes)
};
static_assert(sizeof(stream_credit) == 64 &&
              sizeof(stream_credit) <= hw::notification_inline_bytes);
constexpr uint32_t stream_credit_release = 1;
constexpr uint32_t stream_credit_grant = 2;

// A record as receive() returns it (valid until released).
struct stream_record {
  const std::byte* data = nullptr;  // in the region: no copy
  uint64_t length = 0;              // bytes
  uint64_t id = 0;                  // release(id) frees it and every record before it
};

struct stream_receiver_counters {
  uint64_t records = 0;         // records returned to the application
  uint64_t malformed = 0;       // arrivals with lying metadata, or outside the window
  uint64_t regions = 0;         // regions allocated (the first included)
  uint64_t credits = 0;         // credits sent (releases and grants)
  uint64_t refused_credit = 0;  // credit messages the card refused
};

class stream_receiver final : public receiver_end_point {
 public:
  // Throws (std::invalid_argument, std::runtime_error) when the
  // configuration is out of range or the card has no room.
  stream_receiver(hamlyn_manager& m, const stream_config& cfg = {});
  ~stream_receiver() override;
  stream_receiver(const stream_receiver&) = delete;
  stream_receiver& operator=(const stream_receiver&) = delete;

  seed make_seed() const;
  // The next record in order if it has arrived (polls the manager once).
  bool receive(stream_record& r);
  // receive(), waiting up to timeout_ns.
  bool receive_block(stream_record& r, uint64_t timeout_ns);
  // Frees every received record up to and including `id`, and tells the
  // sender. invalid_argument: id not received, or already released.
  status release(uint64_t id);
  uint32_t regions() const { return static_cast<uint32_t>(regions_.size()); }
  const stream_receiver_counters& counters() const { return counters_; }
  bool process_arrival(const arrival& a) override;

 private:
  struct region {
    uint64_t area;    // card offset of its buffer
    uint32_t slot;    // its slot
    std::byte* base;  // its buffer
  };
  struct arrived {
    uint64_t sequence_plus1;  // 0: nothing here
    const std::byte* data;
    uint32_t length;
    uint32_t flags;
  };
  status add_region();
  void hello(const arrived& a);
  void maybe_grow();
  void send_credit(uint32_t kind, uint32_t region, const hw::ticket* grant);

  hamlyn_manager& manager_;
  stream_config cfg_;
  std::vector<region> regions_;
  std::vector<arrived> window_;  // [sequence & mask_]
  uint64_t mask_;
  uint64_t next_ = 0;        // next record to return (0 is the hello)
  uint64_t released_ = 0;    // records below it are freed
  uint64_t held_bytes_ = 0;  // bytes of records returned and not released
  uint32_t sender_ = ~0u;    // the sending process (from the hello)
  bool has_credit_ticket_ = false;
  hw::ticket credit_ticket_{};
  stream_receiver_counters counters_;
};

struct stream_sender_counters {
  uint64_t records = 0;    // records sent (the hello included)
  uint64_t coalesced = 0;  // sends copied into the coalescing buffer
  uint64_t waits = 0;      // times the sender ran out of tickets or room and waited
  uint64_t grants = 0;     // regions granted by the receiver
  uint64_t malformed = 0;  // credits that lied (ignored)
};

class stream_sender final : public receiver_end_point {
 public:
  stream_sender() = default;
  ~stream_sender() override;
  stream_sender(const stream_sender&) = delete;
  stream_sender& operator=(const stream_sender&) = delete;

  // A sender on a receiver's seed (checked; rejected and counted if it
  // fails). Opens my credit slot and sends the hello. coalesce_bytes: sends
  // shorter than this are copied together (0: coalescing off); wait_ns: how
  // long a sender out of tickets waits for credit before would_block.
  status open(hamlyn_manager& m, const seed& s, uint32_t coalesce_bytes = 4096,
              uint64_t wait_ns = 10'000'000'000ull);
  // Reorder and delay only (see the header comment); before open().
  status set_faults(const nic::fault_config& f);
  // Posts `length` bytes; returns once they are sent or copied (the buffer
  // may be reused). would_block: no credit came within wait_ns.
  status send(const void* data, uint64_t length);
  status flush();  // sends the coalesced bytes and every held record
  uint64_t next_id() const { return next_sequence_; }
  uint32_t regions() const { return static_cast<uint32_t>(regions_.size()); }
  const nic::wire_counters* wire_stats() const { return wire_ ? &wire_->counters() : nullptr; }
  const stream_sender_counters& counters() const { return counters_; }
  bool process_arrival(const arrival& a) override;  // credits

 private:
  struct region {
    hw::ticket ticket;   // metadata index 0, range = the region
    uint64_t bytes;      // range
    uint32_t entries;    // metadata entries
    uint64_t head = 0;   // ring position after the last record placed (monotonic)
    uint64_t tail = 0;   // ring position up to which records are freed
    uint64_t used = 0;   // records placed in it (monotonic: entry = used % entries)
    uint64_t freed = 0;  // records freed
  };
  struct in_flight {
    uint64_t sequence;
    uint32_t region;
    uint64_t end;  // the region's ring position after this record
  };
  struct placement {
    uint32_t region;
    uint64_t start;  // ring position of the record's first byte
  };
  struct wire_sink;  // delivers records the wire passes (faults only)

  bool place(uint64_t length, placement& p);
  bool place_or_wait(uint64_t length, placement& p);
  status post(const void* data, uint64_t length, uint32_t flags);
  status deliver(uint32_t region, uint32_t entry, const stream_record_metadata& meta,
                 const void* data);
  void apply_release(uint64_t released);
  void add_region(const hw::ticket& t, uint32_t entries);

  hamlyn_manager* manager_ = nullptr;
  std::vector<region> regions_;
  std::vector<in_flight> flight_;  // ring [max in flight]
  uint64_t flight_head_ = 0, flight_tail_ = 0;
  uint32_t current_ = 0;  // the region tried first
  uint64_t next_sequence_ = 0;
  uint64_t released_ = 0;    // the receiver freed every record below it
  uint64_t max_record_ = 0;  // bytes of region 0
  uint32_t records_ = 0;     // entries per region (the seed's)
  uint64_t wait_ns_ = 0;
  std::vector<std::byte> coalesce_;
  uint64_t fill_ = 0;
  uint32_t credit_slot_ = ~0u;
  uint64_t credit_area_ = 0;
  nic::fault_config faults_{};
  sys::clock clock_;
  std::unique_ptr<nic::wire> wire_;  // records pass through it when faults are set
  std::vector<std::byte> staging_;   // a record as a wire packet
  stream_sender_counters counters_;
};

}  // namespace hpam::hamlyn_lib
