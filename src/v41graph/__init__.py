"""v41graph: a dataflow graph compiler with cost passes for DeepSeek-V4.1 inference.

The public API, and nothing else.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from .version import __version__

if TYPE_CHECKING:  # compile's annotations
    from .ir.plan import Plan
    from .model.config import ModelSpec

#: where each public name lives, imported the first time it is read (PEP 562): ``import v41graph``
#: stays cheap, and ``from v41graph import Plan`` loads only what ``Plan`` needs (issue 14)
_EXPORTS = {
    "backends.ask": ("Answer", "by_op", "compute_bound_batch", "crossover", "max_context", "sensitivity",
                     "ttft_by_op_rate"),
    "backends.calculus": ("right_derivative",),
    "backends.diff": ("diff_text", "graph_diff"),
    "backends.dot": ("render_dot", "write_diagram"),
    "backends.compare": ("Side", "compare"),
    "backends.dot_costs": ("render_cost_dot",),
    "backends.query": ("closed_form",),
    "backends.sweep": ("sweep",),
    "backends.sweep_result": ("SweepResult",),
    "costs.hardware": ("Hardware", "builtin_hardware", "load_hardware"),
    "errors": ("ConfigError", "CostError", "GraphError", "PlanError", "V41Error"),
    "costs.registry": ("register_op", "registered_ops"),
    "ir.graph": ("Edge", "Graph", "GraphBuilder", "Node"),
    "ir.verify": ("verify",),
    "ir.ledger": ("Ledger", "Row", "ledger"),
    "ir.lower.blocks": ("lower",),
    "ir.plan": ("Plan", "Request"),
    "ir.rewrite": ("check_convex", "insert", "insert_after", "replace_nodes"),
    "model.config": ("DraftBlockSpec", "LayerSpec", "ModelSpec", "builtin_models", "load_model", "model_from_config"),
    "model.inventory": ("Inventory", "WeightTensor", "inventory"),
    "model.memory": ("CacheMemory", "cache_memory", "naive_global_bytes"),
    "passes.fusion_rules": ("FusionRule", "register_fusion_rule", "unregister_fusion_rule"),
    "passes.plugins": ("load_plugins",),
    "passes.registry": ("fuse_nodes", "register_pass", "registered_passes", "unregister_pass"),
    "render.html_report": ("write_html",),
}
_HOME = {name: module for module, names in _EXPORTS.items() for name in names}
#: the package's own modules and layers, reachable as attributes as when every layer was imported up front
_SUBMODULES = ("algebra", "analysis", "backends", "cli", "costs", "errors", "ir", "model", "passes", "render", "symbols", "version")


def __getattr__(name: str):
    """A public name, imported from its module on first use (then cached here); a layer, imported."""
    if name in _HOME:
        value = getattr(importlib.import_module(f".{_HOME[name]}", __name__), name)
        globals()[name] = value
        return value
    if name in _SUBMODULES:
        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


def compile(model: ModelSpec, plan: Plan, hardware="h200_sxm"):  # noqa: A001 - the documented name
    """Lower ``plan`` on ``model``, run the passes and schedule it on ``hardware``.

    Returns the :class:`~v41graph.passes.Compiled` result; ``.report("schedule")`` is the
    critical-path schedule and ``.graph`` carries the ``cost`` and ``schedule`` side tables.

    >>> from v41graph import Plan, Request, load_model
    >>> r = compile(load_model(), Plan([Request.prefill(8192)], decoder_replay="bounded")).report("schedule")
    >>> r.hardware, r.total_time_s == max(r.critical_path_s, r.resource_bound_s)
    ('h200_sxm', True)
    """
    from .passes import schedule
    return schedule(model, plan, hardware)


__all__ = [
    "__version__",
    "ConfigError", "CostError", "GraphError", "PlanError", "V41Error",
    "Edge", "Graph", "Node", "verify",
    "Hardware", "builtin_hardware", "load_hardware",
    "Inventory", "WeightTensor", "inventory",
    "Ledger", "Row", "ledger", "lower",
    "CacheMemory", "cache_memory", "naive_global_bytes",
    "DraftBlockSpec", "LayerSpec", "ModelSpec", "builtin_models", "load_model", "model_from_config",
    "Plan", "Request", "compile", "render_dot", "write_diagram", "closed_form",
    # building and extending (ir/rewrite.py, costs/registry.py, passes/registry.py, passes/plugins.py)
    "GraphBuilder", "check_convex", "insert", "insert_after", "replace_nodes", "fuse_nodes",
    "register_op", "registered_ops", "register_pass", "registered_passes", "unregister_pass",
    "FusionRule", "register_fusion_rule", "unregister_fusion_rule", "load_plugins",
    # questions answered by solving (backends/ask.py, calculus.py) and graph diff (backends/diff.py)
    "Answer", "by_op", "compute_bound_batch", "crossover", "max_context", "sensitivity", "ttft_by_op_rate",
    "right_derivative", "graph_diff", "diff_text",
    "sweep", "SweepResult", "compare", "Side", "render_cost_dot",
    # the interactive page of a plan (render/html_report.py)
    "write_html",
]
