"""Why a paper row differs (issue 38): each tested change judged against the paper row's own
figures and trial count, sweeps counted setting by setting, the cause cell and the tally."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from lstmgraph.experiments import EXPERIMENTS, find_experiment
from lstmgraph.experiments.causes import (EXACT, OPEN, REPRODUCES, ROW_SUSPECTS, RULED_OUT, SUSPECTS, TARGETS, TESTED,
                                          CauseError, TriedChange, row_cause)
from lstmgraph.experiments.paper_rows import cause_cell, is_paper_row, paper_rows, tally
from lstmgraph.experiments.results_table import collect
from lstmgraph.experiments.summary import summarise

ROOT = Path(__file__).resolve().parents[2]
ROW = "hochreiter1997-erg-3x2-lr0.5"  # 100 % solved, mean 8,440 sequences; 30 trials


def _trial(seed: int, to_success: int | None) -> dict:
    return {"seed": seed, "solved": to_success is not None, "to_success": to_success, "steps": 5, "seconds": 1.0,
            "presented": to_success or 200_000, "test_wrong": 0, "test_mse": 0.0}


def _folder(path: Path, name: str, outcomes: list[int | None], budget_steps: int | None = None) -> None:
    experiment = find_experiment(ROW)
    rows = [_trial(seed, value) for seed, value in enumerate(outcomes)]
    described = {**experiment.describe(), "name": name}
    path.mkdir(parents=True)
    (path / "results.json").write_text(json.dumps({"experiment": described, "trials": rows,
                                                   "budget_steps": budget_steps,
                                                   "summary": summarise(experiment, rows)}))


def _sweep(path: Path, settings: list[tuple[str, dict, list[int | None]]]) -> None:
    listed = []
    for index, (name, values, outcomes) in enumerate(settings):
        _folder(path / "settings" / str(index), name, outcomes)
        listed.append({"index": index, "values": values, "folder": f"settings/{index}", "own": index == 0,
                       "experiment": name})
    keys = {key: sorted({values[key] for _, values, _ in settings}) for key in settings[0][1]}
    (path / "sweep.json").write_text(json.dumps({"keys": keys, "settings": listed}))


@pytest.fixture
def docs(tmp_path, monkeypatch):
    tested = (TriedChange("change A", "results/a"), TriedChange("sweep B", "sweeps/b"),
              TriedChange("not run yet", "sweeps/none"))
    monkeypatch.setitem(TESTED, ROW, tested)
    return tmp_path


def _judged(docs: Path):
    experiment = find_experiment(ROW)
    return row_cause(ROW, experiment.published, experiment.trials, docs)


def test_a_change_run_to_the_paper_s_count_that_matches_its_figures_reproduces_the_row(docs):
    _folder(docs / "results" / "a", ROW, [6_990 + 100 * seed for seed in range(30)])
    cause = _judged(docs)
    assert [(r.change, r.outcome, r.trials) for r in cause.results] == [("change A", REPRODUCES, 30)]
    assert cause.named


def test_a_sweep_setting_is_ruled_out_only_when_no_trial_left_could_bring_it_back(docs):
    """ROW: 100 % of 30. 0 of 10 is settled (at most 20 of 30); 9 of 10 is not; the row's own
    setting (the sweep's first, named as the row) is the row itself and is not a change."""
    _sweep(docs / "sweeps" / "b", [(ROW, {"init.range": 0.2}, [None] * 10),
                                   (f"{ROW} [x]", {"init.range": 0.1}, [None] * 10),
                                   (f"{ROW} [y]", {"init.range": 0.3}, [9_000] * 9 + [None])])
    cause = _judged(docs)
    assert [(r.change, r.outcome) for r in cause.results] == [("sweep B: init.range 0.1", RULED_OUT),
                                                              ("sweep B: init.range 0.3", OPEN)]
    assert not cause.named
    assert [r.folder for r in cause.results] == ["sweeps/b/settings/1", "sweeps/b/settings/2"]


def test_capped_trials_may_reproduce_a_row_but_never_rule_it_out(docs):
    """Nets the cap stopped might still have learned; a cap no net reached (each stopped by the
    paper's own limit, 5 training steps here) stopped none."""
    _folder(docs / "results" / "a", ROW, [None] * 30, budget_steps=5)
    assert [r.outcome for r in _judged(docs).results] == [OPEN]
    shutil.rmtree(docs / "results" / "a")
    _folder(docs / "results" / "a", ROW, [None] * 30, budget_steps=1_000_000)
    assert [r.outcome for r in _judged(docs).results] == [RULED_OUT]


def test_a_sweep_whose_setting_lies_outside_it_is_refused(docs):
    (docs / "sweeps" / "b").mkdir(parents=True)
    (docs / "sweeps" / "b" / "sweep.json").write_text(json.dumps({"settings": [
        {"index": 0, "values": {}, "folder": "../../results/a", "own": False, "experiment": "x"}], "keys": {}}))
    with pytest.raises(CauseError, match="outside the sweep"):
        _judged(docs)
    (docs / "sweeps" / "b" / "sweep.json").write_text("{not json")
    with pytest.raises(CauseError, match="sweep.json: a tested sweep cannot be read"):
        _judged(docs)


def test_a_sweep_json_is_read_as_a_results_folder_s_files_are_never_through_a_link_nor_too_deep(docs, tmp_path):
    """Before: json.loads of the whole file, wherever a link pointed and however deep it nested."""
    _sweep(tmp_path / "elsewhere", [(ROW, {"init.range": 0.2}, [None] * 10),
                                    (f"{ROW} [x]", {"init.range": 0.1}, [None] * 10)])
    (docs / "sweeps" / "b").mkdir(parents=True)
    (docs / "sweeps" / "b" / "sweep.json").symlink_to(tmp_path / "elsewhere" / "sweep.json")
    with pytest.raises(CauseError, match="sweep.json: a tested sweep cannot be read .*symbolic link"):
        _judged(docs)
    (docs / "sweeps" / "b" / "sweep.json").unlink()
    (docs / "sweeps" / "b" / "sweep.json").write_text("[" * 100 + "]" * 100)
    with pytest.raises(CauseError, match="nested 100 deep"):
        _judged(docs)


def test_the_cause_cell_names_what_reproduces_else_what_does_not_and_the_departures(docs):
    _sweep(docs / "sweeps" / "b", [(f"{ROW} [x]", {"init.range": 0.1}, [None] * 10),
                                   (f"{ROW} [y]", {"init.range": 0.3}, [None] * 10)])
    _folder(docs / "results" / ROW, ROW, [None] * 30)
    (row,) = [r for r in paper_rows(collect(docs / "results"), docs) if r.name == ROW]
    assert row.verdict == "differs" and not row.named
    assert cause_cell(row, "docs/") == ("none of: [sweep B](docs/sweeps/b) (2 settings); not yet tested: "
                                        "target coding, the 1997 wiring, initial weight range, exact RTRL")
    _folder(docs / "results" / "a", ROW, [6_990 + 100 * seed for seed in range(30)])
    rows = paper_rows(collect(docs / "results"), docs)
    (row,) = [r for r in rows if r.name == ROW]
    assert cause_cell(row, "") == "reproduced with [change A](results/a)"
    assert f"0 of {len(rows)} paper rows reproduced as the seeds define them**; 1 more with a named change; " \
        "0 unexplained" in tally(rows)
    (decay,) = [r for r in rows if r.name == "gers2000-cerg-forget-decay"]
    assert cause_cell(decay, "") == ("departs from the seed: the rate decays after each error-free training stream, "
                                     "not after every update")


def test_every_tested_change_is_of_a_paper_row_and_its_folder_is_committed():
    for row, tested in TESTED.items():
        assert row in EXPERIMENTS and is_paper_row(EXPERIMENTS[row]), row
        for change in tested:
            folder = ROOT / "docs" / change.folder
            assert (folder / "results.json").is_file() or (folder / "sweep.json").is_file(), change.folder


def test_a_suspect_is_untested_until_a_settled_change_tests_it(docs, monkeypatch):
    """ROW's suspects: the ERG rows'. A ruled-out change crosses its suspects off, an open one
    does not; the tally counts the unexplained rows with a suspect left."""
    monkeypatch.setitem(TESTED, ROW, (TriedChange("targets", "results/a", suspects=(TARGETS,)),
                                      TriedChange("exact", "results/b", suspects=(EXACT,))))
    monkeypatch.setitem(ROW_SUSPECTS, ROW, (TARGETS, EXACT))
    _folder(docs / "results" / "a", f"{ROW} [x]", [None] * 10)  # 0 of 10: settled, ruled out
    _folder(docs / "results" / "b", f"{ROW} [y]", [9_000] * 9 + [None])  # 9 of 10: open
    _folder(docs / "results" / ROW, ROW, [None] * 30)
    (row,) = [r for r in paper_rows(collect(docs / "results"), docs) if r.name == ROW]
    assert [r.outcome for r in row.cause.results] == [RULED_OUT, OPEN] and row.cause.untested == (EXACT,)
    assert cause_cell(row, "") == "none of: [targets](results/a); open: [exact](results/b); not yet tested: exact RTRL"
    rows = paper_rows(collect(docs / "results"), docs)
    assert "1 unexplained (1 with a listed suspect not yet tested); " in tally(rows)
    _folder(docs / "results" / "b2", f"{ROW} [y]", [None] * 10)
    monkeypatch.setitem(TESTED, ROW, TESTED[ROW] + (TriedChange("exact again", "results/b2", suspects=(EXACT,)),))
    (row,) = [r for r in paper_rows(collect(docs / "results"), docs) if r.name == ROW]
    assert row.cause.untested == () and "not yet tested" not in cause_cell(row, "")


def test_every_suspect_named_is_one_of_the_issue_s_and_every_row_a_paper_row():
    for row, suspects in ROW_SUSPECTS.items():
        assert row in EXPERIMENTS and is_paper_row(EXPERIMENTS[row]), row
        assert suspects and set(suspects) <= set(SUSPECTS), row
    for tested in TESTED.values():
        for change in tested:
            assert set(change.suspects) <= set(SUSPECTS), change


def test_what_is_left_to_run_in_results_md_lists_every_untested_suspect_and_no_other():
    """docs/results.md's "What is left to run" table against the generated causes (no rows
    when nothing is left): a run that settles a suspect makes this fail until the table loses it."""
    text = (ROOT / "docs" / "results.md").read_text(encoding="utf-8")
    section = text[text.index("### What is left to run"):]
    section = section[:section.index("\n## ")]
    listed = {}
    for line in section.splitlines():
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        if line.startswith("| ") and cells[0] != "row":
            listed[cells[0]] = set(cells[1].split(", "))
    rows = paper_rows(collect(ROOT / "docs" / "results"), ROOT / "docs")
    left = {row.name: set(row.cause.untested) for row in rows
            if row.verdict == "differs" and not row.named and row.cause.untested}
    assert listed == left


def test_every_tested_change_s_folder_is_in_the_table_of_changes_tested():
    """docs/results.md's table names each folder of `TESTED` with the row as ROW (before: seven
    folders of one sitting were missing from it, unnoticed)."""
    from pathlib import Path

    from lstmgraph.experiments.causes import TESTED

    text = (Path(__file__).parents[2] / "docs" / "results.md").read_text(encoding="utf-8")
    section = text[text.index("## The changes tested on the differing rows"):text.index("### What is left to run")]
    missing = sorted({change.folder.replace(row, "ROW") for row, changes in TESTED.items() for change in changes
                      if f"`{change.folder.replace(row, 'ROW')}`" not in section})
    assert not missing, missing


def test_a_change_that_breaks_a_row_our_reading_reproduces_is_named_in_the_cell_and_the_tally(docs, monkeypatch):
    """results/c/ROW reproduces ROW; the same change on a sibling (results/c/SIBLING) makes it
    differ where our reading reproduces it: the cause says so. A sibling that differs at our
    reading too (the change leaves it so) is not counted against the change."""
    sibling = "hochreiter1997-erg-3x2-lr0.1"  # 100 % solved, mean 21,730 sequences; 30 trials
    monkeypatch.setitem(TESTED, ROW, (TriedChange("change C", f"results/c/{ROW}"),))
    _folder(docs / "results" / "c" / ROW, "c", [8440] * 30)
    _folder(docs / "results" / "c" / sibling, "c", [None] * 30)
    _folder(docs / "results" / sibling, sibling, [21_000, 22_460] * 15)
    (found,) = _judged(docs).with_outcome(REPRODUCES)
    assert found.contradicted_by == ((sibling, f"results/c/{sibling}"),)
    shutil.rmtree(docs / "results" / sibling)
    _folder(docs / "results" / sibling, sibling, [None] * 30)  # differs at our reading too
    (found,) = _judged(docs).with_outcome(REPRODUCES)
    assert found.contradicted_by == ()


def test_the_committed_causes_name_the_changes_that_break_a_reproduced_row():
    """The 375-weight net reproduces gers2000-cerg-forget and breaks gers2000-cerg-standard-reset;
    the delay as the GTS cue "reproduces" gts-no-forget by making every net fail, gts-peephole too."""
    rows = {row.name: row for row in paper_rows(collect(ROOT / "docs" / "results"), ROOT / "docs")}
    assert {name for name, row in rows.items() if row.contradicted} == {"gers2000-cerg-forget",
                                                                         "gers2002-gts-no-forget"}
    assert "the same change makes [gers2000-cerg-standard-reset](results/no-shortcut/gers2000-cerg-standard-reset) " \
           "differ, which our reading reproduces" in cause_cell(rows["gers2000-cerg-forget"], "")
    assert "(2 breaking a row our reading reproduces)" in tally(list(rows.values()))


def test_the_tally_counts_a_row_whose_ratio_cannot_be_judged_apart_from_findings_in_words(tmp_path):
    """Before: such a row was counted among "a finding in words only"."""
    from test_verdict import _results, _row

    folder = tmp_path / "results" / "gers2000-nto-forget-bias5"
    folder.mkdir(parents=True)
    (folder / "results.json").write_text(json.dumps(
        _results("gers2000-nto-forget-bias5", [{**_row(seed, 9_000 + seed), "class": None} for seed in range(10)])))
    text = tally(paper_rows(collect(tmp_path / "results"), tmp_path))
    assert "; 0 not judged (a finding in words only), 1 with a figure that cannot be judged (its cell says why); " in text
