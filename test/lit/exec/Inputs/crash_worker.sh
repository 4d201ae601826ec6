#!/bin/sh
# A worker that prints a line to each stream and fails on its own: what `contract logs` shows.
echo "loading shard 3"
echo "error: shard 3 is corrupt" >&2
exit 3
