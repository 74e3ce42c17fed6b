"""Reuse in OP/hybrid compiles never changes an answer (passes/measured_modules.py,
costs/measured/module_sol.py, passes/scheduling.py).

* the measured-module pass is planned once per graph shape (model content, ``transfers_op``):
  its output carries a shape, so the scheduling pass's per-shape pricing is reused too; a key that
  drops ``transfers_op`` is caught by the shadow check;
* a measured attention module's SOL and table lookup are keyed by its cost signature, which is
  one for the layers of one kind (a covered cache's owner layer changes no cost); a signature that
  merges unequal modules is caught by the shadow check;
* hybrid plans of both V4 checkpoints on several mappings and request mixes compile, under the
  shadow check, as they do with reuse off.
"""

from __future__ import annotations

import json

import pytest

from v41graph import Plan, Request, compile, load_model
from v41graph.costs.measured import module_sol
from v41graph.costs.measured.tiers import CostMode
from v41graph.costs.node import static_signature
from v41graph.errors import GraphError
from v41graph.ir.ops import Fused
from v41graph.ir.shapes import clear_caches, shadow, uncached
from v41graph.passes import measured_modules, node_costs


def _modules(graph) -> list:
    return [n for n in graph.nodes.values() if isinstance(n.op, Fused) and n.op.rule == "measured:dsv4_attention"]


def _times(compiled) -> str:
    slots = compiled.graph.annotations["schedule"]
    return json.dumps([(n, s.finish, s.finish - s.start, s.sol.bound) for n, s in slots.items()])


def test_the_measured_modules_are_planned_once_per_shape_and_their_output_has_a_shape(v4_flash):
    clear_caches()
    plans = [Plan([Request.decode(3000 + 256 * i, copies=8), Request.prefill(1000 + 256 * i)], tp=8, ep=8)
             for i in range(3)]
    outs = [compile(v4_flash, p, cost=CostMode("hybrid")) for p in plans]
    assert len(measured_modules._planned.memo) == 1  # one shape: one plan, found again for the later two
    assert len(node_costs._pricing.memo) == 1  # its output has a shape: the schedule's pricing is reused
    assert len(_modules(outs[-1].graph)) == 43
    with uncached():
        assert [_times(compile(v4_flash, p, cost=CostMode("hybrid"))) for p in plans] == [_times(o) for o in outs]


def test_a_key_that_drops_transfers_op_is_caught_by_the_shadow_check(monkeypatch, v4_flash):
    # Without transfer:op an SWA-only layer keeps its ops (no HCA module stands in): two plans.
    key = measured_modules._planned.key
    monkeypatch.setattr(measured_modules._planned, "key",
                        lambda skeleton, model, transfers_op, at: key(skeleton, model, True, at))
    clear_caches()
    plan = Plan([Request.prefill(2000)], tp=8, ep=8)
    compile(v4_flash, plan, cost=CostMode("hybrid"))
    with shadow(), pytest.raises(GraphError, match=r"shadow check: memo 'measured-module plans' returned a value "
                                 r"that differs from a fresh computation"):
        compile(v4_flash, plan, cost=CostMode("hybrid", ("dtype", "shape")))
    clear_caches()


def test_the_layers_attention_modules_of_one_kind_share_one_signature(v4_flash):
    g = compile(v4_flash, Plan([Request.prefill(1000)], tp=8, ep=8), cost=CostMode("hybrid")).graph
    kinds: dict = {}
    for n in _modules(g):
        kinds.setdefault(static_signature(g, n, v4_flash)[0], []).append(n.layer)
    # SWA-only (layers 0, 1), CSA (ratio 4) and HCA (ratio 128): the covered caches' owners differ
    assert sorted(len(v) for v in kinds.values()) == [2, 20, 21]


def test_a_module_signature_that_merges_unequal_modules_is_caught_by_the_shadow_check(monkeypatch, v4_flash):
    monkeypatch.setattr(module_sol, "static_signature", lambda graph, node, model: (("one",), ()))
    clear_caches()
    plan = Plan([Request.prefill(1000)], tp=8, ep=8)
    with shadow(), pytest.raises(GraphError, match=r"shadow check: memo 'measured module SOL at grid points' returned"):
        compile(v4_flash, plan, cost=CostMode("hybrid"))
    clear_caches()


@pytest.mark.parametrize("model", ["deepseek-v4-flash", "deepseek-v4-pro"])
def test_hybrid_plans_under_the_shadow_check_give_what_they_give_with_reuse_off(model):
    m = load_model(model)
    cases = [  # (hardware, plan, transfers): mappings and request mixes, each shape met twice
        ("h200_sxm", Plan([Request.decode(4000 + 512 * i, copies=16)], tp=8, ep=8), ("dtype", "shape", "op"))
        for i in range(2)] + [
        ("b200_sxm", Plan([Request.prefill(700 + 300 * i), Request.decode(2000, copies=4)]), ("dtype", "shape"))
        for i in range(2)] + [
        ("h200_sxm", Plan([Request.chunk(6000, 0, 3000 + i), Request.extend(1000, 500 + i)], tp=8, ep=8, dp=8),
         ("dtype", "shape", "op")) for i in range(2)]
    clear_caches()
    with shadow():  # every hit recomputed and compared
        warm = [_times(compile(m, p, hw, cost=CostMode("hybrid", t))) for hw, p, t in cases]
    with uncached():
        assert [_times(compile(m, p, hw, cost=CostMode("hybrid", t))) for hw, p, t in cases] == warm
