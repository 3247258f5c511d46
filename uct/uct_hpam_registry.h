/*
 * The job registry of the UCX transport: how processes that meet only
 * through UCX (ucx_perftest, pml ucx) become the numbered processes of one
 * HPAM job.
 *
 * The HPAM cards are built for a fixed job: P processes, each with an index,
 * and a protection key every packet carries. Under UCX nobody hands out
 * indices, so every memory domain and interface joins a small registry file
 * in /dev/shm (mode 0600, one per user and job): the first member draws the
 * job's random protection key and fixes the shape every card of the job
 * must share; each member claims the next unused index. Indices are never
 * reused while any member lives (a peer may still hold the old card
 * mapped); the registry starts afresh once every member has left or died.
 * All work happens under flock on the file (set-up only, never on a hot
 * path), and the file is read into a local copy and validated before use.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

/* The most processes (memory domains + interfaces) one job can number. */
#define UCT_HPAM_REGISTRY_MAX_PROCS 1024

/* What every card of a job must agree on (a card attaches only to cards of
 * its own shape); each field is a UCX_HPAM_* variable. */
typedef struct uct_hpam_job_shape {
    uint32_t nic;         /* UCX_HPAM_NIC: 0 medusa, 1 hamlyn */
    uint32_t depth;       /* UCX_HPAM_DEPTH */
    uint32_t block_size;  /* UCX_HPAM_BLOCK_SIZE */
    uint32_t packet_size; /* UCX_HPAM_PACKET_SIZE */
    uint32_t crc_check;   /* UCX_HPAM_CRC_CHECK */
    uint32_t max_procs;   /* UCX_HPAM_MAX_PROCS */
} uct_hpam_job_shape_t;

/* The registry file of a job (job: letters, digits, '.', '_', '-' only). */
void uct_hpam_registry_path(const char *job, char *path, size_t len);

/* Joins `job` with this shape: *index receives the claimed process index,
 * *key the job's protection key. Returns 0, or -1 with one line in err
 * naming the problem (a shape that differs from the live members', a full
 * job, a system call that failed). */
int uct_hpam_registry_join(const char *job, const uct_hpam_job_shape_t *shape, int *index,
                           uint64_t *key, char *err, size_t errlen);

/* The pid of the process that claimed `index` in `job`, or -1 (for error
 * messages: which process was lost). */
int uct_hpam_registry_pid(const char *job, int index);

/* Removes this user's registry files whose members are all gone (jobs that
 * were killed before their members could leave). Returns how many. */
int uct_hpam_registry_sweep(void);

/* Leaves `job` (index as joined). The last member to leave removes the file
 * and the names of the job's cards in /dev/shm (every member has left: no
 * card will be attached again), so nothing of an ended job is left. */
void uct_hpam_registry_leave(const char *job, int index);

/* The job name of the deposit cards (the memory domains' and interfaces')
 * of `job`: "<job>-dep". */
void uct_hpam_dep_job(const char *job, char *out, size_t len);
