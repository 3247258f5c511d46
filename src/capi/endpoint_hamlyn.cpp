// endpoint<Card> for the Hamlyn card: the same protocol, unchanged, over
// sender-managed inbound regions and notification queues.
#include "am/endpoint_impl.hpp"
#include "capi/c_ops.hpp"
#include "nic/hamlyn/hamlyn_am_card.hpp"

namespace hpam::am {
template class endpoint<nic::hamlyn_am_card>;
}  // namespace hpam::am

namespace hpam::capi {

void* create_hamlyn_endpoint(const endpoint_config& cfg, const c_ops** ops, hpam_ep_t* handle,
                             bool guarded) {
  return create_endpoint<nic::hamlyn_am_card>(cfg, ops, handle, guarded);
}

}  // namespace hpam::capi
