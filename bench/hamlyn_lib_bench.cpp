// The Hamlyn library's protocols measured as OSDI'96 section 4 measured
// them (no MPI): two processes, each pinned to a CPU of its own, each with
// its emulated Hamlyn card and hamlyn_manager.
//
//   hamlyn_lib_bench [--quick]                      CSV: kind,protocol,bytes,value
//   hamlyn_lib_bench --cost PROTOCOL [--iters N]    one process, for callgrind
//
// Default mode, rows of the CSV:
// * rtt_us,tagged_write,16: round trip of a 16-byte tagged remote write
//   (the paper's 28.2 µs), and floor_ns,line,64: the cache-line round trip
//   between the same two CPUs, measured in alternate bursts;
// * one_way_us,datagram|stream,SIZE: half the round trip of a message sent
//   to the other process and returned (the paper's method), per size;
// * stream_MBps,coalesce_on|coalesce_off,64 and stream_Mmsgs,...: 64-byte
//   sends streamed one way, with the sender's coalescing on (4 KiB) and off.
// Each figure is the median of short bursts.
//
// --cost PROTOCOL (tagged_write, datagram, stream, stream_coalesced): N
// messages of 16 bytes sent and received between two cards in one process,
// every send inside hamlyn_bench_send and every receive inside
// hamlyn_bench_receive (never inlined), so that
//   valgrind --tool=callgrind --toggle-collect=hamlyn_bench_send ...
// counts the instructions of the sends alone (the receiving interface's
// work, done by the sender's process in the emulation, included).
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <vector>

#include "hamlyn_lib/datagram.hpp"
#include "hamlyn_lib/stream.hpp"
#include "hamlyn_lib/tagged_write.hpp"
#include "line_floor.hpp"

using namespace hpam;
using namespace hpam::hamlyn_lib;
namespace hw = hpam::nic::hamlyn;

namespace {

constexpr uint32_t max_bytes = 65536;   // the largest message measured
constexpr uint32_t coalesce_on = 4096;  // the stream sender's coalescing buffer
constexpr uint64_t wait_ns = 30'000'000'000ull;

hw::card_config config(const std::string& job, int me) {
  hw::card_config c;
  c.job = job;
  c.nprocs = 2;
  c.my_proc = me;
  c.area_bytes = 8u << 20;
  c.attach_timeout_ms = 30'000;
  return c;
}

[[noreturn]] void die(const char* what) {
  std::fprintf(stderr, "hamlyn_lib_bench: %s\n", what);
  std::exit(1);
}
void check(status st, const char* what) {
  if (!is_ok(st)) die(what);
}

// One process's end of the benchmark: its card, manager, receivers, and
// senders on the other's seeds.
struct side {
  hw::card card;
  hamlyn_manager m;
  tagged_write_receiver tags;
  datagram_receiver dgrams;
  stream_receiver in;
  stream_receiver in_plain;  // the coalescing-off stream's receiver
  tagged_write_sender to_tags;
  datagram_sender to_dgrams;
  stream_sender out, out_plain;
  std::vector<std::byte> buf;

  static stream_config stream_cfg() {
    stream_config s;
    s.records = 64;
    s.buffer_bytes = 4 * max_bytes;
    s.max_regions = 1;
    return s;
  }
  side(const std::string& job, int me)
      : card(config(job, me)),
        m((card.attach_all(), card)),
        tags(m, 4096),
        dgrams(m, 1, max_bytes),
        in(m, stream_cfg()),
        in_plain(m, stream_cfg()),
        buf(max_bytes, std::byte{0x5a}) {}
  struct seeds {
    seed tags, dgrams, in, in_plain;
  };
  seeds mine() const {
    return {tags.make_seed(), dgrams.make_seed(), in.make_seed(), in_plain.make_seed()};
  }
  void connect(const seeds& s) {
    check(to_tags.open(m, s.tags), "tagged-write seed refused");
    check(to_dgrams.open(m, s.dgrams), "datagram seed refused");
    check(out.open(m, s.in, coalesce_on, wait_ns), "stream seed refused");
    check(out_plain.open(m, s.in_plain, 0, wait_ns), "stream seed refused");
  }

  void tag_wait() {
    uint64_t t;
    if (!m.wait_until([&] { return tags.get_tag(t); }, wait_ns)) die("no tag came");
  }
  void dgram_wait() {
    datagram d;
    if (!m.wait_until([&] { return dgrams.receive(0, d); }, wait_ns)) die("no datagram came");
    dgrams.release(0);
  }
  // Receives `bytes` of stream r, releasing each record.
  void stream_wait(stream_receiver& r, uint64_t bytes) {
    stream_record rec;
    for (uint64_t got = 0; got < bytes; got += rec.length) {
      if (!r.receive_block(rec, wait_ns)) die("no stream record came");
      check(r.release(rec.id), "release");
    }
  }
  void stream_send(stream_sender& s, uint32_t bytes) {
    check(s.send(buf.data(), bytes), "stream send");
    check(s.flush(), "stream flush");
  }
};

// The ping-pong both processes run: `measure` on process 0 times a burst.
enum class exchange { tagged, datagram, stream };

void one_round(side& s, exchange e, uint32_t bytes, bool first) {
  auto go = [&] {
    switch (e) {
      case exchange::tagged:
        check(s.to_tags.send(s.buf.data(), bytes, 0, 1), "tagged send");
        break;
      case exchange::datagram:
        check(s.to_dgrams.send(0, s.buf.data(), bytes), "datagram send");
        break;
      case exchange::stream:
        s.stream_send(s.out, bytes);
        break;
    }
  };
  auto wait = [&] {
    switch (e) {
      case exchange::tagged:
        s.tag_wait();
        break;
      case exchange::datagram:
        s.dgram_wait();
        break;
      case exchange::stream:
        s.stream_wait(s.in, bytes);
        break;
    }
  };
  if (first) {
    go();
    wait();
  } else {
    wait();
    go();
  }
}

// A shared page for the cache-line floor's bursts.
hpam_bench::line_pair* floor_lines = nullptr;

struct plan {
  int bursts;
  int reps;
  std::vector<uint32_t> sizes;
  uint64_t stream_bytes;
};

// Bursts of about the same time at every size (a burst of large messages
// as likely to be preempted as one of small ones): fewer round trips above
// 4 KiB, at least 8.
int reps_for(const plan& p, uint32_t bytes) {
  return bytes <= 4096
             ? p.reps
             : std::max(8, static_cast<int>(static_cast<uint64_t>(p.reps) * 4096 / bytes));
}

// One burst of `reps` round trips; ns per round trip (process 0).
double burst(side& s, bool first, exchange e, uint32_t bytes, int reps, const sys::clock& clk) {
  const uint64_t t0 = clk.now_ns();
  for (int i = 0; i < reps; ++i) one_round(s, e, bytes, first);
  return static_cast<double>(clk.now_ns() - t0) / reps;
}

// 64-byte sends streamed one way; the receiver answers with a tag at the end.
double stream_rate(side& s, bool first, bool coalesce, const plan& p, const sys::clock& clk) {
  stream_sender& out = coalesce ? s.out : s.out_plain;
  stream_receiver& in = coalesce ? s.in : s.in_plain;
  if (!first) {
    s.stream_wait(in, p.stream_bytes);
    check(s.to_tags.send(nullptr, 0, 0, 2), "tagged send");
    return 0;
  }
  const uint64_t t0 = clk.now_ns();
  for (uint64_t sent = 0; sent < p.stream_bytes; sent += 64)
    check(out.send(s.buf.data(), 64), "stream send");
  check(out.flush(), "stream flush");
  s.tag_wait();
  return static_cast<double>(clk.now_ns() - t0);
}

// Bursts of every size in turn, the sizes interleaved, so that a change of
// load (or of where the host runs the two CPUs) falls on all of them alike;
// the median per size. The tagged remote write alternates with bursts of
// the cache-line floor.
void run(side& s, bool first, const plan& p) {
  sys::clock clk;
  uint64_t line_next = 0;
  std::vector<double> rtt, floors;
  for (int b = 0; b < p.bursts; ++b) {
    rtt.push_back(burst(s, first, exchange::tagged, 16, p.reps, clk));
    if (first)
      floors.push_back(hpam_bench::line_burst(floor_lines, line_next, 200, clk));
    else
      hpam_bench::line_serve(floor_lines, line_next, 200);
  }
  if (first) {
    std::printf("kind,protocol,bytes,value\n");
    std::printf("rtt_us,tagged_write,16,%.3f\n", hpam_bench::quantile(rtt, 0.5) / 1000.0);
    std::printf("floor_ns,line,64,%.1f\n", hpam_bench::quantile(floors, 0.5));
  }
  for (exchange e : {exchange::datagram, exchange::stream}) {
    std::vector<std::vector<double>> per(p.sizes.size());
    for (int b = 0; b < p.bursts; ++b)
      for (size_t k = 0; k < p.sizes.size(); ++k)
        if (e != exchange::stream || p.sizes[k] != 0)  // a stream sends no empty record
          per[k].push_back(burst(s, first, e, p.sizes[k], reps_for(p, p.sizes[k]), clk));
    for (size_t k = 0; first && k < p.sizes.size(); ++k)
      if (!per[k].empty())
        std::printf("one_way_us,%s,%u,%.3f\n", e == exchange::datagram ? "datagram" : "stream",
                    p.sizes[k], hpam_bench::quantile(per[k], 0.5) / 2000.0);
  }
  for (bool coalesce : {true, false}) {
    std::vector<double> t;
    for (int b = 0; b < 3; ++b) t.push_back(stream_rate(s, first, coalesce, p, clk));
    if (!first) continue;
    const double ns = hpam_bench::quantile(t, 0.5);
    const char* name = coalesce ? "coalesce_on" : "coalesce_off";
    std::printf("stream_MBps,%s,64,%.1f\n", name,
                static_cast<double>(p.stream_bytes) * 1000.0 / ns);
    std::printf("stream_Mmsgs,%s,64,%.3f\n", name,
                static_cast<double>(p.stream_bytes / 64) * 1000.0 / ns);
  }
  std::fflush(stdout);
}

// --- --cost: one process, two cards --------------------------------------

struct cost_world {
  std::string job = "hlcost-" + std::to_string(getpid());
  hw::card a{config(job, 0)}, b{config(job, 1)};
  hamlyn_manager ma{(a.attach_all(), b.attach_all(), a)}, mb{b};
  tagged_write_receiver tags{mb, 4096};
  datagram_receiver dgrams{mb, 1, 4096};
  stream_receiver in{mb, side::stream_cfg()};
  tagged_write_sender to_tags;
  datagram_sender to_dgrams;
  stream_sender out;
  std::byte msg[16] = {};
};

}  // namespace

extern "C" [[gnu::noinline]] int hamlyn_bench_send(cost_world& w, int protocol, uint64_t i) {
  switch (protocol) {
    case 0:
      return static_cast<int>(w.to_tags.send(w.msg, 16, 0, i));
    case 1:
      return static_cast<int>(w.to_dgrams.send(0, w.msg, 16));
    case 2: {
      const status st = w.out.send(w.msg, 16);
      return static_cast<int>(is_ok(st) ? w.out.flush() : st);
    }
    default: {  // coalesced: a flush every 128 messages
      const status st = w.out.send(w.msg, 16);
      return static_cast<int>(is_ok(st) && (i & 127) == 127 ? w.out.flush() : st);
    }
  }
}

extern "C" [[gnu::noinline]] bool hamlyn_bench_receive(cost_world& w, int protocol) {
  switch (protocol) {
    case 0: {
      uint64_t t;
      return w.tags.get_tag(t);
    }
    case 1: {
      datagram d;
      if (!w.dgrams.receive(0, d)) return false;
      w.dgrams.release(0);
      return true;
    }
    default: {
      stream_record r;
      if (!w.in.receive(r)) return false;
      return is_ok(w.in.release(r.id));
    }
  }
}

namespace {

int cost(const std::string& name, uint64_t iters) {
  const char* names[] = {"tagged_write", "datagram", "stream", "stream_coalesced"};
  int protocol = -1;
  for (int i = 0; i < 4; ++i)
    if (name == names[i]) protocol = i;
  if (protocol < 0) die("--cost: tagged_write, datagram, stream or stream_coalesced");
  cost_world w;
  check(w.to_tags.open(w.ma, w.tags.make_seed()), "seed");
  check(w.to_dgrams.open(w.ma, w.dgrams.make_seed()), "seed");
  check(w.out.open(w.ma, w.in.make_seed(), coalesce_on, wait_ns), "seed");
  // Each message is received once it is sent (the card deposits it during
  // the send), so every receive counted finds one: no idle polls in the
  // figure, except one per flush of the coalesced stream.
  uint64_t received = 0;
  for (uint64_t i = 0; i < iters; ++i) {
    check(static_cast<status>(hamlyn_bench_send(w, protocol, i)), "send");
    if (protocol < 3 || (i & 127) == 127)
      while (hamlyn_bench_receive(w, protocol)) {
        received++;
        if (protocol < 3) break;
      }
    (void)w.ma.poll_nowait();  // the stream's credits
  }
  if (protocol == 3) check(w.out.flush(), "flush");
  while (hamlyn_bench_receive(w, protocol)) received++;
  std::printf("%s: %llu messages sent, %llu receives\n", names[protocol],
              static_cast<unsigned long long>(iters), static_cast<unsigned long long>(received));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  bool quick = false;
  std::string cost_name, sizes;
  uint64_t iters = 10000;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--quick")
      quick = true;
    else if (a == "--cost" && i + 1 < argc)
      cost_name = argv[++i];
    else if (a == "--iters" && i + 1 < argc)
      iters = std::strtoull(argv[++i], nullptr, 10);
    else if (a == "--sizes" && i + 1 < argc)
      sizes = argv[++i];
    else {
      std::fprintf(
          stderr,
          "usage: hamlyn_lib_bench [--quick] [--sizes a,b,...] | --cost PROTOCOL [--iters N]\n");
      return 2;
    }
  }
  if (!cost_name.empty()) return cost(cost_name, iters);
  plan p;
  p.bursts = quick ? 9 : 31;
  p.reps = quick ? 50 : 100;
  p.sizes = {0, 16, 64, 256, 1024, 2048, 4096, 8192, 16384, 32768, 49152, 65536};
  if (!sizes.empty()) {  // --sizes a,b,c (each at most 64 KiB)
    p.sizes.clear();
    for (const char* c = sizes.c_str(); *c;) {
      char* end;
      p.sizes.push_back(
          static_cast<uint32_t>(std::min<unsigned long>(std::strtoul(c, &end, 10), max_bytes)));
      c = *end == ',' ? end + 1 : end;
      if (end == c && *c) die("--sizes: numbers separated by commas");
    }
  }
  p.stream_bytes = quick ? (4u << 20) : (32u << 20);
  floor_lines = static_cast<hpam_bench::line_pair*>(mmap(nullptr, sizeof(hpam_bench::line_pair),
                                                         PROT_READ | PROT_WRITE,
                                                         MAP_SHARED | MAP_ANONYMOUS, -1, 0));
  if (floor_lines == MAP_FAILED) die("mmap");
  new (floor_lines) hpam_bench::line_pair{};
  const std::string job = "hlbench-" + std::to_string(getpid());
  int up[2], down[2];
  if (pipe(up) != 0 || pipe(down) != 0) die("pipe");
  const pid_t child = fork();
  if (child == 0) {
    hpam_bench::pin_to_cpu(1);
    side s(job, 1);
    const side::seeds mine = s.mine();
    side::seeds theirs;
    if (write(up[1], &mine, sizeof mine) != sizeof mine ||
        read(down[0], &theirs, sizeof theirs) != sizeof theirs)
      die("seed exchange");
    s.connect(theirs);
    run(s, false, p);
    _exit(0);
  }
  hpam_bench::pin_to_cpu(0);
  side s(job, 0);
  const side::seeds mine = s.mine();
  side::seeds theirs;
  if (read(up[0], &theirs, sizeof theirs) != sizeof theirs ||
      write(down[1], &mine, sizeof mine) != sizeof mine)
    die("seed exchange");
  s.connect(theirs);
  run(s, true, p);
  int st = 0;
  waitpid(child, &st, 0);
  return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : 1;
}
