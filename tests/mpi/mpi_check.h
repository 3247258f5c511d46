/* Shared by the MPI test programs: fail loudly, with the rank, and abort the
 * job so mpirun exits non-zero; deterministic byte patterns; time and resident memory. */
#ifndef HPAM_MPI_CHECK_H
#define HPAM_MPI_CHECK_H

#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
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

#endif
