// Background resends: a lost packet is resent even while its sender makes no
// call into hpam.
//
// HPAM resends from the sender's own poll (the timeout walk). An MPI rank
// that hands an MCS lock over with one send and then spins on shared memory,
// or computes, never polls: if the wire lost that send, the peer waiting for
// it waits for ever. When the wire can lose or hold back packets, each
// endpoint gets a guard and a low-rate thread: every period, if the guard is
// free and the owner has not polled since the thread's last look, the thread
// does the sending half of a poll over the whole descriptor table
// (endpoint::resend_idle). It never receives and never runs a handler, so
// nothing of the owner's runs on it.
//
// The guard is a recursive mutex the owner takes around every call into the
// endpoint (a handler's reply and a send from a handler nest inside the
// poll that runs it): the C API's ops table is then the guarded one
// (c_ops.hpp). Without faults the plain table is bound and nothing changes
// on the hot path: no thread, no lock.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>

namespace hpam::capi {

struct c_ops;

class background_resend {
 public:
  background_resend() = default;
  background_resend(const background_resend&) = delete;
  background_resend& operator=(const background_resend&) = delete;
  ~background_resend() { stop(); }

  // The period for an endpoint whose first retransmission timeout is
  // timeout_ns: the timeout, within [min_period_ns, max_period_ns] (a
  // wake-up costs the host a few microseconds; a silent sender's loss is
  // resent within about two periods and a timeout).
  static constexpr uint64_t min_period_ns = 500'000;
  static constexpr uint64_t max_period_ns = 10'000'000;
  static constexpr uint64_t period_for(uint64_t timeout_ns) {
    return timeout_ns < min_period_ns   ? min_period_ns
           : timeout_ns > max_period_ns ? max_period_ns
                                        : timeout_ns;
  }

  // Starts the thread over the endpoint `impl` of `plain` (its unguarded
  // ops; the thread takes the guard itself, without waiting for it).
  void start(const c_ops* plain, void* impl, uint64_t period_ns);
  // Stops and joins the thread (before the endpoint is destroyed).
  void stop();

  std::recursive_mutex& guard() { return guard_; }

 private:
  void run(const c_ops* plain, void* impl, uint64_t period_ns);

  std::recursive_mutex guard_;
  std::mutex stop_mutex_;
  std::condition_variable stop_signal_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace hpam::capi
