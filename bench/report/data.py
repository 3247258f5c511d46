"""The figures of one bench/run results directory, read from its CSVs:
load(out) is what bench/report/results.py writes RESULTS.md from and
what bench/report/compare_runs.py sets side by side for several runs."""
import os
from types import SimpleNamespace

from report.common import BASE, HPAM, Runs, per_run_files, rows, same_floor

T = [BASE, "tcp"] + HPAM  # the MPI transports, in the columns' order


def floors_of(out):
    """{(figure, transport, run): ns}: the cache-line floor probed before and
    after one run of one benchmark (floors.csv), where the two agree."""
    f = {}
    for r in rows(os.path.join(out, "floors.csv"))[1:]:
        if len(r) == 5 and r[3] and r[4] and same_floor(float(r[3]), float(r[4])):
            f[(r[0], r[1], int(r[2]))] = (float(r[3]) + float(r[4])) / 2
    return f


def _mpi(out, floors):
    """MPI ping-pong latency and bandwidth: Runs keyed (kind, bytes); the
    sizes below mpi_pingpong's come from mpi_msgrate --sizes' streams (the
    same 64 sends in flight), in the same run."""
    mpi = Runs()
    for t in T:
        for r, p in per_run_files(out, "mpi", t).items():
            for row in rows(p)[1:]:
                mpi.add(t, (row[0], int(row[1])), r, row[2], floors.get(("mpi", t, r)))
        for r, p in per_run_files(out, "stream", t).items():
            for row in rows(p)[1:]:
                key = (row[0], int(row[1]))
                if row[0] == "bandwidth_MBps" and r not in mpi.d.get(t, {}).get(key, {}):
                    mpi.add(t, key, r, row[2], floors.get(("stream", t, r)))
    return mpi


def _msgrate(out, floors):
    """Runs keyed 8 (million messages/s) and, over hpam, ("count", name):
    the protocol's counters per message in the same stream."""
    mr = Runs()
    for r in rows(os.path.join(out, "msgrate.csv"))[1:]:
        if len(r) == 3 and r[2]:
            mr.add(r[0], 8, int(r[1]), r[2], floors.get(("stream", r[0], int(r[1]))))
    for t in HPAM:
        for run, p in per_run_files(out, "stream", t).items():
            for r in rows(p)[1:]:
                if r[0].startswith("count_"):
                    mr.add(t, ("count", r[0][6:]), run, r[2])
    return mr


def _native(out):
    """{nic: {metric: value, "bw": {bytes: MB/s}}} from am_bench --csv"""
    native = {}
    for nic in ["medusa", "hamlyn"]:
        d = {"bw": {}}
        for r in rows(os.path.join(out, f"native_{nic}.csv"))[1:]:
            if r[0] == "bandwidth_MBps":
                d["bw"][int(r[1])] = float(r[2])
            else:
                d[r[0]] = float(r[2])
        if len(d) > 1:
            native[nic] = d
    return native


def _rma(out, floors):
    """Runs keyed (op, bytes): µs per operation + flush"""
    rma = Runs()
    for t in [BASE] + HPAM:
        for r, p in per_run_files(out, "rma", t).items():
            for row in rows(p)[1:]:
                rma.add(t, (row[0], int(row[1])), r, row[2], floors.get(("rma", t, r)))
    return rma


def _coll(out, floors):
    """Runs keyed (op, ranks, metric): µs per operation (us; us_pinned: the
    ranks pinned two per core, probed as coll4p), or counts per operation"""
    coll = Runs()
    for r in rows(os.path.join(out, "coll.csv"))[1:]:
        if len(r) == 6:
            figure = f"coll{r[3]}" + ("p" if r[4] == "us_pinned" else "")
            coll.add(r[0], (r[2], int(r[3]), r[4]), int(r[1]), r[5],
                     floors.get((figure, r[0], int(r[1]))))
    return coll


def _sends(out):
    """Runs keyed "send": instructions per 8-byte MPI_Send (one profile run)"""
    sends = Runs()
    for r in rows(os.path.join(out, "profile_send.csv"))[1:]:
        if r[1].lstrip("-").isdigit():
            sends.add(r[0], "send", 1, r[1])
    return sends


def receives(out):
    """{transport: (instructions per received 8-byte message, ob1's callback's share)}"""
    return {r[0]: (int(r[1]), int(r[2])) for r in rows(os.path.join(out, "profile_receive.csv"))[1:]
            if len(r) == 3 and r[1].isdigit() and r[2].isdigit()}


def _floor(out):
    """bench/line_pingpong's figures, the floor probed at every step
    ("probes") and the 1-minute load average there ("load")."""
    f = {r[0]: float(r[1]) for r in rows(os.path.join(out, "line_pingpong.csv"))[1:]}
    steps = rows(os.path.join(out, "load.csv"))[1:]
    f["probes"] = [float(r[5]) for r in steps if len(r) > 5 and r[5]]
    f["load"] = [float(r[2]) for r in steps]
    return f


def load(out):
    floors = floors_of(out)
    return SimpleNamespace(
        mpi=_mpi(out, floors), mr=_msgrate(out, floors), native=_native(out),
        rma=_rma(out, floors), coll=_coll(out, floors), sends=_sends(out), receives=receives(out),
        floor=_floor(out),
        cost={r[0]: (float(r[1]), int(r[2])) for r in rows(os.path.join(out, "cost.csv"))[1:]})
