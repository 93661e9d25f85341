"""Stage 2, the structure: memory blocks expanded into primitives, and the networkx graph."""

from .build import NetworkGraph, build_graph
from .units import Connection, Unit

__all__ = ["Connection", "NetworkGraph", "Unit", "build_graph"]
