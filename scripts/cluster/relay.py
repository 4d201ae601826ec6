#!/usr/bin/env python3
"""A byte relay between a node agent and the etcd members, so that scripts/cluster-up.sh can cut one
agent off from etcd (a network partition of that node alone, scripts/cluster/partition.sh) without
touching etcd or the other agents.

    relay.py --ready FILE LISTEN=CONNECT [LISTEN=CONNECT ...]

Each LISTEN and CONNECT is tcp:HOST:PORT or unix:PATH (port 0: any free port). Once every listener
is bound, FILE receives one line per pair, the bound LISTEN address ("127.0.0.1:40213" or the path),
written atomically. A Unix socket carries the traffic across network namespaces: the agent's
namespace has a relay of its own from its loopback to that socket. Runs until killed; SIGSTOP makes it
a black hole (connections stay open, nothing flows), SIGCONT lets the queued bytes through.
"""
import argparse
import asyncio
import os
import sys


def parse(spec):
    kind, _, rest = spec.partition(":")
    if kind == "tcp":
        host, _, port = rest.rpartition(":")
        if not host or not port.isdigit():
            raise ValueError("tcp address must be tcp:HOST:PORT: %r" % spec)
        return ("tcp", host, int(port))
    if kind == "unix" and rest:
        return ("unix", rest)
    raise ValueError("expected tcp:HOST:PORT or unix:PATH, got %r" % spec)


async def pipe(reader, writer):
    try:
        while True:
            data = await reader.read(65536)
            if not data:
                break
            writer.write(data)
            await writer.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        try:
            writer.close()
        except OSError:
            pass


async def open_to(target):
    if target[0] == "tcp":
        return await asyncio.open_connection(target[1], target[2])
    return await asyncio.open_unix_connection(target[1])


def handler(target):
    async def handle(client_reader, client_writer):
        try:
            upstream_reader, upstream_writer = await open_to(target)
        except OSError:
            client_writer.close()
            return
        await asyncio.gather(pipe(client_reader, upstream_writer), pipe(upstream_reader, client_writer))
    return handle


async def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ready", required=True, help="file that receives the bound addresses")
    ap.add_argument("pairs", nargs="+", metavar="LISTEN=CONNECT")
    a = ap.parse_args()
    bound = []
    servers = []
    for pair in a.pairs:
        listen_spec, sep, connect_spec = pair.partition("=")
        if not sep:
            raise SystemExit("relay: expected LISTEN=CONNECT, got %r" % pair)
        try:
            listen, target = parse(listen_spec), parse(connect_spec)
        except ValueError as e:
            raise SystemExit("relay: %s" % e)
        if listen[0] == "tcp":
            server = await asyncio.start_server(handler(target), listen[1], listen[2])
            host, port = server.sockets[0].getsockname()[:2]
            bound.append("%s:%d" % (host, port))
        else:
            if os.path.exists(listen[1]):
                os.unlink(listen[1])
            server = await asyncio.start_unix_server(handler(target), listen[1])
            bound.append(listen[1])
        servers.append(server)
    tmp = a.ready + ".tmp"
    with open(tmp, "w") as f:
        f.write("\n".join(bound) + "\n")
    os.rename(tmp, a.ready)
    await asyncio.gather(*(s.serve_forever() for s in servers))


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        sys.exit(130)
