"""Building and extending graphs: the public names for code that adds to v41graph.

Four extension points, each in the layer that owns the fact (docs/architecture.md, "Extending"):
an op kind and its cost rule (``register_op``), a rewrite (``insert``, ``insert_after``,
``replace_nodes``, checked by ``verify``), a pass (``register_pass``) and a fusion rule
(``register_fusion_rule``); third-party packages register through entry points
(``load_plugins``). ``GraphBuilder``, ``Graph``, ``Node`` and ``Edge`` build graphs by hand.

>>> from v41graph import Plan, Request, load_model, lower
>>> from v41graph.extend import verify
>>> g = lower(load_model(), Plan([Request.prefill(128)]))
>>> verify(g) is g  # the checked graph, unchanged
True
"""

from .costs.registry import register_op, registered_ops
from .ir.graph import Edge, Graph, GraphBuilder, Node
from .ir.rewrite import check_convex, insert, insert_after, replace_nodes
from .ir.verify import verify
from .passes.fusion_rules import FusionRule, register_fusion_rule, unregister_fusion_rule
from .passes.plugins import load_plugins
from .passes.registry import fuse_nodes, register_pass, registered_passes, unregister_pass

__all__ = ["Edge", "FusionRule", "Graph", "GraphBuilder", "Node", "check_convex", "fuse_nodes", "insert",
           "insert_after", "load_plugins", "register_fusion_rule", "register_op", "register_pass",
           "registered_ops", "registered_passes", "replace_nodes", "unregister_fusion_rule", "unregister_pass",
           "verify"]
