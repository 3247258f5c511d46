#include "sys/shared_segment.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <system_error>

#include "sys/clock.hpp"

namespace hpam::sys {
namespace {

[[noreturn]] void throw_errno(const std::string& what) {
  throw std::system_error(errno, std::generic_category(), what);
}

size_t page_round(size_t n) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return (n + page - 1) / page * page;
}

bool process_alive(int pid) {
  return pid > 0 && (kill(pid, 0) == 0 || errno == EPERM);
}

// Reads the creator pid of an existing segment; -1 when unreadable.
int segment_creator(const std::string& name) {
  int fd = shm_open(name.c_str(), O_RDONLY, 0);
  if (fd < 0) return -1;
  segment_header h{};
  ssize_t n = pread(fd, &h, sizeof h, 0);
  close(fd);
  if (n != static_cast<ssize_t>(sizeof h) || h.magic != segment_magic) return -1;
  return h.creator_pid;
}

void sleep_briefly() {
  timespec ts{0, 200'000};  // 0.2 ms between attach attempts (setup only)
  nanosleep(&ts, nullptr);
}

}  // namespace

shared_segment& shared_segment::operator=(shared_segment&& o) noexcept {
  if (this != &o) {
    if (base_) munmap(base_, size_);
    base_ = o.base_;
    size_ = o.size_;
    name_ = std::move(o.name_);
    owner_ = o.owner_;
    o.base_ = nullptr;
    o.size_ = 0;
  }
  return *this;
}

shared_segment::~shared_segment() {
  if (base_) munmap(base_, size_);
}

shared_segment shared_segment::create(const std::string& name, size_t payload_size) {
  const size_t size = page_round(sizeof(segment_header) + payload_size);
  int fd = shm_open(name.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
  if (fd < 0 && errno == EEXIST) {
    int creator = segment_creator(name);
    if (process_alive(creator) && creator != getpid())
      throw std::runtime_error("hpam: shared segment " + name + " is in use by live process " +
                               std::to_string(creator));
    shm_unlink(name.c_str());  // stale: its creator is gone
    fd = shm_open(name.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
  }
  if (fd < 0) throw_errno("shm_open(" + name + ")");
  if (ftruncate(fd, static_cast<off_t>(size)) != 0) {
    int e = errno;
    close(fd);
    shm_unlink(name.c_str());
    errno = e;
    throw_errno("ftruncate(" + name + ")");
  }
  void* base = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  int e = errno;
  close(fd);
  if (base == MAP_FAILED) {
    shm_unlink(name.c_str());
    errno = e;
    throw_errno("mmap(" + name + ")");
  }
  shared_segment s;
  s.base_ = base;
  s.size_ = size;
  s.name_ = name;
  s.owner_ = true;
  auto* h = s.header();
  h->version = segment_version;
  h->header_size = sizeof(segment_header);
  h->size = size;
  h->creator_pid = getpid();
  h->ready.store(0, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  h->magic = segment_magic;
  return s;
}

shared_segment shared_segment::attach(const std::string& name, uint64_t timeout_ms) {
  const uint64_t deadline = clock::monotonic_ns() + timeout_ms * 1'000'000ull;
  for (;;) {
    int fd = shm_open(name.c_str(), O_RDWR, 0);
    if (fd >= 0) {
      struct stat st {};
      if (fstat(fd, &st) == 0 && static_cast<size_t>(st.st_size) >= sizeof(segment_header)) {
        size_t size = static_cast<size_t>(st.st_size);
        void* base = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        close(fd);
        if (base == MAP_FAILED) throw_errno("mmap(" + name + ")");
        shared_segment s;
        s.base_ = base;
        s.size_ = size;
        s.name_ = name;
        auto* h = s.header();
        if (h->magic == segment_magic && h->ready.load(std::memory_order_acquire)) {
          if (h->version != segment_version || h->header_size != sizeof(segment_header) ||
              h->size != size)
            throw std::runtime_error("hpam: shared segment " + name +
                                     " has an incompatible layout (another hpam version?)");
          return s;
        }
      } else {
        close(fd);
      }
    }
    if (clock::monotonic_ns() > deadline)
      throw std::runtime_error("hpam: timed out after " + std::to_string(timeout_ms) +
                               " ms waiting for shared segment " + name +
                               " (has the peer process started?)");
    sleep_briefly();
  }
}

void shared_segment::prefault(size_t payload_bytes) noexcept {
  if (base_ == nullptr) return;
  const size_t bytes = page_round(sizeof(segment_header) + payload_bytes);
  const size_t len = bytes < size_ ? bytes : size_;
#ifdef MADV_POPULATE_WRITE
  if (madvise(base_, len, MADV_POPULATE_WRITE) == 0) return;
#endif
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  auto* p = static_cast<unsigned char*>(base_);
  for (size_t at = 0; at < len; at += page) __atomic_fetch_add(p + at, 0, __ATOMIC_RELAXED);
}

void shared_segment::publish() noexcept {
  header()->ready.store(1, std::memory_order_release);
}

void shared_segment::unlink() noexcept {
  if (!name_.empty()) shm_unlink(name_.c_str());
}

std::string segment_name(std::string_view job, std::string_view what, int rank) {
  std::string n = "/hpam-" + std::to_string(getuid()) + "-";
  n.append(job);
  n += "-";
  n.append(what);
  n += "-" + std::to_string(rank);
  return n;
}

int remove_stale_segments() {
  const std::string prefix = "hpam-" + std::to_string(getuid()) + "-";
  DIR* d = opendir("/dev/shm");
  if (!d) return 0;
  int removed = 0;
  while (dirent* e = readdir(d)) {
    if (std::strncmp(e->d_name, prefix.c_str(), prefix.size()) != 0) continue;
    const std::string name = std::string("/") + e->d_name;
    int creator = segment_creator(name);
    if (creator > 0 && !process_alive(creator) && shm_unlink(name.c_str()) == 0) ++removed;
  }
  closedir(d);
  return removed;
}

}  // namespace hpam::sys
