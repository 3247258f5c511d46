/*
 * The job registry (see uct_hpam_registry.h): one small file per user and job
 * in /dev/shm, read and written whole with pread/pwrite under flock.
 */
#include "uct_hpam_registry.h"

#include "hpam_am.h"

#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#define REGISTRY_MAGIC 0x5258435541504855ull /* "UHPAUCXR" */
#define REGISTRY_VERSION 1u
#define REGISTRY_OPEN_ATTEMPTS 100

enum member_state { MEMBER_FREE = 0, MEMBER_LIVE = 1, MEMBER_LEFT = 2 };

typedef struct registry_member {
    int32_t pid;    /* the process that claimed this index */
    uint32_t state; /* enum member_state */
} registry_member_t;

typedef struct registry {
    uint64_t magic;             /* REGISTRY_MAGIC once initialised */
    uint32_t version;           /* REGISTRY_VERSION */
    uint32_t size;              /* sizeof(registry_t) */
    uint64_t key;               /* the job's protection key, never 0 */
    uct_hpam_job_shape_t shape; /* fixed by the first member */
    uint32_t next_index;        /* next index to hand out */
    int32_t creator_pid;        /* first member */
    registry_member_t members[UCT_HPAM_REGISTRY_MAX_PROCS];
} registry_t;

static_assert(sizeof(registry_member_t) == 8, "registry member layout");
static_assert(sizeof(uct_hpam_job_shape_t) == 24, "job shape layout");
static_assert(sizeof(registry_t) == 56 + 8 * UCT_HPAM_REGISTRY_MAX_PROCS, "registry layout");

void uct_hpam_registry_path(const char *job, char *path, size_t len)
{
    snprintf(path, len, "/dev/shm/hpamucx-%u-%s.registry", (unsigned)getuid(), job);
}

static int process_alive(int32_t pid) { return pid > 0 && (kill(pid, 0) == 0 || errno == EPERM); }

/* Opens and locks the registry file, making sure the locked file is the one
 * the path names (a last member may have removed it meanwhile). */
static int open_locked(const char *path, int create)
{
    for (int attempt = 0; attempt < REGISTRY_OPEN_ATTEMPTS; ++attempt) {
        int fd = open(path, O_RDWR | O_CLOEXEC | (create ? O_CREAT : 0), 0600);
        if (fd < 0) return -1;
        int rc;
        do {
            rc = flock(fd, LOCK_EX);
        } while (rc != 0 && errno == EINTR);
        struct stat by_fd, by_path;
        if (rc == 0 && fstat(fd, &by_fd) == 0 && stat(path, &by_path) == 0 &&
            by_fd.st_ino == by_path.st_ino && by_fd.st_dev == by_path.st_dev) {
            return fd;
        }
        close(fd); /* removed or replaced while we waited: try again */
    }
    errno = EAGAIN;
    return -1;
}

static int read_registry(int fd, registry_t *r)
{
    memset(r, 0, sizeof(*r));
    ssize_t n = pread(fd, r, sizeof(*r), 0);
    return n == (ssize_t)sizeof(*r) && r->magic == REGISTRY_MAGIC &&
           r->version == REGISTRY_VERSION && r->size == sizeof(*r) &&
           r->next_index <= UCT_HPAM_REGISTRY_MAX_PROCS && r->key != 0;
}

static int live_members(const registry_t *r)
{
    int live = 0;
    for (uint32_t i = 0; i < r->next_index; ++i) {
        live += r->members[i].state == MEMBER_LIVE && process_alive(r->members[i].pid);
    }
    return live;
}

static int fresh_registry(registry_t *r, const uct_hpam_job_shape_t *shape)
{
    memset(r, 0, sizeof(*r));
    r->magic = REGISTRY_MAGIC;
    r->version = REGISTRY_VERSION;
    r->size = sizeof(*r);
    r->shape = *shape;
    r->creator_pid = (int32_t)getpid();
    while (r->key == 0) {
        if (getrandom(&r->key, sizeof(r->key), 0) != (ssize_t)sizeof(r->key)) return -1;
    }
    return 0;
}

/* The first field in which `mine` differs from the job's shape, as text. */
static int shape_mismatch(const uct_hpam_job_shape_t *job, const uct_hpam_job_shape_t *mine,
                          int32_t creator, char *err, size_t errlen)
{
    static const char *const nic_names[] = {"medusa", "hamlyn"};
    const struct {
        const char *name;
        uint32_t theirs, ours;
    } fields[] = {
        {"UCX_HPAM_NIC", job->nic, mine->nic},
        {"UCX_HPAM_DEPTH", job->depth, mine->depth},
        {"UCX_HPAM_BLOCK_SIZE", job->block_size, mine->block_size},
        {"UCX_HPAM_PACKET_SIZE", job->packet_size, mine->packet_size},
        {"UCX_HPAM_CRC_CHECK", job->crc_check, mine->crc_check},
        {"UCX_HPAM_MAX_PROCS", job->max_procs, mine->max_procs},
    };
    for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); ++i) {
        if (fields[i].theirs == fields[i].ours) continue;
        char theirs[24], ours[24];
        if (i == 0) {
            snprintf(theirs, sizeof theirs, "%s", nic_names[fields[i].theirs & 1]);
            snprintf(ours, sizeof ours, "%s", nic_names[fields[i].ours & 1]);
        } else {
            snprintf(theirs, sizeof theirs, "%u", fields[i].theirs);
            snprintf(ours, sizeof ours, "%u", fields[i].ours);
        }
        snprintf(err, errlen,
                 "%s=%s differs from %s=%s of the live processes of this job (first: pid %d): "
                 "every process of a job needs the same value (or set another UCX_HPAM_JOB)",
                 fields[i].name, ours, fields[i].name, theirs, (int)creator);
        return 1;
    }
    return 0;
}

int uct_hpam_registry_join(const char *job, const uct_hpam_job_shape_t *shape, int *index,
                           uint64_t *key, char *err, size_t errlen)
{
    char path[256];
    uct_hpam_registry_path(job, path, sizeof path);
    int fd = open_locked(path, 1);
    if (fd < 0) {
        snprintf(err, errlen, "cannot open the job registry %s: %s", path, strerror(errno));
        return -1;
    }
    registry_t *r = malloc(sizeof(*r)); /* 8 KiB: set-up only, not on the stack */
    int rc = -1;
    if (r == NULL) {
        snprintf(err, errlen, "out of memory reading the job registry %s", path);
        goto out;
    }
    if (!read_registry(fd, r) || live_members(r) == 0) {
        if (fresh_registry(r, shape) != 0) {
            snprintf(err, errlen, "cannot draw a protection key: %s", strerror(errno));
            goto out;
        }
    } else if (shape_mismatch(&r->shape, shape, r->creator_pid, err, errlen)) {
        goto out;
    }
    if (r->next_index >= r->shape.max_procs || r->next_index >= UCT_HPAM_REGISTRY_MAX_PROCS) {
        snprintf(err, errlen,
                 "job registry %s is full: all %u process indices (UCX_HPAM_MAX_PROCS) were "
                 "handed out and %d members are still alive; raise UCX_HPAM_MAX_PROCS in "
                 "every process or use another UCX_HPAM_JOB",
                 path, r->shape.max_procs, live_members(r));
        goto out;
    }
    const uint32_t i = r->next_index++;
    r->members[i].pid = (int32_t)getpid();
    r->members[i].state = MEMBER_LIVE;
    if (pwrite(fd, r, sizeof(*r), 0) != (ssize_t)sizeof(*r)) {
        snprintf(err, errlen, "cannot write the job registry %s: %s", path, strerror(errno));
        goto out;
    }
    *index = (int)i;
    *key = r->key;
    rc = 0;
out:
    close(fd); /* releases the lock */
    free(r);
    return rc;
}

/* The registry of `job`, locked (*fd) and read into a new buffer; NULL when
 * there is none or it is not well-formed (*fd then closed or -1). */
static registry_t *open_read(const char *job, char *path, size_t len, int *fd)
{
    uct_hpam_registry_path(job, path, len);
    *fd = open_locked(path, 0);
    if (*fd < 0) return NULL;
    registry_t *r = malloc(sizeof(*r));
    if (r != NULL && read_registry(*fd, r)) return r;
    free(r);
    close(*fd);
    *fd = -1;
    return NULL;
}

int uct_hpam_registry_pid(const char *job, int index)
{
    char path[256];
    int fd;
    registry_t *r = open_read(job, path, sizeof path, &fd);
    if (r == NULL) return -1;
    const int pid = index >= 0 && (uint32_t)index < r->next_index ? r->members[index].pid : -1;
    close(fd);
    free(r);
    return pid;
}

int uct_hpam_registry_sweep(void)
{
    char prefix[64];
    snprintf(prefix, sizeof prefix, "hpamucx-%u-", (unsigned)getuid());
    const size_t plen = strlen(prefix), slen = strlen(".registry");
    DIR *d = opendir("/dev/shm");
    if (d == NULL) return 0;
    int removed = 0;
    registry_t *r = malloc(sizeof(*r));
    for (struct dirent *e; r != NULL && (e = readdir(d)) != NULL;) {
        const size_t len = strlen(e->d_name);
        if (len <= plen + slen || strncmp(e->d_name, prefix, plen) != 0 ||
            strcmp(e->d_name + len - slen, ".registry") != 0) {
            continue;
        }
        char path[300];
        snprintf(path, sizeof path, "/dev/shm/%s", e->d_name);
        int fd = open_locked(path, 0);
        if (fd < 0) continue;
        if (read_registry(fd, r) && live_members(r) == 0 && unlink(path) == 0) ++removed;
        close(fd);
    }
    closedir(d);
    free(r);
    return removed;
}

void uct_hpam_dep_job(const char *job, char *out, size_t len) { snprintf(out, len, "%s-dep", job); }

/* The cards of every index the job handed out: AM cards under the job's
 * name, deposit cards under its deposit name. */
static void remove_card_names(const char *job, uint32_t nprocs)
{
    char dep_job[256];
    uct_hpam_dep_job(job, dep_job, sizeof dep_job);
    (void)hpam_remove_job_segments(job, (int)nprocs);
    (void)hpam_remove_job_segments(dep_job, (int)nprocs);
}

void uct_hpam_registry_leave(const char *job, int index)
{
    char path[256];
    int fd;
    registry_t *r = open_read(job, path, sizeof path, &fd);
    if (r == NULL) return;
    if (index >= 0 && (uint32_t)index < r->next_index &&
        r->members[index].pid == (int32_t)getpid()) {
        r->members[index].state = MEMBER_LEFT;
        if (live_members(r) == 0) {
            unlink(path); /* under the lock: a joiner waiting on it retries */
            remove_card_names(job, r->next_index);
        } else if (pwrite(fd, r, sizeof(*r), 0) != (ssize_t)sizeof(*r)) {
            /* the entry stays "live" until this process is gone: harmless */
        }
    }
    close(fd);
    free(r);
}
