"""What a task is: a seeded source of input/target sequences for a network.

A task knows its input and output widths and whether its sequences form one continual
stream (no state reset between them, as in the 2000 paper's CERG) or independent sequences
(state reset before each, as in 1997). Targets use NaN for "no target at this step/unit"
(e.g. the adding problem has a target only at its last step). Every random choice comes
from the generator passed in, so a seed fixes the data exactly.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Protocol

import numpy as np

from ..errors import did_you_mean, shown
from ..limits import check_task_integers
from ..success import FALLBACK_TEST, SuccessTest


@dataclass(frozen=True)
class Sequence:
    """One sequence: ``inputs`` (T, n_inputs) and ``targets`` (T, n_outputs), float64.

    ``legal`` (same shape as ``targets``), when given, is what a success test judges the
    outputs against if that differs from what the net is trained on: the 1997 ERG trains on
    the symbol that actually comes next and is judged by the set of symbols that may come next.
    """

    inputs: np.ndarray
    targets: np.ndarray
    legal: np.ndarray | None = None

    def __post_init__(self) -> None:
        if self.inputs.ndim != 2 or self.targets.ndim != 2 or len(self.inputs) != len(self.targets):
            raise ValueError("a sequence needs inputs (T, n_in) and targets (T, n_out) of equal length")
        if self.legal is not None and self.legal.shape != self.targets.shape:
            raise ValueError("a sequence's legal outputs need the shape of its targets")

    @property
    def judged(self) -> np.ndarray:
        """What success tests compare the outputs with: ``legal`` if given, else ``targets``."""
        return self.targets if self.legal is None else self.legal

    def __len__(self) -> int:
        return len(self.inputs)


class Task(Protocol):
    """A seeded sequence source. A task whose inputs or outputs are one-hot symbols may also
    name its units, for plots and reports, in the optional attributes ``input_symbols`` and
    ``output_symbols`` (one name per unit, in unit order); `unit_symbols` reads them. A task
    whose every sample is the same sequence (``rng`` unused or irrelevant, as in PFG) says so
    with the optional attribute ``deterministic`` = True; missing means false. A task may also
    draw many sequences at once with an optional ``sample_many(rng, count)`` returning
    `Sequences`, exactly what ``count`` calls of ``sample`` give (`draw` uses it). A task of a
    paper declares the paper's test in the optional ``success_test`` (`lstmgraph.success`), a
    class attribute (`task_success_test` reads it from the class, by the task's name);
    `evaluate` judges its runs by it, and the catalogue's rows on it use the same. A task whose
    tests draw from other sequences than its training (a held-out data file) names that task in
    the optional ``held_out``; `test_task` reads it. A compiled ``sample_many`` that releases the
    GIL sets ``draws_in_threads`` (`draws_in_threads`), and one that writes its sequences in
    place offers them as ``stream_rows`` (`draws.StreamRows`: the stream drivers and the GPU use it).
    A task without them gives the steps of its longest sequence in the optional ``longest``, so
    that a run is refused before it draws more than the limits allow (`StreamData.check_set`).

    A task's options are its constructor's keyword parameters (no ``**kwargs``): `make_task`
    checks names against them, bounds integers, and turns the ``ValueError`` or ``TypeError``
    the constructor raises for a bad value into a `TaskError`. Adding a task: the class,
    ``@register(name)``, its import in `tasks.builtin`, and its rows in docs/spec.md's task table
    and docs/experiments.md (tests/tasks/test_experiments_doc.py and tests/tasks/test_tasks.py list
    the tasks and fail until they are written)."""

    name: str
    n_inputs: int
    n_outputs: int
    continual: bool

    def sample(self, rng: np.random.Generator) -> Sequence:
        """Draw the next sequence using only ``rng``."""
        ...


@dataclass(frozen=True)
class Sequences:
    """Sequences laid end to end: ``inputs``, ``targets`` and ``judged`` (`Sequence.judged`)
    with one row per step, and ``lengths``, one per sequence."""

    inputs: np.ndarray
    targets: np.ndarray
    judged: np.ndarray
    lengths: np.ndarray

    @staticmethod
    def of(sequences: list[Sequence], n_inputs: int, n_outputs: int) -> "Sequences":
        """``sequences`` laid end to end (none: empty arrays of the given widths)."""
        if not sequences:
            return Sequences(np.zeros((0, n_inputs)), np.zeros((0, n_outputs)), np.zeros((0, n_outputs)),
                             np.zeros(0, dtype=np.int64))
        return Sequences(np.concatenate([s.inputs for s in sequences]), np.concatenate([s.targets for s in sequences]),
                         np.concatenate([s.judged for s in sequences]),
                         np.array([len(s) for s in sequences], dtype=np.int64))


def draw(task: Task, rng: np.random.Generator, count: int) -> Sequences:
    """``count`` sequences of ``task`` end to end: what ``count`` calls of ``task.sample`` give,
    the same draws from ``rng``, through the task's ``sample_many`` where it has one. A stream
    trial draws millions of sequences of about ten steps, where a Python call per sequence
    costs more than the compiled net's steps (benchmarks/task_sampling.py). Compiled draws
    (`draws_in_threads`) follow numpy's PCG64 (`pcg64`): on another generator the task samples
    one sequence at a time."""
    from .pcg64 import is_pcg64  # numba: only where data are drawn

    many = getattr(task, "sample_many", None)
    if many is not None and (is_pcg64(rng) or not draws_in_threads(task)):
        return many(rng, count)
    return Sequences.of([task.sample(rng) for _ in range(count)], task.n_inputs, task.n_outputs)


def draws_in_threads(task: Task) -> bool:
    """Whether several trials draw ``task``'s sequences faster in threads than one after
    another: where its ``sample_many`` is compiled code that releases the GIL (`draws`). Drawn
    in Python, threads ran a fifth slower (benchmarks/draw_rate.py)."""
    return bool(getattr(task, "draws_in_threads", False))


def test_task(task: Task) -> Task:
    """The task a protocol's test sequences are drawn from: the task's ``held_out`` where it has
    one, else the task itself."""
    return getattr(task, "held_out", None) or task


def unit_symbols(task: Task) -> tuple[tuple[str, ...] | None, tuple[str, ...] | None]:
    """The names the task gives its input units and its output units; None where it names none."""
    return getattr(task, "input_symbols", None), getattr(task, "output_symbols", None)


class TaskError(ValueError):
    """A task that cannot be made as asked (unknown name or options); ``option``: the option it
    is about, where one is (a spec's problem is then located at that option)."""

    def __init__(self, message: str, option: str | None = None):
        super().__init__(message)
        self.option = option


def _option_named(message: str, options: Iterable[str]) -> str | None:
    """The option a task's ``ValueError`` is about: the one its message starts with
    ("length (the minimal ...) must be", "delays: ...", `limits.check_task_integers`' "option length: ...")."""
    return next((option for option in options if re.match(rf"(?:option )?{re.escape(option)}(?=[\s:(])", message)),
                None)


TaskFactory = Callable[..., Task]
TASKS: dict[str, TaskFactory] = {}


def register(name: str) -> Callable[[TaskFactory], TaskFactory]:
    """Class decorator naming a task for specs (``training.task.name``)."""

    def add(factory: TaskFactory) -> TaskFactory:
        TASKS[name] = factory
        return factory

    return add


def task_success_test(name: str | None) -> tuple[SuccessTest, str]:
    """The success test that judges the task ``name`` and where it comes from, in words: the
    test the task declares (``success_test``, the paper's), else `success.FALLBACK_TEST` (also
    for None, data from a file with no task behind it). `evaluate` and `sweep` judge by it.
    `TypeError` for anything but a name (a task object: pass its ``name``)."""
    if name is not None and not isinstance(name, str):
        task_name = getattr(name, "name", None)
        raise TypeError(f"task_success_test takes a task's name, not the task: task_success_test({task_name!r})"
                        if isinstance(task_name, str) else f"task_success_test takes a task's name (a str), not {name!r:.60}")
    declared = getattr(TASKS.get(name), "success_test", None) if name is not None else None
    if declared is not None:
        return declared, f"the {name} task's test"
    if name is not None:
        return FALLBACK_TEST, f"the {name} task declares no test; for 0/1 targets: on the right side of 0.5"
    return FALLBACK_TEST, "no task's test for this data; for 0/1 targets: on the right side of 0.5"


def concatenated(task: Task, steps: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """``steps`` steps of the task's sequences laid end to end: (inputs, targets)."""
    inputs, targets, count = [], [], 0
    while count < steps:
        sequence = task.sample(rng)
        inputs.append(sequence.inputs)
        targets.append(sequence.targets)
        count += len(sequence)
    return np.concatenate(inputs)[:steps], np.concatenate(targets)[:steps]


def check_option_names(name: str, options: Iterable[str]) -> None:
    """`TaskError` unless ``name`` is a registered task that has every option in ``options``
    (the built-in tasks register when the package `lstmgraph.tasks` is imported, which importing
    this module does first)."""
    import inspect

    if name not in TASKS:
        close = did_you_mean(name, TASKS)
        raise TaskError(f"unknown task {shown(name)}; known tasks: {', '.join(sorted(TASKS))}"
                        + (f"; did you mean {shown(close)}?" if close else ""))
    accepted = [p for p in inspect.signature(TASKS[name]).parameters if p != "self"]
    unknown = sorted(set(options) - set(accepted))
    if unknown:
        free = set(accepted) - set(options)  # an option given already is no one's misspelling
        close = {word: did_you_mean(word, free) for word in unknown}
        close = {word: match for word, match in close.items() if match is not None}
        hint = ""
        if len(unknown) == 1 and close:
            hint = f"; did you mean {shown(close[unknown[0]])}?"
        elif close:
            hint = "; did you mean " + ", ".join(f"{shown(match)} for {shown(word)}" for word, match in close.items()) + "?"
        raise TaskError(f"task {shown(name)} has no option {', '.join(map(shown, unknown))}; "
                        f"its options: {', '.join(accepted) or 'none'}{hint}", unknown[0])


def make_task(name: str, options: dict[str, Any] | None = None) -> Task:
    """Build a registered task with its options; `TaskError` explains what is wrong."""
    options = dict(options or {})
    check_option_names(name, options)
    try:
        check_task_integers(options)
        return TASKS[name](**options)
    except (TypeError, ValueError) as error:
        raise TaskError(f"task {shown(name)}: {error}", _option_named(str(error), options)) from None
