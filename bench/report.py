#!/usr/bin/env python3
"""Turns bench/results/*.csv (written by bench/run) into bench/RESULTS.md and
the data files bench/plots.gp draws. Medians across runs; ratios to vader."""
import csv
import glob
import os
import platform
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
out, results_md, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
quick = len(sys.argv) > 4
T = ["vader", "tcp", "hpam-medusa", "hpam-hamlyn"]


def rows(path):
    with open(path) as f:
        return list(csv.reader(f))


def sh(cmd):
    try:
        return subprocess.run(cmd, shell=True, capture_output=True, text=True).stdout.strip()
    except OSError:
        return ""


def fmt(x, d=2):
    return "n/a" if x is None else f"{x:.{d}f}"


# MPI ping-pong: {transport: {(kind, bytes): median}}
mpi = {}
for t in T:
    acc = {}
    for p in glob.glob(os.path.join(out, f"mpi_{t}_*.csv")):
        for r in rows(p)[1:]:
            acc.setdefault((r[0], int(r[1])), []).append(float(r[2]))
    mpi[t] = {k: statistics.median(v) for k, v in acc.items()}
    # small sizes: the same 64-in-flight stream from mpi_msgrate --sizes (median of its runs)
    small = {}
    for sp in glob.glob(os.path.join(out, f"stream_{t}_*.csv")):
        for r in rows(sp)[1:]:
            if r[0] == "bandwidth_MBps":
                small.setdefault(int(r[1]), []).append(float(r[2]))
    for n, v in small.items():
        mpi[t].setdefault(("bandwidth_MBps", n), statistics.median(v))


def rinf_nhalf(bw):
    """R_inf = best bandwidth; N_half = smallest size reaching half of it."""
    if not bw:
        return None, None
    rinf = max(bw.values())
    nh = min(s for s, v in bw.items() if v >= rinf / 2)
    return rinf, nh


native = {}
for nic in ["medusa", "hamlyn"]:
    p = os.path.join(out, f"native_{nic}.csv")
    if os.path.exists(p):
        d = {"bw": {}}
        for r in rows(p)[1:]:
            if r[0] == "rtt_ns":
                d["rtt"] = float(r[2])
            elif r[0] == "rtt_best_ns":  # the fastest short burst (both processes on a core)
                d["rtt_best"] = float(r[2])
            else:
                d["bw"][int(r[1])] = float(r[2])
        native[nic] = d

logp = {}
for nic, fname in [("medusa", "logp_native_medusa"), ("hamlyn", "logp_native_hamlyn"),
                   ("MPI vader", "logp_mpi_vader"), ("MPI hpam-medusa", "logp_mpi_hpam-medusa"),
                   ("MPI hpam-hamlyn", "logp_mpi_hpam-hamlyn")]:
    p = os.path.join(out, f"{fname}.csv")
    if os.path.exists(p):
        params, sig = {}, []
        for r in rows(p):
            if len(r) == 2 and r[0] not in ("param",):
                params[r[0]] = float(r[1])
            elif len(r) == 3 and r[0] == "signature" and r[1] != "delay_ns":
                sig.append((float(r[1]), float(r[2])))
        logp[nic] = (params, sig)
        with open(os.path.join(out, f"signature_{fname}.dat"), "w") as f:
            for d, v in sig:
                f.write(f"{d / 1000:.3f} {v / 1000:.4f}\n")

L = []
L.append("# hpam benchmark results\n")
L.append(f"Produced by `bench/run{' --quick' if quick else ''}` on {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; "
         f"every figure is a median ({runs} mpirun run(s) per transport, repetitions inside each).\n")
L.append("## Machine\n")
cpu = sh("lscpu | sed -n 's/^Model name: *//p'")
hyper = sh("lscpu | sed -n 's/^Hypervisor vendor: *//p'") or "no hypervisor"
ompi = sh("ompi_info --version | head -1 | sed 's/.*v//'")
L.append(f"* CPU: {cpu}, {os.cpu_count()} cores ({hyper})")
L.append(f"* Kernel: {platform.release()}; Open MPI {ompi}")
floor = floor_best = None
fp = os.path.join(out, "line_pingpong.csv")
if os.path.exists(fp):
    lp = {r[0]: float(r[1]) for r in rows(fp)[1:]}
    floor, floor_best = lp.get("rtt_ns"), lp.get("rtt_best_ns")
    L.append(f"* Cache-line round trip between two processes (bench/line_pingpong: one line "
             f"each way, nothing else): **{fmt(floor, 1)} ns** median, {fmt(floor_best, 1)} ns in "
             "the fastest burst, the floor under any shared-memory request/reply on this machine.")
import report_goals  # noqa: E402  load, collectives and the issue-11 goals

L.append(report_goals.load_line(out))
L.append("* The machine is shared and noisy; ratios were measured in the same run.\n")

L.append("## Native active messages (HPAM Figures 7 and 8)\n")
L.append("| card | 4-word round trip (µs) | R∞ (MB/s) | N½ (bytes) |")
L.append("|---|---|---|---|")
for nic, d in native.items():
    rinf, nh = rinf_nhalf(d["bw"])
    L.append(f"| {nic} | {fmt(d.get('rtt', 0) / 1000, 3)} | {fmt(rinf, 0)} | {nh} |")
L.append("| HPAM on Medusa, 1995 (paper) | 29 | 12 | 176 |\n")
npp = {}
for nic in ["medusa", "hamlyn"]:
    p = os.path.join(out, f"native_pingpong_{nic}.csv")
    if os.path.exists(p):
        npp[nic] = {int(r[1]): float(r[2]) for r in rows(p)[1:] if r[0] == "rtt_ns"}
if npp:
    L.append("Native ping-pong against message size (bench/am_pingpong: an s-byte store, answered "
             "by an s-byte reply_store; round trip and one-way = half of it), µs:\n")
    ns_ = sorted({s for d in npp.values() for s in d})
    L.append("| bytes | " + " | ".join(f"{n} round trip | {n} one way" for n in npp) + " |")
    L.append("|---" * (1 + 2 * len(npp)) + "|")
    with open(os.path.join(out, "native_latency.dat"), "w") as f:
        for sz in ns_:
            v = [npp[n].get(sz) for n in npp]
            L.append(f"| {sz} | " + " | ".join(f"{fmt(x / 1000 if x else None, 3)} | "
                                               f"{fmt(x / 2000 if x else None, 3)}" for x in v) + " |")
            f.write(f"{sz} " + " ".join(str(x / 2000) if x else "nan" for x in v) + "\n")
    L.append("")
L.append("N½ is the smallest measured size whose bandwidth reaches R∞/2 (sizes double from 16 B "
         "to the block size), so it is an upper bound at power-of-two resolution.\n")

L.append("## LogP parameters (HP-LAM Table 4.2 layout), µs\n")
cols = [(f"hpam {n} (native)" if n in ("medusa", "hamlyn") else n) for n in logp] + ["HP-LAM", "Sun-LAM SS-20", "Sun-LAM Ultra-1",
                                                 "Intel Paragon", "Meiko CS-2"]
published = {"RTT": [28.1, 31.0, 25.0, 20.0, 20.9], "BW (MB/s)": [24, 20, 38, 145, 45],
             "L": [5.3, 11.2, 5.5, 6.5, 7.5], "o_s": [2.9, 2.0, 2.0, 1.4, 1.7],
             "o_r": [5.8, 2.6, 5.0, 2.2, 1.6], "g": [8.7, 12.4, 7.0, 7.6, 13.6]}
key = {"RTT": "rtt", "L": "L", "o_s": "os", "o_r": "or", "g": "g"}
L.append("| | " + " | ".join(cols) + " |")
L.append("|---" * (len(cols) + 1) + "|")
for row, pub in published.items():
    ours = []
    for nic, (params, _) in logp.items():
        if row == "BW (MB/s)":
            if nic in native:
                ours.append(fmt(rinf_nhalf(native[nic]["bw"])[0], 0))
            else:
                t = nic.split(" ")[1]
                ours.append(fmt(rinf_nhalf({k[1]: v for k, v in mpi.get(t, {}).items()
                                            if k[0] == "bandwidth_MBps"})[0], 0))
        else:
            ours.append(fmt(params.get(key[row], 0) / 1000, 3))
    L.append(f"| {row} | " + " | ".join(ours + [str(x) for x in pub]) + " |")
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

cost = {r[0]: (float(r[1]), int(r[2])) for r in rows(os.path.join(out, "cost.csv"))[1:]}
if cost:
    def half(a, b=None):
        ns = (cost[a][0] - (cost[b][0] if b else 0)) / 2
        ins = (cost[a][1] - (cost[b][1] if b else 0)) // 2
        return ns, ins
    feat = [("Basic: card only (launch, receive, release), no CRC", half("raw_no_crc"), 317),
            ("Flow control / reliability: the HPAM protocol", half("protocol_no_crc_no_key", "raw_no_crc"), 245),
            ("Protection: job key check", half("protocol_no_crc", "protocol_no_crc_no_key"), 219),
            ("CRC32C (the FDDI checksum's role)", half("raw_crc", "raw_no_crc"), 215),
            ("Total, full protocol", half("protocol_full"), 996)]
    L.append("## Cost by feature (HPAM Table 2), per send + receive of a 4-word message\n")
    L.append("| feature | ns | instructions | HPAM 1995 (cycles) |")
    L.append("|---|---|---|---|")
    for name, (ns, ins), cyc in feat:
        shown = f"{ns:.1f}" if ns >= 0.05 else "≈0 (within noise)"
        L.append(f"| {name} | {shown} | {ins} | {cyc} |")
    L.append("\nBoth endpoints run in one process on one core (bench/am_cost), so these are CPU "
             "costs without cross-core cache traffic; a round trip is two send+receive pairs. "
             "Instructions: `valgrind --tool=callgrind`, difference of 20,000 and 10,000 round "
             "trips, repeatable on a noisy machine. Flow control and reliability cannot be "
             "switched off in the protocol, so that row is the protocol minus the bare card.\n")

L.append("## MPI latency (µs, one way) and bandwidth (MB/s) against message size\n")
L.append("One-way latency is half the ping-pong round trip (the round trip is twice each figure). "
         "Plots: results/mpi_latency.png, results/mpi_bandwidth.png.\n")
def size_table(kind, digits, datfile):
    """One row per size: each transport's median and its ratio to vader;
    the same numbers go to datfile for gnuplot (size 0 plotted at 1)."""
    L.append("| bytes | " + " | ".join(T) + " | " + " | ".join(f"{t}/vader" for t in T[1:]) + " |")
    L.append("|---" * (2 * len(T)) + "|")
    with open(os.path.join(out, datfile), "w") as dat:
        for s in sorted({k[1] for t in T for k in mpi[t] if k[0] == kind}):
            v = [mpi[t].get((kind, s)) for t in T]
            r = [fmt(x / v[0]) if x and v[0] else "n/a" for x in v[1:]]
            L.append(f"| {s} | " + " | ".join(fmt(x, digits) for x in v) + " | " + " | ".join(r) + " |")
            dat.write(f"{max(s, 1)} " + " ".join(str(x or 'nan') for x in v) + "\n")


size_table("latency_us", 3, "mpi_latency.dat")
L.append("")
size_table("bandwidth_MBps", 0, "mpi_bandwidth.dat")
L.append("\n| transport | R∞ (MB/s) | N½ (bytes) |")
L.append("|---|---|---|")
for t in T:
    rinf, nh = rinf_nhalf({k[1]: v for k, v in mpi[t].items() if k[0] == "bandwidth_MBps"})
    L.append(f"| {t} | {fmt(rinf, 0)} | {nh} |")
L.append("\nBandwidth is a stream of 64 nonblocking sends in flight, then an acknowledgement; "
         "below 4 KiB it comes from bench/mpi_msgrate --sizes (one run), from 4 KiB up from "
         "bench/mpi_pingpong (median of the runs). R∞ is the best bandwidth measured, N½ the "
         "smallest size reaching R∞/2 (power-of-two resolution). As in HPAM's figures, "
         "N½ grows with R∞: today's memory-copy bandwidth is three orders of magnitude above "
         "FDDI's, so half of it needs kilobytes, not 176 B.\n")

mr = {}
for r in rows(os.path.join(out, "msgrate.csv"))[1:]:
    if r[2]:
        mr.setdefault(r[0], []).append(float(r[2]))
mr = {t: statistics.median(v) for t, v in mr.items()}
L.append("## Message rate, 64 messages in flight (8 bytes, one pair)\n")
L.append("One sender and one receiver: on this 2-core machine more pairs would oversubscribe "
         "the cores with busy-polling ranks (bench/mpi_msgrate pairs ranks 0-1, 2-3, ... and "
         f"sums the rates when run with more ranks, e.g. -np 4 --oversubscribe). Median of {runs} run(s).\n")
L.append("| transport | million messages/s | ratio to vader |")
L.append("|---|---|---|")
for t, v in mr.items():
    L.append(f"| {t} | {v:.3f} | {fmt(v / mr['vader']) if mr.get('vader') else 'n/a'} |")
L.append("")

fl = rows(os.path.join(out, "faults.csv"))[1:]
L.append("## MPI over hpam-medusa under loss\n")
L.append("Each loss rate applies to drops and to corruptions (caught by the CRC) alike; "
         "retransmission timeout 100 µs.\n")
L.append("| loss | 8 B latency (µs) | 4 KiB latency (µs) | 4 KiB bandwidth (MB/s) |")
L.append("|---|---|---|---|")
byloss = {}
for r in fl:
    byloss.setdefault(r[0], {})[(r[1], int(r[2]))] = float(r[3])
for p, d in byloss.items():
    L.append(f"| {p} | {fmt(d.get(('latency_us', 8)), 3)} | {fmt(d.get(('latency_us', 4096)), 3)} | "
             f"{fmt(d.get(('bandwidth_MBps', 4096)), 0)} |")
L.append("")

rma = report_goals.rma_medians(out)
L += report_goals.rma_section(out, rma)
coll = report_goals.coll_medians(out)
L += report_goals.coll_section(coll)

prof = os.path.join(out, "profile_send.csv")
groups = os.path.join(out, "profile_send_groups.csv")
sends = {}
if os.path.exists(prof):
    sends = {r[0]: int(r[1]) for r in rows(prof)[1:] if r[1].lstrip("-").isdigit()}
    L.append("## Profile: instructions inside MPI_Send (8-byte message)\n")
    L.append("`valgrind --tool=callgrind --toggle-collect=PMPI_Send` on both ranks of the 8-byte "
             "ping-pong, difference of 3 and 1 repetitions (10,000 more sends per rank): the "
             "sender's CPU work per message, repeatable on a noisy machine (waiting is not in it).\n")
    L.append("| transport | instructions per MPI_Send | ratio to vader |")
    L.append("|---|---|---|")
    for t, n in sends.items():
        L.append(f"| {t} | {n} | {fmt(n / sends['vader']) if sends.get('vader') else 'n/a'} |")
    if os.path.exists(groups):
        L.append("\nWhere the hpam-medusa send's instructions go (self cost by layer):\n")
        L.append("| layer | share |")
        L.append("|---|---|")
        for r in rows(groups):
            if float(r[1]) == 0:
                continue
            L.append(f"| {r[0]} | {r[1]}% |")
    L.append("")

# The UCX transport beside UCX's own shared-memory transports (bench/ucx_report.py).
import ucx_report  # noqa: E402

ucx_lines = ucx_report.section(out)
if ucx_lines:
    L.extend(ucx_lines)
    L.append("")

L += report_goals.goals_section(mpi, mr, rma, coll, sends, native, floor, floor_best)
if sends.get("vader") and sends.get("hpam-medusa"):
    L.append(f"\nProfile (above): an 8-byte MPI_Send executes {sends['hpam-medusa']} instructions over "
             f"hpam-medusa against {sends['vader']} over vader; the extra work is the emulated card "
             "(ring slots, block copy, RX_READY/RX_FREE handshakes), the request-reply protocol's "
             "bookkeeping and the CRC over the packet, in the shares listed above.")
if floor and native.get("medusa", {}).get("rtt"):
    nr = native["medusa"]["rtt"]
    L.append(f"\nNative round trip against the hardware floor: the 4-word request/reply takes "
             f"{fmt(nr, 0)} ns, {fmt(nr / floor, 1)}× the {fmt(floor, 0)} ns of a bare cache-line "
             f"round trip; the instructions of a send + receive on one core are "
             f"{fmt(cost['protocol_full'][0] if 'protocol_full' in cost else None, 0)} ns per round trip "
             "(cost table, both endpoints on one core), so most of the remainder is cache-line "
             f"traffic between the cores: about {fmt((nr - (cost['protocol_full'][0] if 'protocol_full' in cost else 0)) / (floor / 2), 0)} "
             "one-way line transfers' worth per round trip, where the bare minimum is 2.")
L.append("\nWhere short: per message the Medusa path crosses cores on more cache lines than vader "
         "(the sender reads the destination's RX_FREE cell and writes its RX_READY cell and block; "
         "the receiver reads RX_READY then the block, two dependent misses, and releases the block), "
         "each packet is answered by an acknowledgement, and a send + receive costs about "
         f"{cost['protocol_full'][1] // 2 if 'protocol_full' in cost else 'n/a'} "
         "instructions on one core (cost-by-feature table, callgrind). Large messages go by single-copy "
         "deposit (process_vm_readv), as vader's CMA path does, and reach parity.\n")
L.append("Plots: results/mpi_latency.png, results/mpi_bandwidth.png, results/logp_signature.png.\n")
import report_apps  # noqa: E402  the Split-C applications and GAM sections

L += report_apps.section(out)
with open(results_md, "w") as f:
    f.write("\n".join(L))
