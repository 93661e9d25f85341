"""What a run of experiments is checked for before any results folder is made or worker
started (`schedule.run_experiments`, `sweep_run.check_sweep`; the CLI prints a run's plan once
they pass), so a refused run writes nothing: the counts and times asked for, the device, the
spec and the program its training runs (the plan compiled once, the program lowered once)."""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

import numpy as np

from ..files import BUNDLED_SPECS
from ..limits import MAX_CHECKPOINT_SECONDS, MAX_LANES, MAX_STEPS, check_count
from ..plan import Plan
from ..training.engines import check_program
from .experiment import Experiment
from .folder import ResultsConflict, ResultsFolder, check_trial_count
from .folder_settings import settings
from .trial import DeviceError, check_device, trial_engine
from .workers import check_cluster

def check_run_device(experiment: Experiment, plan: Plan, device: str, cluster: Any) -> None:
    """`trial.DeviceError` for a device the experiment's protocol (or ``plan``'s learning rule)
    has no driver on, or the GPU with a cluster; `GpuUnavailable` where no GPU is present;
    `ClusterError` for a cluster address of the wrong form or no Dask (before anything is written)."""
    check_device(experiment.protocol, device, plan.training.learning_rule)
    if device == "cuda":
        from ..engine.gpu import cuda_module

        if cluster is not None:
            raise DeviceError("a run on the GPU uses this machine's GPU: leave out --cluster")
        cuda_module()
    if cluster is not None:
        check_cluster(cluster)


def check_run(experiment: Experiment, trials: int, budget_steps: int | None, specs: Path,
              checkpoint_seconds: float, lanes: int = 1, device: str = "cpu", cluster: Any = None,
              checked: set[str] | None = None, out: Path | None = None) -> None:
    """What a run of ``experiment`` is checked for before any folder is made or worker started
    (`run_experiments`, before its ``checks_passed``): the counts, the device, a spec
    error located in its file, a program over a limit (``checked``: `engines.check_program`'s);
    with ``out``, a folder there of other settings (`ResultsConflict`; read only: the run
    checks it again under its lock)."""
    check_run_settings(trials, budget_steps, checkpoint_seconds, lanes)
    plan = experiment.plan(specs)
    check_run_device(experiment, plan, device, cluster)
    check_program(plan, checked)
    if out is not None and (folder := ResultsFolder(out)).reach():
        folder.check_settings(settings(experiment, budget_steps, specs, device), experiment.name)


def check_run_settings(trials: int, budget_steps: int | None, checkpoint_seconds: float, lanes: int) -> None:
    """`ValueError` (`limits.LimitError` for a count) naming a count or a time out of
    range, before anything is written."""
    check_trial_count(trials)
    if budget_steps is not None:
        check_count("a trial's step budget (--max-steps)", budget_steps, MAX_STEPS)
    if not 1 <= checkpoint_seconds <= MAX_CHECKPOINT_SECONDS:  # (NaN fails too)
        raise ValueError(f"checkpoint_seconds must be from 1 to {MAX_CHECKPOINT_SECONDS:,.0f}, not {checkpoint_seconds}")
    if not (type(lanes) is int and 1 <= lanes <= MAX_LANES):
        raise ValueError(f"lanes must be a whole number from 1 to {MAX_LANES}, not {lanes!r}")


def compile_note(experiment: Experiment, kernel: str, specs: Path = BUNDLED_SPECS) -> str | None:
    """What a run of ``experiment``'s trials on this machine's CPU says before its first trial on
    this installation (`interpreter.compile_wait_note`): the kernel its trials run (``kernel``:
    `folder_run.trials_kernel`; the interpreter, its BPTT form, or the net's specialised kernel)
    and its protocol's driver bound to it, where numba's cache holds either not yet; else None."""
    from ..engine.compiled import interpreter
    from ..engine.compiled.bound import bind_kernel
    from ..engine.compiled.lanes import LaneBlock

    run = LaneBlock.gather([trial_engine(experiment.plan(specs), 0, kernel)]).kernel
    driver = bind_kernel(importlib.import_module(experiment.protocol.driver)._drive, run)
    words = ("the compiled engine" if run.py_func.__module__.startswith("lstmgraph_interpreter")
             else "the kernel specialised to its net")
    return interpreter.compile_wait_note([what for what, function in
                                          ((words, run), (f"the driver of its {experiment.protocol.kind} protocol", driver))
                                          if not interpreter.function_compiled(function)])


def cap_note(experiment: Experiment, budget_steps: int | None) -> str | None:
    """Why a cap of ``budget_steps`` (`--max-steps`) leaves a trial of ``experiment`` unlikely or
    unable to succeed, or None: the sequences its success test needs in a row do not fit in it at
    the mean length of 100 of the task's sequences, or not even at the shortest (seeded: the same
    note every time)."""
    needed = experiment.protocol.sequences_to_succeed()
    if budget_steps is None or needed is None:
        return None
    task, rng = experiment.make_task(), np.random.default_rng(0)
    lengths = [len(task.sample(rng)) for _ in range(100)]
    mean = float(np.mean(lengths))
    if budget_steps >= needed * mean:
        return None
    chance = ("no trial can succeed" if budget_steps < needed * min(lengths)
              else "a trial succeeds only if its sequences run short")
    return (f"--max-steps {budget_steps:,} ends each trial of {experiment.name} after about {budget_steps / mean:,.0f} "
            f"sequences ({mean:,.0f} steps on average), before the {needed:,} its success test needs: {chance}; "
            f"give --max-steps above {needed * mean:,.0f}, or vary protocol.window")


def beyond_note(experiment: Experiment, trials: int, out: Path) -> str | None:
    """Where ``out`` holds finished trials of seeds beyond the ``trials`` asked (an earlier run
    of more): they stay in trials.jsonl, but the summary the run writes is of the first
    ``trials``; said before the run, with the count that keeps them; else None."""
    folder = ResultsFolder(out)
    try:
        if not folder.reach():
            return None
        stored, _ = folder.read_rows(experiment.protocol, experiment.protocol.limit)
    except ResultsConflict:  # (the run names it, and refuses)
        return None
    beyond = sorted(row["seed"] for row in stored if row["seed"] >= trials)
    if not beyond:
        return None
    many = len(beyond) > 1
    return (f"{out} holds {len(beyond)} finished trial{'s with seeds' if many else ' with a seed'} beyond the "
            f"{trials:,} asked: kept in its trials.jsonl, but left out of the summary this run writes (results.json, "
            f"trials.csv, results.png); give --trials {beyond[-1] + 1:,} to keep {'them' if many else 'it'} in")
