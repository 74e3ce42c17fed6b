"""Sessions isolate what the package registers and keeps (issue 36 item 4): an op kind, a pass, a fusion
rule, a sharding row or a hardware description registered in one session is absent in another and in the
default one; the memos one session filled are not read by another (a compile there starts from nothing);
leaving a session restores the one before it, and re-entering a session finds what it kept."""

from __future__ import annotations

from dataclasses import dataclass, replace
import threading

import pytest

from v41graph import Plan, Request, compile
from v41graph.costs.hardware import load_hardware, register_hardware
from v41graph.costs.registry import prices_as_default
from v41graph.costs.node import static_signature
from v41graph.costs.rules import op_cost
from v41graph.costs.value import Cost
from v41graph.errors import CostError, GraphError, PlanError
from v41graph.extend import (FusionRule, register_fusion_rule, register_op, register_pass, register_sharding,
                             registered_ops, registered_passes, user_sharding_rules)
from v41graph.ir.ops import Op
from v41graph.ir.ops.base import CompressorState
from v41graph.model.sharding import rule_for_node
from v41graph.passes import PassResult
from v41graph.passes.fusion_rules import fusion_rules
from v41graph.reuse import Memo, _REGISTRY
from v41graph.session import Session, current, default, use


@dataclass(frozen=True)
class Doubled(Op):
    dim: int


@dataclass(frozen=True)
class Noted:
    name: str = "noted"

    def __call__(self, graph, ctx):
        return PassResult(self.name, graph, 0, len(graph.nodes))


def _register_everything() -> None:
    register_op(Doubled, lambda op, node, ctx, t: Cost.of(flops={"fp32": 2 * t * op.dim}))
    register_pass(Noted(), after="fusion")
    register_fusion_rule(FusionRule("nothing", lambda graph: []))
    register_sharding(Doubled, "row", collective="all_reduce")
    register_hardware(replace(load_hardware("h200_sxm"), name="h200_lab", hbm_capacity=100_000_000_000))


def _registered() -> dict:
    """What the current session has registered, read through the public functions."""
    try:
        lab = load_hardware("h200_lab").hbm_capacity
    except CostError:
        lab = None
    return {"ops": registered_ops(), "passes": registered_passes(), "fusion": [r.name for r in fusion_rules()],
            "sharding": [r.name for r in user_sharding_rules()], "hardware": lab}


NOTHING = {"ops": (), "passes": (), "fusion": [], "sharding": [], "hardware": None}
EVERYTHING = {"ops": ("Doubled",), "passes": ("noted",), "fusion": ["nothing"], "sharding": ["user:Doubled"],
              "hardware": 100_000_000_000}


def test_what_one_session_registers_no_other_sees():
    first, second = Session(), Session()
    with first:
        _register_everything()
        assert _registered() == EVERYTHING
        assert op_cost(Doubled(3), None, None, 10).flop("fp32") == 60
        assert rule_for_node("L3.doubled", Doubled(3)).split == "row"
    with second:
        assert _registered() == NOTHING
        with pytest.raises(PlanError, match="no rule for node 'L3.doubled' .op kind Doubled."):
            rule_for_node("L3.doubled", Doubled(3))
        # the same names register again, with other rules: each session prices by its own
        register_op(Doubled, lambda op, node, ctx, t: Cost.of(flops={"fp32": t}))
        assert op_cost(Doubled(3), None, None, 10).flop("fp32") == 10
    with use(default()):
        assert _registered() == NOTHING
    with first:  # re-entered: what it registered is still there
        assert _registered() == EVERYTHING and op_cost(Doubled(3), None, None, 10).flop("fp32") == 60
    assert _registered() == NOTHING  # the test's own session (conftest.py)


def test_a_registration_twice_in_one_session_is_still_an_error():
    register_pass(Noted(), after="fusion")
    with pytest.raises(GraphError, match="a pass named 'noted' exists already"):
        register_pass(Noted(), after="fusion")
    register_op(Doubled, lambda op, node, ctx, t: Cost())
    with pytest.raises(CostError, match="op kind Doubled already has a cost rule"):
        register_op(Doubled, lambda op, node, ctx, t: Cost())
    with pytest.raises(CostError, match="hardware name 'h200_sxm' exists already"):
        register_hardware(load_hardware("h200_sxm"))


def _entries() -> dict[str, int]:
    """Entries per memo in the current session."""
    return {m.name: len(m) for m in list(_REGISTRY.values()) if isinstance(m, Memo) and len(m)}


def test_memos_are_the_sessions(flash, monkeypatch):
    monkeypatch.delenv("V41GRAPH_NO_CACHE", raising=False)  # (read when a compile starts) memos on
    plan = Plan([Request.prefill(4096), Request.decode(2048, copies=8)])
    first, second = Session(), Session()
    with first:
        a = compile(flash, plan).report("schedule").total_time_s
        kept = _entries()
    assert len(kept) >= 5  # the lowering, pass and pricing memos of one compile
    with second:
        assert _entries() == {}  # nothing of the first session's compile
        b = compile(flash, plan).report("schedule").total_time_s
        assert _entries() == kept  # it computed all the first one did: a compile from nothing
    assert a == b
    with first:
        assert _entries() == kept  # the first session's memos outlived the second's block


def test_current_is_the_innermost_block_and_exit_restores():
    outer, inner = Session(), Session()
    here = current()
    with outer:
        with use(inner) as s:
            assert s is inner and current() is inner
        assert current() is outer
    assert current() is here and here is not default()  # conftest.py runs each test in its own session


def test_a_new_thread_starts_in_the_default_session():
    seen = []
    with Session():
        register_pass(Noted(), after="fusion")
        worker = threading.Thread(target=lambda: seen.append((current() is default(), registered_passes())))
        worker.start()
        worker.join()
    assert seen == [(True, ())]


def test_a_rule_for_a_built_in_storage_kind_stays_in_its_session(flash):
    """The rule table is the process's; a built-in storage kind priced by a session's rule prices as the
    default (nothing) everywhere else, with the same shared signatures (tests/test_reuse_measured.py)."""
    plan = Plan([Request.prefill(4000)])
    before = compile(flash, plan).report("schedule")
    assert before.by_op.get("CompressorState", 0) == 0
    with Session():
        register_op(CompressorState, lambda op, node, ctx, t: Cost.of(bytes={"workspace": 10**9}))
        assert not prices_as_default(CompressorState)
        assert compile(flash, plan).report("schedule").by_op["CompressorState"] > 0
    with Session():
        assert prices_as_default(CompressorState)
        compiled = compile(flash, plan)
        again = compiled.report("schedule")
        assert again.by_op.get("CompressorState", 0) == 0 and again.total_time_s == before.total_time_s
        states = [n for n in compiled.graph.nodes.values() if isinstance(n.op, CompressorState)]
        assert states and {static_signature(compiled.graph, n)[0][0] for n in states} == {"storage"}
