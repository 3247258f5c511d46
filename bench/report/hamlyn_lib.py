"""The Hamlyn library's section of bench/RESULTS.md: its protocols measured
as OSDI'96 section 4 measured them (bench/hamlyn_lib_bench), beside the
paper's figures. Reads hamlyn_lib.csv and hamlyn_lib_cost.csv from the
results directory; writes hamlyn_lib_one_way.dat and hamlyn_lib_fit.gp for
bench/hamlyn_lib_plots.gp. Included by bench/report/results.py; run alone (bench/run
--hamlyn-lib-only) it replaces only its own section of RESULTS.md."""
import csv
import os
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
if __name__ == "__main__":  # run as a file: the report package is in bench/
    sys.path[0] = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
from report.common import replace_section  # noqa: E402

BEGIN, END = "<!-- hamlyn library: begin -->", "<!-- hamlyn library: end -->"
PAPER_RTT_US = 28.2                       # 4.1: tagged remote write, 16 bytes, round trip
PAPER_FIT = (17.4, 32.6)                  # 4.2/4.3: one way, µs + ns/byte (4 KB packets)
PAPER_HOST_US = {"raw": 0.8, "tagged_write": 2.2}  # Table 4: host protocol software, one way
PAPER_MHZ = 100                           # HP 9000/J200 (PA-RISC 7200, 100 MHz)
FIT_FROM = 4096                           # sizes fitted: a packet and more


def _rows(path):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [r for r in csv.reader(f) if r][1:]


def fit(points):
    """Least-squares line through (bytes, µs): (intercept µs, slope ns/byte)."""
    n = len(points)
    if n < 2:
        return None
    sx = sum(x for x, _ in points)
    sy = sum(y for _, y in points)
    sxx = sum(x * x for x, _ in points)
    sxy = sum(x * y for x, y in points)
    d = n * sxx - sx * sx
    if d == 0:
        return None
    slope = (n * sxy - sx * sy) / d
    return (sy - slope * sx) / n, slope * 1000.0


def _mbps(slope_ns):
    return 1000.0 / slope_ns if slope_ns > 0 else float("inf")


def section(out):
    rows = _rows(os.path.join(out, "hamlyn_lib.csv"))
    if not rows:
        return []
    v = {(r[0], r[1], int(r[2])): float(r[3]) for r in rows}
    one_way = {}
    for (kind, proto, size), x in v.items():
        if kind == "one_way_us":
            one_way.setdefault(proto, {})[size] = x
    # The paper's line is for "longer" messages: fitted here from one packet (4 KiB) up.
    fits = {p: fit(sorted((s, t) for s, t in d.items() if s >= FIT_FROM)) for p, d in one_way.items()}
    stamp = os.path.getmtime(os.path.join(out, "hamlyn_lib.csv"))
    L = [BEGIN, "## The Hamlyn library's protocols (OSDI'96 sections 3.3 and 4)\n"]
    L.append(f"Measured {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime(stamp))} by `bench/run` "
             "(alone: `bench/run --hamlyn-lib-only`), program bench/hamlyn_lib_bench: two processes, "
             "each pinned to a CPU of its own, each with its emulated Hamlyn card (4 KiB packets, the "
             "packet size of the paper's 30.7 MB/s line) and hamlyn_manager (src/hamlyn_lib); no MPI. "
             "As in the paper, a message goes to the other process and comes back, and one-way time "
             "is half the round trip; every figure is the median of bursts. The paper's figures are "
             "from HP 9000/J200 workstations (100 MHz PA-RISC) over Myrinet with a LANai 4 card; the "
             "emulated card is the sender's own CPU writing the receiver's memory, so the ratios say "
             "how far today's shared memory and this code are from 1996's hardware, not which design "
             "is better. The same-run reference is the cache-line floor between the two CPUs.\n")
    rtt = v.get(("rtt_us", "tagged_write", 16))
    floor = v.get(("floor_ns", "line", 64))
    L.append("| figure | paper | hpam | hpam / paper |")
    L.append("|---|---|---|---|")
    if rtt is not None:
        L.append(f"| tagged remote write, 16 B, round trip (µs) | {PAPER_RTT_US} | {rtt:.3f} | "
                 f"{rtt / PAPER_RTT_US:.4f} |")
    if floor:
        L.append(f"| cache-line round trip between the two CPUs, same run (µs) | — | {floor / 1000:.3f} | — |")
        if rtt is not None:
            L.append(f"| tagged remote write round trip / cache-line floor | — | {rtt * 1000 / floor:.2f} | — |")
    for p in ("stream", "datagram"):
        f = fits.get(p)
        if f:
            L.append(f"| {p}: one way, line fitted from {FIT_FROM} B up (µs + ns/byte) | {PAPER_FIT[0]} + {PAPER_FIT[1]} | "
                     f"{f[0]:.3f} + {f[1]:.4f} | {f[0] / PAPER_FIT[0]:.4f} + {f[1] / PAPER_FIT[1]:.4f} |")
            L.append(f"| {p}: bandwidth of the fitted slope (MB/s) | {_mbps(PAPER_FIT[1]):.1f} | "
                     f"{_mbps(f[1]):.0f} | {_mbps(f[1]) / _mbps(PAPER_FIT[1]):.0f} |")
    L.append("")
    rate = {(r[0], r[1]): float(r[3]) for r in rows if r[0].startswith("stream_")}
    if rate:
        on, off = rate.get(("stream_MBps", "coalesce_on")), rate.get(("stream_MBps", "coalesce_off"))
        L.append("Stream throughput, 64-byte sends streamed one way (the receiver releases each record "
                 "as it takes it; the paper describes coalescing but gives no figure for it):\n")
        L.append("| coalescing | MB/s | million sends/s |")
        L.append("|---|---|---|")
        for name, label in (("coalesce_on", "on (4 KiB buffer)"), ("coalesce_off", "off (a record per send)")):
            L.append(f"| {label} | {rate.get(('stream_MBps', name), 0):.1f} | "
                     f"{rate.get(('stream_Mmsgs', name), 0):.3f} |")
        if on and off:
            L.append(f"\nCoalescing on / off: {on / off:.1f}x (each uncoalesced record costs a "
                     "metadata entry, a notification, and a credit back to the sender).\n")
    cost = {(r[0], r[1]): int(r[2]) for r in _rows(os.path.join(out, "hamlyn_lib_cost.csv"))}
    if cost:
        L.append("Host instructions per message (valgrind --tool=callgrind, counting only inside the "
                 "send and receive calls of `hamlyn_lib_bench --cost`, 16-byte messages, the difference "
                 "of 20000 and 10000 messages). In the emulation the sender's process also does the "
                 "receiving interface's work (checks, deposit, notification), so the send column holds "
                 "what the paper's LANai did. The paper's Table 4 gives host protocol software time per "
                 f"one-way message: {PAPER_HOST_US['raw']} µs raw, {PAPER_HOST_US['tagged_write']} µs "
                 f"with the tagged remote write protocol, at {PAPER_MHZ} MHz about "
                 f"{PAPER_HOST_US['raw'] * PAPER_MHZ:.0f} and {PAPER_HOST_US['tagged_write'] * PAPER_MHZ:.0f}"
                 " cycles, send and receive together.\n")
        L.append("| protocol | send | receive | send + receive |")
        L.append("|---|---|---|---|")
        for p, label in (("tagged_write", "tagged remote write"), ("datagram", "simple datagram"),
                         ("stream", "stream, send + flush each"),
                         ("stream_coalesced", "stream, coalesced (flush every 128)")):
            s, r = cost.get((p, "send")), cost.get((p, "receive"))
            if s is not None and r is not None:
                L.append(f"| {label} | {s} | {r} | {s + r} |")
        L.append("")
    L.append("One-way time (µs) against message size (bursts of the sizes interleaved, median per "
             "size); plot: results/hamlyn_lib_one_way.png, with the fitted lines:\n")
    sizes = sorted({s for d in one_way.values() for s in d})
    protos = [p for p in ("datagram", "stream") if p in one_way]
    L.append("| bytes | " + " | ".join(protos) + " |")
    L.append("|---" * (1 + len(protos)) + "|")
    with open(os.path.join(out, "hamlyn_lib_one_way.dat"), "w") as dat:
        dat.write("bytes " + " ".join(protos) + "\n")
        for s in sizes:
            cells = [one_way[p].get(s) for p in protos]
            L.append(f"| {s} | " + " | ".join("—" if c is None else f"{c:.3f}" for c in cells) + " |")
            dat.write(f"{s} " + " ".join("nan" if c is None else str(c) for c in cells) + "\n")
    with open(os.path.join(out, "hamlyn_lib_fit.gp"), "w") as g:
        for p in protos:
            if fits.get(p):
                g.write(f"{p}_a = {fits[p][0]}\n{p}_b = {fits[p][1] / 1000.0}\n")
    L.append("")
    L.append(END)
    return L


if __name__ == "__main__":
    # bench/report/hamlyn_lib.py OUT RESULTS_MD: replaces this section of
    # RESULTS_MD (between its markers), or puts it before the applications'
    # section, leaving every other section as it is.
    replace_section(sys.argv[2], section(sys.argv[1]), BEGIN, END, before="<!-- splitc apps: begin -->")
