// Notification queue operations (OSDI'96 2.6): a circular list of entries
// with a wrap flag. Writers (whoever completes a message: a sender's process
// doing the receiving interface's work, or the receiver itself for packets
// that came through its inbound FIFO) reserve the cursor with a CAS after
// checking room against the reader's published cursor, fill the entry and
// publish its wrap flag. The reader compares the flag with the one it
// expects for its own cursor; no other synchronisation is needed.
#pragma once

#include <cstdint>

#include "nic/hamlyn/layout.hpp"
#include "sys/ring.hpp"

namespace hpam::nic::hamlyn {

// What a notification says, as the reader gets it.
struct notification {
  uint32_t slot;            // slot index
  uint32_t metadata_index;  // metadata entry, or fast_index
  uint32_t source;          // sending process
  uint64_t metadata;        // card offset of the metadata entry, or the fast-mode word
  uint64_t length;          // data bytes of the completing packet
};

// `cap` is the queue's capacity as the caller knows it (its card_view's
// checked geometry, or its own configuration), never the control block's
// copy, which any process mapping the card could change.

// Appends one entry; false (and overruns+1) when the reader has not made room.
inline bool notification_append(notification_queue_control& q, notification_entry* entries,
                                uint64_t cap, const notification& n) noexcept {
  uint64_t t = q.tail.load(std::memory_order_relaxed);
  for (;;) {
    const uint64_t h = q.head.load(std::memory_order_acquire);
    if (sys::ring_math::is_full(h, t, cap)) {
      q.overruns.fetch_add(1, std::memory_order_relaxed);
      return false;
    }
    if (q.tail.compare_exchange_weak(t, t + 1, std::memory_order_acq_rel, std::memory_order_relaxed))
      break;
  }
  notification_entry& e = entries[sys::ring_math::slot(t, cap)];
  e.slot = n.slot;
  e.metadata_index = n.metadata_index;
  e.source = n.source;
  e.metadata = n.metadata;
  e.length = n.length;
  // Publish: the fields above (and the deposit that preceded this call) are
  // visible to a reader that sees the new wrap flag.
  e.wrap_flag.store(notification_phase(t, cap), std::memory_order_release);
  return true;
}

// Takes the next entry if its wrap flag says it has been written this lap.
// Each field is read once, into `out`; the caller checks the copy.
inline bool notification_take(notification_queue_control& q, notification_entry* entries,
                              uint64_t cap, notification& out) noexcept {
  const uint64_t h = q.head.load(std::memory_order_relaxed);
  const notification_entry& e = entries[sys::ring_math::slot(h, cap)];
  if (e.wrap_flag.load(std::memory_order_acquire) != notification_phase(h, cap)) return false;
  out = notification{e.slot, e.metadata_index, e.source, e.metadata, e.length};
  // Give the entry back to writers only after it has been copied out.
  q.head.store(h + 1, std::memory_order_release);
  return true;
}

}  // namespace hpam::nic::hamlyn
