"""Online truncated-RTRL training speed of a spec: numpy reference engine vs compiled kernel.

    .venv/bin/python benchmarks/steps_per_second.py specs/gers2000_cerg.yaml --steps 200000 --trials 1 100

Prints steps per second (trial-steps per second for populations) of online training with an
update after every step, on the spec's own task stream. The first run of a spec compiles its
kernel (tens of seconds; cached in ~/.cache/lstmgraph/kernels), which is not timed.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import lstmgraph
from lstmgraph.engine import RealTimeRecurrentLearning, Simulator, initial_weights
from lstmgraph.engine.compiled import CompiledNetwork
from lstmgraph.tasks import make_task
from lstmgraph.training.optim import Optimizer
from lstmgraph.spec.models import LearningRateDecay


def task_stream(plan, steps: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    task = plan.document.spec.training.task
    source = make_task(task.name, task.options)
    rng = np.random.default_rng(seed)
    inputs, targets, count = [], [], 0
    while count < steps:
        sequence = source.sample(rng)
        inputs.append(sequence.inputs)
        targets.append(sequence.targets)
        count += len(sequence)
    return np.concatenate(inputs)[:steps], np.concatenate(targets)[:steps]


def compiled_rate(plan, inputs, targets, trials: int) -> float:
    training = plan.document.spec.training
    network = CompiledNetwork(plan, loss=training.loss)
    theta, fixed = network.pack_weights(initial_weights(plan, list(range(trials))))
    prev, traces = network.new_state(trials)
    velocity = np.zeros_like(theta)
    network.run(theta, fixed, velocity, prev, traces, inputs[:10], targets[:10], np.full(trials, 0.0))
    start = time.perf_counter()
    network.run(theta, fixed, velocity, prev, traces, inputs, targets,
                np.full(trials, training.learning_rate), training.momentum)
    return len(inputs) * trials / (time.perf_counter() - start)


def numpy_rate(plan, inputs, targets, trials: int) -> float:
    training = plan.document.spec.training
    sim = Simulator(plan)
    learner = RealTimeRecurrentLearning(sim, trials)
    optimizer = Optimizer(training.learning_rate, training.momentum, LearningRateDecay())
    weights = initial_weights(plan, list(range(trials)))
    state = sim.zero_state(trials)
    start = time.perf_counter()
    for x, target in zip(inputs, targets):
        _, grads, state, _ = learner.step(weights, state, x, target, training.loss)
        optimizer.apply(weights, grads)
    return len(inputs) * trials / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("spec")
    parser.add_argument("--steps", type=int, default=100_000)
    parser.add_argument("--numpy-steps", type=int, default=5_000)
    parser.add_argument("--trials", type=int, nargs="+", default=[1, 10, 100])
    arguments = parser.parse_args()
    plan = lstmgraph.compile_spec(arguments.spec)
    inputs, targets = task_stream(plan, arguments.steps)
    print(f"{plan.name}: {plan.n_parameters} weights, online truncated RTRL, float64")
    print(f"  numpy engine, 1 trial: {numpy_rate(plan, inputs[:arguments.numpy_steps], targets[:arguments.numpy_steps], 1):,.0f} steps/s")
    for trials in arguments.trials:
        rate = compiled_rate(plan, inputs, targets, trials)
        print(f"  compiled kernel, {trials} trial(s): {rate:,.0f} trial-steps/s")


if __name__ == "__main__":
    main()
