"""Why a paper row differs: the changes tested against it, each judged by its results.

A paper row that differs from its paper is explained only by a measured change: a results folder
(an extension row, a row run with other options, or a sweep's settings) whose trials, judged
against the *paper row's* published figures and trial count, reproduce it. `TESTED` names, for
each paper row, the changes tried so far and where their trials are (a folder under docs/). A
sweep folder (`lstmgraph sweep --out docs/sweeps/NAME`) counts each of its settings but the own
as one change.

A change is judged as a paper row is (`verdict.settled_outcome`): run to the paper's trial count,
its verdict; fewer trials, the verdict no outcome of the trials not run could change, else it is
open. So a sweep setting of 10 trials rules out a change only when 20 more trials could not
bring a 30-trial row back (issue 38: "enough trials that the interval separates").

Issue 38 names the suspects a differing row is swept over (`SUSPECTS`); `ROW_SUSPECTS` lists those
our results name for each row, and each `TriedChange` the suspects it tests. A suspect stays
untested until a change testing it is settled (`Cause.untested`), so the cause column shows what
is left to run.

`row_cause` gives a row's `Cause`; docs/results.md and README.md show it in the paper rows' tables
(`paper_rows`), and the tally counts the rows a named change reproduces.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..limits import MAX_JSON_BYTES
from .catalogue import EXPERIMENTS
from .experiment import is_paper_row
from .folder import ResultsConflict, ResultsFolder
from .folder_files import FolderFileError, parse_json, read_file
from .sweep_report import JSON
from .reference import with_reference
from .verdict import DIFFERS, REPRODUCED, settled_outcome

#: What a tested change's trials say of the paper row.
REPRODUCES, RULED_OUT, OPEN = "reproduces", "ruled out", "open"

#: Issue 38's suspects for a differing row, in its order (its words).
FORGET_BIAS, INIT_RANGE, TARGETS, WIRING = "forget-gate bias", "initial weight range", "target coding", "the 1997 wiring"
TEST_STREAMS, RATE, MOMENTUM, EXACT = "test streams", "learning rate", "momentum", "exact RTRL"
SUSPECTS = (FORGET_BIAS, INIT_RANGE, TARGETS, WIRING, TEST_STREAMS, RATE, MOMENTUM, EXACT)


@dataclass(frozen=True)
class TriedChange:
    """A change to a paper row as the seeds define it, and the folder under docs/ holding its
    trials (a results folder, or a sweep folder whose settings are each one change).
    ``departure``: where the change contradicts a seed, the seed's words against it;
    ``suspects``: those of `SUSPECTS` it tests (a change of several tests each)."""

    change: str
    folder: str
    departure: str = ""
    suspects: tuple[str, ...] = ()
    #: The same change run on other rows of the paper: (row, folder under docs/). A folder
    #: results/NAME/ROW finds its siblings results/NAME/OTHER without them being listed.
    also_on: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class ChangeResult:
    """One tested change (a sweep setting: the change with its values) and its outcome."""

    change: str
    folder: str          # under docs/
    outcome: str         # REPRODUCES, RULED_OUT or OPEN
    trials: int
    tested: TriedChange
    #: Rows of the paper our reading reproduces and the same change makes differ, (row, folder): a
    #: change that reproduces one row is not the papers' net if it breaks another (`TriedChange.also_on`).
    contradicted_by: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Cause:
    """What the changes tested on a row say: those that reproduce it, rule out, or leave open."""

    results: tuple[ChangeResult, ...]
    untested: tuple[str, ...] = ()  # the row's suspects that no settled change tests

    def with_outcome(self, outcome: str) -> list[ChangeResult]:
        return [result for result in self.results if result.outcome == outcome]

    @property
    def named(self) -> bool:
        """A tested change reproduces the row."""
        return bool(self.with_outcome(REPRODUCES))


def _wiring(row: str) -> TriedChange:
    return TriedChange("the 2000 wiring, legal-set targets", f"results/{row}-2000-wiring", suspects=(WIRING, TARGETS))


#: Exact RTRL against the seeds: each paper's rule truncates the gradient.
_TRUNCATED = "the papers' rule truncates the gradient (seed 000, line 421; 001, line 935; 002, lines 103 and 151)"


def _exact(row: str) -> TriedChange:
    return TriedChange("exact RTRL", f"results/exact-rtrl/{row}", _TRUNCATED, suspects=(EXACT,))


def _exact_sweep(row: str) -> TriedChange:
    return TriedChange("exact RTRL", f"sweeps/{row}/exact-rtrl", _TRUNCATED, suspects=(EXACT,))


def _exact_gradient(row: str) -> TriedChange:
    """A sequence row's exact gradient by BPTT over each sequence (1997, NTO): exact RTRL's updates
    where only a sequence's last step has a target (docs/training.md, "Exact RTRL by BPTT")."""
    return TriedChange("the exact gradient (BPTT over each sequence: exact RTRL's updates)",
                       f"sweeps/{row}/exact-gradient", _TRUNCATED, suspects=(EXACT,))


def _output_gates_as_input(row: str) -> TriedChange:
    """The adding net's output gates biased as its input gates, -3 and -6 (6b's reproduction)."""
    return TriedChange("output-gate biases -3, -6 (the input gates')", f"sweeps/{row}/output-gate-bias")


#: The 2002 nets' forget gates started open, against the seed.
_FORGET_CLOSED = "seed 002 gives the forget-gate bias -2 (line 240)"


def _forget_open(row: str) -> TriedChange:
    return TriedChange("forget-gate bias +2", f"results/{row}-forget-open", _FORGET_CLOSED, suspects=(FORGET_BIAS,))


_SHORTCUT = "seed 000 gives the shortcut and 424 weights (lines 834-847)"
# The CNTO rows' forget-gate biases are +5 (the NTO net: seed 000, lines 907 and 932); the CERG
# net's, line 847, are the other the seed gives.
_CERG_BIASES = "the CERG net's forget-gate biases (0.5-2)"
# Seed 000 gives no CNTO error measure (line 927); its nets are experiment 1's (lines 904, 932),
# whose test is |error| < 0.49 (line 813).
_CERG_TEST = "the CERG test (0.49)"
_TESTS_1E5 = "test streams of 10^5 symbols"
_TESTS_10 = "10 test streams after each training stream"


def _no_shortcut(row: str, change: str = "no input-output shortcut (375 weights)") -> TriedChange:
    return TriedChange(change, f"results/no-shortcut/{row}", _SHORTCUT)


def _cerg_forget(row: str) -> tuple[TriedChange, ...]:
    return (_no_shortcut(row), TriedChange(_TESTS_1E5, f"results/test-streams-1e5/{row}", suspects=(TEST_STREAMS,)))


def _erg(row: str, wiring_sweep: bool = False) -> tuple[TriedChange, ...]:
    """Table 1: the 2000 wiring with legal-set targets; the targets alone; input-gate biases as
    negative as the output gates' (6b's reproduction); for the rows the wiring leaves
    unexplained, the wiring at other initial weight ranges."""
    tested = (_wiring(row), TriedChange("legal-set targets", f"sweeps/{row}/targets", suspects=(TARGETS,)),
              TriedChange("input-gate biases as the output gates'", f"sweeps/{row}/input-gate-bias"))
    if wiring_sweep:
        tested += (TriedChange("the 2000 wiring, legal-set targets, init range",
                                f"sweeps/{row}/wiring-init-range", "seed 001 gives the ERG nets [-0.2, 0.2] (line 1678)",
                                suspects=(WIRING, TARGETS, INIT_RANGE)),)
    return tested


#: The changes tested on each paper row (rows with none are absent).
TESTED: dict[str, tuple[TriedChange, ...]] = {
    "hochreiter1997-erg-4x1-lr0.1": _erg("hochreiter1997-erg-4x1-lr0.1"),
    "hochreiter1997-erg-3x2-lr0.1": _erg("hochreiter1997-erg-3x2-lr0.1", wiring_sweep=True),
    "hochreiter1997-erg-3x2-lr0.2": _erg("hochreiter1997-erg-3x2-lr0.2"),
    "hochreiter1997-erg-4x1-lr0.5": _erg("hochreiter1997-erg-4x1-lr0.5", wiring_sweep=True)
    + (_exact_sweep("hochreiter1997-erg-4x1-lr0.5"),),
    "hochreiter1997-erg-3x2-lr0.5": _erg("hochreiter1997-erg-3x2-lr0.5") + (_exact("hochreiter1997-erg-3x2-lr0.5"),),
    "hochreiter1997-adding-t100": (
        TriedChange("a linear output unit", "results/hochreiter1997-adding-t100-linear-output"),
        TriedChange("a linear output unit; rate, momentum", "sweeps/hochreiter1997-adding-t100/linear-output",
                    suspects=(RATE, MOMENTUM)),
        _exact_sweep("hochreiter1997-adding-t100"),
        _output_gates_as_input("hochreiter1997-adding-t100")),
    "hochreiter1997-adding-t500": (
        TriedChange("a linear output unit", "results/hochreiter1997-adding-t500-linear-output"),
        TriedChange("learning rate 1.0", "sweeps/hochreiter1997-adding-t500/learning-rate", suspects=(RATE,)),
        TriedChange("momentum 0.9", "sweeps/hochreiter1997-adding-t500/momentum", suspects=(MOMENTUM,)),
        _exact_gradient("hochreiter1997-adding-t500"),
        _output_gates_as_input("hochreiter1997-adding-t500")),
    "hochreiter1997-adding-t1000": (
        TriedChange("a linear output unit", "results/hochreiter1997-adding-t1000-linear-output"),
        TriedChange("momentum 0.9", "sweeps/hochreiter1997-adding-t1000/momentum", suspects=(MOMENTUM,)),
        TriedChange("learning rate 1.0", "sweeps/hochreiter1997-adding-t1000/learning-rate", suspects=(RATE,)),
        _exact_gradient("hochreiter1997-adding-t1000")),
    "gers2000-cerg-state-decay": (
        TriedChange(_TESTS_1E5, "results/test-streams-1e5/gers2000-cerg-state-decay", suspects=(TEST_STREAMS,)),
        TriedChange("state-decay constant", "sweeps/gers2000-cerg-state-decay/state-decay-constant")),
    "gers2000-cerg-forget": _cerg_forget("gers2000-cerg-forget"),
    "gers2000-cerg-forget-decay": _cerg_forget("gers2000-cerg-forget-decay") + (
        _exact_sweep("gers2000-cerg-forget-decay"),
        TriedChange("decay after every N streams, 375 weights",
                    "sweeps/gers2000-cerg-forget-decay/no-shortcut-decay-every")),
    "gers2000-cnto-forget-decay": (
        _no_shortcut("gers2000-cnto-forget-decay"),
        TriedChange(_CERG_BIASES, "sweeps/gers2000-cnto-forget-decay/forget-gate-bias", suspects=(FORGET_BIAS,)),
        _exact_sweep("gers2000-cnto-forget-decay"),
        TriedChange("between-class outputs not judged", "sweeps/gers2000-cnto-forget-decay/idle-not-judged"),
        TriedChange(_CERG_TEST, "sweeps/gers2000-cnto-forget-decay/tolerance-049",
                    also_on=(("gers2000-cnto-forget", "sweeps/gers2000-cnto-forget/tolerance-049/settings/0"),))),
    "gers2000-nto-forget-bias5": (_exact_gradient("gers2000-nto-forget-bias5"),),
    "gers2000-nto-forget-bias1": (
        TriedChange("forget-gate biases +2 and +3", "sweeps/gers2000-nto-forget-bias1/forget-gate-bias",
                    "seed 000 gives a smaller positive bias, e.g. 1 (line 913)", suspects=(FORGET_BIAS,)),
        _exact_gradient("gers2000-nto-forget-bias1")),
    "gers2000-cnto-forget": (
        TriedChange("between-class outputs not judged", "results/gers2000-cnto-forget-idle-not-judged"),
        TriedChange(_CERG_BIASES, "sweeps/gers2000-cnto-forget/forget-gate-bias", suspects=(FORGET_BIAS,)),
        TriedChange("the most active output judged", "results/gers2000-cnto-forget-most-active"),
        TriedChange("no target between classifications", "results/gers2000-cnto-forget-no-idle-target"),
        _no_shortcut("gers2000-cnto-forget-no-idle-target", "no target between classifications, no shortcut"),
        TriedChange(_CERG_TEST, "sweeps/gers2000-cnto-forget/tolerance-049")),
    **{row: (_exact(row), _forget_open(row)) for row in (
        "gers2002-pfg-cos-f10-peephole", "gers2002-pfg-cos-f25-peephole", "gers2002-pfg-tri-f10-peephole")},
    "gers2002-pfg-rec-f10-peephole": (
        _exact("gers2002-pfg-rec-f10-peephole"), _forget_open("gers2002-pfg-rec-f10-peephole"),
        TriedChange("exact RTRL with forget-gate bias +2", "sweeps/gers2002-pfg-rec-f10-peephole/exact-rtrl-forget-open",
                    f"{_TRUNCATED}; {_FORGET_CLOSED}", suspects=(EXACT, FORGET_BIAS)),
        TriedChange("exact RTRL at 10 and 100 times the rate", "sweeps/gers2002-pfg-rec-f10-peephole/exact-rtrl-rate",
                    departure=f"{_TRUNCATED}; seed 002 gives the rate 10^-5 (line 246)", suspects=(EXACT, RATE))),
    "hochreiter1997-multiplication-t100-nseq140": (
        TriedChange("learning rate 0.5 (the adding problem's)",
                    "sweeps/hochreiter1997-multiplication-t100-nseq140/learning-rate", suspects=(RATE,)),
        TriedChange("learning rate", "sweeps/hochreiter1997-multiplication-t100-nseq140/learning-rate-between",
                    suspects=(RATE,)),
        _output_gates_as_input("hochreiter1997-multiplication-t100-nseq140")),
    "hochreiter1997-temporal-order-6b": (
        TriedChange("learning rate 0.5 (6a's)", "sweeps/hochreiter1997-temporal-order-6b/learning-rate",
                    suspects=(RATE,)),
        TriedChange("the 2000 wiring (input shortcut, cell outputs the only recurrent sources)",
                    "sweeps/hochreiter1997-temporal-order-6b/wiring", suspects=(WIRING,)),
        TriedChange("the input shortcut", "sweeps/hochreiter1997-temporal-order-6b/input-shortcut", suspects=(WIRING,)),
        TriedChange("cell outputs the only recurrent sources", "sweeps/hochreiter1997-temporal-order-6b/cell-sources-only",
                    suspects=(WIRING,)),
        _exact_gradient("hochreiter1997-temporal-order-6b"),
        TriedChange("6,000,000 sequences", "sweeps/hochreiter1997-temporal-order-6b/max-sequences"),
        TriedChange("output-gate biases", "sweeps/hochreiter1997-temporal-order-6b/output-gate-bias")),
    "gers2002-pfg-tri-f25-peephole": (
        TriedChange("forget-gate bias +2", "sweeps/gers2002-pfg-tri-f25-peephole/forget-open", _FORGET_CLOSED,
                    suspects=(FORGET_BIAS,)),),
    "gers2002-pfg-rec-f25-peephole": (
        TriedChange("forget-gate bias +2", "sweeps/gers2002-pfg-rec-f25-peephole/forget-open", _FORGET_CLOSED,
                    suspects=(FORGET_BIAS,)),
        _exact_sweep("gers2002-pfg-rec-f25-peephole")),
    "gers2002-pfg-cos-f10-no-peephole": (
        _forget_open("gers2002-pfg-cos-f10-no-peephole"),
        _exact_sweep("gers2002-pfg-cos-f10-no-peephole")),
    "gers2002-gts-no-peephole": (
        TriedChange(_TESTS_10, "results/test-streams-10/gers2002-gts-no-peephole", suspects=(TEST_STREAMS,)),),
    "gers2002-gts-no-forget": (
        TriedChange(_TESTS_10, "results/test-streams-10/gers2002-gts-no-forget", suspects=(TEST_STREAMS,)),
        TriedChange("the former coding: the delay as the cue", "sweeps/gers2002-gts-no-forget/cue-delay",
                    also_on=(("gers2002-gts-peephole", "results/cue-delay/gers2002-gts-peephole"),))),
}


_ERG_SUSPECTS = (TARGETS, WIRING, INIT_RANGE, EXACT)  # results/erg-gap.md
_LONG_LAGS = (RATE, MOMENTUM, EXACT)  # issue 38: "learning rate and momentum at long lags"

#: The suspects of issue 38's list that our results name for each paper row that may differ.
ROW_SUSPECTS: dict[str, tuple[str, ...]] = {
    **{row: _ERG_SUSPECTS for row in (
        "hochreiter1997-erg-4x1-lr0.1", "hochreiter1997-erg-3x2-lr0.1", "hochreiter1997-erg-3x2-lr0.2",
        "hochreiter1997-erg-4x1-lr0.5", "hochreiter1997-erg-3x2-lr0.5")},
    **{f"hochreiter1997-adding-t{length}": _LONG_LAGS for length in (100, 500, 1000)},
    "hochreiter1997-multiplication-t100-nseq140": (RATE,),
    "hochreiter1997-temporal-order-6b": (RATE, WIRING, EXACT),
    **{row: (TEST_STREAMS, EXACT) for row in ("gers2000-cerg-forget", "gers2000-cerg-forget-decay")},
    **{row: (FORGET_BIAS, EXACT) for row in ("gers2000-cnto-forget", "gers2000-cnto-forget-decay")},
    "gers2000-nto-forget-bias1": (FORGET_BIAS, EXACT),  # +1 lets a cell keep 0.73 a step: the lag's signal vanishes
    "gers2000-nto-forget-bias5": (EXACT,),
    **{f"gers2002-pfg-{wave}-peephole": (EXACT, FORGET_BIAS) for wave in (
        "cos-f10", "cos-f25", "tri-f10", "rec-f10", "tri-f25", "rec-f25")},
    "gers2002-pfg-cos-f10-no-peephole": (EXACT, FORGET_BIAS),
    **{row: (TEST_STREAMS,) for row in ("gers2002-gts-no-peephole", "gers2002-gts-no-forget")},
}


class CauseError(Exception):
    """A tested change's folder cannot be read; the message names it."""


def _outcome(results: dict[str, Any], published: dict[str, Any], paper_trials: int) -> str:
    """A change's trials as a paper row's: `settled_outcome` over the trials the paper ran."""
    left = max(paper_trials - results["summary"]["trials"], 0)
    return {REPRODUCED: REPRODUCES, DIFFERS: RULED_OUT}.get(settled_outcome(results, left, published, paper_trials),
                                                           OPEN)


def _read_results(folder: Path, published: dict[str, Any], docs: Path) -> dict[str, Any]:
    """A tested change's results, with the row its ``published`` ratio names (`with_reference`:
    beside the folder, else that row's own under ``docs``/results)."""
    try:
        return with_reference(ResultsFolder.read_only(folder).read_results(), folder, published, docs / "results")
    except (OSError, ResultsConflict) as error:
        raise CauseError(f"{folder}: a tested change's results cannot be read ({error})") from None


def _sweep_settings(folder: Path, row: str) -> list[tuple[str, Path]]:
    """A sweep folder's settings but the row itself (a setting of no change: the sweep of a row
    runs the row's own setting): (the values of the keys it varies, in words; its results folder).
    A key given one value is the sweep's change itself, named by `TriedChange.change`. sweep.json
    is read as a results folder's files are: no link followed, its size and its JSON bounded."""
    path = folder / JSON
    try:
        content = read_file(folder, JSON, MAX_JSON_BYTES)
        if content is None:
            raise FolderFileError(f"{path}: no such file")
        document = parse_json(content, str(path))
        varied = [key for key, values in document["keys"].items() if len(values) > 1]
        settings = [(", ".join(f"{key} {json.dumps(setting['values'][key])}" for key in varied),
                     folder / setting["folder"]) for setting in document["settings"]
                    if setting["experiment"] != row]
    except (FolderFileError, KeyError, TypeError, AttributeError) as error:
        raise CauseError(f"{path}: a tested sweep cannot be read ({error})") from None
    if any(not setting.resolve().is_relative_to(folder.resolve()) for _, setting in settings):
        raise CauseError(f"{path}: a setting's folder lies outside the sweep")
    return settings


def _siblings(tested: TriedChange, row: str, docs: Path) -> list[tuple[str, str]]:
    """The other rows of ``row``'s paper the same change was run on, (row, folder under docs/):
    those ``tested`` lists, and for a folder results/NAME/ROW each paper row's results/NAME/OTHER."""
    pairs = list(tested.also_on)
    parts = tested.folder.split("/")
    if len(parts) == 3 and parts[0] == "results" and parts[2] == row and row in EXPERIMENTS:
        paper = EXPERIMENTS[row].paper
        pairs += [(other, f"results/{parts[1]}/{other}") for other, experiment in EXPERIMENTS.items()
                  if other != row and experiment.paper == paper and is_paper_row(experiment)
                  and (docs / "results" / parts[1] / other / ResultsFolder.RESULTS).is_file()]
    return pairs


def _contradicting(tested: TriedChange, row: str, docs: Path) -> tuple[tuple[str, str], ...]:
    """The sibling rows (`_siblings`) that our reading reproduces (docs/results/OTHER) and whose
    trials under the same change differ, each judged as a tested change is (`_outcome`)."""
    found = []
    for other, folder in _siblings(tested, row, docs):
        own = docs / "results" / other
        if (docs / folder / ResultsFolder.RESULTS).is_file() and (own / ResultsFolder.RESULTS).is_file():
            experiment = EXPERIMENTS[other]
            judged = [_outcome(_read_results(path, experiment.published, docs), experiment.published, experiment.trials)
                      for path in (own, docs / folder)]
            if judged == [REPRODUCES, RULED_OUT]:
                found.append((other, folder))
    return tuple(found)


def row_cause(row: str, published: dict[str, Any], paper_trials: int, docs: Path) -> Cause:
    """The outcome of every change `TESTED` on ``row``, judged against its ``published`` figures
    and ``paper_trials``, from the folders under ``docs``. A folder not there yet (a sweep not run)
    is left out. `CauseError` names a folder that is there but cannot be read."""
    results = []
    for tested in TESTED.get(row, ()):
        folder = docs / tested.folder
        if (folder / JSON).is_file():
            pieces = [(f"{tested.change}: {values}" if values else tested.change, path)
                      for values, path in _sweep_settings(folder, row)]
        elif (folder / ResultsFolder.RESULTS).is_file():
            pieces = [(tested.change, folder)]
        else:
            continue
        for change, path in pieces:
            if not (path / ResultsFolder.RESULTS).is_file():
                continue
            found = _read_results(path, published, docs)
            outcome = _outcome(found, published, paper_trials)
            results.append(ChangeResult(change, path.relative_to(docs).as_posix(), outcome,
                                        found["summary"]["trials"], tested,
                                        _contradicting(tested, row, docs) if outcome == REPRODUCES else ()))
    settled = {suspect for result in results if result.outcome != OPEN for suspect in result.tested.suspects}
    return Cause(tuple(results), tuple(suspect for suspect in ROW_SUSPECTS.get(row, ()) if suspect not in settled))
