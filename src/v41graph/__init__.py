"""v41graph: a dataflow graph compiler with cost passes for DeepSeek-V4.1 inference.

The public API, and nothing else.
"""

from .version import __version__
from .backends.ask import Answer, by_op, compute_bound_batch, crossover, max_context, sensitivity, ttft_by_op_rate
from .backends.calculus import right_derivative
from .backends.diff import diff_text, graph_diff
from .backends.dot import render_dot, write_diagram
from .backends.compare import Side, compare
from .backends.dot_costs import render_cost_dot
from .backends.query import closed_form
from .backends.sweep import sweep
from .backends.sweep_result import SweepResult
from .costs.hardware import Hardware, builtin_hardware, load_hardware
from .errors import ConfigError, CostError, GraphError, PlanError, V41Error
from .costs.registry import register_op, registered_ops
from .ir.graph import Edge, Graph, GraphBuilder, Node
from .ir.verify import verify
from .ir.ledger import Ledger, Row, ledger
from .ir.lower.blocks import lower
from .ir.plan import Plan, Request
from .ir.rewrite import check_convex, insert, insert_after, replace_nodes
from .model.config import DraftBlockSpec, LayerSpec, ModelSpec, builtin_models, load_model, model_from_config
from .model.inventory import Inventory, WeightTensor, inventory
from .model.memory import CacheMemory, cache_memory, naive_global_bytes
from .passes.fusion_rules import FusionRule, register_fusion_rule, unregister_fusion_rule
from .passes.plugins import load_plugins
from .passes.registry import fuse_nodes, register_pass, registered_passes, unregister_pass


def compile(model: ModelSpec, plan: Plan, hardware="h200_sxm"):  # noqa: A001 - the documented name
    """Lower ``plan`` on ``model``, run the passes and schedule it on ``hardware``.

    Returns the :class:`~v41graph.passes.Compiled` result; ``.report("schedule")`` is the
    critical-path schedule and ``.graph`` carries the ``cost`` and ``schedule`` side tables.

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
]
