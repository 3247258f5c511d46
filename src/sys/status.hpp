// The one status type of the hpam core. Every fallible core call returns it;
// exceptions are used only during setup and never cross the C boundary.
// The BTL maps it to OPAL_ERR_* in exactly one function.
#pragma once

#include <cstdint>

namespace hpam {

enum class [[nodiscard]] status : int32_t{
    ok = 0,
    busy = 1,              // all D request instances to the peer are in use (non-blocking send)
    would_block = 2,       // a resource is momentarily exhausted; try again after polling
    peer_unreachable = 3,  // the give-up time passed without an answer from the peer
    invalid_argument = 4,  // a caller passed a value out of range
    rule_violation = 5,    // request handler sent other than one reply, or reply handler sent
    rejected = 6,          // a check refused the operation (key, bounds, mode, revoked ticket)
    no_resource = 7,       // setup could not obtain memory or a segment
    system_error = 8,      // an operating-system call failed (errno was logged)
    not_supported = 9,     // this build or machine cannot do it (e.g. cross-memory attach)
};

constexpr bool is_ok(status s) noexcept {
  return s == status::ok;
}

// Short lowercase name for logs and error messages.
const char* status_name(status s) noexcept;

}  // namespace hpam
