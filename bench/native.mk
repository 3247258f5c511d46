# bench: (empty so far)
