"""The autouse reset in conftest.py undoes every kind of state a test can leave behind (issue 22,
item 5): the first test pollutes on purpose — a compiled plan in the shape memos, a user op kind,
a pass, a fusion rule, a loaded plugin — and the test after it (pytest runs a module's tests in
file order) finds the built-in state. Without the reset the second test fails."""

from __future__ import annotations

from dataclasses import dataclass

from conftest import BUILT_IN, _OP_RULES, fusion_rules, op_registry, pass_registry, plugins

from v41graph import Plan, Request, compile, load_model
from v41graph.extend import FusionRule, register_fusion_rule, register_op, register_pass
from v41graph.costs.rules import op_cost
from v41graph.costs.value import Cost
from v41graph.ir.ops import Op
from v41graph.reuse import Memo, _REGISTRY
from v41graph.passes import PassResult


@dataclass(frozen=True)
class PollutingOp(Op):
    dim: int


@dataclass(frozen=True)
class PollutingPass:
    name: str = "polluting"

    def __call__(self, graph, ctx):
        return PassResult(self.name, graph, 0, None)


def test_a_pollutes_every_registry_and_memo():
    register_op(PollutingOp, lambda op, node, ctx, t: Cost.of(flops={"fp32": t}))  # (registering empties memos)
    register_pass(PollutingPass(), after="fusion")
    register_fusion_rule(FusionRule("polluting", lambda graph: []))
    plugins._LOADED.add(("v41graph.ops", "polluting", "nowhere:hook"))
    compile(load_model(), Plan([Request.prefill(4096)]))
    assert any(len(m._table) for m in list(_REGISTRY.values()) if isinstance(m, Memo))
    assert "PollutingOp" in op_registry.registered_ops() and PollutingOp in _OP_RULES
    assert "polluting" in pass_registry.registered_passes()
    assert [r.name for r in fusion_rules.fusion_rules()] == ["polluting"]


def test_b_finds_the_built_in_state():
    assert all(len(m._table) == 0 for m in list(_REGISTRY.values()) if isinstance(m, Memo))
    assert op_registry.registered_ops() == () and PollutingOp not in _OP_RULES
    assert op_cost.dispatch(PollutingOp) is op_cost.dispatch(Op)  # no stale dispatch cache either
    assert pass_registry.registered_passes() == () and fusion_rules.fusion_rules() == ()
    assert (plugins._LOADED, plugins._SCANNED) == BUILT_IN["plugins"]
    # the same names register again: nothing of test_a is left
    register_op(PollutingOp, lambda op, node, ctx, t: Cost.of(flops={"fp32": t}))
    register_pass(PollutingPass(), after="fusion")
    register_fusion_rule(FusionRule("polluting", lambda graph: []))
