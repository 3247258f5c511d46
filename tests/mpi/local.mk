# tests/mpi: (empty so far)
