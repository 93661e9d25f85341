"""One progress interface for every long job: training runs, reproduction trials, benchmarks.

A job calls its ``progress`` callback with a `ProgressReport` now and then; the CLI turns the
reports into a progress bar or log lines, a Python user into whatever they like. Reports are
plain data (they cross process boundaries from reproduction workers).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Mapping


@dataclass(frozen=True)
class ProgressReport:
    """``done`` of ``total`` ``unit`` (``total`` None when open-ended, e.g. a trial that runs
    until it is solved), what is being worked on (``label``: a trial, a benchmark) and the
    figures worth watching (loss per step, test score, ...)."""

    unit: str
    done: int
    total: int | None = None
    label: str = ""
    figures: Mapping[str, float] = field(default_factory=dict)

    def describe(self) -> str:
        """One line, e.g. 'trial 3: 1,200 training streams, score 41.2'."""
        amount = f"{self.done:,}" + (f"/{self.total:,}" if self.total is not None else "") + f" {self.unit}"
        figures = ", ".join(f"{name.replace('_', ' ')} {value:.4g}" for name, value in self.figures.items())
        return (f"{self.label}: " if self.label else "") + amount + (f", {figures}" if figures else "")


Progress = Callable[[ProgressReport], None]
