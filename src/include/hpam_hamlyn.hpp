// hpam_hamlyn.hpp: the Hamlyn library's higher-level protocols (OSDI'96
// "An implementation of the Hamlyn sender-managed interface architecture",
// section 3.3), over hpam's emulated Hamlyn card. C++17; implemented by
// libhpam_hamlyn.so (c++ prog.cc -lhpam_hamlyn).
//
// * hamlyn_manager: one per process (one send terminus): its card, the
//   notification queue it dispatches to receiver end points, buffer memory.
// * Receiver end points make seeds: plain data holding the tickets of their
//   buffers and metadata, to be sent to the peer (any way: a pipe, a file, a
//   datagram) to create the matching sender there. A sender checks its seed
//   like any ticket; a forged or stale one is refused (status::rejected).
// * Simple datagram: an instance per metadata entry, ready or not ready.
// * Stream: one-way, one-to-one, in order; send/flush, receive without a
//   copy, release.
// * Tagged remote write: data at an offset of the receiver's buffer plus a
//   tag queued there (one fast-mode packet); get_tag / get_specific_tag.
//
// Not thread-safe (as in the paper). Constructors throw std::runtime_error
// (or std::invalid_argument) on setup errors; operations return a status.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace hpam::hamlyn {

// The same values as the C API's HPAM_* codes (hpam_am.h).
enum class status : int32_t {
  ok = 0,
  would_block = 2,       // no room now (work queue, credit): try again after polling
  invalid_argument = 4,  // out of range, or the object is not open
  rejected = 6,          // a check refused it: forged or stale seed or ticket, wrong key, bounds
  no_resource = 7,       // no card memory, slot or metadata entries left
};

// A seed: plain data, sent to the peer that will send to the end point.
struct seed {
  alignas(8) unsigned char bytes[80];
};
// A ticket (a datagram's reply ticket): plain data.
struct ticket {
  alignas(8) unsigned char bytes[48];
};

struct manager_config {
  std::string job;                      // job id, the same in every process of the job
  int nprocs = 2;                       // processes in the job
  int my_proc = 0;                      // this process, 0 .. nprocs-1
  uint64_t buffer_bytes = 16u << 20;    // card memory for the end points' buffers
  uint32_t metadata_entries = 1024;     // metadata entries for their slots
  uint64_t notify_capacity = 1024;      // notification queue entries (a power of two)
  uint32_t packet_size = 4096;          // bytes per packet, header included
  uint64_t attach_timeout_ms = 60'000;  // how long to wait for the peers' cards
};

class hamlyn_manager {
 public:
  explicit hamlyn_manager(const manager_config& cfg);  // creates my card, attaches to the peers
  ~hamlyn_manager();
  hamlyn_manager(const hamlyn_manager&) = delete;
  hamlyn_manager& operator=(const hamlyn_manager&) = delete;
  // Takes one notification, if any, and gives it to its end point.
  bool poll_nowait();
  // Polls until done() holds or timeout_ns passes (the paper's blocking
  // receive; the emulation has no interrupt to sleep on): whether it held.
  template <class Done>
  bool wait_until(Done&& done, uint64_t timeout_ns);
  int my_proc() const;
  struct impl;
  impl& internal() { return *impl_; }

 private:
  std::unique_ptr<impl> impl_;
};

// Clock and yield for wait_until (out of line).
uint64_t monotonic_ns();
void yield_processor();

template <class Done>
bool hamlyn_manager::wait_until(Done&& done, uint64_t timeout_ns) {
  const uint64_t deadline = monotonic_ns() + timeout_ns;
  for (uint32_t spins = 1;; ++spins) {
    if (done()) return true;
    (void)poll_nowait();
    if ((spins & 255) == 0) {
      if (monotonic_ns() >= deadline) return done();
      yield_processor();
    }
  }
}

// --- simple datagram -------------------------------------------------------
struct datagram {
  const void* data = nullptr;  // in the instance's buffer (valid until release)
  uint32_t length = 0;
  uint32_t source = 0;  // sending process
  bool has_reply = false;
  ticket reply{};  // the sender's reply ticket (for datagram_sender::open_reply)
};

class datagram_receiver {
 public:
  datagram_receiver(hamlyn_manager& m, uint32_t instances, uint32_t instance_bytes);
  ~datagram_receiver();
  datagram_receiver(const datagram_receiver&) = delete;
  datagram_receiver& operator=(const datagram_receiver&) = delete;
  seed make_seed() const;
  ticket reply_ticket(uint32_t instance) const;  // to send with a datagram
  bool receive(uint32_t instance, datagram& d);  // ready? (polls once when not)
  bool receive_block(uint32_t instance, datagram& d, uint64_t timeout_ns);  // waits (polling)
  void release(uint32_t instance);                                          // not ready again
  struct impl;

 private:
  std::unique_ptr<impl> impl_;
};

class datagram_sender {
 public:
  datagram_sender();
  ~datagram_sender();
  datagram_sender(const datagram_sender&) = delete;
  datagram_sender& operator=(const datagram_sender&) = delete;
  status open(hamlyn_manager& m, const seed& s);
  status open_reply(hamlyn_manager& m, const ticket& reply);  // one instance: the ticket's
  status send(uint32_t instance, const void* data, uint32_t length, const ticket* reply = nullptr);

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

// --- stream ----------------------------------------------------------------
struct stream_config {
  uint32_t records = 64;             // tickets (metadata entries) per buffer region
  uint64_t buffer_bytes = 64 << 10;  // bytes per region
  uint32_t max_regions = 4;          // regions the receiver may allocate
};
struct stream_record {
  const void* data = nullptr;  // in the receiver's buffer: no copy (valid until released)
  uint64_t length = 0;
  uint64_t id = 0;  // release(id) frees it and every record before it
};

class stream_receiver {
 public:
  stream_receiver(hamlyn_manager& m, const stream_config& cfg = {});
  ~stream_receiver();
  stream_receiver(const stream_receiver&) = delete;
  stream_receiver& operator=(const stream_receiver&) = delete;
  seed make_seed() const;
  bool receive(stream_record& r);  // the next record in order, if it has arrived
  bool receive_block(stream_record& r, uint64_t timeout_ns);
  status release(uint64_t id);
  struct impl;

 private:
  std::unique_ptr<impl> impl_;
};

class stream_sender {
 public:
  stream_sender();
  ~stream_sender();
  stream_sender(const stream_sender&) = delete;
  stream_sender& operator=(const stream_sender&) = delete;
  // coalesce_bytes: sends shorter than this are copied together (0: off);
  // wait_ns: how long a sender out of tickets waits (polling) for credit.
  status open(hamlyn_manager& m, const seed& s, uint32_t coalesce_bytes = 4096,
              uint64_t wait_ns = 10'000'000'000ull);
  status send(const void* data, uint64_t length);
  status flush();  // forces out everything posted

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

// --- tagged remote write ---------------------------------------------------
class tagged_write_receiver {
 public:
  tagged_write_receiver(hamlyn_manager& m, uint64_t bytes, uint32_t tag_capacity = 1024);
  ~tagged_write_receiver();
  tagged_write_receiver(const tagged_write_receiver&) = delete;
  tagged_write_receiver& operator=(const tagged_write_receiver&) = delete;
  seed make_seed() const;
  void* buffer() const;  // where the writes land
  uint64_t bytes() const;
  bool get_tag(uint64_t& tag);                             // any queued tag (polls once when none)
  bool get_specific_tag(uint64_t tag);                     // that tag, if it has arrived
  bool get_tag_block(uint64_t& tag, uint64_t timeout_ns);  // waiting (polling) up to timeout_ns
  bool get_specific_tag_block(uint64_t tag, uint64_t timeout_ns);
  struct impl;

 private:
  std::unique_ptr<impl> impl_;
};

class tagged_write_sender {
 public:
  tagged_write_sender();
  ~tagged_write_sender();
  tagged_write_sender(const tagged_write_sender&) = delete;
  tagged_write_sender& operator=(const tagged_write_sender&) = delete;
  status open(hamlyn_manager& m, const seed& s);
  // One packet: length at most the packet size less its 64-byte header.
  status send(const void* source, uint32_t length, uint64_t offset, uint64_t tag);

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

}  // namespace hpam::hamlyn
