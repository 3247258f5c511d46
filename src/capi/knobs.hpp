// The knob table behind hpam_knobs.h, and the configuration conversions it
// drives. Each knob binds a field of the C configuration (hpam_config_t or
// hpam_dep_config_t) to the core's own field (am::endpoint_config or
// deposit::setup); the knob's default is the core's default, read from a
// default-constructed core configuration, so every default is written once.
#pragma once

#include <string>

#include "am/config.hpp"
#include "deposit/deposit.hpp"
#include "hpam_knobs.h"

namespace hpam::capi {

// The card under the active messages when the configuration names none: the
// default of knob nic (the core takes the card type as a template parameter,
// so the C API chooses it).
inline constexpr const char* default_nic = "medusa";

// hpam_config_t → the protocol's configuration (knobs, then identity fields).
am::endpoint_config to_endpoint_config(const hpam_config_t& c);
// Knob acks_wait_when_idle resolved: "auto" is on when the job's processes
// outnumber the node's online cores (they take turns on them, and a poll
// that finds nothing gives its core away).
bool acks_wait_when_idle(const hpam_config_t& c, long online_cores);
// hpam_dep_config_t → the deposit layer's setup.
deposit::setup to_deposit_setup(const hpam_dep_config_t& c);

// Every knob of cfg checked, in table order. Empty when valid; otherwise the
// first problem, naming the knob as a field of hpam_config_t.
std::string check_config(const hpam_config_t& cfg);
std::string check_config(const hpam_dep_config_t& cfg);

// Defaults of every knob of the pair (either pointer may be null).
void set_defaults(hpam_config_t* am, hpam_dep_config_t* dep);

}  // namespace hpam::capi
