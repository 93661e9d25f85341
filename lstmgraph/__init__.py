"""lstmgraph: declarative LSTM-family networks, compiled from a spec file into an execution plan.

Stages, one package each: ``spec`` (the language) -> ``graph`` (structure) -> ``plan``
(compiled step order and parameter layout); ``render`` draws a plan with graphviz.
"""

from __future__ import annotations

from pathlib import Path

from .errors import Problem, SpecError
from .plan import Plan, compile_plan
from .spec import Overrides, SpecDocument, load_spec, spec_from_data

__version__ = "0.1.0"

__all__ = ["Overrides", "Plan", "Problem", "SpecDocument", "SpecError", "compile_plan", "compile_spec",
           "load_spec", "spec_from_data", "__version__"]


def compile_spec(path: str | Path, overrides: Overrides | None = None, data_files: bool = True) -> Plan:
    """Load, validate and compile a spec file, or a bundled spec's name, in one call
    (``overrides``, ``data_files``: `load_spec`'s)."""
    return compile_plan(load_spec(path, overrides, data_files))
