"""The 2000/2002 stream protocols (`StreamProtocol`), run in compiled code.

A trial alternates one training stream (from a zero state, online updates, until its first
error or ``train_limit`` steps or sequences) with ``test_streams`` frozen test streams (to their
first error or ``test_limit``), up to ``max_streams`` training streams: up to 10^7 of them in the
2002 experiments, most a few steps long while a net is still learning. In Python each stream
cost about 0.2 ms of overhead (measured: 20,000 PFG training streams with their 200,000 test
streams took 39 s for 46,000 training steps), so `StreamTrial` runs the whole loop in one
numba function (`driver.drive`) that calls the compiled interpreter for each stream and only
returns to Python to draw more data or report progress. `run_streams_reference` is the same
protocol written plainly in Python, stream by stream; the test suite checks that both give the
same result row.

Data: `StreamData` lays a task's sequences end to end in arrays, drawn in order from the
trial's generator. Every stream starts at a sequence start: after a stream stops (at an error
or its limit), the rest of the sequence it stopped in is skipped and the next stream begins
with the next sequence; no other draw is skipped, so what a stream sees does not depend on
how the arrays were refilled.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Any, ClassVar, Literal

import numpy as np

from ..progress import Progress, ProgressReport
from ..success import SuccessTest
from ..tasks import Task
from .counters import (CHUNK, NOT_RUN, STREAM_COUNTERS, STREAM_SAVED, STREAM_SETTINGS, WORK, Status,
                       StreamCounter as Counter, StreamSetting as Setting)
from .data import REFILL, StreamData, data_rng, draw_all, gpu_draw_threads, next_start
from .protocols import Protocol, ProtocolError, check_positive, mean_or_none, register, trial_of
from .trial import Trial, from_json_array, json_array, result_row


@register
@dataclass(frozen=True)
class StreamProtocol(Protocol):
    """Gers et al. 2000, 2002: a continual stream, no reset inside it (unless
    ``reset_each_sequence``, the "external reset" baseline); "perfect" when every test stream
    reaches its limit, "good" when their mean reaches ``good_score``."""

    kind: ClassVar[str] = "streams"
    driver: ClassVar[str] = "lstmgraph.experiments.stream_driver"
    counted: ClassVar[str] = "training streams"
    success_word: ClassVar[str] = "perfect"
    classes: ClassVar[tuple[str, ...]] = ("perfect", "good", "rest")
    limit_setting: ClassVar[str] = "max_streams"
    added: ClassVar[dict[str, Any]] = {"rate_decay_every": 0}
    rate_key: ClassVar[str] = "perfect_percent"
    terms: ClassVar[str] = ("A training stream: one continual input stream the net learns from online, stopped at its "
                            "first error or at the limit. A trial is perfect when every frozen test stream after its "
                            "last training stream runs to the limit without an error.")

    tolerance: float
    unit: Literal["steps", "sequences"]
    train_limit: int
    test_limit: int
    max_streams: int
    test_streams: int = 10
    # The "decay" rows: the learning rate is multiplied by this after each training stream that
    # ran its full length without an error. Applied after every stream (mostly a few symbols
    # long early on) it vanishes before anything is learned: 0 of 10 CERG nets, docs/results.md.
    rate_decay: float = 1.0
    # Another reading of when it decays: after every ``rate_decay_every``-th training stream,
    # whatever its end (0: after each error-free one, as above).
    rate_decay_every: int = 0
    reset_each_sequence: bool = False  # the "external reset" baseline
    good_score: float = 1000.0
    # What an error is: an output off its judged value by ``tolerance`` or more, or (a
    # classification's "misclassification") a unit judged 1 not more active than every other.
    success: Literal["tolerance", "most_active"] = "tolerance"
    # A test phase only decides whether training stops (every stream reached its limit), so one
    # may end at its first failing stream: the rest are not run (`NOT_RUN`), the same decision at
    # a fraction of the cost for a net that hovers near the limit. The last phase of a trial (at
    # ``max_streams`` or its step budget) still runs every stream, for its class. The later test
    # streams see other draws of the same task, so a trial's row differs from the plain
    # protocol's in its draws only (`reproduce --protocol-option test_phase_stops_at_failure=true`).
    test_phase_stops_at_failure: bool = False

    def __post_init__(self) -> None:
        SuccessTest(self.success, self.tolerance)  # (ValueError for a test that does not exist)
        if self.unit not in ("steps", "sequences"):
            raise ValueError(f"unit is 'steps' or 'sequences', not {self.unit!r}")
        check_positive(self, "train_limit", "test_limit", "max_streams", "test_streams")
        if self.test_streams > MAX_TEST_STREAMS:
            raise ValueError(f"test_streams must be at most {MAX_TEST_STREAMS:,}, not {self.test_streams}")
        if not 0 < self.rate_decay <= 1:
            raise ValueError(f"rate_decay must be in (0, 1], not {self.rate_decay}")
        if self.rate_decay_every < 0:
            raise ValueError(f"rate_decay_every must be 0 (after each error-free training stream) or more, "
                             f"not {self.rate_decay_every}")

    def check_task(self, task: Task) -> None:
        """A deterministic task (every sample the same sequence, e.g. PFG) makes every test stream
        of a phase the same stream from the same zero state with the same frozen weights, so the
        same score: such a row runs one test stream a phase, and more are refused."""
        if getattr(task, "deterministic", False) and self.test_streams != 1:
            raise ProtocolError(f"test_streams must be 1 for the {task.name} task, which draws the same sequence "
                                f"every time (every test stream would score the same), not {self.test_streams}")

    @classmethod
    def summary_fields(cls, rows: list[dict[str, Any]]) -> dict[str, Any]:
        """The share of each class (perfect, good, rest) and the mean score of the last test phase."""
        fields: dict[str, Any] = {
            f"{label}_percent": 100.0 * sum(row.get("class") == label for row in rows) / len(rows) if rows else None
            for label in cls.classes}
        fields["mean_test_score"] = mean_or_none([row["score"] for row in rows])
        return fields

    @classmethod
    def rate_rows(cls, summary: dict[str, Any], published: dict[str, Any], show) -> list[tuple[str, str, str]]:
        rows = [(f"% {label}", show(summary[f"{label}_percent"]), show(published.get(f"{label}_percent")))
                for label in cls.classes]
        return rows + [("mean test stream length", show(summary["mean_test_score"], 1), "-")]

    @property
    def resets_each_sequence(self) -> bool:
        """The setting ``reset_each_sequence`` under the name every protocol answers to."""
        return self.reset_each_sequence

    def describe(self) -> str:
        reset = "state reset at each sequence start" if self.reset_each_sequence else "no reset inside a stream"
        when = (f"every {self.rate_decay_every:,} training streams" if self.rate_decay_every
                else "each error-free training stream")
        decay = f"; learning rate x{self.rate_decay} after {when}" if self.rate_decay != 1 else ""
        error = ("the target's unit not the most active" if self.success == "most_active"
                 else f"|error| >= {self.tolerance}")
        stop = (" (a test phase ends at its first failing stream, but for the last)"
                if self.test_phase_stops_at_failure else "")
        return (f"continual streams, {reset}; a training stream stops at its first error "
                f"({error}) or after {self.train_limit:,} {self.unit}; then "
                f"{self.test_streams} frozen test stream{'s' if self.test_streams != 1 else ''} of up to "
                f"{self.test_limit:,} {self.unit}{stop}; "
                f"perfect = all reach it; good = mean >= {self.good_score:,.0f}; "
                f"at most {self.max_streams:,} training streams{decay}")


#: The most test streams a phase runs (each lane keeps their scores).
MAX_TEST_STREAMS = 1_000_000

#: Training streams between progress reports.
REPORT_EVERY = 100


# -- the protocol, stream by stream, in Python (the reference) ------------------------------
def stream_score(network, data: StreamData, protocol: StreamProtocol, limit: int,
                 learn: bool) -> tuple[int, int]:
    """Run one stream from a zero state until its first error or ``limit`` units; returns
    (units right before the first error, steps run) and moves the cursor past the stream."""
    unit, steps_unit = protocol.unit, protocol.unit == "steps"
    data.ensure(limit, unit)
    position = data.position
    done = steps_run = 0
    while done < limit:
        if protocol.reset_each_sequence:
            end = next_start(data.ends, position + 1)
            stop = min(end, position + limit - done) if steps_unit else end
        else:
            end = stop = position + limit if steps_unit else \
                int(np.searchsorted(data.counts, data.counts[position] + limit))
        network.reset()
        steps, outputs = network.present(data.inputs[position:stop], data.targets[position:stop], learn,
                                         protocol.success_test.kernel_tolerance,
                                         data.judged[position:stop] if data.apart else None)
        steps_run += steps
        last = position + steps - 1
        if steps < stop - position or not protocol.success_test.steps_correct(
                outputs[-1:], data.judged[last:last + 1])[0]:
            if protocol.reset_each_sequence:
                right = done + steps - 1 if steps_unit else done
            else:
                right = steps - 1 if steps_unit else int(data.counts[last] - data.counts[position])
            data.position = next_start(data.ends, position + steps)
            return right, steps_run
        if not protocol.reset_each_sequence:
            done = limit
        else:
            done += stop - position if steps_unit else 1
        position = next_start(data.ends, end)
    data.position = position
    return limit, steps_run


def _trial_data(task: Task, seed: int) -> tuple[StreamData, StreamData]:
    """A trial's training and test data, both from its seed."""
    return StreamData(task, data_rng(seed, 0)), StreamData(task, data_rng(seed, 1))


def run_streams_reference(network, task: Task, protocol: StreamProtocol, seed: int,
                          budget_steps: int | None = None, progress: Progress | None = None) -> dict[str, Any]:
    """One trial, stream by stream in Python: the plain statement of what `StreamTrial` does."""
    training, testing = _trial_data(task, seed)
    streams = steps = 0
    scores = [0] * protocol.test_streams
    solved = False
    while streams < protocol.max_streams and (budget_steps is None or steps < budget_steps):
        right, run = stream_score(network, training, protocol, protocol.train_limit, learn=True)
        streams += 1
        steps += run
        every = protocol.rate_decay_every
        if (streams % every == 0) if every else right >= protocol.train_limit:
            network.rate *= protocol.rate_decay
        if not network.finite():
            return result_row(seed, False, streams, steps, diverged=True, score=_mean(scores, streams - 1))
        last_phase = streams >= protocol.max_streams or (budget_steps is not None and steps >= budget_steps)
        scores = []
        while len(scores) < protocol.test_streams:
            scores.append(stream_score(network, testing, protocol, protocol.test_limit, learn=False)[0])
            if protocol.test_phase_stops_at_failure and scores[-1] < protocol.test_limit and not last_phase:
                scores += [NOT_RUN] * (protocol.test_streams - len(scores))
        if progress and streams % REPORT_EVERY == 0:
            progress(ProgressReport(protocol.counted, streams, label=f"trial {seed}",
                                    figures={"score": _mean(scores, streams)}))
        if min(scores) >= protocol.test_limit:
            solved = True
            break
    return _finish(protocol, seed, solved, streams, steps, _mean(scores, streams))


def _mean(scores: list[int] | np.ndarray, streams: int) -> float:
    """The mean score of the test streams run in the last test phase."""
    run = [score for score in scores if score != NOT_RUN]
    return float(np.mean(run)) if streams else 0.0


def _finish(protocol: StreamProtocol, seed: int, solved: bool, streams: int, steps: int,
            score: float) -> dict[str, Any]:
    row = result_row(seed, solved, streams, steps, score=score)
    row["class"] = "perfect" if solved else ("good" if score >= protocol.good_score else "rest")
    return row


@trial_of(StreamProtocol)
class StreamTrial(Trial):
    """One trial of a 2000/2002 stream experiment: the loop of `run_streams_reference`, run in
    compiled code (`driver.drive`), alone or side by side with other trials of its experiment
    in one block of lanes (`advance_together`); it returns to Python to draw more data, or
    pauses before a training stream (where the whole state is the network, the counters, the
    last test scores and the two data positions)."""


    DEVICES = ("cpu", "cuda")
    #: The GPU driver reads each trial's protocol (its settings, tolerance and rate decay).
    GPU_PROTOCOL_PER_TRIAL = True

    def __init__(self, engine, task: Task, protocol: StreamProtocol, seed: int, budget_steps: int | None = None):
        super().__init__(engine, task, protocol, seed, budget_steps)
        self.training, self.testing = _trial_data(task, seed)
        self.counters = np.zeros(STREAM_SAVED, dtype=np.int64)  # its place: `counters.StreamCounter`
        self.scores = np.zeros(protocol.test_streams, dtype=np.int64)
        population = engine.population
        if len(population.lanes) != 1 or population.trials != 1:
            raise ValueError("a stream trial runs one network")

    def _figures(self) -> dict[str, float]:
        return {"score": _mean(self.scores, self.presented())}

    @staticmethod
    def _advance_all(trials: list["StreamTrial"], steps: int | None) -> None:
        """Run ``trials`` (each `runs_beside` the first) side by side, each until it ends or has trained
        about ``steps`` more steps and reaches the start of a training stream: in a block of
        lanes on the CPU, or on the GPU (`gpu_drivers`) where the trials' device is
        ``cuda``."""
        counters, scores, pauses = _lane_counters(trials, steps)
        if trials[0].device == "cuda":
            from .gpu_drivers import advance_on_gpu  # numba-cuda: only there

            threads = gpu_draw_threads([trial.task for trial in trials])
            advance_on_gpu(trials, [_rule(trial.protocol) for trial in trials], counters, scores,
                           lambda counters: refill(trials, counters, threads))
        else:
            _advance_on_cpu(trials, _rule(trials[0].protocol), counters, scores)
        for lane, (trial, pause) in enumerate(zip(trials, pauses)):
            trial.counters[:] = counters[lane, :STREAM_SAVED]
            trial.training.position = int(counters[lane, Counter.TRAIN_POSITION])
            trial.testing.position = int(counters[lane, Counter.TEST_POSITION])
            trial.scores[:] = scores[lane, :len(trial.scores)]
            trial._ended(int(counters[lane, Counter.STATUS]), pause)

    def _ended(self, status: int, pause: int | None) -> None:
        """The row, if the driver's ``status`` ends the trial (not a pause before a training stream)."""
        protocol, streams, steps_done = self.protocol, self.presented(), self.steps_trained()
        if status == Status.DIVERGED:
            self.row = result_row(self.seed, False, streams, steps_done, diverged=True,
                                  score=_mean(self.scores, streams - 1))
        elif status == Status.SOLVED or not (
                pause is not None and steps_done >= pause and streams < protocol.max_streams
                and (self.budget_steps is None or steps_done < self.budget_steps)):
            self.row = _finish(protocol, self.seed, status == Status.SOLVED, streams, steps_done,
                               _mean(self.scores, streams))

    def _state(self) -> dict[str, np.ndarray]:
        return {"counters": self.counters.copy(), "scores": self.scores.copy(),
                "training_data": json_array(self.training.where()), "test_data": json_array(self.testing.where())}

    def _restore(self, arrays: dict[str, np.ndarray]) -> None:
        self.counters[:] = arrays["counters"]
        self.scores[:] = arrays["scores"]
        self.training.go_to(from_json_array(arrays["training_data"]))
        self.testing.go_to(from_json_array(arrays["test_data"]))
        # The data positions: both arrays start empty at the cursor.
        self.counters[[Counter.TRAIN_POSITION, Counter.TEST_POSITION]] = 0


def _lane_counters(trials: list[StreamTrial], steps: int | None) -> tuple[np.ndarray, np.ndarray, list]:
    """The drivers' counters (one row a trial, `counters.StreamCounter`), the trials' last test
    scores, and where each pauses (its steps trained plus ``steps``; None: never)."""
    counters = np.zeros((len(trials), STREAM_COUNTERS), dtype=np.int64)
    pauses = [None if steps is None else int(trial.counters[Counter.STEPS]) + steps for trial in trials]
    for lane, (trial, pause) in enumerate(zip(trials, pauses)):
        budgets = [b for b in (trial.budget_steps, pause) if b is not None]
        counters[lane, :STREAM_SAVED] = trial.counters
        counters[lane, Counter.TRAIN_POSITION] = trial.training.position
        counters[lane, Counter.TEST_POSITION] = trial.testing.position
        counters[lane, Counter.BUDGET] = min(budgets) if budgets else -1
        counters[lane, Counter.LAST_BUDGET] = -1 if trial.budget_steps is None else trial.budget_steps
    scores = np.zeros((len(trials), max(len(trial.scores) for trial in trials)), dtype=np.int64)
    for lane, trial in enumerate(trials):  # (on the GPU the trials' test-stream counts may differ)
        scores[lane, :len(trial.scores)] = trial.scores
    return counters, scores, pauses


def _rule(protocol: StreamProtocol):
    """The protocol as the drivers read it (`stream_driver.Rule`)."""
    from .stream_driver import Rule

    settings = np.zeros(STREAM_SETTINGS, dtype=np.int64)
    settings[[Setting.STEPS_UNIT, Setting.TRAIN_LIMIT, Setting.TEST_LIMIT, Setting.TEST_STREAMS, Setting.RESET_EACH,
              Setting.MAX_STREAMS, Setting.STOP_FAILED_PHASE, Setting.DECAY_EVERY]] = [
        protocol.unit == "steps", protocol.train_limit, protocol.test_limit, protocol.test_streams,
        protocol.reset_each_sequence, protocol.max_streams, protocol.test_phase_stops_at_failure,
        protocol.rate_decay_every]
    return Rule(settings, protocol.success_test.kernel_tolerance, float(protocol.rate_decay))


def refill(trials: list[StreamTrial], counters: np.ndarray, threads: int = 1) -> bool:
    """More data for each trial whose driver lane stopped for it (`Status.NEED_TRAINING`,
    `NEED_TEST`; `REFILL` of its protocol's unit), drawn ``threads`` trials at a time
    (`data.draw_all`), its lane running again; whether any did."""
    status = counters[:, Counter.STATUS]
    wanted = []
    for lane, trial in enumerate(trials):
        if status[lane] in (Status.NEED_TRAINING, Status.NEED_TEST):
            source, at = ((trial.training, Counter.TRAIN_POSITION) if status[lane] == Status.NEED_TRAINING
                          else (trial.testing, Counter.TEST_POSITION))
            source.position = int(counters[lane, at])
            wanted.append((lane, source, at, trial.protocol.unit))
    draw_all([partial(source.refill, REFILL[unit], unit) for _, source, _, unit in wanted], threads)
    for lane, source, at, _ in wanted:
        counters[lane, at] = source.position
        status[lane] = Status.RUNNING
    return bool(wanted)


def _advance_on_cpu(trials: list[StreamTrial], rule, counters: np.ndarray, scores: np.ndarray) -> None:
    """The trials side by side in one block of lanes, the compiled driver (`stream_driver.drive`)
    called until every lane has stopped; the networks and rates scattered back."""
    from ..engine.compiled.lanes import LaneArrays, LaneBlock
    from . import stream_driver as driver  # numba: only when a trial runs

    program = trials[0].engine.network.program
    engines = [trial.engine for trial in trials]
    block = LaneBlock.gather(engines)
    stage_inputs = np.zeros((CHUNK, program.n_inputs, block.width))
    stage_targets = None

    lane_data = {which: LaneArrays(driver.LaneData) for which in ("training", "testing")}

    def lanes(which: str) -> "driver.LaneData":
        return lane_data[which]([tuple(getattr(getattr(trial, which), field) for field in driver.LaneData._fields)
                                 for trial in trials])

    status = counters[:, Counter.STATUS]
    while True:
        # The targets, and the judged values where some differ (`StreamData.apart`).
        planes = 2 if any(trial.training.apart or trial.testing.apart for trial in trials) else 1
        if stage_targets is None or stage_targets.shape[1] != planes:
            stage_targets = np.zeros((CHUNK, planes, program.n_outputs, block.width))
        driver.drive(block, trials[0].engine.training.momentum, rule, lanes("training"), lanes("testing"),
                     counters, scores, stage_inputs, stage_targets, WORK)
        refill(trials, counters)
        if not (status == Status.RUNNING).any():
            break
    block.scatter(engines)  # with the rates: the protocol's decay acts inside the driver
