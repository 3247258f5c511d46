#!/usr/bin/env python3
"""Turns bench/results/*.csv (written by bench/run) into bench/RESULTS.md and
the data files bench/plots.gp draws. Figures are medians across runs;
ratios to vader divide figures measured at the same cache-line floor
(bench/report/common.py says how and why). The goals of issue 26 (small messages) come first
(bench/report/goals.py), then one section per figure, each with its ratio
columns."""
import os
import platform
import subprocess
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
if __name__ == "__main__":  # run as a file: the report package is in bench/
    sys.path[0] = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
from report.common import HPAM, fmt, rows, table  # noqa: E402
from report import data  # noqa: E402  the figures, from the CSVs
from report import goals  # noqa: E402  floor, load, goals, RMA, collectives, profile
from report import apps  # noqa: E402  the Split-C applications and GAM sections
from report import hamlyn_lib  # noqa: E402  the Hamlyn library's protocols (OSDI'96 section 4)
from report import loss  # noqa: E402  the under-loss section (bench/loss.sh)
from report import ucx  # noqa: E402  UCX's ucx_perftest over hpam
from report import osc  # noqa: E402  the OSU-style one-sided tests (bench/mpi_osc)

out, results_md, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
quick = len(sys.argv) > 4
T = data.T


def sh(cmd):
    try:
        return subprocess.run(cmd, shell=True, capture_output=True, text=True).stdout.strip()
    except OSError:
        return ""


def rinf_nhalf(bw):
    """R_inf = best bandwidth; N_half = smallest size reaching half of it."""
    if not bw:
        return None, None
    rinf = max(bw.values())
    return rinf, min(s for s, v in bw.items() if v >= rinf / 2)


def load_logp():
    logp = {}
    for name, fname in [("medusa", "logp_native_medusa"), ("hamlyn", "logp_native_hamlyn"),
                        ("MPI vader", "logp_mpi_vader"), ("MPI hpam-medusa", "logp_mpi_hpam-medusa"),
                        ("MPI hpam-hamlyn", "logp_mpi_hpam-hamlyn")]:
        p = os.path.join(out, f"{fname}.csv")
        if not os.path.exists(p):
            continue
        params, sig = {}, []
        for r in rows(p):
            if len(r) == 2 and r[0] != "param":
                params[r[0]] = float(r[1])
            elif len(r) == 3 and r[0] == "signature" and r[1] != "delay_ns":
                sig.append((float(r[1]), float(r[2])))
        logp[name] = (params, sig)
        with open(os.path.join(out, f"signature_{fname}.dat"), "w") as f:
            for d, v in sig:
                f.write(f"{d / 1000:.3f} {v / 1000:.4f}\n")
    return logp


fig = data.load(out)
mpi, mr, native, cost = fig.mpi, fig.mr, fig.native, fig.cost
logp = load_logp()

L = ["# hpam benchmark results\n"]
L.append(f"Produced by `bench/run{' --quick' if quick else ''}` on "
         f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; every figure is a median "
         f"({runs} mpirun run(s) per transport, many short bursts inside each); every ratio to "
         "vader is the median over pairs of runs, hpam's and vader's, made at the same cache-line "
         "floor (probed before and after each run, bench/report/common.py), or, where no pair "
         "was, one right after the other.\n")
L.append("## Machine\n")
cpu = sh("lscpu | sed -n 's/^Model name: *//p'")
hyper = sh("lscpu | sed -n 's/^Hypervisor vendor: *//p'") or "no hypervisor"
L.append(f"* CPU: {cpu}, {os.cpu_count()} cores ({hyper})")
L.append(f"* Kernel: {platform.release()}; Open MPI {sh('ompi_info --version | head -1 | sed s/.*v//')}")
L += goals.floor_lines(fig.floor)
L.append(goals.load_line(fig.floor))
L.append("")

L += goals.goals_section(fig)

L.append("## Native active messages (HPAM Figures 7 and 8)\n")
L += table(["card", "4-word round trip (µs)", "cache-line floor beside it (ns)", "× floor",
            "R∞ (MB/s)", "N½ (bytes)"],
           [[nic, fmt(d.get("rtt_ns", 0) / 1000, 3), fmt(d.get("floor_ns"), 0),
             fmt(d.get("over_floor")), fmt(rinf_nhalf(d["bw"])[0], 0), rinf_nhalf(d["bw"])[1]]
            for nic, d in native.items()] +
           [["HPAM on Medusa, 1995 (paper)", "29", "", "", "12", "176"]])
L.append("\nbench/am_bench: the round trip is the median of short bursts (1000 round trips "
         "each) between two processes pinned to a CPU each; after every burst the same two "
         "processes run a burst of the bare cache-line ping-pong (bench/line_floor.hpp), and "
         "× floor is the median over the pairs of burst over line burst, both measured at the "
         "same moment. N½ is the smallest measured size whose bandwidth reaches R∞/2 (sizes "
         "double from 16 B to the block size), so it is an upper bound at power-of-two "
         "resolution.\n")
for nic, d in native.items():
    cpu = cost.get("protocol_full" + ("" if nic == "medusa" else f"_{nic}"))
    if d.get("floor_ns") and cpu:
        extra = (d["rtt_ns"] - cpu[0]) / (d["floor_ns"] / 2)
        L.append(f"* {nic}: the 4-word request/reply takes {fmt(d['rtt_ns'], 0)} ns, "
                 f"{fmt(d['over_floor'])}× the cache-line round trip measured beside it "
                 f"({fmt(d['floor_ns'], 0)} ns); its {cpu[1]} instructions cost {fmt(cpu[0], 0)} ns "
                 "per round trip with both ends on one core (bench/am_cost); the rest, "
                 f"{fmt(d['rtt_ns'] - cpu[0], 0)} ns, is about {fmt(extra, 1)} one-way cache-line "
                 "transfers' worth (the bare ping-pong has 2; the estimate ignores work the two "
                 "processes do at the same time).")
L.append("")
npp = {}
for nic in ["medusa", "hamlyn"]:
    got = {int(r[1]): float(r[2]) for r in rows(os.path.join(out, f"native_pingpong_{nic}.csv"))[1:]
           if r[0] == "rtt_ns"}
    if got:
        npp[nic] = got
if npp:
    L.append("Native ping-pong against message size (bench/am_pingpong: an s-byte store, answered "
             "by an s-byte reply_store; round trip and one-way = half of it), µs:\n")
    body = []
    with open(os.path.join(out, "native_latency.dat"), "w") as f:
        for sz in sorted({s for d in npp.values() for s in d}):
            v = [npp[n].get(sz) for n in npp]
            body.append([sz] + [c for x in v for c in (fmt(x and x / 1000, 3), fmt(x and x / 2000, 3))])
            f.write(f"{sz} " + " ".join(str(x / 2000) if x else "nan" for x in v) + "\n")
    L += table(["bytes"] + [c for n in npp for c in (f"{n} round trip", f"{n} one way")], body)
    L.append("")

L.append("## LogP parameters (HP-LAM Table 4.2 layout), µs\n")
published = {"RTT": [28.1, 31.0, 25.0, 20.0, 20.9], "BW (MB/s)": [24, 20, 38, 145, 45],
             "L": [5.3, 11.2, 5.5, 6.5, 7.5], "o_s": [2.9, 2.0, 2.0, 1.4, 1.7],
             "o_r": [5.8, 2.6, 5.0, 2.2, 1.6], "g": [8.7, 12.4, 7.0, 7.6, 13.6]}
key = {"RTT": "rtt", "L": "L", "o_s": "os", "o_r": "or", "g": "g"}


def logp_cell(name, params, row):
    if row != "BW (MB/s)":
        return fmt(params.get(key[row], 0) / 1000, 3)
    if name in native:
        return fmt(rinf_nhalf(native[name]["bw"])[0], 0)
    t = name.split(" ")[1]
    return fmt(rinf_nhalf({k[1]: mpi.value(t, k) for k in mpi.keys(t) if k[0] == "bandwidth_MBps"})[0], 0)


L += table([""] + [(f"hpam {n} (native)" if n in native else n) for n in logp] +
           ["HP-LAM", "Sun-LAM SS-20", "Sun-LAM Ultra-1", "Intel Paragon", "Meiko CS-2"],
           [[row] + [logp_cell(n, p, row) for n, (p, _) in logp.items()] + pub
            for row, pub in published.items()])
L.append("\nMethod (bench/am_logp.cpp): o_s = time per request in a burst of back-to-back "
         "sends that never stalls (D = 64); g = time per message in a saturating stream; the "
         "signature T(Δ) inserts a delay Δ after each send, and o_r = g − o_s − Δ*, where Δ* is "
         "the last Δ at which T stays within 5% of g; L = RTT/2 − o_s − o_r. The signature plot "
         "is results/logp_signature.png. The MPI columns use the same method with 8-byte "
         "messages (bench/mpi_logp.c: MPI_Isend bursts, 64 in flight for g). o_r and L are "
         "differences of measured quantities and are shown as 0 where the difference came out "
         "negative, i.e. below the resolution of the method (the signature's delay steps are "
         "100 ns at MPI level); today every parameter is one to two orders of magnitude below "
         "the 1996 rows, and on shared memory L, the wire time, is nearly all of cache-line "
         "transfer between cores.\n")

if cost:
    def half(a, b=None):
        ns = (cost[a][0] - (cost[b][0] if b else 0)) / 2
        return ns, (cost[a][1] - (cost[b][1] if b else 0)) // 2
    feat = [("Basic: card only (launch, receive, release), no CRC", half("raw_no_crc"), 317),
            ("Flow control / reliability: the HPAM protocol", half("protocol_no_crc_no_key", "raw_no_crc"), 245),
            ("Protection: job key check", half("protocol_no_crc", "protocol_no_crc_no_key"), 219),
            ("CRC32C (the FDDI checksum's role)", half("raw_crc", "raw_no_crc"), 215),
            ("Total, full protocol", half("protocol_full"), 996)]
    if "protocol_full_no_inline" in cost:
        feat.insert(4, ("Inline delivery: a small packet in its RX_READY cell (not in the paper)",
                        half("protocol_full", "protocol_full_no_inline"), ""))
    if "protocol_full_hamlyn" in cost:
        feat.append(("Total, full protocol over the Hamlyn card", half("protocol_full_hamlyn"), ""))
    if "protocol_full_hamlyn_no_inline" in cost:
        feat.append(("Inline delivery over Hamlyn: a small packet in its notification entry "
                     "(not in the paper)", half("protocol_full_hamlyn", "protocol_full_hamlyn_no_inline"), ""))
    L.append("## Cost by feature (HPAM Table 2), per send + receive of a 4-word message\n")
    L += table(["feature", "ns", "instructions", "HPAM 1995 (cycles)"],
               [[name, f"{ns:.1f}" if ns >= 0.05 else "≈0 (within noise)", ins, cyc]
                for name, (ns, ins), cyc in feat])
    L.append("\nBoth endpoints run in one process on one core (bench/am_cost), so these are CPU "
             "costs without cross-core cache traffic; a round trip is two send+receive pairs. "
             "Instructions: `valgrind --tool=callgrind`, difference of 20,000 and 10,000 round "
             "trips, repeatable on a noisy machine. Flow control and reliability cannot be "
             "switched off in the protocol, so that row is the protocol minus the bare card. "
             "The inline rows are what inline delivery costs on one core (the full protocol "
             "with it minus without it, am_cost --no-inline); what it buys is across cores: "
             "the receiver finds a small message in the cache lines it polls (the native round "
             "trips above).\n")

L.append("## MPI latency (µs, one way) and bandwidth (MB/s) against message size\n")
L.append("One-way latency is half the ping-pong round trip (the round trip is twice each figure). "
         "Both ranks are bound to a core each (`mpirun --bind-to core`). "
         "Plots: results/mpi_latency.png, results/mpi_bandwidth.png.\n")


def size_table(kind, digits, datfile):
    """One row per size: each transport's median and its ratio to vader;
    the same medians go to datfile for gnuplot (size 0 plotted at 1)."""
    body = []
    with open(os.path.join(out, datfile), "w") as dat:
        for s in sorted({k[1] for k in mpi.keys() if k[0] == kind}):
            v = [mpi.value(t, (kind, s)) for t in T]
            body.append([s] + [fmt(x, digits) for x in v] + mpi.ratio_cells(T[1:], (kind, s)))
            dat.write(f"{max(s, 1)} " + " ".join(str(x or 'nan') for x in v) + "\n")
    L.extend(table(["bytes"] + T + [f"{t}/vader" for t in T[1:]], body))


size_table("latency_us", 3, "mpi_latency.dat")
L.append("")
size_table("bandwidth_MBps", 0, "mpi_bandwidth.dat")
L.append("")
L += table(["transport", "R∞ (MB/s)", "N½ (bytes)"],
           [[t, fmt(a, 0), b] for t in T for a, b in
            [rinf_nhalf({k[1]: mpi.value(t, k) for k in mpi.keys(t) if k[0] == "bandwidth_MBps"})]])
L.append("\nBandwidth is a stream of 64 nonblocking sends in flight, then an acknowledgement; "
         "below 4 KiB it comes from bench/mpi_msgrate --sizes, from 4 KiB up from "
         "bench/mpi_pingpong (both in every run). R∞ is the best bandwidth measured, N½ the "
         "smallest size reaching R∞/2 (power-of-two resolution). As in HPAM's figures, "
         "N½ grows with R∞: today's memory-copy bandwidth is three orders of magnitude above "
         "FDDI's, so half of it needs kilobytes, not 176 B.\n")

L.append("## Message rate, 64 messages in flight (8 bytes, one pair)\n")
L.append("One sender and one receiver: on this 2-core machine more pairs would oversubscribe "
         "the cores with busy-polling ranks (bench/mpi_msgrate pairs ranks 0-1, 2-3, ... and "
         f"sums the rates when run with more ranks, e.g. -np 4 --oversubscribe). Median of {runs} "
         "run(s); hpam-medusa-D64 is hpam-medusa with 64 request instances per peer "
         "(`--mca btl_hpam_depth 64`).\n")
MR_COUNTS = [("packets", "packets"), ("acks_sent", "acks"), ("acks_piggybacked", "acks riding"),
             ("acks_combined", "acks combined"), ("busy_returns", "busy returns"), ("stalls", "stalls"), ("timeouts", "timeouts"),
             ("retransmissions", "retransmissions"), ("overflow_drops", "overflow drops")]
L += table(["transport", "million messages/s", "ratio to vader"] + [n for _, n in MR_COUNTS],
           [[t, fmt(mr.value(t, 8), 3), fmt(mr.ratio(t, 8))] +
            [fmt(mr.value(t, ("count", c)), 3) if t in HPAM else "" for c, _ in MR_COUNTS]
            for t in mr.transports()])
L.append("\nOver hpam, the protocol's counters per 8-byte message of the same stream (MPI_T "
         "pvars btl_hpam_*, both ranks, over 500 windows of 64 after the timed bursts, 100 in --quick): packets on "
         "the wire, acknowledgements sent, those that rode on a request and those that went inside "
         "another ack packet (multi_ack: one packet carries many), sends that found "
         "every request instance busy (busy returns, stalls), request descriptors that timed "
         "out, retransmissions, and packets dropped because the receiver had no free block "
         "(Medusa's RX_FREE empty). Every timeout costs a retransmission timeout "
         "(`btl_hpam_timeout_us`, 1000 µs by default) in which the stream does not move.\n")

byloss = {}
for r in rows(os.path.join(out, "faults.csv"))[1:]:
    byloss.setdefault(r[0], {})[(r[1], int(r[2]))] = float(r[3])
if byloss:
    L.append("## MPI over hpam-medusa under loss\n")
    L.append("Each loss rate applies to drops and to corruptions (caught by the CRC) alike; "
             "retransmission timeout 100 µs.\n")
    L += table(["loss", "8 B latency (µs)", "4 KiB latency (µs)", "4 KiB bandwidth (MB/s)"],
               [[p, fmt(d.get(("latency_us", 8)), 3), fmt(d.get(("latency_us", 4096)), 3),
                 fmt(d.get(("bandwidth_MBps", 4096)), 0)] for p, d in byloss.items()])
    L.append("")

L += goals.rma_section(out, fig.rma)
L += osc.section(out) + [""]
L += goals.coll_section(fig.coll)
L += goals.profile_section(out, fig.sends)

# Hand-written: the log of performance decisions (docs/decisions.md), each
# with its before/after counts; its title and introduction stay in docs/.
changes = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "docs", "decisions.md")
if os.path.exists(changes):
    with open(changes) as f:
        text = f.read()
    first = text.find("\n## ")
    L.append(text[first + 1:] if text.startswith("# ") and first >= 0 else text)

ucx_lines = ucx.section(out)
if ucx_lines:
    L += ucx_lines + [""]
L.append("Plots: results/mpi_latency.png, results/mpi_bandwidth.png, results/logp_signature.png.\n")
hamlyn_lines = hamlyn_lib.section(out)
if hamlyn_lines:
    L += hamlyn_lines + [""]
L += loss.section(out)
L += apps.section(out)
with open(results_md, "w") as f:
    f.write("\n".join(L))
