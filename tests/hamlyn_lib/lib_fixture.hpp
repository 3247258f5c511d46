// Two cards of one job in this process, each with its hamlyn_manager:
// process 1 receives (rm), process 0 sends (sm).
#pragma once

#include <gtest/gtest.h>

#include "../nic/hamlyn/hamlyn_fixture.hpp"
#include "hamlyn_lib/hamlyn_manager.hpp"

namespace hpam::test {

struct two_managers : ::testing::Test {
  // Notification queue entries and metadata entries of each card.
  explicit two_managers(uint64_t notify = 64, uint32_t metadata = 64)
      : j(2, [=](nic::hamlyn::card_config& c) {
          c.notify_capacity = notify;
          c.metadata_entries = metadata;
        }) {}
  hamlyn_job j;
  hamlyn_lib::hamlyn_manager rm{j[1]}, sm{j[0]};
};

}  // namespace hpam::test
