"""`summarise` and `comparison`: finished trials' rows in the published figures' terms."""

from __future__ import annotations

from lstmgraph.experiments import find_experiment
from lstmgraph.experiments.summary import comparison, summarise


def test_the_summary_counts_streams_classes_and_successes():
    experiment = find_experiment("gers2000-cerg-forget")
    rows = [{"seed": 0, "solved": True, "to_success": 100, "class": "perfect", "score": 1e5, "steps": 5, "seconds": 1.0},
            {"seed": 1, "solved": True, "to_success": 300, "class": "perfect", "score": 1e5, "steps": 5, "seconds": 1.0},
            {"seed": 2, "solved": False, "to_success": None, "class": "good", "score": 2000.0, "steps": 5, "seconds": 1.0},
            {"seed": 3, "solved": False, "to_success": None, "class": "rest", "score": 3.0, "steps": 5, "seconds": 1.0}]
    summary = summarise(experiment, rows)
    assert (summary["perfect_percent"], summary["good_percent"], summary["rest_percent"]) == (50.0, 25.0, 25.0)
    assert summary["mean_to_success"] == 200 and summary["range"] == "100-300"
    assert round(summary["std_to_success"], 6) == round((2 * 100 ** 2) ** 0.5, 6)
    table = dict((label, (ours, theirs)) for label, ours, theirs in
                 comparison({"summary": summary, "experiment": experiment.describe()}))
    assert table["% perfect"] == ("50", "18")
    assert table["mean training streams to success"] == ("200", "18,889")
    assert table["median training streams to success"] == ("-", "-")  # no trials held: none to take it from
    rows.append({**rows[0], "seed": 4, "to_success": 1000})
    table = dict((label, (ours, theirs)) for label, ours, theirs in
                 comparison({"summary": summarise(experiment, rows), "experiment": experiment.describe(), "trials": rows}))
    assert table["median training streams to success"] == ("300", "-")


def test_the_comparison_prints_test_figures_with_their_precision():
    experiment = find_experiment("hochreiter1997-multiplication-t100-nseq140")
    rows = [{"seed": 0, "solved": True, "to_success": 400_000, "steps": 5, "seconds": 1.0, "test_wrong": 120,
             "test_mse": 0.01234}]
    table = dict((label, (ours, theirs)) for label, ours, theirs in
                 comparison({"summary": summarise(experiment, rows), "experiment": experiment.describe()}))
    assert table["test MSE"] == ("0.0123", "0.0223")
    assert table["test sequences wrong (of 2,560)"] == ("120.0", "139")

