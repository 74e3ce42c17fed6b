"""The verifier's memo (ir/verify.py): a skeleton that passed is not walked again, and nothing a
graph's skeleton or rows can break slips through a hit — the rows-dependent half runs on every
call, a different op object or edge tuple is a different key, and caching off checks from nothing.
"""

from __future__ import annotations

import dataclasses

import pytest

from v41graph import GraphError, Plan, Request, load_model, lower
from v41graph.extend import verify
from v41graph.ir import verify as verify_module
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


def test_caching_off_walks_every_graph(monkeypatch):
    g = lower(load_model(), Plan([Request.prefill(4096)]))
    verify(g)
    walks = []
    real = verify_module._skeleton
    monkeypatch.setattr(verify_module, "_skeleton", lambda *a: walks.append(1) or real(*a))
    verify(g)
    with uncached():
        verify(g)
        verify(g)
    assert walks == [1, 1]


def test_shadow_rechecks_every_hit(monkeypatch):
    g = lower(load_model(), Plan([Request.prefill(4096)]))
    verify(g)
    walks = []
    real = verify_module._skeleton
    monkeypatch.setattr(verify_module, "_skeleton", lambda *a: walks.append(1) or real(*a))
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
