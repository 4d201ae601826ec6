#!/usr/bin/env python3
"""Stands in for journald to test what a service logs natively, in a private mount namespace where
/run is a fresh tmpfs (the caller's `unshare -m` + mount), so the machine's journal is untouched.

fake_journald.py SOCKET STDERR_FILE [--wait-socket PATH] [--then CMD]... -- SERVICE ARGS...

Binds SOCKET (journald's /run/systemd/journal/socket), starts SERVICE with stderr to STDERR_FILE and
JOURNAL_STREAM naming that file (as systemd does for StandardError=journal), waits for PATH to
appear, runs each CMD, stops SERVICE with SIGTERM, then prints every entry received, one per line:
"PRIORITY=.. MSCALE_CONTRACT=.. SYSLOG_IDENTIFIER=.. MESSAGE=..", and how many bytes went to stderr.
"""
import argparse
import os
import signal
import socket
import subprocess
import sys
import time


def parse(datagram):
    fields = {}
    for line in datagram.decode(errors="replace").split("\n"):
        if "=" in line:
            k, v = line.split("=", 1)
            fields[k] = v
    return fields


def main():
    argv = sys.argv[1:]
    split = argv.index("--")
    ap = argparse.ArgumentParser()
    ap.add_argument("socket")
    ap.add_argument("stderr_file")
    ap.add_argument("--wait-socket")
    ap.add_argument("--then", action="append", default=[])
    args = ap.parse_args(argv[:split])
    service = argv[split + 1:]

    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(args.socket)
    sock.settimeout(0.2)
    err = open(args.stderr_file, "wb")
    st = os.fstat(err.fileno())
    env = dict(os.environ, JOURNAL_STREAM="%d:%d" % (st.st_dev, st.st_ino))
    proc = subprocess.Popen(service, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err, env=env)
    entries = []

    def drain(seconds):
        end = time.time() + seconds
        while time.time() < end:
            try:
                entries.append(parse(sock.recv(65536)))
            except socket.timeout:
                pass

    if args.wait_socket:
        for _ in range(100):
            if os.path.exists(args.wait_socket):
                break
            drain(0.1)
    for cmd in args.then:
        r = subprocess.run(cmd, shell=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        if r.returncode != 0:
            print("fake_journald: %r exited %d: %s" % (cmd, r.returncode, r.stderr.decode()))
        drain(0.2)
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=30)
    drain(0.5)
    for e in entries:
        print(" ".join("%s=%s" % (k, e.get(k, "?")) for k in ("PRIORITY", "MSCALE_CONTRACT", "SYSLOG_IDENTIFIER", "MESSAGE")))
    err.close()
    print("stderr: %d bytes" % os.path.getsize(args.stderr_file))


if __name__ == "__main__":
    main()
