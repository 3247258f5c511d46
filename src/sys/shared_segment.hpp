// Shared memory segments (POSIX shm, /dev/shm) that hold card memory and
// rings. Names are unique per user and job; a segment left behind by a killed
// run is recognised by its dead creator and removed, so it never breaks the
// next run. Every segment begins with a segment_header (magic, version, size).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>

namespace hpam::sys {

struct alignas(64) segment_header {
  uint64_t magic;               // segment_magic once the header is valid
  uint32_t version;             // segment_version of the writer's layout
  uint32_t header_size;         // sizeof(segment_header)
  uint64_t size;                // bytes mapped, header included
  int32_t creator_pid;          // process that created the segment
  std::atomic<uint32_t> ready;  // set (release) by the creator once contents are initialised
  uint64_t reserved[4];         // zero
};
static_assert(std::is_standard_layout_v<segment_header>);
static_assert(sizeof(segment_header) == 64);
static_assert(std::atomic<uint32_t>::is_always_lock_free);

constexpr uint64_t segment_magic = 0x4d41504853505048ull;  // "HPPSHPAM"
constexpr uint32_t segment_version = 1;

class shared_segment {
 public:
  shared_segment() = default;
  shared_segment(shared_segment&& o) noexcept { *this = std::move(o); }
  shared_segment& operator=(shared_segment&& o) noexcept;
  shared_segment(const shared_segment&) = delete;
  shared_segment& operator=(const shared_segment&) = delete;
  ~shared_segment();

  // Creates `name` holding `payload_size` bytes after the header. A stale
  // segment of that name (creator dead) is removed first; a live one is an
  // error. Throws std::system_error / std::runtime_error (setup only).
  static shared_segment create(const std::string& name, size_t payload_size);

  // Attaches to a segment another process created, waiting up to timeout_ms
  // for it to exist and be marked ready. Throws on timeout or a bad header.
  static shared_segment attach(const std::string& name, uint64_t timeout_ms);

  // Maps the first `payload_bytes` bytes of the payload (and the header)
  // into this process now, writable, allocating the pages a creator has not
  // yet touched: the card's memory is resident as a real card's is, so no
  // packet pays a page fault on first use of a block (a 16 KiB packet into
  // fresh blocks cost 4-5 faults at each end, ~20 us in a VM). The contents
  // are not changed (MADV_POPULATE_WRITE; before Linux 5.14, an atomic add
  // of zero per page, safe beside a peer writing the same memory). Never
  // fails: what cannot be mapped now faults in on first use, as before.
  void prefault(size_t payload_bytes) noexcept;

  // Marks the contents initialised (release); attachers wait for this.
  void publish() noexcept;
  // Removes the name; mappings stay valid until every process unmaps.
  void unlink() noexcept;

  bool valid() const noexcept { return base_ != nullptr; }
  segment_header* header() const noexcept { return static_cast<segment_header*>(base_); }
  std::byte* payload() const noexcept {
    return static_cast<std::byte*>(base_) + sizeof(segment_header);
  }
  size_t payload_size() const noexcept { return size_ - sizeof(segment_header); }
  const std::string& name() const noexcept { return name_; }

 private:
  void* base_ = nullptr;
  size_t size_ = 0;
  std::string name_;
  bool owner_ = false;
};

// "/hpam-<uid>-<job>-<what>-<rank>": unique per user, job, purpose and rank.
std::string segment_name(std::string_view job, std::string_view what, int rank);

// Removes this user's hpam segments whose creator process is dead.
// Returns how many were removed.
int remove_stale_segments();

}  // namespace hpam::sys
