/*
 * hpam_deposit.h — the C view of sender-based deposit (Hamlyn tickets) and
 * the hybrid deposit model's atomics, for C callers such as the Open MPI BTL.
 * The C++ API is src/deposit/deposit.hpp; this is a thin layer over it.
 *
 * One hpam_dep_t per process. Registering memory yields a ticket (plain
 * data, HPAM_TICKET_BYTES) to hand to peers; put, get and atomics by ticket
 * and offset are nonblocking, each with a handle whose state is pending,
 * sent or an error (hpam_dep_test). hpam_dep_progress must be called while
 * peers may depend on this process (deposits on the fallback path and
 * atomics on private memory are carried out by the owner when it polls).
 * Functions return HPAM_OK or a negative HPAM_ERR_* code (hpam_am.h).
 */
#ifndef HPAM_DEPOSIT_H
#define HPAM_DEPOSIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hpam_am.h"

#ifdef __cplusplus
extern "C" {
#endif

#define HPAM_TICKET_BYTES 48

typedef struct hpam_dep hpam_dep_t;
typedef struct hpam_ticket {
  unsigned char bytes[HPAM_TICKET_BYTES]; /* node, slot, key, range: opaque here */
} hpam_ticket_t;
typedef struct hpam_dep_handle {
  uint32_t index, generation;
} hpam_dep_handle_t;
/* The handle of an operation complete within the call (a deposit carried
 * out at once): no record was taken; hpam_dep_test says done. */
#define HPAM_DEP_COMPLETED_INDEX 0xFFFFFFFEu
static inline int hpam_dep_completed(hpam_dep_handle_t h) {
  return h.index == HPAM_DEP_COMPLETED_INDEX;
}

typedef struct hpam_dep_config {
  const char *job;            /* job id, identical in all processes (required) */
  int nprocs, my_proc;        /* processes in the job, this one */
  /* Knobs of the table in hpam_knobs.h (defaults, units and ranges there): */
  int cross_memory;           /* use process_vm_writev/readv when allowed */
  uint32_t packet_size;       /* deposit packet size (power of two) */
  uint32_t max_registrations; /* registrations (slots) alive at once */
  uint64_t attach_timeout_ms; /* wait for a peer */
  uint32_t batch_limit;       /* puts/gets up to this size go in batches (0: each at once) */
  uint64_t card_memory;       /* bytes of card memory for hpam_dep_allocate */
} hpam_dep_config_t;

void hpam_dep_config_init(hpam_dep_config_t *cfg);
int hpam_dep_create(const hpam_dep_config_t *cfg, hpam_dep_t **out);
int hpam_dep_attach(hpam_dep_t *d, int proc);
void hpam_dep_destroy(hpam_dep_t *d);
int hpam_dep_cross_memory_to(const hpam_dep_t *d, int proc);

/* HPAM_ERR_NO_RESOURCE when all max_registrations slots are in use. */
int hpam_dep_register(hpam_dep_t *d, void *base, size_t len, hpam_ticket_t *out);
int hpam_dep_deregister(hpam_dep_t *d, const hpam_ticket_t *t);
/* len bytes of card memory (Hamlyn message-area memory in this process's
 * card segment), registered: peers write and read it directly and its
 * atomics are CPU atomics, with no system call and no work by this process.
 * *addr is its address here; hpam_dep_deregister frees it. HPAM_ERR_NO_RESOURCE
 * when the card's memory (card_memory bytes) or its slots are used up. */
int hpam_dep_allocate(hpam_dep_t *d, size_t len, void **addr, hpam_ticket_t *out);
/* Registrations alive now (slots in use). */
unsigned hpam_dep_registrations(const hpam_dep_t *d);

/* What this process's deposit card took and refused, counted as deposits
 * into its memory arrive: batched or one at a time, by cross-memory attach,
 * by packets or within the call. A refused deposit writes nothing and fails
 * alone (the rest of its batch lands). */
typedef struct hpam_dep_counters {
  uint64_t packets;            /* deposits taken */
  uint64_t key_rejections;     /* wrong protection key */
  uint64_t bounds_rejections;  /* outside the registration */
  uint64_t revoked_rejections; /* slot deregistered (or never registered) */
  uint64_t malformed;          /* no such slot, bad lengths */
} hpam_dep_counters_t;
void hpam_dep_get_counters(const hpam_dep_t *d, hpam_dep_counters_t *out);

int hpam_dep_put(hpam_dep_t *d, const void *src, size_t len, const hpam_ticket_t *t,
                 uint64_t offset, hpam_dep_handle_t *h);
int hpam_dep_get(hpam_dep_t *d, void *dst, size_t len, const hpam_ticket_t *t, uint64_t offset,
                 hpam_dep_handle_t *h);
/* A get that travels as a packet whatever the route, unchecked by the
 * sender: its answer (the bytes, or HPAM_ERR_REJECTED from the owner's
 * checks) comes only after the owner served every packet this process sent
 * it before. A mark behind puts that went as packets. */
int hpam_dep_get_behind(hpam_dep_t *d, void *dst, size_t len, const hpam_ticket_t *t,
                        uint64_t offset, hpam_dep_handle_t *h);

enum hpam_dep_atomic_op {
  HPAM_DEP_ADD, HPAM_DEP_AND, HPAM_DEP_OR, HPAM_DEP_XOR, HPAM_DEP_SWAP, HPAM_DEP_CSWAP
};
/* width 4 or 8; fetched may be NULL for the non-fetching forms. */
int hpam_dep_atomic(hpam_dep_t *d, enum hpam_dep_atomic_op op, int width, const hpam_ticket_t *t,
                    uint64_t offset, uint64_t operand, uint64_t compare, uint64_t *fetched,
                    hpam_dep_handle_t *h);

/* The same, carried out within the call where t names memory this process
 * addresses (card memory from hpam_dep_allocate, or its own): the same
 * checks, then a copy or a CPU atomic; no handle, no system call.
 * HPAM_ERR_NOT_SUPPORTED, with nothing done, for any other memory. */
int hpam_dep_put_now(hpam_dep_t *d, const void *src, size_t len, const hpam_ticket_t *t,
                     uint64_t offset);
int hpam_dep_get_now(hpam_dep_t *d, void *dst, size_t len, const hpam_ticket_t *t, uint64_t offset);
/* hpam_dep_get_now handing the bytes to take(arg, data, len) where they
 * are, the slot held meanwhile (UCX's unpack callback; no copy in between). */
int hpam_dep_get_now_to(hpam_dep_t *d, void (*take)(void *, const void *, size_t), void *arg,
                        size_t len, const hpam_ticket_t *t, uint64_t offset);
int hpam_dep_atomic_now(hpam_dep_t *d, enum hpam_dep_atomic_op op, int width, const hpam_ticket_t *t,
                        uint64_t offset, uint64_t operand, uint64_t compare, uint64_t *fetched);

/* 0 pending, 1 sent (done), negative HPAM_ERR_* on error; frees h when done. */
int hpam_dep_test(hpam_dep_t *d, hpam_dep_handle_t h);
void hpam_dep_progress(hpam_dep_t *d);
/* hpam_dep_progress for a caller that polls after every operation: after a
 * get posted since the previous call, the waiting small gets stay for a
 * later call (a stream of them batches); a call with nothing new, a full
 * batch or hpam_dep_progress carries them out. */
void hpam_dep_poll(hpam_dep_t *d);
/* Moves whenever an operation with a handle may have stopped pending: a
 * caller holding many handles tests them only when it moved. */
uint64_t hpam_dep_events(const hpam_dep_t *d);
const char *hpam_dep_last_error(void);

/* Whether hpam_dep_progress has anything to do, asked inline by a progress
 * loop (the BTL's, UCX's) without a call: the words the endpoint's own test
 * reads (deposit::endpoint::quiet), bound once. Quiet: no local work (runs
 * of puts or gets counting, the work queue not empty, gets waiting for their
 * batch, replies or requests waiting for room), no packet published in the
 * inbound FIFO and none waiting there to be served again. Skipping
 * hpam_dep_progress while quiet leaves nothing undone. From another thread
 * than the one that drives d, a hint: an operation issued meanwhile may be
 * seen at the next look. */
typedef struct hpam_dep_quiet {
  const uint32_t *work;       /* nonzero: local work */
  const bool *deferred;       /* an inbound packet waits to be served again */
  const uint64_t *cursor;     /* the next inbound FIFO position the owner takes */
  const unsigned char *cells; /* the inbound FIFO's cells */
  uint64_t mask;              /* cells - 1 */
  uint32_t shift;             /* log2 of a cell's bytes */
} hpam_dep_quiet_t;

/* Binds `out` to d's words (valid until hpam_dep_destroy). HPAM_ERR_INVALID
 * for a NULL. */
int hpam_dep_quiet_bind(const hpam_dep_t *d, hpam_dep_quiet_t *out);

/* The test, inline: a cell is published for position c when its first word
 * (its sequence) is c + 1 (sys/cell_fifo.hpp). */
static inline bool hpam_dep_quiet(const hpam_dep_quiet_t *q)
{
  if (__atomic_load_n(q->work, __ATOMIC_RELAXED) != 0 ||
      __atomic_load_n(q->deferred, __ATOMIC_RELAXED))
    return false;
  const uint64_t c = __atomic_load_n(q->cursor, __ATOMIC_RELAXED);
  const uint64_t *sequence =
      (const uint64_t *)(const void *)(q->cells + ((c & q->mask) << q->shift));
  return __atomic_load_n(sequence, __ATOMIC_ACQUIRE) != c + 1;
}

#ifdef __cplusplus
}
#endif
#endif /* HPAM_DEPOSIT_H */
