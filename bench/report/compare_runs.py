#!/usr/bin/env python3
"""How far apart repeated runs of bench/run land: the ratio of every goal of
issue 11 in each results directory, side by side, with the spread (largest
over smallest, minus one).

    bench/report/compare_runs.py DIR1 DIR2 [DIR3 ...]      (e.g. two bench/run --out DIR)
"""
import os
import statistics
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
if __name__ == "__main__":  # run as a file: the report package is in bench/
    sys.path[0] = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
from report import data, goals  # noqa: E402
from report.common import HPAM, fmt, table  # noqa: E402


def main(dirs):
    figs = [data.load(d) for d in dirs]
    names = [os.path.basename(os.path.normpath(d)) for d in dirs]
    per_dir = [goals.goals(f) for f in figs]
    body = []
    for i, (name, _, _) in enumerate(per_dir[0]):
        for t in HPAM:
            got = [g[i][2](t) for g in per_dir]
            q = [g[1] if g else None for g in got]
            if all(x is None for x in q):
                continue
            known = [x for x in q if x]
            spread = max(known) / min(known) - 1 if len(known) > 1 else None
            body.append([name, t[5:]] + [fmt(x) for x in q] +
                        [f"{spread * 100:.0f}%" if spread is not None else "n/a"])
    body.append(["cache-line floor probes, median ns", ""] +
                [fmt(statistics.median(f.floor["probes"]), 0) if f.floor["probes"] else "n/a"
                 for f in figs] + [""])
    body.append(["load average, median", ""] +
                [fmt(statistics.median(f.floor["load"]), 1) if f.floor["load"] else "n/a"
                 for f in figs] + [""])
    print("\n".join(table(["figure", "card"] + names + ["spread"], body)))


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit("usage: bench/report/compare_runs.py DIR1 DIR2 [DIR3 ...]")
    main(sys.argv[1:])
