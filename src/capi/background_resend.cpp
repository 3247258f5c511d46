#include "capi/background_resend.hpp"

#include <chrono>

#include "capi/c_api.hpp"

namespace hpam::capi {

void background_resend::start(const c_ops* plain, void* impl, uint64_t period_ns) {
  stopping_ = false;
  thread_ = std::thread([this, plain, impl, period_ns] { run(plain, impl, period_ns); });
}

void background_resend::stop() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard<std::mutex> g(stop_mutex_);
    stopping_ = true;
  }
  stop_signal_.notify_one();
  thread_.join();
}

void background_resend::run(const c_ops* plain, void* impl, uint64_t period_ns) {
  uint32_t mark = 0;  // the owner's poll count at my last look
  std::unique_lock<std::mutex> lk(stop_mutex_);
  while (!stop_signal_.wait_for(lk, std::chrono::nanoseconds(period_ns),
                                [this] { return stopping_; })) {
    // The owner inside the endpoint is busy with it: its own poll walks.
    if (!guard_.try_lock()) continue;
    (void)plain->resend_idle(impl, &mark);
    guard_.unlock();
  }
}

}  // namespace hpam::capi
