"""What every protocol shares: a trial as a job that runs in pieces, its data generators and
the shape of its result row.

A `Trial` is one network trained and tested under its protocol. `advance` runs it for about a
given number of training steps and stops at the next point where its whole state can be saved
(between sequences, or before a training stream), or where it ends; `checkpoint` gives that
state as named arrays (the network's: weights, velocity, rate, activations, traces; the
protocol's counters; the position of each data stream as a generator state) and `restore`
takes it back. A trial run in pieces, on any worker, ends exactly as one run straight through:
the same result row and bit-identical weights (tests/experiments/test_trial.py).
"""

from __future__ import annotations

import json
import time
from contextlib import contextmanager
from typing import Any, Iterator

import numpy as np

from ..engine.devices import DEVICES
from ..engine.weights import initial_weights
from ..limits import MAX_DEPTH, is_whole_number
from ..plan import Plan
from ..progress import Progress, ProgressReport
from ..tasks import Task, make_task
from .folder_files import depth_of


def result_row(seed: int, solved: bool, count: int, steps: int, diverged: bool = False,
               **extra: Any) -> dict[str, Any]:
    """One trial's result: ``count`` sequences or training streams presented, ``to_success``
    the same when solved."""
    return {"seed": seed, "solved": solved, "to_success": count if solved else None, "presented": count,
            "steps": steps, "diverged": diverged, **extra}


def json_array(value: Any) -> np.ndarray:
    """A JSON-able value (a generator's state, with its 128-bit integers) as a string array:
    checkpoints hold arrays only, and no pickle."""
    return np.array(json.dumps(value))


def from_json_array(array: np.ndarray) -> Any:
    """`json_array`'s value back; `ValueError` for text that is not JSON or nests deeper than
    `limits.MAX_DEPTH` (a damaged or hostile checkpoint; a generator's state holds 128-bit
    integers, so digits are left to json's own bound)."""
    text = str(array)
    deepest = depth_of(text)
    if deepest > MAX_DEPTH:
        raise ValueError(f"a checkpoint's data position nested {deepest} deep; expected at most {MAX_DEPTH}")
    return json.loads(text)


#: Where every protocol's counters hold the sequences or training streams presented, and the
#: training steps.
PRESENTED, STEPS_TRAINED = 0, 1


def checkpoint_place(arrays: dict[str, np.ndarray]) -> tuple[int, int, float]:
    """Where a trial's `Trial.checkpoint` stands: units presented, steps trained, CPU seconds."""
    counters = arrays["trial/counters"]
    return int(counters[PRESENTED]), int(counters[STEPS_TRAINED]), float(arrays["trial/seconds"])


def trial_engine(plan: Plan, seed: int, kernel: str | None = None):
    """A trial's network: the compiled engine with the plan's training settings (online RTRL,
    truncated or exact, momentum SGD), weights drawn from ``seed``, running ``kernel``
    (`engine.compiled.KERNELS`; the kernels give bit-identical results). `EngineError` names
    what the compiled engine cannot do (e.g. a spec asking for BPTT)."""
    from ..training.compiled_engine import CompiledEngine  # numba: only when a trial runs
    from ..training.engines import select_engine
    from ..training.optim import Optimizer

    training = plan.training
    select_engine(plan, training, "compiled")
    return CompiledEngine(plan, training, 1, Optimizer.for_training(training), initial_weights(plan, [seed]), kernel)




class DeviceError(ValueError):
    """A device that is not one of `DEVICES`, or has no driver for the protocol."""


def check_device(protocol, device: str, learning_rule: str | None = None) -> None:
    """`DeviceError` unless ``protocol``'s trials learning by ``learning_rule`` run on ``device``."""
    if device not in DEVICES:
        raise DeviceError(f"device must be one of {', '.join(DEVICES)}, not {device!r}")
    if device != "cpu" and device not in protocol.trial_class.DEVICES:
        raise DeviceError(f"the {protocol.kind} protocol runs on {', '.join(protocol.trial_class.DEVICES)} only; "
                          f"its driver on {device} is not built yet (docs/gpu.md in the lstmgraph source)")
    if device != "cpu" and learning_rule == "bptt":
        raise DeviceError(f"trials learning by bptt run on the CPU only (on {device} they learn by RTRL): "
                          f"leave out --device")


def new_trial(plan: Plan, task: str, task_options: dict[str, Any], protocol, seed: int,
              budget_steps: int | None = None, kernel: str | None = None, device: str = "cpu") -> "Trial":
    """Trial ``seed`` of ``protocol`` on ``plan`` with a fresh ``task``: weights and data from
    the seed, the compiled engine running ``kernel`` (an experiment's trial, or a worker's from
    the task and protocol its piece carries), its driver on ``device`` (`DEVICES`)."""
    check_device(protocol, device, plan.training.learning_rule)
    trial = protocol.make_trial(trial_engine(plan, seed, kernel), make_task(task, task_options), seed, budget_steps)
    trial.device = device
    return trial


def run_trial(engine, task: Task, protocol, seed: int, budget_steps: int | None = None,
              progress: Progress | None = None) -> dict[str, Any]:
    """One trial under its protocol straight through, timed; ``engine`` is trained in place."""
    return protocol.make_trial(engine, task, seed, budget_steps).run(progress)


class CheckpointMismatch(ValueError):
    """A checkpoint that is not this trial's (another seed or protocol, or damaged arrays)."""


class Trial:
    """One trial of a protocol (subclasses: `sequences.SequenceTrial`, `streams.StreamTrial`).

    ``engine`` is the trial's network (`training.compiled_engine.CompiledEngine`, its weights drawn
    from ``seed``); the data come from ``seed`` too. ``budget_steps`` caps the training steps.
    """

    #: The protocol's counters (int64; a subclass sets them), kept in a checkpoint; every
    #: protocol's begin with the units presented and the steps trained (`PRESENTED`, `STEPS_TRAINED`).
    counters: np.ndarray
    #: Where its protocol's driver runs: ``cpu``, or ``cuda`` where the protocol has a GPU
    #: driver (`new_trial`).
    device: str = "cpu"
    #: The devices this protocol's driver runs on (a subclass with a GPU driver adds ``cuda``).
    DEVICES: tuple[str, ...] = ("cpu",)
    #: Whether its GPU driver reads each trial's protocol settings, so that trials of different
    #: protocols (of this kind) share a population.
    GPU_PROTOCOL_PER_TRIAL = False
    #: Whether its driver's kernel calls end where a sequence ends, so that a trial can learn by
    #: BPTT over whole sequences (a stream never ends one).
    WHOLE_SEQUENCES = False

    def __init__(self, engine, task: Task, protocol, seed: int, budget_steps: int | None = None):
        if getattr(engine, "segments", False) and not self.WHOLE_SEQUENCES:
            from ..training.engines import EngineError

            raise EngineError(f"the {protocol.kind} protocol's trials learn online by RTRL only: BPTT needs the "
                              f"end of a sequence, which a stream never reaches (use truncated_rtrl or rtrl)")
        plan = engine.plan
        if (task.n_inputs, task.n_outputs) != (plan.n_inputs, plan.n_outputs):
            raise ValueError(f"task '{task.name}' has {task.n_inputs} inputs and {task.n_outputs} outputs, "
                             f"network '{plan.name}' {plan.n_inputs} and {plan.n_outputs}")
        _check_steps("budget_steps", budget_steps, 0)
        self.engine = engine
        self.task = task
        self.protocol = protocol
        self.seed = seed
        self.budget_steps = budget_steps
        self.seconds = 0.0  # CPU time over every piece
        self.row: dict[str, Any] | None = None

    @property
    def done(self) -> bool:
        return self.row is not None

    def advance(self, steps: int | None = None) -> ProgressReport:
        """Run about ``steps`` more training steps (None: to the end); returns where it stands."""
        return advance_together([self], steps)[0]

    def run(self, progress=None, report_steps: int = 100_000) -> dict[str, Any]:
        """Run to the end, reporting every ``report_steps`` steps; returns the result row."""
        while self.row is None:
            report = self.advance(report_steps)
            if progress is not None and self.row is None:
                progress(report)
        return self.row

    def report(self) -> ProgressReport:
        return ProgressReport(self.protocol.counted, self.presented(), label=f"trial {self.seed}",
                              figures=self._figures())

    # -- state ------------------------------------------------------------------------------------
    def checkpoint(self) -> dict[str, np.ndarray]:
        """The trial's whole state between two pieces (not after it ended: its row is the result)."""
        if self.row is not None:
            raise ValueError(f"trial {self.seed} has ended; its result row is all that is left")
        arrays = {f"network/{name}": value for name, value in self.engine.checkpoint().items()}
        arrays["trial/seed"] = np.array(self.seed, dtype=np.int64)
        arrays["trial/kind"] = np.array(self.protocol.kind)
        arrays["trial/seconds"] = np.array(self.seconds)
        arrays.update({f"trial/{name}": value for name, value in self._state().items()})
        return arrays

    def restore(self, arrays: dict[str, np.ndarray]) -> None:
        """Continue from `checkpoint`'s arrays; `CheckpointMismatch` if they are another trial's
        (seed, protocol kind) or hold counters or a time that do not fit."""
        self._check_owner(arrays)
        self.engine.restore({name[len("network/"):]: value for name, value in arrays.items()
                             if name.startswith("network/")})
        self.seconds = float(arrays["trial/seconds"])
        self._restore({name[len("trial/"):]: value for name, value in arrays.items() if name.startswith("trial/")})

    def _check_owner(self, arrays: dict[str, np.ndarray]) -> None:
        try:
            seed, kind = int(arrays["trial/seed"]), str(arrays["trial/kind"])
            counters, seconds = np.asarray(arrays["trial/counters"]), float(arrays["trial/seconds"])
        except (KeyError, TypeError, ValueError) as error:
            raise CheckpointMismatch(f"no trial/seed, trial/kind, trial/counters or trial/seconds ({error})") from None
        if seed != self.seed or kind != self.protocol.kind:
            raise CheckpointMismatch(f"it is trial {seed}'s of a {kind} protocol, not trial {self.seed}'s "
                                     f"of a {self.protocol.kind} protocol")
        if counters.shape != self.counters.shape or counters.dtype.kind != "i" or (counters < 0).any():
            raise CheckpointMismatch(f"its counters {counters.shape} are not this protocol's {self.counters.shape}")
        if not (np.isfinite(seconds) and seconds >= 0):
            raise CheckpointMismatch(f"its CPU time is {seconds}")

    def runs_beside(self, other: "Trial") -> bool:
        """Whether ``other`` can run side by side with this trial: the same kind of protocol,
        device and program (`CompiledNetwork.program_digest`). On the CPU the same protocol and
        momentum too (its drivers take one of each for a block of lanes); on the GPU the same
        protocol unless its driver reads one per trial (`GPU_PROTOCOL_PER_TRIAL`). Rates,
        weights and data may differ: a sweep's settings of one net share a GPU population."""
        mine, theirs = self.engine, other.engine
        on_gpu = self.device == "cuda"
        return (type(other) is type(self) and other.device == self.device
                and theirs.network.program_digest == mine.network.program_digest
                and (other.protocol == self.protocol or on_gpu and self.GPU_PROTOCOL_PER_TRIAL)
                and (on_gpu or theirs.training.momentum == mine.training.momentum))

    # -- what a protocol defines ----------------------------------------------------------------
    @staticmethod
    def _advance_all(trials: list["Trial"], steps: int | None) -> None:
        """Advance ``trials`` (not ended, each `runs_beside` the first) by about ``steps`` each,
        side by side in one block of lanes."""
        raise NotImplementedError

    def presented(self) -> int:
        """Sequences or training streams presented so far."""
        return int(self.counters[PRESENTED])

    def steps_trained(self) -> int:
        return int(self.counters[STEPS_TRAINED])

    def _figures(self) -> dict[str, float]:
        raise NotImplementedError

    def _state(self) -> dict[str, np.ndarray]:
        raise NotImplementedError

    def _restore(self, arrays: dict[str, np.ndarray]) -> None:
        raise NotImplementedError


def _check_steps(name: str, steps: int | None, least: int) -> None:
    """`ValueError` unless ``steps`` is None or a whole number of at least ``least``."""
    if steps is not None and not is_whole_number(steps, least):
        raise ValueError(f"{name} is None or a whole number >= {least}, not {steps!r}")


@contextmanager
def _numba_compiling() -> Iterator[list[float]]:
    """The CPU time numba spends compiling in this thread inside the block, its "numba:compile"
    events (real compiles, not cache loads), nested ones counted once: ``[seconds]``, filled as
    they end. numba-cuda fires no such event: a GPU kernel's compilation is its trials' time."""
    import threading

    from numba.core.event import Listener, install_listener  # numba: only when trials run

    spent, ours = [0.0], threading.get_ident()

    class CompileTime(Listener):
        depth, began = 0, 0.0

        def on_start(self, event) -> None:
            if threading.get_ident() != ours:  # (another thread of a threaded worker)
                return
            if self.depth == 0:
                self.began = time.thread_time()
            self.depth += 1

        def on_end(self, event) -> None:
            if threading.get_ident() != ours:
                return
            self.depth -= 1
            if self.depth == 0:
                spent[0] += time.thread_time() - self.began

    with install_listener("numba:compile", CompileTime()):
        yield spent


def advance_together(trials: list[Trial], steps: int | None = None) -> list[ProgressReport]:
    """`Trial.advance` for some trials at once: those that can (`Trial.runs_beside`) side by
    side, in one block of lanes on the CPU or one population on the GPU (each ends exactly as it
    would alone), the groups one after another. Each group's CPU time is shared equally among
    its trials, less the time numba spent compiling (once per installation: a cost of the first
    run, not of its trials). `ValueError` for ``steps`` below 1."""
    _check_steps("steps", steps, 1)
    groups: list[list[Trial]] = []
    for trial in trials:
        if trial.row is None:
            group = next((group for group in groups if group[0].runs_beside(trial)), None)
            if group is None:
                groups.append([trial])
            else:
                group.append(trial)
    for group in groups:
        start = time.process_time()  # CPU time: a run that waits (or is paused) for other work costs none
        with _numba_compiling() as compiling:
            type(group[0])._advance_all(group, steps)
        share = max(time.process_time() - start - compiling[0], 0.0) / len(group)
        for trial in group:
            trial.seconds += share
            if trial.row is not None:
                trial.row["seconds"] = round(trial.seconds, 3)
    return [trial.report() for trial in trials]
