"""The numbers in the docs that drift as the tool changes are held to what the tool does:
README's experiment count, its tally of the paper rows and every other number in it, the files
`reproduce` writes (docs/results.md), every example of docs/api.md run as a script, its printed
lines against the doc's, and the --specs folders that docs/results.md's commands name; README is
short (no sentence or table cell over 40 words, a spec of ten lines that compiles); every relative
link (and #anchor) of README.md, docs/*.md and docs/results/*.md resolves, the bundled-spec counts
and tables are true, the error examples list the keys the validator lists,
docs/architecture.md's module table names every module, and each `$ lstmgraph ...` transcript
but the slow ones prints what the doc shows."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import lstmgraph
from lstmgraph.experiments import EXPERIMENTS

from conftest import REPO, SPECS

README = (REPO / "README.md").read_text(encoding="utf-8")
API_EXAMPLES = re.findall(r"```python\n(.*?)```", (REPO / "docs" / "api.md").read_text(encoding="utf-8"), re.S)


def test_readme_counts_the_experiments():
    (count,) = re.findall(r"names the (\d+) experiments", README)
    assert int(count) == len(EXPERIMENTS)


@pytest.mark.parametrize("path", sorted((REPO / "docs" / "results").glob("*/*.yaml")), ids=lambda path: path.parent.name)
def test_a_specs_folder_of_the_results_holds_a_bundled_net_under_a_row_s_file_name(path):
    """`reproduce ROW --specs docs/results/FOLDER` reads FOLDER/<the row's spec file>: each spec
    there compiles, its file name is one the catalogue's rows read, and it has the weights of
    the bundled spec it names (exact-rtrl: the same net; no-shortcut: the 375-weight one)."""
    plan = lstmgraph.compile_spec(path)
    assert path.stem in {experiment.spec for experiment in EXPERIMENTS.values()}
    assert plan.n_parameters == lstmgraph.compile_spec(SPECS / f"{plan.name}.yaml").n_parameters


def test_the_results_page_lists_the_files_reproduce_writes():
    """The files of `layouts.RESULTS_FOLDER`, which a run writes (tests/experiments/test_schedule.py)."""
    from lstmgraph.layouts import RESULTS_FOLDER

    results = (REPO / "docs" / "results.md").read_text(encoding="utf-8")
    (row,) = [line for line in results.splitlines() if line.startswith("- **Files**: it writes ")]
    listed = {name.split("/")[0] for name in re.findall(r"`([^`]+)`", row.split(" writes ", 1)[1].split(" to `DIR`")[0])
              if "." in name or name.endswith("/")}
    assert listed == {*RESULTS_FOLDER.files, "trials"}


def printed_lines(code: str) -> list[str]:
    """What an example says it prints: the comment on each `print(...)` line and the comment
    lines right after it (stripped, as the doc indents them)."""
    lines, after_print = [], False
    for line in code.splitlines():
        stripped = line.strip()
        if stripped.startswith("#"):
            if after_print:
                lines.append(stripped[1:].strip())
            continue
        after_print = stripped.startswith("print(")
        if after_print and "  # " in line:
            lines.append(line.split("  # ", 1)[1].strip())
    return lines


def test_printed_lines_are_read_from_comments():
    code = 'x = 1  # not output\nprint(x)  # 1\nprint("a\\nb")\n# a\n#   b\n\n# a remark\n'
    assert printed_lines(code) == ["1", "a", "b"]


@pytest.mark.parametrize("index", range(len(API_EXAMPLES)))
def test_api_examples_print_what_the_doc_says(index, tmp_path):
    """Each example runs in a folder outside the repository, as after ``pip install``: a spec
    it names is a bundled spec's name, not the checkout's ``specs/`` path."""
    script = tmp_path / f"example_{index}.py"
    script.write_text(API_EXAMPLES[index], encoding="utf-8")
    result = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True,
                            timeout=600)
    assert result.returncode == 0, result.stderr
    assert [line.strip() for line in result.stdout.splitlines()] == printed_lines(API_EXAMPLES[index])


# -- links and the bundled specs ---------------------------------------------------------------------

DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md")), *sorted((REPO / "docs" / "results").glob("*.md"))]
_LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")


def _without_code(text: str) -> str:
    """The text with fenced code blocks and inline code removed (links there are not links)."""
    text = re.sub(r"```.*?```", "", text, flags=re.S)
    return re.sub(r"`[^`\n]*`", "", text)


def relative_links(path) -> list[str]:
    """The targets of the file's Markdown links and images that point into the repository."""
    targets = _LINK.findall(_without_code(path.read_text(encoding="utf-8")))
    return [target for target in targets if not re.match(r"[a-z][a-z0-9+.-]*:", target) and not target.startswith("#")]


def test_relative_links_are_found():
    assert relative_links(REPO / "README.md")  # the docs table links every page
    assert "spec.md#data-files" in relative_links(REPO / "docs" / "plots.md")


def anchors(path) -> set[str]:
    """The #anchors of a Markdown file's headings, as GitHub makes them: lower case, spaces to
    hyphens, other punctuation dropped, a repeated heading's anchor numbered -1, -2, ..."""
    found: set[str] = set()
    text = re.sub(r"```.*?```", "", path.read_text(encoding="utf-8"), flags=re.S)
    for heading in re.findall(r"^#{1,6} +(.*?) *#*$", text, re.M):
        anchor = re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")
        numbered, count = anchor, 0
        while numbered in found:
            count += 1
            numbered = f"{anchor}-{count}"
        found.add(numbered)
    return found


def test_anchors_are_made_as_github_makes_them(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("# Stage 4: the lowered program (`lstmgraph/program`, `x.py`)\n## A b\n## A b\n```\n# no\n```\n")
    assert anchors(page) == {"stage-4-the-lowered-program-lstmgraphprogram-xpy", "a-b", "a-b-1"}


@pytest.mark.parametrize("path", DOCS, ids=lambda path: path.relative_to(REPO).as_posix())
def test_every_relative_link_resolves(path):
    """Every link of README.md, docs/*.md and docs/results/*.md to a file or folder of the
    repository names one that exists, and a #anchor into a Markdown file names one of its headings."""
    missing, no_heading = [], []
    for target in relative_links(path) + [f"{path.name}{target}" for target in _local_anchors(path)]:
        name, _, anchor = target.partition("#")
        linked = path.parent / name
        if not linked.exists():
            missing.append(target)
        elif anchor and linked.suffix == ".md" and anchor not in anchors(linked):
            no_heading.append(target)
    assert not missing, f"{path.name} links to files that do not exist: {missing}"
    assert not no_heading, f"{path.name} links to headings that do not exist: {no_heading}"


def _local_anchors(path) -> list[str]:
    """The file's links to its own headings (``[text](#anchor)``)."""
    return [target for target in _LINK.findall(_without_code(path.read_text(encoding="utf-8")))
            if target.startswith("#")]


_NUMBER_WORDS = {"ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15,
                 "sixteen": 16, "seventeen": 17, "eighteen": 18, "nineteen": 19, "twenty": 20}


def test_the_bundled_spec_counts_the_docs_state_are_true():
    """"all 14 bundled specs" and the like, wherever the docs say how many there are."""
    bundled = sorted(path.stem for path in SPECS.glob("*.yaml"))
    stated = []
    for path in DOCS:
        for word in re.findall(r"\b(\d+|[a-z]+) bundled specs\b", path.read_text(encoding="utf-8"), re.I):
            number = int(word) if word.isdigit() else _NUMBER_WORDS.get(word.lower())
            if number is not None:
                stated.append((path.name, number))
    assert all(number == len(bundled) for _, number in stated), (stated, len(bundled))


@pytest.mark.parametrize("path", DOCS, ids=lambda path: path.relative_to(REPO).as_posix())
def test_a_table_of_the_bundled_specs_lists_each_with_its_compiled_parameter_count(path):
    """A table whose rows start with a bundled spec's file and end with a count: every bundled
    spec, each once, with the count `compile_spec` gives."""
    rows = re.findall(r"^\| `specs/(\w+)\.yaml` \|.*\| (\d+) \|$", path.read_text(encoding="utf-8"), re.M)
    if not rows:
        assert path.name != "spec.md", "docs/spec.md's table of the bundled specs is gone"
        return
    assert sorted(name for name, _ in rows) == sorted(path.stem for path in SPECS.glob("*.yaml"))
    for name, count in rows:
        assert int(count) == lstmgraph.compile_spec(SPECS / f"{name}.yaml").n_parameters, name


def _expected_keys(connection_key: str) -> dict[str, str]:
    """What the validator lists as a connection's and a hidden group's keys."""
    from lstmgraph.errors import SpecError

    data = {"version": 1, "groups": [{"name": "x", "kind": "input", "size": 1},
                                     {"name": "h", "kind": "hidden", "size": 1, "activaton": "tanh"},
                                     {"name": "y", "kind": "output", "size": 1}],
            "connections": [{"from": "x", "to": "h"}, {"from": "h", "to": "y", connection_key: 1}]}
    with pytest.raises(SpecError) as caught:
        lstmgraph.spec_from_data(data)
    return {problem.path[0]: problem.expected for problem in caught.value.problems}


@pytest.mark.parametrize("path", DOCS, ids=lambda path: path.relative_to(REPO).as_posix())
def test_the_error_examples_list_the_keys_the_validator_lists(path):
    """Wherever the docs show a validator's message (docs/spec.md must), it lists the keys the
    validator lists."""
    expected = _expected_keys("dealy")
    shown = re.findall(r"^  expected: (one of from, .*)$", path.read_text(encoding="utf-8"), re.M)
    assert shown or path.name != "spec.md", "docs/spec.md's error example is gone"
    assert all(line == expected["connections"] for line in shown), (shown, expected)
    groups = re.findall(r"^  expected: (one of kind, .*)$", path.read_text(encoding="utf-8"), re.M)
    assert all(line == expected["groups"] for line in groups), (groups, expected)


# -- README.md for a reader in a hurry -----------------------------------------------------------------

MAX_WORDS = 40


def _prose_and_cells(text: str) -> tuple[list[str], list[str]]:
    """The sentences of a Markdown text (outside code blocks, HTML comments and tables: each
    paragraph, list item or heading split after '. ', '? ', '! ' and '; ') and its table cells
    (split on unescaped '|', the header separators left out)."""
    text = re.sub(r"```.*?```", "", text, flags=re.S)
    text = re.sub(r"<!--.*?-->", "", text, flags=re.S)
    sentences, cells, paragraph = [], [], []
    for line in text.splitlines() + [""]:
        stripped = line.strip()
        if stripped.startswith("|"):
            cells += [cell.strip() for cell in re.split(r"(?<!\\)\|", stripped.strip("|"))
                      if not re.fullmatch(r":?-+:?", cell.strip())]
        if not stripped or stripped.startswith(("|", "#", "- ", "* ")):
            if paragraph:
                sentences += re.split(r"(?<=[.?!;])\s+", " ".join(paragraph))
            paragraph = [stripped] if stripped.startswith(("#", "- ", "* ")) else []
            continue
        paragraph.append(stripped)
    return [s for s in sentences if s], cells


def _words(text: str) -> int:
    return len(text.split())


def test_sentences_and_cells_are_split_as_a_reader_reads_them():
    sentences, cells = _prose_and_cells("# A title\n\nOne. Two words\nhere; three.\n\n```\nno. code\n```\n"
                                        "| a | b c |\n|---|---|\n| `x \\| y` | d |\n- an item. Two\n")
    assert sentences == ["# A title", "One.", "Two words here;", "three.", "- an item.", "Two"]
    assert cells == ["a", "b c", "`x \\| y`", "d"]


def test_no_sentence_or_table_cell_of_the_readme_runs_over_40_words():
    sentences, cells = _prose_and_cells(README)
    assert len(sentences) > 10 and len(cells) > 100  # the prose and the tables are read
    long = [text for text in sentences + cells if _words(text) > MAX_WORDS]
    assert not long, [f"{_words(text)} words: {text[:80]}..." for text in long]


def test_no_page_of_the_docs_has_a_sentence_or_cell_over_40_words():
    over = {}
    for page in sorted((REPO / "docs").rglob("*.md")):
        sentences, cells = _prose_and_cells(page.read_text(encoding="utf-8"))
        long = [f"{_words(text)} words: {text[:80]}..." for text in sentences + cells if _words(text) > MAX_WORDS]
        if long:
            over[page.relative_to(REPO).as_posix()] = long
    assert not over, over


def test_the_readme_and_results_md_state_the_tally_the_generator_computes():
    """"N of M paper rows reproduced as the seeds define them; K more with a named change; L
    unexplained", with M the catalogue's rows not marked "our extension", as `lstmgraph results`
    computes it from docs/results and the tested changes (staleness: tests/cli/test_results.py)."""
    from lstmgraph.experiments.paper_rows import NOT_RUN, is_paper_row, paper_rows, render_paper_tables, tally
    from lstmgraph.experiments.results_table import README_BEGIN, README_END, collect

    rows = paper_rows(collect(REPO / "docs" / "results"), REPO / "docs")
    assert [row.name for row in rows] == [name for name, e in EXPERIMENTS.items() if is_paper_row(e)]
    results_md = (REPO / "docs" / "results.md").read_text(encoding="utf-8")
    for document, prefix in ((README, "docs/"), (results_md, "")):
        generated = document.split(README_BEGIN, 1)[1].split(README_END, 1)[0]
        assert generated.strip() == render_paper_tables(rows, prefix).strip()
        assert generated.lstrip().startswith(tally(rows))  # the tally at the top of the tables
    (stated,) = re.findall(r"\*\*(\d+) of (\d+) paper rows reproduced as the seeds define them\*\*; (\d+) more "
                           r"with a named change(?: \((\d+) breaking a row our reading "
                           r"reproduces\))?; (\d+) unexplained", README)
    differs = [row for row in rows if row.verdict == "differs"]
    contradicted = sum(row.contradicted for row in differs)
    assert tuple(int(n) if n else 0 for n in stated) == (
        sum(row.verdict == "reproduced" for row in rows), len(rows), sum(row.named for row in differs), contradicted,
        sum(not row.named for row in differs))
    assert all(row.verdict != NOT_RUN for row in rows), "a paper row has no results folder"


def test_the_readme_holds_its_parts_in_order_with_a_short_spec_that_trains(tmp_path):
    from lstmgraph.experiments.results_table import README_BEGIN

    commands = ("```bash\nbash setup.sh && .venv/bin/lstmgraph train specs/gers2000_cerg.yaml\n"
                "bash setup.sh && .venv/bin/python -m pytest -q\n```")
    assert commands in README and README.index(commands) == README.index("```")  # the first code block
    intro = README.split("```", 1)[0].split("\n", 1)[1]
    assert len(re.split(r"(?<=\.)\s+", intro.strip())) == 3  # what it is, in three sentences
    (spec,) = re.findall(r"```yaml\n(.*?)```", README, re.S)
    assert len(spec.splitlines()) <= 11
    (tmp_path / "tiny.yaml").write_text(spec)
    plan = lstmgraph.compile_spec(tmp_path / "tiny.yaml")
    assert plan.n_parameters > 0 and plan.training is not None and plan.training.task is not None
    order = [README.index(part) for part in (commands, "```yaml", README_BEGIN, "## Commands", "## Documentation")]
    assert order == sorted(order)
    for command in ("lstmgraph specs", "lstmgraph results", "lstmgraph evaluate RUN_DIR [--data FILE]",
                    "lstmgraph plot RUN_DIR... [--data FILE]"):
        assert f"| `{command}" in README, command


def test_every_number_in_the_readme_is_generated_or_checked_here():
    """Outside the generated tables, code and links, the README's numbers are the papers' years,
    the experiment count (test_readme_counts_the_experiments) and the 40-word limit's own."""
    from lstmgraph.experiments.catalogue import G00, G02, H97
    from lstmgraph.experiments.results_table import README_BEGIN, README_END

    head, rest = README.split(README_BEGIN, 1)
    text = head + rest.split(README_END, 1)[1]
    text = _without_code(re.sub(r"\]\([^)]*\)", "]", text))
    numbers = {int(number.replace(",", "")) for number in re.findall(r"\b\d[\d,]*\b", text)}
    years = {int(year) for paper in (H97, G00, G02) for year in re.findall(r"\d{4}", paper)}
    assert numbers <= years | {len(EXPERIMENTS)}, numbers - years - {len(EXPERIMENTS)}


def test_the_architecture_page_names_every_module():
    """docs/architecture.md's table covers "every module" (README): each lstmgraph/ and cli/ module
    by its path, or by its file name on a row that names a module of its folder."""
    text = (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")
    lines = text.splitlines()
    missing = []
    for path in sorted([*(REPO / "lstmgraph").rglob("*.py"), *(REPO / "cli").glob("*.py")]):
        name = path.relative_to(REPO).as_posix()
        folder = name.rsplit("/", 1)[0] + "/"
        if f"`{name}`" not in text and not any(f"`{path.name}`" in line and f"`{folder}" in line for line in lines):
            missing.append(name)
    assert not missing


# -- the `$ lstmgraph ...` transcripts -----------------------------------------------------------------

#: Transcripts not run here, by their first command: each takes longer than a test should.
SLOW_TRANSCRIPTS = {
    # two 80,000-step trainings; tests/specs/test_textbook_models.py holds their printed losses
    "lstmgraph train specs/textbook_single_forget_gate.yaml --out /tmp/single",
    # two CERG trainings and a 300-step plot of both (about 6 s)
    "lstmgraph train gers2000_cerg --out /tmp/runs/forget_gates --quiet",
    # two million CERG steps (about 12 s) and its evaluation
    "lstmgraph train specs/gers2000_cerg.yaml --steps 2000000 --out /tmp/cerg2m --quiet",
}


def transcripts() -> list[tuple[str, list[str], list[str]]]:
    """The fenced blocks of README.md and docs/*.md that begin with `$ `: per block its page, its
    commands and the lines it shows as their output (standard output and error, as a terminal)."""
    found = []
    for path in [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]:
        for block in re.findall(r"^```\n(\$ .*?)^```", path.read_text(encoding="utf-8"), re.S | re.M):
            commands = [line[2:] for line in block.splitlines() if line.startswith("$ ")]
            shown = [line.rstrip() for line in block.splitlines() if not line.startswith("$ ")]
            found.append((path.name, commands, shown))
    return found


TRANSCRIPTS = transcripts()


def test_transcripts_are_found():
    assert {page for page, _, _ in TRANSCRIPTS} >= {"training.md", "plots.md", "spec.md"}
    assert SLOW_TRANSCRIPTS <= {commands[0] for _, commands, _ in TRANSCRIPTS}


def lines_match(shown: list[str], printed: list[str]) -> bool:
    """Whether the printed lines are the shown ones, a shown line `...` standing for any lines."""
    if not shown:
        return not printed
    if shown[0].strip() == "...":
        return any(lines_match(shown[1:], printed[k:]) for k in range(len(printed) + 1))
    return bool(printed) and printed[0] == shown[0] and lines_match(shown[1:], printed[1:])


def test_an_elided_transcript_matches_what_it_leaves_out():
    assert lines_match(["a", "  ...", "d"], ["a", "b", "c", "d"])
    assert lines_match(["a", "...", "b"], ["a", "b"])
    assert not lines_match(["a", "...", "d"], ["a", "b", "c"])
    assert not lines_match(["a"], ["a", "b"])


def writes_what_it_reads(command: str, script: str) -> bool:
    """Whether the command writes a run directory (`--out /tmp/DIR`) that the script names."""
    out = re.search(r"--out (/tmp/\S+)", command)
    return bool(out) and re.search(rf"{re.escape(out.group(1))}(/|\s|$)", script) is not None


@pytest.mark.parametrize("index", [pytest.param(i, id=f"{page}: {commands[0][:60]}")
                                   for i, (page, commands, _) in enumerate(TRANSCRIPTS)
                                   if commands[0] not in SLOW_TRANSCRIPTS])
def test_a_transcript_prints_what_the_doc_shows(index, tmp_path):
    """Each `$ lstmgraph ...` transcript, run as a shell script in a folder that stands for the
    repository root (its specs/ and docs/), /tmp/ a folder of the test's. First run the commands of
    earlier transcripts of the page that write a run directory it reads; the page's specs with a
    name (training.md's `blowup.yaml`) are saved as NAME.yaml. Progress lines, which a terminal
    overwrites, and notes (the first compilation's) are left out."""
    page, commands, shown = TRANSCRIPTS[index]
    text = (REPO / page if page == "README.md" else REPO / "docs" / page).read_text(encoding="utf-8")
    for spec, name in re.findall(r"```yaml\n(version: 1\nname: (\w+)\n.*?)```", text, re.S):
        (tmp_path / f"{name}.yaml").write_text(spec)
    for name in ("specs", "docs"):
        (tmp_path / name).symlink_to(REPO / name)
    (tmp_path / "tmp").mkdir()
    script = "\n".join(commands)
    setup = [command for earlier_page, earlier, _ in TRANSCRIPTS[:index] if earlier_page == page
             for command in earlier if writes_what_it_reads(command, script)]
    lines = ["exec 2>&1", *(f"{command} >/dev/null" for command in setup), script]
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    result = subprocess.run(["bash", "-c", "\n".join(lines).replace("/tmp/", f"{tmp_path}/tmp/")], cwd=tmp_path,
                            env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120)
    printed = [line.rstrip().replace(f"{tmp_path}/tmp/", "/tmp/") for line in result.stdout.splitlines()
               if not re.match(r"training \S+: [\d,]+/[\d,]+ steps|note: ", line)]
    assert lines_match(shown, printed), "\n".join(printed)


def test_no_table_outside_the_generated_ones_copies_a_results_folder_s_figures():
    """A table line that links a results folder (a folder holding results.json) lies within a
    generated figures table (`lstmgraph results --write`), so that its figures cannot go stale."""
    generated = re.compile(r"<!-- (figures of|summary table|paper rows).*?<!-- end of the generated [a-z ]+-->", re.S)
    copied = []
    for page in [REPO / "docs" / "results.md", *sorted((REPO / "docs" / "results").glob("*.md"))]:
        text = generated.sub("", page.read_text(encoding="utf-8"))
        for line in (line for line in text.splitlines() if line.startswith("|")):
            for target in re.findall(r"\]\(([^)#\s]+)\)", line):
                if not target.startswith("http") and (page.parent / target / "results.json").is_file():
                    copied.append(f"{page.relative_to(REPO)}: {line[:80]}")
    assert not copied, "give these a figures marker instead:\n" + "\n".join(copied)


def test_every_committed_results_folder_keeps_its_rows_for_status_and_resume():
    """trials.jsonl is what `reproduce --status` and a resume read: a folder without it would
    run its finished trials again. Its rows are results.json's."""
    import json

    for results in sorted((REPO / "docs" / "results").rglob("results.json")):
        if "history" in results.relative_to(REPO / "docs" / "results").parts:
            continue
        rows = results.parent / "trials.jsonl"
        assert rows.is_file(), f"{rows.relative_to(REPO)} is missing"
        stored = [json.loads(line) for line in rows.read_text().splitlines()]
        expected = json.loads(results.read_text())["trials"]
        assert sorted(stored, key=lambda row: row["seed"]) == sorted(expected, key=lambda row: row["seed"]), rows


def test_the_spec_page_s_activation_table_lists_the_registry_s_activations():
    """docs/spec.md's table is the registry's, written by hand: an activation added to
    `operations.ACTIVATIONS` without its row (or a row left of one removed) fails here."""
    from lstmgraph.operations import ACTIVATIONS

    section = (REPO / "docs" / "spec.md").read_text(encoding="utf-8").split("## Activations", 1)[1].split("\n## ", 1)[0]
    listed = re.findall(r"^\| `(\w+)` \|", section, flags=re.MULTILINE)
    assert listed and set(listed) == set(ACTIVATIONS), set(listed) ^ set(ACTIVATIONS)
