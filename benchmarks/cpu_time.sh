#!/bin/bash
# CPU time per trial-step of the kernels, three repeats each: the CPU-time table of
# docs/performance.md. Each figure is perf's task-clock of N steps minus that of none
# (benchmarks/cpu_time.py), divided by the trial-steps. Needs `perf` (linux-perf).
set -euo pipefail
cd "$(dirname "$0")/.."
measure() {  # spec kernel width steps [--exact]
  for repeat in 1 2 3; do
    local clocks=()
    for run in 0 1; do
      clocks+=("$(perf stat -x, -e task-clock .venv/bin/python benchmarks/cpu_time.py "$@" "$run" 2>&1 >/dev/null \
        | grep task-clock | cut -d, -f1)")
    done
    awk -v a="${clocks[0]}" -v b="${clocks[1]}" -v what="$*" -v n="$(( $3 * $4 ))" \
      'BEGIN { printf "%s: %.3f us a trial-step\n", what, (b - a) * 1e3 / n }'
  done
}
measure gers2000_cerg specialised 1 3000000
measure gers2000_cerg specialised 4 1000000
measure gers2000_cerg interpreter 1 300000
measure gers2000_cerg specialised 1 300000 --exact
measure gers2000_cerg specialised 4 100000 --exact
measure gers2002_timing specialised 1 20000000
measure gers2002_timing specialised 4 6000000
