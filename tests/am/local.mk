# tests/am: (empty so far)
