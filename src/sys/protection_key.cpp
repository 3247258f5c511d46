#include "sys/protection_key.hpp"

#include <sys/random.h>

#include <cerrno>
#include <system_error>

namespace hpam::sys {

protection_key random_protection_key() {
  protection_key key = 0;
  while (key == 0) {
    ssize_t n = getrandom(&key, sizeof key, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n != static_cast<ssize_t>(sizeof key))
      throw std::system_error(errno, std::generic_category(), "getrandom");
  }
  return key;
}

}  // namespace hpam::sys
