# tests/hamlyn: (empty so far)
