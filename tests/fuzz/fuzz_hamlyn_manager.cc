// libFuzzer harness: the hamlyn_manager's dispatch of notification entries
// to the library's end points (hamlyn_lib). Card 0 owns a datagram
// receiver, a tagged-write receiver, a stream receiver and a stream sender
// (whose credits arrive in its notification queue); card 1 holds their
// seeds and sends to them. Each step of an input is one of: a notification
// with any fields dispatched as if it had been taken from the queue (any
// slot, metadata index, source, word, length, and a carried message of any
// bytes), a metadata entry of an end point's slot rewritten with any bytes
// and then notified (a sender with the key that lies in its metadata),
// honest traffic from card 1 (datagram, tagged write, stream record)
// followed by polls, or the application's side (receive, release, get_tag,
// get_specific_tag) on card 0.
// Findings: a sanitizer report, a record or datagram handed out outside
// card 0's buffers, or a guard byte around them changed.
#include <unistd.h>

#include <cstring>
#include <memory>

#include "fuzz_input.hpp"
#include "hamlyn_lib/datagram.hpp"
#include "hamlyn_lib/stream.hpp"
#include "hamlyn_lib/tagged_write.hpp"

namespace hpam::fuzz {
namespace {

using namespace hamlyn_lib;
namespace hw = nic::hamlyn;

constexpr uint64_t guard_bytes = 256;
constexpr uint8_t guard_byte = 0xA5;

struct world {
  std::unique_ptr<hw::card> mine, peer;
  std::unique_ptr<hamlyn_manager> m0, m1;
  uint64_t guard_low = 0;  // guards on both sides of card 0's end points' buffers
  std::unique_ptr<datagram_receiver> dgram;
  std::unique_ptr<tagged_write_receiver> tagged;
  std::unique_ptr<stream_receiver> in;
  std::unique_ptr<stream_receiver> peer_in;  // card 1's, for my stream sender
  std::unique_ptr<stream_sender> out, peer_out;
  uint64_t guard_high = 0;
  datagram_sender to_dgram;
  tagged_write_sender to_tagged;
  uint32_t slots[4] = {};  // card 0's end point slots: datagram, tagged, stream in, credit
  uint64_t last_id = 0;

  static hw::card_config config(const std::string& job, int me) {
    hw::card_config c;
    c.job = job;
    c.nprocs = 2;
    c.my_proc = me;
    c.slot_count = 16;
    c.metadata_entries = 64;
    c.notify_capacity = 64;
    c.packet_size = 512;
    c.area_bytes = 1 << 18;
    return c;
  }

  uint64_t guard() {
    uint64_t at = 0;
    if (!is_ok(mine->slots().allocate_area(guard_bytes, at))) violated();
    std::memset(mine->slots().area_address(at), guard_byte, guard_bytes);
    return at;
  }

  world() {
    const std::string job = "fuzz-hmgr-" + std::to_string(getpid());
    mine = std::make_unique<hw::card>(config(job, 0));
    peer = std::make_unique<hw::card>(config(job, 1));
    mine->attach_all();
    peer->attach_all();
    m0 = std::make_unique<hamlyn_manager>(*mine);
    m1 = std::make_unique<hamlyn_manager>(*peer);
    guard_low = guard();
    dgram = std::make_unique<datagram_receiver>(*m0, 4, 256);
    tagged = std::make_unique<tagged_write_receiver>(*m0, 1024, 8);
    stream_config sc{8, 2048, 2};
    in = std::make_unique<stream_receiver>(*m0, sc);
    peer_in = std::make_unique<stream_receiver>(*m1, sc);
    out = std::make_unique<stream_sender>();
    peer_out = std::make_unique<stream_sender>();
    // Senders out of credit give up at once (would_block): nothing here
    // waits for time to pass.
    if (!is_ok(out->open(*m0, peer_in->make_seed(), 64, 0)) ||
        !is_ok(peer_out->open(*m1, in->make_seed(), 64, 0)) ||
        !is_ok(to_dgram.open(*m1, dgram->make_seed())) ||
        !is_ok(to_tagged.open(*m1, tagged->make_seed())))
      violated();
    guard_high = guard();
    slots[0] = dgram->make_seed().target.slot;
    slots[1] = tagged->make_seed().target.slot;
    slots[2] = in->make_seed().target.slot;
    for (uint32_t s = 0; s < 16;
         ++s)  // my stream sender's credit slot: the fast one with inline delivery
      if (mine->slots().slot_at(s).inline_limit == sizeof(stream_credit)) slots[3] = s;
  }

  void forged_notification(input& in_) {
    hw::notification n{};
    const uint8_t which = in_.take<uint8_t>();
    n.slot = which < 200 ? slots[which & 3] : in_.take<uint32_t>();
    n.metadata_index = in_.take<uint8_t>() < 64 ? in_.take<uint8_t>() % 10 : hw::fast_index;
    n.source = in_.take<uint8_t>() % 3;
    n.metadata = in_.take<uint64_t>();
    n.length = in_.take<uint8_t>() < 128 ? sizeof(stream_credit) : in_.take<uint32_t>() % 128;
    std::byte carried[hw::max_notification_inline_bytes] = {};
    size_t k = 0;
    const uint8_t* b = in_.rest(k, sizeof carried);
    std::memcpy(carried, b, k);
    n.carried = n.length <= sizeof carried && (which & 4);
    (void)m0->dispatch(n, carried);
  }

  void lying_metadata(input& in_) {
    const uint32_t s = slots[in_.take<uint8_t>() % 3];
    const uint32_t index = in_.take<uint8_t>() % 8;
    hw::metadata_entry* e = mine->slots().metadata(s, index);
    if (!e) return;
    size_t k = 0;
    const uint8_t* b = in_.rest(k, hw::user_metadata_bytes);
    std::memcpy(e->user_metadata, b, k);
    e->metadata_length = static_cast<uint32_t>(k);
    (void)m0->dispatch(hw::notification{s, index, 1, 0, 0}, nullptr);
  }

  void honest(input& in_) {
    const uint8_t what = in_.take<uint8_t>();
    const uint32_t len = in_.take<uint16_t>() % 600;
    std::byte data[600] = {};
    switch (what % 4) {
      case 0:
        (void)to_dgram.send(what % 5, data, len % 300);
        break;
      case 1:
        (void)to_tagged.send(data, len, in_.take<uint16_t>() % 1100, in_.take<uint64_t>());
        break;
      case 2:
        (void)peer_out->send(data, len);
        break;
      default:
        (void)peer_out->flush();
        break;
    }
    for (int i = 0; i < 4; ++i) {
      (void)m0->poll_nowait();
      (void)m1->poll_nowait();
    }
    stream_record r;  // card 1 takes what my stream sender sent it
    while (peer_in->receive(r)) (void)peer_in->release(r.id);
  }

  bool inside_area(const std::byte* p, uint64_t n) const {
    const std::byte* lo = mine->slots().area_address(0);
    const std::byte* hi = lo + mine->view(0).geo.area_bytes;
    return p >= lo && p <= hi && n <= static_cast<uint64_t>(hi - p);
  }

  void application(input& in_) {
    const uint8_t what = in_.take<uint8_t>();
    datagram d;
    stream_record r;
    uint64_t tag = 0;
    switch (what % 6) {
      case 0:
        if (dgram->receive(what % 5, d) && !inside_area(d.data, d.length)) violated();
        dgram->release(in_.take<uint8_t>() % 5);
        break;
      case 1:
        (void)tagged->get_tag(tag);
        break;
      case 2:
        (void)tagged->get_specific_tag(in_.take<uint64_t>() % 8);
        break;
      case 3:
        if (in->receive(r)) {
          if (!inside_area(r.data, r.length)) violated();
          last_id = r.id;
        }
        break;
      case 4:
        (void)in->release(last_id - in_.take<uint8_t>() % 3);
        break;
      default:
        (void)out->send(&tag, in_.take<uint8_t>() % 9);
        break;
    }
  }

  void step(input& in_) {
    switch (in_.take<uint8_t>() % 4) {
      case 0:
        forged_notification(in_);
        break;
      case 1:
        lying_metadata(in_);
        break;
      case 2:
        honest(in_);
        break;
      default:
        application(in_);
        break;
    }
  }

  bool intact() const {
    for (uint64_t at : {guard_low, guard_high})
      for (uint64_t i = 0; i < guard_bytes; ++i)
        if (static_cast<uint8_t>(mine->slots().area_address(at)[i]) != guard_byte) return false;
    return true;
  }
};

}  // namespace
}  // namespace hpam::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return hpam::fuzz::run<hpam::fuzz::world, 16>(data, size);
}
