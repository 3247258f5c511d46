#!/usr/bin/env bash
# bench/apps/matmul at small size: vader, hpam (medusa, hamlyn), hpam with
# faults, at 2 and 4 ranks; and --break 1 must be caught by its check.
. "$(dirname "$0")/app_matrix.sh"
app_matrix matmul --n 64 --block 16
finish
