"""A plain-data summary of a plan, shared by `lstmgraph validate` (text and --json) and the API."""

from __future__ import annotations

import copy
from typing import Any

from .compile import Plan


def summarize(plan: Plan) -> dict[str, Any]:
    """Groups, units, step order, connections with their gradient flags, parameter counts."""
    return {
        "name": plan.name,
        "file": plan.source.filename,
        "parameters": plan.n_parameters,
        "groups": copy.deepcopy(plan.resolved_spec["groups"]),
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
    }
