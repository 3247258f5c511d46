// A card's geometry from its counts, finding a client header in a card, and
// the way into a card's inbound FIFO: what every part of a card uses of a
// card_view.
#include "nic/hamlyn/card_view.hpp"

#include <cstring>

#include "sys/align.hpp"

namespace hpam::nic::hamlyn {

card_geometry card_geometry_for(card_geometry g) {
  uint64_t off = sizeof(card_header);
  g.slots_offset = off;
  off += uint64_t{g.slot_count} * sizeof(slot);
  g.metadata_offset = off;
  off = sys::align_up(off + uint64_t{g.metadata_entries} * sizeof(metadata_entry), 64);
  g.queues_offset = off;
  off += g.notification_queues * sizeof(notification_queue_control);
  g.entries_offset = off;
  off += g.notification_queues * g.notify_capacity * g.notify_entry_bytes;
  g.rx_free_offset = off = sys::align_up(off, 64);
  off += sys::align_up(sys::mpmc_fifo::bytes_for(rx_free_capacity(g.rx_packets)), 64);
  g.rx_ready_offset = off;
  off +=
      sys::align_up(sys::cell_fifo::bytes_for(rx_ready_capacity(g.rx_packets), rx_ready_cell), 64);
  g.rx_buffers_offset = off;
  off = sys::align_up(off + uint64_t{g.rx_packets} * g.packet_size, 4096);
  g.area_offset = off;
  g.size = off + g.area_bytes;
  return g;
}

arrival_totals arrival_totals_of(const card_view& v, int lines) {
  const arrival_counters& c = v.header->counters;
  constexpr auto relaxed = std::memory_order_relaxed;
  arrival_totals t;
  t.packets = c.packets.load(relaxed);
  t.messages = c.messages.load(relaxed);
  t.key_rejections = c.key_rejections.load(relaxed);
  t.bounds_rejections = c.bounds_rejections.load(relaxed);
  t.revoked_rejections = c.revoked_rejections.load(relaxed);
  t.mode_rejections = c.mode_rejections.load(relaxed);
  t.malformed = c.malformed.load(relaxed);
  t.fallback_packets = c.fallback_packets.load(relaxed);
  for (int p = 0; v.holds && p < lines; ++p) {
    const uint64_t fast = v.holds[p].fast_arrivals.load(relaxed);  // a packet and a message each
    t.packets += fast;
    t.messages += fast;
  }
  return t;
}

client_lookup find_client(const card_view& v, const client_prefix& expected, void* copy,
                          uint64_t& offset) {
  if (!v.attached) return client_lookup::not_yet;
  const uint64_t magic = v.header->client_magic.load(std::memory_order_acquire);
  if (magic == 0) return client_lookup::not_yet;
  offset = v.header->client_offset;
  const uint64_t area_bytes = v.header->area_bytes;
  if (magic != expected.magic || offset > area_bytes || expected.size > area_bytes - offset)
    return client_lookup::damaged;
  std::memcpy(copy, v.area + offset, expected.size);
  client_prefix got;
  std::memcpy(&got, copy, sizeof got);
  return got.magic == expected.magic && got.version == expected.version && got.size == expected.size
             ? client_lookup::found
             : client_lookup::damaged;
}

bool push_packet(const card_view& v, const packet_header& h, const iovec* pieces, int n) {
  uint64_t total = 0;
  for (int i = 0; i < n; ++i) total += pieces[i].iov_len;
  if (!v.attached || sizeof(packet_header) + total > v.geo.packet_size) return false;
  uint64_t buffer;
  if (!v.rx_free->pop(buffer)) return false;
  if (buffer >= v.geo.rx_packets) return false;  // a damaged FIFO: never write outside the pool
  const uint64_t length = sizeof h + total;
  uint64_t pos;
  std::byte* cell = v.rx_ready.claim_free(pos);  // room: my buffer stands for the cell
  std::byte* p =
      length <= v.rx_ready.inline_bytes() ? cell + sys::cell_fifo::head_bytes : v.rx_buffer(buffer);
  std::memcpy(p, &h, sizeof h);
  detail::gather(p + sizeof h, pieces, n);
  // Publish: the packet is complete before its entry is on the FIFO.
  v.rx_ready.publish(cell, pos,
                     inbound_entry(static_cast<uint32_t>(buffer), static_cast<uint32_t>(length)));
  v.rx_free->prefetch_pop();  // my next packet here takes the next free buffer
  return true;
}

}  // namespace hpam::nic::hamlyn
