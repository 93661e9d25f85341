"""A data file's sequences: read and checked once (`read_data_file`), for `lstmgraph train`'s
epochs over the file in order (`training.DataFile`) and as a task that draws them at random
(`data_file`), which is how `lstmgraph sweep` runs a spec trained on a data file.

An .npz data file holds ``inputs`` (steps, n_inputs), ``targets`` (steps, n_outputs; NaN = no
target) and optionally ``starts``, the step indices where sequences begin (default: one
sequence). Its sha256 digest names its content: a run or a sweep records it, and a resume on
other data is refused. The task's tests may draw from a second, held-out file (``test_path``).
"""

from __future__ import annotations

import difflib
import functools
import hashlib
import os
from pathlib import Path
from typing import Any

import numpy as np

from ..arrays import ArrayFileError, numbers, read_npz, sequence_starts
from ..errors import cut
from .base import Sequence, Sequences, register
from .fixed_set import FixedSet

#: The task's name (`TASKS`).
DATA_FILE = "data_file"
#: The task's options naming a file, each with the option of its sha256 digest.
FILE_OPTIONS = {"path": "sha256", "test_path": "test_sha256"}
#: How a data file is written, for messages.
_FORMAT = ("an .npz archive of 'inputs', 'targets' and optional 'starts', e.g. "
                    "numpy.savez(FILE, inputs=X, targets=Y) (docs/spec.md in the lstmgraph source, Data files)")


#: The arrays of a data file: 'starts' (optional) marks where each sequence begins.
DATA_ARRAYS = ("inputs", "targets", "starts")


def _misspelt_starts(name: str) -> bool:
    """A name close enough to 'starts' to be it misspelt ('start', 'Starts', 'starts_'; not 'states')."""
    return difflib.SequenceMatcher(None, name.lower(), "starts").ratio() >= 0.85


class DataError(Exception):
    """A data file that cannot be used with this network."""


def read_data_file(path: str | Path, n_inputs: int | None = None,
                   n_outputs: int | None = None) -> tuple[list[Sequence], str]:
    """The sequences of the data file ``path`` and its sha256 digest. A 1-D ``inputs`` or
    ``targets`` is one column; given ``n_inputs`` / ``n_outputs`` (a network's), the widths must
    be those. `DataError` names the file and what is wrong."""
    path = Path(path)
    try:
        arrays = read_npz(path)
    except ArrayFileError as error:
        hint = "" if path.suffix.lower() == ".npz" else f"; training data is {_FORMAT}"
        raise DataError(f"{error}{hint}") from None
    try:
        digest = _sha256(path)
        for key in ("inputs", "targets"):
            if key not in arrays:
                raise DataError(f"{path}: missing array '{key}' (has: {', '.join(sorted(arrays)) or 'none'})")
        if "starts" not in arrays:  # a misspelt 'starts' would run the file as one sequence
            close = [key for key in arrays if key not in DATA_ARRAYS and _misspelt_starts(key)]
            if close:  # (other arrays, a file's own extras, are left unread)
                raise DataError(f"{path}: holds an array '{cut(close[0])}' and no 'starts': a misspelt name is not "
                                "read; save it as 'starts' (numpy.savez(FILE, inputs=..., targets=..., starts=...))")
        inputs = numbers(path, "'inputs'", arrays["inputs"])
        targets = numbers(path, "'targets'", arrays["targets"], nan="no target")
    except ArrayFileError as error:
        raise DataError(str(error)) from None
    if inputs.ndim == 1 and n_inputs in (None, 1):
        inputs = inputs[:, None]
    if targets.ndim == 1 and n_outputs in (None, 1):
        targets = targets[:, None]
    if inputs.ndim != 2 or (n_inputs is not None and inputs.shape[1] != n_inputs):
        raise DataError(f"{path}: 'inputs' has shape {inputs.shape}; the network needs (steps, "
                        f"{n_inputs if n_inputs is not None else 'n_inputs'})")
    width = n_outputs if n_outputs is not None else (targets.shape[1] if targets.ndim == 2 else "n_outputs")
    if targets.shape != (len(inputs), width):
        raise DataError(f"{path}: 'targets' has shape {targets.shape}; the network needs "
                        f"({len(inputs)}, {width}), one row per input step")
    if not len(inputs):
        raise DataError(f"{path}: no steps in 'inputs'")
    try:
        starts = sequence_starts(path, arrays.get("starts"), len(inputs))
    except ArrayFileError as error:
        raise DataError(str(error)) from None
    if np.isnan(targets).all():
        raise DataError(f"{path}: every value of 'targets' is NaN (no target at any step): nothing to learn or to "
                        "judge; give a target at the steps where the net should answer")
    bounds = list(starts) + [len(inputs)]
    return [Sequence(inputs[a:b], targets[a:b]) for a, b in zip(bounds[:-1], bounds[1:])], digest


def target_problem(sequences: list[Sequence], loss: str, outputs) -> str | None:
    """Why these targets cannot train the network under ``cross_entropy``, or None: a value
    outside [0, 1] (the loss has no minimum there and the weights run off), or a step with a
    target for some units of an output group but not all, which the loss skips whole (a data
    file's mistake, most likely). ``outputs``: the output groups (or units) in output order,
    with ``name`` and ``size``."""
    if loss != "cross_entropy":
        return None
    targets = np.concatenate([sequence.targets for sequence in sequences])  # (one pass in C: a file is large)
    outside = np.argwhere((targets < 0) | (targets > 1))  # (NaN: no target, not outside)
    if len(outside):
        row, output = (int(i) for i in outside[0])
        return (f"cross_entropy needs targets in [0, 1] (probabilities); 'targets'[{row}, {output}] is "
                f"{targets[row, output]:g}: use loss: sum_of_squares, or rescale the targets")
    start = 0
    for group in outputs:
        missing = np.isnan(targets[:, start:start + group.size]).sum(axis=1)
        partial = np.flatnonzero((missing > 0) & (missing < group.size))
        if len(partial):
            return (f"'targets' row {int(partial[0])} holds NaN (no target) for some units of the output group "
                    f"'{group.name}' and values for others: cross_entropy judges a group's units together, so "
                    f"it would skip the row; give each unit there a value, or NaN to all")
        start += group.size
    return None


def _sha256(path: Path) -> str:
    """The sha256 digest of a file's bytes (read in blocks: it may be large), as hex."""
    try:
        with open(path, "rb") as stream:
            return hashlib.file_digest(stream, "sha256").hexdigest()
    except OSError as error:
        raise ArrayFileError(f"{path}: cannot read it ({error.strerror or error})") from None


def spec_relative(name: str, options: dict[str, Any], spec_file: str | Path) -> dict[str, Any]:
    """A task's options as the spec file ``spec_file`` gives them: the ``data_file`` task's
    relative file paths (`FILE_OPTIONS`) made absolute (`beside`), as ``training.data`` is, so
    that a run or a sweep finds them from anywhere."""
    if name != DATA_FILE:
        return options
    joined = {option: beside(spec_file, options[option]) for option in FILE_OPTIONS
              if isinstance(options.get(option), str) and options[option]}
    return {**options, **joined}


def beside(spec_file: str | Path, name: str) -> str:
    """The file ``name`` that the spec file ``spec_file`` names, as an absolute path: a relative
    name joined to the spec's folder as named (a linked spec's data lies beside the link), its
    leading '..' taken from that folder's real path as the kernel takes them. A run's spec.yaml
    names its data so (`relative_to_folder`)."""
    if os.path.isabs(name):
        return name
    folder, parts = Path(spec_file).absolute().parent, Path(name).parts
    up = next((index for index, part in enumerate(parts) if part != ".."), len(parts))
    if up:
        folder = Path(os.path.realpath(folder))
        for _ in range(up):
            folder = folder.parent
    return str(folder.joinpath(*parts[up:]))


def relative_to_folder(spec_data: dict[str, Any], folder: str | Path) -> dict[str, Any]:
    """The resolved spec ``spec_data`` as a spec file in ``folder`` names its data files: the
    training ``data`` and the ``data_file`` task's files (`FILE_OPTIONS`) relative to ``folder``,
    as `spec_relative` reads them back. A run directory or trial folder cloned or moved together
    with its data then still finds them; the recorded sha256 tells a changed file."""
    training = spec_data.get("training")
    if not isinstance(training, dict):
        return spec_data
    here = os.path.realpath(folder)  # (the kernel resolves a linked folder before its '..': `beside`)

    def relative(path: Any) -> Any:  # (to the file as named: a link on its way is kept, not its target)
        return os.path.relpath(path, here) if isinstance(path, str) and os.path.isabs(path) else path

    changed = {**training, **({"data": relative(training["data"])} if "data" in training else {})}
    task = training.get("task")
    if isinstance(task, dict) and task.get("name") == DATA_FILE:
        changed["task"] = {**task, **{option: relative(task[option]) for option in FILE_OPTIONS if option in task}}
    return {**spec_data, "training": changed}


def pinned(path: str | Path, option: str = "path") -> dict[str, str]:
    """The ``data_file`` task's options for the file ``path`` given as ``option`` (`FILE_OPTIONS`)
    with its digest: a sweep's, so that every trial runs on the bytes the sweep began with.
    `DataError` for a file that cannot be used."""
    path = str(Path(path).absolute())
    return {option: path, FILE_OPTIONS[option]: _read_once(path)[1]}


def _checked_file(option: str, path: Any, sha256: Any) -> tuple[list[Sequence], str]:
    """The sequences and the digest of the file given as ``option``, ``sha256`` where given (a pin):
    `ValueError` naming the option for a missing path, a digest that is no string or not the
    file's, or a file that cannot be used."""
    digest_option = FILE_OPTIONS[option]
    if not isinstance(path, str) or not path:
        raise ValueError(f"{option}: give the data file, " + _FORMAT)
    if sha256 is not None and not isinstance(sha256, str):
        raise ValueError(f"{digest_option}: a file's digest as 64 hex digits, not {sha256!r:.40}")
    try:
        sequences, digest = _read_once(path)
    except DataError as error:
        raise ValueError(str(error)) from None
    if sha256 is not None and sha256.lower() != digest:
        raise ValueError(f"{path}: its sha256 is {digest}, not {sha256:.64} as {digest_option} pins it (a sweep "
                         "pins it when it begins): the file changed since; restore it, or give its new digest in a spec "
                         "of your own (a sweep or a results folder: start a new one, another --out)")
    return sequences, digest


def _read_once(path: str) -> tuple[list[Sequence], str]:
    """`read_data_file` of ``path``, read again only when the file's identity or time changed: a
    sweep makes its task many times (checks, settings, every trial)."""
    try:
        found = os.stat(path)
    except OSError:
        return read_data_file(path)  # (its message names what is wrong)
    return _read_known(path, found.st_dev, found.st_ino, found.st_size, found.st_mtime_ns)


@functools.lru_cache(maxsize=4)
def _read_known(path: str, device: int, inode: int, size: int, modified: int) -> tuple[list[Sequence], str]:
    return read_data_file(path)


@register(DATA_FILE)
class DataFileTask:
    """The sequences of a data file as a task: each draw one of them, chosen by
    ``rng.integers(count)`` as `FixedSet` chooses (so every trial draws its own order), each
    from zero activations. ``sha256``, when given, must be the file's digest: a sweep pins it,
    so that no trial runs on a file changed since the sweep began. A ``path`` in a spec is
    relative to the spec's folder; with one sequence (no ``starts``) every draw is the same.
    ``test_path`` (digest ``test_sha256``): a file of held-out sequences of the same widths,
    which a protocol's tests draw from instead (``held_out``, `tasks.base.test_task`)."""

    name = DATA_FILE
    continual = False
    draws_in_threads = True  # `FixedSet`'s compiled draws

    def __init__(self, path: str = "", sha256: str | None = None, test_path: str | None = None,
                 test_sha256: str | None = None):
        sequences, self.sha256 = _checked_file("path", path, sha256)
        self.path = path
        self.n_inputs, self.n_outputs = sequences[0].inputs.shape[1], sequences[0].targets.shape[1]
        self.deterministic = len(sequences) == 1
        self.sequences = FixedSet(self, sequences)
        self.held_out = None
        if test_path is not None:
            _checked_file("test_path", test_path, test_sha256)  # (its errors named as test_path's)
            self.held_out = DataFileTask(test_path)  # (the file read once: `_read_once`)
            widths = (self.held_out.n_inputs, self.held_out.n_outputs)
            if widths != (self.n_inputs, self.n_outputs):
                raise ValueError(f"test_path: {test_path} has {widths[0]} input and {widths[1]} target columns; "
                                 f"the training file {path} has {self.n_inputs} and {self.n_outputs}: give held-out "
                                 "sequences of the same widths")
        elif test_sha256 is not None:
            raise ValueError("test_sha256: the digest of a test_path; give the test_path too, or leave it out")

    def sample(self, rng: np.random.Generator) -> Sequence:
        return self.sequences.sample(rng)

    def sample_many(self, rng: np.random.Generator, count: int) -> Sequences:
        return self.sequences.sample_many(rng, count)

    @property
    def stream_rows(self):
        return self.sequences.stream_rows
