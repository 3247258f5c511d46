// The knob table (hpam_knobs.h): one default, one range and one help per
// knob, the same through every front end's naming; the C configuration and
// the core's are bound field by field.
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "capi/knobs.hpp"
#include "hpam_knobs.h"
#include "nic/card.hpp"
#include "nic/hamlyn/card_view.hpp"
#include "nic/hamlyn/layout.hpp"
#include "nic/medusa/card_memory.hpp"

namespace hpam::test {
namespace {

size_t knob(const char* name) {
  const int i = hpam_knob_find(name);
  EXPECT_GE(i, 0) << name;
  return static_cast<size_t>(i);
}

hpam_knob_value_t whole(int64_t v) {
  hpam_knob_value_t x{};
  x.i = v;
  return x;
}
hpam_knob_value_t real(double v) {
  hpam_knob_value_t x{};
  x.r = v;
  return x;
}
hpam_knob_value_t word(const char* v) {
  hpam_knob_value_t x{};
  x.s = v;
  return x;
}

std::string check(const char* name, hpam_knob_value_t v, const hpam_config_t* am,
                  hpam_knob_style_t style) {
  char msg[256] = "";
  const int rc = hpam_knob_check(knob(name), v, am, nullptr, style, msg, sizeof msg);
  return rc == HPAM_OK ? "" : msg;
}

TEST(knobs, every_knob_is_described_and_its_default_is_valid) {
  ASSERT_GT(hpam_knob_count(), 15u);
  EXPECT_EQ(hpam_knob_info(hpam_knob_count()), nullptr);
  hpam_config_t am;
  hpam_config_init(&am);
  for (size_t i = 0; i < hpam_knob_count(); ++i) {
    const hpam_knob_info_t* k = hpam_knob_info(i);
    ASSERT_NE(k, nullptr);
    EXPECT_GT(std::strlen(k->name), 0u);
    EXPECT_GT(std::strlen(k->help), 10u) << k->name;
    EXPECT_GE(k->level, 1) << k->name;
    EXPECT_LE(k->level, 9) << k->name;
    EXPECT_EQ(hpam_knob_find(k->name), static_cast<int>(i));
    EXPECT_EQ(check(k->name, hpam_knob_default(i), &am, HPAM_KNOB_STYLE_MCA), "") << k->name;
  }
}

TEST(knobs, config_init_takes_the_cores_defaults) {
  hpam_config_t am;
  hpam_config_init(&am);
  hpam_dep_config_t dep;
  hpam_dep_config_init(&dep);
  for (size_t i = 0; i < hpam_knob_count(); ++i) {
    const hpam_knob_info_t* k = hpam_knob_info(i);
    const hpam_knob_value_t got = hpam_knob_get(&am, &dep, i), want = hpam_knob_default(i);
    if (k->type == HPAM_KNOB_REAL)
      EXPECT_EQ(got.r, want.r) << k->name;
    else if (k->type == HPAM_KNOB_CHOICE)
      EXPECT_STREQ(got.s, want.s) << k->name;
    else
      EXPECT_EQ(got.i, want.i) << k->name;
  }
  // ... and those are the core's own, not a copy of them.
  const am::endpoint_config core_am;
  const deposit::setup core_dep;
  EXPECT_EQ(am.depth, core_am.depth);
  EXPECT_EQ(am.timeout_ns, core_am.timeout_ns);
  EXPECT_EQ(am.receive_budget, core_am.receive_budget);
  EXPECT_EQ(am.defer_acks != 0, core_am.defer_acks);
  EXPECT_EQ(am.fault_delay_ns, core_am.card.faults.delay_ns);
  EXPECT_EQ(dep.packet_size, core_dep.packet_size);
  EXPECT_EQ(dep.attach_timeout_ms, core_dep.attach_timeout_ms);
}

TEST(knobs, values_are_in_the_knobs_unit_and_stored_in_the_fields_unit) {
  hpam_config_t am;
  hpam_config_init(&am);
  hpam_dep_config_t dep;
  hpam_dep_config_init(&dep);
  hpam_knob_set(&am, &dep, knob("timeout_us"), whole(250));
  EXPECT_EQ(am.timeout_ns, 250'000u);
  EXPECT_EQ(hpam_knob_get(&am, &dep, knob("timeout_us")).i, 250);
  hpam_knob_set(&am, &dep, knob("give_up_ms"), whole(2000));
  EXPECT_EQ(am.give_up_ns, 2'000'000'000u);
  hpam_knob_set(&am, &dep, knob("attach_timeout_ms"), whole(1234));  // both configurations
  EXPECT_EQ(am.attach_timeout_ms, 1234u);
  EXPECT_EQ(dep.attach_timeout_ms, 1234u);
  hpam_knob_set(&am, &dep, knob("fault_drop"), real(0.25));
  EXPECT_EQ(am.fault_drop, 0.25);
  hpam_knob_set(&am, &dep, knob("nic"), word("hamlyn"));
  EXPECT_STREQ(am.nic, "hamlyn");
}

// The CRC costs the host only where a wire can corrupt packets (issue 26):
// crc_check on and fault_corrupt 0 computes none; a corrupting wire, or the
// check asked for under corruption, gets it.
TEST(knobs, the_crc_is_computed_only_on_a_wire_that_can_corrupt) {
  hpam_config_t am;
  hpam_config_init(&am);
  ASSERT_EQ(am.crc_check, 1);
  EXPECT_FALSE(capi::to_endpoint_config(am).card.crc);
  am.fault_drop = 0.1;  // losses alone flip no bit
  EXPECT_FALSE(capi::to_endpoint_config(am).card.crc);
  am.fault_corrupt = 0.01;
  EXPECT_TRUE(capi::to_endpoint_config(am).card.crc);
}

// Deferred acks wait at idle polls only where the processes take turns on
// the cores (auto), or when asked (on); never when told off.
TEST(knobs, acks_wait_when_idle_where_processes_outnumber_cores) {
  hpam_config_t am;
  hpam_config_init(&am);
  EXPECT_STREQ(am.acks_wait_when_idle, "auto");
  am.nprocs = 2;
  EXPECT_FALSE(capi::acks_wait_when_idle(am, 2));
  am.nprocs = 4;
  EXPECT_TRUE(capi::acks_wait_when_idle(am, 2));
  EXPECT_FALSE(capi::acks_wait_when_idle(am, 4));
  EXPECT_FALSE(capi::acks_wait_when_idle(am, -1)) << "unknown core count: as before";
  am.acks_wait_when_idle = "on";
  EXPECT_TRUE(capi::acks_wait_when_idle(am, 64));
  am.acks_wait_when_idle = "off";
  EXPECT_FALSE(capi::acks_wait_when_idle(am, 2));
  EXPECT_FALSE(capi::to_endpoint_config(am).acks_wait_when_idle);
  am.acks_wait_when_idle = "on";
  EXPECT_TRUE(capi::to_endpoint_config(am).acks_wait_when_idle);
  am.acks_wait_when_idle = "sometimes";
  EXPECT_NE(capi::check_config(am).find("acks_wait_when_idle"), std::string::npos);
}

TEST(knobs, the_c_configuration_reaches_the_cores_fields) {
  hpam_config_t am;
  hpam_config_init(&am);
  am.job = "j";
  am.nprocs = 3;
  am.my_proc = 2;
  am.depth = 7;
  am.block_size = 1024;
  am.crc_check = 0;
  am.fault_duplicate = 0.5;
  am.fault_delay_ns = 42'000;
  am.attach_timeout_ms = 77;
  am.receive_budget = 9;
  am.key = 99;
  const am::endpoint_config e = capi::to_endpoint_config(am);
  EXPECT_EQ(e.card.job, "j");
  EXPECT_EQ(e.card.nprocs, 3);
  EXPECT_EQ(e.card.my_proc, 2);
  EXPECT_EQ(e.depth, 7u);
  EXPECT_EQ(e.card.block_size, 1024u);
  EXPECT_FALSE(e.card.crc);
  EXPECT_EQ(e.card.faults.duplicate, 0.5);
  EXPECT_EQ(e.card.faults.delay_ns, 42'000u);
  EXPECT_EQ(e.card.attach_timeout_ms, 77u);
  EXPECT_EQ(e.receive_budget, 9u);
  EXPECT_EQ(e.key, 99u);
  hpam_dep_config_t dep;
  hpam_dep_config_init(&dep);
  dep.job = "d";
  dep.cross_memory = 0;
  dep.packet_size = 4096;
  const deposit::setup s = capi::to_deposit_setup(dep);
  EXPECT_EQ(s.job, "d");
  EXPECT_FALSE(s.cross_memory);
  EXPECT_EQ(s.packet_size, 4096u);
}

TEST(knobs, a_bad_value_names_the_knob_as_each_front_end_spells_it) {
  hpam_config_t am;
  hpam_config_init(&am);
  EXPECT_EQ(check("depth", whole(0), &am, HPAM_KNOB_STYLE_MCA),
            "invalid MCA parameter btl_hpam_depth = 0: valid range is [1, 64]");
  EXPECT_EQ(check("depth", whole(65), &am, HPAM_KNOB_STYLE_UCX),
            "invalid UCX_HPAM_DEPTH = 65: valid range is [1, 64]");
  EXPECT_EQ(check("depth", whole(0), &am, HPAM_KNOB_STYLE_FIELD),
            "invalid depth = 0: valid range is [1, 64]");
  EXPECT_EQ(check("give_up_ms", whole(-5), &am, HPAM_KNOB_STYLE_MCA),
            "invalid MCA parameter btl_hpam_give_up_ms = -5: valid range is [1, 3600000]");
  // The field style speaks in the field's unit.
  EXPECT_EQ(check("give_up_ms", whole(0), &am, HPAM_KNOB_STYLE_FIELD),
            "invalid give_up_ns = 0: valid range is [1000000, 3600000000000]");
  EXPECT_NE(check("block_size", whole(1000), &am, HPAM_KNOB_STYLE_MCA)
                .find("btl_hpam_block_size = 1000: valid values are powers of two in [256, 65536]"),
            std::string::npos);
  EXPECT_EQ(check("block_size", whole(512), &am, HPAM_KNOB_STYLE_MCA), "");
  EXPECT_NE(check("fault_drop", real(2), &am, HPAM_KNOB_STYLE_MCA)
                .find("btl_hpam_fault_drop = 2: valid range is [0, 1]"),
            std::string::npos);
  EXPECT_NE(check("nic", word("token-ring"), &am, HPAM_KNOB_STYLE_MCA)
                .find("btl_hpam_nic = token-ring: valid values are medusa, hamlyn"),
            std::string::npos);
  EXPECT_NE(check("nic", word(nullptr), &am, HPAM_KNOB_STYLE_MCA), "");
  EXPECT_NE(check("defer_acks", whole(2), &am, HPAM_KNOB_STYLE_MCA), "");
}

// Where the core enforces a limit, the knob's range is that limit: a value
// beyond it is refused here, naming the knob, not later by the card with a
// message about its own field (max_registrations 100000 was accepted, then
// the Hamlyn card refused slot_count).
TEST(knobs, ranges_are_the_cores_limits) {
  hpam_config_t am;
  hpam_config_init(&am);
  EXPECT_EQ(check("max_registrations", whole(100000), &am, HPAM_KNOB_STYLE_MCA),
            "invalid MCA parameter btl_hpam_max_registrations = 100000: valid range is [16, " +
                std::to_string(nic::hamlyn::max_slot_count) + "]");
  EXPECT_EQ(
      check("max_registrations", whole(nic::hamlyn::max_slot_count), &am, HPAM_KNOB_STYLE_MCA), "");
  const hpam_knob_info_t* regs = hpam_knob_info(knob("max_registrations"));
  EXPECT_EQ(regs->max, static_cast<int64_t>(nic::hamlyn::max_slot_count));
  const hpam_knob_info_t* rx = hpam_knob_info(knob("rx_blocks"));
  EXPECT_EQ(rx->max, static_cast<int64_t>(nic::medusa::max_blocks));
  EXPECT_NE(check("rx_blocks", whole(rx->max + 1), &am, HPAM_KNOB_STYLE_MCA), "");
  const hpam_knob_info_t* inl = hpam_knob_info(knob("notify_inline"));
  EXPECT_EQ(inl->max, static_cast<int64_t>(nic::hamlyn::max_notification_inline_bytes));
  EXPECT_EQ(hpam_knob_default(knob("notify_inline")).i,
            static_cast<int64_t>(nic::hamlyn::max_notification_inline_bytes));
  EXPECT_EQ(nic::card_setup{}.notify_inline, nic::hamlyn::max_notification_inline_bytes);
}

TEST(knobs, rules_between_knobs) {
  hpam_config_t am;
  hpam_config_init(&am);
  am.give_up_ns = 2'000'000'000;  // 2 s
  EXPECT_EQ(check("timeout_us", whole(2'000'000), &am, HPAM_KNOB_STYLE_MCA), "");
  EXPECT_NE(check("timeout_us", whole(2'000'001), &am, HPAM_KNOB_STYLE_MCA)
                .find("btl_hpam_timeout_us = 2000001: valid range is [1, 2000000]"),
            std::string::npos);
  // Corruption without a CRC would hand damaged packets to the protocol.
  am.crc_check = 0;
  EXPECT_NE(check("fault_corrupt", real(0.01), &am, HPAM_KNOB_STYLE_MCA).find("crc_check"),
            std::string::npos);
  EXPECT_EQ(check("fault_corrupt", real(0), &am, HPAM_KNOB_STYLE_MCA), "");
  am.crc_check = 1;
  EXPECT_EQ(check("fault_corrupt", real(0.01), &am, HPAM_KNOB_STYLE_MCA), "");
}

TEST(knobs, the_c_api_refuses_a_bad_configuration_by_field_name) {
  hpam_config_t am;
  hpam_config_init(&am);
  am.job = "knob-check";
  am.nprocs = 2;
  am.timeout_ns = 500;  // below 1 us
  EXPECT_NE(capi::check_config(am).find("timeout_ns = 500"), std::string::npos)
      << capi::check_config(am);
  am.timeout_ns = 1000;
  EXPECT_EQ(capi::check_config(am), "");
  am.crc_check = 0;
  am.fault_corrupt = 0.1;
  EXPECT_NE(capi::check_config(am).find("fault_corrupt"), std::string::npos);
  hpam_ep_t* ep = nullptr;
  EXPECT_EQ(hpam_ep_create(&am, &ep), HPAM_ERR_INVALID);
  EXPECT_NE(std::string(hpam_last_error()).find("fault_corrupt"), std::string::npos);
  hpam_dep_config_t dep;
  hpam_dep_config_init(&dep);
  dep.job = "knob-check";
  dep.packet_size = 1000;
  hpam_dep_t* d = nullptr;
  EXPECT_EQ(hpam_dep_create(&dep, &d), HPAM_ERR_INVALID);
  EXPECT_NE(std::string(hpam_dep_last_error()).find("packet_size = 1000"), std::string::npos);
}

}  // namespace
}  // namespace hpam::test
