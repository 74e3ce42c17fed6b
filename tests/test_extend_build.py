"""Sharding rows of one's own (model/user_sharding.py), hand-built graphs compiled and in closed
form (passes/built.py, analysis/symbolic/built_forms.py). Figures by hand: V4.1-Flash has 40 layers whose
attention ``q_norm`` normalises the 1280-wide query latent."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import pytest

from v41graph import Plan, PlanError, Request, compile, load_model
from v41graph.ask import by_op
from v41graph.extend import (GraphBuilder, Mapping, Node, built_closed_form, compile_built_graph, insert_after,
                             register_op, register_pass, register_sharding, registered_ops, reset_sharding,
                             sharding_rule, unregister_pass, unregister_sharding, user_sharding_rules)
from v41graph.costs.value import Cost
from v41graph.ir.ops import Gemm, GraphInput, Norm, Op
from v41graph.model.sharding import rule_for_node
from v41graph.passes import PassResult
from v41graph.symbols import N


@dataclass(frozen=True)
class QGain(Op):
    dim: int
    needs: ClassVar = ("x",)


def _gain_rule(op, node, ctx, t):
    return Cost.of(flops={"fp32": t * op.dim})


def _ensure_op():
    if "QGain" not in registered_ops():  # a registry reset between tests may have dropped it
        register_op(QGain, _gain_rule)


@dataclass(frozen=True)
class AddGain:
    name: str = "q_gain"

    def __call__(self, graph, ctx):
        for nid in sorted(n for n in graph.nodes if n.endswith(".q_norm") and not n.endswith("idx.q_norm")):
            norm = graph.nodes[nid]
            graph = insert_after(graph, nid, Node(nid.replace("q_norm", "q_gain"), QGain(norm.op.dim), norm.layer,
                                                  norm.stage, norm.path, rows=norm.rows, count=norm.count))
        return PassResult(self.name, graph, 40, None)


def test_insert_after_q_norm_prices_under_tp8_ep8_once_the_op_has_a_row():
    _ensure_op()
    model, plan = load_model(), Plan([Request.prefill(4096)], tp=8, ep=8)
    register_pass(AddGain(), before="precision")
    try:
        with pytest.raises(PlanError, match=r"no rule for node 'L0.q_gain' \(op kind QGain\): register one with "
                                            r"v41graph.extend.register_sharding\(QGain, split=...\)"):
            compile(model, plan)
        register_sharding(QGain, "replicated")
        c = compile(model, plan)
        assert sum(n.op.kind == "QGain" for n in c.graph.nodes.values()) == 40
        assert [e.src for e in c.graph.inputs("L3.q_gain")] == ["L3.q_norm"]
        costs = c.graph.annotation("cost")
        assert costs["L3.q_gain"].flop("fp32") == 4096 * 1280  # replicated: every token of the rank
        forms = by_op(model, Plan([Request.prefill(N)], tp=8, ep=8), "flops")
        assert forms["QGain"] == 40 * 1280 * N
    finally:
        unregister_pass("q_gain")
        reset_sharding()


def test_rows_are_checked_ordered_and_resettable():
    with pytest.raises(PlanError, match=r"split 'diagonal' is not one of"):
        register_sharding(QGain, "diagonal")
    with pytest.raises(PlanError, match=r"'wq_b' is a built-in node name; its row is fixed \('attn.wq_b'"):
        register_sharding("wq_b", "replicated")
    with pytest.raises(PlanError, match=r"collective 'broadcast' is not one of all_reduce"):
        sharding_rule("row", collective="broadcast")
    try:
        register_sharding(QGain, "column", collective="all_gather")
        with pytest.raises(PlanError, match=r"'QGain' already has a sharding rule"):
            register_sharding("QGain", "row")
        register_sharding("*.gain_b", "row", collective="all_reduce")
        assert rule_for_node("L5.gain_a", QGain(8)).split == "column"  # by kind
        assert rule_for_node("L5.gain_b", QGain(8)).split == "row"  # a name pattern before the kind
        assert rule_for_node("L5.wq_b", QGain(8)).name == "attn.wq_b"  # a built-in name keeps its row
        assert Mapping(tp=4).work_divisor(rule_for_node("L5.gain_a", QGain(8))) == 4
        unregister_sharding(QGain)
        with pytest.raises(PlanError, match="no rule for node 'L5.gain_a'"):
            rule_for_node("L5.gain_a", QGain(8))
    finally:
        reset_sharding()
    assert user_sharding_rules() == ()


def test_a_re_registered_row_changes_the_cost():
    b = GraphBuilder("toy")
    rows = b.rows(1000)
    b.op("L0.input", GraphInput(512), rows)
    b.op("L0.proj", Gemm("p", 512, 512, "bf16"), rows, reads=[("L0.input", "x", 512, "bf16")], sink=True)
    g = b.build()
    try:
        register_sharding("proj", "column")
        split = compile_built_graph(g, mapping=Mapping(tp=2)).graph.annotation("cost")["L0.proj"].flop("bf16")
        reset_sharding()
        register_sharding("proj", "replicated")
        whole = compile_built_graph(g, mapping=Mapping(tp=2)).graph.annotation("cost")["L0.proj"].flop("bf16")
    finally:
        reset_sharding()
    assert (split, whole) == (2 * 1000 * 512 * 512 // 2, 2 * 1000 * 512 * 512)


def test_built_graph_closed_forms_equal_the_compile():
    def graph(t):
        b = GraphBuilder("toy")
        rows = b.rows(t)
        b.op("L0.input", GraphInput(1024), rows)
        b.op("L0.attn_norm", Norm(1024), rows, reads=[("L0.input", "x", 1024, "bf16")])
        b.op("L0.wq_b", Gemm("q", 1024, 2048, "fp8"), rows, reads=[("L0.attn_norm", "x", 1024, "bf16")], sink=True)
        return b.build()
    forms = {m: built_closed_form(graph(N), m, mapping=Mapping(tp=2)) for m in ("flops", "bytes", "sol_time")}
    assert forms["flops"].expr == (4 * 1024 + 2 * 1024 * 2048 // 2) * N
    from v41graph.passes.scheduling import exact_path_time
    for n in (1, 77, 4096, 50_000, 1_000_000):
        c = compile_built_graph(graph(n), mapping=Mapping(tp=2))
        costs = c.graph.annotation("cost").values()
        assert forms["flops"](N=n) == sum(x.total_flops for x in costs)
        assert forms["bytes"](N=n) == sum(x.total_bytes for x in costs)
        s = c.report("schedule")
        assert forms["sol_time"](N=n) == exact_path_time(c.graph, s.critical_path)


@dataclass(frozen=True)
class Proj(Op):
    dim: int
    sharding: object = None  # a field: each node's op may carry its own row
    needs: ClassVar = ("x",)


def test_each_node_may_carry_its_own_row():
    if "Proj" not in registered_ops():
        register_op(Proj, lambda op, node, ctx, t: Cost.of(flops={"bf16": 2 * t * op.dim * op.dim}))
    b = GraphBuilder("toy")
    rows = b.rows(100)
    b.op("L0.input", GraphInput(64), rows)
    b.op("L0.a", Proj(64, sharding_rule("column")), rows, reads=[("L0.input", "x", 64, "fp8")], sink=True)
    b.op("L0.b", Proj(64, sharding_rule("replicated")), rows, reads=[("L0.input", "x", 64, "mxfp4")], sink=True)
    c = compile_built_graph(b.build(), mapping=Mapping(tp=4))
    costs = c.graph.annotation("cost")
    assert (costs["L0.a"].flop("bf16"), costs["L0.b"].flop("bf16")) == (2 * 100 * 64 * 64 // 4, 2 * 100 * 64 * 64)
    # the edges' aliases resolved: 64 fp8 values (1 B) and 64 MXFP4 values (17/32 B) read per token
    assert costs["L0.a"].byte("act_in") == 100 * 64 // 4 and costs["L0.b"].byte("act_in") == 100 * 64 * 17 // 32
    assert [e.format for e in c.graph.edges] == ["fp8_e4m3", "fp4_e2m1_ue8m0_g32"]


def test_built_graph_errors_name_what_is_wrong():
    b = GraphBuilder("toy")
    b.op("L0.input", GraphInput(8), b.rows(4))
    b.op("L0.mystery", QGain(8), b.rows(4), reads=[("L0.input", "x", 8, "bf16")], sink=True)
    _ensure_op()
    with pytest.raises(PlanError, match=r"no rule for node 'L0.mystery' \(op kind QGain\).*register_sharding"):
        compile_built_graph(b.build())
    with pytest.raises(Exception, match=r"compile_built_graph mapping: expected a v41graph.Mapping"):
        compile_built_graph(b.build(), mapping=(2, 1, 1))
