"""Building, rewriting and extending graphs from outside the package (ir/rewrite.py,
costs/registry.py, passes/registry.py, passes/fusion_rules.py, passes/plugins.py).

Expected figures by plain arithmetic: V4.1-Flash has 40 layers, each with one SWA ``kv_rope``
(1 head × 64 rope dims) feeding a ``kv_quant`` of 512 values.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
import textwrap
from typing import ClassVar

import pytest
import sympy

from v41graph import GraphError, Plan, Request, closed_form, load_model, lower
from v41graph.extend import (Edge, FusionRule, GraphBuilder, Node, fuse_nodes, insert, insert_after, load_plugins,
                             register_fusion_rule, register_op, register_pass, registered_passes, replace_nodes,
                             unregister_fusion_rule, unregister_pass, verify)
from v41graph.ask import by_op
from v41graph.costs.value import Cost
from v41graph.errors import CostError
from v41graph.ir.ops import Norm, Op
from v41graph.passes import PassResult, compile_graph, default_pipeline
from v41graph.symbols import N


@pytest.fixture(scope="module")
def g64():
    return lower(load_model(), Plan([Request.prefill(64)]))


# ---- verify() names what a user got wrong --------------------------------------------------------

def test_builder_is_public_and_verify_names_a_consumer_without_producer():
    b = GraphBuilder("toy")
    b.add(Node("a", Norm(8), None, "backbone", None, sink=True))
    b.add(Node("b", Norm(8), None, "backbone", None, sink=True))
    b.edge("a", "b", "x", 8, "bf16")
    with pytest.raises(GraphError, match=r"missing input x for node 'a'"):
        verify(b.build())
    b.edge("ghost", "a", "x", 8, "bf16")
    with pytest.raises(GraphError, match=r"'ghost' -> 'a'.*dangling end 'ghost'"):
        verify(b.build())


def test_verify_names_a_token_count_mismatch(g64):
    n = g64.node("L3.kv_norm")
    wide = Node("L3.extra", Norm(512), 3, n.stage, n.path, rows=tuple(replace(r, q_end=128) for r in n.rows))
    with pytest.raises(GraphError, match=r"'L3.extra'.*\[0, 128\).*'L3.kv_norm'.*\[0, 64\)"):
        verify(insert_after(g64, "L3.kv_norm", wide))
    ok = Node("L3.extra", Norm(512), 3, n.stage, n.path, rows=n.rows)
    g = verify(insert_after(g64, "L3.kv_norm", ok))
    assert [e.src for e in g.inputs("L3.kv_rope")] == ["L3.extra"] and len(g.nodes) == len(g64.nodes) + 1


def test_verify_names_a_cycle(g64):
    n = g64.node("L3.kv_norm")
    loop = insert(g64, Node("L3.loop", Norm(512), 3, n.stage, n.path, rows=n.rows),
                  [Edge("L3.kv_quant", "L3.loop", "x", 512, "bf16"), Edge("L3.loop", "L3.kv_norm", "x", 512, "bf16")])
    with pytest.raises(GraphError, match=r"cycle L3.kv_norm -> L3.kv_rope -> L3.kv_quant -> L3.loop -> L3.kv_norm"):
        verify(loop)


def test_rewrites_refuse_what_would_break_the_graph(g64):
    with pytest.raises(GraphError, match=r"not convex.*re-enters at 'L3.kv_quant' \(through 'L3.kv_rope'\)"):
        replace_nodes(g64, ["L3.kv_norm", "L3.kv_quant"], Norm(1))
    with pytest.raises(GraphError, match=r"no node 'L3.nope'"):
        replace_nodes(g64, ["L3.nope"], Norm(1))
    with pytest.raises(GraphError, match=r"'L3.kv_norm' is already in the graph"):
        insert(g64, g64.node("L3.kv_norm"))


def test_replace_keeps_external_edges_and_fuse_records_covers(g64):
    g = replace_nodes(g64, ["L3.kv_rope", "L3.kv_quant"], Norm(512))
    assert len(g.nodes) == len(g64.nodes) - 1 and len(g.edges) == len(g64.edges) - 1
    assert [e.src for e in g.inputs("L3.kv_quant")] == ["L3.kv_norm"]
    assert [e.dst for e in g.outputs("L3.kv_quant")] == ["L3.swa_write"]
    f = verify(fuse_nodes(g64, ("L3.kv_rope", "L3.kv_quant"), "mine"))
    op = f.node("L3.kv_quant").op
    assert (op.rule, op.members, [c.kind for c in op.covers]) == ("mine", ("L3.kv_rope", "L3.kv_quant"),
                                                                   ["Rope", "Quantize"])


# ---- a user op kind on the one rule table ----------------------------------------------------------

@dataclass(frozen=True)
class RopeQuant(Op):
    heads: int
    rope_dims: int
    dim: int
    needs: ClassVar = ("x",)


def _rule(op, node, ctx, t):
    return Cost.of(flops={"fp32": t * (3 * op.heads * op.rope_dims + 5 * op.dim)})


@pytest.fixture(autouse=True)
def _rope_quant():
    """RopeQuant's rule, registered afresh for each test (conftest puts the registries back to
    the built-in state before every test)."""
    register_op(RopeQuant, _rule)


def _swap(graph):
    for nid in sorted(graph.nodes):
        if nid.endswith(".kv_rope") and nid in graph.nodes:
            quant = nid.replace("kv_rope", "kv_quant")
            graph = replace_nodes(graph, (nid, quant), RopeQuant(1, 64, 512))
    return graph


@dataclass(frozen=True)
class Swap:
    name: str = "swap"

    def __call__(self, graph, ctx):
        return PassResult(self.name, _swap(graph), 1, "swapped")


def test_register_op_refuses_twice_and_non_ops():
    with pytest.raises(CostError, match="RopeQuant already has a cost rule"):
        register_op(RopeQuant, _rule)
    with pytest.raises(CostError, match="is not a subclass"):
        register_op(int, _rule)


def test_user_op_is_in_numbers_and_closed_forms():
    model = load_model()
    register_pass(Swap(), before="precision")
    try:
        forms = by_op(model, Plan([Request.prefill(N)]), "flops")
        assert forms["RopeQuant"] == 40 * (3 * 64 + 5 * 512) * N
        c = compile_graph(model, Plan([Request.prefill(4096)]))
        assert [p.name for p in c.passes][:2] == ["swap", "precision"] and c.report("swap") == "swapped"
        assert c.graph.node("L7.kv_quant").op == RopeQuant(1, 64, 512)
        with_op = closed_form(model, Plan([Request.prefill(N)]), "flops").expr
    finally:
        unregister_pass("swap")
    without = closed_form(model, Plan([Request.prefill(N)]), "flops").expr
    # the built-in quantiser counts 4 flops per value, the new op 5: 40 layers × 512 values more per token
    assert sympy.expand(with_op - without) == 40 * 512 * N


# ---- passes and fusion rules of one's own ---------------------------------------------------------

@dataclass(frozen=True)
class CountReport:
    fused: int


@dataclass(frozen=True)
class CountFused:
    name: str = "count_fused"

    def __call__(self, graph, ctx):
        return PassResult(self.name, graph, 0, CountReport(sum(n.op.kind == "Fused" for n in graph.nodes.values())))


def test_pass_registered_after_fusion_runs_and_reports():
    register_pass(CountFused(), after="fusion")
    try:
        assert [p.name for p in default_pipeline()] == ["precision", "replay", "kv_dedup", "fusion", "count_fused"]
        c = compile_graph(load_model(), Plan([Request.prefill(1000)]))
        fused = sum(n.op.kind == "Fused" for n in c.graph.nodes.values())
        assert c.report("count_fused") == CountReport(fused) and fused > 0
        with pytest.raises(GraphError, match="exists already"):
            register_pass(CountFused(), after="fusion")
    finally:
        unregister_pass("count_fused")
    with pytest.raises(GraphError, match=r"no pass named 'nope' in the pipeline"):
        register_pass(CountFused(), before="nope")
        try:
            default_pipeline()
        finally:
            unregister_pass("count_fused")
    assert registered_passes() == ()


def test_user_fusion_rule_fuses_its_pattern():
    def find(graph):  # the query's low-rank GEMM with the norm after it, which no built-in rule fuses
        return [(n.replace("q_norm", "wq_a"), n) for n in sorted(graph.nodes) if n.endswith(".q_norm")
                and not n.endswith("idx.q_norm")]
    plan = Plan([Request.prefill(1000)])
    base = compile_graph(load_model(), plan)
    register_fusion_rule(FusionRule("norm_gemm", find))
    try:
        c = compile_graph(load_model(), plan)
        unfused = compile_graph(load_model(), Plan([Request.prefill(1000)], fusion="unfused"))
    finally:
        unregister_fusion_rule("norm_gemm")
    assert c.report("fusion").groups["norm_gemm"] == 40  # one per layer
    assert c.report("fusion").nodes_removed == base.report("fusion").nodes_removed + 40
    op = c.graph.node("L3.q_norm").op
    assert (op.rule, op.members, [x.kind for x in op.covers]) == ("norm_gemm", ("L3.wq_a", "L3.q_norm"),
                                                                   ["Gemm", "Norm"])
    assert "L3.wq_a" not in c.graph.nodes
    assert "norm_gemm" not in unfused.report("fusion").groups  # unfused runs no rule, the user's included
    with pytest.raises(GraphError, match="exists already"):
        register_fusion_rule(FusionRule("quant", find))


# ---- third-party registration through entry points -----------------------------------------------

def test_entry_point_plugin_is_loaded(tmp_path, monkeypatch):
    pkg = tmp_path / "tinyplug_v41"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(textwrap.dedent('''
        from dataclasses import dataclass
        from v41graph.extend import register_op, register_pass
        from v41graph.costs.value import Cost
        from v41graph.ir.ops import Op
        from v41graph.passes import PassResult

        @dataclass(frozen=True)
        class TinyOp(Op):
            dim: int

        @dataclass(frozen=True)
        class TinyPass:
            name: str = "tiny"
            def __call__(self, graph, ctx):
                return PassResult(self.name, graph, 0, len(graph.nodes))

        def ops():
            register_op(TinyOp, lambda op, node, ctx, t: Cost.of(flops={"fp32": 7 * t * op.dim}))

        def passes():
            register_pass(TinyPass(), after="kv_dedup")
    '''))
    info = tmp_path / "tinyplug_v41-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: tinyplug-v41\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[v41graph.ops]\ntiny = tinyplug_v41:ops\n\n"
                                           "[v41graph.passes]\ntiny = tinyplug_v41:passes\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        assert load_plugins() == ("v41graph.ops:tiny", "v41graph.passes:tiny")
        assert load_plugins() == ()  # each entry point loads once
        import tinyplug_v41
        from v41graph.costs.rules import op_cost
        assert op_cost(tinyplug_v41.TinyOp(3), None, None, 10).flop("fp32") == 210
        c = compile_graph(load_model(), Plan([Request.prefill(64)]))
        assert [p.name for p in c.passes] == ["precision", "replay", "kv_dedup", "tiny", "fusion"]
        assert c.report("tiny") == len(c.passes[2].graph.nodes)
    finally:
        if "tiny" in registered_passes():
            unregister_pass("tiny")


def test_a_broken_plugin_is_named(tmp_path, monkeypatch):
    info = tmp_path / "brokenplug_v41-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: brokenplug-v41\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[v41graph.ops]\nbroken = no_such_module_v41:register\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    from v41graph.errors import ConfigError
    with pytest.raises(ConfigError, match=r"plugin v41graph.ops:broken \(no_such_module_v41:register\) failed to "
                                          r"load: ModuleNotFoundError"):
        load_plugins()
    assert load_plugins() == ()  # reported once, not retried on every pipeline
