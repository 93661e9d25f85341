"""`reproduce` on a real Dask cluster on 127.0.0.1 (a scheduler and two worker processes started
here): the same trials as a local run, and a worker killed in the middle of a trial costs
nothing but time."""

from __future__ import annotations

import csv
import signal
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from lstmgraph.arrays import read_npz
from lstmgraph.experiments import find_experiment
from lstmgraph.experiments.schedule import run_experiment

from process_helpers import alive, kill, wait_until

distributed = pytest.importorskip("distributed")

DASK = str(Path(sys.executable).with_name("dask"))
NAME, TRIALS, BUDGET = "hochreiter1997-adding-t100", 2, 60_000


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """A scheduler and two single-thread workers without nannies (a killed worker stays dead)."""
    folder = tmp_path_factory.mktemp("cluster")
    address_file = folder / "scheduler.json"
    logs = open(folder / "log.txt", "w")
    common = dict(stdout=logs, stderr=subprocess.STDOUT, cwd=folder)
    processes = [subprocess.Popen([DASK, "scheduler", "--host", "127.0.0.1", "--port", "0",
                                   "--dashboard-address", ":0", "--scheduler-file", str(address_file)], **common)]
    try:
        wait_until(address_file.exists, 120, "the scheduler's address file")
        processes += [subprocess.Popen([DASK, "worker", "--scheduler-file", str(address_file), "--nthreads", "1",
                                        "--no-nanny", "--host", "127.0.0.1", "--memory-limit", "0"], **common)
                      for _ in range(2)]
        client = distributed.Client(scheduler_file=str(address_file), timeout="120s")
        client.wait_for_workers(2, timeout=300)
        yield client, processes[1:]
        client.close()
    finally:
        for process in processes:
            kill(process.pid, signal.SIGKILL)
            process.wait(30)
        logs.close()


@pytest.fixture(scope="module")
def straight(tmp_path_factory):
    out = tmp_path_factory.mktemp("straight")
    run_experiment(find_experiment(NAME), TRIALS, 1, out, budget_steps=BUDGET)
    return out


def _table(out: Path) -> list[dict]:
    with (out / "trials.csv").open() as stream:
        return [{key: value for key, value in row.items() if key != "seconds"} for row in csv.DictReader(stream)]


def _same_weights(out: Path, expected: Path) -> None:
    for seed in range(TRIALS):
        ours, theirs = (read_npz(folder / "trials" / str(seed) / "weights.npz") for folder in (out, expected))
        assert set(ours) == set(theirs)
        for name, values in theirs.items():
            if name != "__meta__":
                np.testing.assert_array_equal(ours[name], values)


def test_a_run_on_the_cluster_gives_the_local_run_s_trials(cluster, straight, tmp_path):
    client, _ = cluster
    results = run_experiment(find_experiment(NAME), TRIALS, 1, tmp_path, budget_steps=BUDGET, cluster=client,
                             checkpoint_seconds=1)
    assert results["summary"]["trials"] == TRIALS
    assert _table(tmp_path) == _table(straight)
    _same_weights(tmp_path, straight)


def test_a_worker_killed_in_the_middle_of_a_trial_costs_nothing_but_time(cluster, straight, tmp_path):
    client, workers = cluster
    outcome: dict = {}

    def run() -> None:
        try:
            outcome["results"] = run_experiment(find_experiment(NAME), TRIALS, 1, tmp_path, budget_steps=BUDGET,
                                                cluster=client, checkpoint_seconds=1)
        except BaseException as error:  # reported by the main thread
            outcome["error"] = error

    runner = threading.Thread(target=run)
    runner.start()
    wait_until(lambda: any((tmp_path / "trials").glob("*/checkpoint.npz")) or not runner.is_alive(), 600,
               "a trial's first checkpoint")
    victim = workers[0]
    kill(victim.pid, signal.SIGKILL)  # both workers are running pieces: one of them is lost
    runner.join(900)
    assert not runner.is_alive() and "error" not in outcome, outcome.get("error")
    assert not alive(victim.pid)
    assert _table(tmp_path) == _table(straight)
    _same_weights(tmp_path, straight)


def test_a_scheduler_s_address_connects_and_runs_as_its_client_does(cluster):
    """The address a user gives (`--cluster tcp://HOST:PORT`) connects through `workers._client`'s
    thread, as a client made by hand does."""
    from lstmgraph.experiments.workers import ClusterWorkers

    client, _ = cluster
    workers = ClusterWorkers(client.scheduler.address)
    try:
        assert workers.slots >= 1 and workers.own_client  # (an earlier test may have killed a worker)
        assert workers.present() == workers.slots  # (single-thread workers)
        assert workers.submit(abs, -3).result(timeout=60) == 3
    finally:
        workers.stop()
