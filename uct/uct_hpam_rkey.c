/*
 * Packing and checking of remote keys (see uct_hpam_rkey.h).
 */
#include "uct_hpam_rkey.h"

#include <stdio.h>
#include <string.h>

void uct_hpam_rkey_pack(const uct_hpam_memh_t *memh, uint32_t owner, uint64_t job_hash,
                        void *buffer)
{
    uct_hpam_packed_rkey_t p;
    memset(&p, 0, sizeof p);
    p.magic = UCT_HPAM_RKEY_MAGIC;
    p.version = UCT_HPAM_RKEY_VERSION;
    p.size = (uint16_t)sizeof p;
    p.owner = owner;
    p.job_hash = job_hash;
    p.base = memh->base;
    p.length = memh->length;
    p.ticket = memh->ticket;
    memcpy(buffer, &p, sizeof p); /* the buffer need not be aligned */
}

int uct_hpam_rkey_unpack(const void *buffer, uct_hpam_rkey_t *out, char *err, size_t errlen)
{
    uct_hpam_packed_rkey_t p;
    memcpy(&p, buffer, sizeof p); /* one copy; only the copy is checked and used */
    if (p.magic != UCT_HPAM_RKEY_MAGIC) {
        snprintf(err, errlen, "not an hpam remote key (magic 0x%08x)", p.magic);
        return -1;
    }
    if (p.version != UCT_HPAM_RKEY_VERSION || p.size != sizeof p) {
        snprintf(err, errlen, "hpam remote key of version %u, size %u (expected %u, %zu)",
                 p.version, p.size, UCT_HPAM_RKEY_VERSION, sizeof p);
        return -1;
    }
    if (p.reserved != 0 || p.length == 0 || p.base + p.length < p.base) {
        snprintf(err, errlen, "malformed hpam remote key (base 0x%llx, length %llu)",
                 (unsigned long long)p.base, (unsigned long long)p.length);
        return -1;
    }
    out->ticket = p.ticket;
    out->base = p.base;
    out->length = p.length;
    out->job_hash = p.job_hash;
    out->owner = p.owner;
    out->not_direct = 0;
    return 0;
}
