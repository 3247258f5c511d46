// The token a handler receives: names the message it runs for, so that a
// request handler can reply to its requester and only to it.
#pragma once

#include <cstdint>

#include "hpam_am.h"

struct hpam_token {
  void* endpoint;        // the hpam::am::endpoint<Card> running the handler
  hpam_ep_t* c_ep;       // the C handle of that endpoint (for the C API)
  int src;               // process the message came from
  uint32_t instance;     // protocol instance ("buf") of the request
  uint32_t sequence;     // sequence number ("id") of the request
  bool is_request;       // true in a request handler, false in a reply handler
  bool replied;          // a reply went out for this request
};
