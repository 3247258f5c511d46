// Shared segments: create/attach/publish, attach timeouts, stale segments
// left by killed processes, live conflicts, and stale cleanup.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "sys/shared_segment.hpp"

namespace hpam::sys {
namespace {

std::string job_for(const char* tag) {
  return std::string("seg") + tag + std::to_string(getpid());
}

bool name_exists(const std::string& name) {
  const int fd = shm_open(name.c_str(), O_RDONLY, 0);
  if (fd < 0) return false;
  close(fd);
  return true;
}

// Forks a child that runs `body` with an alarm; returns its pid.
template <class F>
pid_t fork_child(F body) {
  const pid_t pid = fork();
  if (pid == 0) {
    alarm(30);
    _exit(body());
  }
  return pid;
}

int reap(pid_t pid) {
  int st = 0;
  if (waitpid(pid, &st, 0) != pid) return -1;
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

TEST(shared_segment, name_is_per_user_job_purpose_and_rank) {
  const std::string n = segment_name("job7", "medusa", 3);
  EXPECT_EQ(n, "/hpam-" + std::to_string(getuid()) + "-job7-medusa-3");
  EXPECT_NE(segment_name("job7", "medusa", 3), segment_name("job7", "medusa", 4));
  EXPECT_NE(segment_name("job7", "medusa", 3), segment_name("job8", "medusa", 3));
}

TEST(shared_segment, create_publish_attach) {
  const std::string name = segment_name(job_for("basic"), "t", 0);
  shared_segment s = shared_segment::create(name, 10000);
  ASSERT_TRUE(s.valid());
  EXPECT_GE(s.payload_size(), 10000u);
  EXPECT_EQ(s.header()->magic, segment_magic);
  EXPECT_EQ(s.header()->version, segment_version);
  EXPECT_EQ(s.header()->creator_pid, getpid());
  EXPECT_EQ(reinterpret_cast<uintptr_t>(s.payload()) % 64, 0u);
  std::memcpy(s.payload(), "card memory", 12);
  s.publish();
  shared_segment a = shared_segment::attach(name, 1000);
  ASSERT_TRUE(a.valid());
  EXPECT_EQ(a.payload_size(), s.payload_size());
  EXPECT_STREQ(reinterpret_cast<const char*>(a.payload()), "card memory");
  // Two mappings of the same memory.
  a.payload()[100] = std::byte{42};
  EXPECT_EQ(s.payload()[100], std::byte{42});
  shared_segment moved = std::move(a);
  EXPECT_TRUE(moved.valid());
  EXPECT_FALSE(a.valid());  // NOLINT(bugprone-use-after-move): moved-from is empty
  s.unlink();
  EXPECT_FALSE(name_exists(name));
  EXPECT_EQ(moved.payload()[100], std::byte{42});  // mappings outlive the name
}

// Pages of the segment in memory (mincore: the page cache of the shm file).
size_t resident_pages(const shared_segment& s) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const size_t bytes = s.payload_size() + sizeof(segment_header);
  std::vector<unsigned char> v((bytes + page - 1) / page);
  if (mincore(s.header(), bytes, v.data()) != 0) return ~size_t{0};
  size_t n = 0;
  for (unsigned char c : v) n += c & 1;
  return n;
}

TEST(shared_segment, prefault_makes_pages_resident_up_to_the_bound_and_keeps_contents) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const std::string name = segment_name(job_for("prefault"), "t", 0);
  shared_segment s = shared_segment::create(name, 64 * page);  // 65 pages with the header
  EXPECT_EQ(resident_pages(s), 1u);                            // the header only
  s.prefault(16 * page - sizeof(segment_header));
  EXPECT_EQ(resident_pages(s), 16u);  // the bound is kept: the rest comes at first use
  std::memcpy(s.payload() + 20 * page, "card memory", 12);
  EXPECT_EQ(resident_pages(s), 17u);
  s.publish();
  shared_segment a = shared_segment::attach(name, 1000);
  a.prefault(a.payload_size() + 12345);  // past the end: bounded by the mapping
  EXPECT_EQ(resident_pages(a), 65u);
  EXPECT_STREQ(reinterpret_cast<const char*>(a.payload() + 20 * page), "card memory");
  EXPECT_EQ(a.header()->magic, segment_magic);
  for (size_t i = 0; i < 16 * page; ++i) ASSERT_EQ(a.payload()[i], std::byte{0}) << i;
  s.unlink();
}

TEST(shared_segment, attach_times_out_with_a_clear_error) {
  const std::string name = segment_name(job_for("timeout"), "t", 0);
  try {
    (void)shared_segment::attach(name, 20);
    FAIL() << "attached to a segment nobody created";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(name), std::string::npos) << e.what();
  }
  // Created but not published: still not attachable.
  shared_segment s = shared_segment::create(name, 100);
  EXPECT_THROW((void)shared_segment::attach(name, 20), std::runtime_error);
  s.publish();
  EXPECT_TRUE(shared_segment::attach(name, 20).valid());
  s.unlink();
}

TEST(shared_segment, attach_waits_for_a_peer_that_comes_later) {
  const std::string name = segment_name(job_for("later"), "t", 0);
  const pid_t child = fork_child([&] {
    usleep(50'000);
    shared_segment s = shared_segment::create(name, 64);
    std::memcpy(s.payload(), "late", 5);
    s.publish();
    usleep(500'000);  // stay alive while the parent attaches
    s.unlink();
    return 0;
  });
  ASSERT_GT(child, 0);
  shared_segment a;
  EXPECT_NO_THROW(a = shared_segment::attach(name, 10'000));
  if (a.valid()) {
    EXPECT_STREQ(reinterpret_cast<const char*>(a.payload()), "late");
  }
  EXPECT_EQ(reap(child), 0);
}

TEST(shared_segment, segment_of_a_killed_process_does_not_break_a_new_create) {
  const std::string name = segment_name(job_for("stale"), "t", 0);
  const pid_t child = fork_child([&] {
    shared_segment s = shared_segment::create(name, 4096);
    s.publish();
    _exit(0);  // dies without unlinking (no destructors run)
    return 0;
  });
  ASSERT_GT(child, 0);
  ASSERT_EQ(reap(child), 0);
  ASSERT_TRUE(name_exists(name));
  shared_segment s;
  EXPECT_NO_THROW(s = shared_segment::create(name, 4096));
  ASSERT_TRUE(s.valid());
  EXPECT_EQ(s.header()->creator_pid, getpid());
  EXPECT_EQ(s.header()->ready.load(), 0u);  // a fresh segment, not the dead one's
  s.unlink();
}

TEST(shared_segment, live_conflicting_creator_is_an_error) {
  const std::string name = segment_name(job_for("live"), "t", 0);
  int go[2];
  ASSERT_EQ(pipe(go), 0);
  const pid_t child = fork_child([&] {
    shared_segment s = shared_segment::create(name, 4096);
    s.publish();
    char c;
    close(go[1]);
    (void)!read(go[0], &c, 1);  // hold the segment until the parent is done
    s.unlink();
    return 0;
  });
  ASSERT_GT(child, 0);
  close(go[0]);
  (void)shared_segment::attach(name, 10'000);  // wait until the child created it
  try {
    (void)shared_segment::create(name, 4096);
    ADD_FAILURE() << "created over a live process's segment";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(std::to_string(child)), std::string::npos) << e.what();
  }
  close(go[1]);
  EXPECT_EQ(reap(child), 0);
  EXPECT_FALSE(name_exists(name));
}

TEST(shared_segment, remove_stale_segments_removes_only_dead_ones) {
  const std::string dead = segment_name(job_for("rmdead"), "t", 0);
  const std::string live = segment_name(job_for("rmlive"), "t", 0);
  const pid_t child = fork_child([&] {
    shared_segment s = shared_segment::create(dead, 64);
    _exit(0);
    return 0;
  });
  ASSERT_EQ(reap(child), 0);
  shared_segment mine = shared_segment::create(live, 64);
  ASSERT_TRUE(name_exists(dead));
  EXPECT_GE(remove_stale_segments(), 1);
  EXPECT_FALSE(name_exists(dead));
  EXPECT_TRUE(name_exists(live));
  mine.unlink();
}

}  // namespace
}  // namespace hpam::sys
