# tests/uct: the UCX transport (filled below)
