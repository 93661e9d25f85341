"""Draw a plan as a graphviz diagram: one cluster per memory-block group, legend included.

`to_dot` is a pure function of the plan (node ids are unit and connection names, so the text
is deterministic and tests need no graphviz binary); `render_plan` writes a file whose format
follows its extension. Each gated connection passes through a small "x" node that its gate
feeds, so a diagram shows where every gate multiplies.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import graphviz

from ..operations import FORMULAS
from ..files import write_atomically
from ..graph.units import Connection, Unit
from ..plan import Plan

FORMATS = ("svg", "png", "pdf", "dot")
INSTALL_HINT = "install graphviz's 'dot' binary (Debian: apt-get install graphviz; or run bash setup.sh)"

_ROLE_STYLE = {
    "input": dict(shape="box", style="filled", fillcolor="#e8e8e8"),
    "bias": dict(shape="circle", style="filled", fillcolor="#ffffff", width="0.3", fixedsize="false"),
    "hidden": dict(shape="ellipse", style="filled", fillcolor="#dbe9f6"),
    "gate": dict(shape="invhouse", style="filled", fillcolor="#d8f0d2"),
    "input_gate": dict(shape="invhouse", style="filled", fillcolor="#d8f0d2"),
    "forget_gate": dict(shape="invhouse", style="filled", fillcolor="#d8f0d2"),
    "output_gate": dict(shape="invhouse", style="filled", fillcolor="#d8f0d2"),
    "cell_input": dict(shape="ellipse", style="filled", fillcolor="#fdf1d0"),
    "state": dict(shape="box", style="rounded,filled,bold", fillcolor="#fbd9a6"),
    "squashed_state": dict(shape="ellipse", style="filled", fillcolor="#fdf1d0"),
    "cell_output": dict(shape="ellipse", style="filled", fillcolor="#fdf1d0"),
    "output": dict(shape="box", style="filled", fillcolor="#f6d6d6", peripheries="2"),
}
_PORT_TITLE = {
    "cell_input": "cell input g", "input_gate": "input gate", "forget_gate": "forget gate",
    "output_gate": "output gate", "state": "cell state s", "squashed_state": "h(s)",
    "cell_output": "cell output",
}
_GATE_COLOUR = "#2e7d32"
_PEEPHOLE_COLOUR = "#7b1fa2"
_TRUNCATED_COLOUR = "#9e9e9e"


class RenderError(Exception):
    """A diagram could not be written in the requested format."""


def _unit_label(unit: Unit) -> str:
    title = _PORT_TITLE.get(unit.role, unit.name) if unit.group != unit.name else unit.name
    if unit.role == "bias":
        return "bias\n1"
    if unit.role == "input":
        return f"{title}\ninput ({unit.size})"
    detail = f"{unit.role} ({unit.size})" if unit.group == unit.name else f"({unit.size})"
    if unit.role in ("state", "cell_output"):
        return f"{title}\n{detail}"
    return f"{title}\n{detail} {FORMULAS[unit.activation]}"


def _edge_style(connection: Connection) -> dict[str, str]:
    # Previous-step edges do not constrain the layout, which then follows the order of a step.
    style = {"style": "dashed", "constraint": "false"} if connection.delay else {"style": "solid"}
    if connection.pattern == "peephole":
        style["color"] = _PEEPHOLE_COLOUR
    elif not connection.gradient:
        style["color"] = _TRUNCATED_COLOUR
    else:
        style["color"] = "black"
    style["arrowhead"] = "normal" if connection.gradient else "empty"
    style["penwidth"] = "1.6" if connection.gradient else "1.0"
    return style


def _edge_label(connection: Connection) -> str:
    if connection.is_cec:
        return f"CEC {float(connection.init.constant)}"  # 1.0 in the papers; state_decay below 1
    if not connection.trainable:
        return "fixed"
    shape = "x".join(map(str, connection.shape))
    return f"{connection.pattern} {shape}" if connection.pattern != "full" else shape


def to_dot(plan: Plan, rankdir: str = "LR") -> str:
    """The DOT source of a plan's diagram."""
    dot = graphviz.Digraph(name=plan.name, graph_attr={
        "rankdir": rankdir, "label": f"{plan.name}  ({plan.n_parameters} parameters)",
        "labelloc": "t", "fontname": "Helvetica", "fontsize": "16", "compound": "true",
        "newrank": "true"}, node_attr={"fontname": "Helvetica", "fontsize": "11"},
        edge_attr={"fontname": "Helvetica", "fontsize": "9"})
    groups: dict[str, list[Unit]] = {}
    for unit in plan.units:
        groups.setdefault(unit.group, []).append(unit)
    for group_name, units in groups.items():
        if units[0].group == units[0].name:
            dot.node(units[0].name, _unit_label(units[0]), **_ROLE_STYLE[units[0].role])
            continue
        spec_group = plan.document.spec.groups[units[0].spec_path[1]]
        with dot.subgraph(name=f"cluster_{group_name}") as cluster:
            cluster.attr(label=f"memory block '{group_name}': {spec_group.blocks} block(s) x "
                               f"{spec_group.cells_per_block} cell(s)",
                         style="rounded,filled", fillcolor="#fffaf0", color="#c08a3e")
            for unit in units:
                cluster.node(unit.name, _unit_label(unit), **_ROLE_STYLE[unit.role])
            for connection in plan.connections:
                if connection.internal and connection.gate and connection.source.startswith(group_name + "."):
                    cluster.node(_multiplier(connection), _multiplier_label(connection),
                                 shape="circle", width="0.25", fixedsize="true", fontsize="10")
    for connection in plan.connections:
        _draw_connection(dot, connection)
    _legend(dot)
    return dot.source


def _multiplier(connection: Connection) -> str:
    return f"multiply/{connection.name}"


def _multiplier_label(connection: Connection) -> str:
    return "1-x" if connection.gate_complement else "x"


def _draw_connection(dot: graphviz.Digraph, connection: Connection) -> None:
    style = _edge_style(connection)
    label = _edge_label(connection)
    if connection.gate is None:
        dot.edge(connection.source, connection.target, label=label, **style)
        return
    multiplier = _multiplier(connection)
    if not connection.internal:
        dot.node(multiplier, _multiplier_label(connection), shape="circle", width="0.25",
                 fixedsize="true", fontsize="10")
    dot.edge(connection.source, multiplier, label=label, arrowhead="none",
             **{k: v for k, v in style.items() if k != "arrowhead"})
    dot.edge(multiplier, connection.target, **style)
    dot.edge(connection.gate, multiplier, color=_GATE_COLOUR, arrowhead="dot", penwidth="1.4",
             style="solid")


def _legend(dot: graphviz.Digraph) -> None:
    samples = [
        ("same step, carries gradient", dict(style="solid", color="black", arrowhead="normal", penwidth="1.6")),
        ("previous step (delay 1)", dict(style="dashed", color="black", arrowhead="normal", penwidth="1.6")),
        ("truncated: no gradient", dict(style="solid", color=_TRUNCATED_COLOUR, arrowhead="empty", penwidth="1.0")),
        ("peephole (dashed when it reads s(t-1))", dict(style="solid", color=_PEEPHOLE_COLOUR, arrowhead="empty", penwidth="1.0")),
        ("gate multiplies at x", dict(style="solid", color=_GATE_COLOUR, arrowhead="dot", penwidth="1.4")),
    ]
    with dot.subgraph(name="cluster_legend") as legend:
        legend.attr(label="legend", style="rounded", color="#bdbdbd", fontsize="11")
        for index, (text, style) in enumerate(samples):
            start, end = f"legend/{index}/from", f"legend/{index}/to"
            legend.node(start, "", shape="point", width="0.05")
            legend.node(end, text, shape="plaintext", fontsize="10")
            legend.edge(start, end, **style)


def render_plan(plan: Plan, output: str | Path, rankdir: str = "LR") -> Path:
    """Write the diagram; the extension (.svg, .png, .pdf, .dot) picks the format.

    Raises `RenderError` for an unknown extension, or when the ``dot`` binary is missing (after
    writing the ``.dot`` source next to the requested file, so nothing is lost).
    """
    output = Path(output)
    fmt = output.suffix.lower().lstrip(".")
    if fmt not in FORMATS:
        raise RenderError(f"cannot tell the format of '{output}': use an extension among "
                          + ", ".join(f".{f}" for f in FORMATS))
    source = to_dot(plan, rankdir)
    if fmt == "dot":
        write_atomically(output, source.encode())
        return output
    if shutil.which("dot") is None:
        fallback = output.with_suffix(".dot")
        write_atomically(fallback, source.encode())
        raise RenderError(f"graphviz's 'dot' binary was not found, so {output} was not drawn; "
                          f"wrote the DOT source to {fallback} instead. To draw it, {INSTALL_HINT}.")
    try:
        image = graphviz.Source(source).pipe(format=fmt)
    except graphviz.CalledProcessError as error:
        raise RenderError(f"graphviz failed to draw {output}: {error.stderr.decode(errors='replace').strip()}") from None
    write_atomically(output, image)
    return output
