#!/usr/bin/env python3
"""The OSU-style one-sided section of RESULTS.md (issue 23's goal: osu_put_latency,
osu_get_latency, osu_put_bw, osu_acc_latency, osu_fop_latency and osu_cas_latency
with -w create and -w allocate over hpam <= 1.2x vader in the same run), from
bench/run's osc-OSC_TRANSPORT_RUN.csv files (bench/mpi_osc).

  python3 bench/report/osc.py DIR               prints the section
  python3 bench/report/osc.py DIR RESULTS.md    replaces it there (or adds it)
"""
import glob
import os
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
if __name__ == "__main__":  # run as a file: the report package is in bench/
    sys.path[0] = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
from report.common import BASE, HPAM, Runs, fmt, per_run_files, replace_section, rows, table  # noqa: E402
from report.data import floors_of  # noqa: E402

HEADING = "## OSU-style one-sided tests (bench/mpi_osc)"
END = "<!-- end of the OSU-style one-sided section (bench/report/osc.py) -->"
OSCS = ["rdma", "pt2pt"]
WINDOWS = ["create", "allocate"]
TESTS = ["put_latency", "get_latency", "put_bw", "acc_latency", "fop_latency", "cas_latency"]
GOAL = 1.2


def load(out):
    """Runs keyed (test, window, bytes), one transport per "TRANSPORT/OSC"."""
    floors, runs = floors_of(out), Runs()
    for osc in OSCS:
        for t in [BASE] + HPAM:
            for r, p in per_run_files(out, f"osc-{osc}", t).items():
                for row in rows(p)[1:]:
                    if len(row) == 4 and row[3]:
                        runs.add(f"{t}/{osc}", (row[0], row[1], int(row[2])), r, row[3],
                                 floors.get((f"osc-{osc}", t, r)))
    return runs


def base_of(osc, test):
    """vader under the same component, but vader + osc/pt2pt for
    compare-and-swap under osc/rdma (which crashes over vader)."""
    return f"{BASE}/pt2pt" if (osc, test) == ("rdma", "cas_latency") else f"{BASE}/{osc}"


def time_ratio(runs, t, key, base):
    """hpam's time over vader's: for put_bw (MB/s), vader's rate over hpam's."""
    r = runs.ratio(t, key, base)
    if r is None or r == 0:
        return None
    return 1 / r if key[0] == "put_bw" else r


def block(runs, osc, window):
    keys = [k for k in runs.keys() if k[1] == window]
    keys.sort(key=lambda k: (TESTS.index(k[0]) if k[0] in TESTS else 99, k[2]))
    body, worst = [], {}
    for k in keys:
        base = base_of(osc, k[0])
        cells = [k[0], k[2], fmt(runs.value(base, k), 3) + ("" if base.endswith(osc) else " (pt2pt)")]
        for t in HPAM:
            cells.append(fmt(runs.value(f"{t}/{osc}", k), 3))
        for t in HPAM:
            r = time_ratio(runs, f"{t}/{osc}", k, base)
            cells.append(fmt(r))
            if r is not None and r > worst.get(t, (0, None))[0]:
                worst[t] = (r, k)
        body.append(cells)
    if not body:
        return [], worst
    L = [f"### osc/{osc}, -w {window} (µs per operation + flush; put_bw MB/s)\n"]
    L += table(["test", "bytes", "vader"] + HPAM + [f"{t} ÷ vader" for t in HPAM], body)
    return L + [""], worst


def section(out):
    runs = load(out)
    if not runs:
        return []
    n = max((len(v) for d in runs.d.values() for v in d.values()), default=0)
    newest = max(os.path.getmtime(p) for p in glob.glob(os.path.join(out, "osc-*.csv")))
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(newest))
    L = [HEADING + "\n",
         f"Measured {when} (this section may come from a later run than the sections around "
         "it: `bench/run --osc-only`).\n",
         "Our own code following the OSU Micro-Benchmarks' method (osu_put_latency, osu_get_latency, "
         "osu_put_bw, osu_acc_latency, osu_fop_latency, osu_cas_latency; OSU is not packaged in "
         "Debian): two ranks, a fresh window per test and size, MPI_Win_lock(MPI_LOCK_SHARED) "
         "around the loop and MPI_Win_flush after every operation (put_bw: after every window of "
         "64 puts, 32 above 8 KiB), MPI_CHAR data, MPI_Accumulate with MPI_SUM, MPI_LONG_LONG "
         "fetch-and-op (MPI_SUM) and compare-and-swap; each figure the median of short bursts "
         f"(`bench/mpi_osc --osu` runs OSU's single loop of 10,000), median of {n} run(s). "
         "Ratios: hpam's time over vader's in the same run at the same cache-line floor (put_bw: "
         f"vader's MB/s over hpam's), goal ≤ {GOAL}. The one-sided component is forced "
         "(`--mca osc rdma` or `--mca osc pt2pt`) for both transports.\n",
         "* `-w allocate`: left to choose, Open MPI 4.1 with ob1 gives MPI_Win_allocate windows "
         "on one node to osc/sm (load/store on a shared segment, no BTL), whatever the BTL; "
         "forced to osc/rdma, an allocated window on one node is shared memory too (osc/rdma "
         "maps its peers' segments and copies with the CPU), so both rows measure Open MPI's "
         "shared-memory path more than the BTL. Under osc/pt2pt every operation is a message "
         "over the BTL.",
         "* Compare-and-swap under osc/rdma: Debian's Open MPI 4.1.4 crashes in "
         "MPI_Compare_and_swap under osc/rdma over vader, so its reference is vader + osc/pt2pt "
         "(marked \"(pt2pt)\").\n"]
    summary = []
    blocks = []
    for osc in OSCS:
        for w in WINDOWS:
            lines, worst = block(runs, osc, w)
            blocks += lines
            if lines:
                cells = [f"osc/{osc}", f"-w {w}"]
                for t in HPAM:
                    r, k = worst.get(t, (None, None))
                    cells.append("n/a" if r is None else
                                 f"{fmt(r)} ({k[0]} {k[2]} B) {'✓' if r <= GOAL else '✗'}")
                summary.append(cells)
    L += ["Worst ratio per component and window mode (✓: ≤ 1.2):\n"]
    L += table(["component", "window"] + HPAM, summary) + [""]
    return L + blocks + [END]


if __name__ == "__main__":
    lines = section(sys.argv[1])
    if len(sys.argv) > 2:
        replace_section(sys.argv[2], lines, HEADING, END, before="## Collectives: latency")
    else:
        print("\n".join(lines))
