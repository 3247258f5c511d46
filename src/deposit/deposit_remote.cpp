// deposit::endpoint: operations that travel as packets (gets and atomics on
// another process's private memory, hybrid operations on endpoints there),
// the owner's side that serves them when it polls, and hybrid deposit
// connections with their address registers.
#include <cstring>

#include "deposit/deposit.hpp"
#include "deposit/op_record.hpp"
#include "sys/protection_key.hpp"

namespace hpam::deposit {

using nic::hamlyn::packet_header;
using nic::hamlyn::packet_kind;

uint32_t endpoint::max_hybrid_data() const {
  return card_.packet_data_bytes() - static_cast<uint32_t>(sizeof(hybrid_op));
}

bool endpoint::post_request(op_record& r) {
  if (r.is_get) return card_.push_packet(r.dest, r.request, nullptr, 0);
  iovec pieces[2] = {{&r.op, sizeof r.op}, {const_cast<std::byte*>(r.data), r.data_len}};
  return card_.push_packet(r.dest, r.request, pieces, r.data_len ? 2 : 1);
}

status endpoint::remote_op(uint32_t slot, uint64_t key, uint32_t connection, const hybrid_op& op,
                           const void* data, uint32_t len, void* out, uint32_t out_len,
                           uint64_t* fetched, int dest, op_handle* h) {
  if (len > max_hybrid_data() || out_len > card_.packet_data_bytes() - 8)
    return status::invalid_argument;
  op_record* r = new_op(h);
  if (!r) return status::would_block;
  r->fetched = fetched;
  r->local = static_cast<std::byte*>(out);
  r->length = out_len;
  r->dest = dest;
  r->op = op;
  r->data = static_cast<const std::byte*>(data);
  r->data_len = len;
  packet_header& q = r->request;
  q.destination = static_cast<uint32_t>(dest);
  q.source = static_cast<uint32_t>(my_proc_);
  q.slot = slot;
  q.metadata_index = connection;
  q.protection_key = key;
  q.offset = out_len;
  q.length = len;
  q.metadata_length = sizeof(hybrid_op);
  q.flags = nic::hamlyn::encode_flags(packet_kind::operation, false);
  q.fast_word = op_id(static_cast<uint32_t>(r - ops_.data()), r->generation);
  if (!post_request(*r)) {
    waiting_.push_back(static_cast<uint32_t>(r - ops_.data()));
    work_ = 1;
  }
  return status::ok;
}

bool endpoint::on_operation(void* ctx, nic::hamlyn::card&, const packet_header& h,
                            const std::byte* payload) {
  return static_cast<endpoint*>(ctx)->serve_operation(h, payload);
}

bool endpoint::on_reply(void* ctx, nic::hamlyn::card&, const packet_header& h,
                        const std::byte* payload) {
  static_cast<endpoint*>(ctx)->take_reply(h, payload);
  return true;
}

// The owner executes an operation that arrived as a packet, on its own
// memory, and answers [fetched value][read bytes]. If the answer cannot be
// placed in the requester's FIFO right now, nothing is executed and the
// packet is served again at the next poll (operations are not idempotent).
bool endpoint::serve_operation(const packet_header& h, const std::byte* payload) {
  nic::hamlyn::arrival_counters& counters = card_.header().counters;
  if (h.source >= static_cast<uint32_t>(nprocs_) || !card_.attached(static_cast<int>(h.source))) {
    counters.malformed.fetch_add(1, std::memory_order_relaxed);
    return true;
  }
  if (pending_count_ == pending_.size()) return false;  // no room to keep an answer: not now
  hybrid_op op{};
  status st = status::rejected;
  hybrid_result res;
  uint64_t out_len = 0;
  const nic::hamlyn::card_view& me = card_.view(my_proc_);
  if (h.metadata_length == sizeof(hybrid_op)) {
    std::memcpy(&op, payload, sizeof op);
    out_len = op.code == hybrid_code::read ? h.offset : 0;
    if (out_len > reply_scratch_.size() - 8) out_len = 0;
    connection_record* c = nullptr;
    uint32_t slot = h.slot;
    uint64_t key = h.protection_key, from = 0, len = 0;
    if (h.metadata_index != no_connection) {
      c = connection_at(my_proc_, h.metadata_index);
      const bool ok = c && c->connection_key.load(std::memory_order_acquire) == h.protection_key &&
                      (c->source == h.source || c->source == any_source);
      if (!ok) counters.key_rejections.fetch_add(1, std::memory_order_relaxed);
      slot = ok ? c->endpoint_slot : ~0u;
      key = ok ? c->endpoint_key : 0;
      len = slot < me.geo.slot_count ? me.slots[slot].bound : 0;
    } else {
      from = op.operand;
      len = op.width;
      op.operand = 0;
    }
    std::byte* ptr = nullptr;
    uint64_t address = 0;
    if (slot != ~0u && is_ok(card_.receiver().resolve(me, slot, key, from, len, ptr, address))) {
      const target_memory m{ptr ? ptr : reinterpret_cast<std::byte*>(address), len};
      st = execute(c, m, op, payload + sizeof op, h.length, reply_scratch_.data() + 8,
                   static_cast<uint32_t>(out_len), res);
      card_.receiver().unresolve(me, slot);
      if (is_ok(st) && res.notify && c) raise(my_proc_, *c, h.metadata_index, res.notify_word);
    }
  } else {
    counters.malformed.fetch_add(1, std::memory_order_relaxed);
  }
  served_++;
  packet_header r{};
  r.destination = h.source;
  r.source = static_cast<uint32_t>(my_proc_);
  r.flags = nic::hamlyn::encode_flags(packet_kind::reply, false);
  r.fast_word = h.fast_word;
  r.reserved = static_cast<uint64_t>(static_cast<int32_t>(st));
  r.length = static_cast<uint32_t>(8 + (is_ok(st) ? out_len : 0));
  std::memcpy(reply_scratch_.data(), &res.fetched, 8);
  iovec piece{reply_scratch_.data(), r.length};
  if (pending_count_ == 0 && card_.push_packet(static_cast<int>(h.source), r, &piece, 1))
    return true;
  pending_reply& p = pending_[pending_count_++];  // the requester's FIFO is full: later
  work_ = 1;
  p.dest = static_cast<int>(h.source);
  p.header = r;
  std::memcpy(p.bytes.data(), reply_scratch_.data(), r.length);
  return true;
}

bool endpoint::flush_replies() {
  uint32_t sent = 0;
  while (sent < pending_count_) {
    pending_reply& p = pending_[sent];
    iovec piece{p.bytes.data(), p.header.length};
    if (!card_.push_packet(p.dest, p.header, &piece, 1)) break;
    ++sent;
  }
  for (uint32_t i = sent; i < pending_count_; ++i) std::swap(pending_[i - sent], pending_[i]);
  pending_count_ -= sent;
  return pending_count_ == 0;
}

// A reply to one of my operations: match it to the record by index and
// generation; anything else is stale or forged and ignored.
void endpoint::take_reply(const packet_header& h, const std::byte* payload) {
  const uint32_t i = op_index(h.fast_word);
  if (i >= ops_.size() || !ops_[i].in_use || ops_[i].generation != op_generation(h.fast_word) ||
      ops_[i].state != op_state::pending || h.source != static_cast<uint32_t>(ops_[i].dest)) {
    card_.header().counters.malformed.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  op_record& r = ops_[i];
  const auto st = static_cast<status>(static_cast<int32_t>(h.reserved));
  if (!is_ok(st)) {
    finish(r, st);
    return;
  }
  if (r.is_get) {
    if (h.offset > r.length || h.length > r.length - h.offset) {
      finish(r, status::rejected);
      return;
    }
    if (h.length) std::memcpy(r.local + h.offset, payload, h.length);
    r.received += h.length;
    if (r.received >= r.length) finish(r, status::ok);
    return;
  }
  if (h.length < 8) {
    finish(r, status::rejected);
    return;
  }
  uint64_t v;
  std::memcpy(&v, payload, 8);
  if (r.fetched) *r.fetched = v;
  const uint64_t n = std::min<uint64_t>(h.length - 8, r.length);
  if (n) std::memcpy(r.local, payload + 8, n);
  finish(r, status::ok);
}

// --- hybrid deposit connections ------------------------------------------

// proc's connection table, found once through its card header and checked:
// the records must lie inside its card memory.
connection_record* endpoint::connection_at(int proc, uint32_t index) const {
  connection_table& t = tables_[proc];
  if (!t.records && !find_connection_table(proc, t)) return nullptr;
  return index < t.count ? t.records + index : nullptr;
}

bool endpoint::find_connection_table(int proc, connection_table& t) const {
  const nic::hamlyn::card_view& v = card_.view(proc);
  connection_table_header h;
  uint64_t at = 0;
  if (nic::hamlyn::find_client(v, connection_table_magic, connection_table_version, h, at) !=
      nic::hamlyn::client_lookup::found)
    return false;
  const uint64_t area = v.geo.area_bytes;
  if (h.record_size != sizeof(connection_record) || h.records_offset > area ||
      uint64_t{h.count} * sizeof(connection_record) > area - h.records_offset ||
      h.records_offset % alignof(connection_record) != 0)
    return false;
  t = {reinterpret_cast<connection_record*>(v.area + h.records_offset), h.count};
  return true;
}

void endpoint::raise(int proc, const connection_record& c, uint32_t index, uint64_t word) {
  const nic::hamlyn::card_view& v = card_.view(proc);
  const uint32_t q = c.notification_queue < v.geo.notification_queues ? c.notification_queue : 0;
  const notification n{c.endpoint_slot, hybrid_notification_index, static_cast<uint32_t>(my_proc_),
                       word, index};
  (void)nic::hamlyn::notification_append(*v.queue(q), v.ring(q), n);
  __atomic_fetch_add(const_cast<uint64_t*>(&c.notifications), 1, __ATOMIC_RELAXED);
}

status endpoint::open_connection(int source, const ticket& et, uint32_t readable, uint32_t writable,
                                 connection_ticket& out) {
  if (source < -1 || source >= nprocs_ || et.node != static_cast<uint32_t>(my_proc_) ||
      et.slot >= registrations_.size() || !registrations_[et.slot].in_use)
    return status::invalid_argument;
  for (uint32_t i = 0; i < max_connections_; ++i) {
    connection_record* c = connection_at(my_proc_, i);
    if (c->connection_key.load(std::memory_order_relaxed) != 0) continue;
    c->source = source < 0 ? any_source : static_cast<uint32_t>(source);
    c->endpoint_slot = et.slot;
    c->endpoint_key = card_.slots().slot_at(et.slot).protection_key.load(std::memory_order_relaxed);
    c->readable = readable;
    c->writable = writable;
    c->generation++;
    c->notification_queue = 0;
    c->notifications = 0;
    for (auto& r : c->address_register) r.store(0, std::memory_order_relaxed);
    const uint64_t key = sys::random_protection_key();
    // Publish: a sender that sees the key sees the fields above.
    c->connection_key.store(key, std::memory_order_release);
    out = connection_ticket{et, i, c->generation, key};
    return status::ok;
  }
  return status::no_resource;
}

status endpoint::set_register(const connection_ticket& ct, uint32_t reg, uint64_t value) {
  connection_record* c = ct.endpoint.node == static_cast<uint32_t>(my_proc_)
                             ? connection_at(my_proc_, ct.connection)
                             : nullptr;
  if (!c || reg >= address_registers) return status::invalid_argument;
  c->address_register[reg].store(value, std::memory_order_release);
  return status::ok;
}

uint64_t endpoint::get_register(const connection_ticket& ct, uint32_t reg) const {
  connection_record* c = ct.endpoint.node == static_cast<uint32_t>(my_proc_)
                             ? connection_at(my_proc_, ct.connection)
                             : nullptr;
  if (!c || reg >= address_registers) return 0;
  return c->address_register[reg].load(std::memory_order_acquire);
}

status endpoint::close_connection(const connection_ticket& ct) {
  connection_record* c = ct.endpoint.node == static_cast<uint32_t>(my_proc_)
                             ? connection_at(my_proc_, ct.connection)
                             : nullptr;
  if (!c) return status::invalid_argument;
  c->connection_key.store(0, std::memory_order_release);
  return status::ok;
}

status endpoint::hybrid(const connection_ticket& ct, const hybrid_op& op, const void* data,
                        uint32_t len, void* out, uint32_t out_len, uint64_t* fetched,
                        op_handle* h) {
  const int dest = static_cast<int>(ct.endpoint.node);
  if (ct.endpoint.node >= static_cast<uint32_t>(nprocs_)) return status::invalid_argument;
  connection_record* c = connection_at(dest, ct.connection);
  const nic::hamlyn::card_view& v = card_.view(dest);
  if (!c || c->connection_key.load(std::memory_order_acquire) != ct.connection_key ||
      (c->source != static_cast<uint32_t>(my_proc_) && c->source != any_source) ||
      c->generation != ct.generation) {
    if (v.attached) v.header->counters.key_rejections.fetch_add(1, std::memory_order_relaxed);
    return status::rejected;
  }
  if (free_ops_.empty()) return status::would_block;
  const uint32_t s = c->endpoint_slot;
  if (s >= v.geo.slot_count) return status::rejected;
  const bool direct = dest == my_proc_ ||
                      v.slots[s].memory == static_cast<uint32_t>(nic::hamlyn::area_memory::card);
  if (!direct)
    return remote_op(s, ct.connection_key, ct.connection, op, data, len, out, out_len, fetched,
                     dest, h);
  std::byte* ptr = nullptr;
  uint64_t address = 0;
  const uint64_t bound = v.slots[s].bound;
  status st = card_.receiver().resolve(v, s, c->endpoint_key, 0, bound, ptr, address);
  if (!is_ok(st)) return st;
  hybrid_result res;
  st =
      execute(c, target_memory{ptr ? ptr : reinterpret_cast<std::byte*>(address), bound}, op,
              static_cast<const std::byte*>(data), len, static_cast<std::byte*>(out), out_len, res);
  card_.receiver().unresolve(v, s);
  if (is_ok(st) && res.notify) raise(dest, *c, ct.connection, res.notify_word);
  if (is_ok(st) && fetched) *fetched = res.fetched;
  if (h && is_ok(st)) finish(*new_op(h), st);  // errors are returned here, with no handle
  return st;
}

}  // namespace hpam::deposit
