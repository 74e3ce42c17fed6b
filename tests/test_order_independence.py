"""Each test runs in a fresh session (conftest.py) and so finds the built-in state whatever ran before it
(issue 22 item 5, issue 36 item 4): the first test pollutes on purpose — a compiled plan in the shape
memos, a user op kind, a pass, a fusion rule, a sharding row, a hardware description, a loaded plugin —
and the test after it (pytest runs a module's tests in file order) finds none of it. Without the fresh
session the second test fails."""

from __future__ import annotations

from dataclasses import dataclass, replace
import importlib
from types import SimpleNamespace

import pytest

from v41graph import Plan, Request, compile, load_model
from v41graph.costs.hardware import load_hardware, register_hardware
from v41graph.extend import (FusionRule, register_fusion_rule, register_op, register_pass, register_sharding,
                             user_sharding_rules)
from v41graph.costs.rules import op_cost
from v41graph.costs.value import Cost
from v41graph.errors import CostError
from v41graph.ir.ops import Op
from v41graph.reuse import Memo, _REGISTRY
from v41graph.passes import PassResult

# by module path: the packages re-export functions of the same names
op_registry = importlib.import_module("v41graph.costs.registry")
pass_registry = importlib.import_module("v41graph.passes.registry")
fusion_rules = importlib.import_module("v41graph.passes.fusion_rules")
plugins = importlib.import_module("v41graph.passes.plugins")
hardware = importlib.import_module("v41graph.costs.hardware")


@dataclass(frozen=True)
class PollutingOp(Op):
    dim: int


@dataclass(frozen=True)
class PollutingPass:
    name: str = "polluting"

    def __call__(self, graph, ctx):
        return PassResult(self.name, graph, 0, None)


def _memo_entries() -> int:
    return sum(len(m._table) for m in list(_REGISTRY.values()) if isinstance(m, Memo))


def _pollute():
    register_op(PollutingOp, lambda op, node, ctx, t: Cost.of(flops={"fp32": t}))  # (registering empties memos)
    register_pass(PollutingPass(), after="fusion")
    register_fusion_rule(FusionRule("polluting", lambda graph: []))
    register_sharding(PollutingOp, "column", collective="all_gather")
    register_hardware(replace(load_hardware("h200_sxm"), name="polluting_gpu"))


def test_a_pollutes_every_registry_and_memo():
    _pollute()
    plugins._loaded().keys.add(("v41graph.ops", "polluting", "nowhere:hook"))
    compile(load_model(), Plan([Request.prefill(4096)]))
    assert _memo_entries() > 0
    assert op_registry.registered_ops() == ("PollutingOp",)
    assert op_cost(PollutingOp(2), None, None, 10).flop("fp32") == 10
    assert pass_registry.registered_passes() == ("polluting",)
    assert [r.name for r in fusion_rules.fusion_rules()] == ["polluting"]
    assert [r.name for r in user_sharding_rules()] == ["user:PollutingOp"]
    assert load_hardware("polluting_gpu").hbm_capacity == 141_000_000_000


def test_b_finds_the_built_in_state():
    assert _memo_entries() == 0
    assert op_registry.registered_ops() == ()
    with pytest.raises(CostError, match="no cost rule for op kind PollutingOp .node 'L0.p'"):  # as if never registered
        op_cost(PollutingOp(2), SimpleNamespace(id="L0.p"), None, 10)
    assert pass_registry.registered_passes() == () and fusion_rules.fusion_rules() == ()
    assert user_sharding_rules() == () and hardware._registered() == {}
    assert not plugins._loaded().keys and not plugins._loaded().scanned
    # the same names register again: nothing of test_a is left
    _pollute()
