"""Fixtures shared by the test modules, and the reset that keeps them independent of order.

Every test starts from the package's built-in state: the shape memos are emptied and the op,
pass, fusion-rule, sharding-row and plugin registries hold only what the package itself registers. So no test
passes (or fails) because of what another test compiled or registered before it, in any order;
``tests/test_order_independence.py`` checks that the reset undoes each kind of pollution.
"""

from __future__ import annotations

import importlib
import inspect

import pytest

from v41graph import load_model
from v41graph.costs.rules import op_cost
from v41graph.ir.shapes import clear_caches
from v41graph.model.user_sharding import reset_sharding, user_sharding_rules

# by module path: the packages re-export functions of the same names
op_registry = importlib.import_module("v41graph.costs.registry")
pass_registry = importlib.import_module("v41graph.passes.registry")
fusion_rules = importlib.import_module("v41graph.passes.fusion_rules")
plugins = importlib.import_module("v41graph.passes.plugins")

#: the rule table's own dict (``op_cost.registry`` is a read-only view of it)
_OP_RULES = inspect.getclosurevars(op_cost.dispatch).nonlocals["registry"]


def _snapshot() -> dict:
    return {"op_rules": dict(_OP_RULES), "user_ops": dict(op_registry._USER),
            "passes": dict(pass_registry._PASSES), "fusion_rules": dict(fusion_rules._RULES),
            "plugins": (set(plugins._LOADED), plugins._SCANNED)}


#: taken when conftest is imported, before any test module registers anything
BUILT_IN = _snapshot()


def restore_built_in_state() -> None:
    """Empty every memo and put each registry back to :data:`BUILT_IN` (only what differs, so an
    untouched registry costs nothing: no plugin rescan, no dispatch cache cleared)."""
    clear_caches()
    if _OP_RULES != BUILT_IN["op_rules"]:
        _OP_RULES.clear()
        _OP_RULES.update(BUILT_IN["op_rules"])
        op_cost._clear_cache()  # singledispatch caches the rule found per class
    for table, saved in ((op_registry._USER, BUILT_IN["user_ops"]), (pass_registry._PASSES, BUILT_IN["passes"]),
                         (fusion_rules._RULES, BUILT_IN["fusion_rules"])):
        if table != saved:
            table.clear()
            table.update(saved)
    if user_sharding_rules():  # the user rows of the sharding table (the built-in rows never change)
        reset_sharding()
    loaded, scanned = BUILT_IN["plugins"]
    if plugins._LOADED != loaded:
        plugins._LOADED.clear()
        plugins._LOADED.update(loaded)
        plugins._SCANNED = scanned


@pytest.fixture(autouse=True)
def _built_in_state():
    """Each test starts from the built-in state (see the module docstring)."""
    restore_built_in_state()
    yield


@pytest.fixture(scope="session")
def flash():
    """The embedded DeepSeek-V4.1-Flash model."""
    return load_model()


@pytest.fixture(scope="session")
def v4_flash():
    """The DeepSeek-V4-Flash baseline."""
    return load_model("deepseek-v4-flash")
