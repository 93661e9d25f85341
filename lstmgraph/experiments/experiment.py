"""An experiment: a table row of a paper as lstmgraph runs it (the rows: `catalogue`).

An experiment is a bundled spec (optionally changed by named `Variant`s, e.g. "without forget
gates"), a task, a protocol, the learning rate and momentum, the paper's trial count and the
published figures of the table or finding it names (`Experiment.paper`, `Experiment.table`).
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..files import BUNDLED_SPECS
from ..plan import Plan, compile_plan
from ..spec import document_of, spec_from_data
from ..spec.loader import read_spec_file
from ..tasks import Task, make_task
from ..tasks.base import check_option_names
from .folder_settings import PROTOCOL_SETTINGS
from .protocols import Protocol
from .trial import Trial, new_trial
from .variants import Variant


@dataclass(frozen=True)
class Experiment:
    """One table row of the papers: its spec, variants, task, protocol and published figures
    (docs/api.md, "Experiments"); `trial` runs one of its trials, `plan` compiles its net."""

    name: str
    paper: str
    table: str
    spec: str
    task: str
    protocol: Protocol
    trials: int
    published: dict[str, Any]
    task_options: dict[str, Any] = field(default_factory=dict)
    variants: tuple[Variant, ...] = ()
    learning_rate: float | None = None      # None: the spec's
    momentum: float | None = None
    note: str = ""
    protocol_options: dict[str, Any] = field(default_factory=dict)  # set by `with_protocol_options`
    # Where the row as run departs from its seed (shown beside it in the paper rows' tables).
    departures: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        self.protocol.check_task(self.make_task())  # (ProtocolError: a setting the task cannot take)

    @property
    def deterministic(self) -> bool:
        """The task draws the same sequence every time (its ``deterministic`` attribute), so the
        row runs one test stream a phase (`StreamProtocol.check_task`)."""
        return bool(getattr(self.make_task(), "deterministic", False))

    def spec_data(self, specs: Path = BUNDLED_SPECS) -> tuple[dict[str, Any], Any]:
        """The bundled spec's data as the experiment runs it: its variants applied, its task,
        learning rate and momentum in the training section; and the file's source positions.
        `SpecError` naming the file where it is no valid spec (a --specs folder's), before the
        variants change what they assume a spec holds, or a link (in a folder other than the
        bundled specs')."""
        # A folder given with --specs is read as a folder of its own: no link followed out of it.
        data, source = read_spec_file(self.spec_path(specs), follow_links=specs == BUNDLED_SPECS)
        document_of(data, source, data_files=False)  # (its data replaced by the row's task: not read)
        data = copy.deepcopy(data)
        for variant in self.variants:
            variant.apply(data)
        training = data.setdefault("training", {})
        for key in ("data", "epochs"):  # (a spec trained on a data file: the task replaces it)
            training.pop(key, None)
        training["task"] = {"name": self.task, **self.task_options}
        if self.learning_rate is not None:
            training["learning_rate"] = self.learning_rate
        if self.momentum is not None:
            training["momentum"] = self.momentum
        # The row's task replaces the file's: a problem with it is the row's (or --task-option's), not the file's line.
        options = "".join(f", {key} {json.dumps(value)}" for key, value in self.task_options.items())
        return data, source.with_given({("training", "task"): f"{self.name}'s task ({self.task}{options})"})

    def printed_spec(self, specs: Path = BUNDLED_SPECS) -> dict[str, Any]:
        """`spec_data` as `reproduce --print-spec` prints it, a file to train or change. A row that
        borrows a spec of another task (the NTO rows the CERG spec) prints under its own name and
        description, and resets as its trials do (`trained_spec`). The trials run `spec_data`
        itself (its resets are the protocol's to make); a row on its spec's own task prints that
        spec's name, so a sweep of an earlier printed file resumes."""
        self.plan(specs)  # (`SpecError` where the row's net cannot take its task: nothing printed that does not run)
        data = self.spec_data(specs)[0]
        own_task = read_spec_file(self.spec_path(specs), follow_links=specs == BUNDLED_SPECS)[0].get("training", {})
        own_task = own_task.get("task") if isinstance(own_task, dict) else None
        if not (isinstance(own_task, dict) and own_task.get("name") == self.task):
            description = (f"The net of {self.name} ({self.paper}, {self.table}) as lstmgraph reproduce runs it: "
                           f"the bundled spec {self.spec} (another task's) with the row's changes.")
            data = {"version": data.get("version"), "name": self.name, "description": description,
                    **{key: value for key, value in data.items() if key not in ("version", "name", "description")}}
        return trained_spec(data, self.protocol)

    def spec_path(self, specs: str | Path = BUNDLED_SPECS) -> Path:
        """The spec file the row changes: the bundled spec in ``specs`` (a folder)."""
        return Path(specs) / f"{self.spec}.yaml"

    def plan(self, specs: Path = BUNDLED_SPECS) -> Plan:
        data, source = self.spec_data(specs)
        return compile_plan(document_of(data, source))

    def make_task(self) -> Task:
        return make_task(self.task, self.task_options)

    def with_task_options(self, options: dict[str, Any]) -> Experiment:
        """This row with some of its task's options set otherwise (`reproduce --task-option`):
        the same net, protocol, seeds and published figures, so a coding the papers leave open
        can be tried against them. An option given as None is unset: the task's default, as in
        a run from before the row set it; a task made deterministic runs one test stream a phase.
        `TaskError` names an option the task does not have or a value it rejects; `ProtocolError`
        a task made deterministic while ``test_streams`` was set above 1."""
        check_option_names(self.task, options)
        merged = {key: value for key, value in {**self.task_options, **options}.items() if value is not None}
        task = make_task(self.task, merged)
        protocol = self.protocol
        if getattr(task, "deterministic", False) and hasattr(protocol, "test_streams") \
                and "test_streams" not in self.protocol_options:
            protocol = replace(protocol, test_streams=1)  # the rule for a deterministic task's stream rows
        return replace(self, task_options=merged, protocol=protocol)

    def with_protocol_options(self, options: dict[str, Any]) -> Experiment:
        """This row with some of its protocol's settings otherwise (`reproduce --protocol-option`),
        e.g. ``success: most_active``: a reading of a protocol the papers leave open, tried
        against the row's published figures. `ProtocolError` names a setting the protocol does
        not have or a value it rejects."""
        return replace(self, protocol=self.protocol.with_settings(options),
                       protocol_options={**self.protocol_options, **options})

    def trial(self, plan: Plan, seed: int, budget_steps: int | None = None, kernel: str | None = None,
              device: str = "cpu") -> Trial:
        """Trial ``seed`` of this experiment on ``plan`` (`plan()`, or `plan_of` spec data sent
        to a worker): weights and data from the seed, the compiled engine (running ``kernel``),
        the protocol, its driver on ``device``."""
        return new_trial(plan, self.task, self.task_options, self.protocol, seed, budget_steps, kernel, device)

    @staticmethod
    def plan_of(data: dict[str, Any]) -> Plan:
        """The plan of `spec_data`'s data (as a worker receives it: no file behind it)."""
        return compile_plan(spec_from_data(data, "<experiment spec>"))

    def describe(self) -> dict[str, Any]:
        described = {"name": self.name, "paper": self.paper, "table": self.table, "spec": f"specs/{self.spec}.yaml",
                     "variants": [v.description for v in self.variants], "task": self.task,
                     "task_options": self.task_options, "learning_rate": self.learning_rate,
                     "momentum": self.momentum, "protocol": self.protocol.describe(), "trials": self.trials,
                     "unit": self.protocol.counted, "published": self.published, "note": self.note,
                     PROTOCOL_SETTINGS: self.protocol.settings()}
        if self.protocol_options:  # (only then: a folder's stored settings stay as they were)
            described["protocol_options"] = self.protocol_options
        if self.deterministic:
            described["deterministic_task"] = DETERMINISTIC
        return described


def trained_spec(data: dict[str, Any], protocol: Protocol) -> dict[str, Any]:
    """Spec data as a trial of ``protocol`` trains it (its trials/SEED/spec.yaml, `printed_spec`):
    ``reset: sequence`` where the protocol starts each sequence from zero (the 1997 sequences,
    the 2000 external reset, NMSD), not a borrowed ``reset: never``, so that `lstmgraph
    evaluate` and `plot` run the net as it learned."""
    training = data.get("training")
    if not (protocol.resets_each_sequence and isinstance(training, dict) and training.get("reset") == "never"):
        return data
    return {**data, "training": {**training, "reset": "sequence"}}


# A deterministic task's rows (PFG) set test_streams 1: every test stream of a phase would be the
# same stream from the same zero state with the same frozen weights (tests/experiments/
# test_catalogue.py checks that the scores agree and that a trial's row does not change).
DETERMINISTIC = ("the task draws the same sequence every time, so every test stream of a test phase would be "
                 "the same stream with the same score: one test stream per test phase (the paper's 10 give "
                 "the same result)")


def is_paper_row(experiment: Experiment) -> bool:
    """A catalogue experiment that is a row (or finding) of a paper, not our extension of one."""
    return "our extension" not in experiment.table
