"""`figures.results_figure`: the results.png of a results folder."""

from __future__ import annotations

import json
from pathlib import Path

from lstmgraph.experiments.figures import results_figure

ROOT = Path(__file__).resolve().parents[2]


def test_a_row_with_no_trial_solved_says_so_beside_the_published_mean(monkeypatch):
    """Before: "no trial solved" was written only where the panel had no legend, so a row whose
    paper gives a mean (adding at T = 1,000: 0 of 10) showed an empty panel with one dashed line."""
    from matplotlib.axes import Axes

    written: list[str] = []
    text = Axes.text
    monkeypatch.setattr(Axes, "text", lambda axes, x, y, s, *args, **kwargs: (written.append(s),
                                                                                text(axes, x, y, s, *args, **kwargs))[1])
    results = json.loads((ROOT / "docs" / "results" / "hochreiter1997-adding-t1000" / "results.json").read_text())
    assert results["summary"]["success_percent"] == 0 and results["experiment"]["published"]["mean_to_success"]
    assert results_figure(results).startswith(b"\x89PNG") and "no trial solved" in written
    solved = json.loads((ROOT / "docs" / "results" / "hochreiter1997-adding-t100" / "results.json").read_text())
    written.clear()
    results_figure(solved)
    assert "no trial solved" not in written


def test_a_figure_records_the_digest_of_what_it_draws():
    from lstmgraph.experiments.figures import png_digest, results_digest
    from lstmgraph.experiments.verdict import REFERENCE

    results = json.loads((ROOT / "docs" / "results" / "gers2000-nto-forget-bias5" / "results.json").read_text())
    assert png_digest(results_figure(results)) == results_digest(results)
    # the other row's trials a ratio reads are not drawn; the published reading is
    assert results_digest({**results, REFERENCE: {"solved": [1, 2]}}) == results_digest(results)
    reread = {**results, "experiment": {**results["experiment"], "published": {"success_percent": 100}}}
    assert results_digest(reread) != results_digest(results)
    assert png_digest(b"no png") is None and png_digest(None) is None
