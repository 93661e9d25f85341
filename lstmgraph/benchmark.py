"""Speed measurements behind `lstmgraph bench` (figures in docs/performance.md).

All figures are online training with an update after every step, float64, on the compiled
executor, each with the kernel it ran (``kernels``: the specialised kernel, compiled before it is
timed, or the interpreter; the CERG and timing rows also with the interpreter, keys ending in
``_interpreter``): steps per second of the 424-weight CERG net and the 17-weight timing net, trial-steps
per second for populations, time per step against the number of weights W for growing nets
(truncated and exact RTRL) with the fitted exponent of each, peak memory, and, when PyTorch is
installed, the same online per-step training written the natural way in PyTorch.
"""

from __future__ import annotations

import resource
import time
from pathlib import Path
from typing import Any

import numpy as np

from .engine import initial_weights
from .engine.compiled import CompiledNetwork
from .plan import Plan, compile_plan
from .progress import Progress, ProgressReport
from .spec import spec_from_data


def scaling_spec(blocks: int, cells: int = 2, width: int = 7) -> dict[str, Any]:
    """The CERG wiring (forget gates, inputs and cell outputs to all gates) at any size."""
    gates = ["memory.cell_input", "memory.input_gate", "memory.forget_gate", "memory.output_gate"]
    return {
        "version": 1, "name": f"scaling_{blocks}x{cells}",
        "groups": [{"name": "symbols", "kind": "input", "size": width},
                   {"name": "memory", "kind": "memory_block", "blocks": blocks, "cells_per_block": cells,
                    "gates": ["input", "forget", "output"]},
                   {"name": "prediction", "kind": "output", "size": width}],
        "connections": [{"from": "symbols", "to": gates + ["prediction"]},
                        {"from": "memory.cell_output", "to": gates, "delay": 1},
                        {"from": "memory.cell_output", "to": "prediction"},
                        {"from": "bias", "to": gates[1:] + ["prediction"]}],
        "init": {"uniform": 0.2},
    }


def stream(n_inputs: int, n_outputs: int, steps: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """One-hot symbols in, random targets out: the work per step does not depend on the data."""
    rng = np.random.default_rng(seed)
    return np.eye(n_inputs)[rng.integers(0, n_inputs, steps)], rng.uniform(0, 1, (steps, n_outputs))


def trial_steps_per_second(plan: Plan, steps: int, trials: int, full_gradient: bool = False,
                           repeats: int = 3, learn: bool = True, kernel: str = "interpreter") -> float:
    """Best of ``repeats`` timed runs (the kernel is compiled and warmed up first); with
    ``learn=False`` the forward pass and loss alone, which splits a step's cost in two."""
    network = CompiledNetwork(plan, full_gradient=full_gradient, kernel=kernel)
    inputs, targets = stream(network.n_inputs, network.n_outputs, steps)
    population = network.population(initial_weights(plan, list(range(trials))), 0.0)
    population.run(inputs[:5], targets[:5])
    population.set_rate(1e-3)
    best = np.inf
    for _ in range(repeats):
        start = time.perf_counter()
        population.run(inputs, targets, learn=learn)
        best = min(best, time.perf_counter() - start)
    population.close()
    return steps * trials / best


def compile_seconds(plan: Plan, full_gradient: bool = False, trials: int = 1) -> float:
    """Wall time to load the specialised kernel of ``plan`` (for one trial, or for trials side
    by side) and run it once: its compilation the first time, loading numba's cache later."""
    start = time.perf_counter()
    network = CompiledNetwork(plan, full_gradient=full_gradient, kernel="specialised", threads=1)
    population = network.population(initial_weights(plan, list(range(trials))), 0.0)
    population.run(np.zeros((1, network.n_inputs)), np.zeros((1, network.n_outputs)))
    return time.perf_counter() - start


def first_train_seconds(spec: Path, steps: int = 1000) -> float:
    """Wall time of `lstmgraph train` on a spec it has never seen (a renamed copy of ``spec``),
    ``steps`` steps, process start-up included: what a user waits for on a new network."""
    import subprocess
    import sys
    import tempfile

    import yaml

    with tempfile.TemporaryDirectory() as folder:
        data = yaml.safe_load(spec.read_text(encoding="utf-8"))
        data["name"] = f"unseen_{time.time_ns()}"
        copy = Path(folder) / f"{data['name']}.yaml"
        copy.write_text(yaml.safe_dump(data), encoding="utf-8")
        command = [sys.executable, "-m", "lstmgraph_cli", "train", str(copy), "--steps", str(steps),
                   "--out", str(Path(folder) / "run"), "--quiet"]
        start = time.perf_counter()
        subprocess.run(command, check=True, capture_output=True)
        return time.perf_counter() - start


def numpy_steps_per_second(plan: Plan, steps: int) -> float:
    """The numpy reference engine on the same kind of stream, one trial, for comparison."""
    from .engine import RealTimeRecurrentLearning, Simulator
    sim = Simulator(plan)
    learner = RealTimeRecurrentLearning(sim, 1)
    weights = initial_weights(plan, [0])
    inputs, targets = stream(sim.n_inputs, sim.n_outputs, steps)
    state = sim.zero_state(1)
    start = time.perf_counter()
    for x, target in zip(inputs, targets):
        _, grads, state, _ = learner.step(weights, state, x, target, "sum_of_squares")
        for name, grad in grads.items():
            weights[name] -= 1e-3 * grad
    return steps / (time.perf_counter() - start)


def fit_exponent(weights: list[int], seconds: list[float]) -> float:
    """Slope of log(time per step) against log(W)."""
    return float(np.polyfit(np.log(weights), np.log(seconds), 1)[0])


def torch_steps_per_second(steps: int, blocks: int = 4, cells: int = 2, width: int = 7) -> float | None:
    """The CERG-sized net trained online in PyTorch: gates and cell input from [x; h(t-1)] with
    h(t-1) and the previous state detached (the natural per-step version), SGD every step."""
    try:
        import torch
    except ImportError:
        return None
    torch.set_num_threads(1)
    dtype = torch.float64
    units = blocks * cells
    generator = torch.Generator().manual_seed(0)

    def parameter(*shape):
        return (torch.rand(*shape, generator=generator, dtype=dtype) * 0.4 - 0.2).requires_grad_()

    w_cell = parameter(units, width + units)
    w_gates = parameter(3 * blocks, width + units + 1)
    w_out = parameter(width, width + units + 1)
    parameters = [w_cell, w_gates, w_out]
    optimizer = torch.optim.SGD(parameters, lr=1e-3)
    inputs, targets = stream(width, width, steps)
    inputs, targets = torch.tensor(inputs, dtype=dtype), torch.tensor(targets, dtype=dtype)
    h = torch.zeros(units, dtype=dtype)
    s = torch.zeros(units, dtype=dtype)
    one = torch.ones(1, dtype=dtype)
    start = time.perf_counter()
    for t in range(steps):
        source = torch.cat([inputs[t], h.detach()])
        g = 4 * torch.sigmoid(w_cell @ source) - 2
        gates = torch.sigmoid(w_gates @ torch.cat([source, one])).view(3, blocks)
        i, f, o = (gate.repeat_interleave(cells) for gate in gates)
        s = f * s.detach() + i * g
        h = o * (2 * torch.sigmoid(s) - 1)
        y = torch.sigmoid(w_out @ torch.cat([inputs[t], h, one]))
        loss = 0.5 * ((y - targets[t]) ** 2).sum()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return steps / (time.perf_counter() - start)


def run_benchmarks(specs: Path, quick: bool = False, progress: Progress = lambda _: None) -> dict[str, Any]:
    from . import compile_spec
    scale = 10 if quick else 1
    results: dict[str, Any] = {}
    kernels: dict[str, str] = {}
    cerg = compile_spec(specs / "gers2000_cerg.yaml")
    timing = compile_spec(specs / "gers2002_timing.yaml")
    stages = 6
    done = 0

    def report(label: str) -> None:
        nonlocal done
        progress(ProgressReport("stages", done, stages, label))
        done += 1

    report("first use of a new spec: lstmgraph train, 1,000 steps")
    results["first_train_seconds"] = first_train_seconds(specs / "gers2000_cerg.yaml")
    report("specialised kernels of the CERG and timing nets (compiled unless cached)")
    results["cerg_specialised_load_seconds"] = compile_seconds(cerg)
    results["timing_specialised_load_seconds"] = compile_seconds(timing)
    results["cerg_specialised_lanes_load_seconds"] = compile_seconds(cerg, trials=2)
    results["timing_specialised_lanes_load_seconds"] = compile_seconds(timing, trials=2)

    def figure(key: str, plan: Plan, steps: int, trials: int, **options) -> None:
        """The figure with the specialised kernel, and (``key_interpreter``) with the interpreter."""
        results[key] = trial_steps_per_second(plan, steps, trials, kernel="specialised", **options)
        kernels[key] = "specialised"
        results[key + "_interpreter"] = trial_steps_per_second(plan, steps, trials, kernel="interpreter", **options)
        kernels[key + "_interpreter"] = "interpreter"

    report("CERG net, 1 / 10 / 100 trials")
    results["cerg_weights"] = cerg.n_parameters
    figure("cerg_steps_per_s", cerg, 400_000 // scale, 1)
    figure("cerg_forward_only_steps_per_s", cerg, 400_000 // scale, 1, learn=False)
    figure("cerg_population10_trial_steps_per_s", cerg, 100_000 // scale, 10)
    figure("cerg_population100_trial_steps_per_s", cerg, 20_000 // scale, 100)
    report("timing net, 1 / 10 / 100 trials")
    figure("timing_steps_per_s", timing, 2_000_000 // scale, 1)
    figure("timing_population10_trial_steps_per_s", timing, 400_000 // scale, 10)
    figure("timing_population100_trial_steps_per_s", timing, 50_000 // scale, 100)
    report("time per step against W, truncated and exact RTRL (interpreter)")
    # The interpreter: a specialised kernel per size would compile for minutes at 64 blocks.
    for rule, sizes, full in (("truncated_rtrl", [4, 8, 16, 32, 64], False), ("rtrl", [1, 2, 4, 8], True)):
        rows = []
        for blocks in sizes:
            plan = compile_plan(spec_from_data(scaling_spec(blocks)))
            steps = max(int(2_000_000 / plan.n_parameters / (plan.n_parameters ** (1.0 if full else 0.0))), 50) // scale
            rate = trial_steps_per_second(plan, max(steps, 20), 1, full_gradient=full)
            rows.append({"blocks": blocks, "weights": plan.n_parameters, "seconds_per_step": 1.0 / rate})
        results[f"{rule}_scaling"] = rows
        results[f"{rule}_exponent"] = fit_exponent([r["weights"] for r in rows], [r["seconds_per_step"] for r in rows])
        kernels[f"{rule}_scaling"] = "interpreter"
    results["peak_memory_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    report("PyTorch per-step loop (if installed)")
    torch_rate = torch_steps_per_second(20_000 // scale)
    results["torch_cerg_steps_per_s"] = torch_rate
    results["torch_ratio"] = None if torch_rate is None else results["cerg_steps_per_s"] / torch_rate
    results["torch_ratio_interpreter"] = (None if torch_rate is None
                                          else results["cerg_steps_per_s_interpreter"] / torch_rate)
    results["kernels"] = kernels
    progress(ProgressReport("stages", stages, stages, "done"))
    return results
