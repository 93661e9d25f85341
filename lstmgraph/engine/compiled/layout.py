"""Flat buffers of the compiled executor: where every unit, weight and trace lives.

Per trial: ``theta`` (the trainable weights, in `plan.parameters` order), ``fixed`` (the other
connections), ``act``/``prev`` (every unit group's activation this step and last step),
``traces`` (the eligibility traces T_s(t-1) the `TraceLayout` keeps) and, inside a step,
``cur`` (this step's sensitivities of every unit upstream of a traced one).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..simulator import Simulator
from ..traces import DENSE, TraceLayout


@dataclass(frozen=True)
class BufferLayout:
    act: dict[str, int]            # unit -> offset in act/prev
    n_act: int
    theta: dict[str, int]          # trainable connection -> offset
    n_theta: int
    fixed: dict[str, int]          # fixed connection -> offset
    n_fixed: int
    cur: dict[tuple[str, str], int]    # (unit, group) -> offset of this step's sensitivity
    n_cur: int
    traces: dict[tuple[str, str], int]  # (traced unit, group) -> offset of T(t-1)
    n_traces: int
    width: dict[tuple[str, str], int]  # columns per unit row of a sensitivity


def buffer_layout(sim: Simulator, layout: TraceLayout) -> BufferLayout:
    act, offset = {}, 0
    for unit in sim.plan.units:
        act[unit.name] = offset
        offset += unit.size
    n_act = offset
    theta = {slot.connection: slot.offset for slot in sim.plan.parameters}
    fixed, offset = {}, 0
    for connection in sim.plan.connections:
        if not connection.trainable:
            fixed[connection.name] = offset
            offset += connection.size
    n_fixed = offset
    cur, width, offset = {}, {}, 0
    for unit in layout.forward_units:
        for group in layout.nonzero(unit):
            info = layout.groups[group]
            width[(unit, group)] = info.size if layout.rep[(unit, group)] is DENSE else info.columns
            cur[(unit, group)] = offset
            offset += sim.units[unit].size * width[(unit, group)]
    n_cur = offset
    traces, offset = {}, 0
    for unit in layout.traced:
        for group in layout.nonzero(unit):
            traces[(unit, group)] = offset
            offset += sim.units[unit].size * width[(unit, group)]
    return BufferLayout(act, n_act, theta, sim.plan.n_parameters, fixed, n_fixed, cur, n_cur,
                        traces, offset, width)
