# bench/report: the Python package that writes bench/RESULTS.md (and the
# plots' data files) from a results directory; bench/run calls results.py,
# and loss.py, apps.py, hamlyn_lib.py for its --*-only steps. Each script
# runs on its own (see __init__.py); none is installed.
dist_noinst_SCRIPTS += bench/report/results.py bench/report/compare_runs.py bench/report/loss.py \
  bench/report/ucx.py bench/report/osc.py
EXTRA_DIST += bench/report/__init__.py bench/report/common.py bench/report/data.py \
  bench/report/goals.py bench/report/apps.py bench/report/hamlyn_lib.py
