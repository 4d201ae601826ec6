#!/usr/bin/env python3
"""Recovery time of mscale-exec: from an injected fault to the first step done after the restart, per
fault class (worker-crashed, worker-hung, gpu-lost) and per optimizer-state size, split into the phases
the executor itself reports on its recovery line (executor/RecoveryTimeline.h): detect, stop, move,
start, restore (boot included), first step.

usage: recovery_bench.py --build BUILD --topology FIXTURE.xml [--state-mib 1024,4096,8192] [--trials 8]
                         [--every 40] [--heartbeat-ms 200] [--baseline-build OLD_BUILD]
                         [--checkpoint-restarts N [--drop-caches]] [--bigmem-lock /tmp/bigmem.lock] [--standby]
                         [--memory-slots 2]

The script runs `mscale-exec run` over `mscale-train-sim` (5 ms steps, a snapshot every --every steps
to the executor's memory tier and the disk tier) and injects each fault from outside: SIGKILL of the
worker, SIGSTOP (found by missing heartbeats), `gpu N fault lost` in the sim control file (missing
slice heartbeats; the slice moves to another GPU).

detect = the injection (this script's clock) -> the executor's detection (`detected_unix_us`; for a
crash this is the kernel tearing the worker down until waitpid reports it); the other phases are the
executor's; total = detect + the executor's total. The aims (issue 15): a crashed worker <= 500 ms;
a hung worker or a lost GPU <= detection budget (heartbeat x misses) + 500 ms, printed as a ratio.

The floor (restart_floor, built beside the benchmarks) is measured at each size in the same run: the
kernel's share of a crash and restart with nothing of ours in the way (SIGKILL of a process holding the
state until waitpid, fork + exec + populating the state, copying it from a memfd). "vs floor" is a
fault's median total over the floor's; for a hang or a lost GPU the detection budget is added to the
floor, since no executor can see those sooner.

--baseline-build runs the same trials with another build's binaries in the same run (e.g. main before
a change); a build whose executor predates the timeline line is read from its older line.
--standby runs the trials twice with --build: a cold restart (the baseline) and a contract with a warm
standby worker (fault_tolerance.standby_worker), each trial injected once the standby waits.
--checkpoint-restarts N adds N restarts of executor and worker from the disk tier (--drop-caches: cold).
A state size is run only where MemAvailable covers the worker's state, the memory tier's slots
(--memory-slots, default 2), a standby's state with --standby, and 2 GiB to spare, and never below
18 GiB for 8 GiB states; sizes over 3 GiB of need hold --bigmem-lock.
"""
import argparse
import contextlib
import datetime
import fcntl
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "scripts", "recovery"))
from exec_faults import wait_for_standby, worker_of  # noqa: E402  (shared with the fault matrix)
CONTRACT = os.path.join(HERE, "..", "..", "test", "lit", "recovery", "Inputs", "exec-recovery.msc")
FAULTS = ("worker-crashed", "worker-hung", "gpu-lost")
PHASES = ("detect", "stop", "move", "start", "boot", "restore", "first_step", "total")
AIM_MS = 500.0
# The executor's recovery line: the sentence, then "timeline:" and key=value fields.
TIMELINE = re.compile(r"^(\S+) .* recovered from (\S+): step \d+ done [\d.]+ ms after the fault was detected; "
                      r"timeline: (.*)$")
# The line of executors from before the timeline (a --baseline-build of an older tree).
OLD_LINE = re.compile(r"^(\S+) .* recovered from (\S+): step \d+ done ([\d.]+) ms after the fault was detected "
                      r"\(stop ([\d.]+) ms, move ([\d.]+) ms, start ([\d.]+) ms, restore ([\d.]+) ms, "
                      r"first step ([\d.]+) ms\)")


def stamp(text):
    return datetime.datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ").replace(
        tzinfo=datetime.timezone.utc).timestamp()


def last_step(path):
    step = 0
    try:
        with open(path, "rb") as f:
            f.seek(max(0, os.path.getsize(path) - 4096))
            for line in f.read().decode(errors="replace").splitlines():
                if line.startswith("step "):
                    step = int(line.split()[1])
    except FileNotFoundError:
        pass
    return step


def recovery_lines(path):
    out = []
    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if TIMELINE.match(line) or OLD_LINE.match(line):
                out.append(line)
    return out


def phases_of(line, t0):
    """The phases (ms) of one recovery line, `t0` the injection (unix seconds)."""
    m = TIMELINE.match(line)
    if m:
        f = dict(kv.split("=", 1) for kv in m.group(3).split())
        p = {k: float(f[k + "_ms"]) for k in PHASES if k != "detect"}
        p["detect"] = (int(f["detected_unix_us"]) / 1e6 - t0) * 1000
        p["total"] += p["detect"]
        p["budget"] = float(f["heartbeat_ms"]) * int(f["misses"])
        return p
    m = OLD_LINE.match(line)
    stop, move, start, restore, first = (float(x) for x in m.group(4, 5, 6, 7, 8))
    total = (stamp(m.group(1)) - t0) * 1000  # the log's millisecond stamp: all this format offers
    return {"detect": total - float(m.group(3)), "stop": stop, "move": move, "start": start, "boot": None,
            "restore": restore, "first_step": first, "total": total, "budget": None}


def pct(values, q):
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q * (len(values) - 1))))]


def mem_available_gib():
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) / (1 << 20)
    return 0.0


@contextlib.contextmanager
def held(path):
    with open(path, "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def run_series(a, build, state_mib, label, standby=False):
    """One executor over one worker: a.trials of each fault, then the checkpoint restarts. With
    `standby`, the contract keeps a warm standby worker (fault_tolerance.standby_worker)."""
    exe = lambda n: os.path.join(build, "bin", n)
    work = tempfile.mkdtemp(prefix="msc-recovery-bench-")
    results = {}
    proc = None
    try:
        plan = os.path.join(work, "p.msp")
        contract = os.path.join(work, "recovery.msc")
        with open(CONTRACT) as src, open(contract, "w") as dst:
            # A contract name of its own: the lit tests run the same contract, and two executors of one
            # name share (and kill through, and remove) one cgroup.
            text = src.read().replace("heartbeat = 50ms", "heartbeat = %dms" % a.heartbeat_ms).replace(
                "contract lit_recovery uses", "contract recovery_bench_%d uses" % os.getpid())
            if standby:
                text = text.replace("heartbeat_misses = 3;", "heartbeat_misses = 3;\n    standby_worker = true;")
            dst.write(text)
        subprocess.run([exe("mscalec"), "--topology", a.topology, "-o", plan, contract], check=True,
                       stderr=subprocess.DEVNULL)
        data = os.path.join(work, "data")
        subprocess.run([exe("mscale-train-sim"), "--gen-data", data, "--samples", "2400", "--files", "8"], check=True,
                       stdout=subprocess.DEVNULL)
        control = os.path.join(work, "control")
        open(control, "w").close()
        exec_log, train_log = os.path.join(work, "exec.log"), os.path.join(work, "train.log")
        worker = [exe("mscale-train-sim"), "--data", data, "--steps", "10000000", "--snapshot-every", str(a.every),
                  "--snapshot-dir", os.path.join(work, "snaps"), "--keep", "2", "--log", train_log,
                  "--step-delay-ms", "5", "--state-mib", str(state_mib), "--quiet"]
        if a.memory_slots != 2:  # the default; a --baseline-build from before the option runs too
            worker[-1:-1] = ["--memory-slots", str(a.memory_slots)]
        env = dict(os.environ, MSCALE_SIM_CONTROL=control)

        def start(resume=False):
            return subprocess.Popen([exe("mscale-exec"), "run", "--log", exec_log, "--topology", a.topology,
                                     "--max-restarts", "1000"] + (["--resume"] if resume else []) +
                                    [plan, "--"] + worker, env=env, stdout=subprocess.DEVNULL,
                                    stderr=subprocess.DEVNULL)

        def wait_steps(n):
            target = last_step(train_log) + n
            deadline = time.time() + 600
            while last_step(train_log) < target:
                if time.time() > deadline:
                    raise SystemExit("the worker stopped making progress")
                time.sleep(0.005)

        proc = start()
        wait_steps(a.every + 2)
        gpu = 0
        for fault in FAULTS:
            for t in range(a.trials):
                wait_steps(a.every + 2)  # a fresh snapshot exists
                if standby and not wait_for_standby(exec_log, proc, 600):  # the standby is ready
                    raise SystemExit("no warm standby ready (mscale-exec status %s)" % proc.poll())
                before = len(recovery_lines(exec_log))
                t0 = time.time()
                if fault == "worker-crashed":
                    os.kill(worker_of(exec_log), signal.SIGKILL)
                elif fault == "worker-hung":
                    os.kill(worker_of(exec_log), signal.SIGSTOP)
                else:
                    with open(control, "a") as c:
                        c.write("gpu %d fault lost\n" % gpu)
                deadline = time.time() + 600
                while len(recovery_lines(exec_log)) == before:
                    if time.time() > deadline or proc.poll() is not None:
                        raise SystemExit("no recovery from %s (mscale-exec status %s)" % (fault, proc.poll()))
                    time.sleep(0.002)
                if fault == "gpu-lost":
                    with open(control, "w") as c:  # heal: the next trial loses the GPU now in use
                        c.write("".join("gpu %d fault none\n" % i for i in range(4)))
                    with open(exec_log) as log:
                        moves = [l for l in log if "moved off lost gpu" in l]
                    gpu = int(re.search(r"\(gpu (\d+), \d+ slices\)$", moves[-1].strip()).group(1))
                p = phases_of(recovery_lines(exec_log)[before], t0)
                results.setdefault(fault, []).append(p)
                print("%s %d MiB %s trial %d: total %.1f ms (%s)" % (
                    label, state_mib, fault, t, p["total"],
                    ", ".join("%s %.1f" % (k, p[k]) for k in PHASES[:-1] if p[k] is not None)))
        for t in range(a.checkpoint_restarts):
            wait_steps(a.every + 2)
            start_size = os.path.getsize(train_log)
            t0 = time.time()
            proc.kill()
            proc.wait()
            if a.drop_caches:
                with open("/proc/sys/vm/drop_caches", "w") as dc:
                    dc.write("3\n")
            proc = start(resume=True)
            deadline = time.time() + 600
            done = None
            while done is None:
                with open(train_log) as f:
                    f.seek(start_size)
                    text = f.read()
                at = text.find("# resume step")
                if at >= 0 and "\nstep " in text[at:]:
                    done = time.time()
                elif time.time() > deadline:
                    raise SystemExit("the checkpoint restart did not resume")
                else:
                    time.sleep(0.002)
            results.setdefault("checkpoint-restart", []).append({"total": (done - t0) * 1000})
            print("%s %d MiB checkpoint-restart trial %d: %.1f ms" % (label, state_mib, t, (done - t0) * 1000))
    finally:
        if proc and proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            proc.wait()
        shutil.rmtree(work, ignore_errors=True)
    return results


def restart_floor(build, state_mib, reps):
    """The floor's Markdown row and its median total in ms, or (None, None) without the tool."""
    tool = os.path.join(build, "bench", "restart_floor")
    if not os.access(tool, os.X_OK):
        return None, None
    row = subprocess.run([tool, "--mib", str(state_mib), "--reps", str(reps)], check=True,
                         capture_output=True, text=True).stdout.strip()
    return row, float(row.split("|")[3].split("/")[0])


def summarize(state_mib, label, results, baseline, budget, floor_ms=None):
    print("\n%s, state %d MiB, heartbeat %d ms: median / P95 ms" % (label, state_mib, results["_hb"]))
    print("| fault | n | total | aim | total / aim | vs baseline | vs floor | %s |" % " | ".join(PHASES[:-1]))
    print("|---|---|---|---|---|---|---|" + "---|" * (len(PHASES) - 1))
    for fault, rows in results.items():
        if fault.startswith("_"):
            continue
        totals = [r["total"] for r in rows]
        aim = AIM_MS if fault != "worker-hung" and fault != "gpu-lost" else budget + AIM_MS
        aim_text = "-" if fault == "checkpoint-restart" else (
            "%.0f" % aim if fault == "worker-crashed" else "%.0f + %.0f" % (budget, AIM_MS))
        ratio = "-" if fault == "checkpoint-restart" else "%.2f / %.2f" % (
            statistics.median(totals) / aim, pct(totals, 0.95) / aim)
        base = baseline.get(fault) if baseline else None
        vs = "%.2fx" % (statistics.median(totals) / statistics.median(r["total"] for r in base)) if base else "-"
        detection = budget if fault in ("worker-hung", "gpu-lost") else 0
        vs_floor = "%.2fx" % (statistics.median(totals) / (floor_ms + detection)) if floor_ms else "-"
        cells = []
        for k in PHASES[:-1]:
            vals = [r[k] for r in rows if r.get(k) is not None]
            cells.append("%.1f / %.1f" % (statistics.median(vals), pct(vals, 0.95)) if vals else "-")
        print("| %s | %d | %.1f / %.1f | %s | %s | %s | %s | %s |" % (
            fault, len(rows), statistics.median(totals), pct(totals, 0.95), aim_text, ratio, vs, vs_floor,
            " | ".join(cells)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--baseline-build")
    ap.add_argument("--topology", required=True)
    ap.add_argument("--trials", type=int, default=8)
    ap.add_argument("--state-mib", default="1024")
    ap.add_argument("--every", type=int, default=40)
    ap.add_argument("--heartbeat-ms", type=int, default=200)
    ap.add_argument("--checkpoint-restarts", type=int, default=0)
    ap.add_argument("--drop-caches", action="store_true")
    ap.add_argument("--bigmem-lock", default="/tmp/bigmem.lock")
    ap.add_argument("--memory-slots", type=int, default=2,
                    help="the worker's memory-tier slots (mscale-train-sim --memory-slots): 1 lets a state of half "
                         "the node's memory be measured")
    ap.add_argument("--standby", action="store_true",
                    help="compare a warm standby worker (fault_tolerance.standby_worker) with a cold restart, "
                         "both of --build, in the same run")
    a = ap.parse_args()
    sys.stdout.reconfigure(line_buffering=True)
    print("load average at start: %s" % " ".join(open("/proc/loadavg").read().split()[:3]))
    for state_mib in (int(s) for s in a.state_mib.split(",")):
        # The worker's state, the memory tier's slots (and a standby's state), headroom.
        need = state_mib * (1 + a.memory_slots + (1 if a.standby else 0)) / 1024 + 2
        floor = 18 if state_mib >= 8192 else 0
        lock = held(a.bigmem_lock) if need > 3 else contextlib.nullcontext()
        with lock:
            avail = mem_available_gib()
            if avail < max(need, floor):
                print("\nstate %d MiB: not run: needs %.1f GiB available (at least %d), MemAvailable is %.1f GiB" %
                      (state_mib, need, floor, avail))
                continue
            baseline = None
            if a.baseline_build or a.standby:
                baseline = run_series(a, a.baseline_build or a.build, state_mib, "baseline")
                baseline["_hb"] = a.heartbeat_ms
            results = run_series(a, a.build, state_mib, "standby" if a.standby else "build", standby=a.standby)
            results["_hb"] = a.heartbeat_ms
            floor_row, floor_ms = restart_floor(a.build, state_mib, max(a.trials, 5))
        # The detection budget as the executor reports it (heartbeat x misses of the plan).
        budget = next(r["budget"] for f in FAULTS for r in results.get(f, []) if r.get("budget"))
        if baseline:
            summarize(state_mib, "baseline (%s)" % (a.baseline_build or "cold restart"), baseline, None, budget,
                      floor_ms)
        summarize(state_mib, "%s (%s)" % ("standby" if a.standby else "build", a.build), results, baseline, budget,
                  floor_ms)
        if floor_row:
            print("\nthe floor at %d MiB, median / P95 ms (restart_floor):\n%s" % (state_mib, floor_row))
    print("\nload average at end: %s" % " ".join(open("/proc/loadavg").read().split()[:3]))


if __name__ == "__main__":
    main()
