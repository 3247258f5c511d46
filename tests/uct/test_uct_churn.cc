// Memory churned through the memory domain: thousands of allocate / free
// cycles (card memory while it fits CARD_MEMORY, private memory beyond it)
// and register / deregister cycles, each area written and read by a peer
// (bytes checked). After a warm-up this process's resident memory stays
// within a stated bound and the job's /dev/shm segments keep their number
// and size; every allocation that fits the card's memory gets card memory
// (an area never given back would exhaust it); and once the domain and its
// interfaces are closed no segment of the job is left in /dev/shm.
#include <dirent.h>
#include <sys/stat.h>

#include <cstdio>

#include "uct_fixture.hpp"

extern "C" {
#include "uct_hpam_rkey.h"
}

using namespace hpam_uct_test;

namespace {

constexpr int cycles = 3000, warm_up = 500, sample_every = 250;
constexpr long rss_bound_kib = 8 * 1024;  // growth allowed after the warm-up
#ifdef __SANITIZE_ADDRESS__
// AddressSanitizer's quarantine keeps freed memory resident (256 MB by
// default): there the resident memory is printed, not bounded.
constexpr bool rss_bounded = false;
#else
constexpr bool rss_bounded = true;
#endif
constexpr size_t card_bytes = 65536;  // CARD_MEMORY, its smallest value
// MAX_REGISTRATIONS, slots alive at once: a registration never given back
// uses them up within the warm-up.
constexpr int max_registrations = 64;

long rss_kib() {
  FILE* f = std::fopen("/proc/self/status", "r");
  char line[256];
  long kib = -1;
  while (f && std::fgets(line, sizeof line, f))
    if (std::sscanf(line, "VmRSS: %ld kB", &kib) == 1) break;
  if (f) std::fclose(f);
  return kib;
}

// The job's segments in /dev/shm (the cards' "hpam-UID-ucx-JOB-..." and the
// registry's "hpamucx-UID-ucx-JOB.registry"): how many, their bytes.
struct segments {
  int count = 0;
  long long bytes = 0;
  bool operator==(const segments& o) const { return count == o.count && bytes == o.bytes; }
};
segments job_segments(const std::string& job) {
  const std::string tag = "-" + std::to_string(getuid()) + "-ucx-" + job;
  segments s;
  DIR* d = opendir("/dev/shm");
  if (d == nullptr) return s;
  while (dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    const size_t at = name.find(tag);
    const char next = at == std::string::npos ? 0 : name[at + tag.size()];
    if (name.rfind("hpam", 0) != 0 || (next != '-' && next != '.')) continue;
    struct stat st {};
    if (stat(("/dev/shm/" + name).c_str(), &st) == 0) s.bytes += st.st_size;
    s.count++;
  }
  closedir(d);
  return s;
}

struct churn {
  uct_md_h md = nullptr;
  side a, b;
  uct_ep_h ab = nullptr;

  // A peer (a) writes the first and the last word of [at, at + len) and
  // reads them back; the owner sees them. Registered memory is by
  // cross-memory attach (batched: the flush carries it out).
  void use(uct_mem_h memh, uint64_t* words, size_t len, uint64_t tag) {
    std::vector<uint8_t> packed(88);
    ASSERT_EQ(UCS_OK, uct_md_mkey_pack(md, memh, packed.data()));
    uct_rkey_bundle_t rkey{};
    ASSERT_EQ(UCS_OK, uct_rkey_unpack(hpam_component(), packed.data(), &rkey));
    const size_t last = len / 8 - 1;
    const uint64_t v[2] = {tag * 2 + 1, tag * 2 + 2};
    for (int k = 0; k < 2; ++k) {
      const uint64_t at = reinterpret_cast<uint64_t>(&words[k ? last : 0]);
      ucs_status_t st = UCS_ERR_NO_RESOURCE;
      ASSERT_TRUE(progress_until({&a, &b}, [&] {
        return (st = uct_ep_put_short(ab, &v[k], 8, at, rkey.rkey)) != UCS_ERR_NO_RESOURCE;
      }));
      ASSERT_EQ(UCS_OK, st);
    }
    ASSERT_TRUE(progress_until({&a, &b}, [&] { return uct_ep_flush(ab, 0, nullptr) == UCS_OK; }));
    ASSERT_EQ(v[0], words[0]);
    ASSERT_EQ(v[1], words[last]);
    uint64_t back = 0;
    uct_iov_t into{&back, 8, nullptr, 0, 1};
    completion c;
    ucs_status_t st = uct_ep_get_zcopy(ab, &into, 1, reinterpret_cast<uint64_t>(&words[last]),
                                       rkey.rkey, &c.comp);
    if (st == UCS_INPROGRESS) {
      ASSERT_TRUE(progress_until({&a, &b}, [&] { return c.done; }));
      st = c.status;
    }
    ASSERT_EQ(UCS_OK, st);
    ASSERT_EQ(v[1], back);
    uct_rkey_release(hpam_component(), &rkey);
  }
};

// Sizes cycled through: three fit the card's memory, one does not (private
// memory, 256 KiB: a private area never freed shows in the resident memory).
const size_t sizes[] = {64, 4096, 32768, 256 * 1024};

TEST(uct_churn, allocate_and_register_thousands_of_times_resident_memory_and_segments_stay_flat) {
  const std::string job = unique_job();
  churn c;
  ASSERT_EQ(UCS_OK, open_md({{"JOB", job},
                             {"NIC", "hamlyn"},
                             {"CARD_MEMORY", std::to_string(card_bytes)},
                             {"MAX_REGISTRATIONS", std::to_string(max_registrations)}},
                            &c.md));
  ASSERT_EQ(UCS_OK, c.a.open(c.md, "hamlyn"));
  ASSERT_EQ(UCS_OK, c.b.open(c.md, "hamlyn"));
  ASSERT_EQ(UCS_OK, connect(c.a, c.b, &c.ab));
  std::vector<uint64_t> user(8192);  // registered and deregistered every cycle
  long rss_base = 0, rss_peak = 0;
  segments seg_base;
  int card_allocations = 0;
  for (int i = 0; i < cycles; ++i) {
    const size_t len = sizes[i % 4];
    uct_allocated_memory_t mem{};
    ASSERT_EQ(UCS_OK, allocate_on(c.md, len, &mem)) << "cycle " << i;
    const int kind = static_cast<uct_hpam_memh_t*>(mem.memh)->allocated;
    if (len <= card_bytes) {
      ASSERT_EQ(UCT_HPAM_MEMH_CARD, kind) << "cycle " << i << ": " << len << " bytes";
      card_allocations++;
    }
    c.use(mem.memh, static_cast<uint64_t*>(mem.address), len, static_cast<uint64_t>(i));
    ASSERT_EQ(UCS_OK, uct_mem_free(&mem));
    uct_mem_h reg = nullptr;
    ASSERT_EQ(UCS_OK,
              uct_md_mem_reg(c.md, user.data(), user.size() * 8, UCT_MD_MEM_ACCESS_ALL, &reg));
    c.use(reg, user.data(), user.size() * 8, static_cast<uint64_t>(i) + cycles);
    ASSERT_EQ(UCS_OK, uct_md_mem_dereg(c.md, reg));
    if (HasFatalFailure()) return;
    if (i + 1 == warm_up) {
      rss_base = rss_peak = rss_kib();
      seg_base = job_segments(job);
      ASSERT_GT(seg_base.count, 0);
    } else if (i + 1 > warm_up && (i + 1) % sample_every == 0) {
      rss_peak = std::max(rss_peak, rss_kib());
      const segments s = job_segments(job);
      EXPECT_TRUE(s == seg_base) << "cycle " << i << ": " << s.count << " segments, " << s.bytes
                                 << " bytes; after the warm-up " << seg_base.count << ", "
                                 << seg_base.bytes;
    }
  }
  std::printf(
      "churn: %d cycles (%d card-memory allocations): rss %ld KiB after the warm-up, "
      "%ld at most; %d segments of %lld bytes\n",
      cycles, card_allocations, rss_base, rss_peak, seg_base.count, seg_base.bytes);
  if (rss_bounded) {
    EXPECT_LE(rss_peak - rss_base, rss_bound_kib) << "resident memory grew after the warm-up";
  }
  uct_ep_destroy(c.ab);
  close_together({&c.a, &c.b});
  uct_md_close(c.md);
  const segments left = job_segments(job);
  EXPECT_EQ(0, left.count) << left.count << " segments of the job left in /dev/shm";
}

}  // namespace
