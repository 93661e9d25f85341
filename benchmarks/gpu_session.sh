#!/usr/bin/env bash
# Every GPU check of docs/gpu.md in one run of about 9.5 minutes on a lent GPU machine:
#
#   bash benchmarks/gpu_session.sh OUT
#
# (The rows' and sweeps' streams are drawn on the device: experiments/gpu_data.py.)
# 1. the bench nets' agreement with the CPU (benchmarks/gpu_check.py, their 5 kernels compiled
#    side by side), then `bench --device cuda`;
# 2. every other bundled spec's agreement, the gpu-marked tests, the draws' speed on the device,
#    the paper row gers2000-cerg-forget, 100 short exact-RTRL CERG trials (issue 38);
# 3. the 1,000-setting sweep beside the row's last nets, each cut at the deadline (both resume).
# Wheels for what the machine lacks lie in .whl/ (docs/gpu.md). Everything lands in OUT.
set -u
OUT=${1:?usage: bash benchmarks/gpu_session.sh OUT}
END=${GPU_SESSION_SECONDS:-565}  # every stage ends by then
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 NUMBA_ENABLE_CUDASIM=${NUMBA_ENABLE_CUDASIM:-0} LSTMGRAPH_CACHE=${LSTMGRAPH_CACHE:-/tmp/lstmgraph-cache}
note() { echo "[$(date +%T), ${SECONDS} s] $*"; }
left() { echo $((END - SECONDS > 5 ? END - SECONDS : 5)); }
LSTMGRAPH="python3 -m lstmgraph_cli"

python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 2
export PYTHONPATH=/tmp/site
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv
python3 -c 'import numpy; numpy.row_stack = numpy.vstack; import numba, numba_cuda; from numba import cuda
print("numba", numba.__version__, "numba-cuda", numba_cuda.__version__, "numpy", numpy.__version__, cuda.get_current_device().name)'
nproc

# Measured on an H200 (2026-11-27): a CERG kernel compiles in 50-90 s of one core, and a kernel
# compiled in one process was compiled again in the next. So the bench nets' five kernels
# compile first, side by side, with nothing else running; the bench follows at once.
note "the bench nets' agreement (5 processes), the row's driver compiling"
timeout -k 5 200 python3 benchmarks/gpu_check.py "$OUT" --stage agreement --jobs 5 --specs gers2000_cerg gers2002_timing \
    > "$OUT/agreement.log" 2>&1
grep -E '^(gers|agreement)' "$OUT/agreement.log"
(time timeout -k 5 240 $LSTMGRAPH sweep gers2000-cerg-forget --vary learning_rate=0.5 --no-own-setting --trials 1 \
    --max-steps 1000 --device cuda --out /tmp/prewarm) > "$OUT/row.log" 2>&1 &
PREWARM=$!
# Issue 38's exact-RTRL rows (docs/gpu.md, "Exact RTRL rows"): the CERG net's exact kernel compiled
# (about 2 minutes of one core) and 100 short trials run, beside the bench on a light load.
(time timeout -k 5 300 $LSTMGRAPH sweep gers2000-cerg-forget-decay --vary learning_rule=rtrl --no-own-setting \
    --trials 100 --max-steps 20000 --device cuda --out "$OUT/exact-rtrl") > "$OUT/exact.log" 2>&1 &
EXACT=$!
note "bench --device cuda"
timeout -k 5 200 python3 benchmarks/gpu_check.py "$OUT/bench" --stage bench 2>&1 | grep -v Warning

note "the other specs' agreement (8 processes), the gpu tests (3 workers)"
OTHERS=$(ls specs/*.yaml | xargs -n1 basename | sed 's/\.yaml$//' | grep -vxE 'gers2000_cerg|gers2002_timing')
timeout -k 5 300 python3 benchmarks/gpu_check.py "$OUT/others" --stage agreement --jobs 8 --specs $OTHERS \
    >> "$OUT/agreement.log" 2>&1 &
AGREEMENT=$!
timeout -k 5 300 python3 -m pytest -q -n 3 -m gpu -p no:cacheprovider tests/engine/gpu tests/experiments/test_gpu_drivers.py \
    tests/experiments/test_gpu_data.py tests/experiments/test_gpu_staging.py tests/training/test_gpu_training.py \
    > "$OUT/pytest.log" 2>&1 &
TESTS=$!
# The speed of the draws on the device (docs/gpu.md, "Generators on the device"), 2,000 trials a row.
timeout -k 5 150 python3 benchmarks/gpu_draws.py --trials 2000 > "$OUT/draws.log" 2>&1 &
DRAWS=$!
wait $PREWARM; note "the row's driver compiled:"; tail -3 "$OUT/row.log"
note "the paper row on the device (100 nets), until the deadline"
(time timeout -k 10 "$(left)" $LSTMGRAPH reproduce gers2000-cerg-forget --device cuda --out /tmp/row --log-every 20) \
    >> "$OUT/row.log" 2>&1 &
ROW=$!
wait $TESTS; note "tests:"; tail -15 "$OUT/pytest.log"
wait $DRAWS; note "draws on the device:"; tail -8 "$OUT/draws.log"
wait $AGREEMENT; note "agreement:"; tail -1 "$OUT/agreement.log"
wait $EXACT; note "exact RTRL, 100 CERG trials of 20,000 training steps:"; tail -8 "$OUT/exact.log"
note "the 1,000-setting sweep beside the row's last nets, until the deadline"
(time timeout -k 10 "$(left)" $LSTMGRAPH sweep gers2000-cerg-forget --vary learning_rate=0.1:1:100 \
    --vary momentum=0:0.9:10 --trials 10 --max-steps 100000 --no-own-setting --device cuda --out /tmp/sweep \
    --log-every 20) > "$OUT/sweep.log" 2>&1
wait $ROW
note "row:"; tail -25 "$OUT/row.log"
note "sweep:"; tail -25 "$OUT/sweep.log"
note done
