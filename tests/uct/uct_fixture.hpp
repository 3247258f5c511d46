// Helpers for the UCX transport's tests: the hpam component through UCT's
// public API, memory domains opened with UCX_HPAM_* settings, "sides" (a
// worker and an interface each: one process of the job), endpoints between
// them, progress until a condition holds (always time-bounded), and capture
// of UCX's error log.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdarg>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

extern "C" {
#include <ucs/async/async_fwd.h>
#include <ucs/debug/log_def.h>
#include <uct/api/uct.h>
}

namespace hpam_uct_test {

using settings = std::vector<std::pair<std::string, std::string>>;

// UCX error messages while alive (and kept off the terminal).
class log_capture {
 public:
  log_capture() {
    current() = &lines_;
    ucs_log_push_handler(handler);
  }
  ~log_capture() {
    ucs_log_pop_handler();
    current() = nullptr;
  }
  bool contains(const std::string& text) const {
    for (const auto& l : lines_)
      if (l.find(text) != std::string::npos) return true;
    return false;
  }
  std::string all() const {
    std::string s;
    for (const auto& l : lines_) s += l + "\n";
    return s;
  }

 private:
  static std::vector<std::string>*& current() {
    static std::vector<std::string>* lines = nullptr;
    return lines;
  }
  static ucs_log_func_rc_t handler(const char*, unsigned, const char*, ucs_log_level_t level,
                                   const ucs_log_component_config_t*, const char* fmt, va_list ap) {
    if (level > UCS_LOG_LEVEL_WARN || current() == nullptr) return UCS_LOG_FUNC_RC_CONTINUE;
    char buf[1024];
    va_list copy;
    va_copy(copy, ap);
    vsnprintf(buf, sizeof buf, fmt, copy);
    va_end(copy);
    current()->push_back(buf);
    return UCS_LOG_FUNC_RC_STOP;
  }
  std::vector<std::string> lines_;
};

inline uct_component_h hpam_component() {
  uct_component_h* comps = nullptr;
  unsigned n = 0;
  if (uct_query_components(&comps, &n) != UCS_OK) return nullptr;
  uct_component_h found = nullptr;
  for (unsigned i = 0; i < n; ++i) {
    uct_component_attr_t attr{};
    attr.field_mask = UCT_COMPONENT_ATTR_FIELD_NAME;
    if (uct_component_query(comps[i], &attr) == UCS_OK && std::string(attr.name) == "hpam")
      found = comps[i];
  }
  uct_release_component_list(comps);
  return found;
}

// A job name no other test (or test run) shares.
inline std::string unique_job() {
  static int n = 0;
  return "gtest" + std::to_string(getpid()) + "-" + std::to_string(++n);
}

// Opens the hpam memory domain with these UCX_HPAM_* settings (names without
// the prefix). Returns the status of the first step that failed.
inline ucs_status_t open_md(const settings& s, uct_md_h* md) {
  uct_component_h comp = hpam_component();
  if (comp == nullptr) return UCS_ERR_NO_DEVICE;
  uct_md_config_t* config = nullptr;
  ucs_status_t st = uct_md_config_read(comp, nullptr, nullptr, &config);
  if (st != UCS_OK) return st;
  for (const auto& kv : s) {
    st = uct_config_modify(config, kv.first.c_str(), kv.second.c_str());
    if (st != UCS_OK) break;
  }
  if (st == UCS_OK) st = uct_md_open(comp, "hpam", config, md);
  uct_config_release(config);
  return st;
}

// One process of the job: a worker and an hpam interface on it.
struct side {
  ucs_async_context_t* async = nullptr;
  uct_worker_h worker = nullptr;
  uct_iface_h iface = nullptr;
  uct_iface_attr_t attr{};
  std::vector<uint8_t> dev_addr, iface_addr;
  std::vector<ucs_status_t> errors;  // from the error handler

  static ucs_status_t on_error(void* arg, uct_ep_h, ucs_status_t status) {
    static_cast<side*>(arg)->errors.push_back(status);
    return UCS_OK;
  }

  ucs_status_t open(uct_md_h md, const char* nic = "medusa") {
    ucs_status_t st = ucs_async_context_create(UCS_ASYNC_MODE_THREAD_SPINLOCK, &async);
    if (st == UCS_OK) st = uct_worker_create(async, UCS_THREAD_MODE_SINGLE, &worker);
    uct_iface_config_t* config = nullptr;
    if (st == UCS_OK) st = uct_md_iface_config_read(md, "hpam", nullptr, nullptr, &config);
    if (st != UCS_OK) return st;
    uct_iface_params_t p{};
    p.field_mask = UCT_IFACE_PARAM_FIELD_OPEN_MODE | UCT_IFACE_PARAM_FIELD_DEVICE |
                   UCT_IFACE_PARAM_FIELD_ERR_HANDLER | UCT_IFACE_PARAM_FIELD_ERR_HANDLER_ARG |
                   UCT_IFACE_PARAM_FIELD_ERR_HANDLER_FLAGS;
    p.open_mode = UCT_IFACE_OPEN_MODE_DEVICE;
    p.mode.device.tl_name = "hpam";
    p.mode.device.dev_name = nic;
    p.err_handler = on_error;
    p.err_handler_arg = this;
    p.err_handler_flags = 0;
    st = uct_iface_open(md, worker, &p, config, &iface);
    uct_config_release(config);
    if (st != UCS_OK) return st;
    st = uct_iface_query(iface, &attr);
    if (st != UCS_OK) return st;
    dev_addr.resize(attr.device_addr_len);
    iface_addr.resize(attr.iface_addr_len);
    st = uct_iface_get_device_address(iface, reinterpret_cast<uct_device_addr_t*>(dev_addr.data()));
    if (st == UCS_OK)
      st = uct_iface_get_address(iface, reinterpret_cast<uct_iface_addr_t*>(iface_addr.data()));
    return st;
  }
  void close() {
    if (iface) uct_iface_close(iface);
    if (worker) uct_worker_destroy(worker);
    if (async) ucs_async_context_destroy(async);
    iface = nullptr;
    worker = nullptr;
    async = nullptr;
  }
  unsigned progress() { return uct_iface_progress(iface); }
};

// Closing an interface serves the network until its peers have closed too
// (HPAM's finalize): close connected sides at the same time.
inline void close_together(std::vector<side*> sides) {
  std::vector<std::thread> threads;
  for (side* s : sides) threads.emplace_back([s] { s->close(); });
  for (auto& t : threads) t.join();
}

inline ucs_status_t connect(side& from, const side& to, uct_ep_h* ep) {
  uct_ep_params_t p{};
  p.field_mask =
      UCT_EP_PARAM_FIELD_IFACE | UCT_EP_PARAM_FIELD_DEV_ADDR | UCT_EP_PARAM_FIELD_IFACE_ADDR;
  p.iface = from.iface;
  p.dev_addr = reinterpret_cast<const uct_device_addr_t*>(to.dev_addr.data());
  p.iface_addr = reinterpret_cast<const uct_iface_addr_t*>(to.iface_addr.data());
  return uct_ep_create(&p, ep);
}

// Progresses the sides until pred() holds; false after `seconds`.
inline bool progress_until(std::vector<side*> sides, const std::function<bool()>& pred,
                           double seconds = 20) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (!pred()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    for (side* s : sides) s->progress();
  }
  return true;
}

// An operation's completion: done, and its status.
struct completion {
  uct_completion_t comp{};
  bool done = false;
  ucs_status_t status = UCS_INPROGRESS;
  completion() {
    comp.func = [](uct_completion_t* c) {
      auto* self = reinterpret_cast<completion*>(c);
      self->done = true;
      self->status = c->status;
    };
    comp.count = 1;
    comp.status = UCS_OK;
  }
};

// Memory the domain allocates (UCT_ALLOC_METHOD_MD, as UCX's allocation
// methods try first).
inline ucs_status_t allocate_on(uct_md_h md, size_t length, uct_allocated_memory_t* mem) {
  uct_alloc_method_t method = UCT_ALLOC_METHOD_MD;
  uct_mem_alloc_params_t p{};
  p.field_mask = UCT_MEM_ALLOC_PARAM_FIELD_FLAGS | UCT_MEM_ALLOC_PARAM_FIELD_MEM_TYPE |
                 UCT_MEM_ALLOC_PARAM_FIELD_MDS | UCT_MEM_ALLOC_PARAM_FIELD_NAME;
  p.flags = UCT_MD_MEM_ACCESS_ALL;
  p.mem_type = UCS_MEMORY_TYPE_HOST;
  p.mds.mds = &md;
  p.mds.count = 1;
  p.name = "test";
  return uct_mem_alloc(length, &method, 1, &p, mem);
}

}  // namespace hpam_uct_test
