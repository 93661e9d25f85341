"""Changes to a spec's training run, applied to its data before validation.

These are the options of `lstmgraph train` (``--steps``, ``--epochs``, ``--seed``, ``--rule``,
``--data``, ``--learning-rate``), for Python users too: ``lstmgraph.compile_spec(path, Overrides(steps=500))``.
Applied to the data, not to the validated spec, so that an override is checked like the spec
itself (``--rule truncated_rtrl`` on a spec with a ``bptt_window`` drops the window, but
``--epochs`` with a task is the spec error it would be in the file).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..arrays import plain
from ..errors import shown


@dataclass(frozen=True)
class Overrides:
    """``steps``, ``epochs``, ``learning_rule``, ``learning_rate``: the training section's keys; ``seed`` sets both
    ``init.seed`` and ``training.seed`` (the weights and the data stream); ``data`` trains on an
    .npz file instead of the spec's task (its path taken from the current directory)."""

    steps: int | None = None
    epochs: int | None = None
    seed: int | None = None
    learning_rule: str | None = None
    data: str | Path | None = None
    learning_rate: float | None = None

    def changes(self) -> dict[str, dict[str, Any]]:
        """Section -> key -> new value, None meaning the key is removed."""
        training: dict[str, Any] = {}
        init: dict[str, Any] = {}
        if self.data is not None:
            training.update(data=str(Path(self.data).resolve()), task=None)
        if self.steps is not None:
            training["steps"] = self.steps
        if self.epochs is not None:
            training["epochs"] = self.epochs
        if self.learning_rule is not None:
            training["learning_rule"] = self.learning_rule
            if self.learning_rule != "bptt":
                training["bptt_window"] = None
        if self.learning_rate is not None:
            training["learning_rate"] = self.learning_rate
        if self.seed is not None:
            training["seed"] = init["seed"] = self.seed
        return {section: plain(values) for section, values in (("training", training), ("init", init)) if values}

    def given(self, data: Any) -> dict[tuple[str, ...], str]:
        """Each field of ``data`` that `apply` sets or removes, and the option that does (for
        located errors)."""
        def text(value: Any) -> str:  # (a number from Python may be too long to write: `errors.shown`)
            return shown(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else str(value)

        options = {"data": f"--data {self.data}", "task": f"--data {self.data}", "steps": f"--steps {text(self.steps)}",
                   "epochs": f"--epochs {text(self.epochs)}", "learning_rule": f"--rule {self.learning_rule}",
                   "bptt_window": f"--rule {self.learning_rule}", "seed": f"--seed {text(self.seed)}",
                   "learning_rate": f"--learning-rate {text(self.learning_rate)}"}
        return {(section, key): options[key] for section, values in self.changes().items()
                if _changes_section(data, section) for key in values}

    def apply(self, data: Any) -> Any:
        """A copy of spec data with the changes made. Data that is not a mapping, or a section
        that is not one, is left as it is for validation to report. A spec without a training
        section gets none: the options change a training section but cannot make one (it needs
        a learning rate and a task or data file), so training such a spec stops at "the spec
        has no training section" and what to add, not at a key of a section it never had."""
        data = copy.deepcopy(data)
        if not isinstance(data, dict):
            return data
        for section, values in self.changes().items():
            if not _changes_section(data, section):
                continue
            target = data.setdefault(section, {})
            for key, value in values.items():
                if value is None:
                    target.pop(key, None)
                else:
                    target[key] = value
        return data


def _changes_section(data: Any, section: str) -> bool:
    """Whether `Overrides.apply` changes ``section`` of ``data``: a mapping's section that is a
    mapping or absent, but never a training section the spec does not have (see `apply`)."""
    if not isinstance(data, dict) or (section == "training" and section not in data):
        return False
    return isinstance(data.get(section, {}), dict)
