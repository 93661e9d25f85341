"""The GPU executor on a real GPU: agreement with the CPU kernels on every bundled spec, then the
speed figures of `lstmgraph bench --device cuda` (docs/gpu.md has the command and the results).

    python benchmarks/gpu_check.py OUT [--steps 10000] [--quick] [--jobs 8] [--stage all]

Agreement: each bundled spec, 4 trials (seeds 0-3), a stream of ``--steps`` one-hot steps with
random targets (`benchmark.stream`), online truncated RTRL at rate 0.1 with momentum 0.9, on the
CPU interpreter and on the GPU (a warp a trial with the slots in shared memory where they fit,
a warp with the slots in device memory, a thread a trial; for the CERG net also a warp with
fused multiply-adds). The largest difference in steps, losses, weights, velocities and traces
is printed per spec and layout, with the first step and operation whose slots differ
(`benchmark_gpu.first_difference`), and written to OUT/agreement.json; every layout that fails
to compile or run is reported, not hidden. ``--jobs`` checks that many (spec, layout) pairs at once
in their own processes: compiling a kernel takes tens of seconds of one core, and the GPU is
idle meanwhile. Then the speed figures go to OUT/bench.json, each printed as it is measured.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import sys
import time
import traceback
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

import numpy as np

from lstmgraph import compile_spec
from lstmgraph.benchmark import stream
from lstmgraph.benchmark_gpu import FIGURES, first_difference, run_gpu_benchmarks
from lstmgraph.engine import initial_weights
from lstmgraph.engine.compiled import CompiledNetwork
from lstmgraph.engine.gpu import GpuPopulation, GpuUnavailable
from lstmgraph.engine.gpu.source import choose_layout
from lstmgraph.files import BUNDLED_SPECS

#: (label, threads a trial, slots in, fused multiply-adds)
LAYOUTS = (("warp", 32, "auto", False), ("warp-global", 32, "global", False), ("thread", 1, "auto", False))
#: Specs also checked with fused multiply-adds (the arithmetic's price is in bench.json).
FUSED = {"gers2000_cerg": ("warp-fused", 32, "auto", True)}
#: Steps searched, a launch each, for the first step where a GPU's slots leave the CPU's.
FIRST_DIFFERENCE_STEPS = 2_000
#: The nets `bench` times: checked first, so that the speed figures can start early.
BENCH_NETS = ("gers2000_cerg", "gers2002_timing")


def largest_difference(one: dict, other: dict) -> float:
    return max((float(np.abs(np.asarray(one[k]) - np.asarray(other[k])).max(initial=0.0)) for k in one), default=0.0)


def agreement(spec: Path, steps: int, layout: tuple) -> dict:
    """One spec on the CPU and in one GPU layout: the largest differences, or the error."""
    label, threads, slots_in, fused = layout
    try:
        network = CompiledNetwork(compile_spec(spec), kernel="interpreter")
        weights = initial_weights(network.plan, [0, 1, 2, 3])
        inputs, targets = stream(network.n_inputs, network.n_outputs, steps)
        cpu = network.population(weights, 0.1)
        cpu_steps, cpu_loss = cpu.run(inputs, targets, momentum=0.9)
        start = time.perf_counter()  # a throwaway launch compiles the kernel (or loads it)
        GpuPopulation(network, weights, 0.0, threads=threads, slots_in=slots_in, fused=fused).run(inputs[:1], targets[:1])
        compiled = time.perf_counter()
        gpu = GpuPopulation(network, weights, 0.1, threads=threads, slots_in=slots_in, fused=fused)
        gpu_steps, gpu_loss = gpu.run(inputs, targets, momentum=0.9)
        identical = all((cpu.weights()[k] == gpu.weights()[k]).all() for k in cpu.weights())
        return {
            "compile_seconds": compiled - start, "run_seconds": time.perf_counter() - compiled,
            **kernel_facts(gpu.kernel), "layout": repr(gpu.layout),
            "same_steps": bool((gpu_steps == cpu_steps).all()),
            "loss": float(np.abs(gpu_loss - cpu_loss).max()),
            "weights": largest_difference(cpu.weights(), gpu.weights()),
            "velocity": largest_difference(cpu.velocity(), gpu.velocity()),
            "traces": largest_difference(cpu.traces(), gpu.traces()),
            "bit_identical_weights": identical,
            # where the last bits first part, step by step (a launch a step: the first 2,000)
            "first_difference": None if identical else first_difference(
                network, weights, inputs[:FIRST_DIFFERENCE_STEPS], targets[:FIRST_DIFFERENCE_STEPS], threads, slots_in,
                fused),
        }
    except GpuUnavailable as error:  # refused by design (a kernel too long to compile): not a failure
        return {"refused": str(error)}
    except Exception:  # report every failure, go on with the others
        return {"error": traceback.format_exc()}


def kernel_facts(kernel) -> dict:
    """What numba-cuda says of a compiled kernel: disk-cache hits and misses in this process,
    and the fused multiply-adds in its PTX (none expected unless fused: `arithmetic`)."""
    try:
        ptx = "".join(str(text) for text in kernel.inspect_asm().values())
    except Exception as error:  # noqa: BLE001 (a diagnostic: report, do not stop)
        ptx = f"(no PTX: {error})"
    resources = {}
    for name, method in (("registers", "get_regs_per_thread"), ("local_bytes", "get_local_mem_per_thread")):
        try:  # what the driver gave the kernel: spills show as local memory (docs/gpu.md, "Registers")
            value = getattr(kernel, method)()  # a dict by signature where the kernel is not specialised
            resources[name] = int(max(value.values()) if isinstance(value, dict) else value)
        except Exception as error:  # noqa: BLE001 (a diagnostic: report, do not stop)
            resources[name] = f"unknown ({error})"
    return {"cache_hits": sum(getattr(kernel, "_cache_hits", {}).values()),
            "cache_misses": sum(getattr(kernel, "_cache_misses", {}).values()),
            "fma_in_ptx": ptx.count("fma.rn.f64"), "mul_rn_in_ptx": ptx.count("mul.rn.f64"), **resources}


def describe(row: dict) -> str:
    if "refused" in row:
        return f"refused: {row['refused']}"
    if "error" in row:
        return f"error: {row['error'].strip().splitlines()[-1]}"
    return (f"steps {'same' if row['same_steps'] else 'DIFFER'}, weights {row['weights']:.1e}, "
            f"traces {row['traces']:.1e}, loss {row['loss']:.1e}, bit-identical {row['bit_identical_weights']}, "
            f"compile {row['compile_seconds']:.0f} s (cache hits {row['cache_hits']}), run {row['run_seconds']:.1f} s, "
            f"fma in PTX {row['fma_in_ptx']}, registers {row.get('registers')}, local bytes {row.get('local_bytes')}, "
            f"first difference {row.get('first_difference')}")


def check_agreement(out: Path, steps: int, jobs: int, names: list[str] | None) -> list:
    specs = [spec for spec in sorted(BUNDLED_SPECS.glob("*.yaml")) if not names or spec.stem in names]
    slots = {spec.stem: CompiledNetwork(compile_spec(spec), kernel="interpreter").program.n_slots for spec in specs}
    # The bench nets first, then the biggest (the slowest to compile); a layout the net's size
    # makes the same as another (no room in shared memory) is checked once.
    specs.sort(key=lambda spec: (spec.stem not in BENCH_NETS, -slots[spec.stem]))
    tasks = [(spec, layout) for spec in specs for layout in LAYOUTS + ((FUSED[spec.stem],) if spec.stem in FUSED else ())
             if not (layout[0] == "warp-global" and not choose_layout(slots[spec.stem], 32).shared)]
    results: dict = {}
    # spawn: a forked child would inherit the parent's CUDA state
    with ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
        futures = {pool.submit(agreement, spec, steps, layout): (spec.stem, layout[0]) for spec, layout in tasks}
        for future in as_completed(futures):
            stem, label = futures[future]
            results.setdefault(stem, {})[label] = row = future.result()
            print(f"{stem:<36}{label:<13}{describe(row)}", flush=True)
            (out / "agreement.json").write_text(json.dumps(results, indent=1))
    failures = [(s, l) for s, rows in results.items() for l, row in rows.items() if "refused" not in row
                and ("error" in row or not row["same_steps"] or row["weights"] > 1e-12)]
    print("agreement to 1e-12:", "all" if not failures else f"FAILED for {failures}", flush=True)
    return failures


def check_speed(out: Path, quick: bool) -> None:
    """`bench --device cuda`'s figures, each printed and saved as it is measured."""
    bench: dict = {}
    for figure in FIGURES:
        start = time.perf_counter()
        bench.update(run_gpu_benchmarks(BUNDLED_SPECS, quick=quick, figures=(figure,)))
        print(f"{time.perf_counter() - start:.0f} s:",
              json.dumps({k: f"{v:.3g}" for k, v in bench.items() if k.startswith(f"{figure[0]}_{figure[1]}_")}), flush=True)
        (out / "bench.json").write_text(json.dumps(bench, indent=1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--steps", type=int, default=10_000)
    parser.add_argument("--quick", action="store_true", help="bench figures with a tenth of the steps")
    parser.add_argument("--jobs", type=int, default=1, help="(spec, layout) pairs checked at once")
    parser.add_argument("--specs", nargs="*", help="bundled spec names (default: all)")
    parser.add_argument("--stage", choices=("all", "agreement", "bench"), default="all")
    options = parser.parse_args()
    options.out.mkdir(parents=True, exist_ok=True)
    failures = []
    if options.stage in ("all", "agreement"):
        failures = check_agreement(options.out, options.steps, options.jobs, options.specs)
    if options.stage in ("all", "bench"):
        check_speed(options.out, options.quick)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
