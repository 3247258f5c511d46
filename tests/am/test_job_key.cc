// The job's protection key (HPAM 5.3): random per job, never derived from
// anything visible (the job id is in every /dev/shm name). Process 0 draws
// it and publishes it in its card; the others read it there. Packets of
// another job, or stamped with a key computed from the job id, are rejected
// and counted.
#include <gtest/gtest.h>

#include <memory>
#include <stdexcept>
#include <string>

#include "am/endpoint_impl.hpp"
#include "hostile_peer.hpp"
#include "protocol_fixture.hpp"
#include "sys/crc32c.hpp"

namespace hpam::test {
namespace {

// What the old code used as every job's key: two CRC32Cs of the job id.
uint64_t key_derived_from(const std::string& job) {
  const uint64_t lo = sys::crc32c(job.data(), job.size(), 0x48504d41u);
  const uint64_t hi = sys::crc32c(job.data(), job.size(), 0x4b455953u);
  return (hi << 32) | lo;
}

template <class Card>
am::endpoint_config config_for(const std::string& job, int nprocs, int me, uint64_t key = 0) {
  am::endpoint_config c;
  c.card.job = job;
  c.card.nprocs = nprocs;
  c.card.my_proc = me;
  c.card.attach_timeout_ms = 2000;
  c.key = key;
  return c;
}

template <class Card>
class job_key : public ::testing::Test {};
TYPED_TEST_SUITE(job_key, card_types);

TYPED_TEST(job_key, is_random_per_job_shared_by_its_processes_and_not_from_the_job_id) {
  const std::string id = unique_job("key");
  uint64_t first = 0;
  for (int run = 0; run < 2; ++run) {  // the same job id twice: two different keys
    am::endpoint<TypeParam> e0(config_for<TypeParam>(id, 2, 0));
    am::endpoint<TypeParam> e1(config_for<TypeParam>(id, 2, 1));
    EXPECT_NE(e0.key(), 0u);
    EXPECT_EQ(e1.key(), e0.key());
    EXPECT_NE(e0.key(), key_derived_from(id));
    if (run == 0)
      first = e0.key();
    else
      EXPECT_NE(e0.key(), first);
  }
}

TYPED_TEST(job_key, a_process_without_a_key_when_process_0_has_one_is_a_clear_error) {
  const std::string id = unique_job("key");
  am::endpoint<TypeParam> e0(config_for<TypeParam>(id, 2, 0, 0x1234));
  try {
    am::endpoint<TypeParam> e1(config_for<TypeParam>(id, 2, 1));
    FAIL() << "process 1 started without the job's key";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("publishes no job key"), std::string::npos) << e.what();
  }
}

// Two jobs of the same user on one node at once. A process of job A opens
// job B's cards (it can: same user) and sends requests stamped with its own
// key, and with the key the old code derived from B's job id: each is
// rejected and counted; none runs a handler.
TYPED_TEST(job_key, packets_from_another_job_are_rejected_and_counted) {
  const std::string a = unique_job("jobA"), b = unique_job("jobB");
  am::endpoint<TypeParam> a0(config_for<TypeParam>(a, 2, 0)), a1(config_for<TypeParam>(a, 2, 1));
  // Job B has a third process slot nobody took: the intruder takes it.
  am::endpoint<TypeParam> b0(config_for<TypeParam>(b, 3, 0)), b1(config_for<TypeParam>(b, 3, 1));
  int runs = 0;
  ASSERT_EQ(b0.register_handler4(
                1,
                [](hpam_token*, void* ctx, uint64_t, uint64_t, uint64_t, uint64_t) {
                  ++*static_cast<int*>(ctx);
                },
                &runs),
            hpam::status::ok);
  b0.connect(1);
  am::endpoint_config ci = config_for<TypeParam>(b, 3, 2, a0.key());
  sys::clock clk;
  TypeParam intruder(am::detail::card_setup_for(ci, &clk));
  intruder.attach_peer(0);
  uint32_t block;
  ASSERT_TRUE(intruder.claim_tx_block(block));
  uint16_t seq = 1;
  for (uint64_t key : {a0.key(), key_derived_from(b), a1.key() ^ 1}) {
    std::byte* pkt = intruder.tx_block(block);
    am::am_header h =
        hostile_peer<TypeParam>::header(am::msg_class::request, am::msg_kind::short4, 0, seq++, 1);
    h.key = key;
    std::memcpy(pkt + nic::wire_header_size, &h, sizeof h);
    intruder.launch(0, block, am::packet_header_size);
    (void)b0.poll();
  }
  EXPECT_EQ(runs, 0);
  EXPECT_EQ(b0.peer_counters(2).key_rejections, 3u);
  EXPECT_EQ(b0.peer_counters(2).requests_received, 0u);
  // With job B's own key (which only B's processes know) it would run.
  std::byte* pkt = intruder.tx_block(block);
  am::am_header h =
      hostile_peer<TypeParam>::header(am::msg_class::request, am::msg_kind::short4, 0, 1, 1);
  h.key = b1.key();
  std::memcpy(pkt + nic::wire_header_size, &h, sizeof h);
  intruder.launch(0, block, am::packet_header_size);
  (void)b0.poll();
  EXPECT_EQ(runs, 1);
}

}  // namespace
}  // namespace hpam::test
