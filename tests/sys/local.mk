# tests/sys: (empty so far)
