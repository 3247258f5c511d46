/* The protocol counters are MPI_T performance variables: every btl_hpam_*
 * variable can be found and read, and across 100 sends the handles of
 * btl_hpam_requests_sent / btl_hpam_replies_received (counters count from
 * handle allocation) advance by at least 100 on the sender. Then a burst of
 * more nonblocking sends than D while the receiver sleeps: the sends beyond
 * D are refused for now (btl_hpam_sendi_refused advances: sendi returns
 * OPAL_ERR_OUT_OF_RESOURCE and Open MPI keeps the message) and every byte
 * arrives.
 * Last, a message that fits one packet goes eager. */
#include <string.h>
#include <unistd.h>

#include "mpi_check.h"

enum { max_vars = 64, burst_len = 200, burst_bytes = 100 };

static unsigned long read_named(MPI_T_pvar_session session, MPI_T_pvar_handle *handles,
                                char (*names)[64], int found, const char *name)
{
    unsigned long v = 0;
    for (int k = 0; k < found; ++k)
        if (!strcmp(names[k], name)) CHECK(MPI_T_pvar_read(session, handles[k], &v) == MPI_SUCCESS, "read %s", name);
    return v;
}

/* A message that fits one packet (8000 bytes and ob1's header in an 8192-byte
 * block) goes eager: its receiver sends nothing back (a rendezvous would
 * have it send at least ob1's FIN); the bytes arrive. Returns rank 1's
 * requests sent while receiving it. */
static unsigned long eager_fit(int rank, MPI_T_pvar_session session, MPI_T_pvar_handle *handles,
                               char (*names)[64], int found)
{
    static unsigned char m[8000];
    MPI_Barrier(MPI_COMM_WORLD);
    const unsigned long before = read_named(session, handles, names, found, "btl_hpam_requests_sent");
    if (rank == 0) {
        for (size_t b = 0; b < sizeof m; ++b) m[b] = (unsigned char) (b * 13 + 5);
        MPI_Send(m, sizeof m, MPI_BYTE, 1, 8, MPI_COMM_WORLD);
    } else if (rank == 1) {
        MPI_Recv(m, sizeof m, MPI_BYTE, 0, 8, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        for (size_t b = 0; b < sizeof m; ++b) CHECK(m[b] == (unsigned char) (b * 13 + 5), "byte %zu", b);
    }
    const unsigned long sent = read_named(session, handles, names, found, "btl_hpam_requests_sent") - before;
    MPI_Barrier(MPI_COMM_WORLD);
    return sent;
}

/* Rank 0 sends burst_len messages at once to rank 1, which starts receiving
 * only 100 ms later; returns how many of rank 0's immediate sends were refused. */
static unsigned long burst(int rank, MPI_T_pvar_session session, MPI_T_pvar_handle *handles,
                           char (*names)[64], int found)
{
    static unsigned char msgs[burst_len][burst_bytes];
    MPI_Request rq[burst_len];
    const unsigned long before = read_named(session, handles, names, found, "btl_hpam_sendi_refused");
    if (rank == 1) usleep(100000);
    for (int i = 0; i < burst_len; ++i) {
        if (rank == 0) {
            for (int b = 0; b < burst_bytes; ++b) msgs[i][b] = (unsigned char) (i * 7 + b);
            MPI_Isend(msgs[i], burst_bytes, MPI_BYTE, 1, 9, MPI_COMM_WORLD, &rq[i]);
        } else if (rank == 1) {
            MPI_Irecv(msgs[i], burst_bytes, MPI_BYTE, 0, 9, MPI_COMM_WORLD, &rq[i]);
        }
    }
    if (rank < 2) MPI_Waitall(burst_len, rq, MPI_STATUSES_IGNORE);
    for (int i = 0; rank == 1 && i < burst_len; ++i)
        for (int b = 0; b < burst_bytes; ++b)
            CHECK(msgs[i][b] == (unsigned char) (i * 7 + b), "burst message %d byte %d", i, b);
    MPI_Barrier(MPI_COMM_WORLD);
    return read_named(session, handles, names, found, "btl_hpam_sendi_refused") - before;
}

int main(int argc, char **argv)
{
    int provided, rank, size;
    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int num;
    MPI_T_pvar_get_num(&num);
    MPI_T_pvar_session session;
    MPI_T_pvar_session_create(&session);
    MPI_T_pvar_handle handles[max_vars];
    char names[max_vars][64];
    int found = 0;
    for (int i = 0; i < num && found < max_vars; ++i) {
        char name[256], desc[256];
        int nlen = sizeof name, dlen = sizeof desc, verb, var_class, bind, readonly, continuous, atomic;
        MPI_Datatype dt;
        MPI_T_enum en;
        MPI_T_pvar_get_info(i, name, &nlen, &verb, &var_class, &dt, &en, desc, &dlen, &bind,
                            &readonly, &continuous, &atomic);
        if (strncmp(name, "btl_hpam_", 9) != 0) continue;
        const int level = !strcmp(name, "btl_hpam_slots_in_use") ||
                          !strcmp(name, "btl_hpam_timeout_us"); /* levels, the rest counters */
        CHECK((level ? MPI_T_PVAR_CLASS_LEVEL : MPI_T_PVAR_CLASS_COUNTER) == var_class && readonly &&
                  continuous, "%s kind", name);
        int count;
        CHECK(MPI_T_pvar_handle_alloc(session, i, NULL, &handles[found], &count) == MPI_SUCCESS, "%s", name);
        memcpy(names[found], name, sizeof names[found] - 1);
        names[found][sizeof names[found] - 1] = 0;
        ++found;
    }
    CHECK(found >= 20, "only %d btl_hpam_* performance variables", found);
    char buf[1000] = {0};
    for (int i = 0; i < 100; ++i) {
        if (rank == 0) MPI_Send(buf, sizeof buf, MPI_BYTE, 1, 0, MPI_COMM_WORLD);
        if (rank == 1) MPI_Recv(buf, sizeof buf, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    /* Acknowledgements come back asynchronously: poll (through barriers) until
     * they have, a bounded number of times. */
    unsigned long sent = 0, replies = 0;
    for (int round = 0, done = 0; !done && round < 1000; ++round) {
        MPI_Barrier(MPI_COMM_WORLD);
        for (int k = 0; k < found; ++k) {
            unsigned long v = 0;
            CHECK(MPI_T_pvar_read(session, handles[k], &v) == MPI_SUCCESS, "read %s", names[k]);
            if (!strcmp(names[k], "btl_hpam_requests_sent")) sent = v;
            if (!strcmp(names[k], "btl_hpam_replies_received")) replies = v;
        }
        done = rank != 0 || (sent >= 100 && replies >= 100);
        MPI_Bcast(&done, 1, MPI_INT, 0, MPI_COMM_WORLD);
    }
    if (rank == 0) CHECK(sent >= 100 && replies >= 100, "requests_sent %lu, replies_received %lu", sent, replies);
    unsigned long refused = burst(rank, session, handles, names, found);
    const unsigned long answered = eager_fit(rank, session, handles, names, found);
    if (rank == 1) CHECK(answered == 0, "a message that fits a packet went by rendezvous (%lu sent back)", answered);
    for (int k = 0; k < found; ++k) MPI_T_pvar_handle_free(session, &handles[k]);
    if (rank == 0) CHECK(refused > 0, "no immediate send of a burst beyond D was refused");
    MPI_T_pvar_session_free(&session);
    if (rank == 0) printf("mpi_pvars: ok, %d variables, requests_sent %lu\n", found, sent);
    /* MPI_T_finalize before MPI_Finalize: Debian's Open MPI 4.1.4 crashes in
     * MPI_T_finalize after MPI_Finalize with any BTL (vader included). */
    MPI_T_finalize();
    MPI_Finalize();
    return 0;
}
