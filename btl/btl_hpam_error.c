/*
 * What an HPAM error means to Open MPI: the one mapping of HPAM_ERR_* to
 * OPAL errors, and the report of a lost peer (named, then the job ends
 * through the error callback ob1 registered).
 */
#include "btl_hpam.h"

#include <stdio.h>

#include "opal/util/output.h"
#include "opal/util/proc.h"

/* The one place an HPAM error becomes an OPAL error. */
int mca_btl_hpam_to_opal_error(int err)
{
    switch (err) {
    case HPAM_OK: return OPAL_SUCCESS;
    case HPAM_ERR_BUSY:
    case HPAM_ERR_AGAIN:
    case HPAM_ERR_NO_RESOURCE: return OPAL_ERR_OUT_OF_RESOURCE;
    case HPAM_ERR_UNREACHABLE: return OPAL_ERR_UNREACH;
    case HPAM_ERR_INVALID: return OPAL_ERR_BAD_PARAM;
    case HPAM_ERR_REJECTED: return OPAL_ERR_PERM;
    case HPAM_ERR_NOT_SUPPORTED: return OPAL_ERR_NOT_SUPPORTED;
    default: return OPAL_ERROR;
    }
}

/* A peer was given up on: say which, and end the job through ob1. */
void mca_btl_hpam_report_lost_peer(void)
{
    mca_btl_hpam_component_t *c = &mca_btl_hpam_component;
    if (c->lost_peer_reported) return;
    c->lost_peer_reported = true;
    const int lrank = hpam_unreachable_peer(c->ep);
    mca_btl_base_endpoint_t *ep = (lrank >= 0 && lrank < c->nlocal) ? c->peers[lrank] : NULL;
    char msg[512];
    snprintf(msg, sizeof msg,
             "btl/hpam: lost peer %s (local rank %d on %s): %s. (A peer that only "
             "computes or sleeps is never given up on: this one exited, was stopped, or "
             "polled without answering for btl_hpam_give_up_ms.)",
             ep ? OPAL_NAME_PRINT(ep->proc->proc_name) : "(unknown)", lrank,
             opal_process_info.nodename, hpam_last_error());
    opal_output(0, "%s", msg);
    if (NULL != mca_btl_hpam_module.error_cb) {
        mca_btl_hpam_module.error_cb(&mca_btl_hpam_module.super, MCA_BTL_ERROR_FLAGS_FATAL,
                                     ep ? ep->proc : NULL, msg);
    }
}
