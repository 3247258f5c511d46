// Active messages over the transport, between two interfaces of one job in
// this process: busy -> UCS_ERR_NO_RESOURCE and UCX's pending queue (never
// dropped, never out of order), sends from inside a handler, flush, order
// and exactly-once delivery over a faulty wire, on both NIC models.
#include "uct_fixture.hpp"

using namespace hpam_uct_test;

namespace {

constexpr uint8_t kAm = 7;

// What a receiving side saw: the index each message carried, in order.
struct inbox {
  std::vector<uint64_t> got;
  size_t bytes = 0;
  // Set to reply from inside the handler (the HPAM rule forbids sending there).
  uct_ep_h reply_ep = nullptr;
  std::vector<ucs_status_t> reply_status;
  uct_pending_req_t reply_req{};
  bool reply_queued = false;
  int reply_sent = 0;

  static ucs_status_t handler(void* arg, void* data, size_t length, unsigned flags) {
    auto* box = static_cast<inbox*>(arg);
    uint64_t header;
    std::memcpy(&header, data, sizeof header);
    box->got.push_back(header);
    box->bytes += length;
    if (box->reply_ep != nullptr && !box->reply_queued) {
      const ucs_status_t st = uct_ep_am_short(box->reply_ep, kAm + 1, header, nullptr, 0);
      box->reply_status.push_back(st);
      if (st == UCS_ERR_NO_RESOURCE) {
        box->reply_req.func = send_reply;
        box->reply_queued = uct_ep_pending_add(box->reply_ep, &box->reply_req, 0) == UCS_OK;
      }
    }
    return UCS_OK;
  }
  static ucs_status_t send_reply(uct_pending_req_t* req) {
    inbox* box = ucs_container_of(req, inbox, reply_req);
    const ucs_status_t st = uct_ep_am_short(box->reply_ep, kAm + 1, 42, nullptr, 0);
    if (st == UCS_OK) box->reply_sent++;
    return st;
  }
};

struct counter {
  int n = 0;
  static ucs_status_t handler(void* arg, void*, size_t, unsigned) {
    static_cast<counter*>(arg)->n++;
    return UCS_OK;
  }
};

class uct_am : public ::testing::TestWithParam<const char*> {
 protected:
  void open(settings extra = {}) {
    settings s = {{"JOB", unique_job()}, {"NIC", GetParam()}, {"DEPTH", "2"}};
    s.insert(s.end(), extra.begin(), extra.end());
    ASSERT_EQ(UCS_OK, open_md(s, &md));
    ASSERT_EQ(UCS_OK, a.open(md, GetParam()));
    ASSERT_EQ(UCS_OK, b.open(md, GetParam()));
    ASSERT_EQ(UCS_OK, uct_iface_set_am_handler(b.iface, kAm, inbox::handler, &box, 0));
    ASSERT_EQ(UCS_OK, connect(a, b, &ab));
    ASSERT_EQ(UCS_OK, connect(b, a, &ba));
  }
  void TearDown() override {
    if (ab) uct_ep_destroy(ab);
    if (ba) uct_ep_destroy(ba);
    close_together({&a, &b});
    if (md) uct_md_close(md);
  }
  uct_md_h md = nullptr;
  side a, b;
  uct_ep_h ab = nullptr, ba = nullptr;
  inbox box;
};

// D = 2: two messages go while the receiver does not poll, the third finds
// both instances busy: UCS_ERR_NO_RESOURCE, queued by UCX, sent once the
// receiver answers, and everything arrives once and in order.
TEST_P(uct_am, busy_returns_no_resource_and_pending_keeps_order) {
  open();
  ASSERT_EQ(UCS_OK, uct_ep_am_short(ab, kAm, 0, nullptr, 0));
  ASSERT_EQ(UCS_OK, uct_ep_am_short(ab, kAm, 1, nullptr, 0));
  EXPECT_EQ(UCS_ERR_NO_RESOURCE, uct_ep_am_short(ab, kAm, 2, nullptr, 0));

  struct queued {
    uct_pending_req_t req;
    uct_ep_h ep;
    uint64_t index;
    bool sent;
  } q[3];
  for (int i = 0; i < 3; ++i) {
    q[i] = {{}, ab, uint64_t(2 + i), false};
    q[i].req.func = [](uct_pending_req_t* r) {
      auto* self = reinterpret_cast<queued*>(r);
      const ucs_status_t st = uct_ep_am_short(self->ep, kAm, self->index, nullptr, 0);
      self->sent = st == UCS_OK;
      return st;
    };
    ASSERT_EQ(UCS_OK, uct_ep_pending_add(ab, &q[i].req, 0));
  }
  // Anything sent directly now would overtake the queue: it must wait too.
  EXPECT_EQ(UCS_ERR_NO_RESOURCE, uct_ep_am_short(ab, kAm, 99, nullptr, 0));
  // An endpoint flush waits behind the queue (UCX queues it too); an
  // interface flush is in progress (UCX's worker flush takes anything else
  // for a failure).
  EXPECT_EQ(UCS_ERR_NO_RESOURCE, uct_ep_flush(ab, 0, nullptr));
  EXPECT_EQ(UCS_INPROGRESS, uct_iface_flush(a.iface, 0, nullptr));
  ASSERT_TRUE(progress_until({&a, &b}, [&] { return box.got.size() == 5; }));
  EXPECT_EQ((std::vector<uint64_t>{0, 1, 2, 3, 4}), box.got);
  for (auto& e : q) EXPECT_TRUE(e.sent);
  // A flush completes once every message was answered.
  ASSERT_TRUE(progress_until({&a, &b}, [&] { return uct_ep_flush(ab, 0, nullptr) == UCS_OK; }));
}

// UCX handlers send from inside themselves; HPAM lets a request handler only
// reply. The send returns UCS_ERR_NO_RESOURCE, goes on the pending queue and
// leaves right after the poll.
TEST_P(uct_am, send_from_handler_is_queued_not_dropped) {
  open();
  counter replies;
  ASSERT_EQ(UCS_OK, uct_iface_set_am_handler(a.iface, kAm + 1, counter::handler, &replies, 0));
  box.reply_ep = ba;
  ASSERT_EQ(UCS_OK, uct_ep_am_short(ab, kAm, 5, nullptr, 0));
  ASSERT_TRUE(progress_until({&a, &b}, [&] { return replies.n == 1; }));
  ASSERT_EQ(1u, box.reply_status.size());
  EXPECT_EQ(UCS_ERR_NO_RESOURCE, box.reply_status[0]);
  EXPECT_TRUE(box.reply_queued);
  EXPECT_EQ(1, box.reply_sent);
}

TEST_P(uct_am, flush_waits_for_the_answer) {
  open();
  ASSERT_EQ(UCS_OK, uct_ep_am_short(ab, kAm, 0, nullptr, 0));
  struct done_flag {
    uct_completion_t comp;
    bool done;
    ucs_status_t status;
  } f{};
  f.comp.func = [](uct_completion_t* c) {
    auto* self = reinterpret_cast<done_flag*>(c);
    self->done = true;
    self->status = c->status;
  };
  f.comp.count = 1;
  f.comp.status = UCS_OK;
  ASSERT_EQ(UCS_INPROGRESS, uct_ep_flush(ab, 0, &f.comp));
  a.progress();  // the receiver has not polled: nothing can be answered
  EXPECT_FALSE(f.done);
  ASSERT_TRUE(progress_until({&a, &b}, [&] { return f.done; }));
  EXPECT_EQ(UCS_OK, f.status);
  EXPECT_EQ(UCS_OK, uct_iface_flush(a.iface, 0, nullptr));
}

TEST_P(uct_am, bcopy_and_iov_carry_the_bytes) {
  open();
  struct packer {
    static size_t pack(void* dest, void* arg) {
      const uint64_t header = 11;
      std::memcpy(dest, &header, 8);
      std::memset(static_cast<char*>(dest) + 8, 0xab, *static_cast<size_t*>(arg) - 8);
      return *static_cast<size_t*>(arg);
    }
  };
  size_t len = a.attr.cap.am.max_bcopy;
  EXPECT_EQ(ssize_t(len), uct_ep_am_bcopy(ab, kAm, packer::pack, &len, 0));
  uint64_t header = 12, tail[3] = {1, 2, 3};
  uct_iov_t iov[2] = {{&header, 8, nullptr, 0, 1}, {tail, sizeof tail, nullptr, 0, 1}};
  ASSERT_TRUE(progress_until(
      {&a, &b}, [&] { return uct_ep_am_short_iov(ab, kAm, iov, 2) != UCS_ERR_NO_RESOURCE; }));
  ASSERT_TRUE(progress_until({&a, &b}, [&] { return box.got.size() == 2; }));
  EXPECT_EQ((std::vector<uint64_t>{11, 12}), box.got);
  EXPECT_EQ(len + 8 + sizeof tail, box.bytes);
  // Too long for one packet: refused, not truncated.
  std::vector<char> big(a.attr.cap.am.max_short);
  log_capture quiet;
  EXPECT_EQ(UCS_ERR_INVALID_PARAM, uct_ep_am_short(ab, kAm, 0, big.data(), big.size()));
}

// Over a wire that drops, duplicates, corrupts and reorders, with D = 4:
// retransmitted requests arrive after later ones, and the transport must
// still hand every message to UCX exactly once and in order.
TEST_P(uct_am, faulty_wire_delivers_once_in_order) {
  open({{"DEPTH", "4"},
        {"FAULT_DROP", "0.05"},
        {"FAULT_DUPLICATE", "0.05"},
        {"FAULT_CORRUPT", "0.05"},
        {"FAULT_REORDER", "0.2"},
        {"TIMEOUT_US", "100"},
        {"FAULT_SEED", "7"}});
  constexpr uint64_t kCount = 3000;
  uint64_t next = 0;
  ASSERT_TRUE(progress_until(
      {&a, &b},
      [&] {
        while (next < kCount && uct_ep_am_short(ab, kAm, next, &next, sizeof next) == UCS_OK)
          ++next;
        return next == kCount && box.got.size() == kCount;
      },
      60));
  for (uint64_t i = 0; i < kCount; ++i) ASSERT_EQ(i, box.got[i]) << "at " << i;
}

INSTANTIATE_TEST_SUITE_P(nics, uct_am, ::testing::Values("medusa", "hamlyn"));

}  // namespace
