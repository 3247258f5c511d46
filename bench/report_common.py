"""What bench/report.py and bench/report_goals.py share: reading the CSVs,
formatting numbers, Markdown tables, and per-run figures with their ratio
to vader.

A ratio to vader is taken within each run and then the median over the
runs: bench/run measures vader and hpam one right after the other in every
run, so each ratio divides figures measured within seconds of each other.
This matters on the machine the benchmarks run on: how fast a cache line
moves between its two vCPUs changes by up to 4x from one second to the
next, with where the host runs them (bench/line_floor.hpp)."""
import csv
import glob
import os
import re
import statistics

BASE = "vader"
HPAM = ["hpam-medusa", "hpam-hamlyn"]


def rows(path):
    """The CSV's rows (header included), [] when the file is missing."""
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [r for r in csv.reader(f) if r]


def per_run_files(out, prefix, t):
    """{run: path} of OUT/PREFIX_T_RUN.csv"""
    pat = re.compile(re.escape(f"{prefix}_{t}_") + r"(\d+)\.csv$")
    found = {}
    for p in glob.glob(os.path.join(out, f"{prefix}_{t}_*.csv")):
        m = pat.search(os.path.basename(p))
        if m:
            found[int(m.group(1))] = p
    return found


def fmt(x, d=2):
    return "n/a" if x is None else f"{x:.{d}f}"


def table(header, body):
    """Markdown table lines: header cells, then one list of cells per row."""
    return (["| " + " | ".join(header) + " |", "|" + "---|" * len(header)] +
            ["| " + " | ".join(str(c) for c in r) + " |" for r in body])


class Runs:
    """Per-run figures of one kind: {transport: {key: {run: value}}}."""

    def __init__(self):
        self.d = {}

    def add(self, t, key, run, value):
        self.d.setdefault(t, {}).setdefault(key, {})[run] = float(value)

    def __bool__(self):
        return bool(self.d)

    def transports(self):
        return list(self.d)

    def keys(self, t=None):
        ts = [t] if t else self.d
        return sorted({k for x in ts for k in self.d.get(x, {})})

    def value(self, t, key):
        """The median over the runs, None when not measured."""
        v = self.d.get(t, {}).get(key)
        return statistics.median(v.values()) if v else None

    def ratio(self, t, key, base=BASE):
        """The median over the runs of t's figure over base's in the same run."""
        a, b = self.d.get(t, {}).get(key, {}), self.d.get(base, {}).get(key, {})
        q = [a[r] / b[r] for r in a if r in b and b[r]]
        return statistics.median(q) if q else None

    def worst(self, t, keys, higher_is_better, base=BASE):
        """(ratio, key) of the key whose ratio is worst, or (None, None)."""
        q = [(self.ratio(t, k, base), k) for k in keys]
        q = [x for x in q if x[0] is not None]
        if not q:
            return None, None
        return min(q) if higher_is_better else max(q)

    def ratio_cells(self, ts, key, base=BASE):
        return [fmt(self.ratio(t, key, base)) for t in ts]
