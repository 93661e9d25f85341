"""The GPU executor on a real GPU: agreement with the CPU kernels on every bundled spec, then the
speed figures of `lstmgraph bench --device cuda` (docs/gpu.md has the command and the results).

    python benchmarks/gpu_check.py OUT [--steps 10000] [--quick]

Agreement: each bundled spec, 4 trials (seeds 0-3), a stream of ``--steps`` one-hot steps with
random targets (`benchmark.stream`), online truncated RTRL at rate 0.1 with momentum 0.9, on the
CPU interpreter and on the GPU (a warp a trial with the slots in shared memory where they fit,
a warp with the slots in device memory, a thread a trial). The largest difference in steps,
losses, weights, velocities and traces is printed per spec and layout, and written to
OUT/agreement.json; every layout that fails to compile or run is reported, not hidden. Then
the speed figures go to OUT/bench.json. Each stage prints as it ends.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import traceback
from pathlib import Path

import numpy as np

from lstmgraph import compile_spec
from lstmgraph.benchmark import stream
from lstmgraph.benchmark_gpu import run_gpu_benchmarks
from lstmgraph.engine import initial_weights
from lstmgraph.engine.compiled import CompiledNetwork
from lstmgraph.engine.gpu import GpuPopulation
from lstmgraph.files import BUNDLED_SPECS

LAYOUTS = (("warp", 32, "auto"), ("warp-global", 32, "global"), ("thread", 1, "auto"))


def largest_difference(one: dict, other: dict) -> float:
    return max((float(np.abs(np.asarray(one[k]) - np.asarray(other[k])).max(initial=0.0)) for k in one), default=0.0)


def agreement(spec: Path, steps: int) -> dict:
    network = CompiledNetwork(compile_spec(spec), kernel="interpreter")
    weights = initial_weights(network.plan, [0, 1, 2, 3])
    inputs, targets = stream(network.n_inputs, network.n_outputs, steps)
    cpu = network.population(weights, 0.1)
    cpu_steps, cpu_loss = cpu.run(inputs, targets, momentum=0.9)
    rows = {}
    for label, threads, slots_in in LAYOUTS:
        try:
            start = time.perf_counter()
            gpu = GpuPopulation(network, weights, 0.1, threads=threads, slots_in=slots_in)
            gpu_steps, gpu_loss = gpu.run(inputs, targets, momentum=0.9)
            rows[label] = {
                "seconds": time.perf_counter() - start, "layout": repr(gpu.layout),
                "same_steps": bool((gpu_steps == cpu_steps).all()),
                "loss": float(np.abs(gpu_loss - cpu_loss).max()),
                "weights": largest_difference(cpu.weights(), gpu.weights()),
                "velocity": largest_difference(cpu.velocity(), gpu.velocity()),
                "traces": largest_difference(cpu.traces(), gpu.traces()),
                "bit_identical_weights": all((cpu.weights()[k] == gpu.weights()[k]).all() for k in cpu.weights()),
            }
        except Exception:  # report every failure, go on with the others
            rows[label] = {"error": traceback.format_exc()}
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--steps", type=int, default=10_000)
    parser.add_argument("--quick", action="store_true", help="bench figures with a tenth of the steps")
    options = parser.parse_args()
    options.out.mkdir(parents=True, exist_ok=True)
    results = {}
    for spec in sorted(BUNDLED_SPECS.glob("*.yaml")):
        results[spec.stem] = agreement(spec, options.steps)
        for label, row in results[spec.stem].items():
            text = (f"error: {row['error'].splitlines()[-1]}" if "error" in row else
                    f"steps {'same' if row['same_steps'] else 'DIFFER'}, weights {row['weights']:.1e}, "
                    f"traces {row['traces']:.1e}, loss {row['loss']:.1e}, bit-identical {row['bit_identical_weights']}")
            print(f"{spec.stem:<36}{label:<13}{text}", flush=True)
        (options.out / "agreement.json").write_text(json.dumps(results, indent=1))
    bench = run_gpu_benchmarks(BUNDLED_SPECS, quick=options.quick,
                               progress=lambda report: print("...", report.describe(), flush=True))
    (options.out / "bench.json").write_text(json.dumps(bench, indent=1))
    print(json.dumps(bench, indent=1))
    failures = [(s, l) for s, rows in results.items() for l, row in rows.items()
                if "error" in row or not row["same_steps"] or row["weights"] > 1e-12]
    print("agreement to 1e-12:", "all" if not failures else f"FAILED for {failures}")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
