"""The ``v41graph`` command (docs/architecture.md, "cli"): ``main`` parses and dispatches; ``plan_options``
turns plan flags into a :class:`~v41graph.ir.plan.Plan`."""

from .main import main

__all__ = ["main"]
