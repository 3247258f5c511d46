/* Shared by the MPI test programs: fail loudly, with the rank, and abort the
 * job so mpirun exits non-zero; deterministic byte patterns; time and resident memory;
 * performance variables by name. */
#ifndef HPAM_MPI_CHECK_H
#define HPAM_MPI_CHECK_H

#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define CHECK(cond, ...)                                                          \
    do {                                                                          \
        if (!(cond)) {                                                            \
            int r_;                                                               \
            MPI_Comm_rank(MPI_COMM_WORLD, &r_);                                   \
            fprintf(stderr, "rank %d: %s:%d: check failed: %s: ", r_, __FILE__,   \
                    __LINE__, #cond);                                             \
            fprintf(stderr, __VA_ARGS__);                                         \
            fprintf(stderr, "\n");                                                \
            MPI_Abort(MPI_COMM_WORLD, 3);                                         \
        }                                                                         \
    } while (0)

static inline unsigned char pattern_byte(int src, int dst, int tag, size_t i)
{
    return (unsigned char) (src * 31 + dst * 17 + tag * 7 + i * 13 + (i >> 8) * 5 + 1);
}

static inline void fill_pattern(unsigned char *b, size_t n, int src, int dst, int tag)
{
    for (size_t i = 0; i < n; ++i) b[i] = pattern_byte(src, dst, tag, i);
}

/* Index of the first wrong byte, or n when all are right. */
static inline size_t check_pattern(const unsigned char *b, size_t n, int src, int dst, int tag)
{
    for (size_t i = 0; i < n; ++i)
        if (b[i] != pattern_byte(src, dst, tag, i)) return i;
    return n;
}

/* Seconds on CLOCK_MONOTONIC, which all ranks on the node share. */
static inline double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double) ts.tv_sec + 1e-9 * (double) ts.tv_nsec;
}

/* This process's resident memory in KiB, or -1. */
static inline long rss_kib(void)
{
    long pages = 0, resident = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (NULL == f) return -1;
    if (fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = -1;
    fclose(f);
    return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

/* A handle in `session` for the performance variable named `name`
 * (e.g. "btl_hpam_retransmissions"); 0 when there is none. */
static inline int open_pvar(MPI_T_pvar_session session, const char *name, MPI_T_pvar_handle *handle)
{
    int num;
    MPI_T_pvar_get_num(&num);
    for (int i = 0; i < num; ++i) {
        char n[256], desc[256];
        int nlen = sizeof n, dlen = sizeof desc, verb, cls, bind, ro, cont, atomic, count;
        MPI_Datatype dt;
        MPI_T_enum en;
        MPI_T_pvar_get_info(i, n, &nlen, &verb, &cls, &dt, &en, desc, &dlen, &bind, &ro, &cont, &atomic);
        if (0 == strcmp(n, name)) return MPI_SUCCESS == MPI_T_pvar_handle_alloc(session, i, NULL, handle, &count);
    }
    return 0;
}

#endif
