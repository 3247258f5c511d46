# src/nic/hamlyn: (empty so far)
