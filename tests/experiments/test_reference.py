"""The row a published ratio names, found beside the judged folder: a sibling first, then beside
its parent; never through a link, never by a name that is not a catalogue row."""

from __future__ import annotations

import json
import os

import pytest

from lstmgraph.experiments import find_experiment
from lstmgraph.experiments.folder import ResultsConflict
from lstmgraph.experiments.reference import with_reference
from lstmgraph.experiments.summary import summarise
from lstmgraph.experiments.verdict import REFERENCE


def _results(name, solved):
    experiment = find_experiment(name)
    rows = [{"seed": seed, "solved": True, "to_success": value, "steps": 5, "seconds": 1.0, "presented": value}
            for seed, value in enumerate(solved)]
    return {"experiment": experiment.describe(), "summary": summarise(experiment, rows), "trials": rows,
            "budget_steps": None}


def _folder(path, name, solved):
    path.mkdir(parents=True)
    (path / "results.json").write_text(json.dumps(_results(name, solved)))
    return path


BIAS5, STANDARD = "gers2000-nto-forget-bias5", "gers2000-nto-standard"


def test_the_paper_row_s_folder_beside_the_parent_and_a_sibling_before_it(tmp_path):
    _folder(tmp_path / STANDARD, STANDARD, [10, 20])
    judged = _folder(tmp_path / "no-shortcut" / BIAS5, BIAS5, [30])
    found = with_reference(_results(BIAS5, [30]), judged)[REFERENCE]
    assert found == {"name": STANDARD, "folder": (tmp_path / STANDARD).as_posix(), "solved": [10, 20]}
    _folder(tmp_path / "no-shortcut" / STANDARD, STANDARD, [40, 50])  # the same change on the other row
    assert with_reference(_results(BIAS5, [30]), judged)[REFERENCE]["solved"] == [40, 50]
    # the results themselves are not changed (nor written with the reference)
    results = _results(BIAS5, [30])
    with_reference(results, judged)
    assert REFERENCE not in results and REFERENCE not in json.loads((judged / "results.json").read_text())


def test_no_reference_where_none_is_named_found_or_the_name_is_no_catalogue_row(tmp_path):
    judged = _folder(tmp_path / BIAS5, BIAS5, [30])
    assert REFERENCE not in with_reference(_results(BIAS5, [30]), judged)  # no folder of the standard row
    (tmp_path / STANDARD).mkdir()  # a folder with no results.json yet (a run not finished)
    assert REFERENCE not in with_reference(_results(BIAS5, [30]), judged)
    standard = _results(STANDARD, [10])  # no ratio published
    assert with_reference(standard, tmp_path / STANDARD) is standard
    # a damaged results.json naming a path: never read
    _folder(tmp_path.parent / f"{tmp_path.name}-outside" / STANDARD, STANDARD, [10, 20])
    hostile = {**_results(BIAS5, [30]), "experiment": {**_results(BIAS5, [30])["experiment"],
                                                        "published": {"ratio_to": f"../{tmp_path.name}-outside/{STANDARD}"}}}
    assert REFERENCE not in with_reference(hostile, judged)


def test_a_link_to_the_reference_folder_is_not_followed(tmp_path):
    outside = _folder(tmp_path / "elsewhere" / STANDARD, STANDARD, [10, 20])
    (tmp_path / "results").mkdir()
    judged = _folder(tmp_path / "results" / BIAS5, BIAS5, [30])
    os.symlink(outside, tmp_path / "results" / STANDARD)
    with pytest.raises(ResultsConflict, match="link"):
        with_reference(_results(BIAS5, [30]), judged)


def test_a_damaged_reference_is_named(tmp_path):
    judged = _folder(tmp_path / BIAS5, BIAS5, [30])
    (tmp_path / STANDARD).mkdir()
    (tmp_path / STANDARD / "results.json").write_text("{not json")
    with pytest.raises(ResultsConflict, match=STANDARD):
        with_reference(_results(BIAS5, [30]), judged)
