"""Reuse never changes an answer (v41graph/reuse.py, ir/shapes.py).

* the differential property: a random sequence of 200+ plans over every ``Plan`` field, both model
  families, every built-in GPU and the cost modes, compiled one after another in one process
  (shapes seen, plans repeated), gives byte for byte the JSON each plan gives compiled with reuse
  off;
* the shadow check: a sequence compiled with every hit recomputed and compared; and a key broken
  on purpose (the fusion profile dropped) is caught, naming the memo;
* the issue's two reproducers, in both orders; the registry empties every memo and cached
  function; ``V41GRAPH_NO_CACHE`` is read when a compile starts.
"""

from __future__ import annotations

import gc
from pathlib import Path
import random
import re
import sys
import tomllib

from hypothesis import HealthCheck, Phase, given, settings, strategies as st
import pytest

from reuse_plans import NOT_POLICIES, describe, figures, policies, sequence
from v41graph import Plan, Request, compile, load_model
from v41graph import collector, reuse
from v41graph.errors import GraphError
from v41graph.ir.lower import template
from v41graph.ir.shapes import clear_caches, shadow, uncached
from v41graph.passes import fusion

SRC = Path(__file__).resolve().parents[1] / "src" / "v41graph"


# one long sequence per run, never shrunk (a failure names every plan that differs)
@settings(max_examples=1, deadline=None, suppress_health_check=list(HealthCheck), phases=[Phase.generate])
@given(seed=st.integers(0, 2**32))
def test_a_sequence_of_plans_compiles_as_each_plan_from_nothing(seed):
    plans = sequence(random.Random(seed), 200)
    clear_caches()
    warm = [figures(item) for item in plans]
    with uncached():
        cold = {}
        for item in plans:
            if id(item) not in cold:
                cold[id(item)] = figures(item)
    bad = [describe(item) for item, got in zip(plans, warm) if got != cold[id(item)]]
    assert bad == []
    assert sum('"error"' not in w[:12] for w in warm) >= 120  # most plans compile: the property has teeth


def test_the_property_draws_every_plan_field():
    """Issue 36, item 1: the random plans draw every policy field of ``Plan`` (derived from the dataclass, so a new
    field cannot go undrawn); ``moe_a2a`` among them, both of its values."""
    import dataclasses
    drawn = [policies(random.Random(seed), v41=True) for seed in range(40)]
    assert {tuple(sorted(p)) for p in drawn} == {tuple(sorted(f.name for f in dataclasses.fields(Plan)
                                                              if f.name not in NOT_POLICIES))}
    assert {p["moe_a2a"] for p in drawn} == {"deepep", "none"}


@settings(max_examples=1, deadline=None, suppress_health_check=list(HealthCheck), phases=[Phase.generate])
@given(seed=st.integers(0, 2**32))
def test_a_shadow_checked_sequence_finds_every_hit_equal_to_a_fresh_computation(seed):
    clear_caches()
    with shadow():
        for item in sequence(random.Random(seed), 30, recipes=8, hybrid=0):
            figures(item, summary=False)  # raises GraphError on the first hit that differs


def test_a_key_that_drops_the_fusion_profile_is_caught_by_the_shadow_check(monkeypatch, flash):
    # Break the fusion pass's key as the bug did: no profile. (The lowering key holds every plan
    # policy, so it must lose the profile too for two profiles to meet at the fusion memo.)
    key, low = fusion._planned.key, template.template_of.key
    i = [f for f in Plan.__dataclass_fields__ if f not in ("requests", "label")].index("fusion")  # in .policies
    monkeypatch.setattr(fusion._planned, "key", lambda skeleton, profile, at: key(skeleton, "two-pass", at))
    monkeypatch.setattr(template.template_of, "key",
                        lambda model, policies, *rest: low(model, policies[:i] + (None,) + policies[i + 1:], *rest))
    clear_caches()
    compile(flash, Plan([Request.prefill(3000)], fusion="two-pass", decoder_replay="bounded"))
    one = Plan([Request.prefill(3000)], fusion="single-pass", decoder_replay="bounded", label="one")
    # the first difference in the plan's answer: the fused mHC's layout (two-pass re-reads x)
    with shadow(), pytest.raises(GraphError, match=r"shadow check: memo 'fusion plans' returned a value that "
                                 r"differs from a fresh computation at value\[1\]\[\d+\]\.op\.reread "
                                 r"\(length 1 != 0\) \(plan: one\)"):
        compile(flash, one)
    clear_caches()


def test_op_mode_prices_equal_work_once_and_the_shadow_check_proves_it(monkeypatch, flash):
    """Within a compile, OP/hybrid prices nodes whose cost reads tokens only by their pair's key
    (one lookup for the same GEMM in 43 layers); under the shadow check every reuse is priced again
    and compared, and a key that merges unequal work fails naming that memo."""
    from v41graph.costs.measured.tiers import CostMode
    from v41graph.passes import node_costs
    plan = Plan([Request.decode(4000, copies=8), Request.prefill(1500)], tp=8, ep=8)
    with shadow():  # the real keys: every reuse equal to a fresh price
        fine = compile(flash, plan, cost=CostMode("hybrid")).report("schedule").total_time_s
    with uncached():
        assert compile(flash, plan, cost=CostMode("hybrid")).report("schedule").total_time_s == fine
    monkeypatch.setattr(node_costs.Pricing, "keys", lambda self, graph, model: [0] * len(self.pair_of))
    with shadow(), pytest.raises(GraphError, match=r"shadow check: memo 'measured prices of equal work' returned "
                                 r"a value that differs from a fresh computation"):
        compile(flash, plan, cost=CostMode("hybrid"))


@pytest.mark.parametrize("first_two_pass", [True, False])
def test_the_fusion_profile_does_not_leak_across_compiles(flash, first_two_pass):
    two = Plan([Request.prefill(3000)], fusion="two-pass", decoder_replay="bounded")
    one = Plan([Request.prefill(3000)], fusion="single-pass", decoder_replay="bounded")
    clear_caches()
    for p in (two, one) if first_two_pass else (one, two):
        compile(flash, p)
    with uncached():
        cold = {p.fusion: compile(flash, p).report("schedule").total_time_s for p in (one, two)}
    assert compile(flash, one).report("schedule").total_time_s == cold["single-pass"]
    assert compile(flash, two).report("schedule").total_time_s == cold["two-pass"]
    # the uncached figure, 0.0803761 before issue 25 priced the expected distinct experts
    assert round(cold["single-pass"], 7) == 0.0789795
    assert cold["two-pass"] > cold["single-pass"]


@pytest.mark.parametrize("chunks_first", [True, False])
def test_a_fusion_plan_is_not_reused_where_the_rows_break_its_legality(v4_flash, chunks_first):
    # the head's mHC group fuses with L42 where they carry one rows tuple (chunks: replay rewrites
    # nothing); a restored extend rewrites L42's rows, not the head's, so there it may not fuse
    chunks = Plan([Request.chunk(4000, 0, 2000), Request.chunk(4000, 2000, 2000)], encoder_restore="bounded")
    extends = Plan([Request.extend(1000, 3000), Request.extend(1000, 3000, swa_cached=False)],
                   encoder_restore="bounded")
    clear_caches()
    for p in (chunks, extends) if chunks_first else (extends, chunks):
        compile(v4_flash, p)
    got = compile(v4_flash, extends)
    # 0.1192248 s before issue 25 (expected distinct experts; the shared expert after the routed in a prefill)
    assert (len(got.graph.nodes), round(got.report("schedule").total_time_s, 7)) == (1384, 0.1259506)
    with uncached():
        cold = compile(v4_flash, chunks)
    assert compile(v4_flash, chunks).report("schedule") == cold.report("schedule")


def test_clear_caches_empties_every_memo_and_cached_function(flash):
    compile(flash, Plan([Request.prefill(777)]))
    assert any(len(c) if hasattr(c, "__len__") else c.cache_info().currsize for c in reuse._REGISTRY.values())
    clear_caches()
    sizes = {getattr(c, "name", getattr(c, "__qualname__", repr(c))):
             len(c) if hasattr(c, "__len__") else c.cache_info().currsize for c in list(reuse._REGISTRY.values())}
    assert {k: v for k, v in sizes.items() if v} == {}


def test_every_cache_in_the_package_is_made_by_the_registry():
    # a memo made any other way would escape clear_caches(), the switch and the shadow check
    pattern = re.compile(r"lru_cache|functools\.cache\b|@cache\b|^_[A-Z_]+(: [^=]+)? = (\{\}|dict\(\)|OrderedDict\(\))",
                         re.M)
    found = {str(p.relative_to(SRC)): m.group(0) for p in SRC.rglob("*.py") if p.name != "reuse.py"
             for m in [pattern.search(p.read_text())] if m}
    # registries of extensions (what a user registered) and the symbol table, not answers kept across calls
    assert set(found) <= {"costs/registry.py", "passes/registry.py", "passes/fusion_rules.py", "symbols.py"}, found


def test_no_cache_is_read_when_a_compile_starts(flash, monkeypatch):
    plan = Plan([Request.prefill(4321)])
    clear_caches()
    monkeypatch.setenv("V41GRAPH_NO_CACHE", "1")
    compile(flash, plan)
    assert len(template.template_of.memo) == 0 and not reuse.caching()
    monkeypatch.delenv("V41GRAPH_NO_CACHE")
    compile(flash, plan)
    assert len(template.template_of.memo) == 1 and reuse.caching()


def test_shadow_is_read_from_the_environment_when_a_compile_starts(flash, monkeypatch):
    monkeypatch.setenv("V41GRAPH_SHADOW", "1")
    compile(flash, Plan([Request.prefill(999)]))
    assert reuse.shadowing()
    monkeypatch.delenv("V41GRAPH_SHADOW")
    compile(flash, Plan([Request.prefill(998)]))
    assert not reuse.shadowing()


def test_a_compile_leaves_the_collector_as_it_found_it(flash):
    """Issue 36, item 3: the collector is the caller's. The reproducer of the old gc.freeze(): collect once,
    drop a cycle holding 50 MB, compile a new shape, collect again — the cycle must be gone."""
    import weakref
    clear_caches()
    assert gc.isenabled()
    frozen, thresholds = gc.get_freeze_count(), gc.get_threshold()

    class Node:
        pass
    gc.collect()
    a, b = Node(), Node()
    a.other, b.other, a.payload = b, a, bytearray(50 * 2**20)  # a cycle: only the collector frees it
    alive = weakref.ref(a)
    del a, b
    compile(flash, Plan([Request.prefill(5555)], tp=8, ep=8))  # a new shape, kept for later compiles
    gc.collect()
    assert alive() is None
    assert (gc.isenabled(), gc.get_freeze_count(), gc.get_threshold()) == (True, frozen, thresholds)


def test_only_a_program_that_owns_its_process_freezes_and_it_gives_back(flash):
    """The v41graph command (collector.frozen_shapes, which its main opts into) freezes a new shape's objects out of
    the collector's scans for the command and unfreezes on exit; a plain compile never freezes."""
    from v41graph.cli.main import main
    clear_caches()
    gc.unfreeze()
    compile(flash, Plan([Request.prefill(4321)], tp=8, ep=8))
    assert gc.get_freeze_count() == 0  # the library alone: the caller's collector untouched
    with collector.frozen_shapes():
        compile(flash, Plan([Request.prefill(4321), Request.decode(99)], tp=8, ep=8))  # a new shape: frozen
        assert gc.get_freeze_count() > 0
    assert gc.get_freeze_count() == 0 and gc.isenabled()  # handed back
    thresholds = gc.get_threshold()
    with collector.frozen_shapes():
        assert gc.get_threshold()[0] == max(thresholds[0], collector.YOUNG_THRESHOLD)  # the command's own
        assert gc.get_threshold()[1:] == thresholds[1:]
    assert main(["cost", "--prefill", "777", "--decode", "1:55", "--json"]) == 0
    assert gc.get_freeze_count() == 0 and not collector._FREEZE[0] and gc.get_threshold() == thresholds


def test_the_console_script_ends_with_everything_frozen(flash, capsys):
    """The console script's process ends with the command: its exit would collect every tracked object for
    nothing, so ``main(process_ends=True)`` (what ``script`` and ``python -m v41graph.cli`` call) leaves what is
    alive frozen — and only then; the entry point installed is ``script``."""
    from v41graph.cli.main import main, script
    clear_caches()
    gc.unfreeze()
    try:
        assert main(["cost", "--prefill", "778", "--json"], process_ends=True) == 0
        assert gc.get_freeze_count() > 0 and not collector._FREEZE[0]
        gc.unfreeze()
        with collector.frozen_shapes(hand_back=False):
            pass  # nothing compiled: still the process's last act, so it freezes
        assert gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()
    assert gc.get_freeze_count() == 0
    pyproject = tomllib.loads((Path(__file__).parents[1] / "pyproject.toml").read_text())
    assert pyproject["project"]["scripts"] == {"v41graph": "v41graph.cli.main:script"}
    argv = sys.argv
    sys.argv = ["v41graph", "--version"]
    try:
        with pytest.raises(SystemExit) as exit_:
            script()
    finally:
        sys.argv = argv
        gc.unfreeze()
    assert exit_.value.code == 0 and capsys.readouterr().out.strip()


def test_the_model_is_keyed_by_its_content(flash):
    from dataclasses import replace
    clear_caches()
    compile(flash, Plan([Request.prefill(100)]))
    compile(load_model(), Plan([Request.prefill(200)]))  # another object, one content: one shape
    assert len(template.template_of.memo) == 1
    wider = replace(flash, index_topk=flash.index_topk * 2)
    assert compile(wider, Plan([Request.prefill(9000)])).report("schedule") != \
        compile(flash, Plan([Request.prefill(9000)])).report("schedule")
    assert len(template.template_of.memo) == 2


def test_memo_random_access_still_bounded():
    m = reuse.Memo("bounded", 3)
    rng = random.Random(1)
    for _ in range(100):
        m.put(rng.randint(0, 50), 1)
    assert len(m) == 3


def test_a_cost_rule_registered_after_compiles_prices_the_next_compile():
    """A built-in storage kind prices as the default rule (nothing) until a user registers one:
    the shapes and prices kept before must not outlive the rule table they read."""
    from v41graph.costs.registry import register_op
    from v41graph.costs.value import Cost
    from v41graph.ir.ops.base import CompressorState
    model = load_model()
    compile(model, Plan([Request.prefill(4000)]))
    register_op(CompressorState, lambda op, node, ctx, t: Cost.of(bytes={"workspace": 10**9}))
    kept = compile(model, Plan([Request.prefill(4001)])).report("schedule")
    with uncached():
        fresh = compile(model, Plan([Request.prefill(4001)])).report("schedule")
    assert kept.resource_s == fresh.resource_s and kept.total_time_s == fresh.total_time_s
    assert kept.by_op.get("CompressorState", 0) > 0  # the new rule is priced
