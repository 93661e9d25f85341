"""Drawing a compiled plan with graphviz; figures of training runs with matplotlib."""

from .dot import RenderError, render_plan, to_dot
from .plots import PlotError, draw_figure, load_run, plot_runs, save_figure, trace_run

__all__ = ["PlotError", "RenderError", "draw_figure", "load_run", "plot_runs", "render_plan",
           "save_figure", "to_dot", "trace_run"]
