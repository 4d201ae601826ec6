# Sourced by the cluster scripts: where the project's tools are. $MSC_BIN_DIR if set, else the
# tools on PATH (an installed prefix, or build/bin as the tests put it first), else this
# checkout's build/bin.
msc_tool() {
  local name=$1 root
  if [[ -n ${MSC_BIN_DIR:-} ]]; then
    echo "$MSC_BIN_DIR/$name"
  elif command -v "$name" >/dev/null; then
    command -v "$name"
  else
    root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
    [[ -x $root/build/bin/$name ]] || { echo "cluster: '$name' not found (scripts/build.sh builds it)" >&2; return 1; }
    echo "$root/build/bin/$name"
  fi
}
