"""Building and extending graphs: the public names for code that adds to v41graph.

Five extension points, each in the layer that owns the fact (docs/architecture.md, "Extending"):
an op kind and its cost rule (``register_op``), how it splits under TP/EP/DP
(``register_sharding``), a rewrite (``insert``, ``insert_after``, ``replace_nodes``, checked by
``verify``), a pass (``register_pass``) and a fusion rule (``register_fusion_rule``); third-party
packages register through entry points (``load_plugins``); ``register_hardware`` names a GPU description.
Every registration belongs to the current session (:mod:`v41graph.session`). ``GraphBuilder``, ``Graph``, ``Node``
and ``Edge`` build graphs by hand; ``compile_built_graph`` prices one and ``built_closed_form``
gives its closed forms. ``formats``, ``format_aliases``, ``op_kinds``, ``edge_roles`` and
``precisions`` list the vocabulary.

>>> from v41graph import Plan, Request, load_model, lower
>>> from v41graph.extend import verify
>>> g = lower(load_model(), Plan([Request.prefill(128)]))
>>> verify(g) is g  # the checked graph, unchanged
True
"""

from .analysis.symbolic.built_forms import built_closed_form
from .costs.hardware import register_hardware
from .costs.registry import register_op, registered_ops
from .costs.vocabulary import edge_roles, format_aliases, formats, op_kinds, precisions
from .ir.graph import Edge, Graph, GraphBuilder, Node
from .ir.rewrite import check_convex, insert, insert_after, replace_nodes
from .ir.verify import verify
from .passes.fusion_rules import FusionRule, register_fusion_rule, unregister_fusion_rule
from .model.sharding import Mapping
from .model.user_sharding import (register_sharding, reset_sharding, sharding_rule, unregister_sharding,
                                  user_sharding_rules)
from .passes.built import compile_built_graph
from .passes.plugins import load_plugins
from .passes.registry import fuse_nodes, register_pass, registered_passes, unregister_pass

__all__ = ["Edge", "FusionRule", "Graph", "GraphBuilder", "Mapping", "Node", "built_closed_form", "check_convex",
           "compile_built_graph", "edge_roles", "format_aliases", "formats", "fuse_nodes", "insert", "insert_after",
           "load_plugins", "op_kinds", "precisions", "register_fusion_rule", "register_hardware", "register_op",
           "register_pass", "register_sharding", "registered_ops", "registered_passes", "replace_nodes",
           "reset_sharding", "sharding_rule", "unregister_fusion_rule", "unregister_pass", "unregister_sharding",
           "user_sharding_rules", "verify"]
