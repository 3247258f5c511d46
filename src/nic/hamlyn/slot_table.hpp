// The setup code of a Hamlyn card, the "OS" of the emulation (Hamlyn
// OSDI'96 section 2.3): it alone writes my card's slot table, hands out card
// memory for message areas and entries of the metadata pool, and makes the
// tickets senders present. Everything else on the card is user level. Not on
// any hot path: it allocates (std::map free lists) and may wait (revoke).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <vector>

#include "nic/hamlyn/layout.hpp"
#include "nic/hamlyn/ticket.hpp"
#include "sys/status.hpp"

namespace hpam::nic::hamlyn {

// What setup code puts in a slot.
struct slot_spec {
  area_memory memory = area_memory::card;  // where the message area lives
  uint64_t base = 0;                       // card: offset from allocate_area; process: address
  uint64_t bound = 0;                      // bytes
  slot_mode mode = slot_mode::normal;      // protection mode
  uint32_t metadata_count = 0;             // metadata entries for this slot (0 only in fast mode)
  uint32_t notification_queue = 0;         // queue receiving this slot's notifications
  uint64_t key = 0;                        // protection key; 0 = a fresh random one
  uint32_t inline_limit = 0;               // fast-mode messages of up to this many bytes travel
                                           // in their notification entry, not at base + offset
                                           // (inline delivery; <= the room of the card's
                                           // entries, notification_room)
};

// The counts of my card the table works within.
struct slot_limits {
  uint32_t slot_count = 0;                           // slots in the table
  uint32_t metadata_entries = 0;                     // entries in the metadata pool
  uint32_t notification_queues = 0;                  // queues a slot may name
  uint64_t area_bytes = 0;                           // message-area memory
  uint32_t my_proc = 0;                              // the node tickets name
  uint32_t inline_room = notification_inline_bytes;  // what my notification entries carry
                                                     // (notification_room): a slot's
                                                     // inline_limit at most
};

class slot_table {
 public:
  // Binds the table to my card's slots, metadata pool and area memory (all
  // free and all zero: a segment just created), once the card's segment is
  // laid out.
  void bind(slot* slots, metadata_entry* metadata, std::byte* area, const slot_limits& limits);

  // Area memory comes zeroed: free memory is kept zero (free_area zeroes
  // what it takes back), so an allocation writes nothing and touches no
  // page it does not use.
  status allocate_area(uint64_t bytes, uint64_t& offset);      // card memory for message areas
  status allocate_area_top(uint64_t bytes, uint64_t& offset);  // the same, from the area's end
  void free_area(uint64_t offset);
  // The card's hold lines (layout.hpp, hold_line): a revoke waits for the
  // direct deposits they announce too.
  void use_hold_lines(const hold_line* lines, uint32_t count) {
    hold_lines_ = lines;
    hold_line_count_ = count;
  }
  std::byte* area_address(uint64_t offset) const { return area_ + offset; }
  status create_slot(const slot_spec& spec, uint32_t& index);
  // Slots released with one metadata entry kept as spares (below), at most:
  // a window of 64 rendezvous sends in flight (osu_bw's, bench/mpi_pingpong's)
  // registers 64 slots, then releases them one by one.
  static constexpr uint32_t spare_slots_max = 64;
  // No further deposit with the old key. Waits for deposits that passed the
  // checks before it to finish (would_block after 2 s: a sender died inside).
  status revoke(uint32_t index);
  status rekey(uint32_t index, uint64_t key);  // re-activate a slot with a new key
  status release_slot(uint32_t index);         // revoke and free the slot and its metadata area
  const slot& slot_at(uint32_t index) const { return slots_[index]; }
  metadata_entry* metadata(uint32_t slot_index, uint32_t metadata_index);  // null if out of range
  // Paranoid modes: the entry's secondary key and range [low, high) (user level, 2.7).
  status set_paranoid(uint32_t slot_index, uint32_t metadata_index, uint64_t key, uint64_t low,
                      uint64_t high);
  status rearm(uint32_t slot_index, uint32_t metadata_index);  // one-shot: accept the next message
  ticket make_ticket(uint32_t slot_index, uint32_t metadata_index, uint64_t offset, uint64_t range,
                     bool notify) const;

 private:
  void free_metadata_range(uint32_t base, uint32_t count);  // back into the pool, joined
  slot* slots_ = nullptr;
  metadata_entry* metadata_ = nullptr;
  std::byte* area_ = nullptr;
  slot_limits limits_;
  const hold_line* hold_lines_ = nullptr;  // senders' announcements of direct deposits
  uint32_t hold_line_count_ = 0;
  bool held(uint32_t index) const;              // a sender's hold line names slot index
  std::map<uint64_t, uint64_t> free_area_;      // free ranges of area memory
  std::map<uint64_t, uint64_t> used_area_;      // allocated ranges
  std::map<uint32_t, uint32_t> free_metadata_;  // free ranges of the metadata pool
  // A node of free_metadata_ kept from an exact fit for the next release:
  // a registration per MPI rendezvous allocates and frees none.
  std::map<uint32_t, uint32_t>::node_type spare_metadata_node_;
  // Slots released with one metadata entry, kept revoked with that entry:
  // the next one-entry create_slot takes the last one back without the
  // table's walk for a free slot or the metadata pool's free ranges (an MPI
  // rendezvous registers and releases one slot per message on each side).
  // A spare is refused to senders as a free slot is (only an active slot
  // takes deposits) and to the owner's calls (is_spare). A create_slot that
  // finds no free slot or no metadata range gives them back first.
  struct spare_slot {
    uint32_t index;          // the slot, revoked
    uint32_t metadata_base;  // its one metadata entry
  };
  spare_slot spare_slots_[spare_slots_max] = {};
  uint32_t spare_count_ = 0;
  std::vector<uint8_t> spare_mark_;  // per slot: 1 while it is a spare (sized at bind)
  bool is_spare(uint32_t index) const { return index < spare_mark_.size() && spare_mark_[index]; }
  void give_back_spares();  // their slots free, their entries back into the pool
  status take_slot_and_metadata(uint32_t count, uint32_t& index, uint32_t& metadata_base);
};

}  // namespace hpam::nic::hamlyn
