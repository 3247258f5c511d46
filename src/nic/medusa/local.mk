# src/nic/medusa: (empty so far)
