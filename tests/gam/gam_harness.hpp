// The GAM basic benchmarks and torture tests (HP-LAM section 4.1) run as
// forked processes of one job over the native API (hpam_am.h). This holds
// what they share: options, the fork runner, the shared-memory barrier that
// keeps serving the network while it waits, and endpoint set-up with a
// segment (every store target and get source lies in the destination's
// segment, as GAM requires).
#pragma once

#include <sys/mman.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "../common/test_util.hpp"
#include "hpam_am.h"

namespace hpam::gam {

// --name value options; numbers and words alike are kept as text.
struct option {
  const char* name;
  const char* help;
  std::string value;
};

inline bool parse(int argc, char** argv, const char* prog, std::vector<option>& opts) {
  for (int a = 1; a < argc; a += 2) {
    option* o = nullptr;
    for (auto& x : opts)
      if (argv[a] == std::string("--") + x.name) o = &x;
    if (!o || a + 1 >= argc) {
      std::fprintf(stderr, "usage: %s", prog);
      for (auto& x : opts) std::fprintf(stderr, " [--%s %s (%s)]", x.name, x.help, x.value.c_str());
      std::fprintf(stderr, "\n");
      return false;
    }
    o->value = argv[a + 1];
  }
  return true;
}

inline const std::string& get(const std::vector<option>& opts, const char* name) {
  for (auto& x : opts)
    if (x.name == std::string(name)) return x.value;
  std::fprintf(stderr, "gam: no option --%s\n", name);
  std::abort();
}
inline uint64_t num(const std::vector<option>& opts, const char* name) {
  return std::strtoull(get(opts, name).c_str(), nullptr, 0);
}

inline std::vector<size_t> sizes(const std::string& list) {
  std::vector<size_t> v;
  for (size_t at = 0; at < list.size();) {
    size_t end = list.find(',', at);
    if (end == std::string::npos) end = list.size();
    v.push_back(std::strtoull(list.substr(at, end - at).c_str(), nullptr, 0));
    at = end + 1;
  }
  return v;
}

inline size_t largest(const std::vector<size_t>& list) {
  size_t most = 1;
  for (size_t x : list) most = x > most ? x : most;
  return most;
}

inline double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// One page shared by all the processes of a run (mapped before fork).
struct control {
  std::atomic<uint64_t> arrived;  // barrier arrivals, all rounds together
  std::atomic<int> failed;        // a process gave up: the others stop waiting
};

inline control* make_control() {
  void* m = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) return nullptr;
  return new (m) control{{0}, {0}};
}

// Runs fn(me) in `procs` forked processes; 0 when every one returned 0.
inline int run(int procs, unsigned seconds, const std::function<int(int)>& fn) {
  std::vector<pid_t> kids;
  std::fflush(nullptr);  // nothing buffered is inherited and printed twice
  for (int p = 0; p < procs; ++p)
    kids.push_back(test::fork_child(
        [&, p] {
          const int rc = fn(p);
          std::fflush(nullptr);  // the child ends in _exit, which would drop it
          return rc;
        },
        seconds));
  int bad = 0;
  for (int p = 0; p < procs; ++p) {
    const int rc = test::reap(kids[p], static_cast<int>(seconds) * 1000 + 5000);
    if (rc != 0) {
      std::fprintf(stderr, "gam: process %d %s %d\n", p,
                   rc < 0 ? "was killed or died:" : "failed with code", rc);
      bad = 1;
    }
  }
  return bad;
}

// Serves the network (and `serve`, if given) until every process of the run
// has arrived at barrier round `round` (1, 2, ...). False if a process failed.
inline bool barrier(control* c, hpam_ep_t* ep, int procs, uint64_t round,
                    const std::function<void()>& serve = {}) {
  c->arrived.fetch_add(1);
  const uint64_t want = round * static_cast<uint64_t>(procs);
  const double deadline = now_s() + 60;
  while (c->arrived.load() < want) {
    if (hpam_poll(ep) < 0 || c->failed.load() || now_s() > deadline) {
      c->failed.store(1);
      return false;
    }
    if (serve) serve();
  }
  return true;
}

// The two-process bandwidth tests, size by size: each size must fit one
// packet; both run prepare(len), process 0 runs measure(len), both run
// check(len), between barriers; then the endpoint is destroyed. Returns the
// first nonzero code.
inline int each_size(const char* prog, control* c, hpam_ep_t* ep, int me,
                     const std::vector<size_t>& list, const std::function<void(size_t)>& prepare,
                     const std::function<int(size_t)>& measure,
                     const std::function<int(size_t)>& check) {
  int r = 0;
  uint64_t round = 0;
  for (size_t len : list) {
    if (len == 0 || len > hpam_max_bulk(ep)) {
      std::fprintf(stderr, "%s: size %zu not in 1..%zu\n", prog, len, hpam_max_bulk(ep));
      r = 5;
      break;
    }
    prepare(len);
    if (!barrier(c, ep, 2, ++round)) return 2;
    if (me == 0 && !r) r = measure(len);
    if (!barrier(c, ep, 2, ++round)) return r ? r : 3;
    if (!r) r = check(len);
  }
  if (!barrier(c, ep, 2, ++round)) return r ? r : 3;
  return hpam_ep_destroy(ep) == HPAM_OK ? r : 4;
}

struct endpoint_options {
  std::string nic = "medusa";
  double drop = 0, duplicate = 0, corrupt = 0, reorder = 0;
};

// The usual fault options of the torture tests.
inline void fault_options(std::vector<option>& opts) {
  opts.push_back({"drop", "probability", "0"});
  opts.push_back({"duplicate", "probability", "0"});
  opts.push_back({"corrupt", "probability", "0"});
  opts.push_back({"reorder", "probability", "0"});
}

inline endpoint_options endpoint_from(const std::vector<option>& opts) {
  endpoint_options e;
  e.nic = get(opts, "nic");
  for (auto& o : opts) {
    const double v = std::strtod(o.value.c_str(), nullptr);
    if (o.name == std::string("drop")) e.drop = v;
    if (o.name == std::string("duplicate")) e.duplicate = v;
    if (o.name == std::string("corrupt")) e.corrupt = v;
    if (o.name == std::string("reorder")) e.reorder = v;
  }
  return e;
}

// Creates and connects process `me`'s endpoint and, unless segment is
// null, gives it its segment; nullptr (with the reason printed) on failure.
inline hpam_ep_t* open_endpoint(const std::string& job, int procs, int me,
                                const endpoint_options& o, void* segment, size_t segment_len) {
  hpam_config_t cfg;
  hpam_config_init(&cfg);
  cfg.job = job.c_str();
  cfg.nprocs = procs;
  cfg.my_proc = me;
  cfg.nic = o.nic.c_str();
  cfg.fault_drop = o.drop;
  cfg.fault_duplicate = o.duplicate;
  cfg.fault_corrupt = o.corrupt;
  cfg.fault_reorder = o.reorder;
  if (o.drop + o.duplicate + o.corrupt + o.reorder > 0) cfg.timeout_ns = 200'000;
  cfg.attach_timeout_ms = 20'000;
  hpam_ep_t* ep = nullptr;
  int rc = hpam_ep_create(&cfg, &ep);
  if (rc == HPAM_OK) rc = hpam_connect_all(ep);
  if (rc == HPAM_OK && segment) rc = hpam_set_segment(ep, segment, segment_len);
  if (rc != HPAM_OK) {
    std::fprintf(stderr, "gam: process %d: %s: %s\n", me, hpam_strerror(rc), hpam_last_error());
    if (ep) hpam_ep_destroy(ep);
    return nullptr;
  }
  return ep;
}

// Memory mapped before fork: the same address in every process, private to each.
inline uint8_t* private_area(size_t len) {
  void* m = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  return m == MAP_FAILED ? nullptr : static_cast<uint8_t*>(m);
}

}  // namespace hpam::gam
