"""What ties a training run's checkpoint to its run (`run_identity`), kept in the checkpoint as
the array `IDENTITY`, and what a resume finds wrong with a checkpoint's (`identity_problem`):
a checkpoint of another run, or of the same run with other settings, is never continued."""

from __future__ import annotations

import copy
import hashlib
import json
from typing import Any

import numpy as np

from ..spec.jsondoc import JsonSyntaxError, parse_json
from .metrics_files import shown

#: The checkpoint's array that ties it to its run (`run_identity`, as JSON).
IDENTITY = "run/identity"
#: Settings of spec.yaml a resumed run may change: its length (a finished run continued further).
LENGTH_KEYS = ("steps", "epochs")
#: The longest identity read back (a written one is about 200 characters).
MAX_IDENTITY_CHARS = 4096


def run_identity(plan, trials: int, engine: str, spec_bytes: bytes, device: str = "cpu") -> dict[str, Any]:
    """What ties a checkpoint to its run: the network (name, parameter count), its seeds
    (weights, data), the trials, and ``settings``, a sha256 digest of spec.yaml's data (but its
    run length, `LENGTH_KEYS`: a run may be continued further) and run.json's settings (trials,
    engine, and the device where not the CPU: older identities stay as they were). A resumed
    run's must equal its checkpoint's. ``spec_bytes``: spec.yaml's content, which must be
    valid YAML (it compiled to ``plan``)."""
    from ..spec.loader import parse_spec_bytes

    data = copy.deepcopy(parse_spec_bytes(spec_bytes, "spec.yaml")[0])  # (the name only in an error it cannot raise)
    if isinstance(data, dict) and isinstance(data.get("training"), dict):
        for key in LENGTH_KEYS:
            data["training"].pop(key, None)
    run = {"trials": trials, "engine": engine, **({"device": device} if device != "cpu" else {})}
    settings = json.dumps({"spec": data, "run": run}, sort_keys=True, separators=(",", ":"))
    training = plan.training
    return {"network": plan.name, "parameters": plan.n_parameters,
            "seeds": {"init": plan.init.seed, "data": training.seed if training is not None else None},
            "trials": trials, "settings": hashlib.sha256(settings.encode()).hexdigest()}


def identity_problem(stored: np.ndarray | None, identity: dict[str, Any]) -> str | None:
    """Why a checkpoint whose `IDENTITY` array is ``stored`` (None: it has none) is not the
    checkpoint of the run whose identity is ``identity``, in words; None where it is."""
    if stored is None:
        return ("holds no run identity, so it cannot be tied to this run (written by an older lstmgraph, or not "
                "by a run)")
    found = None
    if stored.dtype.kind == "U" and stored.shape == () and len(str(stored)) <= MAX_IDENTITY_CHARS:
        try:
            found = parse_json(str(stored))[0]
        except JsonSyntaxError:
            pass
    if not isinstance(found, dict):
        return f"'{IDENTITY}' is not a run identity (a JSON object of at most {MAX_IDENTITY_CHARS} characters)"
    differences = []
    if (found.get("network"), found.get("parameters")) != (identity["network"], identity["parameters"]):
        differences.append(f"its network is {shown(found.get('network'))} with {shown(found.get('parameters'))} "
                           f"parameters, this run's {identity['network']!r} with {identity['parameters']}")
    if found.get("seeds") != identity["seeds"]:
        differences.append(f"its seeds are {shown(found.get('seeds'))}, this run's {identity['seeds']}")
    if found.get("trials") != identity["trials"]:
        differences.append(f"it holds {shown(found.get('trials'))} trials, this run {identity['trials']}")
    if not differences and found != identity:
        differences.append(f"its settings digest {shown(found.get('settings'))} is not this run's "
                           f"{identity['settings'][:16]}... (spec.yaml or run.json changed since it was written; "
                           "only training.steps and training.epochs may change before a resume)")
    return f"not this run's checkpoint: {'; '.join(differences)}" if differences else None
