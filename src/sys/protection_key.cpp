#include "sys/protection_key.hpp"

#include <pthread.h>
#include <sys/random.h>

#include <cerrno>
#include <mutex>
#include <system_error>

namespace hpam::sys {
namespace {

// Keys are drawn a batch at a time: one getrandom for pool_keys keys. Each
// MPI rendezvous registers memory (a Hamlyn slot with its own key), and a
// syscall per key showed in its profile. The pool is per thread, and a
// forked child empties the forking thread's pool before it draws a key, so
// parent and child never hand out the same one.
constexpr int pool_keys = 32;

struct key_pool {
  protection_key keys[pool_keys];
  int left = 0;
};
thread_local key_pool pool;

void forget_pool_in_child() {
  pool.left = 0;
}

void refill(key_pool& p) {
  static std::once_flag at_fork;
  std::call_once(at_fork, [] { pthread_atfork(nullptr, nullptr, forget_pool_in_child); });
  size_t got = 0;
  auto* bytes = reinterpret_cast<unsigned char*>(p.keys);
  while (got < sizeof p.keys) {
    const ssize_t n = getrandom(bytes + got, sizeof p.keys - got, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw std::system_error(errno, std::generic_category(), "getrandom");
    got += static_cast<size_t>(n);
  }
  p.left = pool_keys;
}

}  // namespace

protection_key random_protection_key() {
  protection_key key = 0;
  while (key == 0) {
    if (pool.left == 0) refill(pool);
    key = pool.keys[--pool.left];
    pool.keys[pool.left] = 0;  // a key handed out does not stay behind in the pool
  }
  return key;
}

}  // namespace hpam::sys
