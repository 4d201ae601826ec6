#!/usr/bin/env python3
"""Recovery time of mscale-exec: from an injected fault to the first step done after the restart,
split into detection, stop, move, start, restore and first step, for each fault class; and, measured
in the same run as the baseline, a checkpoint restart: the executor and worker both gone, a new
`mscale-exec run --resume` that applies the plan and restores from the disk tier.

usage: recovery_bench.py --build BUILD --topology FIXTURE.xml [--trials 20] [--state-mib 0]
                         [--heartbeat-ms 200] [--drop-caches]
--heartbeat-ms sets the plan's heartbeat (200 ms is the stdlib's; detection of a lost GPU or a hung
worker takes 3 of them). --drop-caches empties the page cache before each checkpoint restart, so the
baseline reads its snapshot from the device as a restart on another node would.
Prints one line per trial and a summary table (median, P95) in Markdown.
"""
import argparse
import datetime
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
CONTRACT = os.path.join(HERE, "..", "..", "test", "lit", "recovery", "Inputs", "exec-recovery.msc")
RECOVERED = re.compile(r"^(\S+) .* recovered from (\S+): step \d+ done ([\d.]+) ms after the fault was detected "
                       r"\(stop ([\d.]+) ms, move ([\d.]+) ms, start ([\d.]+) ms, restore ([\d.]+) ms, "
                       r"first step ([\d.]+) ms\)(?:; detection took ([\d.]+) ms)?")


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


def worker_of(pid):
    with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
        kids = f.read().split()
    return int(kids[0]) if kids else None


def recovered_lines(path):
    with open(path) as f:
        return [m for m in (RECOVERED.match(l) for l in f) if m]


def pct(values, q):
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q * (len(values) - 1))))]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--topology", required=True)
    ap.add_argument("--trials", type=int, default=20)
    ap.add_argument("--state-mib", type=int, default=0)
    ap.add_argument("--every", type=int, default=20)
    ap.add_argument("--heartbeat-ms", type=int, default=200)
    ap.add_argument("--drop-caches", action="store_true")
    a = ap.parse_args()
    sys.stdout.reconfigure(line_buffering=True)
    bin_dir = os.path.join(a.build, "bin")
    exe = lambda n: os.path.join(bin_dir, n)
    work = tempfile.mkdtemp(prefix="msc-recovery-bench-")
    try:
        plan = os.path.join(work, "p.msp")
        contract = os.path.join(work, "recovery.msc")
        with open(CONTRACT) as src, open(contract, "w") as dst:
            dst.write(src.read().replace("heartbeat = 50ms", "heartbeat = %dms" % a.heartbeat_ms))
        subprocess.run([exe("mscalec"), "--topology", a.topology, "-o", plan, contract], check=True,
                       stderr=subprocess.DEVNULL)
        data = os.path.join(work, "data")
        subprocess.run([exe("mscale-train-sim"), "--gen-data", data, "--samples", "2400", "--files", "8"], check=True)
        control = os.path.join(work, "control")
        open(control, "w").close()
        exec_log, train_log = os.path.join(work, "exec.log"), os.path.join(work, "train.log")
        worker = [exe("mscale-train-sim"), "--data", data, "--steps", "10000000", "--snapshot-every", str(a.every),
                  "--snapshot-dir", os.path.join(work, "snaps"), "--keep", "2", "--log", train_log,
                  "--step-delay-ms", "5", "--state-mib", str(a.state_mib), "--quiet"]
        env = dict(os.environ, MSCALE_SIM_CONTROL=control)

        def start(resume=False):
            return subprocess.Popen([exe("mscale-exec"), "run", "--log", exec_log, "--topology", a.topology,
                                     "--max-restarts", "1000"] + (["--resume"] if resume else []) +
                                    [plan, "--"] + worker, env=env, stdout=subprocess.DEVNULL,
                                    stderr=subprocess.DEVNULL)

        def wait_steps(n):
            target = last_step(train_log) + n
            deadline = time.time() + 120
            while last_step(train_log) < target:
                if time.time() > deadline:
                    raise SystemExit("the worker stopped making progress")
                time.sleep(0.005)

        results = {}
        proc = start()
        wait_steps(a.every + 2)
        gpu = 0
        for fault in ("worker-crashed", "worker-hung", "gpu-lost"):
            for t in range(a.trials):
                wait_steps(a.every + 2)  # a fresh snapshot exists
                before = len(recovered_lines(exec_log))
                t0 = time.time()
                if fault == "worker-crashed":
                    os.kill(worker_of(proc.pid), signal.SIGKILL)
                elif fault == "worker-hung":
                    os.kill(worker_of(proc.pid), signal.SIGSTOP)
                else:
                    with open(control, "a") as c:
                        c.write("gpu %d fault lost\n" % gpu)
                deadline = time.time() + 60
                while len(recovered_lines(exec_log)) == before:
                    if time.time() > deadline or proc.poll() is not None:
                        raise SystemExit("no recovery from %s (mscale-exec status %s)" % (fault, proc.poll()))
                    time.sleep(0.002)
                if fault == "gpu-lost":
                    with open(control, "w") as c:  # heal: the next trial loses the GPU now in use
                        c.write("".join("gpu %d fault none\n" % i for i in range(4)))
                    with open(exec_log) as log:
                        moves = [l for l in log if "moved off lost gpu" in l]
                    gpu = int(re.search(r"\(gpu (\d+), \d+ slices\)$", moves[-1].strip()).group(1))
                m = recovered_lines(exec_log)[before]
                total = (stamp(m.group(1)) - t0) * 1000
                parts = [float(x) for x in m.group(4, 5, 6, 7, 8)]
                results.setdefault(fault, []).append((total, parts))
                print("%s trial %d: %.1f ms (stop %.1f, move %.1f, start %.1f, restore %.1f, first step %.1f)" %
                      ((fault, t, total) + tuple(parts)))
        # The baseline: a checkpoint restart (executor and worker gone, new executor, disk tier).
        for t in range(min(a.trials, 10)):
            wait_steps(a.every + 2)
            start_size = os.path.getsize(train_log)
            t0 = time.time()
            proc.kill()
            proc.wait()
            if a.drop_caches:
                with open("/proc/sys/vm/drop_caches", "w") as dc:
                    dc.write("3\n")
            proc = start(resume=True)
            deadline = time.time() + 120
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
            total = (done - t0) * 1000
            results.setdefault("checkpoint-restart", []).append((total, []))
            print("checkpoint-restart trial %d: %.1f ms" % (t, total))
        proc.send_signal(signal.SIGTERM)
        proc.wait()

        print("\n| fault (state %d MiB, heartbeat %d ms) | trials | median ms | P95 ms | median restore ms |" %
              (a.state_mib, a.heartbeat_ms))
        print("|---|---|---|---|---|")
        for fault, rows in results.items():
            totals = [r[0] for r in rows]
            restores = [r[1][3] for r in rows if r[1]]
            print("| %s | %d | %.1f | %.1f | %s |" % (fault, len(rows), statistics.median(totals), pct(totals, 0.95),
                                                      "%.1f" % statistics.median(restores) if restores else "-"))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
