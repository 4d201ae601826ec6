#!/usr/bin/python3
"""What exact resume costs and saves for the example PyTorch job (examples/python/train.py).

1. Step-time overhead of snapshots: the training loop with ExactResume snapshotting every N steps
   (memory tier synchronously, disk tier in a background thread) against the same loop without
   snapshots, in alternating runs (A B A B ...), median of the per-pair ratios.
2. Fault to first resumed step (detection included): the job under `mscale-exec run`, its worker
   killed with SIGKILL several times; the time from the kill to the first step the restarted worker
   completes. The same for the baseline in the same run: the job checkpointing with a plain
   torch.save of the same state at the same cadence and restarting with torch.load (also
   restarted by mscale-exec, so start-up costs are equal), and the job with a warm standby worker
   (the contract's standby_worker: the next worker has imported torch and built its model and
   loader before the fault; each kill waits until it is ready). Needs root.

usage: resume_bench.py --build BUILD [--work DIR] [--steps 512] [--pairs 5] [--every 128,10]
                       [--kills 5] [--skip-recovery] [--skip-overhead]
Prints Markdown tables (medians; ratios against the baseline of the same run).
"""
import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(REPO, "scripts", "recovery"))
from exec_faults import wait_for_standby, worker_of  # noqa: E402  (the running worker, never a standby)
EXAMPLES = os.path.join(REPO, "examples", "python")
PYTHON = "/usr/bin/python3"


def train_cmd(a, data, log, timing, extra):
    return [PYTHON, os.path.join(EXAMPLES, "train.py"), "--data", data, "--steps", str(a.steps), "--log", log,
            "--timing", timing] + extra


def loop_timing(timing):
    """(loop seconds, seconds the training thread spent in snapshots, snapshots taken)."""
    with open(timing) as f:
        for line in f:
            if line.startswith("loop-seconds "):
                w = line.split()
                return float(w[1]), float(w[5]), int(w[7])
    raise SystemExit("no loop-seconds in " + timing)


def overhead(a, data, work, env):
    """Two measures from the same runs: the A/B ratio of loop times (what the aim asks; noisy on a
    shared machine, where runs differ by a few percent either way), and the share of the loop the
    training thread spent in snapshots (the synchronous part; the disk tier's thread runs beside it)."""
    print("## Step-time overhead of snapshots (%d steps, %d alternating pairs)\n" % (a.steps, a.pairs))
    print("| snapshot every | loop time with (median) | without, the baseline (median) | A/B ratio (median of pairs) "
          "| time in snapshots (median share) | per snapshot (median) |")
    print("|---|---|---|---|---|---|")
    for every in [int(e) for e in a.every.split(",")]:
        ratios, withs, withouts, shares, each = [], [], [], [], []
        for pair in range(a.pairs):
            times = {}
            for mode in ("with", "without") if pair % 2 == 0 else ("without", "with"):
                run = os.path.join(work, "overhead-%d-%d-%s" % (every, pair, mode))
                os.makedirs(run)
                timing = os.path.join(run, "timing")
                extra = ["--snapshot-dir", os.path.join(run, "snaps"), "--every", str(every)] if mode == "with" \
                    else ["--no-snapshots"]
                # The memory tier is a memfd this script owns, as under mscale-exec: it is gone when
                # closed, instead of a named region left in /dev/shm by every run.
                memfd = os.memfd_create("resume-bench")
                try:
                    subprocess.run(train_cmd(a, data, os.path.join(run, "train.log"), timing, extra),
                                   env=dict(env, MSCALE_SNAPSHOT_MEMFD=str(memfd)), pass_fds=(memfd,),
                                   check=True, stderr=subprocess.DEVNULL)
                finally:
                    os.close(memfd)
                times[mode] = loop_timing(timing)
            loop, in_snapshots, count = times["with"]
            withs.append(loop)
            withouts.append(times["without"][0])
            ratios.append(loop / times["without"][0])
            shares.append(in_snapshots / loop)
            each.append(in_snapshots / max(1, count))
        print("| %d steps (%d snapshots) | %.3f s | %.3f s | %.4f | %.3f%% | %.1f ms |" % (
            every, a.steps // every, statistics.median(withs), statistics.median(withouts),
            statistics.median(ratios), statistics.median(shares) * 100, statistics.median(each) * 1000))
    print()


def steps_logged(log):
    try:
        with open(log) as f:
            return [int(line.split()[1]) for line in f if line.startswith("step ")]
    except FileNotFoundError:
        return []


def first_steps(timing):
    try:
        with open(timing) as f:
            return [float(line.split()[1]) for line in f if line.startswith("first-step ")]
    except FileNotFoundError:
        return []


MODES = ("mscale", "mscale, warm standby", "torch.save")


def wait_until(predicate, proc, timeout=120):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if predicate():
            return True
        if proc.poll() is not None:
            return False
        time.sleep(0.002)
    return False


def recovery(a, data, work, env, plans):
    """`plans`: the contract's plan, and the plan of its variant with a warm standby (whose contract
    file train.py is pointed at through MSCALE_EXAMPLE_CONTRACT)."""
    print("## Fault to first resumed step (SIGKILL of the worker under mscale-exec, %d kills each)\n" % a.kills)
    results = {}
    for mode in MODES:
        run = os.path.join(work, "recovery-" + mode.replace(".", "-").replace(" ", "-"))
        os.makedirs(run)
        log, timing = os.path.join(run, "train.log"), os.path.join(run, "timing")
        exec_log = os.path.join(run, "exec.log")
        extra = ["--checkpoint", os.path.join(run, "checkpoint.pt"), "--every", "10"] if mode == "torch.save" \
            else ["--snapshot-dir", os.path.join(run, "snaps"), "--every", "10"]
        plan, contract = plans[mode == "mscale, warm standby"]
        cmd = [os.path.join(a.build, "bin", "mscale-exec"), "run", "--log", exec_log,
               "--max-restarts", str(a.kills + 2), plan, "--"] + train_cmd(a, data, log, timing, extra)
        proc = subprocess.Popen(cmd, env=dict(env, MSCALE_EXAMPLE_CONTRACT=contract), stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        deltas = []
        for k in range(a.kills):
            target = 25 + k * 40  # a few steps after a snapshot of step 20, 60, ...: some replay, as in life
            if not wait_until(lambda: target in steps_logged(log), proc):
                raise SystemExit("%s: mscale-exec ended before step %d" % (mode, target))
            if mode == "mscale, warm standby" and not wait_for_standby(exec_log, proc):
                raise SystemExit("%s: no standby ready before kill %d" % (mode, k + 1))
            before = len(first_steps(timing))
            killed = time.time()
            os.kill(worker_of(exec_log), signal.SIGKILL)
            if not wait_until(lambda: len(first_steps(timing)) > before, proc):
                raise SystemExit("%s: no resumed step after kill %d" % (mode, k + 1))
            deltas.append(first_steps(timing)[-1] - killed)
        proc.wait()
        results[mode] = deltas
        print("%s: %s s" % (mode, ", ".join("%.3f" % d for d in deltas)), file=sys.stderr)
    print("| restart from | median fault to first resumed step | max | ratio to torch.save |")
    print("|---|---|---|---|")
    base = statistics.median(results["torch.save"])
    for mode in MODES:
        m = statistics.median(results[mode])
        print("| %s | %.3f s | %.3f s | %.2f |" % (mode, m, max(results[mode]), m / base))
    print()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", required=True)
    ap.add_argument("--work")
    ap.add_argument("--steps", type=int, default=512)
    ap.add_argument("--pairs", type=int, default=5)
    ap.add_argument("--every", default="128,10", help="snapshot cadences to measure (128 is the stdlib's)")
    ap.add_argument("--kills", type=int, default=5)
    ap.add_argument("--skip-recovery", action="store_true")
    ap.add_argument("--skip-overhead", action="store_true")
    a = ap.parse_args()
    a.build = os.path.abspath(a.build)
    work = a.work or tempfile.mkdtemp(prefix="resume-bench-")
    env = dict(os.environ, PYTHONPATH=os.path.join(REPO, "python"), MSCALE_BIN=os.path.join(a.build, "bin"))
    data = os.path.join(work, "data")
    subprocess.run([PYTHON, os.path.join(EXAMPLES, "make_dataset.py"), data, "--samples", "256", "--seed", "1"],
                   check=True, stdout=subprocess.DEVNULL)
    if not a.skip_overhead:
        overhead(a, data, work, env)
    if not a.skip_recovery:
        if os.getuid() != 0:
            print("(fault to first step: skipped, mscale-exec needs root)")
            return 0
        contract = os.path.join(EXAMPLES, "train.msc")
        standby_contract = os.path.join(work, "train-standby.msc")
        with open(contract) as src, open(standby_contract, "w") as dst:
            dst.write(src.read().replace("heartbeat_misses = 4;", "heartbeat_misses = 4;\n    standby_worker = true;"))
        plans = []
        for source in (contract, standby_contract):
            plan = os.path.splitext(os.path.join(work, os.path.basename(source)))[0] + ".msp"
            subprocess.run([os.path.join(a.build, "bin", "mscalec"), "--topology", "live", "-o", plan, source],
                           check=True)
            plans.append((plan, source))
        recovery(a, data, work, env, plans)
    print("work directory: " + work, file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
