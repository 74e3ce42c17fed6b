"""v41graph: a dataflow graph compiler with cost passes for DeepSeek-V4.1 inference.

The public API, and nothing else.
"""

from .errors import ConfigError, CostError, GraphError, PlanError, V41Error
from .graph import Edge, Graph, Node, verify
from .hardware import Hardware, builtin_hardware, load_hardware
from .inventory import Inventory, WeightTensor, inventory
from .ledger import Ledger, Row, ledger
from .lower import lower
from .memory import CacheMemory, cache_memory, naive_global_bytes
from .model import DraftBlockSpec, LayerSpec, ModelSpec, builtin_models, load_model, model_from_config
from .plan import Plan, Request

__all__ = [
    "ConfigError", "CostError", "GraphError", "PlanError", "V41Error",
    "Edge", "Graph", "Node", "verify",
    "Hardware", "builtin_hardware", "load_hardware",
    "Inventory", "WeightTensor", "inventory",
    "Ledger", "Row", "ledger", "lower",
    "CacheMemory", "cache_memory", "naive_global_bytes",
    "DraftBlockSpec", "LayerSpec", "ModelSpec", "builtin_models", "load_model", "model_from_config",
    "Plan", "Request",
]
