/*
 * Remote keys of the UCX transport. Registering memory on the memory domain
 * makes a Hamlyn slot with its own protection key on the domain's deposit
 * card (hpam_dep_register); the packed rkey carries that slot's ticket, the
 * address the slot starts at and the card's process index, so a peer can
 * deposit into it (put, get, atomics) by ticket and offset.
 *
 * A packed rkey comes from another process: it is copied once, checked
 * (magic, version, size, job, range) and only then used. The ticket itself
 * is checked again by the owner's card against its own slot table.
 */
#pragma once

#include <assert.h>
#include <stddef.h>
#include <stdint.h>

#include "hpam_deposit.h"

#define UCT_HPAM_RKEY_MAGIC 0x484b4559u /* "YEKH" */
#define UCT_HPAM_RKEY_VERSION 1u

/* The wire format (what mkey_pack writes, rkey_unpack reads). */
typedef struct uct_hpam_packed_rkey {
    uint32_t magic;       /* UCT_HPAM_RKEY_MAGIC */
    uint16_t version;     /* UCT_HPAM_RKEY_VERSION */
    uint16_t size;        /* sizeof(uct_hpam_packed_rkey_t) */
    uint32_t owner;       /* process index of the deposit card holding the slot */
    uint32_t reserved;    /* zero */
    uint64_t job_hash;    /* the job the card belongs to */
    uint64_t base;        /* virtual address the registration starts at (owner's view) */
    uint64_t length;      /* bytes registered */
    hpam_ticket_t ticket; /* the slot's ticket */
} uct_hpam_packed_rkey_t;

static_assert(sizeof(uct_hpam_packed_rkey_t) == 40 + HPAM_TICKET_BYTES, "packed rkey layout");
static_assert(offsetof(uct_hpam_packed_rkey_t, ticket) == 40, "packed rkey layout");

/* What a uct_rkey_t points to once unpacked. */
typedef struct uct_hpam_rkey {
    hpam_ticket_t ticket;
    uint64_t base, length;
    uint64_t job_hash;
    uint32_t owner;
    /* 1 once a within-the-call form (hpam_dep_*_now) said not-supported: the
     * ticket names memory this process cannot address, and a ticket never
     * changes what it names, so later operations go to the deposit at once
     * (uct_hpam_rma.c; read and written relaxed: rkeys may be shared). */
    uint32_t not_direct;
} uct_hpam_rkey_t;

/* uct_hpam_memh_t::allocated: what the domain allocated for it (mem_alloc). */
enum {
    UCT_HPAM_MEMH_REGISTERED = 0, /* the user's memory (mem_reg) */
    UCT_HPAM_MEMH_CARD = 1,       /* card memory (hpam_dep_allocate) */
    UCT_HPAM_MEMH_PRIVATE = 2     /* private memory, when card memory ran out */
};

/* A registration on the memory domain (the uct_mem_h). */
/* What the memory domain's deposit card (the owner of the domain's
 * registrations and card memory) took and refused, peers' forged keys and
 * out-of-bounds deposits included (uct_hpam_md.c); zeros before the card
 * exists. */
struct uct_md;
void uct_hpam_md_dep_counters(struct uct_md *md, hpam_dep_counters_t *out);

typedef struct uct_hpam_memh {
    hpam_ticket_t ticket;
    uint64_t base, length;
    int allocated; /* UCT_HPAM_MEMH_* */
} uct_hpam_memh_t;

void uct_hpam_rkey_pack(const uct_hpam_memh_t *memh, uint32_t owner, uint64_t job_hash,
                        void *buffer);

/* 0 and *out filled when buffer holds a well-formed packed rkey; otherwise
 * -1 with the reason in err. */
int uct_hpam_rkey_unpack(const void *buffer, uct_hpam_rkey_t *out, char *err, size_t errlen);

/* The offset of [remote_addr, remote_addr + length) inside the registration,
 * or -1 when the range is not inside it. */
static inline int uct_hpam_rkey_offset(const uct_hpam_rkey_t *rkey, uint64_t remote_addr,
                                       uint64_t length, uint64_t *offset)
{
    if (remote_addr < rkey->base) return -1;
    const uint64_t off = remote_addr - rkey->base;
    if (off > rkey->length || length > rkey->length - off) return -1;
    *offset = off;
    return 0;
}
