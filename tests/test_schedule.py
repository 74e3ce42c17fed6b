"""Scheduling pass (SPEC §4.5, §5.1; STYLE.md point 10): critical path properties and policies.

Properties: the critical path lies between the largest node SOL time and the sum of all node
times, is a path of the graph, and total = max(critical path, busiest resource); a longer prompt
never costs less; bounded replay saves time only once N > 128; two runs agree exactly.
Compiling a plan takes about a second, so compiled results are cached per plan and hypothesis
examples are few.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from functools import cache

from hypothesis import given, settings, strategies as st
import pytest

from v41graph import Plan, Request, load_model, lower
from v41graph.costs.hardware import load_hardware
from v41graph.costs.rules import EXPERT_ASSUMPTION
from v41graph.errors import CostError
from v41graph.ir.graph import Node
from v41graph.ir.ops import Op
from v41graph.passes import PassContext, compile
from v41graph.passes.scheduling import ScheduleReport, Scheduling, exact_path_time
from v41graph.symbols import N


@cache
def _model():
    return load_model()


@cache
def _compiled(requests: tuple[Request, ...], hardware: str = "h200", **policies):
    return compile(_model(), Plan(requests, **policies), hardware)


def _prefill(n: int, **policies):
    return _compiled((Request.prefill(n),), **policies)


def check_schedule(compiled) -> None:
    """Every invariant a schedule must keep, asserted on one compiled plan."""
    g, r = compiled.graph, compiled.report("schedule")
    assert isinstance(r, ScheduleReport)
    slots, cost_table = g.annotation("schedule"), g.annotation("cost")
    assert set(slots) == set(g.nodes) == set(cost_table)
    times = {n: Fraction(s.sol.time) for n, s in slots.items()}

    # the critical path is a path of the graph: consecutive nodes joined by an edge
    path = r.critical_path
    assert path
    edges = {(e.src, e.dst) for e in g.edges}
    for a, b in zip(path, path[1:]):
        assert (a, b) in edges, f"{a} -> {b} is not an edge"
    assert {n for n, s in slots.items() if s.critical} == set(path)

    # largest node ≤ critical path ≤ sum of all nodes (exact, then as the report's float)
    exact = exact_path_time(g, path)
    assert max(times.values()) <= exact <= sum(times.values())
    assert r.critical_path_s == pytest.approx(float(exact), rel=1e-9)
    assert r.critical_path_s == pytest.approx(max(s.finish for s in slots.values()), rel=1e-12)

    # total = max(critical path, busiest resource); resources are sums over nodes
    assert r.total_time_s == max(r.critical_path_s, r.resource_bound_s)
    assert r.resource_bound_s == max(r.resource_s.values())
    for resource in ("compute", "memory", "comm"):
        assert r.resource_s[resource] == pytest.approx(
            float(sum(Fraction(getattr(s.sol, resource)) for s in slots.values())), rel=1e-9, abs=1e-15)

    # a node starts after every producer finishes
    for e in g.edges:
        assert slots[e.dst].start >= slots[e.src].finish - 1e-12

    # breakdowns cover every node once
    total = float(sum(times.values()))
    for table in (r.by_stage, r.by_layer, r.by_op):
        assert sum(table.values()) == pytest.approx(total, rel=1e-9)
    bounds = [s.sol.bound for s in slots.values()]
    assert r.bound_by == {b: bounds.count(b) for b in set(bounds)}
    assert EXPERT_ASSUMPTION in r.assumptions


# ---- invariants on fixed and random plans -----------------------------------------------------------

@pytest.mark.parametrize("requests", [
    (Request.prefill(1),),
    (Request.prefill(1000),),
    (Request.decode(100_000),),
    (Request.prefill(300), Request.decode(2000), Request.decode(7)),
])
def test_schedule_invariants_fixed(requests):
    check_schedule(_compiled(requests))


plans = st.builds(
    lambda prefills, decodes, replay: ((*(Request.prefill(n) for n in prefills), *(Request.decode(c) for c in decodes)),
                                       replay),
    st.lists(st.integers(1, 4000), min_size=1, max_size=3),
    st.lists(st.integers(1, 50_000), min_size=0, max_size=2),
    st.sampled_from(["off", "bounded"]))


@settings(max_examples=15, deadline=None)
@given(plan=plans)
def test_schedule_invariants_random(plan):
    requests, replay = plan
    check_schedule(_compiled(requests, decoder_replay=replay))


# ---- which resource bounds a node ---------------------------------------------------------------------

def test_gemm_bound_and_time():
    # L3.wq_a at 4096 tokens: 2·4096·5120·1280 = 53,687,091,200 fp8 flops / 1.979e15 = 524288/19326171875 s
    # (≈ 27.1 µs) against ≈ 59 MB of traffic / 4.8 TB/s ≈ 12.3 µs: compute bound
    slot = _prefill(4096).graph.annotation("schedule")["L3.wq_a"]
    assert (slot.sol.bound, slot.sol.time) == ("compute", Fraction(524288, 19326171875))
    # one decode token: 6.6 ns of compute against the 6,560,000 B of weights alone (1.37 µs): memory bound
    slot = _compiled((Request.decode(4096),)).graph.annotation("schedule")["L3.wq_a"]
    assert slot.sol.bound == "memory"
    assert slot.sol.memory >= Fraction(6_560_000, 4_800 * 10**9)


def test_blackwell_never_slower():
    # every B200 peak and bandwidth used here is at least the H200 one, so no node and no path is slower
    h200, b200 = _prefill(4096).report("schedule"), _compiled((Request.prefill(4096),), "b200").report("schedule")
    assert b200.hardware == "b200_sxm" and h200.hardware == "h200_sxm"
    assert b200.total_time_s < h200.total_time_s


# ---- monotone in the prompt length --------------------------------------------------------------------

@pytest.mark.parametrize("n, longer, replay", [
    (1, 2, "off"), (127, 128, "off"), (128, 129, "off"), (1000, 1500, "off"), (4000, 8000, "off"),
    (127, 128, "bounded"), (128, 129, "bounded"), (1000, 1500, "bounded"),
])
def test_longer_prompt_never_cheaper(n, longer, replay):
    a = _prefill(n, decoder_replay=replay).report("schedule")
    b = _prefill(longer, decoder_replay=replay).report("schedule")
    assert b.total_time_s >= a.total_time_s
    assert b.critical_path_s >= a.critical_path_s
    assert b.resource_bound_s >= a.resource_bound_s


@settings(max_examples=4, deadline=None)
@given(n=st.integers(1, 3000), k=st.integers(1, 500), replay=st.sampled_from(["off", "bounded"]))
def test_longer_prompt_never_cheaper_random(n, k, replay):
    a = _prefill(n, decoder_replay=replay).report("schedule")
    b = _prefill(n + k, decoder_replay=replay).report("schedule")
    assert b.total_time_s >= a.total_time_s


# ---- bounded replay ------------------------------------------------------------------------------------

@pytest.mark.parametrize("n", [65_536, 131_072])
def test_bounded_replay_is_faster_on_long_prompts(n):
    off = _prefill(n, decoder_replay="off").report("schedule")
    bounded = _prefill(n, decoder_replay="bounded").report("schedule")
    assert bounded.total_time_s < off.total_time_s
    # the SGLang cut starts the tail at layer 21: the encoder and layer 20's own work are untouched
    # (layer 20's totals are not compared: with replay off, single-pass mHC fuses layer 21's
    # coefficients into L20.hc_ffn.mega, which the cut in token counts forbids under bounded replay)
    assert bounded.by_stage["encoder"] == off.by_stage["encoder"]
    slots_off = _prefill(n, decoder_replay="off").graph.annotation("schedule")
    slots_bounded = _prefill(n, decoder_replay="bounded").graph.annotation("schedule")
    for node in ("L20.wq_a", "L20.attn", "L20.moe.experts", "L20.cmp.write"):
        assert slots_bounded[node].sol == slots_off[node].sol
    for node in ("L21.wq_a", "L21.attn", "L21.moe.experts", "L39.attn"):
        assert slots_bounded[node].sol.time < slots_off[node].sol.time
    assert bounded.by_layer["21"] < off.by_layer["21"]
    assert bounded.by_layer["39"] < off.by_layer["39"]


def test_bounded_replay_changes_nothing_up_to_the_window():
    # N = 128: the replay tail is min(128, 128) = 128 = every token, so the schedule is the same
    assert _prefill(128, decoder_replay="bounded").report("schedule") == _prefill(128).report("schedule")


# ---- determinism ---------------------------------------------------------------------------------------

def test_two_runs_are_identical():
    plan = Plan([Request.prefill(777), Request.decode(12_345)], decoder_replay="bounded")
    first, second = compile(_model(), plan, "h200"), compile(_model(), plan, "h200")
    assert first.report("schedule") == second.report("schedule")
    assert first.report("schedule").critical_path == second.report("schedule").critical_path
    assert dict(first.graph.annotation("schedule")) == dict(second.graph.annotation("schedule"))


# ---- errors ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Mystery(Op):
    """An op kind nobody wrote a cost rule for."""


def test_scheduling_never_skips_a_node_without_a_rule():
    plan = Plan([Request.prefill(64)])
    g = lower(_model(), plan)
    g = g.with_nodes([n if n.id != "L3.q_norm" else Node(n.id, Mystery(), n.layer, n.stage, n.path, n.rows)
                      for n in g.nodes.values()])
    with pytest.raises(CostError, match="no cost rule for op kind Mystery .*L3.q_norm"):
        Scheduling(load_hardware("h200"))(g, PassContext(_model(), plan))


def test_symbolic_plan_is_refused_with_a_cost_error():
    # the path is chosen numerically; a symbolic plan must be bound first (not a bare float() TypeError)
    with pytest.raises(CostError, match="symbolic SOL time"):
        compile(_model(), Plan([Request.prefill(N)]), "h200")


def test_compile_entry_point_is_not_shadowed_by_a_submodule():
    import importlib

    import v41graph.passes as passes
    importlib.import_module("v41graph.passes.scheduling")
    assert callable(passes.compile) and passes.compile.__module__ == "v41graph.passes"
    with pytest.raises(AttributeError, match="has no attribute 'schedule'"):
        passes.schedule  # noqa: B018 (its name before issue 23, removed in issue 36: CHANGELOG.md)


@cache
def _finder():
    from v41graph.passes.critical_path import PathFinder
    return PathFinder(lower(_model(), Plan((Request.prefill(300), Request.decode(1000)))))


@settings(max_examples=25, deadline=None)
@given(st.lists(st.sampled_from([0.0, 0.0, 1.0, 2.0, 0.5, 3.25, 7.0]), min_size=1, max_size=64), st.integers(0, 10**6))
def test_the_one_point_path_is_the_many_point_path(palette, seed):
    """run_one is run at one point in plain floats (the schedule's speed path): same finishes, same
    path, ties and zero-time nodes included (times drawn from a small palette so ties are common)."""
    import random
    f = _finder()
    rng = random.Random(seed)
    times = [rng.choice(palette) for _ in f.order]
    finish, path = f.run_one(times)
    many, paths = f.run([[t, 2 * t] for t in times])
    assert finish == list(many[:, 0]) and path == paths[0]
    assert paths[1] == path  # doubling every time keeps the path
