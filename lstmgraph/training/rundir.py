"""A training run's directory: nothing is lost, and a killed run can be resumed exactly.

Files: ``spec.yaml`` (the resolved spec, command-line overrides applied), ``run.json`` (how
the run was started), ``metrics.jsonl`` and ``metrics.csv`` (one row per sequence),
``checkpoint.npz`` (everything needed to continue), ``weights.npz`` (final weights) and
``summary.json``. Every whole-file write goes through a temporary file and a rename; the
metrics files are appended to and cut back to the checkpoint's row count on resume.
"""

from __future__ import annotations

import csv
import io
import json
import re
import time
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from ..files import write_atomically

METRIC_COLUMNS = ("sequence", "step", "loss", "loss_per_step", "learning_rate")


def default_run_path(name: str) -> Path:
    """``runs/NAME-YYYYMMDD-HHMMSS`` (UTC). A spec's name is checked, but a name taken from its
    file's stem may hold anything, so NAME keeps only safe characters and 64 of them."""
    safe = re.sub(r"[^A-Za-z0-9_.-]", "_", name).lstrip(".-")[:64] or "network"
    return Path("runs") / f"{safe}-{time.strftime('%Y%m%d-%H%M%S', time.gmtime())}"


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
        self.path.mkdir(parents=True, exist_ok=True)
        write_atomically(self.path / "spec.yaml", yaml.safe_dump(spec_data, sort_keys=False).encode())
        self.write_json("run.json", run_info)
        for name in ("metrics.jsonl", "metrics.csv"):
            (self.path / name).unlink(missing_ok=True)
        write_atomically(self.path / "metrics.csv", (",".join(METRIC_COLUMNS) + "\n").encode())
        write_atomically(self.path / "metrics.jsonl", b"")

    def read_json(self, name: str) -> Any:
        return json.loads((self.path / name).read_text())

    def write_json(self, name: str, data: Any) -> None:
        write_atomically(self.path / name, (json.dumps(data, indent=2) + "\n").encode())

    def cut_metrics(self, rows: int) -> None:
        """Keep the first ``rows`` metric rows (written before the checkpoint we resume from)."""
        for name, header in (("metrics.jsonl", 0), ("metrics.csv", 1)):
            path = self.path / name
            lines = path.read_bytes().splitlines(keepends=True) if path.exists() else []
            write_atomically(path, b"".join(lines[:rows + header]))

    def append_metrics(self, row: dict[str, Any]) -> None:
        if self._jsonl is None:
            self._jsonl = open(self.path / "metrics.jsonl", "a", encoding="utf-8")
            self._csv = open(self.path / "metrics.csv", "a", encoding="utf-8", newline="")
        self._jsonl.write(json.dumps(row) + "\n")
        csv.writer(self._csv).writerow([row[column] for column in METRIC_COLUMNS])

    def flush(self) -> None:
        for stream in (self._jsonl, self._csv):
            if stream is not None:
                stream.flush()

    def close(self) -> None:
        for stream in (self._jsonl, self._csv):
            if stream is not None:
                stream.close()
        self._jsonl = self._csv = None

    def save_checkpoint(self, arrays: dict[str, np.ndarray]) -> None:
        self.flush()
        buffer = io.BytesIO()
        np.savez(buffer, **arrays)
        write_atomically(self.checkpoint_path, buffer.getvalue())

    def load_checkpoint(self) -> dict[str, np.ndarray]:
        with np.load(self.checkpoint_path, allow_pickle=False) as archive:
            return {name: archive[name] for name in archive.files}
