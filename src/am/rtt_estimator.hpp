// The retransmission timeout of one peer, following its measured round trip
// as TCP's retransmission timer does (RFC 6298, section 2): a smoothed
// round-trip time and its mean deviation, the timeout their sum with four
// deviations, held between a floor and a ceiling; doubled on a timeout
// (section 5.5) until the next measurement.
//
// HPAM's own timer (the paper's) is the fixed timeout; it stays, as the
// ceiling and as the fixed mode (endpoint_config::adaptive_timeout off).
// Measurements follow Karn's rule: only requests answered without a resend
// are timed (endpoint::on_answer_when_lossy).
#pragma once

#include <cstdint>

namespace hpam::am {

struct rtt_estimator {
  uint64_t srtt_ns = 0;    // smoothed round trip; 0: nothing measured yet
  uint64_t rttvar_ns = 0;  // its mean deviation
  uint64_t rto_ns = 0;     // the timeout new requests to the peer get

  // Before the first measurement the timeout is the ceiling.
  static constexpr rtt_estimator starting(uint64_t ceiling_ns) { return {0, 0, ceiling_ns}; }

  // One round trip measured (r > 0): gains 1/8 and 1/4 (RFC 6298 2.3),
  // the timeout srtt + 4 rttvar within [floor, ceiling].
  constexpr void measured(uint64_t r, uint64_t floor_ns, uint64_t ceiling_ns) {
    if (srtt_ns == 0) {
      srtt_ns = r;
      rttvar_ns = r / 2;
    } else {
      const uint64_t err = srtt_ns > r ? srtt_ns - r : r - srtt_ns;
      rttvar_ns = (3 * rttvar_ns + err) / 4;
      srtt_ns = (7 * srtt_ns + r) / 8;
    }
    rto_ns = clamp(srtt_ns + 4 * rttvar_ns, floor_ns, ceiling_ns);
  }

  // A request timed out: the timeout doubles, up to the ceiling, until a
  // measurement says otherwise (RFC 6298 5.5).
  constexpr void timed_out(uint64_t ceiling_ns) {
    rto_ns = rto_ns > ceiling_ns / 2 ? ceiling_ns : 2 * rto_ns;
  }

  static constexpr uint64_t clamp(uint64_t v, uint64_t lo, uint64_t hi) {
    return v < lo ? lo : v > hi ? hi : v;
  }
};

}  // namespace hpam::am
