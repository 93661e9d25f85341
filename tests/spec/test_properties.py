"""Property-based tests (Hypothesis): generated valid specs validate, compile, run and pass
gradcheck in both file formats; generated hostile documents end in a located spec error or
validate, never a traceback or a hang (the limits keep each one fast)."""

from __future__ import annotations

import json

import numpy as np
import yaml
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import lstmgraph
from lstmgraph.operations import ACTIVATIONS as OPERATION_ACTIVATIONS
from lstmgraph.engine import Simulator, gradient_check, initial_weights
from lstmgraph_cli.main import main

SETTINGS = settings(max_examples=25, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
#: The smooth ones: the finite differences the property tests run assume continuous derivatives.
ACTIVATIONS = [a.name for a in OPERATION_ACTIVATIONS.values() if a.smooth and not a.output_only]


@st.composite
def valid_specs(draw) -> dict:
    """Inputs feed hidden groups and memory blocks; those feed the outputs and themselves a
    step later. Every computed group receives a connection; no same-step cycle."""
    groups = [{"name": "x", "kind": "input", "size": draw(st.integers(1, 3))}]
    sources, targets = [], []
    for index in range(draw(st.integers(0, 2))):
        name = f"h{index}"
        groups.append({"name": name, "kind": "hidden", "size": draw(st.integers(1, 3)),
                       "activation": draw(st.sampled_from(ACTIVATIONS))})
        sources.append(name)
        targets.append([name])
    if draw(st.booleans()):
        gates = draw(st.lists(st.sampled_from(["input", "forget", "output"]), unique=True))
        groups.append({"name": "m", "kind": "memory_block", "blocks": draw(st.integers(1, 2)),
                       "cells_per_block": draw(st.integers(1, 2)), "gates": gates})
        sources.append("m.cell_output")
        targets.append(["m.cell_input"] + [f"m.{gate}_gate" for gate in gates])
    groups.append({"name": "y", "kind": "output", "size": draw(st.integers(1, 2)),
                   "activation": draw(st.sampled_from(ACTIVATIONS))})
    connections = [{"from": "x", "to": to} for to in targets]
    connections.append({"from": draw(st.sampled_from(["x"] + sources)), "to": "y"})
    for source, to in zip(sources, targets):
        if draw(st.booleans()):
            connections.append({"from": source, "to": to, "delay": 1})
    if draw(st.booleans()):
        connections.append({"from": "bias", "to": [group for to in targets for group in to] + ["y"]})
    return {"version": 1, "name": "generated", "groups": groups, "connections": connections,
            "init": {"uniform": draw(st.floats(0.05, 1.0)), "seed": draw(st.integers(0, 1000))}}


@SETTINGS
@given(spec=valid_specs(), as_json=st.booleans())
def test_generated_specs_validate_compile_run_and_pass_gradcheck(tmp_path, spec, as_json):
    path = tmp_path / ("net.json" if as_json else "net.yaml")
    path.write_text(json.dumps(spec, indent="\t") if as_json else yaml.safe_dump(spec))
    plan = lstmgraph.compile_spec(path)
    sim = Simulator(plan)
    inputs = np.random.default_rng(0).uniform(-1, 1, size=(4, sim.n_inputs))
    records, _ = sim.run(initial_weights(plan, [0, 1]), inputs)
    outputs = np.concatenate([records[-1].y[unit.name] for unit in sim.outputs], axis=-1)
    assert outputs.shape == (2, spec["groups"][-1]["size"]) and np.isfinite(outputs).all()
    report = gradient_check(plan, seed=0, steps=4)
    assert report["passed"], report


# -- hostile documents -------------------------------------------------------------------------

HOSTILE_VALUES = st.one_of(
    st.integers(-2**70, 2**70), st.floats(allow_nan=True, allow_infinity=True), st.booleans(), st.none(),
    st.text(max_size=300), st.sampled_from(["1e-3", "2", "../../x", "/etc/passwd", "a\x00b", "n" * 300,
                                            "1e999", "0x1F", "yes", "~", "2024-13-45"]),
    st.recursive(st.integers(0, 3), lambda inner: st.lists(inner, max_size=3)
                 | st.dictionaries(st.text(max_size=5), inner, max_size=3), max_leaves=20),
)


def _paths(data, prefix=()):
    yield prefix
    items = data.items() if isinstance(data, dict) else enumerate(data) if isinstance(data, list) else ()
    for key, value in items:
        yield from _paths(value, prefix + (key,))


@st.composite
def mutated_specs(draw) -> dict:
    """A valid spec with one to three values replaced by hostile ones."""
    spec = draw(valid_specs())
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from([p for p in _paths(spec) if p]))
        parent = spec
        for key in path[:-1]:
            parent = parent[key]
        parent[path[-1]] = draw(HOSTILE_VALUES)
    return spec


@st.composite
def alias_bombs(draw) -> str:
    """Aliases fanning out ``width`` times over ``depth`` levels, used where the spec wants
    groups, or nested lists and mappings ``depth`` deep, in block or flow style."""
    width, depth = draw(st.integers(2, 12)), draw(st.integers(2, 40))
    if draw(st.booleans()):
        lines = ["version: 1", "a0: &a0 [1, 2]"]
        lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * width)}]" for i in range(1, depth)]
        return "\n".join(lines + [f"groups: *a{depth - 1}"]) + "\n"
    if draw(st.booleans()):
        return "version: 1\ngroups: " + "[" * depth * width + "]" * depth * width + "\n"
    return "version: 1\ngroups:\n" + "".join("  " * (level + 1) + "- k:\n" for level in range(depth * width))


def _validate(path) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["validate", str(path)])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exc_info
    assert "Traceback" not in result.output
    return result.exit_code, result.output


@SETTINGS
@given(spec=mutated_specs(), as_json=st.booleans())
def test_mutated_specs_end_in_a_located_error_or_validate(tmp_path, spec, as_json):
    path = tmp_path / ("net.json" if as_json else "net.yaml")
    if as_json:
        text = json.dumps(spec, allow_nan=True)  # NaN and Infinity are not JSON: an error
    else:
        text = yaml.safe_dump(spec)
    path.write_text(text)
    code, output = _validate(path)
    assert code in (0, 2), output
    if code == 2:
        assert f"{path}" in output


@SETTINGS
@given(text=alias_bombs() | st.text(max_size=400), suffix=st.sampled_from([".yaml", ".json"]))
def test_hostile_text_never_ends_in_a_traceback(tmp_path, text, suffix):
    path = tmp_path / f"net{suffix}"
    path.write_text(text)
    code, output = _validate(path)
    assert code == 2 and f"error: {path}" in output, output


def test_the_limits_keep_a_megabyte_of_hostile_yaml_fast(tmp_path):
    import time
    documents = {"flat.yaml": "version: 1\ngroups: [" + "1," * 500_000 + "1]\n",
                 "deep.yaml": "[" * 500_000 + "]" * 500_000,
                 "deep.json": "[" * 500_000 + "]" * 500_000}
    for name, text in documents.items():
        (tmp_path / name).write_text(text)
        started = time.process_time()  # CPU time of this process: unaffected by other load
        code, output = _validate(tmp_path / name)
        assert code == 2 and "the spec is too large" in output
        assert time.process_time() - started < 10, name  # an exponential walk would take hours
