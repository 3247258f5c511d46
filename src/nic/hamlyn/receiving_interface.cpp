// The receiving interface (OSDI'96 2.2, 2.5-2.7): for each packet, the key
// and bounds checks, the deposit at base + offset, the packet accumulator of
// the metadata entry, and on completion the notification queue entry. Run
// by the sender's process in the receiver's card, or by the receiver for
// packets from its inbound FIFO (poll_inbound). Every refusal is counted in
// the receiver's card and writes nothing. It works on the card's views
// (card_view.hpp) and owns the handlers and the fallback packets it has not
// finished.
//
// Nothing read from shared memory is used twice: a fallback packet's header
// is copied once out of its buffer, a slot's fields once the arrival holds
// the slot, a metadata entry's secondary key and range once; the card's
// counts and offsets come from the view (checked at attach), never from its
// header.
#include "nic/hamlyn/receiving_interface.hpp"

#include <cstring>

#include "sys/membarrier.hpp"

namespace hpam::nic::hamlyn {
namespace {

using detail::count;
using detail::inside;
using detail::paranoid;

// metadata_entry::one_shot_used: 0 armed; source + 1 while that sender's
// message is arriving; one_shot_done once a message completed.
constexpr uint32_t one_shot_done = 0xFFFFFFFFu;

}  // namespace

receiving_interface::receiving_interface(card& c, const std::vector<card_view>& views,
                                         const card_config& cfg)
    : card_(c),
      views_(views),
      nprocs_(static_cast<uint32_t>(cfg.nprocs)),
      my_proc_(static_cast<uint32_t>(cfg.my_proc)),
      notification_queues_(cfg.notification_queues),
      rx_packets_(cfg.rx_packets),
      packet_size_(cfg.packet_size),
      direct_holds_(cfg.direct_holds && sys::join_global_barriers()) {
  readers_.resize(notification_queues_);
  fast_cache_ = std::make_unique<fast_slot_cache[]>(nprocs_ + 1u);  // + a node outside the job
  rx_free_return_.init(rx_packets_);
}

void receiving_interface::set_handler(packet_kind kind, packet_handler fn, void* ctx) {
  handlers_[static_cast<uint32_t>(kind)] = handler_entry{fn, ctx};
}

// The header's own fields, before any slot is looked at: a slot the card
// has, a data packet, no unknown flag, a source in the job (a notification
// entry holds 16 bits of it). A refusal is counted malformed.
[[gnu::always_inline]] inline bool receiving_interface::well_formed(const card_view& v,
                                                                    const packet_header& h) const {
  if (h.slot < v.geo.slot_count && flags_kind(h.flags) == packet_kind::data &&
      !(h.flags & ~known_flags) && h.source < nprocs_)
    return true;
  count(v.header->counters.malformed);
  return false;
}

// A fast-mode packet (OSDI'96 2.7) is a whole message of one packet with no
// user metadata, into a slot that is not paranoid.
[[gnu::always_inline]] inline bool receiving_interface::fast_mode_fits(const slot_copy& s,
                                                                       const packet_header& h) {
  return !paranoid(s.mode) && (h.flags & flag_single) && h.metadata_length == 0;
}

bool receiving_interface::check_packet(const card_view& v, const packet_header& h,
                                       const slot_copy& s, metadata_entry*& entry) {
  arrival_counters& c = v.header->counters;
  const bool fast = h.metadata_index == fast_index;
  entry = nullptr;
  if (fast) {
    if (!fast_mode_fits(s, h)) {
      count(c.mode_rejections);
      return false;
    }
  } else {
    if (s.mode == static_cast<uint32_t>(slot_mode::fast)) {
      count(c.mode_rejections);
      return false;
    }
    if (h.metadata_index >= s.metadata_count || h.metadata_length > user_metadata_bytes) {
      count(c.malformed);
      return false;
    }
    entry = &v.metadata[s.metadata_base + h.metadata_index];
  }
  uint64_t key = s.key, low = 0, high = s.bound;
  if (paranoid(s.mode)) {  // the entry's secondary key and range, once
    key = entry->paranoid_key.load(std::memory_order_acquire);
    low = entry->paranoid_low;
    high = entry->paranoid_high;
  }
  if (!check_key_and_bounds(c, h.protection_key, h.offset, h.length, key, low, high, s.bound))
    return false;
  if (h.delta == 0 && !(h.flags & flag_single) && flags_notify(h.flags)) {
    count(c.malformed);  // a zero delta is only meaningful for a single-packet message
    return false;
  }
  if (s.mode == static_cast<uint32_t>(slot_mode::paranoid_one_shot)) {
    // One message per arming: the first packet claims the entry for its
    // sender (atomically: of two senders only one can), the message's other
    // packets carry the same source, completion closes the entry.
    if (h.source >= nprocs_) {
      count(c.malformed);
      return false;
    }
    uint32_t holder = 0;
    if (!entry->one_shot_used.compare_exchange_strong(holder, h.source + 1,
                                                      std::memory_order_acq_rel) &&
        holder != h.source + 1) {
      count(c.mode_rejections);
      return false;
    }
  }
  return true;
}

// `h` is the caller's own copy; the data pieces must add up to h.length.
status receiving_interface::arrive(const card_view& v, const packet_header& h, const iovec* data,
                                   int n, const std::byte* meta, bool local) {
  arrival_counters& c = v.header->counters;
  uint64_t total = 0;
  for (int i = 0; i < n; ++i) total += data[i].iov_len;
  if (!well_formed(v, h)) return status::rejected;
  if (total != h.length) {
    count(c.malformed);
    return status::rejected;
  }
  slot_copy s;
  metadata_entry* entry = nullptr;
  status st = status::rejected;
  if (!hold_slot(v, h.slot, s) || !check_packet(v, h, s, entry)) {
    // refused and counted
  } else if (h.metadata_index == fast_index && h.length <= s.inline_limit) {
    st = arrive_carried(v, s, h, data, n);  // inline delivery: into the notification entry
  } else {
    st = write_area(v, s, h.offset, h.length, data, n, local);
    if (is_ok(st)) {
      if (entry && h.metadata_length) {
        std::memcpy(entry->user_metadata, meta, h.metadata_length);
        entry->metadata_length = h.metadata_length;
      }
      count(c.packets);
      // Still holding the slot: a revoke waits for the counting too, so no
      // delta lands after it (in an entry set up again for another slot).
      if (flags_notify(h.flags) || h.metadata_index == fast_index)
        complete(v, s, h, entry, nullptr);
    }
  }
  v.slots[h.slot].users.fetch_sub(1, std::memory_order_release);
  return st;
}

// A fast-mode message for a slot that wants it in its notification entry
// (inline delivery, layout.hpp), come through the work queue or the inbound
// FIFO rather than arrive_fast: its pieces are gathered and the entry
// carries them. The caller holds the slot; h.length <= s.inline_limit.
[[gnu::noinline]] status receiving_interface::arrive_carried(const card_view& v, const slot_copy& s,
                                                             const packet_header& h,
                                                             const iovec* data, int n) {
  std::byte carried[max_notification_inline_bytes];  // s.inline_limit at most (copy_slot)
  detail::gather(carried, data, n);
  count(v.header->counters.packets);
  complete(v, s, h, nullptr, carried);
  return status::ok;
}

// Packet counting and notification (2.5, 2.6).
void receiving_interface::complete(const card_view& v, const slot_copy& s, const packet_header& h,
                                   metadata_entry* entry, const std::byte* message) {
  if (entry && h.delta != 0) {
    const uint32_t before = entry->packet_accumulator.fetch_add(h.delta, std::memory_order_acq_rel);
    if (static_cast<uint32_t>(before + h.delta) != 0) return;  // more packets to come
  }
  notification n{h.slot, h.metadata_index, h.source, h.fast_word, h.length};
  if (entry) {
    n.metadata = static_cast<uint64_t>(reinterpret_cast<std::byte*>(entry) - v.base);
    entry->messages++;
    if (s.mode == static_cast<uint32_t>(slot_mode::paranoid_one_shot))
      entry->one_shot_used.store(one_shot_done, std::memory_order_release);
  }
  notify(v, s, n, message);
}

// The hold of `slot` for a batch: one it took already (the last few are
// looked at: a batch's packets mostly go to one or two slots), else a new
// one. ~0u: the slot refused (counted by hold_slot), and is let go.
uint32_t receiving_interface::batch_hold_for(const card_view& v, uint32_t slot, uint32_t& holds) {
  constexpr uint32_t looked_at = 4;
  for (uint32_t k = holds; k > 0 && holds - k < looked_at; --k)
    if (batch_holds_[k - 1].slot == slot) return k - 1;
  batch_hold& b = batch_holds_[holds];
  b.slot = slot;
  if (!hold_slot(v, slot, b.copy)) {
    v.slots[slot].users.fetch_sub(1, std::memory_order_release);
    return ~0u;
  }
  return holds++;
}

status receiving_interface::arrive_batch(const card_view& v, const packet_header* h,
                                         const iovec* data, uint32_t n, status* outcome) {
  arrival_counters& c = v.header->counters;
  if (batch_items_.empty()) {  // first batch: scratch sized once
    batch_holds_.resize(max_batch);
    batch_items_.resize(max_batch);
    batch_local_.resize(max_batch);
    batch_remote_.resize(max_batch);
  }
  if (n > max_batch) n = max_batch;  // (the terminus never asks for more)
  uint32_t holds = 0, accepted = 0, pieces = 0;
  for (uint32_t i = 0; i < n; ++i) {  // every check before any byte moves
    const packet_header& p = h[i];
    outcome[i] = status::rejected;
    if (!well_formed(v, p)) continue;
    if (data[i].iov_len != p.length || p.metadata_length != 0 || p.metadata_index == fast_index ||
        !(p.flags & flag_single)) {
      count(c.malformed);  // not a batch's kind of packet
      continue;
    }
    const uint32_t k = batch_hold_for(v, p.slot, holds);
    metadata_entry* entry = nullptr;
    if (k == ~0u || !check_packet(v, p, batch_holds_[k].copy, entry)) continue;
    const slot_copy& s = batch_holds_[k].copy;
    if (s.memory == static_cast<uint32_t>(area_memory::card)) {  // card memory: written here
      detail::gather(v.area + s.base + p.offset, &data[i], 1);
    } else if (p.length) {
      batch_local_[pieces] = data[i];
      batch_remote_[pieces++] = iovec{reinterpret_cast<void*>(s.base + p.offset), p.length};
    }
    batch_items_[accepted++] = batch_item{i, k, entry};
  }
  const status st =
      pieces ? cross_memory_pairs(v.pid, true, batch_local_.data(), batch_remote_.data(), pieces)
             : status::ok;
  if (is_ok(st)) {
    c.packets.fetch_add(accepted, std::memory_order_relaxed);
    for (uint32_t a = 0; a < accepted; ++a) {  // still holding every slot (as arrive)
      const batch_item& it = batch_items_[a];
      outcome[it.packet] = status::ok;
      if (flags_notify(h[it.packet].flags))
        complete(v, batch_holds_[it.hold].copy, h[it.packet], it.entry, nullptr);
    }
  } else {
    for (uint32_t a = 0; a < accepted; ++a) outcome[batch_items_[a].packet] = status::system_error;
  }
  for (uint32_t k = 0; k < holds; ++k)
    v.slots[batch_holds_[k].slot].users.fetch_sub(1, std::memory_order_release);
  return st;
}

// arrive_fast where I hold no line on v's card (none offered, or I did not
// join the global barriers): by slot::users, out of the usual path.
status receiving_interface::arrive_fast_by_users(const card_view& v, const ticket& t,
                                                 uint64_t offset, const std::byte* data,
                                                 uint32_t length, uint64_t word, bool local) {
  if (t.slot >= v.geo.slot_count) {
    detail::count(v.header->counters.malformed);
    return status::rejected;
  }
  return arrive_fast_held(v, v.slots[t.slot], t, offset, data, length, word, local, nullptr);
}

status receiving_interface::resolve(const card_view& v, uint32_t s_index, uint64_t key,
                                    uint64_t offset, uint64_t len, std::byte*& ptr,
                                    uint64_t& address) {
  return resolve_held(v, s_index, key, offset, len, ptr, address, nullptr);
}

status receiving_interface::resolve_held(const card_view& v, uint32_t s_index, uint64_t key,
                                         uint64_t offset, uint64_t len, std::byte*& ptr,
                                         uint64_t& address, std::atomic<uint64_t>* line) {
  arrival_counters& c = v.header->counters;
  if (s_index >= v.geo.slot_count) {
    count(c.malformed);
    return status::rejected;
  }
  slot& sl = v.slots[s_index];
  slot_copy s;
  status st = status::rejected;
  if (!announce_direct(v, sl, s_index, line) || !copy_slot<false>(v, sl, s)) {
    // counted
  } else if (paranoid(s.mode) || s.mode == static_cast<uint32_t>(slot_mode::fast)) {
    count(c.mode_rejections);
  } else {
    // (The generation read while held and active, as the copy.)
    const direct_window w{&sl, sl.generation, s.memory == static_cast<uint32_t>(area_memory::card),
                          s.base, s.bound};
    st = place(v, w, key, s.key, offset, len, ptr, address);
    if (is_ok(st) && line) windows_[window_of(&sl)] = w;  // kept for resolve_direct
  }
  if (!is_ok(st)) drop_hold(v, sl, line);
  return st;  // on ok the caller lets go (unresolve, unresolve_direct) when done with the memory
}

void receiving_interface::unresolve(const card_view& v, uint32_t s_index) {
  v.slots[s_index].users.fetch_sub(1, std::memory_order_release);
}

// The fallback path: packets senders could not deposit themselves. A
// packet that cannot be finished now (its answer meets a full FIFO) keeps
// its buffer, its header copy and its progress, and is served again, first,
// at the next poll.
uint32_t receiving_interface::poll_inbound(uint32_t budget) {
  const card_view& v = views_[my_proc_];
  rx_free_return_.retry(*v.rx_free);
  if (has_deferred_) {
    if (!serve_packet(deferred_)) return 0;
    give_back(v, deferred_);
    has_deferred_ = false;
  }
  uint32_t done = 0;
  uint64_t entry;
  while (done < budget) {
    const std::byte* cell = v.rx_ready.ready(rx_cursor_, entry);
    if (!cell) break;
    ++done;
    inbound_packet in{rx_cursor_++, inbound_buffer(entry), inbound_length(entry), nullptr, {}, 0};
    if (in.buffer >= rx_packets_ || in.length < sizeof in.header || in.length > packet_size_) {
      // Forged: the cell goes back, the buffer is not ours to touch or free.
      count(v.header->counters.malformed);
      v.rx_ready.release(in.position);
      continue;
    }
    v.rx_free->prefetch_push();  // the buffer goes back there once served
    count(v.header->counters.fallback_packets);
    in.packet = in.length <= v.rx_ready.inline_bytes() ? cell + sys::cell_fifo::head_bytes
                                                       : v.rx_buffer(in.buffer);
    std::memcpy(&in.header, in.packet, sizeof in.header);
    if (!serve_packet(in)) {
      deferred_ = in;
      has_deferred_ = true;
      break;
    }
    give_back(v, in);
  }
  return done;
}

bool receiving_interface::serve_packet(inbound_packet& in) {
  const card_view& v = views_[my_proc_];
  const packet_header& h = in.header;
  const std::byte* payload = in.packet + sizeof h;
  const packet_kind kind = flags_kind(h.flags);
  if (kind == packet_kind::read_request) return serve_read_request(in);
  if (sizeof h + uint64_t{h.metadata_length} + h.length > in.length) {  // more than was written
    count(v.header->counters.malformed);
    return true;
  }
  if (kind == packet_kind::data) {
    iovec d{const_cast<std::byte*>(payload + h.metadata_length), h.length};
    (void)arrive(v, h, &d, 1, payload, true);
    return true;
  }
  const uint32_t k = static_cast<uint32_t>(kind);
  if (k < packet_kind_count && handlers_[k].fn)
    return handlers_[k].fn(handlers_[k].ctx, card_, h, payload);
  count(v.header->counters.malformed);
  return true;
}

// A get through the fallback path: the owner reads its own memory and sends
// the bytes back as reply packets (fast_word = the requester's operation id,
// offset = position in the requested range). How far it has got is the
// owner's own record (in.done), never a field of the request, so a request
// that meets a full FIFO at the requester resumes where it stopped.
bool receiving_interface::serve_read_request(inbound_packet& in) {
  const packet_header& h = in.header;
  const card_view& v = views_[my_proc_];
  if (h.source >= nprocs_ || !views_[h.source].attached) {
    count(v.header->counters.malformed);
    return true;
  }
  std::byte* ptr = nullptr;
  uint64_t address = 0;
  packet_header r{};
  r.destination = h.source;
  r.source = my_proc_;
  r.flags = encode_flags(packet_kind::reply, false);
  r.fast_word = h.fast_word;
  if (!is_ok(resolve(v, h.slot, h.protection_key, h.offset, h.length, ptr, address))) {
    r.reserved = static_cast<uint64_t>(status::rejected);
    return push_packet(views_[h.source], r, nullptr, 0);
  }
  const std::byte* src = ptr ? ptr : reinterpret_cast<const std::byte*>(address);
  const uint64_t per_packet = packet_size_ - sizeof(packet_header);
  bool finished = true;
  do {  // at least one answer, also for an empty range
    const uint64_t len = std::min<uint64_t>(per_packet, h.length - in.done);
    r.offset = in.done;
    r.length = static_cast<uint32_t>(len);
    iovec piece{const_cast<std::byte*>(src + in.done), len};
    if (!push_packet(views_[h.source], r, &piece, 1)) {
      finished = false;
      break;
    }
    in.done += len;
  } while (in.done < h.length);
  unresolve(v, h.slot);
  return finished;
}

}  // namespace hpam::nic::hamlyn
