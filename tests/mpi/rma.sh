#!/usr/bin/env bash
# mpi_rma over btl/hpam at 2, 3 and 4 ranks on both NIC models, then again
# with faults injected (1% drop, 1% duplicate, 1% corrupt, 2% reorder).
. "$(dirname "$0")/common.sh"
matrix mpi_rma
finish
