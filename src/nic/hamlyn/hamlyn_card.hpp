// The emulated Hamlyn interface of one process (OSDI'96 sections 2-3,
// HotInterconnects'95 sections 2-3): the card's memory (my card segment and
// the mappings of my peers' cards), the peers, and its three parts:
//
// * setup code (the "OS" of the emulation, slot_table.hpp: create_slot,
//   revoke, release_slot, allocate_area) writes the slot table; everything
//   else is user level;
// * the send terminus and the card's send engine (send_terminus.hpp);
// * the receiving interface (receiving_interface.hpp): checks, deposit,
//   packet counting and notification, done by the sender's process in the
//   receiver's card segment, so the receiving CPU does nothing until it
//   looks at its notification queue. Message areas in card memory are
//   written directly; areas in the receiver's private memory with
//   process_vm_writev when the kernel allows it (probed per peer at attach,
//   or forbidden by the cross_memory parameter), and otherwise by packets
//   placed in the receiver's inbound FIFO, which the receiver deposits when
//   it polls (the fallback).
//
// Hot paths (send, engine, arrival, poll) do not allocate, lock or throw;
// cross-memory writes are system calls by nature.
#pragma once

#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "nic/hamlyn/card_view.hpp"
#include "nic/hamlyn/layout.hpp"
#include "nic/hamlyn/notification_queue.hpp"
#include "nic/hamlyn/receiving_interface.hpp"
#include "nic/hamlyn/send_terminus.hpp"
#include "nic/hamlyn/slot_table.hpp"
#include "nic/hamlyn/ticket.hpp"
#include "sys/process_state.hpp"
#include "sys/status.hpp"

namespace hpam::nic::hamlyn {

class card {
 public:
  explicit card(const card_config& cfg);  // creates my card segment (throws on setup error)
  ~card();
  card(const card&) = delete;
  card& operator=(const card&) = delete;

  void attach_peer(
      int proc);  // maps proc's card and probes cross-memory attach (throws on timeout)
  void attach_all();
  bool attached(int proc) const { return views_[proc].attached; }
  bool cross_memory_to(int proc) const { return views_[proc].cross_memory; }
  int my_proc() const { return my_proc_; }
  int nprocs() const { return nprocs_; }
  uint32_t packet_size() const { return cfg_.packet_size; }
  uint32_t packet_data_bytes() const { return cfg_.packet_size - sizeof(packet_header); }

  // --- the card's parts ------------------------------------------------
  slot_table& slots() { return slots_; }  // setup code (the "OS"): areas, slots, keys, tickets
  const slot_table& slots() const { return slots_; }
  send_terminus& terminus() { return terminus_; }  // h_send_msg, the engine, the completion word
  const send_terminus& terminus() const { return terminus_; }
  receiving_interface& receiver() { return receiver_; }  // arrival, h_recv, the fallback path
  const receiving_interface& receiver() const { return receiver_; }
  // h_recv_block: waits up to timeout_ns for a notification of queue q
  // (spinning, then yielding the processor; the emulation has no interrupt
  // to sleep on), sending what my terminus holds while it waits.
  bool receive_block(uint32_t q, notification& n, uint64_t timeout_ns);

  // --- for the layers above (deposit, AM card) ---------------------------
  const card_view& view(int proc) const { return views_[proc]; }
  card_header& header() const { return *own_header_; }
  // What arrived at my card (the header's counters and the hold lines').
  arrival_totals arrivals() const { return arrival_totals_of(views_[my_proc_], nprocs_); }
  // Places one raw packet in proc's inbound FIFO: header, then the pieces.
  // False when the FIFO has no free buffer (try again after polling).
  bool push_packet(int proc, const packet_header& h, const iovec* pieces, int n) {
    return hamlyn::push_packet(views_[proc], h, pieces, n);
  }
  // Publishes the layer above's header, at area offset `offset` (it starts
  // with a client_prefix carrying `magic`); peers find it with find_client.
  void publish_client(uint64_t offset, uint64_t magic);
  void announce_done() { header().done.store(1, std::memory_order_release); }
  bool peer_done(int proc) const;
  // The job key proc's card publishes (card_config::job_key): attaches proc.
  uint64_t published_key(int proc) {
    attach_peer(proc);
    return views_[proc].job_key;
  }
  bool peer_alive(int proc) const;
  // Liveness of a silent peer (cold path: system calls): what the kernel
  // says of its process, and how often it has polled (beat()).
  sys::process_state peer_process(int proc) const;
  uint32_t peer_heartbeat(int proc) const {  // modulo 2^32
    return views_[proc].attached ? views_[proc].header->heartbeat.load(std::memory_order_relaxed)
                                 : 0;
  }
  // The owner is polling: advance the heartbeat peers read.
  void beat() { header().heartbeat.store(++beats_, std::memory_order_relaxed); }

 private:
  void layout_segment();
  void offer_hold_lines(card_view& v);
  uint64_t segment_bytes() const;
  uint64_t resident_bytes(const card_geometry& g) const;

  card_config cfg_;
  int my_proc_;
  int nprocs_;
  std::string segment_name_;
  std::vector<card_view> views_;       // [proc]; views_[my_proc_] is my own card
  uint64_t probe_word_ = 0;            // read by peers to probe cross-memory attach
  slot_table slots_;                   // the setup code's part of my card
  receiving_interface receiver_;       // my receiving interface
  send_terminus terminus_;             // my send terminus and engine
  uint32_t beats_ = 0;                 // my heartbeat, mirrored in the header
  card_header* own_header_ = nullptr;  // my card's header (views_[my_proc_]'s, kept
                                       // for the poll's heartbeat: no index)
};

}  // namespace hpam::nic::hamlyn
