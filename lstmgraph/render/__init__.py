"""Drawing a compiled plan with graphviz; figures of training runs with matplotlib.

`plots` runs trained networks with the numpy engine and reads training runs, so it is imported
only when one of its names is first used: drawing a plan (`lstmgraph render`) needs `dot` alone.
"""

from typing import Any

from .dot import RenderError, render_plan, to_dot

_PLOTS = ("PlotError", "draw_figure", "plot_runs", "save_figure", "trace_run")

__all__ = ["RenderError", "render_plan", "to_dot", *_PLOTS]


def __getattr__(name: str) -> Any:
    """The names of `plots`, imported on first use (PEP 562)."""
    if name in _PLOTS:
        from . import plots
        return getattr(plots, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
