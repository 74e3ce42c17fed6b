"""Hand-built graphs refuse what cannot be (issue 37, item 6): impossible rows, a non-op in
``register_sharding``, a split that does not divide the op, a path that cannot be written and
a graph that is not one, each as a ``V41Error`` subclass naming the field and value; and a
sharding row's ``collective=`` is priced, as the lowered graphs' collectives are. Figures by hand."""

from __future__ import annotations

from fractions import Fraction

import pytest

from v41graph import CostError, GraphError, Plan, PlanError, Request, V41Error, compile, load_model
from v41graph.errors import OutputError
from v41graph.extend import (GraphBuilder, Mapping, built_closed_form, compile_built_graph, register_sharding,
                             verify)
from v41graph.ir.ops import Communication, Gemm, GraphInput
from v41graph.render.html.html_report import write_html
from v41graph.symbols import N

D = 4096


@pytest.mark.parametrize("kwargs, message", [
    ({"tokens": -5}, "graph builder rows tokens: must be >= 1, got -5"),
    ({"tokens": 1000.5}, "graph builder rows tokens: must be an integer or sympy expression, got 1000.5"),
    ({"tokens": 0}, "graph builder rows tokens: must be >= 1, got 0"),
    ({"tokens": 8, "cached": -1}, "graph builder rows cached: must be >= 0, got -1"),
    ({"tokens": 8, "layer": 0.5}, "graph builder rows layer: must be an integer or sympy expression, got 0.5"),
])
def test_rows_that_cannot_be_are_refused(kwargs, message):
    with pytest.raises(GraphError) as exc:
        GraphBuilder("t").rows(kwargs.pop("tokens"), **kwargs)
    assert str(exc.value) == message and isinstance(exc.value, V41Error)


def test_rows_take_an_integer_or_a_symbol():
    (row,) = GraphBuilder.rows(1000, cached=24)
    assert (row.q_start, row.q_end) == (24, 1024)
    assert GraphBuilder.rows(N)[0].q_end == N


def test_register_sharding_refuses_a_class_that_is_not_an_op():
    with pytest.raises(PlanError) as exc:
        register_sharding(int, "row")
    assert str(exc.value) == ("register_sharding: target builtins.int is a class but not an op class (a subclass "
                              "of v41graph.ir.ops.Op); give an op class, its name or a node-name pattern")


def test_graph_builder_op_refuses_what_is_not_an_op():
    with pytest.raises(GraphError, match=r"^graph builder op 'L0.x': expected an op \(a v41graph.ir.ops.Op\), "
                                         r"got 'gemm'$"):
        GraphBuilder("t").op("L0.x", "gemm", GraphBuilder.rows(4))


def _proj(name: str, tokens=1000, sink_reader: bool = True):
    """input (D) → ``L0.<name>`` Gemm D → D, read by a norm-free reader (a second Gemm) or a sink itself."""
    b = GraphBuilder("toy")
    rows = b.rows(tokens)
    b.op("L0.input", GraphInput(D), rows)
    b.op(f"L0.{name}", Gemm(name, D, D, "bf16"), rows, reads=[("L0.input", "x", D, "bf16")], sink=not sink_reader)
    if sink_reader:
        b.op("L0.wq_b", Gemm("q", D, D, "bf16"), rows, reads=[(f"L0.{name}", "x", D, "bf16")], sink=True)
    return b.build()


def test_a_split_that_does_not_divide_the_op_is_refused():
    # wq_b is a built-in column row: its 4,096 outputs over tp 3 would be 1365⅓ per GPU
    register_sharding("*.my_up", "replicated")
    with pytest.raises(PlanError) as exc:
        compile_built_graph(_proj("my_up"), "h200_sxm", mapping=Mapping(tp=3))
    assert str(exc.value) == ("compile_built_graph mapping: node 'L0.wq_b' (Gemm) splits n = 4096 column-wise over "
                              "3 GPUs (tp 3), which does not divide it")
    register_sharding("*.my_down", "row", collective="all_reduce")
    with pytest.raises(PlanError, match=r"node 'L0.my_down' \(Gemm\) splits k = 4096 row-wise over 3 GPUs"):
        built_closed_form(_proj("my_down", N), "flops", mapping=Mapping(tp=3))
    assert compile_built_graph(_proj("my_up"), "h200_sxm", mapping=Mapping(tp=4))  # 4 divides 4,096


def test_a_rule_collective_is_priced_on_a_hand_built_graph():
    # a row split leaves partial sums: the all-reduce its row names follows it, 2(p − 1)/p of the
    # D-wide bf16 tensor per token on the links: at tp 2, 1,000 × 4,096 × 2 B × 1 = 8,192,000 B
    register_sharding("*.my_down", "row", collective="all_reduce")
    c = compile_built_graph(_proj("my_down"), "h200_sxm", mapping=Mapping(tp=2))
    comm = c.graph.node("L0.my_down.all_reduce")
    assert isinstance(comm.op, Communication) and (comm.op.collective, comm.op.dim, comm.op.ranks) == (
        "all_reduce", D, 2)
    assert [(e.src, e.dst) for e in c.graph.edges if "my_down" in e.src + e.dst] == [
        ("L0.input", "L0.my_down"), ("L0.my_down.all_reduce", "L0.wq_b"), ("L0.my_down", "L0.my_down.all_reduce")]
    cost = c.graph.annotation("cost")["L0.my_down.all_reduce"]
    assert cost.total_comm == 1000 * D * 2 * Fraction(2 * (2 - 1), 2) == 8_192_000
    s = c.report("schedule")
    assert "L0.my_down.all_reduce" in s.critical_path
    assert c.report("sharding") == ("L0.my_down.all_reduce",)
    # its time on the path: 8,192,000 B over the H200's NVLink, against none at tp 1
    one = compile_built_graph(_proj("my_down"), "h200_sxm", mapping=Mapping(tp=1))
    assert set(one.graph.nodes) == {"L0.input", "L0.my_down", "L0.wq_b"}
    assert built_closed_form(_proj("my_down", N), "comm_bytes", mapping=Mapping(tp=2)).expr == 8192 * N
    assert built_closed_form(_proj("my_down", N), "comm_bytes", mapping=Mapping(tp=1)).expr == 0


def test_a_sink_hands_its_end_to_the_collective():
    register_sharding("*.my_out", "column", collective="all_gather")
    c = compile_built_graph(_proj("my_out", sink_reader=False), "h200_sxm", mapping=Mapping(tp=4))
    out = c.graph.node("L0.my_out.all_gather")
    assert out.sink and not c.graph.node("L0.my_out").sink
    # (p − 1)/p of the 4,096-wide output per token: 1,000 × 4,096 × 2 B × 3/4
    assert c.graph.annotation("cost")["L0.my_out.all_gather"].total_comm == 6_144_000


def test_a_collective_built_by_hand_is_not_priced_twice():
    register_sharding("*.my_down", "row", collective="all_reduce")
    b = GraphBuilder("toy")
    rows = b.rows(1000)
    b.op("L0.input", GraphInput(D), rows)
    b.op("L0.my_down", Gemm("d", D, D, "bf16"), rows, reads=[("L0.input", "x", D, "bf16")])
    b.op("L0.attn.all_reduce", Communication("all_reduce", "attn", D, 2), rows, reads=[("L0.my_down", "x", D, "bf16")],
         sink=True)
    c = compile_built_graph(b.build(), "h200_sxm", mapping=Mapping(tp=2))
    assert set(c.graph.nodes) == {"L0.input", "L0.my_down", "L0.attn.all_reduce"}
    assert c.report("sharding") == ()


def test_entry_points_refuse_what_is_not_a_graph():
    for call, message in ((lambda: compile_built_graph("x", "h200_sxm"), "compile_built_graph graph: expected a "
                           "v41graph Graph (GraphBuilder(...).build(), or a lowered graph), got 'x'"),
                          (lambda: built_closed_form("x", "flops"), "built_closed_form graph: expected a v41graph "
                           "Graph (GraphBuilder(...).build(), or a lowered graph), got 'x'"),
                          (lambda: verify("x"), "verify: expected a v41graph Graph, got 'x'")):
        with pytest.raises(GraphError) as exc:
            call()
        assert str(exc.value) == message


def test_a_collective_without_a_width_is_refused_by_name():
    from v41graph.ir.ops import Rope
    register_sharding("*.my_rope", "column", collective="all_gather")
    b = GraphBuilder("toy")
    rows = b.rows(10)
    b.op("L0.input", GraphInput(D), rows)
    b.op("L0.my_rope", Rope(32, 64), rows, reads=[("L0.input", "x", D, "bf16")], sink=True)
    with pytest.raises(CostError) as exc:
        compile_built_graph(b.build(), "h200_sxm", mapping=Mapping(tp=2))
    assert str(exc.value) == ("compile_built_graph: node 'L0.my_rope' (Rope) is followed by a all_gather (sharding "
                              "row 'user:*.my_rope') but has no outputs and no n or dim to size it; give it a reader")


def test_write_html_wraps_the_os_error_with_the_path(tmp_path):
    model, plan = load_model(), Plan([Request.prefill(128)])
    result = compile(model, plan)
    with pytest.raises(OutputError) as exc:
        write_html(result, tmp_path / "no-folder" / "x.html", model=model, plan=plan)
    assert isinstance(exc.value, V41Error) and isinstance(exc.value, OSError)
    assert str(exc.value) == (f"write_html path: cannot write '{tmp_path / 'no-folder' / 'x.html'}': "
                              "No such file or directory")
    assert exc.value.filename == str(tmp_path / "no-folder" / "x.html")
    with pytest.raises(GraphError, match=r"^write_html result: expected a compiled plan .*got 'x'$"):
        write_html("x", tmp_path / "x.html", model=model, plan=plan)


def _entry_points():
    """Public entry points handed the wrong kind of thing: each fails by name with a V41Error."""
    import v41graph
    from v41graph import ask, extend
    m, plan = load_model(), Plan([Request.prefill(128)])
    return [
        (lambda: v41graph.lower(m, "x"), PlanError, "lower plan: expected Plan (v41graph.Plan([...])), got 'x'"),
        (lambda: v41graph.lower("x", plan), PlanError,
         "plan model: expected ModelSpec (v41graph.load_model(...)), got 'x'"),
        (lambda: v41graph.compile(m, "x"), PlanError, "compile plan: expected Plan (v41graph.Plan([...])), got 'x'"),
        (lambda: v41graph.closed_form(m, "x", "flops"), PlanError,
         "closed_form plan: expected Plan (v41graph.Plan([...])), got 'x'"),
        (lambda: v41graph.parameters("x"), v41graph.ConfigError,
         "parameters model: expected ModelSpec (v41graph.load_model(...)), got 'x'"),
        (lambda: v41graph.render_dot("x"), GraphError,
         "render_dot graph: expected Graph (v41graph.lower(...) or a compiled result's .graph), got 'x'"),
        (lambda: v41graph.write_diagram(42, "x.dot"), GraphError,
         "write_diagram dot_text: expected str (DOT text: v41graph.render_dot(graph)), got 42"),
        (lambda: v41graph.compare("x", "y"), PlanError,
         "compare side: expected Side (v41graph.Side(model, plan, hardware)), got 'x'"),
        (lambda: extend.insert("x", "y"), GraphError, "insert graph: expected Graph, got 'x'"),
        (lambda: extend.insert_after(v41graph.lower(m, plan), "L3.kv_norm", "y"), GraphError,
         "insert_after node: expected Node (v41graph.extend.Node(id, op, layer, stage, path, rows)), got 'y'"),
        (lambda: extend.replace_nodes("x", ["a"], "b"), GraphError, "replace_nodes graph: expected Graph, got 'x'"),
        (lambda: extend.fuse_nodes("x", ["a"], "r"), GraphError, "rewrite graph: expected Graph, got 'x'"),
        (lambda: extend.register_fusion_rule("x"), GraphError,
         "register_fusion_rule rule: expected FusionRule (v41graph.extend.FusionRule(name, find)), got 'x'"),
        (lambda: ask.max_context(m, "h200_sxm"), PlanError,
         "max_context plan: expected Plan (v41graph.Plan([...])), got 'h200_sxm'"),
        (lambda: GraphBuilder("t").edge("a", "b", "x", -4, "bf16"), GraphError,
         "graph builder edge 'a' -> 'b' dims: must be >= 0, got -4"),  # 0: an ordering edge
    ]


@pytest.mark.parametrize("index", range(15))
def test_public_entry_points_refuse_the_wrong_kind_by_name(index):
    call, error, message = _entry_points()[index]
    with pytest.raises(error) as exc:
        call()
    assert str(exc.value) == message


def test_write_diagram_wraps_the_os_error_with_the_path(tmp_path):
    import v41graph
    target = tmp_path / "no-folder" / "g.dot"
    with pytest.raises(OutputError) as exc:
        v41graph.write_diagram("digraph { a -> b }", target)
    assert str(exc.value) == f"write_diagram path: cannot write '{target}': No such file or directory"
