// hpam_hamlyn.hpp, the installed C++ interface of the Hamlyn library's
// protocols: each public class holds the layer's own object (pimpl), so
// the installed header needs none of the core's.
#include <cstring>
#include <stdexcept>
#include <thread>
#include <type_traits>

#include "hamlyn_lib/datagram.hpp"
#include "hamlyn_lib/stream.hpp"
#include "hamlyn_lib/tagged_write.hpp"
#include "hpam_hamlyn.hpp"

namespace hpam::hamlyn {

namespace lib = hpam::hamlyn_lib;
namespace hw = hpam::nic::hamlyn;

static_assert(sizeof(seed) == sizeof(lib::seed) && sizeof(ticket) == sizeof(hw::ticket));
static_assert(
    static_cast<int32_t>(status::would_block) == static_cast<int32_t>(hpam::status::would_block) &&
    static_cast<int32_t>(status::invalid_argument) ==
        static_cast<int32_t>(hpam::status::invalid_argument) &&
    static_cast<int32_t>(status::rejected) == static_cast<int32_t>(hpam::status::rejected) &&
    static_cast<int32_t>(status::no_resource) == static_cast<int32_t>(hpam::status::no_resource));

namespace {
status out(hpam::status s) {  // the core's other codes do not arise here; said as rejected
  switch (s) {
    case hpam::status::ok:
      return status::ok;
    case hpam::status::would_block:
    case hpam::status::busy:
      return status::would_block;
    case hpam::status::invalid_argument:
      return status::invalid_argument;
    case hpam::status::no_resource:
      return status::no_resource;
    default:
      return status::rejected;
  }
}
// Seeds and tickets cross the interface as bytes of the same size.
template <class To, class From>
To same_bytes(const From& f) {
  static_assert(sizeof(To) == sizeof(From) && std::is_trivially_copyable_v<To>);
  To t;
  std::memcpy(&t, &f, sizeof t);
  return t;
}
seed to_public(const lib::seed& s) {
  return same_bytes<seed>(s);
}
ticket to_public(const hw::ticket& t) {
  return same_bytes<ticket>(t);
}
lib::seed from_public(const seed& p) {
  return same_bytes<lib::seed>(p);
}
hw::ticket from_public(const ticket& p) {
  return same_bytes<hw::ticket>(p);
}
}  // namespace

struct hamlyn_manager::impl {
  hw::card card;
  lib::hamlyn_manager m;
  static hw::card_config config(const manager_config& c) {
    hw::card_config k;
    k.job = c.job;
    k.nprocs = c.nprocs;
    k.my_proc = c.my_proc;
    k.what = "hamlyn-lib";
    k.area_bytes = c.buffer_bytes;
    k.metadata_entries = c.metadata_entries;
    k.notify_capacity = c.notify_capacity;
    k.packet_size = c.packet_size;
    k.attach_timeout_ms = c.attach_timeout_ms;
    return k;
  }
  explicit impl(const manager_config& c) : card(config(c)), m((card.attach_all(), card)) {}
};

hamlyn_manager::hamlyn_manager(const manager_config& cfg) {
  if (cfg.job.empty() || cfg.nprocs < 1 || cfg.my_proc < 0 || cfg.my_proc >= cfg.nprocs)
    throw std::invalid_argument("hamlyn_manager: a job id, nprocs >= 1 and my_proc in [0, nprocs)");
  impl_ = std::make_unique<impl>(cfg);
}
hamlyn_manager::~hamlyn_manager() = default;
bool hamlyn_manager::poll_nowait() {
  return impl_->m.poll_nowait();
}
uint64_t monotonic_ns() {
  return sys::clock::monotonic_ns();
}
void yield_processor() {
  std::this_thread::yield();
}
int hamlyn_manager::my_proc() const {
  return impl_->card.my_proc();
}

// --- datagram ----------------------------------------------------------------
struct datagram_receiver::impl {
  hamlyn_manager& manager;
  lib::datagram_receiver r;
  impl(hamlyn_manager& m, uint32_t n, uint32_t bytes) : manager(m), r(m.internal().m, n, bytes) {}
};
datagram_receiver::datagram_receiver(hamlyn_manager& m, uint32_t instances, uint32_t instance_bytes)
    : impl_(std::make_unique<impl>(m, instances, instance_bytes)) {}
datagram_receiver::~datagram_receiver() = default;
seed datagram_receiver::make_seed() const {
  return to_public(impl_->r.make_seed());
}
ticket datagram_receiver::reply_ticket(uint32_t instance) const {
  return to_public(impl_->r.reply_ticket(instance));
}
bool datagram_receiver::receive(uint32_t instance, datagram& d) {
  lib::datagram x;
  if (!impl_->r.receive(instance, x)) return false;
  d.data = x.data;
  d.length = x.length;
  d.source = x.source;
  d.has_reply = x.has_reply;
  d.reply = to_public(x.reply);
  return true;
}
void datagram_receiver::release(uint32_t instance) {
  impl_->r.release(instance);
}
bool datagram_receiver::receive_block(uint32_t instance, datagram& d, uint64_t timeout_ns) {
  return impl_->manager.wait_until([&] { return receive(instance, d); }, timeout_ns);
}

struct datagram_sender::impl {
  lib::datagram_sender s;
};
datagram_sender::datagram_sender() : impl_(std::make_unique<impl>()) {}
datagram_sender::~datagram_sender() = default;
status datagram_sender::open(hamlyn_manager& m, const seed& s) {
  return out(impl_->s.open(m.internal().m, from_public(s)));
}
status datagram_sender::open_reply(hamlyn_manager& m, const ticket& reply) {
  return out(impl_->s.open_reply(m.internal().m, from_public(reply)));
}
status datagram_sender::send(uint32_t instance, const void* data, uint32_t length,
                             const ticket* reply) {
  if (!reply) return out(impl_->s.send(instance, data, length));
  const hw::ticket t = from_public(*reply);
  return out(impl_->s.send(instance, data, length, &t));
}

// --- stream ------------------------------------------------------------------
struct stream_receiver::impl {
  lib::stream_receiver r;
  impl(lib::hamlyn_manager& m, const lib::stream_config& c) : r(m, c) {}
};
stream_receiver::stream_receiver(hamlyn_manager& m, const stream_config& cfg)
    : impl_(std::make_unique<impl>(
          m.internal().m, lib::stream_config{cfg.records, cfg.buffer_bytes, cfg.max_regions})) {}
stream_receiver::~stream_receiver() = default;
seed stream_receiver::make_seed() const {
  return to_public(impl_->r.make_seed());
}
bool stream_receiver::receive(stream_record& r) {
  lib::stream_record x;
  if (!impl_->r.receive(x)) return false;
  r = stream_record{x.data, x.length, x.id};
  return true;
}
bool stream_receiver::receive_block(stream_record& r, uint64_t timeout_ns) {
  lib::stream_record x;
  if (!impl_->r.receive_block(x, timeout_ns)) return false;
  r = stream_record{x.data, x.length, x.id};
  return true;
}
status stream_receiver::release(uint64_t id) {
  return out(impl_->r.release(id));
}

struct stream_sender::impl {
  lib::stream_sender s;
};
stream_sender::stream_sender() : impl_(std::make_unique<impl>()) {}
stream_sender::~stream_sender() = default;
status stream_sender::open(hamlyn_manager& m, const seed& s, uint32_t coalesce_bytes,
                           uint64_t wait_ns) {
  return out(impl_->s.open(m.internal().m, from_public(s), coalesce_bytes, wait_ns));
}
status stream_sender::send(const void* data, uint64_t length) {
  return out(impl_->s.send(data, length));
}
status stream_sender::flush() {
  return out(impl_->s.flush());
}

// --- tagged remote write -------------------------------------------------------
struct tagged_write_receiver::impl {
  lib::tagged_write_receiver r;
  impl(lib::hamlyn_manager& m, uint64_t bytes, uint32_t cap) : r(m, bytes, cap) {}
};
tagged_write_receiver::tagged_write_receiver(hamlyn_manager& m, uint64_t bytes,
                                             uint32_t tag_capacity)
    : impl_(std::make_unique<impl>(m.internal().m, bytes, tag_capacity)) {}
tagged_write_receiver::~tagged_write_receiver() = default;
seed tagged_write_receiver::make_seed() const {
  return to_public(impl_->r.make_seed());
}
void* tagged_write_receiver::buffer() const {
  return impl_->r.buffer();
}
uint64_t tagged_write_receiver::bytes() const {
  return impl_->r.bytes();
}
bool tagged_write_receiver::get_tag(uint64_t& tag) {
  return impl_->r.get_tag(tag);
}
bool tagged_write_receiver::get_specific_tag(uint64_t tag) {
  return impl_->r.get_specific_tag(tag);
}
bool tagged_write_receiver::get_tag_block(uint64_t& tag, uint64_t timeout_ns) {
  return impl_->r.get_tag_block(tag, timeout_ns);
}
bool tagged_write_receiver::get_specific_tag_block(uint64_t tag, uint64_t timeout_ns) {
  return impl_->r.get_specific_tag_block(tag, timeout_ns);
}

struct tagged_write_sender::impl {
  lib::tagged_write_sender s;
};
tagged_write_sender::tagged_write_sender() : impl_(std::make_unique<impl>()) {}
tagged_write_sender::~tagged_write_sender() = default;
status tagged_write_sender::open(hamlyn_manager& m, const seed& s) {
  return out(impl_->s.open(m.internal().m, from_public(s)));
}
status tagged_write_sender::send(const void* source, uint32_t length, uint64_t offset,
                                 uint64_t tag) {
  return out(impl_->s.send(source, length, offset, tag));
}

}  // namespace hpam::hamlyn
