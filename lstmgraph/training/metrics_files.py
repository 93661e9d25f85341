"""A training run's metrics files, ``metrics.jsonl`` and ``metrics.csv`` (one row per sequence):
their columns, and their rows read back and checked, for a resume (cut back to its checkpoint's
row count) and for a reader beside a trainer that may still be writing.

The files may have been damaged or made hostile: no link is followed, a line is at most
`MAX_ROW_BYTES`, a JSON row nested deeper than its one list is refused before it is parsed, and
each kind of damage is a `MetricsFileError` naming the file and the line.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from .. import errors
from ..files import NotAFile, open_no_follow
from ..limits import MAX_ROW_BYTES

METRIC_COLUMNS = ("sequence", "step", "loss", "loss_per_step", "learning_rate")
#: metrics.csv's first line.
METRICS_HEADER = (",".join(METRIC_COLUMNS) + "\n").encode()


class MetricsFileError(Exception):
    """A metrics file that differs from what a run writes; the message names the file and the line."""


def read_metric_rows(path: Path, trials: int | None = None) -> list[dict[str, Any]]:
    """Every row of the metrics file ``path`` (a run's metrics.jsonl), checked as a resume
    checks them (`MetricsFileError` naming the file and line), for a reader beside a trainer
    that may still be writing: a last line cut short (no line end) is left out."""
    return checked_rows(Path(path), None, trials, running=True)[0]


def checked_rows(path: Path, rows: int | None, trials: int | None,
                 running: bool = False) -> tuple[list[dict], list[bytes]]:
    """The first ``rows`` rows of metrics.jsonl (all with None), checked: each a JSON object of
    the metric columns (``loss_trials`` too where ``trials`` > 1), ``sequence`` its line number,
    ``step`` never falling. ``running``: a trainer may be writing the file, so a last line with
    no line end is left out rather than refused. Returns the rows and their lines."""
    parsed, lines, last_step = [], [], 0
    for number, line in _lines(path, rows):
        where = f"{path}: line {number}"
        if not line.endswith(b"\n"):
            if running:
                break  # the only line without an end is the last
            raise MetricsFileError(f"{where} is cut short (no line end); expected a whole metrics row")
        # A metrics row is an object holding at most one list (loss_trials) and no strings: more
        # brackets are refused before parsing, which bounds the nesting json would recurse into.
        if line.count(b"[") + line.count(b"{") > 2:
            raise MetricsFileError(f"{where} is not a metrics row (nested deeper than one list)")
        try:
            row = json.loads(line)
        except (ValueError, RecursionError):  # UnicodeDecodeError, JSONDecodeError, too many digits
            row = None
        if not isinstance(row, dict) or not _numbers(row.get("loss_per_step")):
            raise MetricsFileError(f"{where} is not a metrics row (expected a JSON object of "
                                   f"{', '.join(METRIC_COLUMNS)})")
        expected = set(METRIC_COLUMNS) | ({"loss_trials"} if trials is None or trials > 1 else set())
        unknown = sorted(set(row) - expected)
        if unknown:
            raise MetricsFileError(f"{where}: unknown key {shown(unknown[0])}; expected "
                                   f"{', '.join(sorted(expected))}")
        missing = [key for key in METRIC_COLUMNS if key not in row]
        if missing:
            raise MetricsFileError(f"{where}: '{missing[0]}' is missing; expected {', '.join(METRIC_COLUMNS)}")
        if type(row["sequence"]) is not int or row["sequence"] != number:
            raise MetricsFileError(f"{where}: 'sequence' is {shown(row['sequence'])}, expected {number} "
                                   "(a repeated, missing or foreign row)")
        if type(row["step"]) is not int or row["step"] < last_step:
            raise MetricsFileError(f"{where}: 'step' is {shown(row['step'])}; expected an integer "
                                   f">= {last_step}, the step of the row before")
        last_step = row["step"]
        for key in ("loss", "learning_rate"):
            if not _numbers(row[key]):
                raise MetricsFileError(f"{where}: '{key}' is {shown(row[key])}; expected a number")
        if "loss_trials" in row:
            values = row["loss_trials"]
            if (not isinstance(values, list) or not all(map(_numbers, values))
                    or (trials is not None and len(values) != trials)):
                count = trials if trials is not None else "the trials'"
                raise MetricsFileError(f"{where}: 'loss_trials' is not a list of {count} numbers")
        elif trials is not None and trials > 1:
            raise MetricsFileError(f"{where}: 'loss_trials' is missing; expected one loss per trial ({trials})")
        parsed.append(row)
        lines.append(line)
    if rows is not None and len(lines) < rows:
        raise MetricsFileError(f"{path}: holds {len(lines)} rows, but the checkpoint was written after {rows}")
    return parsed, lines


def csv_kept(path: Path, rows: int) -> bytes:
    """metrics.csv's header and first ``rows`` rows, checked: the header, and each row five
    numbers whose first is its row number."""
    header = METRICS_HEADER
    kept = []
    for number, line in _lines(path, rows + 1):
        if number == 1:
            if line != header:
                raise MetricsFileError(f"{path}: line 1 is not the header {header.decode().strip()!r}")
        else:
            where = f"{path}: line {number}"
            cells = line.rstrip(b"\r\n").split(b",")
            if not line.endswith(b"\n") or len(cells) != len(METRIC_COLUMNS):
                raise MetricsFileError(f"{where} is not a metrics row ({len(METRIC_COLUMNS)} numbers: "
                                       f"{', '.join(METRIC_COLUMNS)})")
            try:
                values = [float(cell) for cell in cells]
            except ValueError:
                raise MetricsFileError(f"{where} is not a metrics row (a value is not a number)") from None
            if values[0] != number - 1:
                raise MetricsFileError(f"{where}: sequence {cells[0].decode(errors='replace')[:20]}, expected "
                                       f"{number - 1} (a repeated, missing or foreign row)")
        kept.append(line)
    if len(kept) < rows + 1:
        raise MetricsFileError(f"{path}: holds {max(len(kept) - 1, 0)} rows, but the checkpoint was "
                               f"written after {rows}")
    return b"".join(kept)


def shown(value: Any) -> str:
    """A value read back, for a message: its repr, at most 80 characters (`errors.shown`)."""
    return errors.shown(value, 80)


def _numbers(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _lines(path: Path, rows: int | None):
    """(number, bytes) of the first ``rows`` lines of ``path`` (all with None), each at most
    `MAX_ROW_BYTES`; the file is a regular file, read without following a link."""
    try:
        handle = open_no_follow(path, os.O_RDONLY)
    except FileNotFoundError:
        handle = None
    except NotAFile as error:
        raise MetricsFileError(f"{path}: {error.strerror}") from None
    except OSError as error:
        raise MetricsFileError(f"{path}: cannot read it ({error.strerror or error})") from None
    if handle is None:
        return
    with os.fdopen(handle, "rb") as stream:
        number = 0
        while rows is None or number < rows:
            try:
                line = stream.readline(MAX_ROW_BYTES + 1)
            except OSError as error:
                raise MetricsFileError(f"{path}: cannot read it ({error.strerror or error})") from None
            if not line:
                return
            number += 1
            if len(line) > MAX_ROW_BYTES:
                raise MetricsFileError(f"{path}: line {number} is longer than {MAX_ROW_BYTES:,} bytes; "
                                       "expected one metrics row")
            yield number, line
