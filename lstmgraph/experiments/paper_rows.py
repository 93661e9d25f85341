"""The paper rows' tables of README.md and docs/results.md, with their causes and the tally.

One row per *paper row*: a catalogue experiment whose table is not marked "our extension". Its
result is the results folder docs/results/<its name> (the top level only: folders under
exact-rtrl/, no-shortcut/ and the like are runs of other settings), its verdict the summary
table's for that folder. A row with no folder is "not run"; a partial row whose verdict its trials
not finished can still change (`verdict.settled_verdict` is None) is "not judged yet".

The cause column names, for a differing row, the tested change that reproduces it, or the changes
that do not (`causes.row_cause`); for any row, where it departs from the seeds
(`Experiment.departures`). The tally counts the rows reproduced as the seeds define them, those a
named change reproduces, and those no tested change explains.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .catalogue import EXPERIMENTS
from .experiment import is_paper_row
from .causes import OPEN, REPRODUCES, RULED_OUT, Cause, ChangeResult, row_cause
from .results_table import (PAPERS, ResultsTableError, Row, coding_note, folder_verdict, judged_ratio, protocol_of,
                            published_cell, solved_values)
from .verdict import DIFFERS, NOT_JUDGED, NOT_JUDGED_YET, REPRODUCED, judge

#: A paper row's verdict when it has no results folder.
NOT_RUN = "not run"


@dataclass(frozen=True)
class PaperRow:
    """One paper row: a catalogue experiment not marked "our extension", with its top-level
    results folder's row (None: not run), its verdict (`results_table.folder_verdict`) and its tested changes."""

    name: str
    paper: str
    table: str
    row: Row | None
    verdict: str        # REPRODUCED, DIFFERS, NOT_JUDGED, NOT_JUDGED_YET or NOT_RUN
    note: str           # the summary table's verdict cell, or why there is none
    cause: Cause
    departures: tuple[str, ...]

    @property
    def named(self) -> bool:
        """Differs, and a tested change reproduces it."""
        return self.verdict == DIFFERS and self.cause.named

    @property
    def contradicted(self) -> bool:
        """Named, and every change that reproduces it makes a row of the paper that our reading
        reproduces differ (`ChangeResult.contradicted_by`)."""
        return self.named and all(result.contradicted_by for result in self.cause.with_outcome(REPRODUCES))


def paper_rows(collected: list[Row], docs: Path) -> list[PaperRow]:
    """Every paper row of the catalogue, in the catalogue's order (the papers' table order), with
    its results folder among ``collected`` (`collect`'s rows: the folder named as the row, at the
    top level), its verdict and the changes tested on it (folders under ``docs``)."""
    folders = {row.folder: row for row in collected}
    rows = []
    for experiment in EXPERIMENTS.values():
        if not is_paper_row(experiment):
            continue
        cause = row_cause(experiment.name, experiment.published, experiment.trials, docs)
        row = folders.get(experiment.name)
        if row is None:
            rows.append(PaperRow(experiment.name, experiment.paper, experiment.table, None, NOT_RUN, NOT_RUN,
                                 cause, experiment.departures))
            continue
        if row.name != experiment.name:
            raise ResultsTableError(f"results folder {row.folder}: holds experiment {row.name!r}, not the row "
                                    f"its name says")
        result, note = folder_verdict(row)
        rows.append(PaperRow(experiment.name, experiment.paper, experiment.table, row, result, note, cause,
                             experiment.departures))
    return rows


def tally(rows: list[PaperRow]) -> str:
    """"N of M paper rows reproduced as the seeds define them; K more with a named change (J by a
    change that breaks a row our reading reproduces: `PaperRow.contradicted`); L unexplained" (and how many
    of those have a suspect not yet tested: `Cause.untested`), then how many are not judged, not
    judged yet and not run."""
    count = {result: sum(row.verdict == result for row in rows)
             for result in (REPRODUCED, DIFFERS, NOT_JUDGED, NOT_JUDGED_YET, NOT_RUN)}
    named = sum(row.named for row in rows)
    contradicted = sum(row.contradicted for row in rows)
    untested = sum(row.verdict == DIFFERS and not row.named and bool(row.cause.untested) for row in rows)
    unjudgeable = sum(row.verdict == NOT_JUDGED and row.row is not None and any(
        j.verdict == NOT_JUDGED for j in judge(row.row.results, row.row.published, row.row.paper_trials)) for row in rows)
    text = (f"**{count[REPRODUCED]} of {len(rows)} paper rows reproduced as the seeds define them**; "
            f"{named} more with a named change"
            + (f" ({contradicted} breaking a row our reading reproduces)" if contradicted else "")
            + f"; {count[DIFFERS] - named} unexplained"
            + (f" ({untested} with a listed suspect not yet tested)" if untested else "") + "; "
            f"{count[NOT_JUDGED] - unjudgeable} not judged (a finding in words only)"
            + (f", {unjudgeable} with a figure that cannot be judged (its cell says why)" if unjudgeable else ""))
    if count[NOT_JUDGED_YET]:
        text += f", {count[NOT_JUDGED_YET]} not judged yet (its missing trials decide)"
    return text + f"; {count[NOT_RUN]} not run."


def _short_ours(row: Row) -> str:
    """Our rate and mean, without intervals (the tables' cell; the summary table has the intervals)."""
    n, solved = row.results["summary"]["trials"], solved_values(row)
    protocol = protocol_of(row)
    text = f"{len(solved)} of {n} {protocol.success_word}"
    if solved:
        text += f", mean {sum(solved) / len(solved):,.0f} {protocol.counted_short}"
    ratio = judged_ratio(row)
    if ratio is not None:
        text += f", {ratio.ours} {row.published['ratio_to']}'s"
    budget = row.results.get("budget_steps")
    if budget:
        text += f" (capped at {budget:,} steps)"
    return text


def _groups(results: list[ChangeResult]) -> dict[str, list[ChangeResult]]:
    """The results by the change tested (a sweep's settings together), in `TESTED`'s order."""
    groups: dict[str, list[ChangeResult]] = {}
    for result in results:
        groups.setdefault(result.tested.folder, []).append(result)
    return groups


def _link(text: str, folder: str, prefix: str) -> str:
    return f"[{text}]({prefix}{folder})"


def cause_cell(paper_row: PaperRow, prefix: str) -> str:
    """The cause column: for a differing row, the change that reproduces it, or "none of" the
    changes tested (a sweep as one link with its count of settings), those still open and the
    listed suspects not yet tested; for every row, where it departs from the seeds. Links start
    with ``prefix`` (the path to docs/)."""
    parts = []
    if paper_row.verdict == DIFFERS:
        cause = paper_row.cause
        found = cause.with_outcome(REPRODUCES)
        if found:
            parts.append("reproduced with " + "; ".join(
                _link(r.change, r.folder, prefix) + (f" (departs: {r.tested.departure})" if r.tested.departure else "")
                + ("; the same change makes " + ", ".join(_link(other, folder, prefix)
                                                          for other, folder in r.contradicted_by)
                   + " differ, which our reading reproduces"
                   if r.contradicted_by else "")
                for r in found))
        else:
            for outcome, words in ((RULED_OUT, "none of"), (OPEN, "open")):
                groups = _groups(cause.with_outcome(outcome))
                if groups:
                    parts.append(f"{words}: " + ", ".join(_group_link(group, prefix) for group in groups.values()))
            if not cause.results:
                parts.append("no change tested yet")
            if cause.untested:
                parts.append("not yet tested: " + ", ".join(cause.untested))
    if paper_row.departures:
        parts.append("departs from the seed: " + "; ".join(paper_row.departures))
    return "; ".join(parts) if parts else "-"


def _group_link(group: list[ChangeResult], prefix: str) -> str:
    """One change's link; a sweep of several settings links the sweep, with their count."""
    if len(group) == 1:
        return _link(group[0].change, group[0].folder, prefix)
    tested = group[0].tested
    return _link(tested.change, tested.folder, prefix) + f" ({len(group)} settings)"


def render_paper_tables(rows: list[PaperRow], prefix: str) -> str:
    """The tally, then one table per paper (row, published, ours, verdict, cause), in Markdown.
    Links start with ``prefix``: the path from the document to docs/ ("docs/" from README.md)."""
    lines = [tally(rows)]
    for paper in PAPERS:
        lines += ["", f"**{paper}**", "", "| row | published | ours | verdict | cause |", "|---|---|---|---|---|"]
        for paper_row in (row for row in rows if row.paper == paper):
            name = f"{paper_row.name} ({paper_row.table})"
            cause = cause_cell(paper_row, prefix)
            if paper_row.row is None:
                lines.append(f"| {name} | - | - | {NOT_RUN} | {cause} |")
                continue
            row = paper_row.row
            lines.append(f"| [{name}]({prefix}results/{row.folder}){coding_note(row)} | {published_cell(row)} | "
                         f"{_short_ours(row)} | {paper_row.note} | {cause} |")
    return "\n".join(lines) + "\n"
