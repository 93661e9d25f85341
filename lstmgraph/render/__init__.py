"""Drawing a compiled plan with graphviz."""

from .dot import RenderError, render_plan, to_dot

__all__ = ["RenderError", "render_plan", "to_dot"]
