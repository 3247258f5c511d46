// The definitions of endpoint<Card>'s member functions, one header per
// mechanism (src/am/README.md maps each to its section of the HPAM paper).
// Included only by the files that instantiate endpoint for a card
// (src/capi/endpoint_<card>.cpp) and by tests that drive the protocol
// directly; everything else sees the declaration alone (am/endpoint.hpp).
#pragma once

#include "am/endpoint.hpp"
#include "am/endpoint_acks.hpp"
#include "am/endpoint_loss_recovery.hpp"
#include "am/endpoint_receive.hpp"
#include "am/endpoint_self.hpp"
#include "am/endpoint_send.hpp"
#include "am/endpoint_setup.hpp"
#include "am/endpoint_timeouts.hpp"
