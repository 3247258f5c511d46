#!/usr/bin/env bash
# bench/apps/components at small size: vader, hpam (medusa, hamlyn), hpam with
# faults, at 2 and 4 ranks; and --break 1 must be caught by its check.
. "$(dirname "$0")/app_matrix.sh"
app_matrix components --n 512 --edges 512
finish
