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
from typing import Any

import numpy as np

from ..progress import ProgressReport
from ..tasks import Task


def data_rng(seed: int, purpose: int) -> np.random.Generator:
    """The generator of one data stream of a trial (purposes: 0 training, 1 test, 2 sets)."""
    return np.random.default_rng(np.random.SeedSequence([seed, 1997, purpose]))


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
    return json.loads(str(array))


#: Where every protocol's counters hold the sequences or training streams presented, and the
#: training steps.
PRESENTED, STEPS_TRAINED = 0, 1


def checkpoint_place(arrays: dict[str, np.ndarray]) -> tuple[int, int, float]:
    """Where a trial's `Trial.checkpoint` stands: units presented, steps trained, CPU seconds."""
    counters = arrays["trial/counters"]
    return int(counters[PRESENTED]), int(counters[STEPS_TRAINED]), float(arrays["trial/seconds"])


class Trial:
    """One trial of a protocol (subclasses: `sequences.SequenceTrial`, `streams.StreamTrial`).

    ``engine`` is the trial's network (`training.engines.CompiledEngine`, its weights drawn
    from ``seed``); the data come from ``seed`` too. ``budget_steps`` caps the training steps.
    """

    #: What the protocol counts ("sequences", "training streams").
    unit = ""
    #: The protocol's counters (int64; a subclass sets them), kept in a checkpoint; every
    #: protocol's begin with the units presented and the steps trained (`PRESENTED`, `STEPS_TRAINED`).
    counters: np.ndarray

    def __init__(self, engine, task: Task, protocol, seed: int, budget_steps: int | None = None):
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
        return ProgressReport(self.unit, self.presented(), label=f"trial {self.seed}", figures=self._figures())

    # -- state ------------------------------------------------------------------------------------
    def checkpoint(self) -> dict[str, np.ndarray]:
        """The trial's whole state between two pieces (not after it ended: its row is the result)."""
        if self.row is not None:
            raise ValueError(f"trial {self.seed} has ended; its result row is all that is left")
        arrays = {f"network/{name}": value for name, value in self.engine.checkpoint().items()}
        arrays["trial/seconds"] = np.array(self.seconds)
        arrays.update({f"trial/{name}": value for name, value in self._state().items()})
        return arrays

    def restore(self, arrays: dict[str, np.ndarray]) -> None:
        """Continue from `checkpoint`'s arrays."""
        self.engine.restore({name[len("network/"):]: value for name, value in arrays.items()
                             if name.startswith("network/")})
        self.seconds = float(arrays["trial/seconds"])
        self._restore({name[len("trial/"):]: value for name, value in arrays.items() if name.startswith("trial/")})

    # -- what a protocol defines ----------------------------------------------------------------
    @staticmethod
    def _advance_all(trials: list["Trial"], steps: int | None) -> None:
        """Advance each of ``trials`` (one experiment's, not ended) by about ``steps``; a
        protocol that runs trials side by side overrides it."""
        for trial in trials:
            trial._advance(steps)

    def _advance(self, steps: int | None) -> None:
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


def advance_together(trials: list[Trial], steps: int | None = None) -> list[ProgressReport]:
    """`Trial.advance` for trials of one experiment at once: side by side in one block of
    lanes where the protocol runs so (stream trials; each ends exactly as it would alone), else
    one after another. The CPU time is shared equally among the trials that ran."""
    running = [trial for trial in trials if trial.row is None]
    if running:
        start = time.process_time()  # CPU time: a run that waits (or is paused) for other work costs none
        type(running[0])._advance_all(running, steps)
        share = (time.process_time() - start) / len(running)
        for trial in running:
            trial.seconds += share
            if trial.row is not None:
                trial.row["seconds"] = round(trial.seconds, 3)
    return [trial.report() for trial in trials]
