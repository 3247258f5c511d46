"""Sections of bench/RESULTS.md for issues 11 and 26 (small messages as fast
as vader), used by bench/report/results.py: the cache-line floor and the machine's
load during the run, the goals table, MPI RMA latency, collectives with
hpam's protocol counts per operation, and the instruction profile of an
8-byte MPI_Send; every figure beside its ratio to vader at the same
cache-line floor (bench/report/common.py)."""
import os
import statistics

from report import data
from report.common import BASE, HPAM, fmt, rows, table

RMA_T = [BASE] + HPAM
SEND_LIMITS = {"hpam-medusa": 600, "hpam-hamlyn": 700}  # issue 26
RECEIVE_LIMIT = 650  # per received message, ob1's callback included (issue 26)


def size_name(n):
    for unit, shift in (("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return f"{n >> shift} {unit}"
    return f"{n} B"


def floor_lines(f):
    if "rtt_ns" not in f:
        return ["* Cache-line round trip: not measured."]
    L = [f"* Cache-line round trip between two processes pinned to a core each "
         f"(bench/line_pingpong: one line each way, nothing else): **{fmt(f['rtt_ns'], 1)} ns**, "
         f"the median of {f.get('bursts', 0):.0f} bursts of 1000 (10%–90%: "
         f"{fmt(f.get('rtt_p10_ns'), 1)}–{fmt(f.get('rtt_p90_ns'), 1)} ns, fastest "
         f"{fmt(f.get('rtt_best_ns'), 1)} ns): the floor under any shared-memory request/reply "
         "on this machine."]
    p = f["probes"]
    if p:
        L.append(f"* The same floor probed before each of the {len(p)} steps of the run (50 bursts "
                 f"each): median {fmt(statistics.median(p), 1)} ns, min {fmt(min(p), 1)}, max "
                 f"{fmt(max(p), 1)}. It moves with where the host runs the two vCPUs (levels of "
                 "about 55, 110–145 and 420–520 ns on the KVM guest of bench/line_floor.hpp): "
                 "the reason every ratio here divides figures measured at the same floor.")
    return L


def load_line(f):
    """One bullet: the 1-minute load average sampled at every step."""
    v = f["load"]
    if not v:
        return "* Load during the run: not recorded."
    return (f"* Load during the run (1-minute load average at each of {len(v)} steps, "
            f"{os.cpu_count()} cores): median **{statistics.median(v):.1f}**, "
            f"min {min(v):.1f}, max {max(v):.1f}. Other agents' builds and tests share the "
            "cores, so timings are noisy; instruction counts (callgrind) and protocol counts "
            "are not.")


def rma_section(out, rma):
    if not rma:
        return []
    ts = [t for t in RMA_T if t in rma.transports()]
    L = ["## MPI RMA latency on MPI_Win_create windows (µs per operation + flush)\n"]
    L += table(["operation", "bytes"] + ts + [f"{t}/vader" for t in ts[1:]],
               [[k[0], k[1]] + [fmt(rma.value(t, k), 3) for t in ts] + rma.ratio_cells(ts[1:], k)
                for k in rma.keys()])
    oscs = {}
    for r in rows(os.path.join(out, "rma_osc.csv"))[1:]:
        oscs.setdefault(r[0], set()).add(r[2])
    pt2pt = [t for t, o in oscs.items() if "pt2pt" in o]
    note = ("Every transport runs under osc/rdma (`--mca osc rdma`: MPI RMA on the BTL's put, "
            "get and atomics; rank 0 to rank 1 under MPI_Win_lock_all, MPI_LONG operands). "
            "Debian's Open MPI 4.1.4 has crashed in MPI_Compare_and_swap under osc/rdma over "
            "vader (the Split-C `components` application, MPI_UINT64_T on its own and remote "
            "windows); bench/run falls back to osc/pt2pt for that operation when it fails. ")
    if pt2pt:
        note += f"In this run it did for: {', '.join(pt2pt)} (that row is osc/pt2pt).\n"
    else:
        note += "In this run it did not fail: every row is osc/rdma.\n"
    return L + ["", note]


COLL_OPS = [("barrier", "barrier"), ("allreduce_8", "allreduce 8 B"), ("alltoall_8", "alltoall 8 B")]
COUNTS = [("packets", "packets"), ("requests_sent", "requests"), ("replies_sent", "replies"),
          ("acks_sent", "acks"), ("acks_piggybacked", "acks riding on requests"),
          ("acks_combined", "acks inside another ack packet"),
          ("stalls", "stalls"), ("busy_returns", "busy (queued)"),
          ("retransmissions", "retransmissions")]


def coll_section(coll):
    if not coll:
        return []
    ranks = sorted({k[1] for k in coll.keys()})
    L = ["## Collectives: latency (µs) and hpam's protocol work per operation\n"]
    L.append("bench/mpi_coll: median over repetitions of the slowest rank's time per operation, "
             "median of the runs. Beyond 2 ranks the ranks share 2 cores (oversubscribed, "
             "Open MPI yields when idle). Unbound, a run's time follows where the scheduler "
             "puts the ranks: three on one core for most of the run takes about twice as long "
             "as two and two, on every transport, and which a run gets is a draw "
             "(docs/decisions.md, h31a), so a median of 3 unbound runs can compare placements "
             "rather than transports: at 4 ranks bench/run makes three unbound runs per round, "
             "the transports' order rotated at each. The rows marked pinned run the 4 ranks pinned two per "
             "core (`--map-by core --bind-to core:overload-allowed`), the same placement for "
             "every transport: with little else running their ratios are the transports' "
             "own, but a pinned rank cannot leave a core another program holds, so with other "
             "work on the machine every wait can become a time slice (milliseconds per "
             "operation on every transport, and ratios near 1 that mean nothing); the goal "
             "stays on the unbound rows. For 8 ranks the protocol counts below are the "
             "figure.\n")
    ts = [BASE] + HPAM
    keys = [(op, name, n, m) for op, name in COLL_OPS for n in ranks for m in ("us", "us_pinned")
            if coll.value(BASE, (op, n, m)) is not None]
    L += table(["operation", "ranks"] + ts + [f"{t}/vader" for t in HPAM],
               [[name, f"{n} pinned" if m == "us_pinned" else n] +
                [fmt(coll.value(t, (op, n, m)), 3) for t in ts] +
                coll.ratio_cells(HPAM, (op, n, m)) for op, name, n, m in keys])
    L.append("\nPackets per operation summed over all ranks (MPI_T pvars btl_hpam_*: requests, "
             "replies, acknowledgements but those that rode on a request, retransmissions and "
             "reflected duplicates; stalls and busy returns are sends that found every request "
             "instance to a peer in use). Counts of one operation inside a loop of them, "
             "divided by the loop length.\n")
    body = []
    for op, name in COLL_OPS:
        for n in ranks:
            for t in HPAM:
                v = [coll.value(t, (op, n, m)) for m, _ in COUNTS]
                if any(x is not None for x in v):
                    body.append([name, n, t[5:]] + [fmt(x) for x in v])
    return L + table(["operation", "ranks", "card"] + [n for _, n in COUNTS], body) + [""]


def profile_section(out, sends):
    if not sends:
        return []
    L = ["## Profile: instructions inside MPI_Send (8-byte message)\n"]
    L.append("`valgrind --tool=callgrind --toggle-collect=PMPI_Send` on both ranks of the 8-byte "
             "ping-pong, difference of 3 and 1 repetitions (10,000 more sends per rank): the "
             "sender's CPU work per message, repeatable on a noisy machine (waiting is not in it).\n")
    L += table(["transport", "instructions per MPI_Send", "ratio to vader", "goal"],
               [[t, fmt(sends.value(t, "send"), 0), fmt(sends.ratio(t, "send")),
                 f"≤ {SEND_LIMITS[t]}" if t in SEND_LIMITS else ""] for t in sends.transports()])
    shares = {t: {r[0]: r[1] for r in rows(os.path.join(out, f"profile_send_groups_{t}.csv"))}
              for t in HPAM}
    layers = sorted({g for s in shares.values() for g in s if float(s[g]) > 0},
                    key=lambda g: -max(float(s.get(g, 0)) for s in shares.values()))
    if layers:
        L.append("\nWhere hpam's send instructions go (self cost by layer, share of the total):\n")
        L += table(["layer"] + HPAM, [[g] + [f"{shares[t][g]}%" if g in shares[t] else "n/a"
                                             for t in HPAM] for g in layers])
    received = data.receives(out)
    if received:
        L.append("\nThe receiving side: instructions per received 8-byte message, callgrind "
                 "collecting inside `endpoint<Card>::serve_arrivals` (the packets taken, the AM "
                 "handler, ob1's callback, the acks launched; idle polls not counted), both ranks, "
                 "3 and 1 repetitions. It varies by some tens between runs: an ack that waited "
                 "`ack_hold_polls` polls goes as a packet of its own instead of riding on the "
                 "reply, as the timing has it.\n")
        L += table(["transport", "instructions per received message", "of which ob1's callback",
                    "goal"],
                   [[t, v, o, f"≤ {RECEIVE_LIMIT}"] for t, (v, o) in received.items()])
    return L + [""]



def _ratio_goal(runs, keys, higher, limit, unit, digits, where=None):
    """evaluate(t) -> (shown, ratio, met) at the key of t's worst ratio"""
    def evaluate(t):
        q, k = runs.worst(t, keys, higher)
        if q is None:
            return None
        _, a, b, floor = runs.detail(t, k)
        shown = f"{fmt(a, digits)} vs vader {fmt(b, digits)} {unit}"
        if where:
            shown += f", at {where(k)}"
        shown += f"; floor {floor:.0f} ns" if floor else "; no pair at one floor"
        return shown, q, q >= limit if higher else q <= limit
    return evaluate


def _counts_goal(coll, op, n):
    def evaluate(t):
        v = {m: coll.value(t, (op, n, m)) for m in ("packets", "acks_sent", "stalls", "retransmissions")}
        if v["packets"] is None:
            return None
        return (f"{fmt(v['packets'])} packets, {fmt(v['acks_sent'])} acks, {fmt(v['stalls'])} "
                f"stalls, {fmt(v['retransmissions'])} retransmissions", None, None)
    return evaluate


def _sends_goal(sends):
    def evaluate(t):
        v = sends.value(t, "send")
        if v is None:
            return None
        return (f"{v:.0f} vs vader {fmt(sends.value(BASE, 'send'), 0)}", sends.ratio(t, "send"),
                v <= SEND_LIMITS[t])
    return evaluate


def _receives_goal(received):
    def evaluate(t):
        if t not in received:
            return None
        v, ob1 = received[t]
        return f"{v} (ob1's callback {ob1})", None, v <= RECEIVE_LIMIT
    return evaluate


def _native_goal(native, limit):
    def evaluate(t):
        d = native.get(t[5:], {})
        if not d.get("over_floor"):
            return None
        return (f"{fmt(d['rtt_ns'], 0)} vs floor {fmt(d['floor_ns'], 0)} ns", d["over_floor"],
                d["over_floor"] <= limit)
    return evaluate


def goals(fig):
    """(figure, target, evaluate) for each figure of issue 26, and issue 11's
    RMA atomics and native round trip (fig: data.load)"""
    mpi, mr, rma, coll = fig.mpi, fig.mr, fig.rma, fig.coll

    def sized(kind, lo, hi):
        return [k for k in mpi.keys() if k[0] == kind and lo <= k[1] <= hi]
    at_size = lambda k: size_name(k[1])
    g = [("MPI latency, 0–512 B", "≤ 1.25× vader",
          _ratio_goal(mpi, sized("latency_us", 0, 512), False, 1.25, "µs", 3, at_size)),
         ("MPI latency, 4–16 KiB", "≤ 1.0× vader",
          _ratio_goal(mpi, sized("latency_us", 4096, 16384), False, 1.0, "µs", 3, at_size)),
         ("message rate, 8 B, 64 in flight, one pair", "≥ 0.8× vader",
          _ratio_goal(mr, [8], True, 0.8, "M msg/s", 2)),
         ("streaming bandwidth, 1–64 KiB", "≥ 0.8× vader",
          _ratio_goal(mpi, sized("bandwidth_MBps", 1024, 65536), True, 0.8, "MB/s", 0, at_size)),
         ("streaming bandwidth, ≥ 256 KiB", "≥ 0.95× vader",
          _ratio_goal(mpi, sized("bandwidth_MBps", 262144, 1 << 40), True, 0.95, "MB/s", 0, at_size)),
         ("fetch-and-op latency (MPI_Win_create)", "≤ 1.2× vader",
          _ratio_goal(rma, [("fetch_and_op", 8)], False, 1.2, "µs", 3)),
         ("compare-and-swap latency (MPI_Win_create)", "≤ 1.2× vader",
          _ratio_goal(rma, [("compare_and_swap", 8)], False, 1.2, "µs", 3))]
    for op, name in COLL_OPS:
        g.append((f"{name}, 2 and 4 ranks", "≤ 1.3× vader",
                  _ratio_goal(coll, [(op, 2, "us"), (op, 4, "us")], False, 1.3, "µs", 3,
                              lambda k: f"{k[1]} ranks")))
    for op, name in COLL_OPS:
        g.append((f"{name}, 8 ranks: protocol counts per operation", "reported",
                  _counts_goal(coll, op, 8)))
    g.append(("instructions per 8-byte MPI_Send (callgrind)", "≤ 600 medusa, ≤ 700 hamlyn",
              _sends_goal(fig.sends)))
    g.append(("instructions per received 8-byte message, ob1's callback included (callgrind)",
              f"≤ {RECEIVE_LIMIT}", _receives_goal(fig.receives)))
    g.append(("native 4-word round trip (bench/am_bench)", "≤ 2× cache-line floor",
              _native_goal(fig.native, 2.0)))
    return g


def goals_section(fig):
    """The goals, one row each: per NIC model the figure where its
    ratio is worst over the sizes, operations or rank counts a goal covers."""
    body = []
    for name, target, evaluate in goals(fig):
        cells = [name, target]
        for t in HPAM:
            got = evaluate(t)
            if got is None:
                cells += ["not measured", "", ""]
                continue
            shown, q, ok = got
            cells += [shown, fmt(q) if q is not None else "",
                      "reported" if ok is None else ("✓ met" if ok else "✗ not met")]
        body.append(cells)
    L = ["## Goals of issue 26 (small messages; issue 11's for the RMA atomics and the native round trip)\n"]
    L.append("Per NIC model: hpam's figure beside vader's (for the native round trip, beside the "
             "cache-line floor measured with it), the ratio, and whether the goal is met. Where a "
             "goal covers several sizes, operations or rank counts, the row shows the worst ratio "
             "and where it is. A ratio is the median over the pairs of runs, hpam's and vader's, "
             "made at the same cache-line floor (probed before and after each run, within "
             "25%; the floor is shown), and only where no pair was, over the runs made one right "
             "after the other (\"no pair at one floor\"); the figures shown are the medians of the runs "
             "that took part. Instructions are judged by their count, with the ratio to vader "
             "beside it.\n")
    L += table(["figure", "goal", "hpam-medusa", "× base", "medusa", "hpam-hamlyn", "× base",
                "hamlyn"], body)
    L.append("\nThe measured reasons where a goal is not met are in the sections below: the "
             "instructions of a send by layer (Profile), the packets, acknowledgements and "
             "stalls per collective operation (Collectives), and the cache-line transfers per "
             "native round trip (Native active messages).\n")
    return L
