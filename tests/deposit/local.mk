# tests/deposit: (empty so far)
