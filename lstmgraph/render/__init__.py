"""Drawing a compiled plan with graphviz; figures of training runs with matplotlib.

`tracing` runs trained networks with the numpy engine and `plots` reads training runs, so each
is imported only when one of its names is first used: drawing a plan (`lstmgraph render`) needs
`dot` alone.
"""

from typing import Any

from .dot import RenderError, render_plan, to_dot

_TRACING = ("PlotError", "trace_run")
_PLOTS = ("draw_figure", "plot_runs", "save_figure")

__all__ = ["RenderError", "render_plan", "to_dot", *sorted(_TRACING + _PLOTS)]


def __getattr__(name: str) -> Any:
    """The names of `tracing` and `plots`, imported on first use (PEP 562)."""
    if name in _TRACING:
        from . import tracing
        return getattr(tracing, name)
    if name in _PLOTS:
        from . import plots
        return getattr(plots, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
