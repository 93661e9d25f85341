"""Stage 3, the execution plan: step order and parameter layout."""

from .compile import ParameterSlot, Plan, compile_plan, require_plan

__all__ = ["ParameterSlot", "Plan", "compile_plan", "require_plan"]
