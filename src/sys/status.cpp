#include "sys/status.hpp"

namespace hpam {

const char* status_name(status s) noexcept {
  switch (s) {
    case status::ok:
      return "ok";
    case status::busy:
      return "busy";
    case status::would_block:
      return "would block";
    case status::peer_unreachable:
      return "peer unreachable";
    case status::invalid_argument:
      return "invalid argument";
    case status::rule_violation:
      return "request-reply rule violation";
    case status::rejected:
      return "rejected";
    case status::no_resource:
      return "out of resources";
    case status::system_error:
      return "system error";
    case status::not_supported:
      return "not supported";
  }
  return "unknown status";
}

}  // namespace hpam
