#!/usr/bin/env bash
# as-nobody.sh [--share FILE]... [--] PROGRAM [ARG]...
# Runs PROGRAM (found on PATH) as uid and gid 65534 with no supplementary groups, for the tests of
# what an unprivileged user gets. The build tree may sit where that user cannot even look (a clone
# under `mktemp -d` is mode 0700), so PROGRAM and every shared FILE are first copied into a fresh
# world-readable directory under /tmp (not $TMPDIR, which may be private too), and every ARG that
# names a shared FILE is given the copy's path instead. The directory is removed afterwards; the
# exit status is PROGRAM's.
set -euo pipefail
shared=()
while [[ ${1-} == --share ]]; do
  shared+=("$2")
  shift 2
done
[[ ${1-} == -- ]] && shift
program=$(command -v "$1") || { echo "as-nobody: '$1' not found on PATH" >&2; exit 127; }
shift

dir=$(mktemp -d /tmp/msc-nobody.XXXXXX)
trap 'rm -rf "$dir"' EXIT
chmod 755 "$dir"
cp "$program" "$dir/"
for i in "${!shared[@]}"; do
  mkdir -m 755 "$dir/$i" # one folder each: two shared files may have the same name
  cp "${shared[i]}" "$dir/$i/"
done
chmod -R a+rX "$dir"

args=()
for arg in "$@"; do
  for i in "${!shared[@]}"; do
    [[ $arg == "${shared[i]}" ]] && arg=$dir/$i/$(basename "${shared[i]}")
  done
  args+=("$arg")
done
status=0
setpriv --reuid=65534 --regid=65534 --clear-groups "$dir/$(basename "$program")" "${args[@]}" || status=$?
exit "$status"
