#!/usr/bin/env python3
"""The "UCX transport" section of bench/RESULTS.md from ucx_perftest.csv
(written by bench/ucx_perftest.sh): medians across runs, ratios of hpam to
UCX's own shared-memory transports measured in the same run.

bench/report/results.py includes this section when the CSV is there; on its own,
    bench/report/ucx.py RESULTS_DIR RESULTS.md
replaces (or appends) just this section of RESULTS.md, leaving the others."""
import csv
import os
import statistics
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
if __name__ == "__main__":  # run as a file: the report package is in bench/
    sys.path[0] = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
from report.apps import _machine  # noqa: E402

BEGIN, END = "<!-- ucx_perftest: begin -->", "<!-- ucx_perftest: end -->"
TRANSPORTS = ["posix", "sysv", "cma", "hpam-medusa", "hpam-hamlyn"]
WHAT = {
    "am_lat": "active message, ping-pong, one way",
    "am_bw": "active messages, stream",
    "put_lat": "put, ping-pong, one way",
    "put_bw": "puts, stream",
    "get": "gets, stream",
    "add_lat": "atomic add, ping-pong, one way",
    "add_mr": "atomic adds, stream",
    "fadd": "fetch-and-add, stream",
    "swap": "swap, stream",
    "cswap": "compare-and-swap, stream",
}


def load(path):
    """{(test, layout, bytes): {transport: (median µs, median MB/s, median Mmsg/s)}}"""
    acc = {}
    with open(path) as f:
        for r in csv.DictReader(f):
            key = (r["test"], r["layout"], int(r["bytes"]))
            v = acc.setdefault(key, {}).setdefault(r["transport"], ([], [], []))
            v[0].append(float(r["p50_latency_us"]))
            v[1].append(float(r["bandwidth_MBps"]))
            v[2].append(float(r["Mmsgs_per_s"]))
    return {k: {t: tuple(statistics.median(x) for x in cols) for t, cols in v.items()}
            for k, v in acc.items()}


def runs_of(path, tests):
    """{(test, layout, bytes): {transport: [µs per run]}} for the given tests"""
    acc = {}
    with open(path) as f:
        for r in csv.DictReader(f):
            if r["test"] in tests:
                key = (r["test"], r["layout"], int(r["bytes"]))
                acc.setdefault(key, {}).setdefault(r["transport"], []).append(
                    float(r["p50_latency_us"]))
    return acc


# Streams of atomics that wait for their answers: ucx_perftest's responder
# spins reading the very word the requester updates (it waits for a
# sentinel there), so each run falls in one of two regimes on every
# transport: the line bouncing between the two cores at each operation
# (slow) or not (fast), about 5x apart (docs/decisions.md).
BIMODAL = ("fadd", "swap", "cswap")


def same_regime_ratio(runs, t, base):
    """hpam's runs over the base's in the regime both have (slow first):
    a run is slow when it takes at least half the cell's slowest run."""
    if t not in runs or base not in runs:
        return "n/a"
    top = max(max(v) for v in runs.values())
    for name, keep in (("slow", lambda x: x >= top / 2), ("fast", lambda x: x < top / 2)):
        a = [x for x in runs[t] if keep(x)]
        b = [x for x in runs[base] if keep(x)]
        if a and b:
            return f"{statistics.median(a) / statistics.median(b):.1f}× ({name})"
    return "no common regime"


def base_layout(layout):
    """short, bcopy or zcopy: the layout of a variant such as bcopy+user+O32"""
    return layout.split("+")[0]


def shown(layout, nbytes):
    """The table's "layout, bytes" of a CSV layout: bcopy+user+O32 ->
    bcopy, 8, user memory, 32 outstanding"""
    parts = layout.split("+")
    text = f"{parts[0]}, {nbytes}"
    for p in parts[1:]:
        text += ", user memory" if p == "user" else f", {p[1:]} outstanding" if p[0] == "O" else ""
    return text


def cell(d, t, i, digits):
    return f"{d[t][i]:.{digits}f}" if t in d else "n/a"


def ratio(d, t, base):
    if t not in d or base not in d or d[base][0] <= 0:
        return "n/a"
    return f"{d[t][0] / d[base][0]:.1f}×"


def section(out):
    path = os.path.join(out, "ucx_perftest.csv")
    if not os.path.exists(path):
        return []
    data = load(path)
    runs = 0
    with open(path) as f:
        runs = max((int(r["run"]) for r in csv.DictReader(f)), default=0)
    L = [BEGIN, "## UCX transport: ucx_perftest over hpam beside posix, sysv and cma\n"]
    stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(os.path.getmtime(path)))
    L.append(f"Measured {stamp} on {_machine()} (this section may come from a later run "
             "than the sections above: `bench/ucx_perftest.sh > results/ucx_perftest.csv; "
             "bench/report/ucx.py bench/results bench/RESULTS.md`).\n")
    L.append("`bench/ucx_perftest.sh` (a step of `bench/run`): UCX's own benchmark between "
             "two processes on this node, through UCT, with `LD_PRELOAD=libuct_hpam.so`; "
             f"median of {runs} run(s) of each cell, all transports in the same run. "
             "Time is the median time per operation that ucx_perftest reports (one way for "
             "ping-pong tests, per message in a stream); ratios are hpam's time over "
             "posix's (over cma's for zero-copy rows, which posix and sysv lack). "
             "posix and sysv map the peer's memory, so their put, get and atomics are CPU "
             "loads and stores; hpam's are Hamlyn deposits: into memory the memory domain "
             "allocated (card memory, where ucx_perftest's buffers are) a copy or a CPU "
             "atomic under the slot's checks (held, key, bounds), into registered user "
             "memory one process_vm_writev/readv or a packet the owner serves; its active "
             "messages are HPAM requests answered by the protocol's acknowledgements (up to "
             "UCX_HPAM_DEPTH = 16 in flight per peer). Rows marked *user memory* run with "
             "`UCX_HPAM_ALLOC=heap`: ucx_perftest's buffers are then plain memory the hpam "
             "domain registers, so its puts and gets take the registered-memory path "
             "(process_vm_writev/readv, small ones batched per destination); posix and sysv "
             "register nothing, so their buffers come from their own domain as in the other "
             "rows. ucx_perftest's get test keeps one get in flight (a latency loop) unless "
             "told more outstanding (`-O`).\n")
    L.append("| test | layout, bytes | posix µs | sysv µs | cma µs | hpam-medusa µs | "
             "hpam-hamlyn µs | medusa ÷ base | hamlyn ÷ base |")
    L.append("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    order = ["am_lat", "am_bw", "put_lat", "put_bw", "get", "add_lat", "add_mr", "fadd", "swap",
             "cswap"]
    layouts = ["short", "bcopy", "zcopy"]
    def sort_key(k):
        b = base_layout(k[1])
        return (order.index(k[0]) if k[0] in order else 99,
                layouts.index(b) if b in layouts else 9, k[1] != b, k[1], k[2])

    for key in sorted(data, key=sort_key):
        d = data[key]
        base = "posix" if "posix" in d else "cma"
        L.append(f"| {key[0]} ({WHAT.get(key[0], '')}) | {shown(key[1], key[2])} | "
                 + " | ".join(cell(d, t, 0, 3) for t in TRANSPORTS)
                 + f" | {ratio(d, 'hpam-medusa', base)} | {ratio(d, 'hpam-hamlyn', base)} |")
    bimodal = runs_of(path, BIMODAL)
    if bimodal:
        L.append("\nThe streams of atomics that wait for their answers (fadd, swap, cswap) run in "
                 "two regimes on every transport, posix and sysv included: ucx_perftest's "
                 "responder waits for a sentinel value by reading the very word the requester "
                 "updates, and in a run where it keeps reading it the line moves between the "
                 "two cores at each operation (about 0.1 µs), in one where it does not, not "
                 "(about 0.02 µs); which one a run gets does not depend on the transport "
                 "(docs/decisions.md, issue 23). The medians above can therefore compare "
                 "different regimes; here every run, and hpam's median over posix's within "
                 "the regime both had (a run is slow when it takes at least half the cell's "
                 "slowest run):\n")
        L.append("| test | layout, bytes | " + " | ".join(t for t in TRANSPORTS if t != "cma")
                 + " | medusa ÷ posix | hamlyn ÷ posix |")
        L.append("|---|---|" + "---|" * (len(TRANSPORTS) - 1) + "---:|---:|")
        for key in sorted(bimodal, key=sort_key):
            r = bimodal[key]
            L.append(f"| {key[0]} | {shown(key[1], key[2])} | "
                     + " | ".join(", ".join(f"{x:.3f}" for x in r.get(t, [])) or "n/a"
                                  for t in TRANSPORTS if t != "cma")
                     + f" | {same_regime_ratio(r, 'hpam-medusa', 'posix')} | "
                     f"{same_regime_ratio(r, 'hpam-hamlyn', 'posix')} |")
    big = [k for k in data if k[2] >= 4096]
    if big:
        L.append("\nBandwidth of the large-message streams, MB/s (whole run):\n")
        L.append("| test | layout, bytes | " + " | ".join(TRANSPORTS) + " |")
        L.append("|---|---|" + "---:|" * len(TRANSPORTS))
        for key in sorted(big):
            d = data[key]
            L.append(f"| {key[0]} | {shown(key[1], key[2])} | "
                     + " | ".join(cell(d, t, 1, 0) for t in TRANSPORTS) + " |")
    streams = [k for k in data if not k[0].endswith("_lat")]
    if streams:
        L.append("\nMessage rate of the streams, million operations per second (whole run):\n")
        L.append("| test | layout, bytes | " + " | ".join(TRANSPORTS) + " |")
        L.append("|---|---|" + "---:|" * len(TRANSPORTS))
        for key in sorted(streams, key=sort_key):
            d = data[key]
            L.append(f"| {key[0]} | {shown(key[1], key[2])} | "
                     + " | ".join(cell(d, t, 2, 3) for t in TRANSPORTS) + " |")
    L.append(END)
    return L


def splice(results_md, lines):
    text = open(results_md).read() if os.path.exists(results_md) else ""
    block = "\n".join(lines) + "\n"
    if BEGIN in text and END in text:
        head, rest = text.split(BEGIN, 1)
        tail = rest.split(END, 1)[1].lstrip("\n")
        text = head + block + ("\n" + tail if tail else "")
    else:
        text = text.rstrip("\n") + "\n\n" + block
    with open(results_md, "w") as f:
        f.write(text)


if __name__ == "__main__":
    lines = section(sys.argv[1])
    if not lines:
        sys.exit(f"bench/report/ucx.py: no ucx_perftest.csv in {sys.argv[1]}")
    splice(sys.argv[2], lines)
