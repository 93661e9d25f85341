"""A training run's directory: nothing is lost, and a killed run can be resumed exactly.

Files: ``spec.yaml`` (the resolved spec, command-line overrides applied), ``run.json`` (how
the run was started), ``metrics.jsonl`` and ``metrics.csv`` (one row per sequence),
``checkpoint.npz`` (everything needed to continue), ``weights.npz`` (final weights) and
``summary.json``. Every whole-file write goes through a temporary file and a rename; the
metrics files are appended to and cut back to the checkpoint's row count on resume.
"""

from __future__ import annotations

import csv
import json
import re
import time
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from ..arrays import ArrayFileError, npz_bytes, read_npz
from ..files import OutputError, make_folder, write_atomically

METRIC_COLUMNS = ("sequence", "step", "loss", "loss_per_step", "learning_rate")


def default_run_path(name: str) -> Path:
    """``runs/NAME-YYYYMMDD-HHMMSS`` (UTC). A spec's name is checked, but a name taken from its
    file's stem may hold anything, so NAME keeps only safe characters and 64 of them."""
    safe = re.sub(r"[^A-Za-z0-9_.-]", "_", name).lstrip(".-")[:64] or "network"
    return Path("runs") / f"{safe}-{time.strftime('%Y%m%d-%H%M%S', time.gmtime())}"


class RunDirectoryError(Exception):
    """A run directory that cannot be resumed; the message names the file and what is wrong."""


class RunDirectory:
    def __init__(self, path: str | Path):
        self.path = Path(path)
        self._jsonl = None
        self._csv = None

    @property
    def checkpoint_path(self) -> Path:
        return self.path / "checkpoint.npz"

    def exists(self) -> bool:
        return (self.path / "run.json").exists()

    def create(self, spec_data: dict, run_info: dict) -> None:
        make_folder(self.path)
        try:
            for name in ("metrics.jsonl", "metrics.csv"):
                (self.path / name).unlink(missing_ok=True)
        except OSError as error:
            raise OutputError(self.path / name, error) from None
        write_atomically(self.path / "spec.yaml", yaml.safe_dump(spec_data, sort_keys=False).encode())
        self.write_json("run.json", run_info)
        write_atomically(self.path / "metrics.csv", (",".join(METRIC_COLUMNS) + "\n").encode())
        write_atomically(self.path / "metrics.jsonl", b"")

    def read_info(self) -> dict[str, Any]:
        """``run.json``, checked: an object with ``trials`` (an integer > 0) and, if given, a
        known ``engine``."""
        path = self.path / "run.json"
        try:
            info = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as error:  # UnicodeDecodeError and JSONDecodeError too
            raise RunDirectoryError(f"{path}: cannot read it as JSON ({error})") from None
        trials = info.get("trials") if isinstance(info, dict) else None
        if type(trials) is not int or trials < 1:
            raise RunDirectoryError(f"{path}: expected a JSON object whose 'trials' is an integer > 0")
        if info.get("engine", "numpy") not in ("compiled", "numpy"):
            raise RunDirectoryError(f"{path}: unknown engine {info['engine']!r}; expected compiled or numpy")
        return info

    def write_json(self, name: str, data: Any) -> None:
        write_atomically(self.path / name, (json.dumps(data, indent=2) + "\n").encode())

    def cut_metrics(self, rows: int) -> None:
        """Keep the first ``rows`` metric rows (written before the checkpoint we resume from);
        fewer rows than that, or a row that is not JSON, means the directory is damaged."""
        for name, header in (("metrics.jsonl", 0), ("metrics.csv", 1)):
            path = self.path / name
            try:
                lines = path.read_bytes().splitlines(keepends=True) if path.exists() else []
            except OSError as error:
                raise RunDirectoryError(f"{path}: cannot read it ({error.strerror})") from None
            kept = lines[:rows + header]
            if len(kept) < rows + header:
                raise RunDirectoryError(f"{path}: holds {max(len(lines) - header, 0)} rows, but the "
                                        f"checkpoint was written after {rows}")
            if header == 0:
                _check_rows(path, kept)
            write_atomically(path, b"".join(kept))

    def append_metrics(self, row: dict[str, Any]) -> None:
        try:
            if self._jsonl is None:
                self._jsonl = open(self.path / "metrics.jsonl", "a", encoding="utf-8")
                self._csv = open(self.path / "metrics.csv", "a", encoding="utf-8", newline="")
            self._jsonl.write(json.dumps(row) + "\n")
            csv.writer(self._csv).writerow([row[column] for column in METRIC_COLUMNS])
        except OSError as error:
            raise OutputError(self.path / "metrics.jsonl", error) from None

    def flush(self) -> None:
        for stream in (self._jsonl, self._csv):
            if stream is not None:
                try:
                    stream.flush()
                except OSError as error:
                    raise OutputError(stream.name, error) from None

    def close(self) -> None:
        streams, self._jsonl, self._csv = (self._jsonl, self._csv), None, None
        for stream in streams:
            if stream is not None:
                try:
                    stream.close()
                except OSError as error:
                    raise OutputError(stream.name, error) from None

    def save_checkpoint(self, arrays: dict[str, np.ndarray]) -> None:
        self.flush()
        write_atomically(self.checkpoint_path, npz_bytes(arrays))

    def load_checkpoint(self, trials: int | None = None) -> dict[str, np.ndarray]:
        """The checkpoint's arrays; with ``trials``, its ``counters`` must be four integers >= 0
        counting that many trials (checked before a trainer is built for them)."""
        try:
            arrays = read_npz(self.checkpoint_path)
        except ArrayFileError as error:
            raise RunDirectoryError(str(error)) from None
        counters = arrays.get("counters")
        if trials is not None:
            if counters is None or counters.shape != (4,) or counters.dtype.kind not in "iu" or counters.min() < 0:
                raise RunDirectoryError(f"{self.checkpoint_path}: 'counters' is missing or not four "
                                        "integers >= 0 (steps, sequences, metric rows, trials)")
            if counters[3] != trials:
                raise RunDirectoryError(f"{self.checkpoint_path}: holds {counters[3]} trials, but "
                                        f"{self.path / 'run.json'} says {trials}")
        return arrays


def _check_rows(path: Path, lines: list[bytes]) -> None:
    for number, line in enumerate(lines, start=1):
        try:
            row = json.loads(line)
        except ValueError:
            row = None
        if not isinstance(row, dict) or not isinstance(row.get("loss_per_step"), (int, float)):
            raise RunDirectoryError(f"{path}: line {number} is not a metrics row")
