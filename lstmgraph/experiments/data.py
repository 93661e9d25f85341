"""A trial's data: a task's sequences laid end to end, drawn in order from the trial's generator.

Every random choice of a trial comes from its seed: data from ``SeedSequence([seed, 1997,
purpose])`` (`data_rng`). `StreamData` holds the sequences a driver reads, refilled as it runs;
every stream (and every 1997 sequence) starts at a sequence start, and its place is saved as
the number of the sequence at the cursor and a generator state to draw it again from.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from typing import Callable

import numpy as np

from ..limits import COUNT_LIMITS_HINT, MAX_STREAM_BYTES, LimitError
from ..tasks import Task, draw
from ..tasks.base import draws_in_threads
from ..tasks.data_file import DATA_FILE


#: Steps or sequences drawn at a time when a stream trial's data runs out mid-stream
#: (`StreamData.ensure`, on the host or the GPU: `gpu_data`).
REFILL = {"steps": 1 << 15, "sequences": 1 << 11}
#: The most bytes a refill draws (`StreamData.refill`): fewer units where the task's sequences are
#: long (a data file's), down to one. The 1997 drivers' refill of 1,024 sequences is 36 MiB at T = 1,000.
REFILL_BYTES = 1 << 28


def data_rng(seed: int, purpose: int) -> np.random.Generator:
    """The generator of one data stream of a trial (purposes: 0 training, 1 test, 2 sets)."""
    return np.random.default_rng(np.random.SeedSequence([seed, 1997, purpose]))


#: How to shorten a task's sequences, for the message of a stream too large to draw.
_SHORTER = {DATA_FILE: "cut the data file's long sequences into shorter ones (its 'starts')",
            None: "give the task shorter sequences (its options)"}


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
        self._check_size(amount, unit)
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

    def refill(self, amount: int, unit: str) -> None:
        """`ensure` of ``amount`` units, or of fewer (at least one) where so many would draw more
        than `REFILL_BYTES` of the task's longest sequences. The draws end at the same anchors
        either way, so the sequences, and a trial's rows, are the same."""
        if (longest := self._longest()) is not None:
            each = longest if unit == "sequences" else 1
            room = REFILL_BYTES // self._step_bytes() - self._drawn_steps(0, unit)
            amount = max(1, min(amount, room // each * 4 // 5))
        self.ensure(amount, unit)

    def _longest(self) -> int | None:
        """Steps of the task's longest sequence: `StreamRows.longest`, else the task's optional
        ``longest`` (`tasks.base.Task`); None where the task does not say."""
        rows = getattr(self.task, "stream_rows", None)
        return rows.longest if rows is not None else getattr(self.task, "longest", None)

    def _step_bytes(self) -> int:
        planes = getattr(getattr(self.task, "stream_rows", None), "planes", 1)  # target planes, and the judged copy
        return 8 * (self.task.n_inputs + (1 + planes) * self.task.n_outputs)

    def _drawn_steps(self, amount: int, unit: str) -> int:
        """The most steps `ensure` of ``amount`` units draws: a quarter more, then on to the next
        anchor (a block of sequences at the task's longest, where it says)."""
        longest = self._longest() or 0
        if unit == "sequences":
            return (amount + amount // 4 + self.ANCHOR_EVERY) * longest
        return amount + amount // 4 + 1 + self.ANCHOR_EVERY * longest

    def _check_size(self, amount: int, unit: str) -> None:
        """`LimitError` before drawing ``amount`` units that could hold more than `MAX_STREAM_BYTES`."""
        longest = self._longest()
        if unit == "sequences" and longest:
            self._refuse_over(self._drawn_steps(amount, unit), f"drawing {amount:,} sequences of up to {longest:,} "
                              "steps each")
        elif unit == "steps":
            block = f", on to the end of a block of {self.ANCHOR_EVERY} sequences of up to {longest:,} steps" \
                if longest else ""
            self._refuse_over(self._drawn_steps(amount, unit), f"drawing {amount:,} steps{block}")

    def check_set(self, count: int) -> None:
        """`LimitError` before ``count`` of the task's sequences laid end to end (a trial's test
        set, drawn after its training) could hold more than `MAX_STREAM_BYTES`."""
        if longest := self._longest():
            self._refuse_over(count * longest, f"a test set of {count:,} sequences of up to {longest:,} steps each",
                              "test on fewer sequences (the protocol option test_sequences), or ")

    def _refuse_over(self, steps: int, what: str, advice: str = "") -> None:
        needed = steps * self._step_bytes()
        if needed > MAX_STREAM_BYTES:
            shorter = _SHORTER.get(getattr(self.task, "name", None), _SHORTER[None])
            raise LimitError(f"{what} needs up to {needed / 2**30:,.1f} GiB, more than the limit of "
                             f"{MAX_STREAM_BYTES / 2**30:g} GiB ({COUNT_LIMITS_HINT}); {advice}{shorter}")

    def where(self) -> dict:
        """The place of the cursor, as plain data: sequence number, and how to draw it again."""
        sequence = self.first + int(self.counts[self.position])
        start, state = [anchor for anchor in self.anchors if anchor[0] <= sequence][-1]
        return {"sequence": sequence, "anchor": start, "state": state}

    def go_to(self, place: dict) -> None:
        """Put the cursor where `where` said, with empty arrays: the generator is set to its state
        at the anchor and the sequences from there to the cursor are drawn again and dropped.
        `ValueError` for a place `where` never gives (a damaged checkpoint's): at most
        `ANCHOR_EVERY` sequences after its anchor, and a state of this generator."""
        try:
            sequence, anchor = place["sequence"], place["anchor"]
            if type(sequence) is not int or type(anchor) is not int or not 0 <= anchor <= sequence <= anchor + \
                    self.ANCHOR_EVERY:
                raise ValueError("its sequence is not at most ANCHOR_EVERY after its anchor")
            self.rng.bit_generator.state = place["state"]
        except (KeyError, TypeError, ValueError) as error:
            raise ValueError(f"not a data position of this trial ({type(error).__name__}: {error})") from None
        draw(self.task, self.rng, sequence - anchor)
        self.inputs, self.targets, self.judged = self.inputs[:0], self.targets[:0], self.judged[:0]
        self.ends, self.counts = self.ends[:0], np.zeros(1, dtype=np.int64)
        self.position = 0
        self.first = self.drawn = sequence
        self.anchors = [(self.drawn, self.rng.bit_generator.state)]


#: Threads that draw a GPU population's data: the host's cores. On the GPU the draws bound a
#: population (docs/gpu.md); on the CPU a worker draws its own trials' data, one at a time.
GPU_DRAW_THREADS = os.cpu_count() or 1


def gpu_draw_threads(tasks: list) -> int:
    """Threads for a GPU population's draws: the host's cores where every trial's draws are
    compiled code that releases the GIL (`tasks.base.draws_in_threads`), else one."""
    return GPU_DRAW_THREADS if all(draws_in_threads(task) for task in tasks) else 1


def draw_all(draws: list[Callable[[], None]], threads: int = 1) -> None:
    """Run ``draws`` (each one trial's, from its own generator), ``threads`` at a time. The data
    are the same in any order; compiled draws release the GIL (`tasks.base.draws_in_threads`),
    so threads draw side by side (two drew CERG streams 1.75-2 times as fast as one, measured here)."""
    if threads <= 1 or len(draws) <= 1:
        for draw_one in draws:
            draw_one()
        return
    with ThreadPoolExecutor(min(threads, len(draws))) as pool:
        for done in [pool.submit(draw_one) for draw_one in draws]:
            done.result()


def next_start(ends: np.ndarray, position: int) -> int:
    """The first sequence start at or after ``position``."""
    while position > 0 and not ends[position - 1]:
        position += 1
    return position


def longest_sequence(ends: np.ndarray) -> int:
    """The longest sequence in an end-to-end layout (``ends``: where each sequence ends)."""
    stops = np.flatnonzero(ends) + 1
    return int(np.diff(stops, prepend=0).max()) if len(stops) else 0
