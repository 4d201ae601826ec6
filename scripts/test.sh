#!/usr/bin/env bash
# Runs every test and ends with one line "N passed, N failed" (exit 1 on any failure):
#   - unit tests (GoogleTest, through ctest) and the lit suite, in the release build and in the
#     ASan+UBSan build; the etcd tests among them (ctest label etcd) start and stop a 3-member etcd
#     of their own through scripts/with-etcd.sh; the Slurm lit tests (test/lit/slurm, feature slurm)
#     start and stop a one-node Slurm of their own through scripts/with-slurm.sh;
#   - every libFuzzer target for MSC_FUZZ_SECONDS (default 60) from its seed corpus;
#   - scripts/quickstart.sh in a fresh clone (one test).
# MSC_TEST_FLAVOURS="release quickstart asan fuzz" chooses what runs. The quickstart comes right
# after release: its clone builds the same release objects, which ccache (scripts/build.sh) then
# has from the release build (a cold build of the tools took 5 min here, a warm one 23 s), and a
# broken quickstart shows early.
set -uo pipefail
cd "$(dirname "$0")/.."
root=$PWD
scripts/setup.sh || { echo "setup failed"; echo "0 passed, 1 failed"; exit 1; }

lit_py=/usr/lib/llvm-16/build/utils/lit/lit.py
flavours=${MSC_TEST_FLAVOURS:-release quickstart asan fuzz}
fuzz_seconds=${MSC_FUZZ_SECONDS:-60}
passed=0
failed=0
logdir=$root/build/test-logs
mkdir -p "$logdir"

# failed_lit_output LOG: the last lines of what each failing lit test printed (the FileCheck
# mismatch, the script's own FAIL line), so that a CI log says why and not only which.
failed_lit_output() {
  awk '/^\*+ TEST .* FAILED \*+$/ {on=1; n=0; name=$0; delete buf; next}
       on && /^\*+$/ {print name; s=(n > 25 ? n - 25 : 0); for (i = s; i < n; i++) print "  " buf[i]; on=0; next}
       on {buf[n++]=$0}' "$1" | head -200
}

count() { # count PASSED FAILED LABEL
  passed=$((passed + $1)); failed=$((failed + $2))
  printf '%-28s %5d passed, %d failed\n' "$3" "$1" "$2"
}

run_suites() { # run_suites FLAVOUR DIR
  local flavour=$1 dir=$2 log
  log=$logdir/ctest-$flavour.log
  ctest --test-dir "$dir" -j "$(nproc)" --output-on-failure --timeout 300 >"$log" 2>&1
  local summary total nfail
  summary=$(grep -E 'tests passed, [0-9]+ tests? failed out of [0-9]+' "$log" | tail -1)
  if [[ -n $summary ]]; then
    total=$(sed -E 's/.*out of ([0-9]+).*/\1/' <<<"$summary")
    nfail=$(sed -E 's/.*, ([0-9]+) tests? failed.*/\1/' <<<"$summary")
    count $((total - nfail)) "$nfail" "unit ($flavour)"
    ((nfail)) && grep -E '^\s*[0-9]+ - |\*\*\*Failed|Exception' "$log" | head -40
  elif grep -q 'No tests were found' "$log"; then
    count 0 0 "unit ($flavour)"
  else
    count 0 1 "unit ($flavour)"; tail -20 "$log"
  fi

  log=$logdir/lit-$flavour.log
  python3 "$lit_py" -sv "$dir/test/lit" >"$log" 2>&1
  local p f
  p=$(grep -E '^\s*(Passed|Expectedly Failed)\s*:' "$log" | awk -F: '{s+=$2} END {print s+0}')
  f=$(grep -E '^\s*(Failed|Unexpectedly Passed|Unresolved|Timed Out)\s*:' "$log" | awk -F: '{s+=$2} END {print s+0}')
  if [[ $p -eq 0 && $f -eq 0 ]] && ! grep -q 'Testing Time' "$log"; then f=1; tail -20 "$log"; fi
  count "$p" "$f" "lit ($flavour)"
  ((f)) && grep -E '^(FAIL|UNRESOLVED|XPASS|TIMEOUT):' "$log" | head -40
  ((f)) && failed_lit_output "$log"
  grep -E '^\s*Unsupported\s*:' "$log" | sed "s/^/  lit ($flavour) /"
  return 0
}

# The quickstart as a new user meets it: `git clone`, then scripts/quickstart.sh, with no build/
# and nothing else of this checkout. The clone is of HEAD, so uncommitted changes are not in it:
# CI tests a clean checkout of a commit, where HEAD is the working tree. It sits at $tmp/main
# beside $tmp/shared -> ../shared, since the quickstart finds recorded topologies at ../shared.
# $tmp is mode 0700 (mktemp -d): the quickstart must not need anyone else to read its tree.
quickstart_tmp=
trap '[[ -n $quickstart_tmp ]] && rm -rf "$quickstart_tmp"' EXIT
trap 'exit 130' INT TERM
run_quickstart() {
  local log=$logdir/quickstart.log start rc=0
  quickstart_tmp=$(mktemp -d) || { count 0 1 "quickstart (fresh clone)"; return 0; }
  if [[ -n $(git -C "$root" status --porcelain --untracked-files=no 2>/dev/null) ]]; then
    echo "  (quickstart: uncommitted changes are not in the clone; it tests HEAD)"
  fi
  start=$SECONDS
  {
    git clone -q "$root" "$quickstart_tmp/main" &&
      { [[ ! -d $root/../shared ]] || ln -s "$(realpath "$root/../shared")" "$quickstart_tmp/shared"; } &&
      "$quickstart_tmp/main/scripts/quickstart.sh"
  } >"$log" 2>&1 || rc=$?
  echo "quickstart (fresh clone): exit $rc after $((SECONDS - start))s" >>"$log"
  if ((rc == 0)); then
    count 1 0 "quickstart (fresh clone)"
  else
    count 0 1 "quickstart (fresh clone)"; tail -30 "$log"
  fi
  rm -rf "$quickstart_tmp"
  quickstart_tmp=
}

for flavour in $flavours; do
  case $flavour in
    quickstart) run_quickstart; continue ;;
    release) dir=build ;;
    asan) dir=build-asan ;;
    fuzz) dir=build-fuzz ;;
    *) echo "unknown flavour $flavour"; count 0 1 "$flavour"; continue ;;
  esac
  if ! scripts/build.sh "$flavour" >"$logdir/build-$flavour.log" 2>&1; then
    echo "build ($flavour) failed:"; grep -E 'error|Error' "$logdir/build-$flavour.log" | head -30
    count 0 1 "build ($flavour)"
    continue
  fi
  if [[ $flavour == fuzz ]]; then
    for fuzzer in "$dir"/fuzz/*_fuzzer; do
      [[ -x $fuzzer ]] || continue
      name=$(basename "$fuzzer" _fuzzer)
      corpus=$root/build-fuzz/corpus/$name
      mkdir -p "$corpus"
      seeds=()
      [[ -d $root/test/fuzz/seeds/$name ]] && seeds+=("$root/test/fuzz/seeds/$name")
      [[ $name == frontend ]] && seeds+=("$root/examples/contracts" "$root/stdlib/profiles")
      # The first corpus directory is the writable one; the seed directories are only read.
      if "$fuzzer" -max_total_time="$fuzz_seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
          "$corpus" "${seeds[@]}" >"$logdir/fuzz-$name.log" 2>&1; then
        count 1 0 "fuzz $name (${fuzz_seconds}s)"
      else
        count 0 1 "fuzz $name (${fuzz_seconds}s)"; grep -E 'ERROR|SUMMARY|crash' "$logdir/fuzz-$name.log" | head -10
      fi
    done
  else
    if [[ $flavour == asan ]]; then
      # Leak checks are off: the probes dlopen and dlclose third-party libraries (libcuda, the
      # verbs providers) whose exit-time leaks LSan can no longer attribute. Link order is not
      # verified: tests preload instrumented fake libraries into uninstrumented programs (sleep,
      # python ctypes). Every other ASan and UBSan check stays on and fails the test.
      ASAN_OPTIONS=detect_leaks=0:verify_asan_link_order=0 run_suites "$flavour" "$dir"
    else
      run_suites "$flavour" "$dir"
    fi
  fi
done

echo "$passed passed, $failed failed"
((failed == 0))
