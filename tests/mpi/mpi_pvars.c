/* The protocol counters are MPI_T performance variables: after traffic,
 * btl_hpam_requests_sent and btl_hpam_replies_received are found, readable
 * and non-zero, and every btl_hpam_* variable can be read. */
#include <string.h>

#include "mpi_check.h"

int main(int argc, char **argv)
{
    int provided, rank, size;
    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    char buf[1000] = {0};
    for (int i = 0; i < 100; ++i) {
        if (rank == 0) MPI_Send(buf, sizeof buf, MPI_BYTE, 1, 0, MPI_COMM_WORLD);
        if (rank == 1) MPI_Recv(buf, sizeof buf, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    int num;
    MPI_T_pvar_get_num(&num);
    MPI_T_pvar_session session;
    MPI_T_pvar_session_create(&session);
    int found = 0;
    unsigned long sent = 0, replies = 0;
    for (int i = 0; i < num; ++i) {
        char name[256], desc[256];
        int nlen = sizeof name, dlen = sizeof desc, verb, var_class, bind, readonly, continuous, atomic;
        MPI_Datatype dt;
        MPI_T_enum en;
        MPI_T_pvar_get_info(i, name, &nlen, &verb, &var_class, &dt, &en, desc, &dlen, &bind,
                            &readonly, &continuous, &atomic);
        if (strncmp(name, "btl_hpam_", 9) != 0) continue;
        ++found;
        MPI_T_pvar_handle h;
        int count;
        CHECK(MPI_T_pvar_handle_alloc(session, i, NULL, &h, &count) == MPI_SUCCESS, "%s", name);
        unsigned long v = 0;
        CHECK(MPI_T_pvar_read(session, h, &v) == MPI_SUCCESS, "read %s", name);
        if (!strcmp(name, "btl_hpam_requests_sent")) sent = v;
        if (!strcmp(name, "btl_hpam_replies_received")) replies = v;
        MPI_T_pvar_handle_free(session, &h);
    }
    CHECK(found >= 20, "only %d btl_hpam_* performance variables", found);
    if (rank == 0) CHECK(sent >= 100 && replies >= 100, "requests_sent %lu, replies_received %lu", sent, replies);
    MPI_T_pvar_session_free(&session);
    if (rank == 0) printf("mpi_pvars: ok, %d variables, requests_sent %lu\n", found, sent);
    MPI_Finalize();
    MPI_T_finalize();
    return 0;
}
