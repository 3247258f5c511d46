# tests/nic: (empty so far)
