"""docs/results.md's generated tables and summary figure: the rows collected from the results
folders (`results_table`), the docs regenerated between their markers (`results_docs`), and the
figure's points and staleness (`figures`)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from lstmgraph.experiments import find_experiment
from lstmgraph.experiments.figures import points_digest, summary_digest
from lstmgraph.experiments.results_docs import regenerate
from lstmgraph.experiments.results_table import (BEGIN, END, ResultsTableError, collect, find_docs, render,
                                                 summary_points)
from lstmgraph.experiments.summary import summarise
from lstmgraph.experiments.verdict import DIFFERS, REPRODUCED, bootstrap_mean, judge, wilson

from test_verdict import _results, _row

ROOT = Path(__file__).resolve().parents[2]


def test_the_table_of_docs_results_md_is_current():
    """Regenerate it with: lstmgraph results --write"""
    assert regenerate(ROOT / "docs", write=False).stale == []


def _docs(tmp_path, text: str):
    docs = tmp_path / "docs"
    (docs / "results").mkdir(parents=True)
    (docs / "results.md").write_text(text)
    return docs


def test_the_table_has_a_row_per_results_folder_and_is_written_between_the_markers(tmp_path):
    rows = collect(ROOT / "docs" / "results")
    assert len(rows) == len([path for path in (ROOT / "docs" / "results").rglob("results.json")
                             if "history" not in path.relative_to(ROOT / "docs" / "results").parts[:1]])
    assert rows[0].paper.startswith("Hochreiter") and rows[-1].paper.startswith("Gers, Schraudolph")
    docs = _docs(tmp_path, f"# title\n\n{BEGIN}\nold\n{END}\n\ntext after\n")
    (docs / "results" / "gers2002-gts-peephole").mkdir()
    (docs / "results" / "gers2002-gts-peephole" / "results.json").write_text(
        json.dumps(_results("gers2002-gts-peephole", [_row(seed, 8_000) for seed in range(10)])))
    assert regenerate(docs, write=False).stale == [
        f"the tables of {docs / 'results.md'}", f"the figure {docs / 'results' / 'summary.png'}",
        f"the results.png of 1 results folder (the first: {docs / 'results' / 'gers2002-gts-peephole' / 'results.png'})"]
    state = regenerate(docs, write=True)
    assert state.rows == 1
    text = (docs / "results.md").read_text()
    assert text.startswith(f"# title\n\n{BEGIN}\n| results folder |") and text.endswith(f"{END}\n\ntext after\n")
    assert regenerate(docs, write=False).stale == []
    assert math.isclose(len(text.splitlines()), 6 + 1 + 2)


def test_the_docs_are_found_from_anywhere_in_the_checkout_or_named(tmp_path):
    assert find_docs(ROOT / "lstmgraph" / "experiments") == ROOT / "docs"
    assert find_docs(ROOT / "docs" / "results") == ROOT / "docs"
    with pytest.raises(ResultsTableError, match="no docs/results.md in .* or a folder above it.*give --folders DIR"):
        find_docs(tmp_path)
    docs = _docs(tmp_path, "no markers\n")
    with pytest.raises(ResultsTableError, match="results.md: the document has no summary-table markers"):
        regenerate(docs, write=False)


def test_a_folder_run_with_other_task_options_or_protocol_settings_says_so_in_the_table(tmp_path):
    rows = [_row(seed, 20_000 if seed < 3 else None) for seed in range(10)]
    as_row = find_experiment("gers2000-cnto-forget")
    for folder, experiment in (("a/gers2000-cnto-forget", as_row),
                               ("b/gers2000-cnto-forget", as_row.with_task_options({"idle_target": 0.5})),
                               ("c/gers2000-cnto-forget", as_row.with_task_options({"idle_target": None})),
                               ("d/gers2000-cnto-forget", as_row.with_protocol_options({"success": "most_active"}))):
        (tmp_path / folder).mkdir(parents=True)
        (tmp_path / folder / "results.json").write_text(json.dumps(
            {"experiment": experiment.describe(), "summary": summarise(experiment, rows), "trials": rows,
             "budget_steps": None}))
    plain, changed, unset, protocol = render(collect(tmp_path)).splitlines()[2:]
    assert protocol.startswith("| [d/gers2000-cnto-forget](results/d/gers2000-cnto-forget) "
                               '(protocol: success "most_active") | 10 of 100 |')
    assert plain.startswith("| [a/gers2000-cnto-forget](results/a/gers2000-cnto-forget) | 10 of 100 |")
    assert changed.startswith("| [b/gers2000-cnto-forget](results/b/gers2000-cnto-forget) "
                              "(task: idle_target 0.5) | 10 of 100 |")
    assert unset.startswith("| [c/gers2000-cnto-forget](results/c/gers2000-cnto-forget) "
                            "(task: no idle_target) | 10 of 100 |")
    assert plain.split(" | ", 2)[2] == changed.split(" | ", 2)[2]  # the same figures and verdict


def test_the_summary_figure_plots_each_folder_s_intervals_and_knows_when_it_is_stale(tmp_path):
    results = tmp_path / "results"
    for name, rows in (("gers2000-cerg-forget", [_row(seed, 10_000 + seed if seed < 7 else None)
                                                 for seed in range(10)]),
                       ("gers2002-gts-no-peephole", [_row(seed, None) for seed in range(10)])):
        (results / name).mkdir(parents=True)
        (results / name / "results.json").write_text(json.dumps(_results(name, rows)))
    forget, gts = points = summary_points(collect(results))
    assert forget.rate == (0.7, *wilson(7, 10)) and forget.published_rate == pytest.approx(0.18)
    assert forget.rate_verdict == DIFFERS  # 18 % lies below 40-89 %
    assert forget.mean[0] == 10_003 and forget.mean[1:] == bootstrap_mean(range(10_000, 10_007))
    assert forget.mean_verdict == DIFFERS and forget.published_mean == 18_889
    assert gts.rate == (0.0, *wilson(0, 10)) and gts.published_rate == 0.0 and gts.rate_verdict == REPRODUCED
    assert gts.mean is None and gts.mean_verdict is None
    docs = tmp_path
    (docs / "results.md").write_text(f"{BEGIN}\n{END}\n")
    figure = results / "summary.png"
    assert regenerate(docs, write=True).stale and summary_digest(figure) == points_digest(points)
    assert regenerate(docs, write=False).stale == []
    (results / "gers2002-gts-no-peephole" / "results.json").write_text(
        json.dumps(_results("gers2002-gts-no-peephole", [_row(seed, 9_000 if seed == 3 else None)
                                                          for seed in range(10)])))
    assert f"the figure {figure}" in regenerate(docs, write=False).stale
    figure.write_bytes(b"not a png")
    assert summary_digest(figure) is None


def test_the_tables_give_a_run_a_cap_stopped_no_verdict_and_a_finding_in_words_stays_not_judged():
    from lstmgraph.experiments.results_table import CAPPED_CELL, verdict_cell
    from lstmgraph.experiments.verdict import cap_binds

    stopped = [{**_row(seed, None), "steps": 2_000} for seed in range(10)]
    capped = {**_results("gers2002-gts-peephole", stopped), "budget_steps": 2000}
    assert cap_binds(capped) and not cap_binds({**capped, "budget_steps": 2001})
    assert verdict_cell(judge(capped), cap_binds(capped)) == CAPPED_CELL
    assert verdict_cell(judge(capped)).startswith("**differs**")
    words = _results("gers2000-cerg-forget-without-begin-end", stopped[:1])  # a finding in words: no figure to judge
    assert verdict_cell(judge(words), True) == "not judged"
    # a ratio to a row with no folder beside it: not judged, and the cell says why
    alone = _results("gers2000-nto-forget-bias5", [_row(seed, 9_000 + seed) for seed in range(10)])
    assert verdict_cell(judge(alone)) == ("not judged (mean sequences to success against gers2000-nto-standard: "
                                          "its trials were not read)")
    assert verdict_cell(judge(alone), True) == CAPPED_CELL  # (before: the cap's note hidden by "not judged")


def test_a_row_s_measured_cost_is_read_from_its_committed_folder_in_a_checkout(tmp_path, monkeypatch):
    from lstmgraph.experiments import results_table
    from lstmgraph.experiments.results_table import measured_cost

    summary = json.loads((ROOT / "docs" / "results" / "gers2000-cerg-forget" / "results.json").read_text())["summary"]
    assert measured_cost("gers2000-cerg-forget", ROOT) == (
        f"{summary['seconds_total']:,.0f} s of CPU for 100 trials (docs/results/gers2000-cerg-forget)")
    below = measured_cost("gers2000-cerg-forget", ROOT / "lstmgraph")  # found walking up; named in full
    assert below.endswith(f"({ROOT.resolve()}/docs/results/gers2000-cerg-forget)")
    # Outside the checkout: the checkout lstmgraph runs from (this one); an installed wheel has none.
    assert measured_cost("gers2000-cerg-forget", tmp_path).endswith(f"({ROOT.resolve()}/docs/results/gers2000-cerg-forget)")
    monkeypatch.setattr(results_table, "BUNDLED_SPECS", tmp_path / "site-packages" / "lstmgraph" / "specs")
    assert measured_cost("gers2000-cerg-forget", tmp_path) is None
    assert measured_cost("no-such-row", ROOT) is None



def test_the_folders_table_leaves_out_another_tool_s_results_json_and_an_unreadable_folder_saying_so(
        tmp_path, monkeypatch):
    """Before: a results.json of another tool anywhere under DIR (no experiment.json beside it)
    ended the whole table with an error telling one to rerun the reproduce that wrote it, and a
    folder that could not be read was passed over without a word."""
    import os
    import shutil

    from lstmgraph.experiments.results_table import folders_table

    runs = tmp_path / "runs"
    shutil.copytree(ROOT / "docs" / "results" / "gers2002-gts-peephole", runs / "gts")
    (runs / "node_modules" / "tool").mkdir(parents=True)
    (runs / "node_modules" / "tool" / "results.json").write_text('{"passed": 3}')
    (runs / "locked" / "inner").mkdir(parents=True)
    scandir = os.scandir

    def refusing(path="."):
        if not isinstance(path, int) and os.fspath(path) == os.fspath(runs / "locked"):
            raise PermissionError(13, "Permission denied", os.fspath(path))
        return scandir(path)

    monkeypatch.setattr(os, "scandir", refusing)
    table, left_out = folders_table(runs)
    assert len(table.splitlines()) == 3 and "[gts](" in table
    assert left_out == [f"{runs / 'locked'}: left out, cannot be read (Permission denied); any results folders in "
                        "it are not in the table",
                        f"{runs / 'node_modules' / 'tool' / 'results.json'}: left out, no experiment.json beside it "
                        "(not a results folder lstmgraph reproduce or sweep wrote)"]
    shutil.rmtree(runs / "gts")
    with pytest.raises(ResultsTableError, match="no results folders there .*; .*tool/results.json: left out"):
        folders_table(runs)


def test_the_folders_table_names_the_setting_a_folder_ran_where_its_folder_does_not(tmp_path):
    """Before: a sweep's DIR/settings/0 and DIR/settings/1 showed as two rows of the same row's
    figures, nothing saying that the second ran learning_rate=0.5 (its experiment's name says
    so); a folder named as its experiment (runs/reproduce/NAME) shows no name again."""
    import shutil

    from lstmgraph.experiments.results_table import folders_table

    sweep = tmp_path / "sweep" / "settings"
    shutil.copytree(ROOT / "docs" / "results" / "gers2002-gts-peephole", sweep / "0")
    shutil.copytree(ROOT / "docs" / "results" / "gers2002-gts-peephole", sweep / "1")
    shutil.copytree(ROOT / "docs" / "results" / "gers2002-gts-peephole", tmp_path / "reproduce" / "gers2002-gts-peephole")
    results = json.loads((sweep / "1" / "results.json").read_text())
    results["experiment"]["name"] = "gers2002-gts-peephole [learning_rate=0.5]"
    (sweep / "1" / "results.json").write_text(json.dumps(results))
    table, _ = folders_table(tmp_path)
    lines = table.splitlines()[2:]
    assert [line.split(" | ")[0] for line in lines] == [
        f"| [reproduce/gers2002-gts-peephole]({tmp_path.as_posix()}/reproduce/gers2002-gts-peephole)",
        f"| [sweep/settings/0]({tmp_path.as_posix()}/sweep/settings/0): gers2002-gts-peephole",
        f"| [sweep/settings/1]({tmp_path.as_posix()}/sweep/settings/1): gers2002-gts-peephole [learning_rate=0.5]"]


def test_a_sweep_s_settings_come_in_their_order_not_by_their_values_text(tmp_path):
    """Before: rows sorted by name put a sweep's settings in the order of their values' text
    (learning_rate=0.05 of settings/10 first, settings/0 last)."""
    import shutil

    from lstmgraph.experiments.results_table import folders_table

    for index, rate in ((0, "1.0"), (1, "0.5"), (2, "0.1"), (10, "0.05")):
        folder = tmp_path / "sweep" / "settings" / str(index)
        shutil.copytree(ROOT / "docs" / "results" / "gers2002-gts-peephole", folder)
        results = json.loads((folder / "results.json").read_text())
        results["experiment"]["name"] = f"gers2002-gts-peephole [learning_rate={rate}]"
        (folder / "results.json").write_text(json.dumps(results))
    lines = folders_table(tmp_path)[0].splitlines()[2:]
    assert [line.split("]")[0] for line in lines] == [f"| [sweep/settings/{index}" for index in (0, 1, 2, 10)]


def test_a_partial_folder_whose_trials_left_can_change_it_is_not_judged_yet_in_every_table():
    """Before: the folders table printed a bold "reproduced" for 3 of 10 trials (the paper rows
    said "not judged yet"); a partial folder its trials left cannot change keeps its verdict."""
    from lstmgraph.experiments.results_table import Row, folder_verdict
    from lstmgraph.experiments.verdict import NOT_JUDGED_YET

    def row(results):
        experiment = find_experiment("gers2002-gts-peephole")
        return Row("gts", experiment.paper, experiment.name, results, experiment.published, experiment.trials)

    open_row = row(_results("gers2002-gts-peephole", [_row(seed, 8_000) for seed in range(3)]))
    assert folder_verdict(open_row) == (
        NOT_JUDGED_YET, "not judged yet (so far **reproduced**; the 7 trials not finished can change it)")
    assert render([open_row]).splitlines()[-1].endswith("| not judged yet (so far **reproduced**; the 7 trials "
                                                         "not finished can change it) |")
    settled = row(_results("gers2002-gts-peephole", [_row(seed, None) for seed in range(5)]))
    assert folder_verdict(settled) == (DIFFERS, "**differs** (% perfect); the 5 trials not finished cannot change it")


def test_the_summary_figure_plots_a_published_ratio_as_our_ratio_over_it():
    from lstmgraph.experiments.results_table import summary_points

    rows = {row.name: row for row in collect(ROOT / "docs" / "results") if row.folder.startswith("gers2000-nto-")}
    bias5, standard = summary_points([rows["gers2000-nto-forget-bias5"], rows["gers2000-nto-standard"]])
    assert bias5.published_mean == 1.0 and bias5.mean_verdict == DIFFERS
    assert bias5.mean[0] == pytest.approx(111_132.5 / 15_425.1) and bias5.mean[1] < bias5.mean[0] < bias5.mean[2]
    assert standard.published_mean is None and standard.mean_verdict is None and standard.mean[0] == pytest.approx(15_425.1)


def test_a_folder_or_row_name_with_a_bar_or_a_line_break_stays_one_cell(tmp_path):
    """Before: `results --folders` wrote such names as they are, breaking the table's rows."""
    import shutil

    from lstmgraph.experiments.results_table import folders_table

    shutil.copytree(ROOT / "docs" / "results" / "gers2002-gts-peephole", tmp_path / "runs" / "a|b\nc")
    table, _ = folders_table(tmp_path / "runs")
    lines = table.splitlines()
    assert len(lines) == 3 and lines[2].startswith("| [a\\|b c](") and "a%7Cb%0Ac" in lines[2]
    assert lines[2].count(" | ") == lines[0].count(" | ")


def test_a_figure_a_run_holds_is_left_to_the_run(tmp_path):
    """Before: `results --write` redrew the results.png of a folder a sweep was writing."""
    import shutil

    from lstmgraph.experiments.folder import ResultsFolder

    docs = _docs(tmp_path, f"{BEGIN}\n{END}\n")
    folder = docs / "results" / "gers2002-gts-peephole"
    shutil.copytree(ROOT / "docs" / "results" / "gers2002-gts-peephole", folder)
    (folder / "results.png").write_bytes(b"old")
    with ResultsFolder(folder).locked():
        regenerate(docs, write=True)
        assert (folder / "results.png").read_bytes() == b"old"
    assert any("results.png of 1 results folder" in what for what in regenerate(docs, write=False).stale)
    regenerate(docs, write=True)
    assert (folder / "results.png").read_bytes().startswith(b"\x89PNG")
