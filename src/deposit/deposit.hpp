// Sender-based deposit (Hamlyn tickets) and hybrid deposit operations: the
// C++ API the Open MPI BTL uses for put, get and atomics.
//
// Setup: one deposit::endpoint per process, built from the job id, the
// number of processes and this process's index (as nic::card_setup), then
// attach_peer / attach_all. Everything is single-threaded per endpoint.
//
// (a) Registration. register_memory(base, len, t) makes a Hamlyn slot over
//     private memory of this process and returns its ticket (48-byte POD:
//     node, slot, key, range; see nic/hamlyn/ticket.hpp) to send to peers.
//     allocate_memory(len, addr, t) gives memory in this process's card
//     segment instead: peers then read, write and update it directly, with
//     no system call and no work by this process.
// (b) put(src, len, t, offset, h) / get(dst, len, t, offset, h): nonblocking
//     with a per-operation handle; test(h) returns pending, sent or error
//     (Hamlyn's library: the handle tells when the buffer may be reused).
//     put: the source buffer must stay untouched until test says sent
//     (small puts are copied at once, "direct I/O"). get: the bytes are in
//     dst when test says sent. An operation complete within the call (a
//     deposit carried out at once) takes no record: h says so
//     (completed(h); test says sent), and a refusal at once is returned by
//     the call itself, with no handle. A put takes no record at all: its
//     handle names its entry in the send terminus's work queue, whose
//     outcome the terminus keeps (test says pending, sent or error, and may
//     be asked again).
// (c) atomic(op, width, t, offset, operand, compare, fetched, h): 32/64-bit
//     add, and, or, xor, swap, compare-and-swap at (t, offset), atomic at the
//     destination and coherent with CPU atomics on that memory; `fetched`
//     (may be null for the non-fetching forms) receives the old value when
//     test says sent. offset must be aligned to the width.
// (e) put_now, get_now, atomic_now: the same operations carried out within
//     the call where t names memory this process can address (card memory,
//     or its own): the same checks, then a copy or a CPU atomic, with no
//     operation record, no work entry and no system call. not_supported
//     (nothing done) for any other memory: use put/get/atomic.
// (d) revoke(t) stops every further deposit with t's key (returns once no
//     deposit that passed the checks is still writing); deregister(t) also
//     frees the slot (and card memory from allocate_memory).
//
// Batches. Puts and gets of up to setup::batch_limit bytes by cross-memory
// attach wait (a put's bytes copied at once) and are carried out together at
// the next progress() (or wait(), or when a batch is full): one
// process_vm_writev for the waiting puts to each destination (the send
// terminus's batches), then one process_vm_readv for the waiting gets from
// each. Each is checked (slot, key, bounds, mode) when carried out, as one
// is at once; a refused one fails alone. A get or atomic issued at once
// first carries out the waiting puts, so one process's operations take
// effect in the order it issued them. Lone deposits do not wait: a put or a
// get issued with nothing of its kind waiting, when the last run of its kind
// between two progress calls was one operation (a put or get followed by a
// flush, as in a latency test), is carried out at once, past the work queue
// (one hold of the slot, its checks, one system call, its packets counted);
// the second of a run waits for the batch again.
// poll() is progress() for a caller that polls after every operation (UCX's
// worker progress in ucx_perftest's streams): a poll that finds a get
// posted since the previous poll leaves the waiting gets for a later one, so
// a stream of gets, each followed by a poll, batches until the batch is
// full, a progress() (a flush) or a poll with nothing new. Once a poll
// carried out a batch of one (a latency loop), polls carry the waiting gets
// out at once again, but for one in 64 that waits to see a stream begin.
//
// Paths. The sender's process does the receiving interface's work itself:
// card memory is written directly; private memory with process_vm_writev /
// readv when the kernel allows it (probed per peer; the cross_memory
// parameter can forbid it); otherwise packets go to the owner's inbound FIFO
// and the owner deposits them (and answers gets) when it calls progress().
// Atomics on another process's private memory always travel as packets and
// are executed by the owner in progress(), after its own slot, key and
// bounds checks (so once a ticket has been routed there, the sender stops
// holding the owner's slot for that ticket's atomics); atomics on card memory are
// executed directly by the sender. A process must therefore call progress()
// while peers may depend on it (the BTL's progress function does). Memory
// that must take atomics while its owner is not calling progress() (MPI
// passive-target windows) should come from allocate_memory.
//
// Hybrid deposit connections: open_connection(source, endpoint ticket,
// readable, writable) (source -1: any process of the job, e.g. several
// senders appending to one queue) creates a connection with address_registers address
// registers and returns a connection_ticket for the sender; hybrid(ct, op,
// data, len, out, out_len, fetched, h) runs one compound operation (see
// deposit/hybrid_op.hpp). Conditional notifications appear in this
// process's notification queue (next_notification).
//
// Hot paths (put, get, atomic, hybrid, progress, test) do not allocate,
// lock or throw; setup calls throw std::invalid_argument/runtime_error.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "deposit/hybrid_op.hpp"
#include "nic/hamlyn/hamlyn_card.hpp"
#include "nic/hamlyn/ticket.hpp"
#include "sys/status.hpp"

namespace hpam::deposit {

using ticket = nic::hamlyn::ticket;
using notification = nic::hamlyn::notification;

// The purpose in a deposit card's segment name (sys::segment_name).
inline constexpr const char* segment_purpose = "deposit";

struct setup {
  std::string job;                    // job id, same in every process
  int nprocs = 1;                     // processes in the job
  int my_proc = 0;                    // this process
  bool cross_memory = true;           // use/accept process_vm_writev/readv; false: packets
  uint32_t packet_size = 65536;       // bytes per Hamlyn packet, header included (large packets
                                      // mean few process_vm_writev calls per put)
  uint32_t inbound_packets = 32;      // inbound FIFO buffers (fallback path), power of two
  uint64_t card_memory = 16u << 20;   // bytes for allocate_memory and the connection table
  uint32_t max_registrations = 4096;  // slots: registrations alive at once (Open MPI's
                                      // osc/rdma takes one per window, two on a node's first rank)
  uint32_t max_operations = 1024;     // operations in flight with a handle
  uint32_t max_connections = 64;      // hybrid deposit connections (destination end)
  uint64_t attach_timeout_ms = nic::default_attach_timeout_ms;  // how long attach_peer waits
  uint32_t batch_limit = 1024;  // puts and gets up to this size into another process's
                                // private memory by cross-memory attach wait and go
                                // together (one system call per destination) at the next
                                // progress, flush or full batch; 0: each at once (at most
                                // 4096; the work queue keeps a copy room this large per
                                // entry: 1 MiB at 1024)
};

enum class op_state : uint8_t { pending, sent, error };
enum class atomic_op : uint8_t { add, bit_and, bit_or, bit_xor, swap, compare_swap };
enum class atomic_width : uint8_t { w32 = 4, w64 = 8 };

// The hybrid deposit operation an atomic is (none for a value outside atomic_op).
constexpr hybrid_code code_for(atomic_op op) {
  switch (op) {
    case atomic_op::add:
      return hybrid_code::fetch_add;
    case atomic_op::bit_and:
      return hybrid_code::fetch_and;
    case atomic_op::bit_or:
      return hybrid_code::fetch_or;
    case atomic_op::bit_xor:
      return hybrid_code::fetch_xor;
    case atomic_op::swap:
      return hybrid_code::swap;
    case atomic_op::compare_swap:
      return hybrid_code::compare_swap;
  }
  return hybrid_code::none;
}

struct op_handle {
  uint32_t index = ~0u;     // operation record
  uint32_t generation = 0;  // its generation when issued
};
// The index of a handle whose operation completed within the call (no record).
inline constexpr uint32_t completed_index = 0xFFFFFFFEu;
inline bool completed(op_handle h) {
  return h.index == completed_index;
}
// A put's handle names its message in the send terminus, with no record:
// put_index | the sequence's high bits, and the low bits as the generation.
inline constexpr uint32_t put_index = 0x80000000u;

class endpoint {
 public:
  explicit endpoint(const setup& s);
  ~endpoint();
  endpoint(const endpoint&) = delete;
  endpoint& operator=(const endpoint&) = delete;

  void attach_peer(int proc);
  void attach_all();
  int my_proc() const { return my_proc_; }
  int nprocs() const { return nprocs_; }
  bool cross_memory_to(int proc) const { return card_.cross_memory_to(proc); }

  // (a) and (d)
  status register_memory(void* base, size_t len, ticket& out);
  status allocate_memory(size_t len, void*& addr, ticket& out);
  status revoke(const ticket& t);
  status deregister(const ticket& t);
  // Registrations alive now (slots in use; at most setup::max_registrations).
  uint32_t registrations() const;

  // (b) and (c). h may be null: the operation is then fire-and-forget.
  status put(const void* src, size_t len, const ticket& t, uint64_t offset, op_handle* h);
  status get(void* dst, size_t len, const ticket& t, uint64_t offset, op_handle* h);
  // A get that travels as a packet whatever the route, unchecked here: its
  // answer (the bytes, or the owner's refusal) comes after the owner served
  // every packet this process sent it before. A mark behind puts that went
  // as packets, whose ticket the owner may refuse.
  status get_behind_packets(void* dst, size_t len, const ticket& t, uint64_t offset, op_handle* h);
  status atomic(atomic_op op, atomic_width w, const ticket& t, uint64_t offset, uint64_t operand,
                uint64_t compare, uint64_t* fetched, op_handle* h);

  // (e)
  status put_now(const void* src, size_t len, const ticket& t, uint64_t offset);
  status get_now(void* dst, size_t len, const ticket& t, uint64_t offset);
  // get_now handing the bytes to take(arg, data, len) where they are, the
  // slot held meanwhile (a UCX unpack callback: no copy in between).
  status get_now_to(void (*take)(void*, const void*, size_t), void* arg, size_t len,
                    const ticket& t, uint64_t offset);
  // Inline (below): the C API's entry runs it without a further call.
  status atomic_now(atomic_op op, atomic_width w, const ticket& t, uint64_t offset,
                    uint64_t operand, uint64_t compare, uint64_t* fetched);

  // Hybrid deposit.
  status open_connection(int source, const ticket& endpoint_ticket, uint32_t readable,
                         uint32_t writable, connection_ticket& out);
  status set_register(const connection_ticket& ct, uint32_t reg,
                      uint64_t value);                                     // destination side
  uint64_t get_register(const connection_ticket& ct, uint32_t reg) const;  // destination side
  status close_connection(const connection_ticket& ct);
  status hybrid(const connection_ticket& ct, const hybrid_op& op, const void* data, uint32_t len,
                void* out, uint32_t out_len, uint64_t* fetched, op_handle* h);
  uint32_t max_hybrid_data() const;  // data bytes one hybrid operation may carry

  // Completion and progress.
  op_state test(op_handle h, status* error = nullptr);  // frees the handle once not pending
  status wait(op_handle h, uint64_t timeout_ms = 60'000);
  void progress();
  void poll();  // progress(), but a growing batch of gets waits (above)
  // Whether progress() has anything to do, asked inline (no call): local
  // work (work_: set where an operation queues work, recomputed at the end
  // of every progress), a packet published in my inbound FIFO, or one
  // waiting there to be served again. A caller that skips progress() while
  // it is true does nothing less than progress() would have.
  bool quiet() const { return work_ == 0 && !card_.receiver().inbound_waiting(); }
  // The words quiet() reads, for the same test made where this class is not
  // seen (the C API's hpam_dep_quiet_t: the BTL's and UCX's progress):
  // quiet is *work == 0, !*deferred, and the sequence word (the first 8
  // bytes) of cell (*cursor & mask) << shift of `cells` not *cursor + 1.
  struct quiet_words {
    const uint32_t* work;
    const bool* deferred;
    const uint64_t* cursor;
    const std::byte* cells;
    uint64_t mask;
    uint32_t shift;
  };
  quiet_words quiet_bind() const;
  // Batches of gets carried out (one process_vm_readv per destination each).
  uint64_t get_batches() const { return get_batches_; }
  // Puts longer than a batch deposited as one piece, past the work queue (put).
  uint64_t whole_puts() const { return whole_puts_; }
  // Lone puts carried out within the call, past the work queue (put).
  uint64_t lone_puts() const { return lone_puts_; }
  // Moves whenever an operation with a handle may have stopped pending (a
  // record finished, or the send terminus's completion word moved): a
  // caller holding many handles tests them only when it moved.
  uint64_t events() const { return finished_ + card_.terminus().completion_word(); }
  bool next_notification(notification& n);  // conditional notifications, Hamlyn arrivals

  nic::hamlyn::card& card() { return card_; }
  const nic::hamlyn::card& card() const { return card_; }
  uint64_t completed_remote_ops() const { return served_; }  // operations this process served

 private:
  struct op_record;
  struct registration;
  struct pending_reply;
  enum class route : uint8_t { local_pointer, cross_memory, packets };
  status route_for(const ticket& t, uint64_t offset, uint64_t len, route& r, std::byte*& ptr,
                   uint64_t& address);
  // put's deposit in one piece within the call (a long or a lone put,
  // deposit.cpp); false: the put takes the work queue.
  bool put_whole(const void* src, size_t len, const ticket& t, uint64_t offset, op_handle* h,
                 status& st);
  status remote_op(uint32_t slot, uint64_t key, uint32_t connection, const hybrid_op& op,
                   const void* data, uint32_t len, void* out, uint32_t out_len, uint64_t* fetched,
                   int dest, op_handle* h);
  status direct(const ticket& t, uint64_t offset, uint64_t len, std::byte*& ptr);
  template <class T>
  status atomic_word(hybrid_code code, const ticket& t, uint64_t offset, T operand, T compare,
                     uint64_t* fetched);
  status hold_direct(const ticket& t, uint64_t offset, uint64_t len, std::byte*& ptr,
                     uint64_t& address);
  void drop_direct(const ticket& t);
  status start_get_packets(const ticket& t, uint64_t offset, void* dst, size_t len, op_handle* h);
  op_record* new_get(const ticket& t, uint64_t offset, void* dst, size_t len, op_handle* h);
  void request_get(op_record& r);
  bool batches_get(const ticket& t, uint64_t offset, size_t len) const;
  void run_batched_gets();
  void run_gets_from(int dest, size_t first);
  op_record* new_op(op_handle* h);
  void finish(op_record& r, status st);
  bool post_request(op_record& r);
  static bool on_operation(void* ctx, nic::hamlyn::card& c, const nic::hamlyn::packet_header& h,
                           const std::byte* payload);
  static bool on_reply(void* ctx, nic::hamlyn::card& c, const nic::hamlyn::packet_header& h,
                       const std::byte* payload);
  bool serve_operation(const nic::hamlyn::packet_header& h, const std::byte* payload);
  void take_reply(const nic::hamlyn::packet_header& h, const std::byte* payload);
  // Where a process's connection records are, once found (records null until then).
  struct connection_table {
    connection_record* records = nullptr;
    uint32_t count = 0;
  };
  void publish_connection_table();
  connection_record* connection_at(int proc, uint32_t index) const;
  bool find_connection_table(int proc, connection_table& t) const;
  void raise(int proc, const connection_record& c, uint32_t index, uint64_t word);

  int my_proc_;
  int nprocs_;
  nic::hamlyn::card card_;
  std::vector<op_record> ops_;
  std::vector<uint32_t> free_ops_;
  std::vector<uint32_t> waiting_;       // ops whose request packet waits for room
  std::vector<uint32_t> batched_gets_;  // get ops waiting for their batch (~0u: carried out)
  uint32_t put_run_ = 0;                // puts of up to a batch issued since the last flush point
  bool lone_put_ = false;               // the last run of them was one put
  uint32_t get_run_ = 0;     // batchable gets issued since the waiting ones were carried out
  bool lone_get_ = false;    // the last run of them was one get
  bool get_posted_ = false;  // a batchable get was issued since the last poll or progress
  bool stream_gets_ = true;  // poll lets a growing batch wait (the last one held more than one)
  uint8_t probe_ = 0;        // polls of batches of one left before one waits (poll())
  static constexpr uint8_t probe_every = 64;
  uint64_t get_batches_ = 0;
  uint64_t whole_puts_ = 0;
  uint64_t lone_puts_ = 0;
  uint64_t finished_ = 0;           // records finished (events())
  uint32_t work_ = 0;               // 0: nothing local for step (quiet())
  void step(bool run_gets);         // progress and poll
  void done_at_once(op_handle* h);  // the operation completed within the call
  op_state test_put(op_handle h, status* error) const;
  std::vector<uint32_t> batch_ops_;                // run_gets_from's scratch: the ops it reads for,
  std::vector<iovec> batch_local_, batch_remote_;  // and their pieces (max_batch each)
  struct batch_piece {     // one remote piece of a batch of gets (deposit_gets.cpp)
    uint32_t slot;         // the registration its entries are in
    int32_t scratch_page;  // read into this page of batch_scratch_, or -1: straight
    uint32_t first;        // its first entry (index into batch_ops_)
    uint64_t lo, hi;       // remote [lo, hi)
  };
  static constexpr uint32_t scratch_pages = 16;  // pieces read into scratch per batch
  std::vector<batch_piece> batch_pieces_;        // max_batch
  std::vector<uint32_t> batch_from_;      // [entry]: its bytes' offset in batch_scratch_, or ~0u
  std::vector<std::byte> batch_scratch_;  // scratch_pages pages
  void add_piece(uint32_t k, uint32_t slot, uint64_t address, uint32_t& pieces, uint32_t& pages);
  std::vector<registration> registrations_;  // by slot
  uint32_t max_connections_;
  uint32_t batch_limit_;                          // setup::batch_limit
  mutable std::vector<connection_table> tables_;  // [proc]: found on first use
  std::vector<std::byte> reply_scratch_;          // one packet's payload for answers
  std::vector<pending_reply> pending_;            // answers waiting for room at their requester
  uint32_t pending_count_ = 0;                    // how many of pending_ are in use
  bool flush_replies();
  uint64_t served_ = 0;
  // [proc]: the last ticket (slot, generation, key) found to name private
  // memory of proc, whose owner executes atomics on it (key 0: none yet).
  struct owner_executes {
    uint32_t slot = 0;
    uint32_t generation = 0;
    uint64_t key = 0;
  };
  std::vector<owner_executes> owner_executes_;
  bool owner_executes_atomics(const ticket& t) const {  // t.node < nprocs_ (the caller checks)
    const owner_executes& o = owner_executes_[t.node];
    return o.key == t.protection_key && o.slot == t.slot && o.generation == t.generation;
  }
};

// [offset, offset+len) of t held and addressable here (card memory, or my
// own process's): ok with ptr (the caller unresolves), a refusal of the
// checks, or not_supported (nothing held) for memory reached otherwise.
[[gnu::always_inline]] inline status endpoint::direct(const ticket& t, uint64_t offset,
                                                      uint64_t len, std::byte*& ptr) {
  if (t.node >= static_cast<uint32_t>(nprocs_) || offset > t.range || len > t.range - offset)
    return status::invalid_argument;
  const nic::hamlyn::card_view& v = card_.view(static_cast<int>(t.node));
  if (!v.attached) return status::invalid_argument;
  const bool mine = static_cast<int>(t.node) == my_proc_;
  if (!mine && !(t.slot < v.geo.slot_count &&  // (a peek: resolve reads the slot held)
                 v.slots[t.slot].memory == static_cast<uint32_t>(nic::hamlyn::area_memory::card)))
    return status::not_supported;
  card_.terminus().kick();  // what waits in the work queue takes effect first
  uint64_t address = 0;
  const status st = card_.receiver().resolve_direct(v, t.slot, t.protection_key, t.offset + offset,
                                                    len, ptr, address);
  if (!is_ok(st) || ptr) return st;  // the checks refused it, or card memory
  if (mine) {
    ptr = reinterpret_cast<std::byte*>(address);
    return status::ok;
  }
  card_.receiver().unresolve_direct(v, t.slot);  // set up again meanwhile, over private memory
  return status::not_supported;
}

// An atomic within the call on a T: the checks of every direct deposit
// (direct: the ticket's range, the card attached, the slot held, its state,
// generation, key and bounds), the word aligned, then one CPU atomic on it
// and the hold let go. Nothing is built or interpreted (execute's register,
// mode and permission checks concern connections: an atomic by ticket has
// none).
template <class T>
[[gnu::always_inline]] inline status endpoint::atomic_word(hybrid_code code, const ticket& t,
                                                           uint64_t offset, T operand, T compare,
                                                           uint64_t* fetched) {
  std::byte* ptr = nullptr;
  status st = direct(t, offset, sizeof(T), ptr);
  if (!is_ok(st)) return st;
  T old = 0;
  if (reinterpret_cast<uintptr_t>(ptr) & (sizeof(T) - 1))
    st = status::invalid_argument;  // held, so let go below; nothing counted (as execute)
  else
    old = memory_atomic<T>(code, reinterpret_cast<T*>(ptr), operand, compare);
  card_.receiver().unresolve_direct(card_.view(static_cast<int>(t.node)), t.slot);
  if (is_ok(st) && fetched) *fetched = old;
  return st;
}

// Inline, so that the C API's entry (UCX's atomics into card memory) is one
// call: atomic_word for the width.
[[gnu::always_inline]] inline status endpoint::atomic_now(atomic_op op, atomic_width w,
                                                          const ticket& t, uint64_t offset,
                                                          uint64_t operand, uint64_t compare,
                                                          uint64_t* fetched) {
  const hybrid_code code = code_for(op);
  if (!is_memory_atomic(code)) return status::invalid_argument;
  if (w == atomic_width::w64)
    return atomic_word<uint64_t>(code, t, offset, operand, compare, fetched);
  if (w == atomic_width::w32)
    return atomic_word<uint32_t>(code, t, offset, static_cast<uint32_t>(operand),
                                 static_cast<uint32_t>(compare), fetched);
  return status::invalid_argument;
}

}  // namespace hpam::deposit
