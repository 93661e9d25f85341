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

from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from ..progress import Progress, ProgressReport
from ..tasks import Task, draw
from .success import steps_correct
from .trial import Trial, data_rng, from_json_array, json_array, result_row


@dataclass(frozen=True)
class StreamProtocol:
    """Gers et al. 2000, 2002: a continual stream, no reset inside it (unless
    ``reset_each_sequence``, the "external reset" baseline); "perfect" when every test stream
    reaches its limit, "good" when their mean reaches ``good_score``."""

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
    kind: str = field(default="streams", init=False)

    def __post_init__(self) -> None:
        if self.success not in ("tolerance", "most_active"):
            raise ValueError(f"success is 'tolerance' or 'most_active', not {self.success!r}")
        if not self.tolerance > 0:
            raise ValueError(f"tolerance must be > 0, not {self.tolerance}")
        if self.unit not in ("steps", "sequences"):
            raise ValueError(f"unit is 'steps' or 'sequences', not {self.unit!r}")
        for name in ("train_limit", "test_limit", "max_streams", "test_streams"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, not {getattr(self, name)}")
        if not 0 < self.rate_decay <= 1:
            raise ValueError(f"rate_decay must be in (0, 1], not {self.rate_decay}")

    @property
    def kernel_tolerance(self) -> float:
        """The ``tolerance`` the kernels judge by: `interpreter.MOST_ACTIVE` for the most-active test."""
        if self.success == "most_active":
            from ..engine.compiled.interpreter import MOST_ACTIVE
            return MOST_ACTIVE
        return float(self.tolerance)

    def correct(self, outputs: np.ndarray, judged: np.ndarray) -> np.ndarray:
        """Per step of ``outputs`` (steps, n_outputs): right by this protocol's test."""
        return steps_correct(self.success, outputs, judged, self.tolerance)

    def describe(self) -> str:
        reset = "state reset at each sequence start" if self.reset_each_sequence else "no reset inside a stream"
        decay = (f"; learning rate x{self.rate_decay} after each error-free training stream"
                 if self.rate_decay != 1 else "")
        error = ("the target's unit not the most active" if self.success == "most_active"
                 else f"|error| >= {self.tolerance}")
        stop = (" (a test phase ends at its first failing stream, but for the last)"
                if self.test_phase_stops_at_failure else "")
        return (f"continual streams, {reset}; a training stream stops at its first error "
                f"({error}) or after {self.train_limit:,} {self.unit}; then "
                f"{self.test_streams} frozen test streams of up to {self.test_limit:,} {self.unit}{stop}; "
                f"perfect = all reach it; good = mean >= {self.good_score:,.0f}; "
                f"at most {self.max_streams:,} training streams{decay}")


#: The score of a test stream that was not run (its phase ended at an earlier failing stream).
NOT_RUN = -1

#: Training streams between progress reports.
REPORT_EVERY = 100


class StreamData:
    """A task's sequences end to end: ``inputs``, ``targets``, ``ends`` (a sequence ends at
    this step) and ``counts`` (``counts[i]``: sequences ended before step i), read from
    ``position``, which is always a sequence start.

    ``judged`` is what success tests compare the outputs with (`Sequence.judged`): the
    ``targets`` array itself until a drawn sequence judges other values, from then on (``apart``)
    an array of its own (the compiled stream loop then stages it too).

    Its place in the stream is saved without the arrays (`where`, `go_to`): the number of the
    sequence at the cursor, and the generator's state at the last anchor before it (one every
    `ANCHOR_EVERY` sequences drawn), from which it is drawn again."""

    #: Sequences between two saved generator states: at most this many are drawn again on restore.
    ANCHOR_EVERY = 256

    def __init__(self, task: Task, rng: np.random.Generator):
        self.task = task
        self.rng = rng
        self.inputs = np.zeros((0, task.n_inputs))
        self.targets = self.judged = np.zeros((0, task.n_outputs))
        self.apart = False
        self.ends = np.zeros(0, dtype=np.bool_)
        self.counts = np.zeros(1, dtype=np.int64)
        self.position = 0
        self.first = 0  # the number of the sequence at step 0 of the arrays
        self.drawn = 0  # sequences drawn so far
        self.anchors: list[tuple[int, dict]] = [(0, rng.bit_generator.state)]  # (sequence, state before it)

    def available(self, unit: str) -> int:
        """Steps, or whole sequences, after the cursor."""
        if unit == "steps":
            return len(self.inputs) - self.position
        return int(self.counts[-1] - self.counts[self.position])

    def ensure(self, amount: int, unit: str) -> None:
        """At least ``amount`` steps or sequences after the cursor; when more are needed, a
        quarter more than that are drawn (so refills are rare; a 10^6-step CERG stream limit
        makes them large), in `draw`s that end at anchors, and the steps before the cursor are
        dropped."""
        have = self.available(unit)
        if have >= amount:
            return
        inputs, targets, lengths = [self.inputs[self.position:]], [self.targets[self.position:]], []
        judged = [self.judged[self.position:]]
        self.first += int(self.counts[self.position])
        self.anchors = [anchor for index, anchor in enumerate(self.anchors)
                        if index + 1 == len(self.anchors) or self.anchors[index + 1][0] > self.first]
        while have < amount + amount // 4 + 1:
            if self.drawn % self.ANCHOR_EVERY == 0 and self.anchors[-1][0] != self.drawn:
                self.anchors.append((self.drawn, self.rng.bit_generator.state))
            count = self.ANCHOR_EVERY - self.drawn % self.ANCHOR_EVERY  # up to the next anchor
            sequences = draw(self.task, self.rng, count)
            self.drawn += count
            inputs.append(sequences.inputs)
            targets.append(sequences.targets)
            judged.append(sequences.judged)
            self.apart = self.apart or (sequences.judged is not sequences.targets and
                                        not np.array_equal(sequences.judged, sequences.targets, equal_nan=True))
            lengths.append(sequences.lengths)
            have += int(sequences.lengths.sum()) if unit == "steps" else count
        kept = self.ends[self.position:]
        self.inputs = np.ascontiguousarray(np.concatenate(inputs), dtype=np.float64)
        self.targets = np.ascontiguousarray(np.concatenate(targets), dtype=np.float64)
        self.judged = np.ascontiguousarray(np.concatenate(judged), dtype=np.float64) if self.apart else self.targets
        self.ends = np.zeros(len(self.inputs), dtype=np.bool_)
        self.ends[:len(kept)] = kept
        self.ends[len(kept) - 1 + np.cumsum(np.concatenate(lengths))] = True
        self.counts = np.concatenate([[0], np.cumsum(self.ends)]).astype(np.int64)
        self.position = 0

    def where(self) -> dict:
        """The place of the cursor, as plain data: sequence number, and how to draw it again."""
        sequence = self.first + int(self.counts[self.position])
        start, state = [anchor for anchor in self.anchors if anchor[0] <= sequence][-1]
        return {"sequence": sequence, "anchor": start, "state": state}

    def go_to(self, place: dict) -> None:
        """Put the cursor where `where` said, with empty arrays: the generator is set to its state
        at the anchor and the sequences from there to the cursor are drawn again and dropped."""
        self.rng.bit_generator.state = place["state"]
        draw(self.task, self.rng, place["sequence"] - place["anchor"])
        self.inputs, self.targets, self.judged = self.inputs[:0], self.targets[:0], self.judged[:0]
        self.ends, self.counts = self.ends[:0], np.zeros(1, dtype=np.int64)
        self.position = 0
        self.first = self.drawn = place["sequence"]
        self.anchors = [(self.drawn, self.rng.bit_generator.state)]


def next_start(ends: np.ndarray, position: int) -> int:
    """The first sequence start at or after ``position``."""
    while position > 0 and not ends[position - 1]:
        position += 1
    return position


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
                                         protocol.kernel_tolerance, data.judged[position:stop] if data.apart else None)
        steps_run += steps
        last = position + steps - 1
        if steps < stop - position or not protocol.correct(outputs[-1:], data.judged[last:last + 1])[0]:
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
        if right >= protocol.train_limit:
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
            progress(ProgressReport("training streams", streams, label=f"trial {seed}",
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


#: Lockstep steps at most in one kernel call (the staging buffers' length); one `driver.drive`
#: (or `sequence_driver.drive`) call runs about `WORK` of them before Python gets control back
#: (for Ctrl-C).
CHUNK = 4096
WORK = 1 << 18
#: Steps or sequences drawn at a time when a trial's data runs out mid-stream.
REFILL = {"steps": 1 << 15, "sequences": 1 << 11}


class StreamTrial(Trial):
    """One trial of a 2000/2002 stream experiment: the loop of `run_streams_reference`, run in
    compiled code (`driver.drive`), alone or side by side with other trials of its experiment
    in one block of lanes (`advance_together`); it returns to Python to draw more data, or
    pauses before a training stream (where the whole state is the network, the counters, the
    last test scores and the two data positions)."""

    unit = "training streams"

    def __init__(self, engine, task: Task, protocol: StreamProtocol, seed: int, budget_steps: int | None = None):
        super().__init__(engine, task, protocol, seed, budget_steps)
        self.training, self.testing = _trial_data(task, seed)
        self.counters = np.zeros(5, dtype=np.int64)  # driver.STREAMS, STEPS, positions, PHASE
        self.scores = np.zeros(protocol.test_streams, dtype=np.int64)
        population = engine.population
        if len(population.blocks) != 1 or population.trials != 1:
            raise ValueError("a stream trial runs one network")

    def _figures(self) -> dict[str, float]:
        return {"score": _mean(self.scores, self.presented())}

    @staticmethod
    def _advance_all(trials: list["StreamTrial"], steps: int | None) -> None:
        """Run ``trials`` (of one experiment) side by side, each until it ends or has trained
        about ``steps`` more steps and reaches the start of a training stream."""
        from . import driver  # numba: only when a trial runs

        protocol, network = trials[0].protocol, trials[0].engine.network
        program, count = network.program, len(trials)
        engines = [trial.engine for trial in trials]
        kernel, V, rates = driver.lane_block(engines)
        counters = np.zeros((count, driver.COUNTERS), dtype=np.int64)
        pauses = [None if steps is None else int(trial.counters[driver.STEPS]) + steps for trial in trials]
        for lane, (trial, pause) in enumerate(zip(trials, pauses)):
            budgets = [b for b in (trial.budget_steps, pause) if b is not None]
            counters[lane, :driver.SAVED] = trial.counters
            counters[lane, driver.TRAIN_POSITION] = trial.training.position
            counters[lane, driver.TEST_POSITION] = trial.testing.position
            counters[lane, driver.BUDGET] = min(budgets) if budgets else -1
            counters[lane, driver.LAST_BUDGET] = -1 if trial.budget_steps is None else trial.budget_steps
        scores = np.stack([trial.scores for trial in trials])
        settings = np.array([protocol.unit == "steps", protocol.train_limit, protocol.test_limit,
                             protocol.test_streams, protocol.reset_each_sequence, protocol.max_streams,
                             protocol.test_phase_stops_at_failure],
                            dtype=np.int64)
        rows = driver.slot_rows(program)
        stage_inputs = np.zeros((CHUNK, program.n_inputs, V.shape[1]))
        stage_targets = None
        flat = network.flat.arguments()
        def lanes(which: str) -> tuple[tuple[np.ndarray, ...], ...]:
            sources = [getattr(trial, which) for trial in trials]
            return tuple(tuple(getattr(source, field) for source in sources)
                         for field in ("inputs", "targets", "judged", "ends", "counts"))

        while True:
            # The targets, and the judged values where some differ (`StreamData.apart`).
            planes = 2 if any(trial.training.apart or trial.testing.apart for trial in trials) else 1
            if stage_targets is None or stage_targets.shape[1] != planes:
                stage_targets = np.zeros((CHUNK, planes, program.n_outputs, V.shape[1]))
            driver.drive(kernel, flat, V, rows, rates, trials[0].engine.training.momentum,
                         protocol.kernel_tolerance, float(protocol.rate_decay), lanes("training"), lanes("testing"),
                         settings, counters, scores, stage_inputs, stage_targets, WORK)
            status = counters[:, driver.STATUS]
            for lane, trial in enumerate(trials):
                if status[lane] in (driver.NEED_TRAINING, driver.NEED_TEST):
                    source, at = ((trial.training, driver.TRAIN_POSITION) if status[lane] == driver.NEED_TRAINING
                                  else (trial.testing, driver.TEST_POSITION))
                    source.position = int(counters[lane, at])
                    source.ensure(REFILL[protocol.unit], protocol.unit)
                    counters[lane, at] = source.position
                    status[lane] = driver.RUNNING
            if not (status == driver.RUNNING).any():
                break
        driver.lanes_back(engines, V, rates)  # with the rates: the protocol's decay acts inside the driver
        for lane, (trial, pause) in enumerate(zip(trials, pauses)):
            trial.counters[:] = counters[lane, :driver.SAVED]
            trial.training.position = int(counters[lane, driver.TRAIN_POSITION])
            trial.testing.position = int(counters[lane, driver.TEST_POSITION])
            trial.scores[:] = scores[lane]
            trial._ended(int(status[lane]), pause)

    def _ended(self, status: int, pause: int | None) -> None:
        """The row, if the driver's ``status`` ends the trial (not a pause before a training stream)."""
        from . import driver

        protocol, streams, steps_done = self.protocol, self.presented(), self.steps_trained()
        if status == driver.DIVERGED:
            self.row = result_row(self.seed, False, streams, steps_done, diverged=True,
                                  score=_mean(self.scores, streams - 1))
        elif status == driver.SOLVED or not (
                pause is not None and steps_done >= pause and streams < protocol.max_streams
                and (self.budget_steps is None or steps_done < self.budget_steps)):
            self.row = _finish(protocol, self.seed, status == driver.SOLVED, streams, steps_done,
                               _mean(self.scores, streams))

    def _state(self) -> dict[str, np.ndarray]:
        return {"counters": self.counters.copy(), "scores": self.scores.copy(),
                "training_data": json_array(self.training.where()), "test_data": json_array(self.testing.where())}

    def _restore(self, arrays: dict[str, np.ndarray]) -> None:
        self.counters[:] = arrays["counters"]
        self.scores[:] = arrays["scores"]
        self.training.go_to(from_json_array(arrays["training_data"]))
        self.testing.go_to(from_json_array(arrays["test_data"]))
        self.counters[2:4] = 0  # the data positions: both arrays start empty at the cursor
