// Two deposit endpoints of one job in this one process, attached to each
// other, for the tests that play both sides (one process makes both
// endpoints progress).
#pragma once

#include <memory>
#include <string>

#include "../common/test_util.hpp"
#include "deposit/deposit.hpp"

namespace hpam::deposit {

struct endpoint_pair {
  std::unique_ptr<endpoint> e[2];
  // name: the job's prefix; tune(s): what this test sets beyond the
  // defaults below, in each endpoint's setup.
  template <class Tune>
  endpoint_pair(const char* name, Tune&& tune) {
    const std::string job = test::unique_job(name);
    for (int p = 0; p < 2; ++p) {
      setup s;
      s.job = job;
      s.nprocs = 2;
      s.my_proc = p;
      s.packet_size = 4096;
      s.card_memory = 1u << 20;
      s.attach_timeout_ms = 5000;
      tune(s);
      e[p] = std::make_unique<endpoint>(s);
    }
    e[0]->attach_all();
    e[1]->attach_all();
  }
  // h's outcome once it is no longer pending, both endpoints progressing
  // meanwhile as the BTL's progress does, only while not quiet() (so every
  // test that finishes through here would stall, and fail, if quiet() ever
  // missed work); would_block after `tries` looks.
  status finish(op_handle h, int tries = 1'000'000) {
    status err = status::ok;
    for (int i = 0; i < tries; ++i) {
      const op_state s = e[0]->test(h, &err);
      if (s != op_state::pending) return s == op_state::sent ? status::ok : err;
      for (auto& x : e) {
        if (!x->quiet()) x->progress();
      }
    }
    return status::would_block;
  }
};

}  // namespace hpam::deposit
