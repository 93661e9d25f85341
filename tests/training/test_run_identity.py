"""`run_identity`: a checkpoint is tied to its run; a run continued further keeps its identity,
any other change of its settings does not."""

from __future__ import annotations

import json

import numpy as np
import yaml

import lstmgraph
from lstmgraph.training.run_identity import identity_problem, run_identity

from conftest import SPECS


def test_only_the_run_s_length_may_change_and_every_other_difference_is_named():
    plan = lstmgraph.compile_spec(SPECS / "rnn.yaml")
    text = (SPECS / "rnn.yaml").read_text()
    identity = run_identity(plan, 2, "compiled", text.encode())
    stored = np.array(json.dumps(identity))
    assert identity_problem(stored, identity) is None
    longer = yaml.safe_load(text)
    longer["training"]["steps"] = 10 * longer["training"].get("steps", 1)
    assert run_identity(plan, 2, "compiled", yaml.safe_dump(longer).encode())["settings"] == identity["settings"]
    assert "it holds 2 trials, this run 3" in identity_problem(stored, run_identity(plan, 3, "compiled", text.encode()))
    assert "its settings digest" in identity_problem(stored, run_identity(plan, 2, "numpy", text.encode()))
    assert "holds no run identity" in identity_problem(None, identity)
    assert "is not a run identity" in identity_problem(np.array("[" * 5000), identity)
