# src/deposit: (empty so far)
