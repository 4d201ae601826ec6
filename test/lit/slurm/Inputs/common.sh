# Shared by the slurm tests: a node agent of the test's own on DIR/agent.sock (stopped when the
# test's shell exits), and bounded waits.
start_agent() { # start_agent DIR
  printf 'state_dir: %s/state\n' "$1" >"$1/node.yaml"
  mscale-exec serve --socket "$1/agent.sock" --config "$1/node.yaml" </dev/null >/dev/null 2>"$1/agent.log" &
  agent_pid=$!
  trap 'kill $agent_pid 2>/dev/null; wait $agent_pid 2>/dev/null' EXIT
  wait_for "the agent's socket" test -S "$1/agent.sock"
}

wait_for() { # wait_for WHAT CMD...: up to 30 s
  local what=$1
  shift
  for _ in $(seq 150); do "$@" >/dev/null 2>&1 && return 0; sleep 0.2; done
  echo "FAIL: $what did not happen within 30 s"
  exit 1
}

# The contracts the agent holds, one name per line ("none" when it holds nothing).
held() { # held DIR
  local out
  out=$(mscale-cli contract list --socket "$1/agent.sock" | awk -F'\t' 'NF > 1 {print $1}')
  echo "${out:-none}"
}
