"""`lstmgraph bench --device cuda`: trial-steps per second of the GPU population
(`engine.gpu`) on the CERG and timing nets, a warp or a thread a trial (docs/gpu.md).

The same stream as the CPU figures (`benchmark.stream`: one-hot symbols in, random targets out,
float64, online truncated RTRL), shared by every trial; each figure is the best of three timed
launches after a warm-up launch that compiles the kernel. A launch's time includes copying the
stream to the device and the steps and losses back.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np

from .benchmark import stream
from .engine import initial_weights
from .engine.compiled import CompiledNetwork
from .engine.gpu import GpuPopulation, cuda_module
from .plan import Plan
from .progress import Progress, ProgressReport

#: (net, trials, steps a launch): from one trial to the populations the GPU is for.
FIGURES = (("cerg", 1, 20_000), ("cerg", 100, 20_000), ("cerg", 1_000, 5_000), ("cerg", 10_000, 2_000),
           ("cerg", 100_000, 1_000), ("timing", 1, 50_000), ("timing", 100, 50_000),
           ("timing", 1_000_000, 1_000))
#: Work splits measured for every figure: threads a trial, fused multiply-adds (`arithmetic`).
SPLITS = {"warp": (32, False), "thread": (1, False)}
#: The price of the CPU's arithmetic, measured where the GPU is fastest: a warp with fused
#: multiply-adds beside the default.
FUSED_FIGURES = (("cerg", 100), ("cerg", 100_000))


def gpu_trial_steps_per_second(plan: Plan, steps: int, trials: int, threads: int, slots_in: str = "auto",
                               repeats: int = 3, fused: bool = False) -> float:
    """Best of ``repeats`` launches of ``steps`` steps for ``trials`` trials."""
    network = CompiledNetwork(plan, kernel="interpreter")
    inputs, targets = stream(network.n_inputs, network.n_outputs, steps)
    weights = initial_weights(plan, list(range(trials)))
    population = GpuPopulation(network, weights, 0.0, threads=threads, slots_in=slots_in, fused=fused)
    population.run(inputs[:5], targets[:5])
    population.set_rate(1e-3)
    best = np.inf
    for _ in range(repeats):
        start = time.perf_counter()
        population.run(inputs, targets)
        best = min(best, time.perf_counter() - start)
    return steps * trials / best


def run_gpu_benchmarks(specs: Path, quick: bool = False, progress: Progress = lambda _: None,
                       figures: tuple = FIGURES) -> dict[str, Any]:
    """Every figure of ``figures`` (`FIGURES`), a warp and a thread a trial: ``{net}_{trials}_warp`` and
    ``_thread`` in trial-steps per second (and ``_warp_fused`` for `FUSED_FIGURES`), and the
    device's name."""
    from . import compile_spec

    cuda = cuda_module(allow_simulator=False)
    plans = {"cerg": compile_spec(specs / "gers2000_cerg.yaml"), "timing": compile_spec(specs / "gers2002_timing.yaml")}
    name = cuda.get_current_device().name
    results: dict[str, Any] = {"device": name.decode() if isinstance(name, bytes) else str(name)}
    for done, (net, trials, steps) in enumerate(figures):
        progress(ProgressReport("figures", done, len(figures), f"{net} net, {trials:,} trials"))
        splits = dict(SPLITS, **({"warp_fused": (32, True)} if (net, trials) in FUSED_FIGURES else {}))
        for split, (threads, fused) in splits.items():
            launch = max(steps // (10 if quick else 1), 50)
            results[f"{net}_{trials}_{split}"] = gpu_trial_steps_per_second(plans[net], launch, trials, threads,
                                                                            fused=fused)
    progress(ProgressReport("figures", len(figures), len(figures), "done"))
    return results


def first_difference(network: CompiledNetwork, weights, inputs: np.ndarray, targets: np.ndarray, threads: int = 32,
                     slots_in: str = "auto", fused: bool = False) -> dict[str, Any] | None:
    """Where a GPU population first leaves the CPU's: both run ``inputs`` one step a launch (rate
    0.1, momentum 0.9, as `benchmarks/gpu_check.py`), every slot compared after each step. None
    where every step agrees bit for bit; else the step, how many slots differ, and the first
    operation in program order that writes one (`written_by`): where the arithmetic parted."""
    cpu = network.population(weights, 0.1)
    gpu = GpuPopulation(network, weights, 0.1, threads=threads, slots_in=slots_in, fused=fused)
    for t in range(len(inputs)):
        cpu.run(inputs[t:t + 1], targets[t:t + 1], momentum=0.9)
        gpu.run(inputs[t:t + 1], targets[t:t + 1], momentum=0.9)
        differ = np.flatnonzero((cpu.every_slot() != gpu.every_slot()).any(axis=0))
        if len(differ):
            return {"step": t, "slots": len(differ), "operation": written_by(network.program, differ)}
    return None


def written_by(program, slots: np.ndarray) -> str:
    """The first operation of ``program`` (in the order a step runs them) that writes one of
    ``slots``, as its kind, phase and description; "" where none does (an input's slot)."""
    wanted = set(int(slot) for slot in slots)
    for number, op in enumerate(program.ops):
        written = set(op.out.tolist()) | (set(op.a.tolist()) if op.kind == "update" else set())
        if written & wanted:
            return f"operation {number}: {op.kind} ({op.phase}) {op.what}".strip()
    return ""


def agreement_table(checks: dict[str, dict]) -> str:
    """The markdown table docs/gpu.md shows of `benchmarks/gpu_check.py`'s agreement files:
    ``checks`` maps a label (which build ran) to an agreement.json's contents. Per spec and
    layout, the largest differences from the CPU over the check's steps, or the error."""
    lines = ["| spec | layout | build | same steps | weights | traces | loss sums | bit for bit |",
             "|---|---|---|---|---|---|---|---|"]
    for label, results in checks.items():
        for spec in sorted(results):
            for layout, row in sorted(results[spec].items()):
                if "error" in row:
                    lines.append(f"| {spec} | {layout} | {label} | error: {row['error'].strip().splitlines()[-1][:60]} "
                                 "| | | | |")
                    continue
                lines.append(f"| {spec} | {layout} | {label} | {'yes' if row['same_steps'] else 'no'} | "
                             f"{row['weights']:.1e} | {row['traces']:.1e} | {row['loss']:.1e} | "
                             f"{'yes' if row['bit_identical_weights'] else 'no'} |")
    return "\n".join(lines)
