// The UCX transport's configuration and what it advertises: UCX_HPAM_*
// values out of range are refused with the variable's name, rules between
// variables and between processes of a job are checked, and iface_query
// reports exactly the capabilities the transport implements.
#include <sys/wait.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <fstream>
#include <string>

#include "hpam_knobs.h"
#include "uct_fixture.hpp"

extern "C" {
#include "uct_hpam_registry.h"
#include "uct_hpam_rkey.h"
}

using namespace hpam_uct_test;

namespace {

struct bad_value {
  const char* name;
  const char* value;
  const char* message;  // what the error must say
};

class uct_params : public ::testing::TestWithParam<bad_value> {};

TEST_P(uct_params, refused_naming_the_variable) {
  const bad_value& b = GetParam();
  log_capture log;
  uct_md_h md = nullptr;
  const ucs_status_t st = open_md({{"JOB", unique_job()}, {b.name, b.value}}, &md);
  EXPECT_EQ(UCS_ERR_INVALID_PARAM, st) << b.name << "=" << b.value;
  EXPECT_TRUE(log.contains(b.message)) << log.all();
  if (md) uct_md_close(md);
}

INSTANTIATE_TEST_SUITE_P(
    values, uct_params,
    ::testing::Values(
        bad_value{"DEPTH", "0", "invalid UCX_HPAM_DEPTH = 0: valid range is [1, 64]"},
        bad_value{"DEPTH", "65", "invalid UCX_HPAM_DEPTH = 65: valid range is [1, 64]"},
        bad_value{"DEPTH", "-1", "invalid UCX_HPAM_DEPTH = -1: valid range is [1, 64]"},
        bad_value{"DEPTH", "4x", "Expected: UCX_HPAM_DEPTH, a whole number in [1, 64]"},
        bad_value{"BLOCK_SIZE", "1000",
                  "invalid UCX_HPAM_BLOCK_SIZE = 1000: valid values are powers of two in [256, "
                  "65536]"},
        bad_value{"BLOCK_SIZE", "131072", "invalid UCX_HPAM_BLOCK_SIZE = 131072"},
        bad_value{"PACKET_SIZE", "100", "invalid UCX_HPAM_PACKET_SIZE = 100"},
        bad_value{"MAX_PROCS", "1", "invalid UCX_HPAM_MAX_PROCS = 1: valid range is [2, 1024]"},
        bad_value{"FAULT_DROP", "1.5", "invalid UCX_HPAM_FAULT_DROP = 1.5: valid range is [0, 1]"},
        bad_value{"FAULT_REORDER", "-0.1", "invalid UCX_HPAM_FAULT_REORDER = -0.1"},
        bad_value{"FAULT_SEED", "seven", "Expected: UCX_HPAM_FAULT_SEED, a whole number"},
        bad_value{"GIVE_UP_MS", "0",
                  "invalid UCX_HPAM_GIVE_UP_MS = 0: valid range is [1, 3600000]"},
        bad_value{"NIC", "ether", "invalid UCX_HPAM_NIC = ether: valid values are medusa, hamlyn"},
        bad_value{"KEY_CHECK", "maybe", "Expected: UCX_HPAM_KEY_CHECK, y or n"},
        bad_value{"STATS", "2", "Expected: UCX_HPAM_STATS, y or n"},
        bad_value{"JOB", "an-id-that-is-much-longer-than-forty-characters",
                  "invalid UCX_HPAM_JOB"}));

// Rules between knobs come from the same table as the BTL's.
TEST(uct_params, rules_between_knobs_name_both) {
  struct rule {
    settings s;
    const char* message;
  } rules[] = {
      {{{"GIVE_UP_MS", "10"}, {"TIMEOUT_US", "20000"}},
       "invalid UCX_HPAM_TIMEOUT_US = 20000: valid range is [1, 10000] us (at most the give-up "
       "time)"},
      {{{"CRC_CHECK", "n"}, {"FAULT_CORRUPT", "0.1"}},
       "invalid UCX_HPAM_FAULT_CORRUPT = 0.1: valid values are 0 while crc_check is off"},
  };
  for (auto& r : rules) {
    log_capture log;
    uct_md_h md = nullptr;
    r.s.insert(r.s.begin(), {"JOB", unique_job()});
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, open_md(r.s, &md));
    EXPECT_TRUE(log.contains(r.message)) << log.all();
  }
}

// Every knob of hpam's table is a UCX_HPAM_* variable, with the table's
// default, plus the transport's own JOB, MAX_PROCS and STATS.
TEST(uct_params, every_knob_is_a_variable) {
  uct_md_config_t* config = nullptr;
  ASSERT_EQ(UCS_OK, uct_md_config_read(hpam_component(), nullptr, nullptr, &config));
  for (size_t i = 0; i < hpam_knob_count(); ++i) {
    std::string name = hpam_knob_info(i)->name;
    for (char& c : name) c = static_cast<char>(toupper(c));
    char value[64] = "";
    EXPECT_EQ(UCS_OK, uct_config_get(config, name.c_str(), value, sizeof value)) << name;
  }
  char value[64];
  for (const char* own : {"JOB", "MAX_PROCS", "STATS"})
    EXPECT_EQ(UCS_OK, uct_config_get(config, own, value, sizeof value)) << own;
  // The transport's own defaults where it sets them apart (uct_hpam_md_config.c), the
  // table's elsewhere.
  ASSERT_EQ(UCS_OK, uct_config_get(config, "DEPTH", value, sizeof value));
  EXPECT_STREQ("16", value);
  ASSERT_EQ(UCS_OK, uct_config_get(config, "RECEIVE_BUDGET", value, sizeof value));
  EXPECT_STREQ("16", value);
  ASSERT_EQ(UCS_OK, uct_config_get(config, "CHECKS_PER_POLL", value, sizeof value));
  EXPECT_EQ(std::to_string(hpam_knob_default(size_t(hpam_knob_find("checks_per_poll"))).i), value);
  uct_config_release(config);
}

// The sanitizer runtimes this process has loaded (a sanitizer build), each
// followed by ':': an uninstrumented program must preload them before an
// instrumented library, ASan's first of all.
static std::string sanitizer_runtimes() {
  std::string asan, ubsan;
  std::ifstream maps("/proc/self/maps");
  for (std::string line; std::getline(maps, line);) {
    const size_t slash = line.rfind('/');
    if (slash == std::string::npos) continue;
    const std::string path = line.substr(line.find('/')), name = line.substr(slash + 1);
    if (name.rfind("libasan.so", 0) == 0) asan = path + ":";
    if (name.rfind("libubsan.so", 0) == 0) ubsan = path + ":";
  }
  return asan + ubsan;
}

// The built libuct_hpam.so (this program links the transport's objects
// itself): in $HPAM_BUILDDIR (make check), else beside this program's
// directory tests/uct/.
static std::string built_library() {
  if (const char* builddir = std::getenv("HPAM_BUILDDIR"))
    return std::string(builddir) + "/uct/.libs/libuct_hpam.so";
  char exe[PATH_MAX] = {};
  if (readlink("/proc/self/exe", exe, sizeof exe - 1) <= 0) return "libuct_hpam.so";
  std::string dir(exe);
  dir.erase(dir.rfind('/'));
  if (dir.size() > 6 && dir.compare(dir.size() - 6, 6, "/.libs") == 0) dir.erase(dir.size() - 6);
  return dir + "/../../uct/.libs/libuct_hpam.so";
}

// The library registers the component from its constructor: it must load
// into any program (the knob table it walks there is constant-initialized).
TEST(uct_params, library_loads_into_any_program) {
  const std::string preload = "LD_PRELOAD=" + sanitizer_runtimes() + built_library();
  const pid_t child = fork();
  if (child == 0) {
    char* const argv[] = {const_cast<char*>("/bin/true"), nullptr};
    char* const envp[] = {const_cast<char*>(preload.c_str()), nullptr};
    execve("/bin/true", argv, envp);
    _exit(127);
  }
  int status = 0;
  ASSERT_EQ(child, waitpid(child, &status, 0));
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;
}

TEST(uct_params, good_values_open) {
  uct_md_h md = nullptr;
  ASSERT_EQ(UCS_OK, open_md({{"JOB", unique_job()},
                             {"DEPTH", "64"},
                             {"BLOCK_SIZE", "0x400"},
                             {"FAULT_DROP", "1"},
                             {"TIMEOUT_US", "30000000"}},
                            &md));
  uct_md_close(md);
}

// Processes of one job must build cards of one shape: the second one to
// differ is refused, naming the variable and both values.
TEST(uct_params, job_shape_must_agree) {
  const std::string job = unique_job();
  uct_md_h md4 = nullptr, md8 = nullptr;
  ASSERT_EQ(UCS_OK, open_md({{"JOB", job}, {"DEPTH", "4"}}, &md4));
  ASSERT_EQ(UCS_OK, open_md({{"JOB", job}, {"DEPTH", "8"}}, &md8));
  side a, b;
  ASSERT_EQ(UCS_OK, a.open(md4));
  {
    log_capture log;
    EXPECT_NE(UCS_OK, b.open(md8));
    EXPECT_TRUE(log.contains("UCX_HPAM_DEPTH=8 differs from UCX_HPAM_DEPTH=4")) << log.all();
  }
  b.close();
  a.close();
  uct_md_close(md8);
  uct_md_close(md4);
}

TEST(uct_params, device_is_the_card) {
  uct_md_h md = nullptr;
  ASSERT_EQ(UCS_OK, open_md({{"JOB", unique_job()}, {"NIC", "hamlyn"}}, &md));
  uct_tl_resource_desc_t* res = nullptr;
  unsigned n = 0;
  ASSERT_EQ(UCS_OK, uct_md_query_tl_resources(md, &res, &n));
  ASSERT_EQ(1u, n);
  EXPECT_STREQ("hpam", res[0].tl_name);
  EXPECT_STREQ("hamlyn", res[0].dev_name);
  EXPECT_EQ(UCT_DEVICE_TYPE_SHM, res[0].dev_type);
  uct_release_tl_resource_list(res);
  side s;
  {
    log_capture log;
    EXPECT_EQ(UCS_ERR_NO_DEVICE, s.open(md, "medusa"));
    EXPECT_TRUE(log.contains("the card is 'hamlyn' (UCX_HPAM_NIC)")) << log.all();
  }
  s.close();
  uct_md_close(md);
}

class uct_caps : public ::testing::TestWithParam<const char*> {};

TEST_P(uct_caps, advertises_what_it_implements) {
  uct_md_h md = nullptr;
  ASSERT_EQ(UCS_OK,
            open_md({{"JOB", unique_job()}, {"NIC", GetParam()}, {"BLOCK_SIZE", "4096"}}, &md));
  side s;
  ASSERT_EQ(UCS_OK, s.open(md, GetParam()));
  const uint64_t want =
      UCT_IFACE_FLAG_AM_SHORT | UCT_IFACE_FLAG_AM_BCOPY | UCT_IFACE_FLAG_PUT_SHORT |
      UCT_IFACE_FLAG_PUT_BCOPY | UCT_IFACE_FLAG_PUT_ZCOPY | UCT_IFACE_FLAG_GET_BCOPY |
      UCT_IFACE_FLAG_GET_ZCOPY | UCT_IFACE_FLAG_ATOMIC_CPU | UCT_IFACE_FLAG_PENDING |
      UCT_IFACE_FLAG_CB_SYNC | UCT_IFACE_FLAG_CONNECT_TO_IFACE |
      UCT_IFACE_FLAG_ERRHANDLE_PEER_FAILURE | UCT_IFACE_FLAG_EP_CHECK;
  EXPECT_EQ(want, s.attr.cap.flags);  // nothing more: no AM_ZCOPY, no AM_DUP, no async callbacks
  EXPECT_EQ(0u, s.attr.cap.event_flags);
  const uint64_t ops = UCS_BIT(UCT_ATOMIC_OP_ADD) | UCS_BIT(UCT_ATOMIC_OP_AND) |
                       UCS_BIT(UCT_ATOMIC_OP_OR) | UCS_BIT(UCT_ATOMIC_OP_XOR);
  const uint64_t fops = ops | UCS_BIT(UCT_ATOMIC_OP_SWAP) | UCS_BIT(UCT_ATOMIC_OP_CSWAP);
  EXPECT_EQ(ops, s.attr.cap.atomic32.op_flags);
  EXPECT_EQ(ops, s.attr.cap.atomic64.op_flags);
  EXPECT_EQ(fops, s.attr.cap.atomic32.fop_flags);
  EXPECT_EQ(fops, s.attr.cap.atomic64.fop_flags);
  // An active message is one packet of the card: block size minus headers.
  EXPECT_GT(s.attr.cap.am.max_short, 4096u - 128u);
  EXPECT_LT(s.attr.cap.am.max_short, 4096u);
  EXPECT_EQ(s.attr.cap.am.max_short, s.attr.cap.am.max_bcopy);
  EXPECT_EQ(0u, s.attr.cap.am.max_zcopy);
  EXPECT_EQ(0u, s.attr.cap.get.max_short);
  EXPECT_EQ(1u, s.attr.cap.put.max_iov);
  EXPECT_EQ(16u, s.attr.iface_addr_len);
  EXPECT_EQ(0u, s.attr.ep_addr_len);
  EXPECT_GT(s.attr.latency.c, 0.0);
  EXPECT_GT(s.attr.bandwidth.shared, 0.0);
  uct_md_attr_t mattr{};
  ASSERT_EQ(UCS_OK, uct_md_query(md, &mattr));
  EXPECT_EQ(UCT_MD_FLAG_REG | UCT_MD_FLAG_NEED_RKEY | UCT_MD_FLAG_ALLOC, mattr.cap.flags);
  EXPECT_EQ(UCS_BIT(UCS_MEMORY_TYPE_HOST), mattr.cap.alloc_mem_types);
  EXPECT_EQ(88u, mattr.rkey_packed_size);
  s.close();
  uct_md_close(md);
}

INSTANTIATE_TEST_SUITE_P(nics, uct_caps, ::testing::Values("medusa", "hamlyn"));

// Reachability: same node and same job only.
TEST(uct_reach, only_the_same_job) {
  uct_md_h md1 = nullptr, md2 = nullptr;
  ASSERT_EQ(UCS_OK, open_md({{"JOB", unique_job()}}, &md1));
  ASSERT_EQ(UCS_OK, open_md({{"JOB", unique_job()}}, &md2));
  side a, b, other;
  ASSERT_EQ(UCS_OK, a.open(md1));
  ASSERT_EQ(UCS_OK, b.open(md1));
  ASSERT_EQ(UCS_OK, other.open(md2));
  auto reach = [](side& from, const side& to) {
    return uct_iface_is_reachable(from.iface,
                                  reinterpret_cast<const uct_device_addr_t*>(to.dev_addr.data()),
                                  reinterpret_cast<const uct_iface_addr_t*>(to.iface_addr.data()));
  };
  EXPECT_TRUE(reach(a, b));
  EXPECT_TRUE(reach(b, a));
  EXPECT_FALSE(reach(a, other));
  EXPECT_FALSE(reach(other, b));
  std::vector<uint8_t> elsewhere = b.dev_addr;  // another node: a different system id
  elsewhere[0] ^= 0x5a;
  EXPECT_FALSE(
      uct_iface_is_reachable(a.iface, reinterpret_cast<const uct_device_addr_t*>(elsewhere.data()),
                             reinterpret_cast<const uct_iface_addr_t*>(b.iface_addr.data())));
  close_together({&a, &b, &other});
  uct_md_close(md2);
  uct_md_close(md1);
}

// The registry hands out indices once, and starts afresh when all have left.
TEST(uct_registry, indices_are_not_reused_while_members_live) {
  const std::string job = unique_job();
  uct_hpam_job_shape_t shape{0, 4, 8192, 65536, 1, 3};
  char err[256];
  int i0, i1, i2, i3;
  uint64_t k0, k1, k2;
  ASSERT_EQ(0, uct_hpam_registry_join(job.c_str(), &shape, &i0, &k0, err, sizeof err)) << err;
  ASSERT_EQ(0, uct_hpam_registry_join(job.c_str(), &shape, &i1, &k1, err, sizeof err)) << err;
  EXPECT_EQ(0, i0);
  EXPECT_EQ(1, i1);
  EXPECT_EQ(k0, k1);
  EXPECT_NE(0u, k0);
  EXPECT_EQ(getpid(), uct_hpam_registry_pid(job.c_str(), 1));
  uct_hpam_registry_leave(job.c_str(), i1);
  ASSERT_EQ(0, uct_hpam_registry_join(job.c_str(), &shape, &i2, &k2, err, sizeof err)) << err;
  EXPECT_EQ(2, i2);  // 1 is not handed out again while 0 lives
  EXPECT_NE(0, uct_hpam_registry_join(job.c_str(), &shape, &i3, &k2, err, sizeof err));
  EXPECT_NE(nullptr, strstr(err, "UCX_HPAM_MAX_PROCS")) << err;
  uct_hpam_registry_leave(job.c_str(), i0);
  uct_hpam_registry_leave(job.c_str(), i2);
  char path[256];
  uct_hpam_registry_path(job.c_str(), path, sizeof path);
  EXPECT_NE(0, access(path, F_OK));  // the last member removed it
  ASSERT_EQ(0, uct_hpam_registry_join(job.c_str(), &shape, &i3, &k2, err, sizeof err)) << err;
  EXPECT_EQ(0, i3);  // afresh, with a new key
  EXPECT_NE(k0, k2);
  uct_hpam_registry_leave(job.c_str(), i3);
}

// A job killed before its members could leave: the next joiner's sweep
// removes its registry file (only files without a live member).
TEST(uct_registry, sweep_removes_registries_of_dead_jobs) {
  const std::string dead = unique_job(), live = unique_job();
  uct_hpam_job_shape_t shape{0, 4, 8192, 65536, 1, 8};
  char err[256], dead_path[256], live_path[256];
  uct_hpam_registry_path(dead.c_str(), dead_path, sizeof dead_path);
  uct_hpam_registry_path(live.c_str(), live_path, sizeof live_path);
  int me;
  uint64_t key;
  ASSERT_EQ(0, uct_hpam_registry_join(live.c_str(), &shape, &me, &key, err, sizeof err)) << err;
  const pid_t child = fork();
  if (child == 0) {
    int i;
    uint64_t k;
    _exit(uct_hpam_registry_join(dead.c_str(), &shape, &i, &k, err, sizeof err) == 0 ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(child, waitpid(child, &status, 0));
  ASSERT_EQ(0, WEXITSTATUS(status));
  ASSERT_EQ(0, access(dead_path, F_OK));
  EXPECT_GE(uct_hpam_registry_sweep(), 1);
  EXPECT_NE(0, access(dead_path, F_OK));
  EXPECT_EQ(0, access(live_path, F_OK));  // a live member keeps its job
  uct_hpam_registry_leave(live.c_str(), me);
}

}  // namespace
