"""The row a published ratio names, found beside the judged folder, else in the results root
being read; never through a link, never by a name that is not a catalogue row; and taken only
where its trials can stand for that row (`problem_with`)."""

from __future__ import annotations

import json
import os

from lstmgraph.experiments import find_experiment
from lstmgraph.experiments.reference import with_reference
from lstmgraph.experiments.summary import summarise
from lstmgraph.experiments.verdict import REFERENCE

BIAS5, STANDARD = "gers2000-nto-forget-bias5", "gers2000-nto-standard"


def _results(name, solved, unsolved=0, budget=None):
    experiment = find_experiment(name)
    rows = [{"seed": seed, "solved": True, "to_success": value, "steps": 5, "seconds": 1.0, "presented": value}
            for seed, value in enumerate(solved)]
    rows += [{"seed": len(solved) + seed, "solved": False, "to_success": None, "steps": budget or 5, "seconds": 1.0,
              "presented": 9} for seed in range(unsolved)]
    return {"experiment": experiment.describe(), "summary": summarise(experiment, rows), "trials": rows,
            "budget_steps": budget}


TEN = [10, 20, 30, 40, 50, 60, 70, 80, 90, 100]


def _folder(path, results):
    path.mkdir(parents=True)
    (path / "results.json").write_text(json.dumps(results))
    return path


def test_a_sibling_before_the_row_s_own_folder_in_the_root(tmp_path):
    _folder(tmp_path / STANDARD, _results(STANDARD, TEN))
    judged = _folder(tmp_path / "no-shortcut" / BIAS5, _results(BIAS5, [30]))
    found = with_reference(_results(BIAS5, [30]), judged, root=tmp_path)[REFERENCE]
    assert found == {"name": STANDARD, "folder": (tmp_path / STANDARD).as_posix(), "solved": TEN, "problem": None}
    _folder(tmp_path / "no-shortcut" / STANDARD, _results(STANDARD, [v + 1 for v in TEN]))  # the same change
    assert with_reference(_results(BIAS5, [30]), judged, root=tmp_path)[REFERENCE]["solved"][0] == 11
    # a sibling run part way is not passed over for the row's own in the root
    (tmp_path / "no-shortcut" / "gers2000-nto-standard" / "results.json").unlink()
    found = with_reference(_results(BIAS5, [30]), judged, root=tmp_path)[REFERENCE]
    assert found["folder"] == (tmp_path / "no-shortcut" / STANDARD).as_posix() and "not finished" in found["problem"]
    # without a root, only a sibling: a folder one level up is nobody's row
    alone = _folder(tmp_path / "elsewhere" / BIAS5, _results(BIAS5, [30]))
    problem = with_reference(_results(BIAS5, [30]), alone)[REFERENCE]["problem"]
    assert problem == f"no results folder of {STANDARD} beside this one (in {tmp_path / 'elsewhere'})"
    # the results themselves are not changed (nor written with the reference)
    results = _results(BIAS5, [30])
    with_reference(results, judged, root=tmp_path)
    assert REFERENCE not in results and REFERENCE not in json.loads((judged / "results.json").read_text())


def test_a_folder_that_cannot_stand_for_the_row_says_why(tmp_path):
    judged = tmp_path / BIAS5

    def problem(results):
        (tmp_path / STANDARD / "results.json").write_text(json.dumps(results))
        return with_reference(_results(BIAS5, [30]), judged)[REFERENCE]["problem"]

    _folder(tmp_path / STANDARD, _results(STANDARD, TEN))
    where = (tmp_path / STANDARD).as_posix()
    assert problem(_results(STANDARD, TEN)) is None
    assert problem(_results("hochreiter1997-temporal-order-6a", TEN)) == \
        f"{where} holds trials of hochreiter1997-temporal-order-6a, not of {STANDARD}"
    assert problem(_results(STANDARD, TEN[:3])) == f"{where} holds 3 of the row's 10 trials"
    assert problem(_results(STANDARD, TEN[:3], unsolved=7, budget=3000)) == \
        f"{where} has a trial stopped by a cap (reproduce --max-steps)"
    assert problem(_results(STANDARD, TEN[:1], unsolved=9)) == f"{where} has 1 solved trial, too few for a mean's spread"
    assert problem(_results(STANDARD, [0] + TEN[1:])) == f"{where} has a trial solved after 0 sequences, so no ratio to it exists"
    other = _results(STANDARD, TEN)
    other["experiment"]["task_options"] = {"variant": "6a"}
    assert problem(other) == f"{where} ran with other task options than this folder's"
    # a results.json recorded with fewer paper trials is judged by the row as read now (10)
    old = _results(STANDARD, TEN[:5])
    old["experiment"]["trials"] = 5
    assert problem(old) == f"{where} holds 5 of the row's 10 trials"


def test_no_reference_where_no_ratio_is_published_or_the_name_is_no_catalogue_row(tmp_path):
    standard = _results(STANDARD, [10])  # no ratio published
    assert with_reference(standard, tmp_path / STANDARD) is standard
    # a damaged results.json naming a path: never read
    _folder(tmp_path.parent / f"{tmp_path.name}-outside" / STANDARD, _results(STANDARD, TEN))
    hostile = _results(BIAS5, [30])
    hostile["experiment"]["published"] = {"ratio_to": f"../{tmp_path.name}-outside/{STANDARD}"}
    assert REFERENCE not in with_reference(hostile, tmp_path / BIAS5)


def test_a_link_a_file_or_a_damaged_folder_is_named_never_followed_nor_fatal(tmp_path):
    outside = _folder(tmp_path / "elsewhere" / STANDARD, _results(STANDARD, TEN))
    (tmp_path / "results").mkdir()
    judged = tmp_path / "results" / BIAS5
    os.symlink(outside, tmp_path / "results" / STANDARD)
    found = with_reference(_results(BIAS5, [30]), judged)[REFERENCE]
    assert found["solved"] == [] and "cannot be read" in found["problem"] and "link" in found["problem"]
    os.unlink(tmp_path / "results" / STANDARD)
    (tmp_path / "results" / STANDARD).write_text("a file")
    assert "cannot be read" in with_reference(_results(BIAS5, [30]), judged)[REFERENCE]["problem"]
    os.unlink(tmp_path / "results" / STANDARD)
    (tmp_path / "results" / STANDARD).mkdir()
    (tmp_path / "results" / STANDARD / "results.json").write_text("{not json")
    problem = with_reference(_results(BIAS5, [30]), judged)[REFERENCE]["problem"]
    assert STANDARD in problem and "cannot be read" in problem
