"""Diagrams: DOT text (no graphviz binary needed), a real SVG where `dot` exists, fallback."""

from __future__ import annotations

import shutil

import pytest

import lstmgraph
from lstmgraph.render import RenderError, render_plan, to_dot

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
    assert "subgraph cluster_legend" in text


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
