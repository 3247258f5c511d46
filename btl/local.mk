# btl: (empty so far)
