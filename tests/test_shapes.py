"""Shapes (ir/shapes.py): a compile that reuses an earlier compile's structure gives exactly what
a compile from nothing gives — every pass's graph, side tables and report, and the schedule.

The reference is the same pipeline with every memo off (``uncached()``, as ``V41GRAPH_NO_CACHE=1``
does for a whole process).
Each case first compiles one plan of a shape (filling the memos), then another plan of that shape
with other lengths, and compares it with the uncached compile of the second plan; lengths are
drawn on both sides of the replay window (128), where the fusion pass decides differently.
"""

from __future__ import annotations

from hypothesis import HealthCheck, example, given, settings, strategies as st
import pytest

from v41graph import Plan, Request, load_model
from v41graph.ir.shapes import caching, clear_caches, uncached
from v41graph.passes import compile


def _same(a, b) -> None:
    """Two compiled results are the same in every part a reader can see."""
    assert [p.name for p in a.passes] == [p.name for p in b.passes]
    for pa, pb in zip(a.passes, b.passes):
        assert pa.changed == pb.changed, pa.name
        assert pa.report == pb.report, pa.name
        assert list(pa.graph.nodes) == list(pb.graph.nodes), pa.name
        assert dict(pa.graph.nodes) == dict(pb.graph.nodes), pa.name
        assert pa.graph.edges == pb.graph.edges, pa.name
        assert sorted(pa.graph.annotations) == sorted(pb.graph.annotations), pa.name
        for name in pa.graph.annotations:
            assert dict(pa.graph.annotations[name]) == dict(pb.graph.annotations[name]), (pa.name, name)
        assert pa.graph.topological_order() == pb.graph.topological_order()
        assert {n: pa.graph.inputs(n) for n in pa.graph.nodes} == {n: pb.graph.inputs(n) for n in pb.graph.nodes}


_LENGTH = st.one_of(st.integers(1, 300), st.integers(300, 200_000))

SHAPES = {
    "prefill": lambda n, m: Plan([Request.prefill(n)], decoder_replay="bounded"),
    "prefill-off-tp8": lambda n, m: Plan([Request.prefill(n)], tp=8, ep=8),
    "two-prefills-paper": lambda n, m: Plan([Request.prefill(n), Request.prefill(m)], decoder_replay="bounded",
                                            replay_cut="paper"),
    "decode-batch": lambda n, m: Plan([Request.decode(n, copies=1 + m % 64)]),
    "extend-lost": lambda n, m: Plan([Request.extend(n, m, swa_cached=False)], decoder_replay="bounded",
                                     encoder_restore="bounded"),
    "chunks": lambda n, m: Plan([Request.chunk(n + m, 0, n), Request.chunk(n + m, n, m)], decoder_replay="bounded",
                                chunk_tail="last"),
    "dspark-mixed": lambda n, m: Plan([Request.decode(n, copies=4), Request.prefill(m)], dspark="on",
                                      decoder_replay="bounded"),
    "dp-mixed": lambda n, m: Plan([Request.prefill(n), Request.decode(m, copies=3)], dp=4, ep=4),
}


@pytest.fixture(scope="module")
def model():
    return load_model()


def test_caching_is_on_and_can_be_switched_off():
    assert caching()
    with uncached():
        assert not caching()


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(shape=st.sampled_from(sorted(SHAPES)), first=st.tuples(_LENGTH, _LENGTH), second=st.tuples(_LENGTH, _LENGTH),
       hardware=st.sampled_from(["h200_sxm", "gb300"]))
# a compressor's own output is per entry written: equal tokens, unequal entries (context 1 vs 2, m = 2)
@example(shape="decode-batch", first=(1, 1), second=(2, 1), hardware="h200_sxm")
def test_a_reused_shape_compiles_as_from_nothing(model, shape, first, second, hardware):
    build = SHAPES[shape]
    clear_caches()
    compile(model, build(*first), hardware)  # fills every memo with this shape
    warm = compile(model, build(*second), hardware)
    with uncached():
        cold = compile(model, build(*second), hardware)
    _same(warm, cold)


def test_the_second_plan_of_a_shape_is_served_from_the_memos(model):
    from v41graph.ir.lower import template
    from v41graph.passes import fusion
    clear_caches()
    compile(model, Plan([Request.prefill(5000)], decoder_replay="bounded"), "h200_sxm")
    assert len(template.template_of.memo) == 1 and len(fusion._planned.memo) == 1
    compile(model, Plan([Request.prefill(7000)], decoder_replay="bounded"), "h200_sxm")
    assert len(template.template_of.memo) == 1 and len(fusion._planned.memo) == 1  # one shape, one regime
    compile(model, Plan([Request.prefill(100)], decoder_replay="bounded"), "h200_sxm")
    # below the window the replay tail is the whole prompt: replay rewrites no tuple, so its output is
    # another shape (which nodes share rows is part of a shape), with its own fusion plan (L20 → L21 fuses)
    assert len(template.template_of.memo) == 1 and [len(v) for v in fusion._planned.memo._table.values()] == [1, 1]


def test_costs_reused_across_plans_and_shapes_are_the_ones_computed(model):
    # token-only costs are looked up across compiles of any plan: fill the memo from many plans,
    # then each target compiles as from nothing
    clear_caches()
    for build in SHAPES.values():
        for n, m in ((1, 1), (2, 3), (127, 128), (129, 4096), (5000, 77)):
            compile(model, build(n, m), "h200_sxm")
    for build in SHAPES.values():
        for n, m in ((3, 2), (128, 129), (4097, 5)):
            warm = compile(model, build(n, m), "h200_sxm")
            with uncached():
                _same(warm, compile(model, build(n, m), "h200_sxm"))
