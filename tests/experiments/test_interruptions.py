"""`lstmgraph reproduce` killed with SIGKILL: its workers exit, a rerun completes from the
trials' checkpoints with the results of an uninterrupted run; a second run on a folder in use
is refused.

The run is stopped (SIGSTOP) as soon as its first checkpoint is written: only the run's main
process writes the folder, so from then on nothing ends however fast the machine is."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np

from lstmgraph.arrays import read_npz
from lstmgraph.experiments import find_experiment
from lstmgraph.experiments.schedule import run_experiment

from process_helpers import alive, children, kill, wait_until

LSTMGRAPH = str(Path(sys.executable).with_name("lstmgraph"))
NAME, TRIALS, BUDGET = "hochreiter1997-adding-t100", 2, 300_000


def _command(out: Path) -> list[str]:
    return [LSTMGRAPH, "reproduce", NAME, "--trials", str(TRIALS), "--jobs", "1", "--max-steps", str(BUDGET),
            "--checkpoint-seconds", "1", "--out", str(out), "--json"]


def _rows(out: Path) -> dict[int, dict]:
    rows = {}
    for line in (out / "trials.jsonl").read_text().splitlines():
        row = json.loads(line)
        row.pop("seconds")
        rows[row["seed"]] = row
    return rows


def test_a_killed_run_leaves_no_worker_and_resumes_from_its_checkpoints(tmp_path):
    straight = tmp_path / "straight"
    run_experiment(find_experiment(NAME), TRIALS, 1, straight, budget_steps=BUDGET)

    out = tmp_path / "killed"
    first = subprocess.Popen(_command(out), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        wait_until(lambda: any((out / "trials").glob("*/checkpoint.npz")) or first.poll() is not None,
                   600, "a trial's first checkpoint")
        first.send_signal(signal.SIGSTOP)
        assert first.poll() is None, first.stderr.read().decode()
        assert not (out / "trials.jsonl").exists() or len(_rows(out)) < TRIALS, "the run ended before its checkpoint"
        workers = children(first.pid)
        assert workers  # the worker processes (and multiprocessing's resource tracker)

        second = subprocess.run(_command(out), capture_output=True, text=True, timeout=600)
        assert second.returncode == 2
        assert f"is in use by lstmgraph reproduce, process {first.pid}" in second.stderr
        assert "Traceback" not in second.stderr

        first.send_signal(signal.SIGKILL)  # stopped or not
        first.wait(60)
        wait_until(lambda: not any(alive(pid) for pid in workers), 10, "the killed run's workers to exit")
    finally:
        kill(first.pid, signal.SIGKILL)
        first.stderr.close()

    again = subprocess.run(_command(out), capture_output=True, text=True, timeout=900)
    assert again.returncode == 0, again.stderr
    assert _rows(out) == _rows(straight)
    for seed in range(TRIALS):
        resumed, expected = (read_npz(folder / "trials" / str(seed) / "weights.npz") for folder in (out, straight))
        for name, values in expected.items():
            if name != "__meta__":
                np.testing.assert_array_equal(resumed[name], values)
        assert not (out / "trials" / str(seed) / "checkpoint.npz").exists()
