// The token a handler receives: names the message it runs for, so that a
// request handler can reply to its requester and only to it. The struct
// keeps the C API's name (hpam_token_t is this type, opaque to C callers),
// so a handler registered through the C API has exactly the core's handler
// type; the core never sees the C API itself.
#pragma once

#include <cstddef>
#include <cstdint>

struct hpam_token {
  void* endpoint;     // the hpam::am::endpoint<Card> running the handler
  void* owner;        // the endpoint's owner (opaque here; the C API keeps its handle)
  int src;            // process the message came from
  uint32_t instance;  // protocol instance ("buf") of the request
  uint32_t sequence;  // sequence number ("id") of the request
  bool is_request;    // true in a request handler, false in a reply handler
  bool replied;       // a reply went out for this request
};

namespace hpam::am {

// Handlers are registered by index, the same in every process; packets
// carry the index, never a code address.
constexpr unsigned max_handlers = 256;

using handler4_fn = void (*)(hpam_token* token, void* ctx, uint64_t a0, uint64_t a1, uint64_t a2,
                             uint64_t a3);
// data/len: the bytes stored (at the target) or carried (medium, in place).
using handler_bulk_fn = void (*)(hpam_token* token, void* ctx, void* data, size_t len,
                                 uint64_t arg);
// A request of mine to peer was answered (endpoint::set_answer_hook): by
// handler index, with its argument word (a short request's first word).
using answer_fn = void (*)(void* ctx, int peer, unsigned handler, uint64_t arg);
// Writes a message's payload at dest (room for max_bulk bytes) and returns
// its length (endpoint::try_medium_packed; UCX's pack callback).
using pack_fn = size_t (*)(void* dest, void* arg);

}  // namespace hpam::am
