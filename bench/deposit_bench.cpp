// Hamlyn deposit benchmark: the shape of Hamlyn OSDI'96 figures 7 and 9.
//
//   latency:   one-way latency against message size (ping-pong of Hamlyn
//              messages with notification, round trip / 2), per packet size;
//   bandwidth: one-way bandwidth against message size, per packet size
//              (a stream of messages, the receiver acknowledges the last).
//
// Paths: "card" (message area in the receiver's card segment, written
// directly), "cross" (receiver's private memory by process_vm_writev) and
// "fallback" (private memory, packets the receiver deposits when it polls).
// Two processes (fork). Prints CSV on stdout.
//
//   bench/deposit_bench [--quick] [--path card|cross|fallback] [--packet N]
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "nic/hamlyn/cross_memory.hpp"
#include "nic/hamlyn/hamlyn_card.hpp"

using namespace hpam;
using namespace hpam::nic::hamlyn;

namespace {

constexpr uint64_t max_message = 1u << 20;
constexpr uint64_t notify_capacity = 4096;

struct options {
  bool quick = false;
  std::vector<std::string> paths{"card", "cross", "fallback"};
  std::vector<uint32_t> packets{256, 1024, 4096, 16384, 65536};
  std::vector<uint64_t> sizes{8, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576};
};

double now_us() {
  return std::chrono::duration<double, std::micro>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Spins, then yields the core: the machine may have fewer free cores than
// spinning processes, and the peer must run for anything to arrive.
uint32_t spin_limit =
    2000;  // spins before yielding (raised when the two processes are pinned apart)

void relax(uint32_t& spins) {
  if (++spins > spin_limit) sched_yield();
}

// Each process on its own CPU (0 and 1) when the machine has two or more:
// latency is then not the cost of sharing one core.
bool pin(int cpu) {
  if (sysconf(_SC_NPROCESSORS_ONLN) < 2) return false;
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return sched_setaffinity(0, sizeof set, &set) == 0;
}

struct side {
  std::unique_ptr<card> c;
  std::vector<uint8_t> private_memory;
  uint8_t* memory = nullptr;
  ticket mine{};
  ticket peer{};
};

// Builds this process's card and the message area the peer writes into.
void make_side(side& s, const std::string& job, int me, const std::string& path, uint32_t packet) {
  card_config c;
  c.job = job;
  c.nprocs = 2;
  c.my_proc = me;
  c.packet_size = packet;
  c.rx_packets = 64;
  c.notify_capacity = notify_capacity;
  c.area_bytes = max_message + 4096;
  c.metadata_entries = 4;
  c.slot_count = 4;
  c.cross_memory = path != "fallback";
  s.c = std::make_unique<card>(c);
  slot_spec spec;
  spec.bound = max_message;
  spec.metadata_count = 1;
  if (path == "card") {
    uint64_t off = 0;
    (void)s.c->slots().allocate_area(max_message, off);
    spec.memory = area_memory::card;
    spec.base = off;
    s.memory = reinterpret_cast<uint8_t*>(s.c->slots().area_address(off));
  } else {
    s.private_memory.assign(max_message, 0);
    spec.memory = area_memory::process;
    spec.base = reinterpret_cast<uint64_t>(s.private_memory.data());
    s.memory = s.private_memory.data();
  }
  uint32_t slot = 0;
  if (!is_ok(s.c->slots().create_slot(spec, slot))) {
    std::fprintf(stderr, "deposit_bench: cannot create a slot\n");
    std::exit(1);
  }
  s.mine = s.c->slots().make_ticket(slot, 0, 0, max_message, true);
}

// Posts without waiting for the send to finish (streams); returns its handle.
send_handle post(side& s, const uint8_t* data, uint64_t len) {
  iovec v{const_cast<uint8_t*>(data), len};
  message m;
  m.gather = &v;
  m.gather_count = 1;
  send_handle h;
  uint32_t spins = 0;
  while (s.c->terminus().send(s.peer, m, h) == status::would_block) {
    (void)s.c->receiver().poll_inbound();
    relax(spins);
  }
  return h;
}

void send_wait(side& s, const uint8_t* data, uint64_t len) {
  const send_handle h = post(s, data, len);
  uint32_t spins = 0;
  while (s.c->terminus().state(h) == send_state::pending) {
    s.c->terminus().kick();
    (void)s.c->receiver().poll_inbound();
    relax(spins);
  }
}

void wait_notification(side& s) {
  notification n;
  uint32_t spins = 0;
  while (!s.c->receiver().receive(0, n)) {
    s.c->terminus().kick();
    relax(spins);
  }
}

int iterations(uint64_t size, bool quick) {
  const uint64_t budget = quick ? (8u << 20) : (64u << 20);
  uint64_t n = budget / (size ? size : 1);
  n = std::max<uint64_t>(quick ? 10 : 50, std::min<uint64_t>(n, quick ? 500 : 5000));
  return static_cast<int>(n);
}

int stream_count(uint64_t size, bool quick) {
  const uint64_t budget = quick ? (32u << 20) : (256u << 20);
  return static_cast<int>(
      std::max<uint64_t>(16, std::min<uint64_t>(budget / size, notify_capacity - 64)));
}

// One benchmark run (both processes execute it, with their role).
void run(side& s, int me, const options& o, const std::string& path, uint32_t packet, bool print) {
  std::vector<uint8_t> data(max_message, 0x5a);
  for (uint64_t size : o.sizes) {
    // Latency: the best of `trials` batches (other load on the machine only
    // ever adds time), after 5 warm-up round trips.
    const int trials = 5, iters = std::max(2, iterations(size, o.quick) / trials);
    double latency = 1e30;
    for (int t = 0; t < trials; ++t) {
      double t0 = 0;
      for (int i = t == 0 ? -5 : 0; i < iters; ++i) {
        if (i == 0) t0 = now_us();
        if (me == 0) {
          send_wait(s, data.data(), size);
          wait_notification(s);
        } else {
          wait_notification(s);
          send_wait(s, data.data(), size);
        }
      }
      latency = std::min(latency, (now_us() - t0) / iters / 2);
    }
    const int count = stream_count(size, o.quick);
    double bw = 0;
    if (me == 0) {
      const double b0 = now_us();
      for (int i = 0; i < count; ++i) post(s, data.data(), size);
      wait_notification(s);  // the receiver's acknowledgement of the last one
      bw = static_cast<double>(size) * count / (now_us() - b0);  // bytes/us = MB/s
    } else {
      for (int i = 0; i < count; ++i) wait_notification(s);
      send_wait(s, data.data(), 1);
    }
    if (print)
      std::printf("%s,%u,%llu,%.3f,%.1f\n", path.c_str(), packet,
                  static_cast<unsigned long long>(size), latency, bw);
    std::fflush(stdout);
  }
}

options parse(int argc, char** argv) {
  options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--quick") {
      o.quick = true;
    } else if (a == "--path" && i + 1 < argc) {
      o.paths = {argv[++i]};
    } else if (a == "--packet" && i + 1 < argc) {
      o.packets = {static_cast<uint32_t>(std::strtoul(argv[++i], nullptr, 10))};
    } else {
      std::fprintf(stderr, "usage: %s [--quick] [--path card|cross|fallback] [--packet N]\n",
                   argv[0]);
      std::exit(2);
    }
  }
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  const options o = parse(argc, argv);
  std::printf(
      "# process_vm_writev: yama ptrace_scope = %d; %ld CPUs online; latency = best of 5 batches\n",
      yama_ptrace_scope(), sysconf(_SC_NPROCESSORS_ONLN));
  std::printf("path,packet_bytes,message_bytes,one_way_latency_us,bandwidth_MBps\n");
  std::fflush(stdout);
  for (const std::string& path : o.paths)
    for (uint32_t packet : o.packets) {
      const std::string job =
          "dbench-" + std::to_string(getpid()) + "-" + path + std::to_string(packet);
      int up[2], down[2];
      if (pipe(up) != 0 || pipe(down) != 0) return 1;
      const pid_t child = fork();
      if (child == 0) {
        alarm(600);
        if (pin(1)) spin_limit = 1u << 20;
        side s;
        make_side(s, job, 1, path, packet);
        s.c->attach_all();
        if (write(up[1], &s.mine, sizeof s.mine) != sizeof s.mine) _exit(3);
        if (read(down[0], &s.peer, sizeof s.peer) != sizeof s.peer) _exit(4);
        run(s, 1, o, path, packet, false);
        _exit(0);
      }
      if (pin(0)) spin_limit = 1u << 20;
      side s;
      make_side(s, job, 0, path, packet);
      s.c->attach_all();
      if (path == "cross" && !s.c->cross_memory_to(1)) {
        std::printf(
            "# cross: process_vm_writev is not allowed here; the card falls back to packets\n");
      }
      if (write(down[1], &s.mine, sizeof s.mine) != sizeof s.mine) return 1;
      if (read(up[0], &s.peer, sizeof s.peer) != sizeof s.peer) return 1;
      run(s, 0, o, path, packet, true);
      int st = 0;
      waitpid(child, &st, 0);
      for (int fd : {up[0], up[1], down[0], down[1]}) close(fd);
    }
  return 0;
}
