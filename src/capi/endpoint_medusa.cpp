// endpoint<Card> for the Medusa card: the one instantiation of the protocol
// over it, and its ops table for the C API.
#include "am/endpoint_impl.hpp"
#include "capi/c_ops.hpp"
#include "nic/medusa/medusa_card.hpp"

namespace hpam::am {
template class endpoint<nic::medusa_card>;
}  // namespace hpam::am

namespace hpam::capi {

void* create_medusa_endpoint(const endpoint_config& cfg, const c_ops** ops, hpam_ep_t* handle,
                             bool guarded) {
  return create_endpoint<nic::medusa_card>(cfg, ops, handle, guarded);
}

}  // namespace hpam::capi
