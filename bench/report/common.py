"""What the report package's modules share: reading the CSVs,
formatting numbers, Markdown tables, and per-run figures with their ratio
to vader.

A ratio to vader divides figures measured at the same cache-line floor.
On the machine the benchmarks run on, how fast a cache line moves between
the two vCPUs changes by up to 4x from one minute to the next, with where
the host runs them (bench/line_floor.hpp), and every small-message figure
moves with it. bench/run probes the floor before and after each run of
each benchmark (floors.csv); a ratio is the median over the pairs of runs,
vader's and hpam's, whose floors agree within FLOOR_MATCH, and only when
no pair does, over the pairs of runs made one right after the other.
"""
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


FLOOR_MATCH = 1.5  # two floors within this factor are the same level (the levels seen: ~55, 110-145, 420-520 ns)


def same_floor(a, b):
    return bool(a and b and max(a, b) <= FLOOR_MATCH * min(a, b))


class Runs:
    """Per-run figures of one kind: {transport: {key: {run: value}}}, each
    with the cache-line floor of its run when it held still (floors.csv)."""

    def __init__(self):
        self.d = {}
        self.floor = {}  # {(transport, key, run): ns}

    def add(self, t, key, run, value, floor=None):
        self.d.setdefault(t, {}).setdefault(key, {})[run] = float(value)
        if floor:
            self.floor[(t, key, run)] = floor

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

    def pairs(self, t, key, base=BASE):
        """([(t's run, base's run)], matched): the pairs measured at the same
        floor, from any runs; without one, the same runs (matched False)."""
        a, b = self.d.get(t, {}).get(key, {}), self.d.get(base, {}).get(key, {})
        m = [(i, j) for i in a for j in b
             if b[j] and same_floor(self.floor.get((t, key, i)), self.floor.get((base, key, j)))]
        return (m, True) if m else ([(r, r) for r in a if b.get(r)], False)

    def detail(self, t, key, base=BASE):
        """(ratio, t's value, base's value, floor ns or None): the median of
        the ratios over pairs(), the medians of the figures that took part,
        and their median floor when the pairs matched floors."""
        p, matched = self.pairs(t, key, base)
        if not p:
            return None, None, None, None
        a, b = self.d[t][key], self.d[base][key]
        ia, jb = sorted({i for i, _ in p}), sorted({j for _, j in p})
        return (statistics.median(a[i] / b[j] for i, j in p),
                statistics.median(a[i] for i in ia), statistics.median(b[j] for j in jb),
                statistics.median(self.floor[(t, key, i)] for i in ia) if matched else None)

    def ratio(self, t, key, base=BASE):
        return self.detail(t, key, base)[0]

    def worst(self, t, keys, higher_is_better, base=BASE):
        """(ratio, key) of the key whose ratio is worst, or (None, None)."""
        q = [(self.ratio(t, k, base), k) for k in keys]
        q = [x for x in q if x[0] is not None]
        if not q:
            return None, None
        return min(q) if higher_is_better else max(q)

    def ratio_cells(self, ts, key, base=BASE):
        return [fmt(self.ratio(t, key, base)) for t in ts]


def replace_section(results_md, lines, begin, end, before=None):
    """Writes `lines` (a section starting with the marker `begin` and ending
    with `end`) into RESULTS_MD in place of the section between those
    markers, or else just before the marker `before`, or else at the end;
    every other section stays as it is."""
    text = open(results_md).read() if os.path.exists(results_md) else ""
    new = "\n".join(lines) + "\n"
    if begin in text and end in text:
        text = text[:text.index(begin)] + new + text[text.index(end) + len(end) + 1:]
    elif before and before in text:
        at = text.index(before)
        text = text[:at] + new + "\n" + text[at:]
    else:
        text = text.rstrip("\n") + "\n\n" + new
    with open(results_md, "w") as f:
        f.write(text)
