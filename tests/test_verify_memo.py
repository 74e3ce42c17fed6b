"""The verifier's memo (ir/verify.py): a skeleton that passed is not walked again, and nothing a
graph's skeleton or rows can break slips through a hit — the rows-dependent half runs on every
call, a different op object or edge tuple is a different key, and caching off checks from nothing.
"""

from __future__ import annotations

import dataclasses

import pytest

from v41graph import GraphError, Plan, Request, load_model, lower
from v41graph.extend import verify
from v41graph.ir import flow, verify as verify_module
from v41graph.ir.rows import RowTable
from v41graph.passes import compile_graph
from v41graph import reuse
from v41graph.reuse import shadow, uncached


@pytest.fixture(autouse=True)
def _switches_as_built(monkeypatch):
    """These tests count the walks of the structural half: run with caching on and no shadow check
    whatever the environment says (a shadow-checked run recomputes every hit)."""
    monkeypatch.delenv("V41GRAPH_SHADOW", raising=False)
    monkeypatch.delenv("V41GRAPH_NO_CACHE", raising=False)
    reuse.refresh()
    yield
    monkeypatch.undo()
    reuse.refresh()


def _no_walk(monkeypatch, why: str = "the structural half ran on a known skeleton") -> None:
    """From here on the structural half may not run: a call that reaches it fails the test."""
    monkeypatch.setattr(verify_module, "_skeleton", lambda *_: pytest.fail(why))


def _with_rows(g, old, new):
    """``g`` with every node that carries the rows tuple ``old`` carrying ``new`` instead (one
    rows class swapped for another: the skeleton's key is unchanged)."""
    return g.with_nodes([n.with_fields(rows=new) if n.rows is old else n for n in g.nodes.values()])


def test_a_known_skeleton_with_other_lengths_skips_the_structure(monkeypatch):
    model = load_model()
    first = lower(model, Plan([Request.prefill(4096)]))
    verify(first)
    _no_walk(monkeypatch)
    second = lower(model, Plan([Request.prefill(6000)]))
    assert second.edges is first.edges and verify(second) is second


def test_rows_that_break_the_token_flow_are_refused_on_a_hit(monkeypatch):
    g = lower(load_model(), Plan([Request.prefill(4096)]))
    verify(g)  # the skeleton is kept
    old = g.nodes["L6.attn_norm"].rows
    wide = (dataclasses.replace(old[0], q_end=5000),)  # layer 6 counts 5,000 queries, layer 5 made 4,096
    broken = _with_rows(g, old, wide)
    with uncached(), pytest.raises(GraphError) as fresh:  # the check from nothing
        verify(broken)
    _no_walk(monkeypatch, "the key changed: not a hit")
    with pytest.raises(GraphError) as hit:
        verify(broken)
    assert str(hit.value) == str(fresh.value)  # the same first edge, in edge order
    assert str(hit.value).startswith("verify: 'L6.hc_attn.coeff' (q count) consumes positions [0, 5000) of seq 0 "
                                     "from 'L5.hc_ffn.expand' (x), which is charged for [0, 4096) (q count)")


def test_a_different_op_object_is_a_different_key():
    g = lower(load_model(), Plan([Request.prefill(4096)]))
    verify(g)
    attn = g.nodes["L29.attn"]
    wrong = attn.with_fields(op=dataclasses.replace(attn.op, kv_owner=attn.op.kv_owner + 1))
    broken = g.with_nodes([wrong if n is attn else n for n in g.nodes.values()])
    assert broken.edges is g.edges
    with pytest.raises(GraphError, match="attention reads main_kv .* but its KV owner is layer"):
        verify(broken)


def test_an_equal_edge_tuple_of_other_objects_is_checked_from_nothing():
    g = lower(load_model(), Plan([Request.prefill(4096)]))
    verify(g)
    (edge,) = [e for e in g.edges if e.dst == "L29.attn" and e.role == "topk"]
    broken = dataclasses.replace(g, edges=tuple(e for e in g.edges if e is not edge))  # keeps g's shape token
    with pytest.raises(GraphError, match="missing input topk for node 'L29.attn'"):
        verify(broken)


def _counting_walks(monkeypatch) -> tuple:
    """A lowered graph verified once (its skeleton kept), and a list that gains an item per skeleton walk after."""
    g = lower(load_model(), Plan([Request.prefill(4096)]))
    verify(g)
    walks = []
    real = verify_module._skeleton
    monkeypatch.setattr(verify_module, "_skeleton", lambda *a: walks.append(1) or real(*a))
    return g, walks


def test_caching_off_walks_every_graph(monkeypatch):
    g, walks = _counting_walks(monkeypatch)
    verify(g)
    with uncached():
        verify(g)
        verify(g)
    assert walks == [1, 1]


def test_shadow_rechecks_every_hit(monkeypatch):
    g, walks = _counting_walks(monkeypatch)
    with shadow():
        verify(g)
    assert walks == [1]


def test_a_compile_verifies_each_changed_graph_once(monkeypatch):
    """compile_graph(check=True) on a known shape: the lowered graph and each pass's output are
    checked, the structural half of none of them walked; a pass that only annotated (the node table
    and edges are the very objects checked before it) has only its annotations checked."""
    model = load_model()
    compile_graph(model, Plan([Request.prefill(5000)]))
    flows = []
    real = verify_module.check_flow
    monkeypatch.setattr(verify_module, "check_flow", lambda *a: flows.append(a[0]) or real(*a))
    _no_walk(monkeypatch)
    compiled = compile_graph(model, Plan([Request.prefill(7000)]))
    assert len(flows) == 3 and flows[-1] is compiled.graph  # lower (and precision, replay: same tables), dedup, fusion


# --------------------------------------------------------------------------- row tables: the column check

def _tabled_graph():
    prefills = [Request.prefill(1024 * (i + 1) + 37 * i) for i in range(8)]
    decodes = [Request.decode(2048 + 4_679 * i) for i in range(24)]
    return lower(load_model(), Plan(prefills + decodes))


def _exact_ok(made, used) -> bool:
    """The per-row rule, spelled out: every used span inside the union of the made spans of its key."""
    return all(flow.positions_within(made.get(seq, ()), spans) for seq, spans in used.items())


def test_the_column_check_accepts_only_what_the_per_row_rule_accepts():
    g = _tabled_graph()
    nodes = tuple(g.nodes.values())
    checks = flow.flow_checks(g, nodes, flow.rows_classes(nodes))
    tabled = [(nodes[m], mc, nodes[u], uc) for _, m, mc, u, uc, _ in checks
              if hasattr(nodes[m].rows, "cols") and hasattr(nodes[u].rows, "cols")]
    assert len(tabled) > 50
    for a, mc, b, uc in tabled:
        fast = flow._covers(flow._columns(a, mc), flow._columns(b, uc))
        assert fast and _exact_ok(flow.node_positions(a, mc), flow.node_positions(b, uc)), (a.id, b.id)
    # one request's queries past what the layer before produced: the columns refuse to vouch, the rows refuse
    a, mc, b, uc = next((a, mc, b, uc) for a, mc, b, uc in tabled if b.count == "q" and b.layer == 6 and a.layer == 5)
    cols = b.rows.cols
    wide = RowTable(b.rows.layer, cols.replace(q_end=cols.q_end + (cols.request == 3)))
    b2 = b.with_fields(rows=wide)
    assert not flow._covers(flow._columns(a, mc), flow._columns(b2, uc))
    assert not _exact_ok(flow.node_positions(a, mc), flow.node_positions(b2, uc))


def test_a_broken_row_table_is_refused_as_from_nothing():
    g = _tabled_graph()
    verify(g)
    old = g.nodes["L6.attn_norm"].rows
    cols = old.cols
    broken = _with_rows(g, old, RowTable(old.layer, cols.replace(q_end=cols.q_end + (cols.request == 3))))
    with uncached(), pytest.raises(GraphError) as fresh:
        verify(broken)
    with pytest.raises(GraphError) as hit:
        verify(broken)
    assert str(hit.value) == str(fresh.value)
    assert str(hit.value).startswith("verify: 'L6.hc_attn.coeff' (q count) consumes positions ")


def test_a_key_with_several_spans_takes_the_per_row_path():
    # two chunks of one prompt: one sequence, two rows in one layer
    g = lower(load_model(), Plan([Request.chunk(1000, 0, 400), Request.chunk(1000, 400, 600)] +
                                 [Request.decode(2048 + i) for i in range(8)]))
    node = next(n for n in g.nodes.values() if hasattr(n.rows, "cols") and n.count == "q"
                and len(set(n.rows.cols.seq.tolist())) < len(n.rows))
    assert flow._columns(node, False) is None
    assert verify(g) is g
