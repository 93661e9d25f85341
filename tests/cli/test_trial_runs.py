"""`trial_runs.trial_line`: a finished trial in the words reproduce and sweep print."""

from __future__ import annotations

from lstmgraph_cli.trial_runs import trial_line


def test_a_trial_line_counts_one_unit_in_the_singular():
    """Before: "not solved in 1 sequences" (a cap of a few steps)."""
    row = {"seed": 0, "solved": False, "presented": 1, "seconds": 0.25}
    assert trial_line(row, "sequences") == "trial 0: not solved in 1 sequence (0.2 s)"
    assert trial_line({**row, "presented": 2}, "training streams") == "trial 0: not solved in 2 training streams (0.2 s)"
    solved = {"seed": 3, "solved": True, "to_success": 1, "presented": 1, "seconds": 1.0}
    assert trial_line(solved, "training streams") == "trial 3: solved after 1 training stream (1.0 s)"
    assert trial_line({**row, "diverged": True, "presented": 12_311}, "sequences") == \
        "trial 0: diverged after 12,311 sequences (0.2 s)"
