"""A plain-data summary of a plan, shared by `lstmgraph validate` (text and --json) and the API,
and the bundled specs as `lstmgraph specs` lists them (`list_specs`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..bundled import spec_names
from ..files import BUNDLED_SPECS
from ..spec import load_spec
from .compile import Plan, compile_plan


def summarize(plan: Plan) -> dict[str, Any]:
    """Groups, units, step order, connections with their gradient flags, parameter counts."""
    return {
        "name": plan.name,
        "file": plan.source.filename,
        "parameters": plan.n_parameters,
        "groups": plan.resolved_spec["groups"],
        "units": [{"name": unit.name, "role": unit.role, "size": unit.size,
                   "activation": unit.activation, "group": unit.group} for unit in plan.units],
        "execution_order": list(plan.execution_order),
        "connections": [{
            "name": c.name, "from": c.source, "to": c.target, "pattern": c.pattern,
            "delay": c.delay, "gradient": c.gradient, "trainable": c.trainable,
            "gated_by": c.gate, "gate_complement": c.gate_complement, "gate_side": c.gate_side,
            "shape": list(c.shape),
            "parameters": c.size if c.trainable else 0, "internal": c.internal,
        } for c in plan.connections],
        "parameters_per_connection": {slot.connection: slot.size for slot in plan.parameters},
        "unlearned_connections": list(plan.unlearned_connections),
    }


def unlearned_note(plan: Plan) -> str | None:
    """Which trainable connections never learn (`Plan.unlearned_connections`), why, and what
    would make them learn; None where every one does. Shown by validate and train."""
    names = plan.unlearned_connections
    if not names:
        return None
    rule = plan.training.learning_rule if plan.training is not None else "truncated_rtrl"
    unread = set(plan.unreached_connections(full_gradient=True))
    parts = []
    if truncated := [name for name in names if name not in unread]:
        parts.append(f"{', '.join(truncated)}: outputs read their target only through truncated connections under "
                     f"{rule}; write gradient: true on the delayed connection on that path, or learn by exact rtrl")
    if unread := [name for name in names if name in unread]:
        parts.append(f"{', '.join(unread)}: no output reads their target, by any path; connect it to an output")
    return "the weights of these connections never change, as no output's error reaches them: " + "; ".join(parts)


#: The papers whose nets the bundled specs' name prefixes stand for (the catalogue's rows name them too).
PAPERS = {
    "hochreiter1997": "Hochreiter & Schmidhuber 1997",
    "gers2000": "Gers, Schmidhuber & Cummins 2000",
    "gers2002": "Gers, Schraudolph & Schmidhuber 2002",
    "textbook": "a textbook chapter on RNNs and LSTM",
}


@dataclass(frozen=True)
class BundledSpec:
    """One bundled spec as `lstmgraph specs` lists it; ``parameters`` from compiling it."""

    name: str
    path: str
    paper: str | None
    description: str | None
    parameters: int
    task: str | None
    learning_rule: str | None


def list_specs(folder: Path = BUNDLED_SPECS) -> list[BundledSpec]:
    """Every bundled spec, compiled (a `SpecError` if one does not compile)."""
    listed = []
    for name in spec_names(folder):
        path = folder / f"{name}.yaml"
        document = load_spec(path)
        plan = compile_plan(document)
        description = document.spec.description
        training = plan.training
        task = training.task.name if training is not None and training.task is not None else None
        paper = next((title for prefix, title in PAPERS.items() if name.startswith(prefix)), None)
        listed.append(BundledSpec(name, str(path), paper, description, plan.n_parameters, task,
                                  training.learning_rule if training is not None else None))
    return listed
