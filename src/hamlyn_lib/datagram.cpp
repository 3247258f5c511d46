// The simple datagram protocol (OSDI'96 3.3).
#include "hamlyn_lib/datagram.hpp"

#include <cstring>
#include <stdexcept>

namespace hpam::hamlyn_lib {

datagram_receiver::datagram_receiver(hamlyn_manager& m, uint32_t instances, uint32_t instance_bytes)
    : manager_(m), instances_(instances), instance_bytes_(instance_bytes) {
  if (instances == 0 || instance_bytes == 0)
    throw std::invalid_argument("datagram_receiver: instances and instance_bytes must be > 0");
  const uint64_t bytes = uint64_t{instances} * instance_bytes;
  if (!is_ok(m.allocate_buffer(bytes, area_)))
    throw std::runtime_error("datagram_receiver: no card memory for " + std::to_string(bytes) +
                             " bytes");
  if (!is_ok(m.open_slot(area_, bytes, hw::slot_mode::normal, instances, 0, this, slot_))) {
    m.free_buffer(area_);
    throw std::runtime_error("datagram_receiver: no slot or metadata entries for " +
                             std::to_string(instances) + " instances");
  }
  buffers_ = m.address(area_);
  ready_.assign(instances, 0);
  datagrams_.resize(instances);
}

datagram_receiver::~datagram_receiver() {
  manager_.close_slot(slot_);
  manager_.free_buffer(area_);
}

seed datagram_receiver::make_seed() const {
  return manager_.make_seed(protocol::datagram, slot_, 0, uint64_t{instances_} * instance_bytes_,
                            instances_, instance_bytes_);
}

hw::ticket datagram_receiver::reply_ticket(uint32_t instance) const {
  const uint32_t i = instance < instances_ ? instance : 0;
  return manager_.card().slots().make_ticket(slot_, i, uint64_t{i} * instance_bytes_,
                                             instance_bytes_, true);
}

bool datagram_receiver::receive(uint32_t instance, datagram& d) {
  if (instance >= instances_) return false;
  if (!ready_[instance]) (void)manager_.poll_nowait();
  if (!ready_[instance]) return false;
  d = datagrams_[instance];
  return true;
}

// The entry's metadata, copied once: offset and length inside the
// instance's own buffer (the sender wrote them).
bool datagram_receiver::process_arrival(const arrival& a) {
  const uint32_t i = a.n.metadata_index;
  std::byte meta[datagram_metadata::bytes];
  if (!a.metadata || i >= instances_ || a.metadata->metadata_length < 12) {
    counters_.malformed++;
    return true;
  }
  std::memcpy(meta, a.metadata->user_metadata, sizeof meta);
  uint32_t offset, length, flags;
  std::memcpy(&offset, meta, 4);
  std::memcpy(&length, meta + 4, 4);
  std::memcpy(&flags, meta + 8, 4);
  const bool reply = (flags & datagram_metadata::flag_reply) != 0;
  if (offset > instance_bytes_ || length > instance_bytes_ - offset ||
      (flags & ~datagram_metadata::flag_reply) ||
      (reply && a.metadata->metadata_length < datagram_metadata::bytes)) {
    counters_.malformed++;
    return true;
  }
  datagram& d = datagrams_[i];
  d.data = buffers_ + uint64_t{i} * instance_bytes_ + offset;
  d.length = length;
  d.source = a.n.source;
  d.has_reply = reply;
  if (reply) std::memcpy(&d.reply, meta + 12, sizeof d.reply);
  if (ready_[i]) counters_.replaced++;
  ready_[i] = 1;
  counters_.arrivals++;
  return true;
}

status datagram_sender::open(hamlyn_manager& m, const seed& s) {
  const status st = m.check_seed(s, protocol::datagram);
  if (!is_ok(st)) return st;
  manager_ = &m;
  seed_ = s;
  return status::ok;
}

status datagram_sender::open_reply(hamlyn_manager& m, const hw::ticket& reply) {
  seed s{};
  s.magic = seed_magic;
  s.version = seed_version;
  s.kind = static_cast<uint32_t>(protocol::datagram);
  s.target = reply;
  s.entries = 1;
  s.entry_bytes = reply.range < (1ull << 32) ? static_cast<uint32_t>(reply.range) : 0;
  return open(m, s);
}

status datagram_sender::send(uint32_t instance, const void* data, uint32_t length,
                             const hw::ticket* reply) {
  if (!manager_ || instance >= seed_.entries || length > seed_.entry_bytes)
    return status::invalid_argument;
  std::byte meta[datagram_metadata::bytes];
  const uint32_t offset = 0, flags = reply ? datagram_metadata::flag_reply : 0u;
  std::memcpy(meta, &offset, 4);
  std::memcpy(meta + 4, &length, 4);
  std::memcpy(meta + 8, &flags, 4);
  if (reply) std::memcpy(meta + 12, reply, sizeof *reply);
  hw::ticket t = seed_.target;
  t.metadata_index = seed_.target.metadata_index + instance;
  t.offset = seed_.target.offset + uint64_t{instance} * seed_.entry_bytes;
  t.range = seed_.entry_bytes;
  const iovec piece{const_cast<void*>(data), length};
  hw::message msg;
  msg.gather = &piece;
  msg.gather_count = 1;
  msg.metadata = meta;
  msg.metadata_length = reply ? datagram_metadata::bytes : 12u;
  hw::send_handle h;
  const status st = manager_->card().terminus().send(t, msg, h);
  if (!is_ok(st)) return st;
  return manager_->wait_sent(h);
}

}  // namespace hpam::hamlyn_lib
