"""bench/RESULTS.md from the CSVs bench/run writes into a results directory.

Run as files (each puts bench/ on the path and imports this package):
    bench/report/results.py OUT RESULTS.md RUNS [quick]   the whole report (bench/run)
    bench/report/loss.py DIR [RESULTS.md]                 the under-loss section
    bench/report/apps.py OUT RESULTS.md                   the applications and GAM sections
    bench/report/hamlyn_lib.py OUT RESULTS.md             the Hamlyn library's section
    bench/report/ucx.py OUT RESULTS.md                    the UCX transport's section
    bench/report/osc.py OUT [RESULTS.md]                  the OSU-style one-sided section
    bench/report/compare_runs.py DIR1 DIR2 [...]          the goals of several runs side by side
common (CSV reading, tables, ratios at the same cache-line floor), data (the
figures of one run) and goals (the issue-11 sections) are what they share."""
