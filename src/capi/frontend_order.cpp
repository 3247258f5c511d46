// hpam_order (hpam_frontend.h): in-order delivery per peer for the front
// ends. The fast path (a message in its turn) is inline in the header; here
// are setup and the slow path: holding an early message in its peer's slot
// and handing held messages over when their turn comes.
#include <cstdlib>
#include <cstring>
#include <new>

#include "hpam_frontend.h"

namespace {

// One slot: a message that came early, then its bytes. Slots of a peer are
// indexed by sequence number modulo the window.
struct held_slot {
  uint32_t seq;   // its sequence number
  uint32_t len;   // payload bytes
  uint64_t word;  // the front end's word (BTL tag, UCX argument word)
  uint32_t full;  // holds a message
  uint32_t pad[3];
};
static_assert(sizeof(held_slot) == 32, "payload starts 32-byte aligned in a 64-byte slot");

constexpr int max_window = 1024;
constexpr int max_peers = 1 << 24;

held_slot* slot_of(const hpam_order_t* o, int peer, uint32_t seq) {
  const size_t index = static_cast<size_t>(peer) * o->window + seq % o->window;
  return reinterpret_cast<held_slot*>(o->slots + index * o->slot_size);
}

unsigned char* payload_of(held_slot* s) {
  return reinterpret_cast<unsigned char*>(s + 1);
}

}  // namespace

extern "C" int hpam_order_init(hpam_order_t* o, int npeers, int window, size_t max_payload) {
  std::memset(o, 0, sizeof *o);
  if (npeers < 1 || npeers > max_peers || window < 1 || window > max_window ||
      max_payload > (size_t{1} << 30)) {
    return HPAM_ERR_INVALID;
  }
  const size_t slot_size = (sizeof(held_slot) + max_payload + 63) & ~size_t{63};
  o->peers = static_cast<hpam_order_peer_t*>(
      std::calloc(static_cast<size_t>(npeers), sizeof(hpam_order_peer_t)));
  o->slots = static_cast<unsigned char*>(
      std::calloc(static_cast<size_t>(npeers) * static_cast<size_t>(window), slot_size));
  if (o->peers == nullptr || o->slots == nullptr) {
    hpam_order_fini(o);
    return HPAM_ERR_NO_RESOURCE;
  }
  o->npeers = static_cast<uint32_t>(npeers);
  o->window = static_cast<uint32_t>(window);
  o->max_payload = max_payload;
  o->slot_size = slot_size;
  return HPAM_OK;
}

extern "C" void hpam_order_fini(hpam_order_t* o) {
  std::free(o->peers);
  std::free(o->slots);
  std::memset(o, 0, sizeof *o);
}

extern "C" int hpam_order_hold(hpam_order_t* o, int peer, uint32_t seq, uint64_t word,
                               const struct iovec* iov, int iovcnt) {
  size_t len = 0;
  for (int i = 0; i < iovcnt; ++i) len += iov[i].iov_len;
  if (static_cast<uint32_t>(peer) >= o->npeers || len > o->max_payload) {
    o->rejected++;
    return HPAM_ORDER_REJECTED;
  }
  hpam_order_peer_t* p = &o->peers[peer];
  const uint32_t ahead = seq - p->next_deliver;  // huge when already delivered
  held_slot* s = slot_of(o, peer, seq);
  // ahead 0 comes here only from a direct call (a message to oneself,
  // queued for progress): it waits in its slot like an early one.
  if (ahead >= o->window || s->full) {
    o->rejected++;
    return HPAM_ORDER_REJECTED;
  }
  unsigned char* to = payload_of(s);
  for (int i = 0; i < iovcnt; ++i) {
    if (iov[i].iov_len != 0) std::memcpy(to, iov[i].iov_base, iov[i].iov_len);
    to += iov[i].iov_len;
  }
  s->seq = seq;
  s->len = static_cast<uint32_t>(len);
  s->word = word;
  s->full = 1;
  p->held++;
  o->held_total++;
  return HPAM_ORDER_HELD;
}

extern "C" int hpam_order_take_due(hpam_order_t* o, int peer, hpam_order_msg_t* msg) {
  hpam_order_peer_t* p = &o->peers[peer];
  held_slot* s = slot_of(o, peer, p->next_deliver);
  if (p->held == 0 || !s->full || s->seq != p->next_deliver) return 0;
  s->full = 0;
  p->held--;
  p->next_deliver++;
  msg->word = s->word;
  msg->data = payload_of(s);
  msg->len = s->len;
  return 1;
}
