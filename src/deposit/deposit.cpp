// deposit::endpoint: registration, put/get/atomics by ticket, handles.
// Operations served for peers (packets) and hybrid connections:
// deposit_remote.cpp.
#include "deposit/deposit.hpp"

#include <sys/uio.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <thread>

#include "deposit/op_record.hpp"
#include "nic/hamlyn/cross_memory.hpp"
#include "sys/clock.hpp"

namespace hpam::deposit {
namespace {

nic::hamlyn::card_config card_config_for(const setup& s) {
  nic::hamlyn::card_config c;
  c.job = s.job;
  c.nprocs = s.nprocs;
  c.my_proc = s.my_proc;
  c.what = segment_purpose;
  c.slot_count = s.max_registrations;
  c.metadata_entries = s.max_registrations;
  c.notify_capacity = 1024;
  c.packet_size = s.packet_size;
  c.rx_packets = s.inbound_packets;
  c.area_bytes = s.card_memory + uint64_t{s.max_connections} * sizeof(connection_record) + 4096;
  c.resident_area = false;  // memory for users: its pages come as they are used
  c.cross_memory = s.cross_memory;
  c.work_queue_entries = nic::hamlyn::max_batch;  // a batch per destination fills the queue at most
  c.batch_limit = s.batch_limit;
  // A batched message is copied into its entry's room: the room fits the largest.
  c.direct_io_limit = std::max(c.direct_io_limit, s.batch_limit);
  c.attach_timeout_ms = s.attach_timeout_ms;
  return c;
}

hybrid_op atomic_as_hybrid(atomic_op op, atomic_width w, uint64_t operand, uint64_t compare);

// One piece by cross-memory attach for a deposit within the call: the whole
// of it in one system call as a rule, what a partial call left by the
// helpers of nic/hamlyn/cross_memory.hpp (system_error: the kernel refused).
status write_piece(pid_t pid, const void* src, size_t len, uint64_t remote) {
  const iovec l{const_cast<void*>(src), len}, r{reinterpret_cast<void*>(remote), len};
  const ssize_t w = process_vm_writev(pid, &l, 1, &r, 1, 0);
  if (w == static_cast<ssize_t>(len)) return status::ok;
  if (w <= 0) return status::system_error;
  const iovec rest{const_cast<char*>(static_cast<const char*>(src)) + w, len - w};
  return nic::hamlyn::cross_memory_write(pid, &rest, 1, remote + w);
}

status read_piece(pid_t pid, void* dst, size_t len, uint64_t remote) {
  const iovec l{dst, len}, r{reinterpret_cast<void*>(remote), len};
  const ssize_t got = process_vm_readv(pid, &l, 1, &r, 1, 0);
  if (got == static_cast<ssize_t>(len)) return status::ok;
  if (got <= 0) return status::system_error;
  return nic::hamlyn::cross_memory_read(pid, static_cast<char*>(dst) + got, len - got,
                                        remote + got);
}

// The hybrid deposit operation an atomic is (direct addressing at its operand).
hybrid_op atomic_as_hybrid(atomic_op op, atomic_width w, uint64_t operand, uint64_t compare) {
  hybrid_op o{};
  o.code = code_for(op);
  o.mode = addressing::direct;
  o.width = static_cast<uint8_t>(w);
  o.value = operand;
  o.compare = compare;
  return o;
}

}  // namespace

endpoint::endpoint(const setup& s)
    : my_proc_(s.my_proc),
      nprocs_(s.nprocs),
      card_(card_config_for(s)),
      max_connections_(s.max_connections),
      batch_limit_(s.batch_limit) {
  if (s.max_operations == 0 || s.max_connections == 0)
    throw std::invalid_argument("hpam deposit: max_operations and max_connections must be >= 1");
  ops_.resize(s.max_operations);
  for (uint32_t i = s.max_operations; i-- > 0;) free_ops_.push_back(i);
  waiting_.reserve(s.max_operations);
  batched_gets_.reserve(s.max_operations);
  batch_ops_.resize(nic::hamlyn::max_batch);
  batch_local_.resize(nic::hamlyn::max_batch);
  batch_remote_.resize(nic::hamlyn::max_batch);
  batch_pieces_.resize(nic::hamlyn::max_batch);
  batch_from_.resize(nic::hamlyn::max_batch);
  batch_scratch_.resize(scratch_pages * 4096);
  registrations_.resize(s.max_registrations);
  owner_executes_.resize(static_cast<size_t>(nprocs_));
  publish_connection_table();
  reply_scratch_.resize(card_.packet_data_bytes());
  pending_.resize(pending_replies);
  for (auto& p : pending_) p.bytes.resize(card_.packet_data_bytes());
  card_.receiver().set_handler(nic::hamlyn::packet_kind::operation, &endpoint::on_operation, this);
  card_.receiver().set_handler(nic::hamlyn::packet_kind::reply, &endpoint::on_reply, this);
}

endpoint::~endpoint() = default;

// My connection table: its header, then the records, in one allocation of
// card memory; peers find it through the card header.
void endpoint::publish_connection_table() {
  const uint64_t bytes =
      sizeof(connection_table_header) + uint64_t{max_connections_} * sizeof(connection_record);
  uint64_t at = 0;
  if (!is_ok(card_.slots().allocate_area(bytes, at)))
    throw std::runtime_error("hpam deposit: card memory too small for the connection table");
  connection_table_header h{};
  h.prefix = {connection_table_magic, connection_table_version, sizeof h};
  h.count = max_connections_;
  h.record_size = sizeof(connection_record);
  h.records_offset = at + sizeof h;
  std::memcpy(card_.slots().area_address(at), &h, sizeof h);
  tables_.assign(static_cast<size_t>(nprocs_), connection_table{});
  tables_[my_proc_] = {
      reinterpret_cast<connection_record*>(card_.slots().area_address(h.records_offset)),
      max_connections_};
  card_.publish_client(at, connection_table_magic);
}

void endpoint::attach_peer(int proc) {
  card_.attach_peer(proc);
}
void endpoint::attach_all() {
  card_.attach_all();
}

// --- registration (setup code) -------------------------------------------

status endpoint::register_memory(void* base, size_t len, ticket& out) {
  if (!base || len == 0) return status::invalid_argument;
  nic::hamlyn::slot_spec s;
  s.memory = nic::hamlyn::area_memory::process;
  s.base = reinterpret_cast<uint64_t>(base);
  s.bound = len;
  s.metadata_count = 1;
  uint32_t slot;
  const status st = card_.slots().create_slot(s, slot);
  if (!is_ok(st)) return st;
  registrations_[slot] = registration{true, false, 0};
  out = card_.slots().make_ticket(slot, 0, 0, len, false);
  return status::ok;
}

status endpoint::allocate_memory(size_t len, void*& addr, ticket& out) {
  uint64_t offset;
  status st = card_.slots().allocate_area(len, offset);
  if (!is_ok(st)) return st;
  nic::hamlyn::slot_spec s;
  s.memory = nic::hamlyn::area_memory::card;
  s.base = offset;
  s.bound = len;
  s.metadata_count = 1;
  uint32_t slot;
  st = card_.slots().create_slot(s, slot);
  if (!is_ok(st)) {
    card_.slots().free_area(offset);
    return st;
  }
  registrations_[slot] = registration{true, true, offset};
  addr = card_.slots().area_address(offset);
  out = card_.slots().make_ticket(slot, 0, 0, len, false);
  return status::ok;
}

status endpoint::revoke(const ticket& t) {
  if (t.node != static_cast<uint32_t>(my_proc_) || t.slot >= registrations_.size() ||
      !registrations_[t.slot].in_use)
    return status::invalid_argument;
  return card_.slots().revoke(t.slot);
}

status endpoint::deregister(const ticket& t) {
  if (t.node != static_cast<uint32_t>(my_proc_) || t.slot >= registrations_.size() ||
      !registrations_[t.slot].in_use)
    return status::invalid_argument;
  const status st = card_.slots().release_slot(t.slot);
  if (!is_ok(st)) return st;
  if (registrations_[t.slot].card_memory)
    card_.slots().free_area(registrations_[t.slot].area_offset);
  registrations_[t.slot] = registration{};
  return status::ok;
}

uint32_t endpoint::registrations() const {
  uint32_t n = 0;
  for (const registration& r : registrations_) n += r.in_use ? 1 : 0;
  return n;
}

// --- operation records ---------------------------------------------------

endpoint::op_record* endpoint::new_op(op_handle* h) {
  if (free_ops_.empty()) return nullptr;
  const uint32_t i = free_ops_.back();
  free_ops_.pop_back();
  op_record& r = ops_[i];
  const uint32_t gen = r.generation + 1;
  r = op_record{};
  r.generation = gen;
  r.in_use = true;
  r.user_handle = h != nullptr;
  r.state = op_state::pending;
  if (h) *h = op_handle{i, gen};
  return &r;
}

void endpoint::finish(op_record& r, status st) {
  r.state = is_ok(st) ? op_state::sent : op_state::error;
  finished_++;
  r.error = st;
  if (!r.user_handle) {
    r.in_use = false;
    free_ops_.push_back(static_cast<uint32_t>(&r - ops_.data()));
  }
}

void endpoint::done_at_once(op_handle* h) {
  if (h) *h = op_handle{completed_index, 0};
}

// A put's state, from the send terminus (put_index handles).
op_state endpoint::test_put(op_handle h, status* error) const {
  const nic::hamlyn::send_handle sh{(uint64_t{h.index & ~put_index} << 32) | h.generation};
  status e = status::ok;
  switch (card_.terminus().state(sh, &e)) {
    case nic::hamlyn::send_state::pending:
      return op_state::pending;
    case nic::hamlyn::send_state::sent:
      return op_state::sent;
    case nic::hamlyn::send_state::error:
      break;
  }
  if (error) *error = e;
  return op_state::error;
}

op_state endpoint::test(op_handle h, status* error) {
  if (h.index >= put_index && h.index != ~0u)
    return completed(h) ? op_state::sent : test_put(h, error);
  if (h.index >= ops_.size() || !ops_[h.index].in_use || ops_[h.index].generation != h.generation) {
    if (error) *error = status::invalid_argument;
    return op_state::error;
  }
  op_record& r = ops_[h.index];
  if (r.state == op_state::pending) return op_state::pending;
  if (error) *error = r.error;
  const op_state s = r.state;
  r.in_use = false;
  free_ops_.push_back(h.index);
  return s;
}

status endpoint::wait(op_handle h, uint64_t timeout_ms) {
  const uint64_t deadline = sys::clock::monotonic_ns() + timeout_ms * 1'000'000ull;
  status e = status::ok;
  for (uint32_t spins = 0;; ++spins) {
    const op_state s = test(h, &e);
    if (s != op_state::pending) return s == op_state::sent ? status::ok : e;
    progress();
    if ((spins & 63) == 63) {  // blocking call: let the process we wait for run
      if (sys::clock::monotonic_ns() > deadline) return status::would_block;
      std::this_thread::yield();
    }
  }
}

// --- put, get, atomics ---------------------------------------------------

// Where (t, offset, len) is and how to reach it. On local_pointer and
// cross_memory the slot is held (receiving_interface::resolve); the caller unresolves.
status endpoint::route_for(const ticket& t, uint64_t offset, uint64_t len, route& r,
                           std::byte*& ptr, uint64_t& address) {
  if (t.node >= static_cast<uint32_t>(nprocs_) || offset > t.range || len > t.range - offset)
    return status::invalid_argument;
  const nic::hamlyn::card_view& v = card_.view(static_cast<int>(t.node));
  if (!v.attached) return status::invalid_argument;
  const status st =
      card_.receiver().resolve(v, t.slot, t.protection_key, t.offset + offset, len, ptr, address);
  if (!is_ok(st)) return st;
  if (ptr) {
    r = route::local_pointer;
  } else if (static_cast<int>(t.node) == my_proc_) {
    ptr = reinterpret_cast<std::byte*>(address);
    r = route::local_pointer;
  } else if (v.cross_memory) {
    r = route::cross_memory;
  } else {
    card_.receiver().unresolve(v, t.slot);
    r = route::packets;
  }
  return status::ok;
}

// [offset, offset+len) of t held for a deposit carried out within the call
// and let go before the next (drop_direct): in my hold line on t's card
// where the card offers one (receiving_interface::resolve_direct: plain
// stores, no locked instruction), else by the slot's users; after the
// slot's checks (state, mode, key, bounds). ptr: card memory or my own;
// else the owner's address, for cross-memory attach or packets.
[[gnu::always_inline]] inline status endpoint::hold_direct(const ticket& t, uint64_t offset,
                                                           uint64_t len, std::byte*& ptr,
                                                           uint64_t& address) {
  if (t.node >= static_cast<uint32_t>(nprocs_) || offset > t.range || len > t.range - offset)
    return status::invalid_argument;
  const nic::hamlyn::card_view& v = card_.view(static_cast<int>(t.node));
  if (!v.attached) return status::invalid_argument;
  const status st = card_.receiver().resolve_direct(v, t.slot, t.protection_key, t.offset + offset,
                                                    len, ptr, address);
  if (is_ok(st) && !ptr && static_cast<int>(t.node) == my_proc_)
    ptr = reinterpret_cast<std::byte*>(address);
  return st;
}

[[gnu::always_inline]] inline void endpoint::drop_direct(const ticket& t) {
  card_.receiver().unresolve_direct(card_.view(static_cast<int>(t.node)), t.slot);
}

// A put deposited as one piece within the call, as a get of any length is
// read (route_for): a put longer than a batch takes, or a lone one (the last
// run of puts between two flush points was one put), with nothing queued
// before it in the terminus (so it keeps its place in the order), into
// memory of a normal slot with no notification asked. One hold of the slot
// (in my hold line where the card offers one) and its checks (state, mode,
// key, bounds), one process_vm_writev (or a copy), its packets counted as
// the engine's would be. The card's DMA engine moves a message packet by
// packet on its own; the emulation's engine made each 64 KiB packet one
// process_vm_writev (17 for a MiB), and a lone put cost the work queue's
// machinery for a batch of one (issue 23). A slot the peek finds in another
// mode, or a metadata index its slot lacks, takes the work queue and its
// checks, as does a put whose cross-memory write the kernel refuses.
bool endpoint::put_whole(const void* src, size_t len, const ticket& t, uint64_t offset,
                         op_handle* h, status& st) {
  if (!card_.terminus().idle() || t.metadata_index == nic::hamlyn::fast_index ||
      (t.flags & nic::hamlyn::ticket_flags::notify) || t.node >= static_cast<uint32_t>(nprocs_))
    return false;
  const nic::hamlyn::card_view& v = card_.view(static_cast<int>(t.node));
  if (!v.attached || t.slot >= v.geo.slot_count) return false;
  const nic::hamlyn::slot& peek = v.slots[t.slot];  // routing only: resolve checks what counts
  if (peek.mode != static_cast<uint32_t>(nic::hamlyn::slot_mode::normal) ||
      t.metadata_index >= peek.metadata_count)
    return false;
  std::byte* ptr = nullptr;
  uint64_t address = 0;
  st = hold_direct(t, offset, len, ptr, address);
  if (!is_ok(st)) return true;  // refused and counted by the receiving interface
  if (ptr) {
    if (len) std::memcpy(ptr, src, len);
  } else if (!v.cross_memory) {
    st = status::system_error;  // packets: the work queue
  } else if (len) {
    st = write_piece(v.pid, src, len, address);
  }
  if (is_ok(st)) {  // counted as the engine's packets would be
    const uint64_t per_packet = card_.packet_data_bytes();
    v.header->counters.packets.fetch_add(
        len <= per_packet ? 1 : (len + per_packet - 1) / per_packet, std::memory_order_relaxed);
  }
  drop_direct(t);  // after the counting, as arrive's
  if (st == status::system_error) return false;
  if (is_ok(st)) {
    ++(len > batch_limit_ ? whole_puts_ : lone_puts_);
    done_at_once(h);
  }
  return true;
}

// Puts of up to a batch into another process's private memory wait for their
// batch in the send terminus, but for a lone one (put_whole); longer ones go
// in one piece when nothing waits before them.
status endpoint::put(const void* src, size_t len, const ticket& t, uint64_t offset, op_handle* h) {
  work_ = 1;  // its run counts, its entry may wait in the work queue
  bool at_once = true;
  if (len <= batch_limit_) {
    at_once = lone_put_ && put_run_ == 0;
    if (put_run_ != ~0u) put_run_++;
  }
  if (status st; at_once && put_whole(src, len, t, offset, h, st)) return st;
  iovec v{const_cast<void*>(src), len};
  nic::hamlyn::message m;
  m.gather = &v;
  m.gather_count = 1;
  m.offset = offset;
  nic::hamlyn::send_handle sh;
  nic::hamlyn::send_terminus& terminus = card_.terminus();
  const status st = terminus.send(t, m, sh);
  if (!is_ok(st)) return st;
  if (sh.sequence < terminus.completion_word()) {  // carried out (or refused) at once
    status why = status::ok;
    if (terminus.state(sh, &why) == nic::hamlyn::send_state::error) return why;
    done_at_once(h);
    return status::ok;
  }
  if (h)
    *h = op_handle{put_index | static_cast<uint32_t>(sh.sequence >> 32),
                   static_cast<uint32_t>(sh.sequence)};
  return status::ok;
}

status endpoint::get(void* dst, size_t len, const ticket& t, uint64_t offset, op_handle* h) {
  if (free_ops_.empty()) return status::would_block;
  work_ = 1;                          // its run counts, it may wait for its batch
  if (batches_get(t, offset, len)) {  // checked when its batch is carried out
    const bool lone = lone_get_ && get_run_ == 0 && batched_gets_.empty();  // goes at once
    if (get_run_ != ~0u) get_run_++;
    get_posted_ = true;
    if (!lone) {
      batched_gets_.push_back(static_cast<uint32_t>(new_get(t, offset, dst, len, h) - ops_.data()));
      if (batched_gets_.size() >= nic::hamlyn::max_batch) run_batched_gets();
      return status::ok;
    }
  }
  card_.terminus().kick();  // waiting puts take effect first
  std::byte* ptr = nullptr;
  uint64_t address = 0;
  const status st = hold_direct(t, offset, len, ptr, address);
  if (!is_ok(st)) return st;  // errors are returned here, with no handle
  status done = status::ok;
  if (ptr) {
    if (len) std::memcpy(dst, ptr, len);
  } else if (!card_.view(static_cast<int>(t.node)).cross_memory) {
    done = status::system_error;  // packets
  } else if (len) {
    done = read_piece(card_.view(static_cast<int>(t.node)).pid, dst, len, address);
  }
  drop_direct(t);
  if (done == status::system_error) return start_get_packets(t, offset, dst, len, h);
  if (is_ok(done)) done_at_once(h);
  return done;
}

status endpoint::get_behind_packets(void* dst, size_t len, const ticket& t, uint64_t offset,
                                    op_handle* h) {
  if (free_ops_.empty()) return status::would_block;
  if (t.node >= static_cast<uint32_t>(nprocs_) || !card_.view(static_cast<int>(t.node)).attached)
    return status::invalid_argument;
  card_.terminus().kick();  // waiting puts go first
  return start_get_packets(t, offset, dst, len, h);
}

// A record for a get of (t, offset, len) into dst: where the bytes go and
// what its request names (a free record exists: the caller checked).
endpoint::op_record* endpoint::new_get(const ticket& t, uint64_t offset, void* dst, size_t len,
                                       op_handle* h) {
  op_record* r = new_op(h);
  r->is_get = true;
  r->local = static_cast<std::byte*>(dst);
  r->length = len;
  r->dest = static_cast<int>(t.node);
  r->request.destination = t.node;
  r->request.slot = t.slot;
  r->request.protection_key = t.protection_key;
  r->request.offset = t.offset + offset;
  return r;
}

status endpoint::start_get_packets(const ticket& t, uint64_t offset, void* dst, size_t len,
                                   op_handle* h) {
  if (len > 0xFFFFFFFFull) return status::invalid_argument;
  request_get(*new_get(t, offset, dst, len, h));
  return status::ok;
}

// A get record's read request (destination, slot, key and offset set) to
// its owner's inbound FIFO, now or when there is room.
void endpoint::request_get(op_record& r) {
  nic::hamlyn::packet_header& q = r.request;
  q.source = static_cast<uint32_t>(my_proc_);
  q.length = static_cast<uint32_t>(r.length);
  q.flags = nic::hamlyn::encode_flags(nic::hamlyn::packet_kind::read_request, false);
  q.fast_word = op_id(static_cast<uint32_t>(&r - ops_.data()), r.generation);
  if (!post_request(r)) {
    waiting_.push_back(static_cast<uint32_t>(&r - ops_.data()));
    work_ = 1;
  }
}

status endpoint::atomic(atomic_op op, atomic_width w, const ticket& t, uint64_t offset,
                        uint64_t operand, uint64_t compare, uint64_t* fetched, op_handle* h) {
  if (free_ops_.empty()) return status::would_block;
  card_.terminus().kick();  // waiting puts take effect first
  const hybrid_op o = atomic_as_hybrid(op, w, operand, compare);
  // The same ticket named another process's private memory before: its
  // owner does the operation and checks the slot, the key and the bounds
  // itself, so the slot is not held here (holding it moves the slot's cache
  // line here and back to the owner, who holds it too, on every operation).
  // A slot set up again has a new generation and key, and is looked at anew.
  bool owner_executes = t.node < static_cast<uint32_t>(nprocs_) && owner_executes_atomics(t) &&
                        offset <= t.range && o.width <= t.range - offset;
  std::byte* ptr = nullptr;
  if (!owner_executes) {
    route r;
    uint64_t address = 0;
    const status st = route_for(t, offset, o.width, r, ptr, address);
    if (!is_ok(st)) return st;
    if (r == route::cross_memory)
      card_.receiver().unresolve(card_.view(static_cast<int>(t.node)), t.slot);
    owner_executes = r != route::local_pointer;
    if (owner_executes) owner_executes_[t.node] = {t.slot, t.generation, t.protection_key};
  }
  if (owner_executes) {    // another process's private memory: its owner does it
    hybrid_op remote = o;  // at its area offset
    remote.operand = t.offset + offset;
    return remote_op(t.slot, t.protection_key, no_connection, remote, nullptr, 0, nullptr, 0,
                     fetched, static_cast<int>(t.node), h);
  }
  hybrid_result res;
  const status done = execute(nullptr, target_memory{ptr, o.width}, o, nullptr, 0, nullptr, 0, res);
  card_.receiver().unresolve(card_.view(static_cast<int>(t.node)), t.slot);
  if (is_ok(done) && fetched) *fetched = res.fetched;
  if (is_ok(done)) done_at_once(h);  // errors are returned here, with no handle
  return done;
}

// --- at once (e) ----------------------------------------------------------

status endpoint::put_now(const void* src, size_t len, const ticket& t, uint64_t offset) {
  // A ticket that asks for notification or fast mode needs the arrival's counting.
  if (t.metadata_index == nic::hamlyn::fast_index || (t.flags & nic::hamlyn::ticket_flags::notify))
    return status::not_supported;
  std::byte* ptr = nullptr;
  const status st = direct(t, offset, len, ptr);
  if (!is_ok(st)) return st;
  // A store into card memory, as the CPU's own: no packet, so none counted.
  if (len) std::memcpy(ptr, src, len);
  card_.receiver().unresolve_direct(card_.view(static_cast<int>(t.node)), t.slot);
  return status::ok;
}

status endpoint::get_now(void* dst, size_t len, const ticket& t, uint64_t offset) {
  std::byte* ptr = nullptr;
  const status st = direct(t, offset, len, ptr);
  if (!is_ok(st)) return st;
  if (len) std::memcpy(dst, ptr, len);
  card_.receiver().unresolve_direct(card_.view(static_cast<int>(t.node)), t.slot);
  return status::ok;
}

status endpoint::get_now_to(void (*take)(void*, const void*, size_t), void* arg, size_t len,
                            const ticket& t, uint64_t offset) {
  std::byte* ptr = nullptr;
  const status st = direct(t, offset, len, ptr);
  if (!is_ok(st)) return st;
  take(arg, ptr, len);
  card_.receiver().unresolve_direct(card_.view(static_cast<int>(t.node)), t.slot);
  return status::ok;
}

// Called from progress loops (the BTL's and UCX's ask quiet() first, inline,
// and call it only when that is false): with nothing local to do it looks at
// one word and the inbound FIFO's next cell, and calls nothing.
void endpoint::progress() {
  step(true);
}

// A poll after a get posted since the previous one leaves the batch to grow
// while the gets come as a stream (the last batch carried out by a poll held
// more than one); after a batch of one (a latency loop: post, then poll
// until done) it carries the batch out at once, and only every
// probe_every-th such poll waits once to see whether a stream has begun.
void endpoint::poll() {
  if (get_posted_ && !batched_gets_.empty()) {
    if (!stream_gets_ && --probe_ == 0) stream_gets_ = true;
    if (stream_gets_) return step(false);
  }
  const size_t waiting = batched_gets_.size();
  step(true);
  if (waiting > 1) {
    stream_gets_ = true;
  } else if (waiting == 1 && stream_gets_) {
    stream_gets_ = false;
    probe_ = probe_every;
  }
}

void endpoint::step(bool run_gets) {
  get_posted_ = false;
  if (work_ == 0) {  // nothing local (work_ is set wherever some is queued):
    // what the full step below would do is serve the inbound FIFO, and what
    // serving can leave (an answer pending) sets work_ where it is queued.
    if (card_.receiver().inbound_waiting()) (void)card_.receiver().poll_inbound();
    return;
  }
  if (put_run_ != 0) {  // a flush point: the run of puts ends here
    lone_put_ = put_run_ == 1;
    put_run_ = 0;
  }
  if (run_gets && get_run_ != 0) {  // and the run of gets, with its batch
    lone_get_ = get_run_ == 1;
    get_run_ = 0;
  }
  card_.terminus().kick();  // waiting puts first, then waiting gets
  if (run_gets && !batched_gets_.empty()) run_batched_gets();
  if (pending_count_ != 0) (void)flush_replies();
  while (!waiting_.empty()) {
    if (!post_request(ops_[waiting_.front()])) break;
    waiting_.erase(waiting_.begin());
  }
  if (card_.receiver().inbound_waiting()) (void)card_.receiver().poll_inbound();
  // What the next step would find besides inbound packets (quiet()): runs
  // still counting, a queue the card has not emptied (a destination's FIFO
  // full, the engine's budget), gets waiting for their batch (poll()),
  // replies or requests waiting for room.
  work_ = (put_run_ | get_run_ | pending_count_) != 0 || !card_.terminus().idle() ||
          !batched_gets_.empty() || !waiting_.empty();
}

endpoint::quiet_words endpoint::quiet_bind() const {
  const nic::hamlyn::receiving_interface& r = card_.receiver();
  const sys::cell_fifo& f = card_.view(my_proc_).rx_ready;
  return {&work_,
          r.inbound_deferred(),
          r.inbound_cursor(),
          reinterpret_cast<const std::byte*>(&f.header()) + sizeof(sys::cell_fifo_header),
          f.capacity() - 1,
          static_cast<uint32_t>(__builtin_ctz(f.cell_bytes()))};
}

bool endpoint::next_notification(notification& n) {
  return card_.receiver().receive(0, n);
}

}  // namespace hpam::deposit
