"""v41graph: a dataflow graph compiler with cost passes for DeepSeek-V4.1 inference.

The everyday path, and nothing else: load a model, build a plan, compile it, ask for closed
forms, sweep, compare, draw or write the interactive page; the errors. Two named submodules hold
the rest of the public API:

- :mod:`v41graph.extend` — building and extending graphs: ``GraphBuilder``, rewrites, op kinds,
  passes, fusion rules, plugins;
- :mod:`v41graph.ask` — questions answered by solving, derivatives and graph diffs.

Every other name lives in the module of its layer (docs/architecture.md, "Public surface").
"""

import importlib as _importlib

from .version import __version__

#: THE list of exports: where each top-level name lives. A name is imported the first time it is
#: read (PEP 562), so ``import v41graph`` stays cheap and ``from v41graph import Plan`` loads only
#: what ``Plan`` needs (issue 14).
_EXPORTS = {
    "model.config": ("ModelSpec", "builtin_models", "load_model"),
    "ir.plan": ("Plan", "Request"),
    "ir.lower.blocks": ("lower",),
    "passes": ("compile",),
    "costs.hardware": ("Hardware", "load_hardware"),
    "costs.vocabulary": ("formats",),
    "model.parameters": ("parameters",),
    "analysis.symbolic.query": ("closed_form",),
    "analysis.sweep.sweep_grid": ("sweep",),
    "analysis.comparison": ("Side", "compare"),
    "render.dot": ("render_dot", "write_diagram"),
    "errors": ("ConfigError", "CostError", "GraphError", "PlanError", "V41Error"),
}
_HOME = {name: module for module, names in _EXPORTS.items() for name in names}
_NAMED_SUBMODULES = ("extend", "ask")
__all__ = ["__version__", *_HOME, *_NAMED_SUBMODULES]

#: the layers, reachable as attributes (``v41graph.passes``) as when every layer was imported up front
_LAYERS = ("algebra", "analysis", "cli", "costs", "errors", "ir", "model", "passes", "render", "symbols",
           "version", "workload")


def __getattr__(name: str):
    """A public name, imported from its module on first use (then cached here); a submodule, imported."""
    if name in _HOME:
        value = getattr(_importlib.import_module(f".{_HOME[name]}", __name__), name)
        globals()[name] = value
        return value
    if name in _NAMED_SUBMODULES or name in _LAYERS:
        return _importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)
