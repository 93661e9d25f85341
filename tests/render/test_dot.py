"""Diagrams: DOT text (no graphviz binary needed), a real SVG where `dot` exists, fallback;
no two texts of a bundled spec's diagram overlap, and the legend holds the styles in use."""

from __future__ import annotations

import itertools
import json
import shutil
import subprocess

import pytest

import lstmgraph
from lstmgraph.render import RenderError, render_plan, to_dot
from lstmgraph.operations import ACTIVATIONS, OUTPUT_ACTIVATIONS, UNIT_ACTIVATIONS
from lstmgraph.render.dot import EDGE_STYLES

from conftest import SPECS


@pytest.fixture(scope="module")
def cerg():
    return lstmgraph.compile_spec(SPECS / "gers2000_cerg.yaml")


def test_memory_block_is_a_cluster_with_cec_and_gate_multipliers(cerg):
    text = to_dot(cerg)
    assert "subgraph cluster_memory" in text
    assert "4 block(s) x 2 cell(s)" in text
    assert '"memory.state" -> "multiply/memory.state->memory.state"' in text
    assert 'label="CEC 1.0"' in text
    for gate in ("input_gate", "forget_gate", "output_gate"):
        assert f'"memory.{gate}" -> "multiply/' in text
    assert "gate multiplies at" in text and "peephole" not in text  # CERG has no peepholes


def test_edge_styles_distinguish_delay_gradient_and_peephole():
    timing = to_dot(lstmgraph.compile_spec(SPECS / "gers2002_timing.yaml"))
    lines = [line.strip() for line in timing.splitlines()]

    def edge(source: str, target: str) -> str:
        quoted = [f'"{name}"' if "." in name else name for name in (source, target)]
        (line,) = [line for line in lines if line.startswith(f"{quoted[0]} -> {quoted[1]} ")]
        return line

    recurrent = edge("memory.cell_output", "memory.input_gate")
    assert "style=dashed" in recurrent and "arrowhead=empty" in recurrent
    same_step = edge("memory.cell_output", "target")
    assert "style=solid" in same_step and "arrowhead=normal" in same_step
    peephole = edge("memory.state", "memory.output_gate")
    assert "#7b1fa2" in peephole and "style=solid" in peephole
    assert "#7b1fa2" in edge("memory.state", "memory.input_gate")
    assert "style=dashed" in edge("memory.state", "memory.input_gate")


def test_dot_text_is_deterministic(cerg):
    again = lstmgraph.compile_spec(SPECS / "gers2000_cerg.yaml")
    assert to_dot(cerg) == to_dot(again)


@pytest.mark.parametrize("path", sorted(SPECS.glob("*.yaml")), ids=lambda p: p.stem)
def test_every_bundled_spec_renders_to_dot(path, tmp_path):
    plan = lstmgraph.compile_spec(path)
    written = render_plan(plan, tmp_path / f"{path.stem}.dot")
    text = written.read_text()
    assert text.startswith(f"digraph {plan.name}") and f"({plan.n_parameters} parameters)" in text


def test_a_spec_using_every_activation_of_the_registry_renders(tmp_path):
    """Each activation's unit is drawn with the registry's label (`Activation.label`): a hidden
    group per unit activation, an output group per output-only one."""
    hidden = [{"name": f"h_{name}", "kind": "hidden", "size": 2, "activation": name} for name in UNIT_ACTIVATIONS]
    outputs = [{"name": f"out_{name}", "kind": "output", "size": 2, "activation": name}
               for name in OUTPUT_ACTIVATIONS if name not in UNIT_ACTIVATIONS]
    groups = [{"name": "x", "kind": "input", "size": 2}] + hidden + outputs
    plan = lstmgraph.compile_plan(lstmgraph.spec_from_data({
        "version": 1, "name": "every_activation", "groups": groups,
        "connections": [{"from": "x", "to": [group["name"] for group in hidden]},
                        {"from": [group["name"] for group in hidden], "to": [group["name"] for group in outputs]}]}))
    assert {unit.activation for unit in plan.network.units if unit.computed} == set(ACTIVATIONS)
    text = render_plan(plan, tmp_path / "every_activation.dot").read_text()
    for group in hidden:
        assert f'{group["name"]}\nhidden (2), {ACTIVATIONS[group["activation"]].label}' in text
    for group in outputs:
        assert f'{group["name"]}\noutput (2), {ACTIVATIONS[group["activation"]].label}' in text


@pytest.mark.skipif(shutil.which("dot") is None, reason="graphviz 'dot' binary not installed")
def test_real_svg_render(cerg, tmp_path):
    written = render_plan(cerg, tmp_path / "cerg.svg")
    svg = written.read_text()
    assert svg.lstrip().startswith("<?xml") and "<svg" in svg and "cell state s" in svg


def test_missing_dot_binary_writes_the_dot_source_and_says_how_to_install(cerg, tmp_path, monkeypatch):
    monkeypatch.setattr(shutil, "which", lambda name: None)
    with pytest.raises(RenderError) as caught:
        render_plan(cerg, tmp_path / "cerg.svg")
    assert "apt-get install graphviz" in str(caught.value)
    assert (tmp_path / "cerg.dot").read_text() == to_dot(cerg)
    assert not (tmp_path / "cerg.svg").exists()


def test_unknown_extension_is_refused(cerg, tmp_path):
    with pytest.raises(RenderError, match="use an extension among"):
        render_plan(cerg, tmp_path / "cerg.jpg")


def test_a_decaying_cell_state_shows_its_weight():
    from lstmgraph.experiments import find_experiment
    text = to_dot(find_experiment("gers2000-cerg-state-decay").plan())
    assert 'label="CEC 0.9"' in text and "CEC 1.0" not in text


def _text_boxes(layout: dict) -> list[tuple[str, float, float, float, float]]:
    """(text, left, bottom, right, top) of every text graphviz placed, from `dot -Tjson`: each
    text operation gives its anchor, alignment and width; its height is taken from the font
    size in force (a quarter below the baseline, three quarters above)."""
    boxes = []

    def collect(item: dict) -> None:
        for key in ("_ldraw_", "_hldraw_", "_tldraw_"):
            size = 14.0
            for op in item.get(key, []):
                if op["op"] == "F":
                    size = op["size"]
                elif op["op"] == "T":
                    (x, y), width = op["pt"], op["width"]
                    left = {"c": x - width / 2, "l": x, "r": x - width}[op["align"]]
                    boxes.append((op["text"], left, y - 0.25 * size, left + width, y + 0.75 * size))

    for item in [layout, *layout.get("objects", []), *layout.get("edges", [])]:
        collect(item)
    return boxes


@pytest.mark.skipif(shutil.which("dot") is None, reason="graphviz 'dot' binary not installed")
@pytest.mark.parametrize("path", sorted(SPECS.glob("*.yaml")), ids=lambda p: p.stem)
def test_no_two_texts_of_a_bundled_diagram_overlap(path):
    layout = json.loads(subprocess.run(["dot", "-Tjson"], input=to_dot(lstmgraph.compile_spec(path)),
                                       capture_output=True, text=True, check=True).stdout)
    boxes = _text_boxes(layout)
    assert len(boxes) > 10 and any(text.endswith("parameters)") for text, *_ in boxes)
    overlapping = [(a[0], b[0]) for a, b in itertools.combinations(boxes, 2)
                   if a[1] < b[3] and b[1] < a[3] and a[2] < b[4] and b[2] < a[4]]
    assert overlapping == []


def test_text_boxes_see_an_overlap():
    """The check above can fail: two labels drawn at one place are caught."""
    op = [{"op": "F", "size": 9.0}, {"op": "T", "pt": [10.0, 10.0], "align": "c", "width": 20.0, "text": "a"}]
    boxes = _text_boxes({"edges": [{"_ldraw_": op}, {"_ldraw_": op}]})
    assert boxes[0][1:] == (0.0, 7.75, 20.0, 16.75) and boxes[0][1:] == boxes[1][1:]


@pytest.mark.parametrize("name,present,absent", [
    ("gru", {"carries", "delayed", "gate"}, {"truncated", "peephole"}),
    ("rnn", {"carries", "delayed"}, {"truncated", "peephole", "gate"}),
    ("gers2002_timing", {"carries", "truncated", "peephole", "delayed", "gate"}, set()),
])
def test_legend_lists_only_the_styles_present(name, present, absent):
    text = to_dot(lstmgraph.compile_spec(SPECS / f"{name}.yaml"))
    legend = text[text.index("label=<<table"):]
    for kind in present:
        assert EDGE_STYLES[kind][0] in legend, kind
    for kind in absent:
        assert EDGE_STYLES[kind][0] not in legend, kind


def test_activations_are_named_and_connection_names_shown():
    gru = to_dot(lstmgraph.compile_spec(SPECS / "gru.yaml"))
    assert "hidden (8), identity" in gru and "gate (8), logistic" in gru
    assert 'label="h_carry, one-to-one, fixed"' in gru
    # The carry leaves h against the flow and comes back from below, apart from h's other edges.
    assert 'h:w -> "multiply/h_carry"' in gru and '"multiply/h_carry" -> h:s' in gru
    timing = to_dot(lstmgraph.compile_spec(SPECS / "gers2002_timing.yaml"))
    assert "(1), identity" in timing and "1/(1+e" not in timing
