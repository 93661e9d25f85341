"""A results folder (`lstmgraph reproduce --out`): its layout, its lock and its files, each read
back with limits and checked, as `training.rundir.RunDirectory` owns a training run.

Only the process running the trials writes it (`schedule.run_experiment`), so a cluster needs no
shared filesystem:

- ``experiment.json``: the settings, the spec, the protocol (``protocol_settings``) and the
  arithmetic (`TRIAL_ARITHMETIC`) as run, and the row in words (`DESCRIPTIVE_KEYS`); a run
  with other settings is refused, naming the setting that differs, as is a folder of files
  without one (no run of ours wrote it). Words and published figures are rewritten as a run
  opens the folder, never compared;
- ``trials.jsonl``: one row per finished trial, appended and synced as each ends;
- ``trials/SEED/checkpoint.npz`` while a trial runs, tied to its trial (``trial/seed``,
  ``trial/kind``) and to the folder's settings (``folder/settings``, a digest of what its
  trials ran with, `settings_digest`); ``trials/SEED/`` then holds the trained network as a run
  directory for `lstmgraph plot` (``spec.yaml``, ``weights.npz``, ``summary.json``);
- ``results.json``, ``trials.csv`` and ``results.png``, written at the end (or at a stop);
- ``.lock``: held while a run writes the folder (an advisory lock the system drops when its
  holder dies; a second run is refused, naming the first).

No link is followed below the folder (`folder_files`), and every file is checked before it is
used; a refused run leaves the folder as it was (issue 36).
"""

from __future__ import annotations

import io
import json
import os
import socket
import stat
import zipfile
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

import numpy as np

from ..arrays import MAX_ARCHIVE_BYTES
from ..errors import cut
from ..files import DISK_REFUSED, TOO_LONG, OutputError, make_folder, not_written_by, remove_made_folders
from ..folder_lock import FolderInUse, FolderLock
from ..layouts import RESULTS_FOLDER
from ..limits import MAX_JSON_BYTES, MAX_ROW_BYTES, check_count
from ..training.rundir import RunDirectory, spec_file_bytes
from .folder_files import (FolderFileError, append_file, folder_descriptor, folder_names,
                           parse_json, read_file, remove_file, remove_temporaries_in, write_file)
from .rows import MAX_TRIALS, check_results, check_row
from .folder_settings import PROTOCOL_SETTINGS, TRIAL_ARITHMETIC, data_file_change, former_settings, run_settings
from .settings_diff import setting_differences

#: What a row reported as a run opens its folder carries where an earlier run finished it (a resume).
FINISHED_BEFORE = "finished_before"
#: The array of a checkpoint holding the digest of the folder's settings (`settings_digest`).
SETTINGS_KEY = "folder/settings"
#: Bytes a file read back may hold: experiment.json, trials.jsonl and results.json, a checkpoint.
#: (`limits.py`'s MAX_JSON_BYTES and MAX_ROW_BYTES for the first and a row of the second.)
MAX_ROWS_BYTES = 1 << 30
MAX_CHECKPOINT_BYTES = 1 << 31
_DELETE = "delete it to run that trial from the start"
#: What to do about a damaged file: where the command writes the folder (`reproduce`, `sweep`: its
#: --out), and where it only reads one another command wrote (`results`, `evaluate`).
WRITER_ADVICE = "delete it or choose another --out"
READER_ADVICE = "restore it, or rerun the lstmgraph reproduce (or sweep) that wrote the folder"


class ResultsConflict(Exception):
    """The folder holds trials run with other settings, is in use, or holds a file that cannot
    be used (the message names it and what was expected)."""


def check_written_by(root: Path, below: str, marks: tuple[str, ...], command: str) -> None:
    """`ResultsConflict` for a folder (``root``/``below``) holding files but none of ``marks``
    (`files.not_written_by`): one a run would mix its files into."""
    try:
        problem = not_written_by(root.joinpath(below), folder_names(root, below) or [], marks, command)
    except OutputError as error:
        raise ResultsConflict(f"{error.path}: {error.reason}") from None
    if problem:
        raise ResultsConflict(problem)


def _check_lock_file(path: Path) -> None:
    """A ``.lock`` with another name for its file (a hard link) would be written through."""
    try:
        found = os.lstat(path)
    except OSError:
        return
    if stat.S_ISREG(found.st_mode) and found.st_nlink != 1:
        raise ResultsConflict(f"{path}: not a plain file of its own ({found.st_nlink} links); delete it or choose "
                              "another --out")


@contextmanager
def locked_folder(path: Path, command: str, made: Path | None = None) -> Iterator[None]:
    """Hold ``path/.lock`` for ``lstmgraph COMMAND`` while the block runs (`folder_lock.FolderLock`);
    `ResultsConflict` naming the holder, or a lock file that cannot be used (a link, or a file
    with other hard links); `OutputError` where the disk refuses it (full or read-only: the same
    command resumes once it can write, as `cli.common.resumable_error_text` says). The folders
    this command made for it (``made``: `files.make_folder`'s) are then removed, if empty."""
    _check_lock_file(path / FolderLock.NAME)
    lock = FolderLock(path, f"lstmgraph {command}, process {os.getpid()} on {socket.gethostname()}",
                      "wait for it to end, or choose another --out")
    try:
        lock.acquire()
    except FolderInUse as error:
        raise ResultsConflict(str(error)) from None
    except OutputError as error:
        remove_made_folders(path, made)
        if error.errno in DISK_REFUSED:
            raise
        raise ResultsConflict(str(error)) from None  # a link, not a regular file: the folder is at fault
    try:
        yield
    except OutputError:
        lock.release()
        remove_made_folders(path, made)  # (only those left empty: nothing written is lost)
        raise
    finally:
        lock.release()


class ResultsFolder:
    """The results folder at ``path``: the folder the user named, or one below ``within`` (a
    sweep's ``DIR/settings/INDEX`` within ``DIR``), reached from there without following a link.
    No link is followed below either. ``advice``: what a message on a damaged file suggests."""

    SETTINGS, ROWS, RESULTS, CSV, FIGURE = RESULTS_FOLDER.files  # (named once in `layouts`)
    LOCK = FolderLock.NAME

    def __init__(self, path: str | Path, within: str | Path | None = None, advice: str = WRITER_ADVICE):
        self.path = Path(path)
        self.root = Path(within) if within is not None else self.path
        self.below = self.path.relative_to(self.root).as_posix() if within is not None else ""
        self.advice = advice
        #: The outermost folder `reach` made (`files.make_folder`): removed if the disk refuses the lock.
        self.made: Path | None = None

    @classmethod
    def read_only(cls, path: str | Path) -> "ResultsFolder":
        """A folder a command reads and never writes: a damaged file's message says to restore it."""
        return cls(path, advice=READER_ADVICE)

    def _in(self, relative: str) -> str:  # (a path in the folder as a path in `root`)
        return f"{self.below}/{relative}" if self.below else relative

    def reach(self, create: bool = False) -> bool:
        """Whether the folder is there (made, with its parents below `root`, if ``create``);
        `ResultsConflict` names a folder on the way from `root` that is a link or a file."""
        if create:
            made = make_folder(self.root)
            if not self.below:  # (a sweep's setting: in its sweep's folder, which the sweep made)
                self.made = self.made or made
        try:
            with folder_descriptor(self.root, tuple(self.below.split("/")) if self.below else (), create) as descriptor:
                return descriptor is not None
        except OutputError as error:
            advice = "" if str(error.reason).endswith(TOO_LONG) else f"; {self.advice}"  # (its own advice)
            raise ResultsConflict(f"{error.path}: {error.reason}{advice}") from None

    # -- the layout -------------------------------------------------------------------------------
    def file(self, relative: str) -> Path:
        return self.path / relative

    @staticmethod
    def trial(seed: int) -> str:
        """``trials/SEED``: trial ``seed``'s folder, relative to the results folder."""
        return RESULTS_FOLDER.member(int(seed))

    def checkpoint_path(self, seed: int) -> Path:
        return self.path / self.trial(seed) / RunDirectory.CHECKPOINT

    @staticmethod
    def of_trial(run_path: Path) -> "ResultsFolder | None":
        """The results folder holding trial folder ``run_path`` (OUT/trials/SEED), else None."""
        parent = Path(run_path).resolve().parent
        return ResultsFolder.read_only(parent.parent) if parent.name == "trials" else None

    # -- the lock ---------------------------------------------------------------------------------
    @contextmanager
    def locked(self) -> Iterator[None]:
        """Hold ``.lock`` while the block runs (`folder_lock.FolderLock`: opened without following a
        link, never written through one); `ResultsConflict` naming the holder if another process
        holds it, or naming a ``.lock`` that is a link or has other hard links."""
        self.reach(create=True)
        with locked_folder(self.path, "reproduce", self.made):
            yield

    def holder(self) -> str | None:
        """Who holds the lock now (its text), None if no run does: the lock is tried without
        waiting and let go at once, nothing created."""
        _check_lock_file(self.file(self.LOCK))
        try:
            return FolderLock(self.path, "").holder_of()
        except OutputError as error:
            raise ResultsConflict(f"{error.path}: {error.reason}") from None

    # -- experiment.json ---------------------------------------------------------------------------
    def stored_settings(self) -> dict[str, Any] | None:
        """experiment.json's content (None if there is none), read with limits: a JSON object."""
        content = self._read(self.SETTINGS, MAX_JSON_BYTES)
        if content is None:
            return None
        settings = self._json(content, self.file(self.SETTINGS))
        if not isinstance(settings, dict):
            raise ResultsConflict(f"{self.file(self.SETTINGS)}: expected a JSON object of settings; {self.advice}")
        return settings

    def check_settings(self, wanted: dict[str, Any], name: str) -> None:
        """`ResultsConflict` if the folder holds trials run with other settings than ``wanted``
        (which it would mix), naming the settings that differ, or if it holds files but no
        experiment.json (`check_written_by`)."""
        stored = self.stored_settings()
        if stored is None:
            return check_written_by(self.root, self.below, RESULTS_FOLDER.marks, "reproduce")
        # What the trials ran with; a folder from before protocol_settings, its whole settings.
        recorded, expected = stored, run_settings(wanted if PROTOCOL_SETTINGS in stored else former_settings(wanted))
        stored = run_settings(stored)
        if stored == expected:
            return
        if {**stored, "arithmetic": TRIAL_ARITHMETIC} == expected:
            raise ResultsConflict(
                f"{self.path} holds trials of {name} run by an earlier version of lstmgraph whose arithmetic "
                f"differs in the last bits (its trials would not be those run now); choose another --out or "
                f"delete it")
        held, changed = recorded.get("name"), data_file_change(recorded, wanted)
        what = (f"trials of {name} run with other settings" if stored.get("name") in (None, expected.get("name"))
                else f"trials of {cut(held, 80) if isinstance(held, str) else 'another experiment'}, not of {name}")
        raise ResultsConflict(f"{self.path} holds {changed}" if changed else f"{self.path} holds {what} "
                              f"({'; '.join(setting_differences(stored, expected))}); choose another --out or delete it")

    def remove_temporaries(self) -> None:
        """Remove the temporary files killed writes left in the folder and its trials' folders
        (`folder_files.remove_temporaries_in`); with the lock held. A link or a file where a
        folder should be is left to the reads and writes that follow, which name it."""
        try:
            remove_temporaries_in(self.root, self.below)
            for seed in self.trial_seeds():
                remove_temporaries_in(self.root, self._in(self.trial(seed)))
        except OutputError:
            pass

    def trial_seeds(self) -> list[int]:
        """The seeds of its trials' folders (``trials/SEED``; other names aside). `OutputError`
        where ``trials`` cannot be listed (a link, a file)."""
        return [int(name) for name in folder_names(self.root, self._in("trials")) or [] if name.isdigit()]

    def write_settings(self, settings: dict[str, Any]) -> None:
        write_file(self.root, self._in(self.SETTINGS), json.dumps(settings, indent=2).encode())

    # -- trials.jsonl --------------------------------------------------------------------------------
    def read_rows(self, protocol: Any, limit: int | None = None) -> tuple[list[dict[str, Any]], bool]:
        """The finished trials' rows, each checked (`rows.check_row`: keys and types, a seed in
        range and not seen before, a row of ``protocol``'s kind) and a bool: whether the last line
        was cut by a kill (dropped: that trial runs again). `ResultsConflict` names a damaged line."""
        content = self._read(self.ROWS, MAX_ROWS_BYTES)
        if content is None:
            return [], False
        path = self.file(self.ROWS)
        lines = content.split(b"\n")
        last = lines.pop()  # after the final newline: b"" unless the last line was cut
        rows: list[dict[str, Any]] = []
        first_line: dict[int, int] = {}
        cut = False
        for number, line in enumerate(lines + ([last] if last else []), start=1):
            where = f"{path}, line {number}"
            try:
                if len(line) > MAX_ROW_BYTES:
                    raise FolderFileError(f"{where}: {len(line):,} bytes, more than a row's {MAX_ROW_BYTES:,}")
                row = parse_json(line, where)
            except FolderFileError as error:
                if number == len(lines) + 1:  # the unended last line: a kill cut it as it was written
                    cut = True
                    break
                raise ResultsConflict(f"{error}; expected one trial's row per line (delete the line to run that "
                                      "trial again)") from None
            problem = check_row(row, protocol, limit)
            if problem is None and row["seed"] in first_line:
                problem = f"trial {row['seed']}'s row again (its first is on line {first_line[row['seed']]})"
            if problem is not None:
                raise ResultsConflict(f"{where}: {problem}; delete the line to run that trial again, or choose "
                                      "another --out")
            first_line[row["seed"]] = number
            rows.append(row)
        return rows, cut

    def write_rows(self, rows: list[dict[str, Any]]) -> None:
        write_file(self.root, self._in(self.ROWS), "".join(json.dumps(row) + "\n" for row in rows).encode())

    def append_row(self, row: dict[str, Any]) -> None:
        append_file(self.root, self._in(self.ROWS), (json.dumps(row) + "\n").encode())

    # -- trials/SEED ---------------------------------------------------------------------------------
    def read_checkpoint(self, seed: int, kind: str,
                        digests: tuple[str, ...]) -> tuple[bytes, dict[str, np.ndarray]] | None:
        """Trial ``seed``'s checkpoint (its bytes and arrays), None if it has none; refused
        (`ResultsConflict`) unless it is an .npz archive of that trial (``trial/seed``), of a
        ``kind`` protocol, written for this folder's settings (one of ``digests``,
        `checkpoint_digests`), with finite values."""
        relative = f"{self.trial(seed)}/{RunDirectory.CHECKPOINT}"
        path = self.file(relative)
        content = self._read(relative, MAX_CHECKPOINT_BYTES, _DELETE)
        if content is None:
            return None
        try:
            with zipfile.ZipFile(io.BytesIO(content)) as archive:
                size = sum(member.file_size for member in archive.infolist())
            if size > MAX_ARCHIVE_BYTES:
                raise ResultsConflict(f"{path}: unpacks to {size:,} bytes, more than {MAX_ARCHIVE_BYTES:,}; {_DELETE}")
            with np.load(io.BytesIO(content), allow_pickle=False) as archive:
                arrays = {name: archive[name] for name in archive.files}
        except ResultsConflict:
            raise
        except (zipfile.BadZipFile, OSError, ValueError, EOFError, KeyError, NotImplementedError, MemoryError) as error:
            raise ResultsConflict(f"{path}: not an .npz archive of a trial ({type(error).__name__}); {_DELETE}") \
                from None
        problem = _checkpoint_problem(arrays, seed, kind, digests)
        if problem:
            raise ResultsConflict(f"{path}: {problem}; {_DELETE}")
        return content, arrays

    def write_checkpoint(self, seed: int, content: bytes, digest: str) -> None:
        """A trial's checkpoint (an .npz archive's bytes, as a worker sends it) with the digest
        of the folder's settings added."""
        buffer = io.BytesIO(content)
        with zipfile.ZipFile(buffer, "a") as archive:
            array = io.BytesIO()
            np.lib.format.write_array(array, np.array(digest), allow_pickle=False)
            archive.writestr(f"{SETTINGS_KEY}.npy", array.getvalue())
        write_file(self.root, self._in(f"{self.trial(seed)}/{RunDirectory.CHECKPOINT}"), buffer.getvalue())

    def remove_checkpoint(self, seed: int) -> None:
        remove_file(self.root, self._in(f"{self.trial(seed)}/{RunDirectory.CHECKPOINT}"))

    def save_trial(self, seed: int, spec_data: dict[str, Any], weights: bytes, row: dict[str, Any]) -> None:
        """A trained trial as a run directory `lstmgraph plot` reads: ``spec.yaml`` (the network
        as run, with the experiment's rate and momentum), ``weights.npz`` (final weights) and
        ``summary.json`` (its result row)."""
        folder = self.trial(seed)
        write_file(self.root, self._in(f"{folder}/{RunDirectory.SPEC}"), spec_file_bytes(spec_data, self.path / folder))
        write_file(self.root, self._in(f"{folder}/{RunDirectory.WEIGHTS}"), weights)
        write_file(self.root, self._in(f"{folder}/{RunDirectory.SUMMARY}"), (json.dumps(row, indent=2) + "\n").encode())

    def write_results(self, results: dict[str, Any], csv_text: str, figure: bytes) -> None:
        write_file(self.root, self._in(self.RESULTS), json.dumps(results, indent=2).encode())
        write_file(self.root, self._in(self.CSV), csv_text.encode())
        write_file(self.root, self._in(self.FIGURE), figure)

    def read_results(self) -> dict[str, Any]:
        """results.json, read with limits and checked (`rows.check_results`)."""
        path = self.file(self.RESULTS)
        content = self._read(self.RESULTS, MAX_ROWS_BYTES)
        if content is None:
            raise ResultsConflict(f"{path}: no such file")
        results = self._json(content, path)
        if problem := check_results(results):
            raise ResultsConflict(f"{path}: {problem}; {self.advice}")
        return results

    # -- reading -----------------------------------------------------------------------------------------
    def _read(self, relative: str, limit: int, advice: str | None = None) -> bytes | None:
        try:
            return read_file(self.root, self._in(relative), limit)
        except FolderFileError as error:
            raise ResultsConflict(f"{error}; {advice or self.advice}") from None

    def _json(self, content: bytes, path: Path) -> Any:
        try:
            return parse_json(content, str(path))
        except FolderFileError as error:
            raise ResultsConflict(f"{error}; {self.advice}") from None


def _checkpoint_problem(arrays: dict[str, np.ndarray], seed: int, kind: str, digests: tuple[str, ...]) -> str | None:
    """Why ``arrays`` are no checkpoint of trial ``seed`` of a ``kind`` protocol written for
    settings of one of ``digests``; None if they are."""
    def text(name: str) -> str | None:
        value = arrays.get(name)
        return str(value) if value is not None and value.shape == () and value.dtype.kind == "U" else None

    stored = arrays.get("trial/seed")
    if stored is None or stored.shape != () or stored.dtype.kind not in "iu":
        return "no trial/seed: not a trial's checkpoint, or one written by an earlier version"
    if int(stored) != seed:
        return f"trial {int(stored)}'s checkpoint, not trial {seed}'s"
    if text("trial/kind") != kind:
        return f"a checkpoint of a {text('trial/kind')} protocol's trial, not of this row's {kind} protocol"
    if text(SETTINGS_KEY) not in digests:
        return "written for other settings than this folder's experiment.json (or by an earlier version)"
    for name, value in arrays.items():
        if value.dtype.kind not in "biufU":
            return f"'{name}' holds {value.dtype} values, not numbers"
        if value.dtype.kind in "fc" and not np.isfinite(value).all():
            return f"'{name}' holds NaN or infinite values"
    return None


def check_trial_count(trials: int) -> None:
    """`limits.LimitError` (a ValueError) for a trial count below 1 or above `MAX_TRIALS`."""
    check_count("the number of trials (--trials)", trials, MAX_TRIALS)
