"""Stated rows slots (``Graph.slots``) equal the identity reading of the rows tuples (``flow.rows_classes``).

Which nodes share a rows tuple is stated by each graph's maker — lowering from the sources its builders
named, replay, fusion, measured modules and kv_dedup from their input's — and read back by the passes
through ``shapes.rows_slots``. A stated answer that differed from the tuples the nodes really carry
would price, guard or rewrite the wrong nodes together, so every graph a compile makes — the lowered
graph and each pass's output — is compared here with the reading by ``id()``, on drawn plans
(``reuse_plans``) and hand plans, with every memo on (shapes seen again) and from nothing.
"""

from __future__ import annotations

import random

import pytest
from reuse_plans import plan_of, sequence

from v41graph import Plan, Request, load_model, lower
from v41graph.costs.measured.tiers import CostMode
from v41graph.errors import V41Error
from v41graph.ir.flow import rows_classes
from v41graph.ir.graph import GraphBuilder
from v41graph.ir.ops import GraphInput, Norm
from v41graph.ir.shapes import rows_slots, shadow, uncached
from v41graph.passes import arrange, compile as schedule, compile_graph
from v41graph.passes.fusion import Fusion
from v41graph.passes.kv_dedup import KVDedup
from v41graph.passes.measured_modules import MeasuredModules
from v41graph.passes.precision import PrecisionAnnotation
from v41graph.passes.replay import ReplayPruning


def _graphs(model, plan, cost: str = "sol", changing: tuple[str, ...] = ()):
    """The lowered graph, then each pass's output, of one compile (the passes ``changing`` changed something)."""
    compiled = schedule(model, plan, cost=CostMode(cost))
    assert all(p.changed for p in compiled.passes if p.name in changing), changing
    return [lower(model, plan)] + [p.graph for p in compiled.passes]


def _stated_equal_read(graphs) -> int:
    for g in graphs:
        assert g.slots is not None, g.shape
        assert g.slots == rows_classes(tuple(g.nodes.values()))
        assert rows_slots(g.skeleton) == g.slots
    return len(graphs)


HAND = {
    "dp 1": ("deepseek-v4.1-flash", Plan([Request.prefill(3000), Request.decode(900, copies=4)])),
    "dp 4": ("deepseek-v4.1-flash", Plan([Request.prefill(3000), Request.decode(900)], tp=4, ep=4, dp=4)),
    "tabled, dp 1": ("deepseek-v4.1-flash", Plan([Request.decode(200 + 97 * i) for i in range(60)])),
    "tabled, dp 8": ("deepseek-v4.1-flash", Plan([Request.decode(200 + 97 * i) for i in range(60)],
                                                 tp=8, ep=8, dp=8)),
    "replay bounded": ("deepseek-v4.1-flash", Plan([Request.prefill(5000), Request.extend(3000, 200)],
                                                   decoder_replay="bounded", encoder_restore="bounded")),
    "DSpark": ("deepseek-v4.1-flash", Plan([Request.verify(700, 4), Request.prefill(300)], dspark="on")),
    "DSpark dp 2": ("deepseek-v4.1-flash", Plan([Request.prefill(100), Request.decode(900)], dspark="on",
                                                tp=2, ep=2, dp=2)),
    "vision": ("deepseek-v4.1-flash", Plan([Request.prefill(4000, images=1), Request.decode(100)])),
    "V4 two-pass": ("deepseek-v4-flash", Plan([Request.prefill(2000)], fusion="two-pass")),
}


@pytest.mark.parametrize("name", sorted(HAND))
def test_hand_plans_state_the_slots_their_rows_carry(name):
    model, plan = HAND[name]
    m = load_model(model)
    with shadow():  # every memo hit recomputed too: rows_slots compares stated with read on every graph
        changing = ("replay", "fusion") if name == "replay bounded" else ("fusion",)
        # lowered, precision, replay, kv_dedup, fusion, schedule
        assert _stated_equal_read(_graphs(m, plan, changing=changing)) == 6
        assert _stated_equal_read(_graphs(m, plan.with_requests([Request.prefill(77)] + list(plan.requests))))
    with uncached():
        assert _stated_equal_read(_graphs(m, plan)) == 6


@pytest.mark.parametrize("model,fusion", [("deepseek-v4-flash", "unfused"), ("deepseek-v4-flash", "two-pass"),
                                          ("deepseek-v4.1-flash", "unfused")])
def test_measured_modules_state_their_members_slots(model, fusion):
    m = load_model(model)
    passes = arrange((PrecisionAnnotation(), ReplayPruning(), KVDedup(), Fusion(), MeasuredModules()))
    replay = "bounded" if m.family == "v4.1" else "off"  # V4 has no causal decoder to bound
    plan = Plan([Request.prefill(4096), Request.extend(900, 64)], fusion=fusion, decoder_replay=replay)
    for block in (shadow, uncached):
        with block():
            compiled = compile_graph(m, plan, check=False, passes=passes)
            assert compiled.passes[-1].name == "measured_modules" and compiled.passes[-1].changed > 0
            assert _stated_equal_read([lower(m, plan)] + [p.graph for p in compiled.passes]) == 6


def test_drawn_plans_state_the_slots_their_rows_carry():
    models, compared = {}, 0
    for item in sequence(random.Random(11), 60, hybrid=0):
        m = models.setdefault(item["model"], load_model(item["model"]))
        try:
            graphs = _graphs(m, plan_of(item), item["cost"])
        except V41Error:
            continue  # a refused plan makes no graph
        compared += _stated_equal_read(graphs)
    assert compared >= 6 * 50


def test_a_graph_built_by_hand_is_read_by_identity():
    b = GraphBuilder("toy")
    rows = b.rows(8)
    b.op("L0.in", GraphInput(4), rows)
    b.op("L0.norm", Norm(4), rows, reads=[("L0.in", "x", 4, "bf16")])
    b.op("L0.out", Norm(4), b.rows(8), reads=[("L0.norm", "x", 4, "bf16")], sink=True)
    g = b.build()
    assert g.slots is None and rows_slots(g.skeleton) == (0, 0, 1)


def test_the_shadow_check_refuses_slots_that_are_not_the_rows():
    g = lower(load_model(), Plan([Request.prefill(1000)]))
    wrong = g.with_nodes(g.nodes.values(), shape=None, slots=(0,) * len(g.nodes))
    with uncached():  # no shadow check (V41GRAPH_SHADOW=1 included): stated slots are believed
        assert rows_slots(wrong.skeleton) == (0,) * len(g.nodes)
    with shadow(), pytest.raises(V41Error, match="states rows slots that differ from its rows tuples"):
        rows_slots(wrong.skeleton)
