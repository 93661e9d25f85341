"""`lstmgraph evaluate` and `lstmgraph plot` on damaged run directories: each kind of damage to
the weights, checkpoint, metrics, summary or spec they read (a FIFO among them, which must not
be opened) exits 2 with a message that names the file, never a traceback, a hang, a BadZipFile
or a bare "Aborted!"."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from lstmgraph_cli.main import main

from conftest import SPECS


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("run") / "timing"
    result = CliRunner().invoke(main, ["train", str(SPECS / "gers2002_timing.yaml"), "--steps", "60",
                                       "--engine", "numpy", "--out", str(out), "--quiet"])
    assert result.exit_code == 0, result.output
    return out


def _weights_with(source: Path, target: Path, change) -> None:
    with np.load(source) as archive:
        arrays = {name: archive[name] for name in archive.files}
    np.savez(target, **change(arrays))


def _nan_in_first(arrays: dict) -> dict:
    stored = [key for key in arrays if key.startswith("weights/")] or [key for key in arrays if key != "__meta__"]
    name = stored[0]
    arrays[name] = arrays[name] * np.nan
    return arrays


def _damage(copy: Path, kind: str, outside: Path) -> tuple[Path, str]:
    """Damage ``copy`` (a run directory); returns the damaged file and words of the message."""
    weights, checkpoint = copy / "weights.npz", copy / "checkpoint.npz"
    raw = weights.read_bytes()
    if kind == "truncated weights":
        weights.write_bytes(raw[:len(raw) // 2])
        return weights, "not an .npz archive (truncated, corrupted"
    if kind == "garbage weights":
        weights.write_bytes(b"\x00garbage" * 40)
        return weights, "not an .npz archive"
    if kind == "member damaged":  # a valid archive whose array data was overwritten
        with np.load(weights) as archive:
            name = next(key for key in archive.files if key != "__meta__")
        at = raw.find(f"{name}.npy".encode()) + 200
        weights.write_bytes(raw[:at] + b"\xff" * 40 + raw[at + 40:])
        return weights, "corrupted"
    if kind == "truncated checkpoint":
        weights.unlink()
        checkpoint.write_bytes(checkpoint.read_bytes()[:300])
        return checkpoint, "not an .npz archive"
    if kind == "garbage checkpoint":
        weights.unlink()
        checkpoint.write_bytes(b"PK\x03\x04" + b"\x00" * 100)
        return checkpoint, "not an .npz archive"
    if kind == "wrong keys":
        np.savez(weights, something=np.zeros(3))
        return weights, "does not fit network 'gers2002_timing'"
    if kind == "checkpoint of other keys":
        weights.unlink()
        np.savez(checkpoint, **{"weights/x": np.zeros((1, 3))})
        return checkpoint, "does not fit network 'gers2002_timing'; missing:"
    if kind == "non-finite weights":
        _weights_with(weights, weights, _nan_in_first)
        return weights, "NaN or infinite values in"
    if kind == "non-finite checkpoint":
        weights.unlink()
        _weights_with(checkpoint, checkpoint, _nan_in_first)
        return checkpoint, "NaN or infinite values in"
    if kind == "weights linked outside":
        shutil.copy(weights, outside)
        weights.unlink()
        os.symlink(outside, weights)
        return weights, "is a symbolic link"
    if kind == "checkpoint linked outside":
        shutil.copy(checkpoint, outside)
        weights.unlink()
        checkpoint.unlink()
        os.symlink(outside, checkpoint)
        return checkpoint, "is a symbolic link"
    if kind == "spec linked outside":
        shutil.copy(copy / "spec.yaml", outside.with_suffix(".yaml"))
        (copy / "spec.yaml").unlink()
        os.symlink(outside.with_suffix(".yaml"), copy / "spec.yaml")
        return copy / "spec.yaml", "is a symbolic link"
    if kind in METRIC_ROWS:  # metrics.jsonl's first row replaced; the words name its line
        metrics = copy / "metrics.jsonl"
        rest = metrics.read_text().splitlines(keepends=True)[1:]
        metrics.write_text(METRIC_ROWS[kind] + "\n" + "".join(rest))
        return metrics, "line 1"
    if kind == "summary nested deep":
        (copy / "summary.json").write_text("[" * 100_000 + "]" * 100_000)
        return copy / "summary.json", "nested more than 32 deep"
    if kind.endswith(" a fifo"):  # opening one would block: refused before it is opened
        name = {"metrics": "metrics.jsonl", "summary": "summary.json", "spec": "spec.yaml"}[kind.split()[0]]
        (copy / name).unlink()
        os.mkfifo(copy / name)
        return copy / name, "is not a regular file"
    raise AssertionError(kind)


_ROW = '"step": 3, "loss": 1.0, "loss_per_step": 0.5, "learning_rate": 0.5'
METRIC_ROWS = {"metrics sequence a string": '{"sequence": "abc", ' + _ROW + "}",
               "metrics loss a string": '{"sequence": 1, ' + _ROW.replace('"loss": 1.0', '"loss": "x"') + "}",
               "metrics loss a list": '{"sequence": 1, ' + _ROW.replace('"loss": 1.0', '"loss": [1, 2]') + "}",
               "metrics of 5000 digits": "7" * 5000,
               "metrics nested deep": "[" * 100_000 + "]" * 100_000}

KINDS = ["truncated weights", "garbage weights", "member damaged", "truncated checkpoint", "garbage checkpoint",
         "wrong keys", "checkpoint of other keys", "non-finite weights", "non-finite checkpoint",
         "weights linked outside", "checkpoint linked outside", "spec linked outside", *METRIC_ROWS,
         "summary nested deep", "metrics a fifo", "summary a fifo", "spec a fifo"]


@pytest.mark.parametrize("command", [["evaluate", "--sequences", "2"], ["plot", "--steps", "5"]],
                         ids=["evaluate", "plot"])
@pytest.mark.parametrize("kind", KINDS)
def test_damage_exits_2_naming_the_file(run, tmp_path, command, kind):
    copy = tmp_path / "run"
    shutil.copytree(run, copy)
    damaged, words = _damage(copy, kind, tmp_path / "elsewhere.npz")
    args = [command[0], str(copy), *command[1:]] + (["-o", str(tmp_path / "p.png")] if command[0] == "plot" else [])
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exc_info
    assert result.output.startswith(f"error: {damaged}: "), result.output
    assert words in result.output and "Aborted!" not in result.output


def test_the_undamaged_run_reads(run, tmp_path):
    for args in (["evaluate", str(run), "--sequences", "2"], ["plot", str(run), "--steps", "5", "-o",
                                                             str(tmp_path / "p.png")]):
        result = CliRunner().invoke(main, args)
        assert result.exit_code == 0, result.output
