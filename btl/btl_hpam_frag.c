/*
 * Send fragments: a descriptor and room for one packet's payload, from a
 * free list that grows in chunks up to btl_hpam_max_frags. When every
 * fragment is in use, alloc and prepare_src fail and Open MPI queues the
 * send itself (ob1 retries from its progress), so a sender that outruns its
 * peer waits in progress, serving the network, instead of piling copies up.
 *
 * Fragments live in plain malloc'd chunks (not an opal_free_list on an
 * mpool): MPI_T_finalize may finalize this BTL after the memory pools.
 */
#include "btl_hpam.h"

#include <string.h>

#include "opal/datatype/opal_convertor.h"

#define C (&mca_btl_hpam_component)

enum { frags_per_chunk = 64 };

static void frag_construct(mca_btl_hpam_frag_t *frag)
{
    frag->data = (unsigned char *)(frag + 1);
    frag->next_free = NULL;
    frag->base.des_segments = frag->segments;
    frag->base.des_segment_count = 1;
    frag->segments[0].seg_addr.pval = frag->data;
    frag->endpoint = NULL;
}
OBJ_CLASS_INSTANCE(mca_btl_hpam_frag_t, mca_btl_base_descriptor_t, frag_construct, NULL);

/* Adds a chunk to the free stack, never beyond max_frags in all. Returns
 * false at the limit or when out of memory. */
static bool grow(void)
{
    const int room = C->params.max_frags - C->nfrags;
    const int n = room < frags_per_chunk ? room : frags_per_chunk;
    if (n <= 0) return false;
    void **chunks = realloc(C->frag_chunks, sizeof(void *) * (size_t)(C->nchunks + 1));
    if (NULL == chunks) return false;
    C->frag_chunks = chunks;
    unsigned char *mem = NULL;
    if (0 != posix_memalign((void **)&mem, 64, C->frag_stride * (size_t)n)) return false;
    C->frag_chunks[C->nchunks++] = mem;
    for (int i = 0; i < n; ++i) {
        mca_btl_hpam_frag_t *frag = (mca_btl_hpam_frag_t *)(mem + C->frag_stride * (size_t)i);
        OBJ_CONSTRUCT(frag, mca_btl_hpam_frag_t);
        frag->next_free = C->free_frags;
        C->free_frags = frag;
    }
    C->nfrags += n;
    return true;
}

int mca_btl_hpam_frags_setup(size_t max_send_size)
{
    C->frag_stride = (sizeof(mca_btl_hpam_frag_t) + max_send_size + 63) & ~(size_t)63;
    C->pack_buffer = malloc(max_send_size);
    return NULL != C->pack_buffer && grow() ? OPAL_SUCCESS : OPAL_ERR_OUT_OF_RESOURCE;
}

void mca_btl_hpam_frags_release(void)
{
    for (int i = 0; i < C->nchunks; ++i) free(C->frag_chunks[i]);
    free(C->frag_chunks);
    free(C->pack_buffer);
    C->frag_chunks = NULL;
    C->pack_buffer = NULL;
    C->nchunks = 0;
    C->nfrags = 0;
    C->free_frags = NULL;
}

mca_btl_base_descriptor_t *mca_btl_hpam_alloc(struct mca_btl_base_module_t *btl,
                                              struct mca_btl_base_endpoint_t *endpoint,
                                              uint8_t order, size_t size, uint32_t flags)
{
    if (OPAL_UNLIKELY(size > btl->btl_max_send_size)) return NULL;
    MCA_BTL_HPAM_LOCK();
    if (OPAL_UNLIKELY(NULL == C->free_frags) && !grow()) {
        C->frag_exhausted++;
        MCA_BTL_HPAM_UNLOCK();
        return NULL; /* Open MPI queues the send and tries again from progress */
    }
    mca_btl_hpam_frag_t *frag = C->free_frags;
    C->free_frags = frag->next_free;
    MCA_BTL_HPAM_UNLOCK();
    frag->segments[0].seg_addr.pval = frag->data;
    frag->segments[0].seg_len = size;
    frag->base.des_segment_count = 1;
    frag->base.des_flags = flags;
    frag->base.order = MCA_BTL_NO_ORDER;
    frag->base.des_cbfunc = NULL;
    frag->endpoint = endpoint;
    return &frag->base;
}

int mca_btl_hpam_free(struct mca_btl_base_module_t *btl, mca_btl_base_descriptor_t *des)
{
    mca_btl_hpam_frag_t *frag = (mca_btl_hpam_frag_t *)des;
    MCA_BTL_HPAM_LOCK();
    frag->next_free = C->free_frags;
    C->free_frags = frag;
    MCA_BTL_HPAM_UNLOCK();
    return OPAL_SUCCESS;
}

/* The data goes into the packet anyway: pack it into the fragment. */
mca_btl_base_descriptor_t *mca_btl_hpam_prepare_src(struct mca_btl_base_module_t *btl,
                                                    struct mca_btl_base_endpoint_t *endpoint,
                                                    struct opal_convertor_t *convertor,
                                                    uint8_t order, size_t reserve, size_t *size,
                                                    uint32_t flags)
{
    if (reserve > btl->btl_max_send_size) return NULL;
    if (*size > btl->btl_max_send_size - reserve) *size = btl->btl_max_send_size - reserve;
    mca_btl_base_descriptor_t *des =
        mca_btl_hpam_alloc(btl, endpoint, order, reserve + *size, flags);
    if (OPAL_UNLIKELY(NULL == des)) return NULL;
    mca_btl_hpam_frag_t *frag = (mca_btl_hpam_frag_t *)des;
    if (*size > 0) {
        struct iovec iov = {.iov_base = frag->data + reserve, .iov_len = *size};
        uint32_t iov_count = 1;
        size_t max_data = *size;
        if (opal_convertor_pack(convertor, &iov, &iov_count, &max_data) < 0) {
            mca_btl_hpam_free(btl, des);
            return NULL;
        }
        *size = max_data;
    }
    frag->segments[0].seg_len = reserve + *size;
    return des;
}
