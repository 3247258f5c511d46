"""The applications part of bench/RESULTS.md: the Split-C applications
(bench/apps) per transport with ratios to vader, radix sort in HP-LAM's
Table 4.3 layout beside the paper's rows, each application's phases and
library operation counts, and the GAM basic benchmarks and torture tests
(tests/gam) beside HP-LAM section 4.1. Reads what bench/run wrote into the
results directory (apps.csv, apps4.csv, apps4p.csv, apps_stats.csv, apps_config.csv, gam.csv) and
writes the data files bench/apps_plots.gp draws. Medians across runs."""
import csv
import os
import platform
import statistics
import subprocess
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
if __name__ == "__main__":  # run as a file: the report package is in bench/
    sys.path[0] = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
from report.common import replace_section  # noqa: E402

TRANSPORTS = ["vader", "vader-pt2pt", "tcp", "hpam-medusa", "hpam-hamlyn"]
APPS = ["radix_sort", "sample_sort", "em3d", "matmul", "components"]
PAPER_43 = {"pass1_fill": (0.14, 0.56, 0.13), "pass1_wave_scan": (1.04, 0.88, 0.95),
            "pass1_coalesce": (9.84, 8.99, 7.78), "pass2_fill": (0.12, 0.25, 0.09),
            "pass2_wave_scan": (1.03, 0.80, 0.93), "pass2_coalesce": (0.65, 1.18, 0.27),
            "total": (12.82, 12.66, 10.14)}


def _rows(path):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [r for r in csv.reader(f) if r]


def _fmt(x, d=3):
    return "n/a" if x is None else f"{x:.{d}f}"


def _medians(path, key_cols, value_col):
    acc = {}
    for r in _rows(path)[1:]:
        acc.setdefault(tuple(r[i] for i in key_cols), []).append(float(r[value_col]))
    return {k: statistics.median(v) for k, v in acc.items()}


def _phases(times, app):
    """Phases of app in the order first seen, sub-phases (with a dot) last."""
    seen = []
    for (a, _, p) in times:
        if a == app and p not in seen and p != "total":
            seen.append(p)
    return [p for p in seen if "." not in p] + [p for p in seen if "." in p]


def _time_table(L, times, out, dat_name="apps_time.dat"):
    present = [t for t in TRANSPORTS if any(k[1] == t for k in times)]
    L.append("| application | " + " | ".join(present) + " | " +
             " | ".join(f"{t}/vader" for t in present if t != "vader") + " |")
    L.append("|---" * (1 + 2 * len(present) - 1) + "|")
    with open(os.path.join(out, dat_name), "w") as dat:
        dat.write("app " + " ".join(present) + "\n")
        for app in APPS:
            v = [times.get((app, t, "total")) for t in present]
            if not any(v):
                continue
            base = times.get((app, "vader", "total"))
            ratios = [_fmt(x / base, 2) if x and base else "n/a" for t, x in zip(present, v) if t != "vader"]
            L.append(f"| {app} | " + " | ".join(_fmt(x) for x in v) + " | " + " | ".join(ratios) + " |")
            dat.write(app + " " + " ".join(str(x) if x else "nan" for x in v) + "\n")
    return present


def _radix_table(L, times, present, out):
    rows = ["pass1_fill", "pass1_wave_scan", "pass1_coalesce", "pass2_fill", "pass2_wave_scan",
            "pass2_coalesce", "total"]
    names = {"fill": "Fill", "wave_scan": "Wave-scan", "coalesce": "Coalesce"}
    L.append("| | | " + " | ".join(present) + " | HP-LAM | Sun-LAM SS-20 | Sun-LAM Ultra-1 |")
    L.append("|---|---" + "|---" * (len(present) + 3) + "|")
    for r in rows:
        if r == "total":
            label = ("TOTAL (sec)", "")
        else:
            p, ph = r.split("_", 1)
            label = (f"Pass {p[-1]}" if ph == "fill" else "", f"{names[ph]} (sec)")
        v = [times.get(("radix_sort", t, r)) for t in present]
        L.append(f"| {label[0]} | {label[1]} | " + " | ".join(_fmt(x) for x in v) + " | " +
                 " | ".join(f"{x:.2f}" for x in PAPER_43[r]) + " |")
    with open(os.path.join(out, "radix_phases.dat"), "w") as dat:
        dat.write("transport " + " ".join(rows[:-1]) + "\n")
        for t in present:
            dat.write(t + " " + " ".join(str(times.get(("radix_sort", t, r)) or 0) for r in rows[:-1]) + "\n")


def _phase_tables(L, times, present):
    L.append("| application | phase | " + " | ".join(present) + " |")
    L.append("|---|---" + "|---" * len(present) + "|")
    for app in APPS:
        if app == "radix_sort":
            continue
        for p in _phases(times, app):
            L.append(f"| {app} | {p} | " + " | ".join(_fmt(times.get((app, t, p))) for t in present) + " |")


OTHERS = ["vader", "vader-pt2pt", "tcp"]
HPAM = ["hpam-medusa", "hpam-hamlyn"]


def _best_table(L, times):
    """Issue 23's comparison: per application and phase, the best of the
    other transports (vader with osc/rdma, vader with osc/pt2pt, tcp) and
    hpam over it."""
    hp = [t for t in HPAM if any(k[1] == t for k in times)]
    L.append("| application | phase | best other | ms | " + " | ".join(f"{t} ms" for t in hp) + " | " +
             " | ".join(f"{t} ÷ best" for t in hp) + " |")
    L.append("|---|---|---|---" + "|---" * (2 * len(hp)) + "|")
    for app in APPS:
        for p in ["total"] + _phases(times, app):
            other = [(times[(app, t, p)], t) for t in OTHERS if times.get((app, t, p))]
            if not other:
                continue
            best, who = min(other)
            v = [times.get((app, t, p)) for t in hp]
            ms = lambda x: _fmt(x * 1e3 if x else None, 3)
            L.append(f"| {app} | {p} | {who} | {ms(best)} | " + " | ".join(ms(x) for x in v) + " | " +
                     " | ".join(_fmt(x / best, 2) if x else "n/a" for x in v) + " |")


def _stats_table(L, out):
    stats = _medians(os.path.join(out, "apps_stats.csv"), (0, 1, 3), 4)
    if not stats:
        return
    cols = ["stores", "puts", "gets", "reads", "atomics", "flushes", "notifications", "sync_polls"]
    L.append("Library operations per run (splitc_get_stats summed over both processes, "
             "hpam-medusa; the same program issues the same operations over every transport, "
             "except the polls of waits):\n")
    L.append("| application | " + " | ".join(cols) + " |")
    L.append("|---" * (len(cols) + 1) + "|")
    for app in APPS:
        if (app, "hpam-medusa", "stores") in stats:
            L.append(f"| {app} | " + " | ".join(f"{stats.get((app, 'hpam-medusa', c), 0):.0f}" for c in cols) + " |")
    L.append("")


def _gam_tables(L, out):
    rows = _rows(os.path.join(out, "gam.csv"))
    if not rows:
        return
    rtt, bulk, thru, torture = {}, {}, {}, []
    for r in rows:
        if r[0] == "ping_pong":
            rtt.setdefault(r[1], []).append(float(r[3]))
        elif r[0] in ("ping_bulk", "thru_bulk"):
            (bulk if r[0] == "ping_bulk" else thru).setdefault(r[1], {}).setdefault(int(r[2]), []).append(float(r[3]))
        elif r[0] in ("test_xfer", "test_med"):
            torture.append(r)
    nics = sorted(set(rtt) | set(bulk))
    best = lambda d, n: max((statistics.median(v) for v in d.get(n, {}).values()), default=None)
    L.append("## GAM basic benchmarks and torture tests (HP-LAM section 4.1), native API\n")
    L.append("`tests/gam/` over `hpam_am.h`, two forked processes (torture tests: four), "
             "every transfer checked; bandwidth is the best over the sizes measured (one packet "
             "each, up to the block's payload).\n")
    L.append("| | " + " | ".join(f"hpam {n}" for n in nics) + " | HP-LAM 1996 |")
    L.append("|---" * (len(nics) + 2) + "|")
    L.append("| ping_pong round trip (µs) | " +
             " | ".join(_fmt(statistics.median(rtt[n]) if n in rtt else None) for n in nics) + " | 28.1 |")
    L.append("| ping_bulk bandwidth (MB/s) | " + " | ".join(_fmt(best(bulk, n), 0) for n in nics) + " | 24.0 |")
    L.append("| thru_bulk bandwidth (MB/s) | " + " | ".join(_fmt(best(thru, n), 0) for n in nics) + " | 24.0 |\n")
    sizes = sorted({s for d in (bulk, thru) for n in d for s in d[n]})
    if sizes:
        L.append("| bytes | " + " | ".join(f"ping_bulk {n} | thru_bulk {n}" for n in nics) + " |")
        L.append("|---" * (1 + 2 * len(nics)) + "|")
        for s in sizes:
            cells = []
            for n in nics:
                for d in (bulk, thru):
                    v = d.get(n, {}).get(s)
                    cells.append(_fmt(statistics.median(v), 0) if v else "n/a")
            L.append(f"| {s} | " + " | ".join(cells) + " |")
        L.append("")
    if torture:
        L.append("| torture test | card | pattern | processes | seconds | result |")
        L.append("|---|---|---|---|---|---|")
        for r in torture:
            L.append(f"| {r[0]} | {r[1]} | {r[2]} | {r[4]} | {r[6]} | {r[7]} |")
        L.append("")


def _machine():
    def sh(cmd):
        return subprocess.run(cmd, shell=True, capture_output=True, text=True).stdout.strip()
    cpu = sh("lscpu | sed -n 's/^Model name: *//p'")
    hyper = sh("lscpu | sed -n 's/^Hypervisor vendor: *//p'") or "no hypervisor"
    return f"{cpu}, {os.cpu_count()} cores ({hyper}), kernel {platform.release()}"


FIRST = "## Split-C applications on MPI (HP-LAM section 4.3)"
BEGIN, END = "<!-- splitc apps: begin -->", "<!-- splitc apps: end -->"


def section(out):
    """The lines of the applications and GAM sections (empty without data)."""
    times = _medians(os.path.join(out, "apps.csv"), (0, 1, 3), 4)
    L = []
    if times:
        config = {r[0]: r[1] for r in _rows(os.path.join(out, "apps_config.csv"))[1:]}
        L.append(FIRST + "\n")
        stamp = os.path.getmtime(os.path.join(out, "apps.csv"))
        L.append(f"Measured {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime(stamp))} on {_machine()} "
                 "(this and the GAM section may come from a later run than the sections above: "
                 "`bench/run --apps-only`).\n")
        L.append("bench/apps over `libhpam_splitc` (MPI-3 RMA on one `MPI_Win_create` window per "
                 "process), two processes, medians of the runs; every run checked its own answer. "
                 "One-sided component: hpam and vader use osc/rdma (MPI RMA on the BTL's put, get "
                 "and atomics), except `components` on vader, which needs osc/pt2pt because Debian's "
                 "Open MPI 4.1.4 crashes in MPI_Compare_and_swap under osc/rdma over vader; "
                 "vader-pt2pt and tcp use osc/pt2pt (RMA as messages over ob1 and the BTL). "
                 "Plots: results/apps_time.png, results/radix_phases.png.\n")
        if config:
            L.append("Sizes: " + "; ".join(f"`{a} {config[a]}`" for a in APPS if a in config) + ".\n")
        L.append("Time per application (s; the sum of its phases, each between barriers):\n")
        present = _time_table(L, times, out)
        times4 = _medians(os.path.join(out, "apps4.csv"), (0, 1, 3), 4)
        if times4:
            runs4 = len({row[2] for row in _rows(os.path.join(out, "apps4.csv"))[1:]})
            L.append(f"\nAt four processes (s; median of {runs4} run(s), `--oversubscribe` "
                     f"on the machine's {os.cpu_count()} cores; tcp is left out of `--quick`):\n")
            _time_table(L, times4, out, "apps_time4.dat")
        times4p = _medians(os.path.join(out, "apps4p.csv"), (0, 1, 3), 4)
        if times4p:
            L.append("\nAt four processes pinned two per core (s; rank i on core i mod 2, the same "
                     "placement for every transport; unbound, a run's time follows where the "
                     "scheduler puts the ranks, three on one core for most of a run being up to "
                     "twice as slow on every transport, so three runs' median above can compare "
                     "different placements: docs/decisions.md, h31a):\n")
            _time_table(L, times4p, out, "apps_time4p.dat")
        L.append("\nhpam against the best other transport a user could pick on this node (issue 23's "
                 "goal: ≤ 1.0), per application and phase: the fastest of vader + osc/rdma (vader + "
                 "osc/pt2pt for `components`), vader + osc/pt2pt and tcp, medians of the runs; tcp "
                 "runs em3d and components once (its blocking remote reads cost about a millisecond "
                 "each: 8-13x vader there), the others as often as every transport; times in "
                 "milliseconds (phases below a millisecond are measured once a run, between "
                 "barriers: their ratios are noisy). Two processes:\n")
        _best_table(L, times)
        if times4:
            L.append("\nFour processes (unbound):\n")
            _best_table(L, times4)
        if times4p:
            L.append("\nFour processes pinned two per core:\n")
            _best_table(L, times4p)
        L.append("\nRadix sort in Table 4.3's layout (s), beside the paper's rows (their key count "
                 "is not given; HP-LAM ran on HP 9000/J200s over Myrinet):\n")
        _radix_table(L, times, present, out)
        L.append("\nThe other applications' phases (s); `multiply.get_max` and `multiply.compute_max` "
                 "are the slowest process's time issuing and waiting for gets and in block "
                 "products, inside `multiply`:\n")
        _phase_tables(L, times, present)
        L.append("")
        _stats_table(L, out)
    _gam_tables(L, out)
    return [BEGIN] + L + [END] if L else L


if __name__ == "__main__":
    # bench/report/apps.py OUT RESULTS_MD: replaces the applications and GAM
    # sections of RESULTS_MD (between their markers), or appends them,
    # leaving every other section as it is.
    replace_section(sys.argv[2], section(sys.argv[1]), BEGIN, END)
