"""A training run's directory: nothing is lost, and a killed run can be resumed exactly.

Files: ``spec.yaml`` (the resolved spec, command-line overrides applied), ``run.json`` (how
the run was started), ``metrics.jsonl`` and ``metrics.csv`` (one row per sequence),
``checkpoint.npz`` (everything needed to continue, and the run it belongs to), ``weights.npz``
(final weights) and ``summary.json``. Every whole-file write goes through a temporary file and
a rename; the metrics files are appended to and cut back to the checkpoint's row count on resume.

A run directory may have been damaged or made hostile. So: one process at a time trains in it
(an advisory lock on ``.lock``, `folder_lock.FolderLock`); nothing is written or appended through a
symbolic link, and nothing is read through one either; every file read back is checked against
what the tool writes (sizes before reading, JSON depth and digits, keys, types, row numbers:
the metrics rows by `metrics_files`), each kind of damage a `RunDirectoryError` naming the file
and the line or field; and a checkpoint carries its run's identity (`run_identity`: the
network, its seeds, a digest of spec.yaml and run.json's settings), so that one copied from
another run is refused.
"""

from __future__ import annotations

import csv
import json
import os
import re
import socket
import time
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from ..arrays import ArrayFileError, npz_bytes, read_npz
from ..engine.devices import DEVICES
from ..files import (RUNS, InputFileError, OutputError, append_no_follow, make_folder, not_written_by,
                     read_no_follow, remove_temporaries, safe_folder_name, write_atomically)
from ..folder_lock import FolderInUse, FolderLock
from ..layouts import RUN_DIRECTORY
from ..spec.jsondoc import JsonSyntaxError, parse_json
from ..tasks.data_file import relative_to_folder
from ..limits import MAX_JSON_BYTES, MAX_SPEC_BYTES, MAX_TRIALS
from .engines import ENGINE_NAMES
from .metrics_files import METRIC_COLUMNS, METRICS_HEADER, MetricsFileError, checked_rows, csv_kept, shown
from .run_identity import IDENTITY, identity_problem

#: What run.json holds: key -> (type, required).
RUN_INFO_KEYS = {"lstmgraph": (str, False), "spec": (str, False), "trials": (int, True), "engine": (str, False),
                 "device": (str, False), "data_sha256": (str, False)}


def default_run_path(name: str) -> Path:
    """``runs/NAME-YYYYMMDD-HHMMSS`` (UTC), NAME the spec's name as a folder's (`safe_folder_name`)."""
    return RUNS / f"{safe_folder_name(name)}-{time.strftime('%Y%m%d-%H%M%S', time.gmtime())}"


def spec_file_bytes(spec_data: dict, folder: Path) -> bytes:
    """What spec.yaml in ``folder`` holds for the resolved spec ``spec_data``: its data files
    named relative to ``folder`` (`relative_to_folder`), so that a run cloned with its data finds them."""
    return yaml.safe_dump(relative_to_folder(spec_data, folder), sort_keys=False).encode()


class RunDirectoryError(Exception):
    """A run directory that cannot be resumed; the message names the file and what is wrong."""


class RunInUse(RunDirectoryError):
    """Another process trains in the run directory (holds its lock)."""

    def __init__(self, error: FolderInUse):
        self.holder = error.holder
        super().__init__(str(error))


class RunDirectory:
    """A training run's directory and its files (the module's docstring): created, appended to,
    checkpointed and read back, each file checked; one process at a time trains in it."""

    #: The run's files, named once in `layouts.RUN_DIRECTORY`.
    SPEC, INFO, METRICS_JSONL, METRICS_CSV, CHECKPOINT, WEIGHTS, SUMMARY = RUN_DIRECTORY.files
    #: The metrics files of a run with no row yet: a new run's, and a resumed one's that had no checkpoint.
    NO_METRICS = {METRICS_CSV: METRICS_HEADER, METRICS_JSONL: b""}

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self._jsonl = None
        self._csv = None
        self._made_folder = False  # `acquire` created the folder (`discard` may remove it)
        #: The run's identity (`run_identity`), written into every checkpoint; None: none written.
        self.identity: dict[str, Any] | None = None
        self.lock = FolderLock(self.path, f"lstmgraph train, process {os.getpid()} on {socket.gethostname()}",
                               "wait for it to end (or stop it): two processes training one run directory "
                               "would corrupt it")

    @property
    def checkpoint_path(self) -> Path:
        return self.path / self.CHECKPOINT

    def exists(self) -> bool:
        return os.path.lexists(self.path / self.INFO)

    def not_a_run(self) -> str | None:
        """Why a new run must not start here: the folder holds files, but none a run writes first
        (`files.not_written_by`: anyone's files, a results folder); None where it may."""
        try:
            names = os.listdir(self.path)
        except OSError:  # missing, or a file (making the folder names that)
            return None
        return not_written_by(self.path, names, RUN_DIRECTORY.marks, "train")

    # -- who trains here ------------------------------------------------------------------------
    def acquire(self) -> None:
        """Hold the directory (creating it if need be); `RunInUse` naming the process that does,
        `OutputError` for a lock file that is a link or cannot be written."""
        if not self.lock.held:
            self._made_folder = self._made_folder or not os.path.lexists(self.path)
            make_folder(self.path)
        try:
            self.lock.acquire()
        except FolderInUse as error:
            raise RunInUse(error) from None
        try:  # what killed writes left (files.remove_temporaries): no write of ours is under way now
            descriptor = os.open(self.path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        except OSError:
            return  # (the reads and writes that follow name the problem)
        try:
            remove_temporaries(descriptor)
        finally:
            os.close(descriptor)

    def holder(self) -> str | None:
        """The process that trains here now (what its lock says), or None."""
        return self.lock.holder_of() if self.path.is_dir() else None

    def release(self) -> None:
        self.lock.release()

    def discard(self) -> None:
        """Undo `create` for a run that wrote no metric row and no checkpoint: remove spec.yaml,
        run.json and the metrics files (a link among them is removed, not followed), give the
        directory up, and remove it if this process made it and nothing else is in it."""
        self.close()
        try:
            for name in (self.SPEC, self.INFO, self.METRICS_JSONL, self.METRICS_CSV):
                (self.path / name).unlink(missing_ok=True)
        finally:
            self.release()
        if self._made_folder:
            try:
                self.path.rmdir()
            except OSError:
                pass  # something else is in it: it stays

    # -- writing --------------------------------------------------------------------------------
    def create(self, spec_data: dict, run_info: dict) -> None:
        make_folder(self.path)
        try:
            for name in (self.METRICS_JSONL, self.METRICS_CSV):
                (self.path / name).unlink(missing_ok=True)  # a link is removed, not followed
        except OSError as error:
            raise OutputError(self.path / name, error) from None
        write_atomically(self.path / self.SPEC, spec_file_bytes(spec_data, self.path))
        self.write_json(self.INFO, run_info)
        self.write_metrics(self.NO_METRICS)

    def write_json(self, name: str, data: Any) -> None:
        write_atomically(self.path / name, (json.dumps(data, indent=2) + "\n").encode())

    def metrics_kept(self, rows: int, trials: int | None = None) -> dict[str, bytes]:
        """The content of metrics.jsonl and metrics.csv cut back to ``rows`` rows, each row
        checked (`RunDirectoryError` naming the file and line); nothing is written. No rows (a run
        resumed from step 0): the files' header alone, whatever they hold now."""
        if rows == 0:
            return dict(self.NO_METRICS)
        try:
            return {self.METRICS_JSONL: b"".join(checked_rows(self.path / self.METRICS_JSONL, rows, trials)[1]),
                    self.METRICS_CSV: csv_kept(self.path / self.METRICS_CSV, rows)}
        except MetricsFileError as error:
            raise RunDirectoryError(str(error)) from None

    def write_metrics(self, contents: dict[str, bytes]) -> None:
        for name, content in contents.items():
            write_atomically(self.path / name, content)

    def append_metrics(self, row: dict[str, Any]) -> None:
        if self._jsonl is None:  # never through a link: OutputError naming the file
            self._jsonl = append_no_follow(self.path / self.METRICS_JSONL)
            self._csv = append_no_follow(self.path / self.METRICS_CSV, newline="")
        try:
            self._jsonl.write(json.dumps(row) + "\n")
        except OSError as error:
            raise OutputError(self.path / self.METRICS_JSONL, error) from None
        try:
            csv.writer(self._csv).writerow([row[column] for column in METRIC_COLUMNS])
        except OSError as error:
            raise OutputError(self.path / self.METRICS_CSV, error) from None

    def _streams(self) -> tuple[tuple[Any, Path], ...]:
        """The open metrics files and their paths (a stream opened from a descriptor is named by its number)."""
        return (self._jsonl, self.path / self.METRICS_JSONL), (self._csv, self.path / self.METRICS_CSV)

    def flush(self) -> None:
        """Write the appended metric rows out and sync them to disk (fsync): a checkpoint follows,
        and it must count no row that a power cut could lose (a resume would refuse it)."""
        for stream, path in self._streams():
            if stream is not None:
                try:
                    stream.flush()
                    os.fsync(stream.fileno())
                except OSError as error:
                    raise OutputError(path, error) from None

    def close(self) -> None:
        """Close the metrics files (each of them, whatever fails); `OutputError` naming the first that failed."""
        streams, self._jsonl, self._csv = self._streams(), None, None
        failed = None
        for stream, path in streams:
            if stream is not None:
                try:
                    stream.close()
                except OSError as error:
                    failed = failed or OutputError(path, error)
        if failed is not None:
            raise failed

    def save_checkpoint(self, arrays: dict[str, np.ndarray]) -> None:
        self.flush()
        if self.identity is not None:
            arrays = {**arrays, IDENTITY: np.array(json.dumps(self.identity, sort_keys=True))}
        write_atomically(self.checkpoint_path, npz_bytes(arrays))

    # -- reading back ---------------------------------------------------------------------------
    def read_json(self, name: str) -> Any:
        """A JSON file of the directory: a regular file (no link followed) of at most
        `MAX_JSON_BYTES`, UTF-8, read by the spec's bounded JSON reader (depth, values, digits),
        no key twice in an object."""
        path = self.path / name
        try:
            text = read_no_follow(path, MAX_JSON_BYTES, name).decode("utf-8")
        except InputFileError as error:
            raise RunDirectoryError(str(error)) from None
        except UnicodeDecodeError as error:
            raise RunDirectoryError(f"{path}: cannot read it as JSON (not UTF-8 text at byte {error.start})") from None
        try:
            data, _, repeated = parse_json(text)
        except JsonSyntaxError as error:
            line, column = error.position
            message = error.message.replace("the spec is too large: ", "too large: ")
            expected = (f"the file lstmgraph wrote (restore {name}; a damaged or foreign file?)"
                        if message != error.message else error.expected)
            raise RunDirectoryError(f"{path}: cannot read it as JSON: line {line}, column {column}: {message}"
                                    + (f"; expected {expected}" if expected else "")) from None
        if repeated:  # json's own reader would keep the last: a damaged or hand-edited file
            key, (line, column) = repeated[0]
            raise RunDirectoryError(f"{path}: line {line}, column {column}: the key {key[-1]!r} appears twice in one "
                                    f"object; expected the file lstmgraph wrote (restore {name})")
        return data

    def read_info(self) -> dict[str, Any]:
        """``run.json``, checked: an object with ``trials`` (an integer from 1 to `MAX_TRIALS`),
        optionally ``lstmgraph`` and ``spec`` (strings), a known ``engine`` and ``device``, and
        ``data_sha256`` (a data file's digest), nothing else."""
        path = self.path / self.INFO
        info = self.read_json(self.INFO)
        trials = info.get("trials") if isinstance(info, dict) else None
        if type(trials) is not int or trials < 1:
            raise RunDirectoryError(f"{path}: expected a JSON object whose 'trials' is an integer > 0")
        _check_keys(path, info, RUN_INFO_KEYS)
        if trials > MAX_TRIALS:
            raise RunDirectoryError(f"{path}: 'trials' is {trials}, more than the limit of {MAX_TRIALS:,}")
        if info.get("engine", "numpy") not in ENGINE_NAMES:
            raise RunDirectoryError(f"{path}: unknown engine {info['engine'][:40]!r}; expected "
                                    f"{' or '.join(ENGINE_NAMES)}")
        if info.get("device", "cpu") not in DEVICES:
            raise RunDirectoryError(f"{path}: unknown device {info['device'][:40]!r}; expected one of "
                                    f"{', '.join(DEVICES)}")
        if "data_sha256" in info and not re.fullmatch(r"[0-9a-f]{64}", info["data_sha256"]):
            raise RunDirectoryError(f"{path}: 'data_sha256' is {shown(info['data_sha256'])}; expected the "
                                    "sha256 digest of the run's data file (64 hexadecimal digits)")
        return info

    def read_spec(self) -> bytes:
        """spec.yaml's bytes (a regular file, no link followed, at most `MAX_SPEC_BYTES`)."""
        try:
            return read_no_follow(self.path / self.SPEC, MAX_SPEC_BYTES, "a spec")
        except InputFileError as error:
            raise RunDirectoryError(str(error)) from None

    def read_metrics(self, trials: int | None = None) -> list[dict[str, Any]]:
        """Every row of metrics.jsonl, checked (a last line cut short by a killed run is an error
        here: the run's own reader after training)."""
        try:
            return checked_rows(self.path / self.METRICS_JSONL, None, trials)[0]
        except MetricsFileError as error:
            raise RunDirectoryError(str(error)) from None

    def load_checkpoint(self, trials: int | None = None,
                        identity: dict[str, Any] | None = None) -> dict[str, np.ndarray]:
        """The checkpoint's arrays, its identity taken out. With ``trials``, its ``counters``
        must be four integers >= 0 counting that many trials (checked before a trainer is built
        for them); with ``identity``, it must be that run's (`run_identity`): `RunDirectoryError`
        naming what differs otherwise. No link is followed."""
        try:
            arrays = read_npz(self.checkpoint_path, follow_links=False)
        except ArrayFileError as error:
            raise RunDirectoryError(str(error)) from None
        stored = arrays.pop(IDENTITY, None)
        counters = arrays.get("counters")
        if trials is not None:
            if (counters is None or counters.shape != (4,) or counters.dtype.kind not in "iu"
                    or counters.min() < 0):
                raise RunDirectoryError(f"{self.checkpoint_path}: 'counters' is missing or not four "
                                        "integers >= 0 (steps, sequences, metric rows, trials)")
            if counters[3] != trials:
                raise RunDirectoryError(f"{self.checkpoint_path}: holds {counters[3]} trials, but "
                                        f"{self.path / self.INFO} says {trials}")
        if identity is not None:
            self._check_identity(stored, identity)
        return arrays

    def _check_identity(self, stored: np.ndarray | None, identity: dict[str, Any]) -> None:
        problem = identity_problem(stored, identity)
        if problem is not None:
            raise RunDirectoryError(f"{self.checkpoint_path}: {problem}; resume from this run's own checkpoint.npz, "
                                    "or start a new run (lstmgraph train SPEC --out ANOTHER_FOLDER)")


def _check_keys(path: Path, data: dict, keys: dict[str, tuple[type, bool]]) -> None:
    """Every key known, of its type (an int counts as a float; a bool as neither), the required present."""
    unknown = sorted(key for key in data if key not in keys)
    if unknown:
        raise RunDirectoryError(f"{path}: unknown key {shown(unknown[0])}; expected only "
                                f"{', '.join(keys)}")
    for key, (kind, required) in keys.items():
        if key not in data:
            if required:
                raise RunDirectoryError(f"{path}: '{key}' is missing")
            continue
        value = data[key]
        fits = (not isinstance(value, bool)
                and (isinstance(value, (int, float)) if kind is float else isinstance(value, kind)))
        if not fits:
            raise RunDirectoryError(f"{path}: '{key}' is {shown(value)}; expected "
                                    f"{ {str: 'a string', int: 'an integer', float: 'a number'}[kind]}")

