"""The pass manager and the properties every pass keeps (STYLE.md point 10).

Golden: the default pipeline's order, and the error that names a breaking pass and the passes
before it. Properties (hypothesis, small random batches of prefills and decodes under every
replay and fusion policy): ``verify()`` holds after every pass; every pass is idempotent;
replay only removes tokens and never touches weights; fusion only removes traffic and conserves
the ops it covers; de-duplication never adds storage.

The property tests share one compiled graph per plan (``_compile`` is cached) and draw their
plans from the same seeded stream, so each plan is compiled once for all of them.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, replace
from functools import cache

from hypothesis import given, seed, settings, strategies as st
import pytest

from v41graph import GraphError, Plan, Request, load_model, lower
from v41graph.extend import Edge, verify
from v41graph.model.inventory import inventory
from v41graph.ir.ledger import ledger
from v41graph.ir.ops import Fused
from v41graph.passes import PassContext, PassResult, compile_graph, default_pipeline, run_pipeline
from v41graph.passes.kv_dedup import KVDedup
from v41graph.passes.precision import PrecisionAnnotation
from v41graph.passes.replay import ReplayPruning, token_layers


@cache
def _model():
    return load_model()


@cache
def _compile(plan: Plan):
    return compile_graph(_model(), plan, check=True)  # check=True: verify() after every pass


# --------------------------------------------------------------------------- golden


@dataclass(frozen=True)
class Breaker:
    """A broken pass: drops the main-KV edge into L29's attention."""

    name: str = "breaker"

    def __call__(self, graph, ctx) -> PassResult:
        edges = [e for e in graph.edges if not (e.dst == "L29.attn" and e.role == "main_kv")]
        return PassResult(self.name, graph.with_nodes(graph.nodes.values(), edges), 1, None)


def test_default_pipeline_order():
    assert [p.name for p in default_pipeline()] == ["precision", "replay", "kv_dedup", "fusion"]
    c = _compile(Plan([Request.prefill(1000)], decoder_replay="bounded"))
    assert [p.name for p in c.passes] == ["precision", "replay", "kv_dedup", "fusion"]
    assert c.report("replay").token_layers_after == 23432  # 21·1000 + 19·128
    with pytest.raises(GraphError, match="'nope'"):
        c.report("nope")


def test_pass_manager_names_the_breaking_pass_and_those_before_it():
    plan = Plan([Request.prefill(300)], decoder_replay="bounded")
    passes = (PrecisionAnnotation(), ReplayPruning(), Breaker())
    with pytest.raises(GraphError) as info:
        run_pipeline(lower(_model(), plan), PassContext(_model(), plan), passes)
    message = str(info.value)
    assert "'breaker'" in message
    assert "precision, replay" in message
    assert "main_kv" in message and "L29.attn" in message  # verify's own words follow


def test_first_pass_breaking_says_none_ran_before():
    plan = Plan([Request.prefill(300)])
    with pytest.raises(GraphError, match=r"pass 'breaker' broke the graph \(passes before it: none\)"):
        run_pipeline(lower(_model(), plan), PassContext(_model(), plan), (Breaker(),))


def test_without_checks_the_broken_graph_goes_through():
    plan = Plan([Request.prefill(300)])
    c = run_pipeline(lower(_model(), plan), PassContext(_model(), plan), (PrecisionAnnotation(), Breaker()),
                     check=False)
    assert [p.name for p in c.passes] == ["precision", "breaker"]
    with pytest.raises(GraphError, match="missing input main_kv"):
        verify(c.graph)


# --------------------------------------------------------------------------- properties


def _plan(prefills, decodes, replay, fusion):
    requests = [Request.prefill(n) for n in prefills] + [Request.decode(c) for c in decodes]
    return Plan(requests, decoder_replay=replay, fusion=fusion)


PLANS = st.builds(
    _plan,
    prefills=st.lists(st.integers(1, 3000), min_size=1, max_size=3),
    decodes=st.lists(st.integers(1, 10_000), max_size=2),
    replay=st.sampled_from(["off", "bounded"]),
    fusion=st.sampled_from(["unfused", "two-pass", "single-pass"]),
)
SEED = 4101
PROPERTY = settings(max_examples=25, deadline=None, database=None)


def _storages(graph):
    return sum(1 for n in graph.nodes.values() if n.op.storage)


@seed(SEED)
@PROPERTY
@given(plan=PLANS)
def test_verify_holds_after_every_pass(plan):
    c = _compile(plan)  # raises if any pass breaks the graph
    assert [p.name for p in c.passes] == ["precision", "replay", "kv_dedup", "fusion"]
    for result in c.passes:
        assert verify(result.graph) is result.graph


@seed(SEED)
@PROPERTY
@given(plan=PLANS)
def test_every_pass_is_idempotent(plan):
    c, ctx = _compile(plan), PassContext(_model(), plan)
    for p, result in zip(default_pipeline(), c.passes):
        again = p(result.graph, ctx)
        assert again.changed == 0, p.name
        assert again.graph.nodes == result.graph.nodes, p.name  # same ids, ops and rows
        assert again.graph.edges == result.graph.edges, p.name


@seed(SEED)
@PROPERTY
@given(plan=PLANS)
def test_replay_only_removes_tokens_and_never_touches_weights(plan):
    c = _compile(plan)
    before, after = c.passes[0].graph, c.passes[1].graph
    assert token_layers(after) <= token_layers(before)
    assert token_layers(before) == 40 * sum(r.new for r in plan.requests)
    for nid, node in after.nodes.items():
        old = before.nodes[nid]
        assert node.op == old.op  # payloads (Gemm weights included) are the model's
        assert len(node.rows) == len(old.rows)
        assert all(a.tokens <= b.tokens for a, b in zip(node.rows, old.rows)), nid
    assert after.edges == before.edges
    assert inventory(_model()).total_bytes == 511_759_675_736
    if plan.decoder_replay == "off":
        assert c.report("replay").rows_changed == 0
    # the graph's rows and the ledger are one implementation
    assert token_layers(c.graph) == ledger(_model(), plan).token_layers()


@seed(SEED)
@PROPERTY
@given(plan=PLANS)
def test_fusion_only_removes_traffic_and_conserves_ops(plan):
    c = _compile(plan)
    unfused, fused, report = c.passes[2].graph, c.graph, c.report("fusion")
    assert report.elements_after <= report.elements_before
    kinds = Counter(n.op.kind for n in fused.nodes.values() if not isinstance(n.op, Fused))
    for n in fused.nodes.values():
        if isinstance(n.op, Fused):
            kinds.update(op.kind for op in n.op.covers)
            assert len(n.op.covers) == len(n.op.members)
    assert kinds == Counter(n.op.kind for n in unfused.nodes.values())
    assert len(unfused.nodes) - len(fused.nodes) == report.nodes_removed == c.passes[3].changed


@seed(SEED)
@PROPERTY
@given(plan=PLANS)
def test_dedup_never_adds_storage(plan):
    c = _compile(plan)
    pick = sum(r.end for r in plan.requests)  # which storage to copy (no extra draw: same plans as above)
    assert _storages(c.passes[2].graph) <= _storages(c.passes[1].graph)
    # duplicate one storage, hand every other reader to the copy: de-duplication merges it back
    graph = c.passes[1].graph
    stores = sorted(nid for nid, n in graph.nodes.items() if n.op.storage and graph.outputs(nid))
    nid = stores[pick % len(stores)]
    dup, moved = nid + "#dup", {e.dst for e in graph.outputs(nid)[::2]}
    edges = [Edge(dup, e.dst, e.role, e.dims, e.format) if e.src == nid and e.dst in moved else e
             for e in graph.edges]
    doubled = graph.with_nodes([*graph.nodes.values(), replace(graph.nodes[nid], id=dup)], edges)
    result = KVDedup()(doubled, PassContext(_model(), plan))
    verify(result.graph)
    assert result.changed == 1
    assert _storages(result.graph) == _storages(doubled) - 1
    assert result.graph.nodes == c.passes[2].graph.nodes
    assert set(result.graph.edges) == set(c.passes[2].graph.edges)
