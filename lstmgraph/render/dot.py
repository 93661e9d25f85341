"""Draw a plan as a graphviz diagram: one cluster per memory-block group, legend included.

`to_dot` is a pure function of the plan (node ids are unit and connection names, so the text
is deterministic and tests need no graphviz binary); `render_plan` writes a file whose format
follows its extension. Each gated connection passes through a small multiplication node
that its gate feeds, so a diagram shows where every gate multiplies. Edge styles are kept in
one table, `EDGE_STYLES`; the legend shows the ones a diagram uses.
"""

from __future__ import annotations

import math
import shutil
from html import escape
from pathlib import Path

import graphviz

from ..files import write_atomically
from ..graph.units import Connection, Unit
from ..layouts import check_not_own_file
from ..operations import ACTIVATIONS, GATE_SIDES
from ..plan import Plan, require_plan

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
_TRUNCATED_COLOUR = "#9e9e9e"

#: Edge kind -> (legend text, legend sample, graphviz attributes). An edge's attributes are
#: those of its kinds merged in this order (so ``delayed`` and ``peephole`` modify the base
#: ``carries`` or ``truncated``); the legend lists the kinds a diagram uses.
EDGE_STYLES: dict[str, tuple[str, str, dict[str, str]]] = {
    "carries": ("same step, carries gradient", "\u2014\u2014\u25b6",
                dict(style="solid", color="black", arrowhead="normal", penwidth="1.6")),
    "truncated": ("truncated: no gradient", "\u2014\u2014\u25b7",
                  dict(style="solid", color=_TRUNCATED_COLOUR, arrowhead="empty", penwidth="1.0")),
    "peephole": ("peephole", "\u2014\u2014\u25b7", dict(color="#7b1fa2")),
    # Previous-step edges do not constrain the layout, which then follows the order of a step.
    "delayed": ("previous step (delay 1)", "- - -\u25b6", dict(style="dashed", constraint="false")),
    "gate": ("gate multiplies at \u00d7", "\u2014\u2014\u25cf",
             dict(style="solid", color=_GATE_COLOUR, arrowhead="dot", penwidth="1.4")),
}
#: Ports of a gated self-connection (the GRU's carry of h) by rankdir: it leaves its unit
#: against the flow and comes back from the side, apart from the unit's other edges.
_LOOP_PORTS = {"LR": ("w", "s"), "RL": ("e", "s"), "TB": ("n", "e"), "BT": ("s", "e")}


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
    return f"{title}\n{detail}, {ACTIVATIONS[unit.activation].label}"


def _edge_kinds(connection: Connection) -> list[str]:
    kinds = ["carries" if connection.gradient else "truncated"]
    if connection.pattern == "peephole":
        kinds.append("peephole")
    if connection.delay:
        kinds.append("delayed")
    return kinds


def _edge_style(kinds: list[str]) -> dict[str, str]:
    style: dict[str, str] = {}
    for kind in kinds:
        style.update(EDGE_STYLES[kind][2])
    return style


def _edge_label(connection: Connection) -> str:
    """What the drawing does not already say: the CEC's weight, a connection's own name, a
    pattern other than full (a full matrix is target size x source size, both on the nodes;
    peepholes have their colour), and weights that are fixed. Inside a memory block all but the
    CEC are fixed one-to-one connections of weight 1, and go unlabelled."""
    if connection.is_cec:
        return f"CEC {float(connection.init.constant)}"  # 1.0 in the papers; state_decay below 1
    if connection.internal:
        return ""
    parts = []
    if connection.name != f"{connection.source}->{connection.target}":
        parts.append(connection.name)
    if connection.pattern == "one_to_one":
        parts.append("one-to-one")
    if not connection.trainable:
        parts.append("fixed")
    return ", ".join(parts)


def to_dot(plan: Plan, rankdir: str = "LR") -> str:
    """The DOT source of a plan's diagram."""
    require_plan(plan, "to_dot")
    kinds_used: set[str] = set()
    dot = graphviz.Digraph(name=plan.name, graph_attr={
        "rankdir": rankdir, "labelloc": "t", "fontname": "Helvetica", "compound": "true",
        "newrank": "true", "nodesep": "0.45"}, node_attr={"fontname": "Helvetica", "fontsize": "11"},
        edge_attr={"fontname": "Helvetica", "fontsize": "9"})
    groups: dict[str, list[Unit]] = {}
    for unit in plan.units:
        groups.setdefault(unit.group, []).append(unit)
    for group_name, units in groups.items():
        if units[0].group == units[0].name:
            dot.node(units[0].name, _unit_label(units[0]), **_ROLE_STYLE[units[0].role])
            continue
        blocks, cells = units[0].memory_block
        with dot.subgraph(name=f"cluster_{group_name}") as cluster:
            cluster.attr(style="rounded,filled", fillcolor="#fffaf0", color="#c08a3e")
            # The title is a node, not the cluster's label: edges are routed around nodes, so
            # neither an edge nor its label can cross it.
            cluster.node(f"title/{group_name}", f"memory block '{group_name}'\n{blocks} "
                         f"block(s) x {cells} cell(s)", shape="plaintext",
                         fontsize="13")
            for unit in units:
                cluster.node(unit.name, _unit_label(unit), **_ROLE_STYLE[unit.role])
            for connection in plan.connections:
                if connection.internal and connection.gate and connection.source.startswith(group_name + "."):
                    _multiplier_node(cluster, connection)
    for connection in plan.connections:
        kinds_used.update(_draw_connection(dot, connection, rankdir))
    dot.attr(label=_title_and_legend(plan, kinds_used))
    return dot.source


def _multiplier(connection: Connection) -> str:
    return f"multiply/{connection.name}"


def _multiplier_node(dot: graphviz.Digraph, connection: Connection) -> None:
    mark = GATE_SIDES[connection.gate_side].mark  # after the weights on the target side
    label = f"1-g {mark}" if connection.gate_complement else mark
    dot.node(_multiplier(connection), label, shape="circle", margin="0.02", width="0.25",
             fontsize="10")


def _draw_connection(dot: graphviz.Digraph, connection: Connection, rankdir: str) -> list[str]:
    """Draw one connection (through its multiplication node if gated); returns its edge kinds."""
    kinds = _edge_kinds(connection)
    style = _edge_style(kinds)
    label = _edge_label(connection)
    if connection.gate is None:
        dot.edge(connection.source, connection.target, label=label, **style)
        return kinds
    multiplier = _multiplier(connection)
    if not connection.internal:
        _multiplier_node(dot, connection)
    tail, head = connection.source, connection.target
    if tail == head and not connection.internal:
        out_port, in_port = _LOOP_PORTS[rankdir]
        tail, head = f"{tail}:{out_port}", f"{head}:{in_port}"
    dot.edge(tail, multiplier, label=label, arrowhead="none",
             **{k: v for k, v in style.items() if k != "arrowhead"})
    dot.edge(multiplier, head, **style)
    dot.edge(connection.gate, multiplier, **EDGE_STYLES["gate"][2])
    return kinds + ["gate"]


def _title_and_legend(plan: Plan, kinds_used: set[str]) -> str:
    """An HTML-like graph label: the title, and a sample of each edge style the diagram uses.
    Graphviz places the graph's label outside the drawing, so nothing can cover it."""
    cells = []
    for kind, (text, sample, attributes) in EDGE_STYLES.items():
        if kind in kinds_used:
            colour = attributes.get("color", "black")
            cells.append(f'<td align="left"><font point-size="10"><font color="{colour}">'
                         f'{escape(sample)}</font> {escape(text)}</font></td>')
    per_row = math.ceil(len(cells) / math.ceil(len(cells) / 3))  # at most 3 a row, balanced
    rows = "".join(f"<tr>{''.join(cells[i:i + per_row])}</tr>" for i in range(0, len(cells), per_row))
    title = escape(f"{plan.name}  ({plan.n_parameters} parameters)")
    return (f'<<table border="0" cellspacing="0" cellpadding="2"><tr><td><font point-size="16">'
            f'{title}</font></td></tr><tr><td><table border="0" cellspacing="6" cellpadding="0">'
            f'{rows}</table></td></tr></table>>')


def render_plan(plan: Plan, output: str | Path, rankdir: str = "LR") -> Path:
    """Write the diagram; the extension (.svg, .png, .pdf, .dot) picks the format.

    Raises `RenderError` for an unknown extension, or when the ``dot`` binary is missing (after
    writing the ``.dot`` source next to the requested file, so nothing is lost); `OutputError`
    for a file of a folder lstmgraph writes (`layouts.check_not_own_file`).
    """
    require_plan(plan, "render_plan")
    output = Path(output)
    fmt = output.suffix.lower().lstrip(".")
    if fmt not in FORMATS:
        raise RenderError(f"cannot tell the format of '{output}': use an extension among "
                          + ", ".join(f".{f}" for f in FORMATS))
    check_not_own_file(output)
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
