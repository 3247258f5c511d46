// The send terminus and the card's send engine (OSDI'96 2.3, 2.5): post a
// transmission request, segment it into packets with the packet counter's
// deltas, and deliver each packet: directly into the receiver's card (card
// memory, or its private memory by cross-memory attach), or into its inbound
// FIFO when neither is possible.
#include "nic/hamlyn/send_terminus.hpp"

#include <cstring>

#include "nic/hamlyn/receiving_interface.hpp"

namespace hpam::nic::hamlyn {
namespace {

uint32_t packets_for(uint64_t length, uint32_t per_packet, uint32_t metadata) {
  const uint64_t first = per_packet - metadata;
  if (length <= first) return 1;
  return static_cast<uint32_t>(1 + (length - first + per_packet - 1) / per_packet);
}

// The iovecs covering [from, from+len) of the gather list.
int slice(const iovec* g, int n, uint64_t from, uint64_t len, iovec* out) {
  int m = 0;
  for (int i = 0; i < n && len > 0; ++i) {
    if (from >= g[i].iov_len) {
      from -= g[i].iov_len;
      continue;
    }
    const uint64_t take = std::min<uint64_t>(g[i].iov_len - from, len);
    out[m++] = iovec{static_cast<char*>(g[i].iov_base) + from, take};
    len -= take;
    from = 0;
  }
  return m;
}

// The fields of a packet header a ticket gives (Table 1): where it goes,
// from whom, and the slot, metadata index and key it presents.
inline packet_header addressed(const ticket& t, uint32_t source) {
  packet_header h{};
  h.destination = t.node;
  h.source = source;
  h.slot = t.slot;
  h.metadata_index = t.metadata_index;
  h.protection_key = t.protection_key;
  return h;
}

}  // namespace

send_terminus::send_terminus(std::vector<card_view>& views, receiving_interface& receiver,
                             const card_config& cfg)
    : views_(views),
      receiver_(receiver),
      queue_(cfg.work_queue_entries),
      inline_data_(size_t{cfg.work_queue_entries} * cfg.direct_io_limit),
      direct_io_limit_(cfg.direct_io_limit),
      engine_budget_(cfg.engine_budget ? cfg.engine_budget : ~0u),
      packet_data_bytes_(cfg.packet_size - static_cast<uint32_t>(sizeof(packet_header))),
      my_proc_(static_cast<uint32_t>(cfg.my_proc)),
      nprocs_(static_cast<uint32_t>(cfg.nprocs)),
      mask_(cfg.work_queue_entries - 1),
      results_(results_kept, result{~0ull, status::ok}),
      batch_limit_(cfg.batch_limit) {
  if (batch_limit_ == 0) return;
  batch_entries_.resize(max_batch);
  batch_headers_.resize(max_batch);
  batch_data_.resize(max_batch);
  batch_outcomes_.resize(max_batch);
}

// Whether a message waits for a batch: one packet without user metadata or
// fast mode, at most batch_limit bytes, for another process whose private
// memory I reach by cross-memory attach (card memory and my own are written
// at once, as cheaply as a copy into the entry).
[[gnu::always_inline]] inline bool send_terminus::batchable(const ticket& t, uint64_t length,
                                                            uint32_t packets,
                                                            uint32_t metadata_length) const {
  if (batch_limit_ == 0 || length > batch_limit_ || packets != 1 || metadata_length != 0 ||
      t.metadata_index == fast_index || t.node == my_proc_)
    return false;
  const card_view& v = views_[t.node];
  return v.attached && v.cross_memory &&
         !(t.slot < v.geo.slot_count &&
           v.slots[t.slot].memory == static_cast<uint32_t>(area_memory::card));
}

status send_terminus::send(const ticket& t, const message& m, send_handle& h) {
  uint64_t length = 0;
  if (m.gather_count < 0 || m.gather_count > max_gather || m.metadata_length > user_metadata_bytes)
    return status::invalid_argument;
  for (int i = 0; i < m.gather_count; ++i) length += m.gather[i].iov_len;
  if (t.node >= nprocs_ || m.offset > t.range || length > t.range - m.offset)
    return status::invalid_argument;
  const bool fast = t.metadata_index == fast_index;
  const uint32_t per_packet = packet_data_bytes_;
  const uint32_t packets = packets_for(length, per_packet, m.metadata_length);
  if (fast && (packets != 1 || m.metadata_length != 0)) return status::invalid_argument;
  if (posted_ - running_ > mask_) {
    kick();
    if (posted_ - running_ > mask_) return status::would_block;
  }
  const bool batch = batchable(t, length, packets, m.metadata_length);
  work_entry& w = queue_[posted_ & mask_];
  w.target = t;
  w.offset = t.offset + m.offset;
  w.length = length;
  w.fast_word = m.fast_word;
  w.metadata_length = m.metadata_length;
  if (m.metadata_length) std::memcpy(w.metadata, m.metadata, m.metadata_length);
  w.flags = encode_flags(packet_kind::data, (t.flags & ticket_flags::notify) != 0);
  for (int i = 0; i < m.gather_count; ++i) w.gather[i] = m.gather[i];
  w.gather_count = m.gather_count;
  w.packets = packets;
  w.counter = t.delta;
  w.two_first = packets >= 2 && static_cast<uint32_t>(t.delta - (packets - 1)) == 0;
  w.next_packet = 0;
  w.sent = 0;
  w.sequence = posted_;
  w.batch = batch ? batch_waiting : batch_none;
  h.sequence = posted_++;
  if (w.batch == batch_waiting) {  // copied into the entry; carried out with its batch
    std::byte* copy = inline_data_.data() + (w.sequence & mask_) * direct_io_limit_;
    detail::gather(copy, m.gather, m.gather_count);
    w.gather[0] = iovec{copy, length};
    w.gather_count = 1;
    if (++waiting_in_batch_ >= max_batch) kick();  // a full batch goes at once
    return status::ok;
  }
  const bool idle = running_ + 1 == posted_;
  if (idle) {  // the card was idle: it sends this entry at once
    uint32_t budget = engine_budget_;
    if (run_entry(w, budget)) {
      running_++;
      completion_.store(running_, std::memory_order_release);
      return status::ok;
    }
  }
  if (length <= direct_io_limit_) {  // direct I/O: the caller may reuse its buffer on return
    std::byte* copy = inline_data_.data() + (w.sequence & mask_) * direct_io_limit_;
    uint64_t at = 0;
    for (int i = 0; i < m.gather_count; ++i) {
      if (m.gather[i].iov_len) std::memcpy(copy + at, m.gather[i].iov_base, m.gather[i].iov_len);
      at += m.gather[i].iov_len;
    }
    w.gather[0] = iovec{copy, length};
    w.gather_count = 1;
  }  // DMA: the engine reads the caller's buffers as it sends
  if (!idle) kick();
  return status::ok;
}

// The fast-mode message as a work entry, through send(): behind entries
// already queued, into an inbound FIFO that is full, or refused by send().
[[gnu::cold, gnu::noinline]] status send_terminus::send_fast_posted(const ticket& t,
                                                                    uint64_t offset,
                                                                    const std::byte* data,
                                                                    uint32_t length, uint64_t word,
                                                                    send_handle& h) {
  const iovec piece{const_cast<std::byte*>(data), length};
  message m;
  m.gather = &piece;
  m.gather_count = 1;
  m.offset = offset;
  m.fast_word = word;
  const status st = send(t, m, h);
  status why = status::ok;
  if (is_ok(st) && state(h, &why) == send_state::error) return why;  // refused at once
  return st;
}

void send_terminus::run_engine() {
  uint32_t budget = engine_budget_;
  while (running_ != posted_ && budget > 0) {
    work_entry& w = queue_[running_ & mask_];
    if (w.batch == batch_waiting) run_batches();  // now batch_done, or batch_none (sent on below)
    if (w.batch != batch_done && !run_entry(w, budget))
      return;  // waiting for room at the receiver, or out of budget
    running_++;
    // The completion word: entries before it (and their buffers) may be reused.
    completion_.store(running_, std::memory_order_release);
  }
}

// Carries out the waiting entries from the head up to the first entry that
// is not batched, one batch per destination (at most max_batch entries
// each; the rest wait for the next call).
void send_terminus::run_batches() {
  uint64_t end = running_;
  while (end != posted_ && queue_[end & mask_].batch != batch_none) ++end;
  for (uint64_t first = running_; first != end; ++first) {
    if (queue_[first & mask_].batch != batch_waiting) continue;
    const uint32_t destination = queue_[first & mask_].target.node;
    uint32_t n = 0;
    for (uint64_t e = first; e != end && n < max_batch; ++e) {
      work_entry& w = queue_[e & mask_];
      if (w.batch != batch_waiting || w.target.node != destination) continue;
      packet_header& h = batch_headers_[n];
      h = addressed(w.target, my_proc_);
      h.offset = w.offset;
      h.length = static_cast<uint32_t>(w.length);
      h.delta = w.counter;  // the one packet of its message
      h.flags = w.flags | flag_single;
      h.fast_word = w.fast_word;
      batch_data_[n] = w.gather[0];
      batch_entries_[n++] = &w;
    }
    deposit_batch(destination, n);
  }
}

// One batch to one destination: every entry finished with its outcome, or
// (the kernel refused cross-memory writes after all) sent on as packets.
void send_terminus::deposit_batch(uint32_t destination, uint32_t n) {
  card_view& v = views_[destination];
  status st = status::invalid_argument;
  if (v.attached) {
    st = receiver_.arrive_batch(v, batch_headers_.data(), batch_data_.data(), n,
                                batch_outcomes_.data());
  } else {
    for (uint32_t i = 0; i < n; ++i) batch_outcomes_[i] = status::invalid_argument;
  }
  if (st == status::system_error) v.cross_memory = false;  // packets from now on
  batches_++;
  batched_messages_ += n;
  waiting_in_batch_ -= n;
  for (uint32_t i = 0; i < n; ++i) {
    work_entry& w = *batch_entries_[i];
    const status outcome = batch_outcomes_[i];
    if (outcome == status::system_error) {
      w.batch = batch_none;  // run_entry sends it as a packet
      continue;
    }
    w.batch = batch_done;
    if (!is_ok(outcome)) rejected_sends_++;
    finish(w.sequence, outcome);
  }
}

// Sends the entry's remaining packets. True when the entry is finished
// (sent, or refused by the receiving side).
bool send_terminus::run_entry(work_entry& w, uint32_t& budget) {
  const uint32_t per_packet = packet_data_bytes_;
  while (w.next_packet < w.packets) {
    if (budget == 0) return false;
    const bool first = w.next_packet == 0;
    const bool last = w.next_packet + 1 == w.packets;
    const uint32_t meta = first ? w.metadata_length : 0;
    const uint64_t len = std::min<uint64_t>(per_packet - meta, w.length - w.sent);
    uint32_t delta = 1;
    if (first && w.two_first) delta = 2;
    if (last) delta = w.counter;
    packet_header h = addressed(w.target, my_proc_);
    h.offset = w.offset + w.sent;
    h.length = static_cast<uint32_t>(len);
    h.delta = delta;
    h.metadata_length = meta;
    h.flags = w.flags | (first && last ? flag_single : 0u);
    h.fast_word = w.fast_word;
    iovec data[max_gather];
    const int n = slice(w.gather, w.gather_count, w.sent, len, data);
    bool retry = false;
    const status st = send_packet(h, data, n, first ? w.metadata : nullptr, retry);
    if (retry) return false;
    if (!is_ok(st)) {
      rejected_sends_++;
      finish(w.sequence, st);
      return true;
    }
    if (!last) w.counter -= delta;  // keeps counter + deltas sent == Y (2.5)
    w.sent += len;
    w.next_packet++;
    budget--;
  }
  finish(w.sequence, status::ok);
  return true;
}

status send_terminus::send_packet(const packet_header& h, const iovec* data, int n,
                                  const std::byte* meta, bool& retry) {
  card_view& v = views_[h.destination];
  if (!v.attached) return status::invalid_argument;
  const bool local = h.destination == my_proc_;
  if (detail::direct_to(v, local, h.slot)) {
    const status st = receiver_.arrive(v, h, data, n, meta, local);
    if (st != status::system_error) return st;
    v.cross_memory = false;  // the kernel refused after all: use packets from now on
  }
  iovec pieces[max_gather + 1];
  int m = 0;
  if (h.metadata_length) pieces[m++] = iovec{const_cast<std::byte*>(meta), h.metadata_length};
  for (int i = 0; i < n; ++i) pieces[m++] = data[i];
  if (!push_packet(v, h, pieces, m)) {
    retry = true;
    return status::would_block;
  }
  return status::ok;
}

send_state send_terminus::state(const send_handle& h, status* error) const {
  if (h.sequence >= posted_) {
    if (error) *error = status::invalid_argument;
    return send_state::error;
  }
  if (h.sequence >= completion_.load(std::memory_order_acquire)) return send_state::pending;
  const result& r = results_[h.sequence % results_kept];
  if (r.sequence == h.sequence && !is_ok(r.outcome)) {
    if (error) *error = r.outcome;
    return send_state::error;
  }
  return send_state::sent;
}

}  // namespace hpam::nic::hamlyn
