"""`run_experiment`: worker processes, the results folder's files, resuming, stopping."""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest
import yaml
from click.testing import CliRunner

from cli.main import main
from lstmgraph.arrays import read_npz
from lstmgraph.engine import initial_weights
from lstmgraph.experiments import find_experiment
from lstmgraph.experiments.folder import ResultsConflict
from lstmgraph.experiments.schedule import run_experiment
from lstmgraph.layouts import RESULTS_FOLDER
from lstmgraph.training.trained import load_run


def test_two_short_trials_end_to_end_then_resume(tmp_path):
    experiment = find_experiment("hochreiter1997-adding-t100")
    seen = []
    results = run_experiment(experiment, 2, 2, tmp_path, budget_steps=2000, trial_done=seen.append)
    assert sorted(row["seed"] for row in seen) == [0, 1]
    assert results["summary"]["trials"] == 2
    stored = json.loads((tmp_path / "results.json").read_text())
    assert stored["trials"] == results["trials"]
    assert {path.name for path in tmp_path.iterdir()} == {*RESULTS_FOLDER.files, "trials"}  # (docs/results.md lists them)
    assert {path.name for path in (tmp_path / "trials" / "0").iterdir()} >= {"spec.yaml", "weights.npz"}
    with (tmp_path / "trials.csv").open() as stream:
        assert [int(row["seed"]) for row in csv.DictReader(stream)] == [0, 1]
    # a second run finds both trials done and runs none again
    again = run_experiment(experiment, 2, 2, tmp_path, budget_steps=2000)
    assert again["trials"] == results["trials"]
    # one more trial: only seed 2 runs
    more = run_experiment(experiment, 3, 1, tmp_path, budget_steps=2000)
    assert [row["seed"] for row in more["trials"]] == [0, 1, 2]
    assert more["trials"][:2] == results["trials"]
    with pytest.raises(ResultsConflict):
        run_experiment(experiment, 2, 1, tmp_path, budget_steps=999)


def test_stream_trials_in_lanes_give_the_rows_and_networks_of_trials_alone(tmp_path):
    """Five trials, three to a piece at most, short pieces (so that trials leave lanes and
    others take them): the same rows and weights as one trial per piece."""
    experiment = find_experiment("gers2002-gts-peephole")
    alone = run_experiment(experiment, 5, 1, tmp_path / "alone", budget_steps=3000)
    together = run_experiment(experiment, 5, 1, tmp_path / "lanes", budget_steps=3000, checkpoint_seconds=1,
                              lanes=3)
    strip = [{key: value for key, value in row.items() if key != "seconds"} for row in alone["trials"]]
    assert [{key: value for key, value in row.items() if key != "seconds"} for row in together["trials"]] == strip
    for seed in range(5):
        expected = read_npz(tmp_path / "alone" / "trials" / str(seed) / "weights.npz")
        got = read_npz(tmp_path / "lanes" / "trials" / str(seed) / "weights.npz")
        assert expected.keys() == got.keys()
        for key, values in expected.items():
            np.testing.assert_array_equal(got[key], values)


def test_a_trial_cut_by_a_kill_runs_again(tmp_path):
    experiment = find_experiment("hochreiter1997-adding-t100")
    first = run_experiment(experiment, 1, 1, tmp_path, budget_steps=1000)
    lines = (tmp_path / "trials.jsonl").read_text()
    (tmp_path / "trials.jsonl").write_text(lines[:len(lines) // 2])  # half a line, as a kill leaves it
    again = run_experiment(experiment, 1, 1, tmp_path, budget_steps=1000)
    row = dict(again["trials"][0])
    expected = dict(first["trials"][0])
    row.pop("seconds"), expected.pop("seconds")
    assert row == expected


def test_each_trial_leaves_its_trained_network_as_a_run_directory_to_plot(tmp_path):
    experiment = find_experiment("gers2002-pfg-cos-f10-peephole")
    results = run_experiment(experiment, 1, 1, tmp_path, budget_steps=500)
    folder = tmp_path / "trials" / "0"
    stored = load_run(folder)
    plan = experiment.plan()
    trial = experiment.trial(plan, 0, budget_steps=500)
    trial.run()
    trained = trial.engine.weights
    assert set(trained) == set(stored.weights)
    for name, values in trained.items():
        np.testing.assert_array_equal(stored.weights[name], values)
    assert not np.array_equal(trained["memory.cell_output->target"],
                              initial_weights(plan, [0])["memory.cell_output->target"])
    assert stored.steps_trained == results["trials"][0]["steps"] >= 500
    training = yaml.safe_load((folder / "spec.yaml").read_text())["training"]
    assert (training["learning_rate"], training["momentum"]) == (1e-5, 0.99)
    assert training["task"] == {"name": "periodic_function", "shape": "cosine", "period": 10, "length": 10}
    result = CliRunner().invoke(main, ["plot", str(folder), "--steps", "30", "-o", str(tmp_path / "pfg.png")])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "pfg.png").read_bytes().startswith(b"\x89PNG")


def test_a_damaged_or_unwritable_results_folder_is_named(tmp_path):
    from lstmgraph.experiments.folder_settings import settings
    from lstmgraph.files import BUNDLED_SPECS
    experiment = find_experiment("gers2000-cerg-forget")
    (tmp_path / "plain").write_text("a file")
    with pytest.raises(ResultsConflict, match=f"{tmp_path}/plain/out: {tmp_path}/plain is a file, not a folder"):
        run_experiment(experiment, 1, 1, tmp_path / "plain" / "out", 100)
    out = tmp_path / "out"
    out.mkdir()
    (out / "experiment.json").write_text("{cut")
    with pytest.raises(ResultsConflict, match="experiment.json: not JSON"):
        run_experiment(experiment, 1, 1, out, 100)
    (out / "experiment.json").write_text(json.dumps(settings(experiment, 100, BUNDLED_SPECS)))
    (out / "trials.jsonl").write_text('[1, 2]\n')
    with pytest.raises(ResultsConflict, match="trials.jsonl, line 1: expected a trial's row"):
        run_experiment(experiment, 1, 1, out, 100)


def test_a_folder_of_another_arithmetic_takes_no_more_trials(tmp_path):
    """Trials of a row run by an earlier version whose arithmetic differed (no ``arithmetic``,
    or another number) are not mixed with trials run now."""
    from lstmgraph.experiments.folder_settings import TRIAL_ARITHMETIC
    from lstmgraph.experiments.folder_settings import settings
    from lstmgraph.files import BUNDLED_SPECS
    experiment = find_experiment("gers2000-cerg-forget")
    stored = settings(experiment, 100, BUNDLED_SPECS)
    assert stored["arithmetic"] == TRIAL_ARITHMETIC
    for earlier in ({key: value for key, value in stored.items() if key != "arithmetic"},
                    {**stored, "arithmetic": TRIAL_ARITHMETIC - 1}):
        (tmp_path / "experiment.json").write_text(json.dumps(earlier))
        with pytest.raises(ResultsConflict, match="run by an earlier version of lstmgraph whose arithmetic differs"):
            run_experiment(experiment, 1, 1, tmp_path, 100)
    assert not (tmp_path / "trials.jsonl").exists()


def test_a_checkpoint_that_is_no_checkpoint_of_the_trial_is_named_not_a_traceback(tmp_path):
    from lstmgraph.arrays import npz_bytes
    from lstmgraph.experiments.folder_settings import settings
    from lstmgraph.files import BUNDLED_SPECS
    experiment = find_experiment("hochreiter1997-adding-t100")
    (tmp_path / "experiment.json").write_text(json.dumps(settings(experiment, 1000, BUNDLED_SPECS)))
    (tmp_path / "trials" / "0").mkdir(parents=True)
    (tmp_path / "trials" / "0" / "checkpoint.npz").write_bytes(npz_bytes({"weights": np.zeros(3)}))
    with pytest.raises(ResultsConflict, match=r"trials/0/checkpoint.npz: no trial/seed: not a trial.s checkpoint.*delete it"):
        run_experiment(experiment, 1, 1, tmp_path, budget_steps=1000)


def test_a_stopped_run_summarises_the_trials_that_finished(tmp_path):
    """A stop signal after the first trial has finished: results.json and trials.csv hold that
    trial (the table's "1 of 3" row), the exception carries them, and the same call resumes."""
    import signal

    from lstmgraph.experiments.stops import Stopped

    experiment = find_experiment("hochreiter1997-adding-t100")

    def stop_after_the_first(row):
        raise Stopped(signal.SIGTERM)

    with pytest.raises(Stopped) as stopped:
        run_experiment(experiment, 3, 1, tmp_path, budget_steps=2000, trial_done=stop_after_the_first)
    first = stopped.value.results
    assert first is not None and first["summary"]["trials"] == len(first["trials"]) == 1
    assert json.loads((tmp_path / "results.json").read_text()) == first
    with (tmp_path / "trials.csv").open() as stream:
        assert [row["seed"] for row in csv.DictReader(stream)] == [str(first["trials"][0]["seed"])]
    resumed = run_experiment(experiment, 3, 1, tmp_path, budget_steps=2000)
    assert [row["seed"] for row in resumed["trials"]] == [0, 1, 2]
    assert first["trials"][0] in resumed["trials"]


def test_a_stop_signal_during_the_wait_for_pieces_is_raised_after_the_wait_not_inside_it(tmp_path, monkeypatch):
    """A SIGTERM raised inside concurrent.futures' `wait` once left a future's lock taken: the run
    printed how to resume, then its exit hung for ever joining the pool's thread. The signal is
    now held while the wait runs, and raised once it has returned."""
    import os
    import signal

    from lstmgraph.experiments import schedule
    from lstmgraph.experiments.stops import Stopped

    waits, real_wait = [], schedule.wait

    def signalled_wait(futures, **options):
        if not waits:
            os.kill(os.getpid(), signal.SIGTERM)  # delivered at once, were it not held
        result = real_wait(futures, **options)
        waits.append("returned")
        return result

    monkeypatch.setattr(schedule, "wait", signalled_wait)
    with pytest.raises(Stopped) as stopped:
        run_experiment(find_experiment("hochreiter1997-adding-t100"), 2, 1, tmp_path, budget_steps=20_000_000)
    assert stopped.value.signal_number == signal.SIGTERM and waits == ["returned"]


def test_a_checkpoint_the_folder_takes_but_its_trial_refuses_is_named_not_a_traceback(tmp_path):
    """Seed, kind and the folder's digest right, but counters that are not the protocol's: the
    worker's restore refuses it (`trial.CheckpointMismatch`), and the run names the file."""
    from lstmgraph.arrays import npz_bytes
    from lstmgraph.experiments.folder import ResultsFolder
    from lstmgraph.experiments.folder_settings import settings_digest
    from lstmgraph.experiments.folder_settings import settings
    from lstmgraph.files import BUNDLED_SPECS
    experiment = find_experiment("hochreiter1997-adding-t100")
    stored = settings(experiment, 1000, BUNDLED_SPECS)
    (tmp_path / "experiment.json").write_text(json.dumps(stored))
    content = npz_bytes({"trial/seed": np.array(0), "trial/kind": np.array("sequences"),
                         "trial/counters": np.zeros(1, dtype=np.int64), "trial/seconds": np.array(0.0)})
    ResultsFolder(tmp_path).write_checkpoint(0, content, settings_digest(stored))
    with pytest.raises(ResultsConflict, match=r"trials/0/checkpoint.npz: not a checkpoint of this trial "
                                              r"\(CheckpointMismatch: .*\); delete it"):
        run_experiment(experiment, 1, 1, tmp_path, budget_steps=1000)


def test_experiments_run_together_give_each_folder_the_rows_of_a_run_alone(tmp_path):
    """`run_experiments`: two rows on one set of workers, each folder holding the rows its
    trials give run alone (in this process), each finished trial reported with its target's
    index, and each folder's lock let go."""
    from lstmgraph.experiments.folder import ResultsFolder
    from lstmgraph.experiments.schedule import run_experiments

    rows = [find_experiment("gers2002-gts-peephole"), find_experiment("hochreiter1997-adding-t100")]
    seen = []
    together = run_experiments([(rows[0], tmp_path / "a"), (rows[1], tmp_path / "b")], 2, 2, budget_steps=2000,
                               trial_done=lambda index, row: seen.append((index, row["seed"])))
    assert sorted(seen) == [(0, 0), (0, 1), (1, 0), (1, 1)]
    for experiment, name, results in zip(rows, "ab", together):
        plan = experiment.plan()
        alone = [experiment.trial(plan, seed, 2000).run() for seed in (0, 1)]
        strip = lambda found: [{k: v for k, v in row.items() if k not in ("seconds", "class")} for row in found]
        assert strip(results["trials"]) == strip(alone)
        assert json.loads((tmp_path / name / "results.json").read_text()) == results
        assert ResultsFolder(tmp_path / name).holder() is None  # each lock let go


def test_a_worker_left_free_by_one_experiment_takes_the_next_experiment_s_trials(tmp_path):
    """One trial in each of three rows and two workers: two trials start at once (a sweep's
    settings no longer wait for the one before to end), a piece of one row each on the CPU,
    and only the folders whose trials started are locked. On the GPU one piece takes every
    row's trial (a sweep's settings in one population)."""
    from concurrent.futures import Future

    from lstmgraph.experiments.folder_run import FolderRun
    from lstmgraph.experiments.schedule import _Schedule
    from lstmgraph.experiments.workers import Workers
    from lstmgraph.files import BUNDLED_SPECS

    class Recorded(Workers):
        def __init__(self, slots):
            self.slots, self.pieces = slots, []

        def submit(self, function, argument):
            self.pieces.append(argument)
            return Future()

    experiment = find_experiment("gers2002-gts-peephole")
    for device, slots, pieces, opened in (("cpu", 2, [((0, 0),), ((0, 0),)], [True, True, False]),
                                          ("cuda", 1, [((0, 0), (1, 0), (2, 0))], [True, True, True])):
        runs = [FolderRun(experiment, tmp_path / device / str(index), 1, 2000, BUNDLED_SPECS, device, lambda row: None)
                for index in range(3)]
        schedule, workers = _Schedule(runs, 60.0, 4, device), Recorded(slots)
        try:
            schedule.fill(workers)
            assert [piece.trials for piece in workers.pieces] == pieces
            assert [len(piece.runs) for piece in workers.pieces] == [len({i for i, _ in p}) for p in pieces]
            assert [run.opened for run in runs] == opened
            assert schedule.ready == ([] if device == "cuda" else [(2, 0)])
        finally:
            for run in runs:
                run.release()


def test_workers_sharing_a_kernel_cache_wait_for_the_piece_that_compiles_their_kernel(tmp_path):
    """Local workers share the kernel cache: the first piece of a kind (its program, kernel
    and protocol; one trial or lanes) runs alone, and those of its kind start once it has
    ended, loading what it compiled; a sweep's settings over rates are of one kind. A lost
    piece compiled nothing for sure: the next of its kind runs alone again. A cluster's
    workers share no cache and start everything at once."""
    from concurrent.futures import Future
    from dataclasses import replace

    from lstmgraph.experiments.folder_run import FolderRun
    from lstmgraph.experiments.schedule import _Schedule
    from lstmgraph.experiments.workers import Workers
    from lstmgraph.files import BUNDLED_SPECS

    class Recorded(Workers):
        def __init__(self, slots, shares_cache):
            self.slots, self.shares_cache, self.futures = slots, shares_cache, []

        def submit(self, function, argument):
            self.futures.append((Future(), argument))
            return self.futures[-1][0]

        def pieces(self):
            """Each piece's trials as (run, seed)."""
            specs = [run.wanted["spec_data"] for run in runs]
            return [[(specs.index(piece.runs[index].spec_data), seed) for index, seed in piece.trials]
                    for _, piece in self.futures]

    def ended(schedule, workers, at, lost=False):
        future = workers.futures[at][0]
        schedule.running.pop(future)
        if lost:
            schedule.compiling.pop(future)
            schedule.ready = sorted(schedule.ready + [(0, 0)])
        else:
            schedule.compiled_by(future)

    rows = [find_experiment("gers2002-gts-peephole"), find_experiment("gers2002-gts-no-peephole")]
    rows.insert(1, replace(rows[0], learning_rate=0.25))
    runs = [FolderRun(row, tmp_path / str(index), 2, 2000, BUNDLED_SPECS, "cpu", lambda row: None)
            for index, row in enumerate(rows)]
    assert runs[0].compiles == runs[1].compiles != runs[2].compiles
    schedule, workers = _Schedule(runs, 60.0, 1, "cpu"), Recorded(4, shares_cache=True)
    try:
        schedule.fill(workers)
        assert workers.pieces() == [[(0, 0)]]  # seed 0 compiles, the others wait in order
        ended(schedule, workers, 0, lost=True)
        schedule.fill(workers)
        assert workers.pieces()[1:] == [[(0, 0)]]  # alone again
        ended(schedule, workers, 1)
        schedule.fill(workers)
        # the rest of its kind (run 1 differs in its rate only); the next program compiles alone
        assert workers.pieces()[2:] == [[(0, 1)], [(1, 0)], [(1, 1)], [(2, 0)]]
        assert schedule.ready == [(2, 1)]
        ended(schedule, workers, 2)
        schedule.fill(workers)
        assert len(workers.pieces()) == 6 and schedule.ready == [(2, 1)]
        ended(schedule, workers, 5)
        schedule.fill(workers)
        assert workers.pieces()[6:] == [[(2, 1)]]
    finally:
        for run in runs:
            run.release()

    runs = [FolderRun(rows[0], tmp_path / "cluster", 3, 2000, BUNDLED_SPECS, "cpu", lambda row: None)]
    schedule, workers = _Schedule(runs, 60.0, 1, "cpu"), Recorded(3, shares_cache=False)
    try:
        schedule.fill(workers)
        assert workers.pieces() == [[(0, 0)], [(0, 1)], [(0, 2)]]
    finally:
        runs[0].release()


def test_until_settled_starts_no_trial_once_the_verdict_is_settled(tmp_path, monkeypatch):
    """`--until-settled`: once the verdict of the finished trials is settled (here: made so
    from the second on), no more trials start; the folder holds the two and is let go; the
    same run finds it settled and runs none; without the flag the rest run."""
    from lstmgraph.experiments import folder_run
    from lstmgraph.experiments.folder import ResultsFolder

    monkeypatch.setattr(folder_run, "settled_outcome",
                        lambda results, left, published, paper: "differs" if len(results["trials"]) >= 2 else None)
    experiment = find_experiment("hochreiter1997-adding-t100")
    results = run_experiment(experiment, 3, 1, tmp_path, budget_steps=2000, until_settled=True)
    assert [row["seed"] for row in results["trials"]] == [0, 1]
    assert json.loads((tmp_path / "results.json").read_text())["summary"]["trials"] == 2
    assert ResultsFolder(tmp_path).holder() is None
    seen = []
    again = run_experiment(experiment, 3, 1, tmp_path, budget_steps=2000, until_settled=True, trial_done=seen.append)
    assert [row["seed"] for row in seen] == [0, 1]  # the stored trials reported, none run
    assert again["trials"] == results["trials"] and len((tmp_path / "trials.jsonl").read_text().splitlines()) == 2
    rest = run_experiment(experiment, 3, 1, tmp_path, budget_steps=2000)
    assert [row["seed"] for row in rest["trials"]] == [0, 1, 2]


def test_until_settled_runs_on_while_the_verdict_is_open(tmp_path):
    """Capped trials never settle "differs" (`verdict.settled_outcome`), so here every trial runs."""
    experiment = find_experiment("hochreiter1997-adding-t100")
    results = run_experiment(experiment, 2, 1, tmp_path, budget_steps=2000, until_settled=True)
    assert [row["seed"] for row in results["trials"]] == [0, 1]


def test_a_stop_while_the_results_are_written_waits_for_them(tmp_path, monkeypatch):
    """A stop signal inside the figure's first import of matplotlib left the import half done,
    and the stop's own summary then failed on it (a traceback, no results.json). The signal now
    waits until the results are written, and the run stops after."""
    import os
    import signal

    from lstmgraph.experiments import folder_run
    from lstmgraph.experiments.stops import Stopped

    real, state = folder_run.results_figure, {"calls": 0, "imported": False}

    def figure_importing_matplotlib(results):
        state["calls"] += 1
        if state["calls"] == 1:
            os.kill(os.getpid(), signal.SIGTERM)  # a stop arrives in the middle of the import
            state["imported"] = True
        if not state["imported"]:  # what a half-done import leaves for the next call
            raise AttributeError("module 'matplotlib' has no attribute 'get_data_path'")
        return real(results)

    monkeypatch.setattr(folder_run, "results_figure", figure_importing_matplotlib)
    experiment = find_experiment("gers2002-gts-peephole")
    with pytest.raises(Stopped) as stopped:
        run_experiment(experiment, 1, 1, tmp_path, budget_steps=2000)
    assert stopped.value.signal_number == signal.SIGTERM
    assert json.loads((tmp_path / "results.json").read_text())["summary"]["trials"] == 1


def test_a_trial_s_program_over_a_limit_is_refused_before_the_folder_is_written(tmp_path):
    """Before: exact RTRL's trace limit was met when a trial was built, after experiment.json
    was written, so the folder then refused a run of other settings as 'other settings'."""
    from lstmgraph.experiments.sweep import subject_of
    from lstmgraph.limits import LimitError

    from conftest import dense_spec

    experiment = subject_of(str(dense_spec(tmp_path, "rtrl")), 1).experiment
    with pytest.raises(LimitError, match="exact RTRL's traces would need more than"):
        run_experiment(experiment, 1, 1, tmp_path / "out", 100)
    assert not (tmp_path / "out").exists()
    truncated = subject_of(str(dense_spec(tmp_path, "truncated_rtrl")), 1).experiment
    run_experiment(truncated, 1, 1, tmp_path / "out", 100)  # the same folder then takes the truncated net
    assert (tmp_path / "out" / "results.json").exists()


def test_a_run_removes_what_killed_writes_left_in_its_folder(tmp_path):
    experiment = find_experiment("hochreiter1997-adding-t100")
    run_experiment(experiment, 1, 1, tmp_path, budget_steps=500)
    left = [tmp_path / ".experiment.json.a1b2c3d4e5f6.tmp", tmp_path / "trials" / "0" / ".weights.npz.x9y8.tmp"]
    for path in left:
        path.write_bytes(b"cut short")
    run_experiment(experiment, 2, 1, tmp_path, budget_steps=500)
    assert not any(path.exists() for path in left)


def test_checks_passed_is_called_once_after_the_checks_and_never_for_a_refused_run(tmp_path, monkeypatch):
    """The CLI prints the run's plan in ``checks_passed``; before, it ran the checks itself
    first, so every plan was compiled twice."""
    import lstmgraph.experiments.run_checks as run_checks

    experiment = find_experiment("gers2002-gts-peephole")
    compiled, passed = [], []
    check_program = run_checks.check_program
    monkeypatch.setattr(run_checks, "check_program", lambda *args: compiled.append(1) or check_program(*args))
    run_experiment(experiment, 1, 1, tmp_path, budget_steps=200, checks_passed=lambda: passed.append(compiled[:]))
    assert passed == [[1]] and compiled == [1]
    with pytest.raises(ResultsConflict, match="200 in the folder, 300 in this command"):
        run_experiment(experiment, 1, 1, tmp_path, budget_steps=300, checks_passed=lambda: passed.append("again"))
    assert passed == [[1]]


def test_a_run_on_a_cluster_without_workers_says_so_in_its_reports(tmp_path, monkeypatch):
    """Before: a scheduler with no workers left a run silent after its plan (no piece finished,
    so no report came); now a quiet run reports now and then, with the cluster's workers."""
    from concurrent.futures import Future

    from lstmgraph.experiments import schedule
    from lstmgraph.experiments.workers import Workers

    class NoWorkers(Workers):  # a cluster whose pieces wait: no worker takes them
        slots = 1

        def submit(self, function, argument):
            return Future()

        def lost(self, error):
            return False

        def stop(self):
            pass

        def present(self):
            return 0

    class Seen(Exception):
        pass

    def progress(report):
        raise Seen(report)

    monkeypatch.setattr(schedule, "QUIET_REPORT_SECONDS", 0.0)
    with pytest.raises(Seen) as seen:
        run_experiment(find_experiment("gers2002-gts-peephole"), 1, 1, tmp_path, budget_steps=100,
                       cluster=NoWorkers(), progress=progress)
    assert seen.value.args[0].figures == {"running": 1, "waiting": 0, "workers": 0}


def test_each_piece_whose_worker_was_lost_is_counted_in_the_reports(tmp_path):
    """The command says when a worker was lost (before: only stalled counts showed it)."""
    from concurrent.futures import Future
    from concurrent.futures.process import BrokenProcessPool

    from lstmgraph.experiments.workers import ClusterError, Workers

    class Losing(Workers):  # every piece's worker dies
        slots = 1

        def submit(self, function, argument):
            future = Future()
            future.set_exception(BrokenProcessPool("a worker died"))
            return future

        def lost(self, error):
            return isinstance(error, BrokenProcessPool)

        def stop(self):
            pass

    reports = []
    with pytest.raises(ClusterError, match="their worker was lost 4 times"):
        run_experiment(find_experiment("gers2002-gts-peephole"), 1, 1, tmp_path, budget_steps=100, cluster=Losing(),
                       progress=reports.append)
    assert [report.figures.get("lost") for report in reports] == [1, 2, 3]


def test_a_trial_s_spec_resets_as_its_protocol_does(tmp_path):
    """Before: the CERG spec's ``reset: never`` was saved for the external-reset row (and the NTO
    and NMSD rows, whose protocols reset each sequence), so `evaluate` ran a perfect net as one
    stream: 0.1 % correct where it learned 100 %."""
    from lstmgraph.experiments.experiment import trained_spec

    reset = find_experiment("gers2000-cerg-standard-reset")
    data = reset.spec_data()[0]
    assert data["training"]["reset"] == "never"
    assert trained_spec(data, reset.protocol)["training"]["reset"] == "sequence" and data["training"]["reset"] == "never"
    for name, expected in (("gers2000-cerg-forget", "never"), ("gers2000-nto-forget-bias5", "sequence"),
                           ("gers2002-nmsd-f10-peephole", "sequence"), ("gers2002-msd-f10-peephole", "never")):
        row = find_experiment(name)
        assert trained_spec(row.spec_data()[0], row.protocol)["training"]["reset"] == expected, name
    run_experiment(reset, 1, 1, tmp_path, budget_steps=2000)
    assert yaml.safe_load((tmp_path / "trials" / "0" / "spec.yaml").read_text())["training"]["reset"] == "sequence"
