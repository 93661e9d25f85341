"""`lstmgraph results`: the generated parts of docs/results.md and README.md, and the figure.

docs/results.md holds the paper rows' tables with their tally and causes (`paper_rows`) and the
summary table of every results folder (`results_table`); it and the other pages of the docs
hold figures tables of their sections' folders (`results_figures`); README.md holds the same
paper rows' tables; docs/results/summary.png the summary figure. Each results folder under
docs/results and docs/sweeps holds its results.png (`figures.results_figure`), drawn from its
results as the catalogue reads its row now. `regenerate` says which are stale and, asked to,
writes them. Each table sits in its document between its markers.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..files import OutputError, write_atomically
from .figures import (MAX_FIGURE_BYTES, draw_summary, png_digest, points_digest, results_digest, results_figure,
                      summary_digest)
from .folder import ResultsConflict, ResultsFolder
from .folder_files import FolderFileError, read_file, write_file
from .paper_rows import paper_rows, render_paper_tables, tally
from .results_figures import FIGURES_MARK, FiguresError, fill_figures
from .results_table import (BEGIN, END, README_BEGIN, README_END, ResultsTableError, Row, collect, render,
                            replace_between, summary_points)


@dataclass(frozen=True)
class TableState:
    """What `regenerate` found: the summary table, its rows, the paper rows' tally (README.md's
    first line of its tables), and what is stale (the table in the document, the figure, README.md's
    tables)."""

    table: str
    rows: int
    tally: str
    stale: list[str]


def _replaced(path: Path, begin: str, end: str, text: str, what: str) -> tuple[str, str]:
    """The file's text and the text with ``text`` between its markers; ResultsTableError names
    the file when it cannot be read or has no markers."""
    try:
        document = path.read_text(encoding="utf-8")
        return document, replace_between(document, begin, end, text, what)
    except (OSError, UnicodeDecodeError) as error:
        raise ResultsTableError(f"{path}: cannot read it ({error})") from None
    except ValueError as error:
        raise ResultsTableError(f"{path}: {error}") from None


def _pages_with_figures(docs: Path) -> list[tuple[Path, str, str, str]]:
    """The other pages of ``docs`` and ``docs``/results holding figures tables (`results_figures`):
    (path, text, text with its tables current, what it is)."""
    pages = []
    for path in sorted([*docs.glob("*.md"), *(docs / "results").glob("*.md")]):
        if path.name == "results.md" and path.parent == docs:
            continue
        try:
            text = path.read_text(encoding="utf-8")
            if FIGURES_MARK in text:
                pages.append((path, text, fill_figures(text, docs, path.parent), f"the figures tables of {path}"))
        except (OSError, UnicodeDecodeError) as error:
            raise ResultsTableError(f"{path}: cannot read it ({error})") from None
        except FiguresError as error:
            raise ResultsTableError(f"{path}: {error}") from None
    return pages


def _stale_figures(docs: Path, rows: list[Row]) -> list[tuple[Path, Row]]:
    """The results folders (``rows`` of ``docs``/results, and those under ``docs``/sweeps) whose
    results.png does not record the digest of their results as read now: (root, row) each."""
    stale = []
    try:
        folders = [(docs / "results", row) for row in rows]
        if (docs / "sweeps").is_dir():
            folders += [(docs / "sweeps", row) for row in collect(docs / "sweeps")]
        for root, row in folders:
            content = read_file(root, f"{row.folder}/{ResultsFolder.FIGURE}", MAX_FIGURE_BYTES)
            if png_digest(content) != results_digest(row.results):
                stale.append((root, row))
    except (ResultsConflict, FolderFileError) as error:
        raise ResultsTableError(str(error)) from None
    return stale


def regenerate(docs: Path, write: bool) -> TableState:
    """The paper rows' tables and the summary table of ``docs``/results.md, the figure
    ``docs``/results/summary.png and, where the checkout has one (``docs``/../README.md), README.md's
    tables of the paper rows, from ``docs``/results/**/results.json and the tested changes under
    ``docs``; with ``write``, all brought up to date."""
    document_path, results_dir = docs / "results.md", docs / "results"
    readme_path = docs.parent / "README.md"
    figure = results_dir / "summary.png"
    try:
        rows = collect(results_dir)
    except ResultsConflict as error:
        raise ResultsTableError(str(error)) from None
    table = render(rows)
    papers = paper_rows(rows, docs)
    document, updated = _replaced(document_path, BEGIN, END, table, "summary-table")
    if README_BEGIN in updated:  # the paper rows' tables, where the document has their markers
        try:
            updated = replace_between(updated, README_BEGIN, README_END, render_paper_tables(papers, ""),
                                      "paper-rows")
        except ValueError as error:
            raise ResultsTableError(f"{document_path}: {error}") from None
    try:
        updated = fill_figures(updated, docs)
    except FiguresError as error:
        raise ResultsTableError(f"{document_path}: {error}") from None
    files = [(document_path, document, updated, f"the tables of {document_path}")] + _pages_with_figures(docs)
    if readme_path.is_file():
        readme, readme_updated = _replaced(readme_path, README_BEGIN, README_END,
                                           render_paper_tables(papers, "docs/"), "paper-rows")
        files.append((readme_path, readme, readme_updated, f"the paper-rows section of {readme_path}"))
    points = summary_points(rows)
    stale = [what for _, old, new, what in files if old != new]
    if summary_digest(figure) != points_digest(points):
        stale.insert(1, f"the figure {figure}")
    figures = _stale_figures(docs, rows)
    if figures:
        first = figures[0][0] / figures[0][1].folder / ResultsFolder.FIGURE
        stale.append(f"the {ResultsFolder.FIGURE} of {len(figures)} results folder{'s' if len(figures) > 1 else ''} "
                     f"(the first: {first})")
    if write:
        for path, old, new, _ in files:
            if old != new:
                write_atomically(path, new.encode("utf-8"))
        if summary_digest(figure) != points_digest(points):
            draw_summary(points, figure)
        try:
            for root, row in figures:
                if ResultsFolder(root / row.folder, within=root).holder() is None:  # (a run writing it redraws it)
                    write_file(root, f"{row.folder}/{ResultsFolder.FIGURE}", results_figure(row.results))
        except (OutputError, ResultsConflict) as error:
            raise ResultsTableError(str(error)) from None
    return TableState(table, len(rows), tally(papers).replace("**", ""), stale)
