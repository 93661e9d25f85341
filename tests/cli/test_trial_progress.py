"""`trial_progress`: what a log file shows of trials that run for minutes or hours."""

from __future__ import annotations

from types import SimpleNamespace

import lstmgraph_cli.trial_progress as trial_progress_module
from lstmgraph_cli.trial_progress import trial_progress


def test_a_log_file_hears_of_the_running_trials_after_a_minute_then_every_log_every(monkeypatch, capsys):
    """Before: the first line on running trials came after ``--log-every`` (10 minutes), so a
    sweep whose trials ran for minutes showed nothing after its plan in a log file."""
    clock = [1000.0]
    monkeypatch.setattr(trial_progress_module.time, "monotonic", lambda: clock[0])
    report = SimpleNamespace(figures={"running": 2, "waiting": 1}, label="trial 0: 1,200 training streams")
    with trial_progress(3, False, 600, str, lambda: None) as (begin, _, progress):
        clock[0] = 1050.0  # the checks took 50 s: the minute counts from the run's start
        begin()
        capsys.readouterr()
        for now in (1070, 1111, 1200, 1710, 1712):
            clock[0] = now
            progress(report)
            printed = capsys.readouterr().out
            shown = "0 of 3 done, 2 running, 1 waiting; trial 0: 1,200 training streams" in printed
            assert shown == (now in (1111, 1712)), now


def test_a_log_file_says_the_cluster_has_no_workers(monkeypatch, capsys):
    clock = [1000.0]
    monkeypatch.setattr(trial_progress_module.time, "monotonic", lambda: clock[0])
    with trial_progress(2, False, 600, str, lambda: None) as (begin, _, progress):
        begin()
        clock[0] = 1061.0
        progress(SimpleNamespace(figures={"running": 1, "waiting": 1, "workers": 0}, label=""))
    assert "0 of 2 done, 1 running, 1 waiting; no workers on the cluster yet: the trials wait for one" in \
        capsys.readouterr().out


def test_a_lost_worker_is_said_once(capsys):
    """Before: a worker killed mid-run showed nothing but stalled counts."""
    with trial_progress(2, False, 600, str, lambda: None) as (begin, _, progress):
        begin()
        capsys.readouterr()
        for lost in (0, 1, 1, 2):
            figures = {"running": 1, "waiting": 1, **({"lost": lost} if lost else {})}
            progress(SimpleNamespace(figures=figures, label="trial 0: 10 sequences"))
    printed = capsys.readouterr().out
    assert printed.count("a piece's worker was lost") == 2 and "(2 so far): its trials run again" in printed
