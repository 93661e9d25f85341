"""A sweep's subject and grid (`lstmgraph sweep`): what is swept, and every setting of it.

The subject is a catalogue row (`catalogue.EXPERIMENTS`) or a user's own spec (a file, or a
bundled spec's name): its net, its training task (``training.task``) and a success test, the
task's own (`evaluate` judges by the same), under a default protocol (`spec_protocol`): a
stream protocol for a continual task, a sequence protocol otherwise. `SpecExperiment` is such a
spec as an `Experiment`, so each setting runs through `schedule.run_experiment` as a row does.

The grid is every combination of the ``--vary`` values (the first key outermost); each setting
is the subject with its keys applied in the order given (`sweep_keys.KEYS`), those whose value
is the subject's own left out: a setting whose values are all the subject's own is the subject
itself, unchanged (its trials are those `reproduce` runs). The own setting, which the paired
tests compare every setting with, has the subject's values for the keys varied and the value
given for a key given one value (a key fixed for the whole sweep); when the grid lacks it, it
is added at the end unless the caller asks otherwise.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import shlex
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ..arrays import plain
from ..bundled import close_names, find_spec
from ..errors import SpecError, shown
from ..layouts import SWEEP_FOLDER
from ..limits import MAX_TRIALS, check_count
from ..spec.loader import read_spec_file
from ..success import SuccessTest
from ..tasks import TASKS, task_success_test
from ..tasks.base import test_task
from ..tasks.data_file import DATA_FILE, pinned, spec_relative
from .catalogue import EXPERIMENTS
from .experiment import Experiment
from .protocols import Protocol
from .sequences import SequenceProtocol
from .streams import StreamProtocol
from .sweep_keys import resolve
from .sweep_values import MAX_SETTINGS, SweepError, checked_values, same_value, value_text

@dataclass(frozen=True)
class SpecExperiment(Experiment):
    """A user's spec file as an experiment: its data read from ``spec_file`` (not the bundled
    folder), its task and learning settings its own."""

    spec_file: str = ""

    def spec_path(self, specs: Path | None = None) -> Path:
        return Path(self.spec_file)

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "spec": self.spec_file}

    def with_task_options(self, options: dict[str, Any]) -> Experiment:
        """As a row's, and the sequence protocol's test set sized for the task's test draws
        (`spec_test_sequences`); a setting's own ``test_sequences``, applied after the task's
        options (`_applied`), replaces it."""
        changed = super().with_task_options(options)
        if isinstance(changed.protocol, SequenceProtocol) and "test_sequences" not in changed.protocol_options:
            sized = replace(changed.protocol, test_sequences=spec_test_sequences(changed.make_task()))
            changed = replace(changed, protocol=sized)
        return changed


def spec_test_sequences(task: Any) -> int:
    """A spec's test set under the sequence protocol: one sequence where every test draw is the
    same (a data file of one sequence, or a held-out file of one), else the protocol's 2,560."""
    return 1 if getattr(test_task(task), "deterministic", False) else SequenceProtocol.test_sequences


def spec_protocol(task: Any, test: SuccessTest) -> Protocol:
    """The protocol a spec runs under: for a continual task the 2002 stream protocol (training
    streams of up to 100 sequences, stopped at their first error; perfect when each test stream
    runs 1,000 sequences without one; one test stream for a deterministic task); otherwise the
    1997 sequence protocol (solved when the last 2,000 sequences were right; at most 10^6; a test
    of one sequence where the task's tests draw the same one every time, `spec_test_sequences`;
    a data file's tests draw from its held-out file where it has one)."""
    if task.continual:
        return StreamProtocol(tolerance=test.tolerance, success=test.name, unit="sequences", train_limit=100,
                              test_limit=1000, max_streams=1_000_000,
                              test_streams=1 if getattr(task, "deterministic", False) else 10, good_score=100)
    return SequenceProtocol(success=test.name, tolerance=test.tolerance, window=2000, max_sequences=1_000_000,
                            test_sequences=spec_test_sequences(task))


def row_protocol_keys(row: Experiment) -> dict[str, Any] | None:
    """The ``protocol.NAME`` values by which ``row``'s protocol differs from the one a spec of its
    task runs under (`spec_protocol`): a sweep of the row's ``--print-spec`` file given them runs
    the row's protocol. None where the two are of different kinds, which no key changes."""
    task = row.make_task()
    default = spec_protocol(task, task_success_test(row.task)[0])
    if type(default) is not type(row.protocol):
        return None
    differ = {f.name: getattr(row.protocol, f.name) for f in dataclasses.fields(row.protocol)
              if f.init and getattr(row.protocol, f.name) != getattr(default, f.name)}
    if row.protocol.success != "tolerance":  # a tolerance the row never reads is refused as a key
        differ.pop("tolerance", None)
    return differ


def row_protocol_note(row: Experiment) -> list[str]:
    """`reproduce ROW --print-spec`'s YAML comment lines: how to sweep the printed file under the
    row's protocol (`row_protocol_keys`), or that no key can."""
    keys = row_protocol_keys(row)
    head = f"# {row.name}'s net as it runs. Swept as a spec file, it runs under a spec's default protocol"
    if keys is None:
        return [head + ",", f"# and no protocol key gives it the row's {row.protocol.kind} protocol: "
                f"to change the row's net, sweep {row.name} with its keys (lstmgraph sweep {row.name} --keys)."]
    if not keys:
        return [head + ": the row's."]
    flags = (shlex.quote(f"protocol.{name}={value_text(value)}")
             for name, value in keys.items())
    return [head + ";", "# for the row's, add these to `lstmgraph sweep FILE`:",
            "#   " + " ".join(f"--vary {flag}" for flag in flags)]


@dataclass(frozen=True)
class Subject:
    """What is swept: the experiment, and in words what it is and how it is judged."""

    experiment: Experiment
    kind: str          # "catalogue row" or "spec"
    judged_by: str     # the protocol and test, in words
    spec_length: tuple[str, ...] = ()  # a spec's training length ("training.steps (20000)"), not a sweep's

    def length_note(self, budget_steps: int | None) -> str | None:
        """That the spec's training length does not cap the trials, where no --max-steps does."""
        if not self.spec_length or budget_steps is not None:
            return None
        protocol = self.experiment.protocol
        verb = "does" if len(self.spec_length) == 1 else "do"
        return (f"the spec's {' and '.join(self.spec_length)} {verb} not cap a sweep's trials: each runs until its "
                f"protocol ends it, at most {protocol.limit:,} {protocol.counted}; --max-steps N caps each trial at N "
                "steps")


def subject_of(argument: str, trials: int | None = None) -> Subject:
    """The catalogue row named ``argument``, else the spec it names (a file or a bundled spec),
    with ``trials`` (default: the row's, or 10 for a spec). `SweepError` names what is wrong; a
    spec's own problems raise `SpecError`; `limits.LimitError` a trial count out of range."""
    if trials is not None:
        check_count("the number of trials (--trials)", trials, MAX_TRIALS)
    if argument in EXPERIMENTS:
        row = EXPERIMENTS[argument]
        return Subject(row, "catalogue row", f"the row's protocol ({row.protocol.kind})")
    try:
        path = find_spec(argument)
    except SpecError as error:
        import difflib
        close = getattr(error, "files", None) or (difflib.get_close_matches(argument, EXPERIMENTS, n=2, cutoff=0.6)
                                                  + close_names(argument, count=2))
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        raise SweepError(f"{argument}: neither an experiment of the catalogue (`lstmgraph reproduce --list`) nor a "
                         f"spec file or bundled spec{hint}") from None
    data, _ = read_spec_file(path)
    training = data.get("training") if isinstance(data, dict) and isinstance(data.get("training"), dict) else {}
    task, field = training.get("task"), "training.task"
    if task is None and isinstance(training.get("data"), str):  # its sequences drawn at random, pinned
        task, field = {"name": DATA_FILE, "path": training["data"]}, "training.data"
    if not isinstance(task, dict) or not isinstance(task.get("name"), str):
        raise SweepError(f"{path}: no training.task or training.data; a sweep trains the net on a built-in task or "
                         "a data file (docs/spec.md in the lstmgraph source, Training), as `lstmgraph train` does")
    if task["name"] not in TASKS:
        raise SweepError(f"{path}: training.task: no task {task['name']!r}; the tasks: {', '.join(sorted(TASKS))}")
    options = spec_relative(task["name"], {key: value for key, value in task.items() if key != "name"}, path)
    from ..tasks import TaskError, make_task
    try:
        made = make_task(task["name"], options)
    except TaskError as error:
        raise SweepError(f"{path}: {field}: {error}") from None
    if task["name"] == DATA_FILE:  # every trial on the bytes the sweep began with
        options.update(pinned(made.path))
        if test_task(made) is not made:  # (its held-out file too)
            options.update(pinned(made.held_out.path, "test_path"))
    test, basis = task_success_test(task["name"])
    protocol = spec_protocol(made, test)
    name = data.get("name") if isinstance(data.get("name"), str) else Path(path).stem
    experiment = SpecExperiment(name, f"your spec {path}", "-", Path(path).stem, task["name"], protocol,
                                trials or 10, {}, task_options=options, spec_file=str(Path(path).resolve()))
    kind = "stream" if made.continual else "sequence"
    why = "the task is continual" if made.continual else "the task's sequences are independent"
    if field == "training.data":
        why = (f"the sequences of {training['data']} drawn at random, each trial in its own order, not its epochs "
               "in order as `lstmgraph train` runs them")
    if test_task(made) is not made:
        why += f"; its tests drawn from the held-out {made.held_out.path}"
    length = tuple(f"training.{key} ({shown(training[key])})" for key in ("steps", "epochs")
                   if training.get(key) is not None)
    return Subject(experiment, "spec", f"the default {kind} protocol ({why}; {basis}): {protocol.describe()}",
                   length)


@dataclass(frozen=True)
class Setting:
    """One setting of the grid: its index, its values (key -> value), its experiment, and
    whether it is the own setting (the paired tests' reference: the subject's values, and the
    value of each key given one; the subject itself only where no key is given one value)."""

    index: int
    values: dict[str, Any]
    experiment: Experiment
    own: bool
    added: bool = False  # the subject's own setting, added to a grid that lacked it

    def changes(self, subject: Experiment) -> bool:
        """Whether some value of the setting differs from ``subject``'s own (else it is the subject)."""
        return self.experiment is not subject

    @property
    def folder(self) -> str:
        return SWEEP_FOLDER.member(self.index)

    def label(self) -> str:
        return ", ".join(f"{key}={json.dumps(value)}" for key, value in self.values.items())


def grid(subject: Experiment, varied: list[tuple[str, list[Any]]] | dict[str, list[Any]],
         add_own: bool = True) -> list[Setting]:
    """Every setting of ``varied`` ((typed key, values) in order, or a dict of them) on
    ``subject``; `SweepError` names an unknown key, a key given twice or without a list of
    values, a value a key rejects, or a grid too large."""
    resolved: list[tuple[str, Any, str, list[Any]]] = []
    for typed, values in (varied.items() if isinstance(varied, dict) else varied):
        values = plain(values)  # (np.linspace, np.int64: Python's numbers)
        if not isinstance(values, (list, tuple)) or not values:
            raise SweepError(f"--vary {typed}: give a non-empty list of values, not {shown(values)}")
        values = checked_values(typed, list(values))
        full, key, name = resolve(subject, typed)
        if key.normalise is not None:
            values = [key.normalise(subject, name, value) for value in values]
        if any(full == other[0] for other in resolved):
            raise SweepError(f"--vary {full}: given twice; give its values in one --vary")
        resolved.append((full, key, name, values))
    count = 1
    for *_, values in resolved:
        count *= len(values)
    if count > MAX_SETTINGS:
        raise SweepError(f"--vary: {count:,} settings, more than {MAX_SETTINGS:,}")
    current = {full: key.current(subject, name) for full, key, name, _ in resolved}
    # The own setting: the subject's values for the keys varied, the value given for a key given one.
    own_values = {full: values[0] if len(values) == 1 else current[full] for full, _, _, values in resolved}
    settings: list[Setting] = []
    for combination in itertools.product(*(values for *_, values in resolved)):
        values = {full: value for (full, *_), value in zip(resolved, combination)}
        own = all(same_value(value, own_values[full]) for full, value in values.items())
        settings.append(Setting(len(settings), values, _applied(subject, resolved, values, current), own))
    if add_own and not any(setting.own for setting in settings):  # (a value None: the subject's random weights)
        try:
            own = _applied(subject, resolved, own_values, current)
        except SweepError as error:
            raise SweepError(f"{error} (the own setting, added as the paired tests' reference: give --no-own-setting, "
                             "or vary the keys' own values too)") from None
        settings.append(Setting(len(settings), own_values, own, True, added=True))
    return settings


def compared_with_nothing(subject: Experiment, grid: list[Setting]) -> str | None:
    """Where the grid is one setting that changes ``subject``, why nothing is compared with it
    (a key given one value is fixed for the whole sweep, so that setting is its own reference)
    and the ``--vary`` that sets it beside the subject; else None."""
    if len(grid) != 1 or not grid[0].changes(subject):
        return None
    given = []
    for full, value in grid[0].values.items():
        _, key, name = resolve(subject, full)
        given.append(f"--vary {full}={json.dumps(key.current(subject, name))},{json.dumps(value)}")
    return ("one setting, compared with nothing: a key given one value is fixed for the whole sweep; to compare "
            f"it with {subject.name} as it is, give the own value too: {' '.join(given)}")


def judged_by(subject: Subject, grid: list[Setting]) -> tuple[str, str]:
    """How the sweep's trials are judged, in words, and the protocol they run (`Protocol.describe`):
    the subject's, or where the settings set its keys (``protocol.NAME``) the protocol they share,
    else the subject's, saying the settings differ (each setting's results.json holds its own)."""
    protocols = {setting.experiment.protocol.describe() for setting in grid}
    own = subject.experiment.protocol.describe()
    if protocols <= {own}:
        return subject.judged_by, own
    keys = ", ".join(key for key in varied_values(grid) if key.startswith("protocol."))
    if len(protocols) == 1:
        return f"{subject.judged_by}, with {keys} as the settings set them", protocols.pop()
    return f"{subject.judged_by}, with {keys} as each setting sets them", f"{own} (each setting's in its results.json)"


def varied_values(grid: list[Setting]) -> dict[str, list[Any]]:
    """Each key of ``grid`` with its values as given, in order, each once (the own setting's
    values, where added, left out): what sweep.json lists under ``keys``."""
    given = [setting for setting in grid if not setting.added]
    return {full: list({json.dumps(s.values[full]): s.values[full] for s in given}.values())
            for full in (grid[0].values if grid else {})}


def _applied(subject: Experiment, resolved: list, values: dict[str, Any], current: dict[str, Any]) -> Experiment:
    """``subject`` with the keys whose values differ from its own applied in order; the subject
    itself, unchanged, where none differs (its trials are then those `reproduce` runs). A family
    applied together (``protocol.NAME``) comes after the others, which may have changed one of
    its values (a data file's test count): a value given as the subject's is then applied too."""
    experiment, changed, together, kept = subject, [], {}, []

    def given_together(full: str, key: Any, name: str, value: Any) -> None:
        together.setdefault(key.name, (key, {}))[1][name] = value
        changed.append(f"{full}={json.dumps(value)}")

    for full, key, name, _ in resolved:
        value = values[full]  # (null: unset, as reproduce --task-option KEY=null; a number key refuses it)
        if same_value(value, current[full]):
            if key.apply_together is not None:
                kept.append((full, key, name, value))
            continue
        if key.apply_together is not None:  # (a family applied as one, after the others)
            given_together(full, key, name, value)
        else:
            experiment = key.apply(experiment, name, value)
            changed.append(f"{full}={json.dumps(value)}")
    for full, key, name, value in kept:  # (labelled last, so that no other setting's name changes)
        if not same_value(value, key.current(experiment, name)):
            given_together(full, key, name, value)
    for key, options in together.values():
        try:
            experiment = key.apply_together(experiment, options)
        except SweepError as error:
            raise SweepError(f"the setting {', '.join(changed)}: {error}") from None
    return replace(experiment, name=f"{subject.name} [{', '.join(changed)}]") if changed else subject
