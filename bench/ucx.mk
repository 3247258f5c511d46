# bench: ucx_perftest over the UCX transport beside posix, sysv and cma
# (a step of bench/run; its section of RESULTS.md comes from bench/report/ucx.py).
dist_noinst_SCRIPTS += bench/ucx_perftest.sh
