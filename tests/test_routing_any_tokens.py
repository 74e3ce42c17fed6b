"""Routing generators hold for any token count (issue 38, item 4).

AIConfigurator's power-law generator scales its draws to T·k, so a node no token reaches (T = 0:
a DSpark draft block's dispatch in a small decode batch) left no expert a load and the plan was
refused. Where the scaled draws are degenerate the loads fall back to the exact draw of T tokens
each picking k distinct experts (uniform picks, T·k in all); any other count keeps the generator.
"""

from __future__ import annotations

from fractions import Fraction

from hypothesis import given, settings, strategies as st
import numpy as np
import pytest

from v41graph.costs.expert_loads import POWER_LAW_FALLBACK, expert_load, power_law_loads
from v41graph.errors import CostError
from v41graph.ir.routing import UNIFORM, Routing

from helpers import run, run_json

GENERATORS = (UNIFORM, Routing("power-law"), Routing("power-law", alpha=1.2), Routing("power-law", alpha=0.5),
              Routing("power-law", alpha=2.5, seed=3))


def _check(load, experts: int, top_k: int, tokens: int) -> None:
    """Pick probabilities of k distinct picks; loads summing to T·k; at least k experts touched."""
    assert sum(load.picks) == top_k and all(0 <= p <= 1 for p in load.picks)
    assert sum(1 for p in load.picks if p > 0) >= min(top_k, experts)
    assert sum(load.tokens_per_expert(tokens)) == tokens * top_k
    assert sum(sum(r) for r in load.ranks) == top_k
    distinct = float(load.distinct(tokens))  # (1 − p)^T of a long fraction is evaluated in floats
    if tokens == 0:
        assert distinct == 0
    else:  # one token reads exactly k experts; T tokens at most min(E, T·k)
        eps = 1e-12 * experts
        assert min(top_k, experts) - eps <= distinct <= min(experts, tokens * top_k) + eps


@pytest.mark.parametrize("routing", GENERATORS, ids=lambda r: r.describe())
def test_every_token_count_up_to_96_has_valid_loads(routing):
    # 96 crosses the generator's range switch at T·k > E (T = 43 for 256 experts, 6 picks)
    for tokens in range(97):
        _check(expert_load(routing, 256, 6, 8, 0, tokens), 256, 6, tokens)


@settings(max_examples=40, deadline=None)
@given(tokens=st.integers(0, 20_000), copies=st.integers(1, 64),
       routing=st.sampled_from(GENERATORS + (Routing("power-law", alpha=200.0),)),
       shape=st.sampled_from(((256, 6, 8, 0), (256, 6, 8, 32), (8, 2, 2, 0), (64, 8, 4, 0), (6, 6, 1, 0))))
def test_any_token_count_and_copies_give_loads_summing_to_tokens_times_top_k(tokens, copies, routing, shape):
    experts, top_k, ranks, redundant = shape
    _check(expert_load(routing, experts, top_k, ranks, redundant, tokens * copies), experts, top_k, tokens * copies)


def test_zero_tokens_fall_back_to_the_exact_draw():
    assert [float(x) for x in power_law_loads(1.2, 0, 256, 6, 0)] == [0.0] * 256  # scaled to T·k = 0
    load = expert_load(Routing("power-law", alpha=1.2), 256, 6, 8, 0, 0)
    assert load.picks == (Fraction(6, 256),) * 256 and load.imbalance == 1
    assert load.distinct(0) == 0


def test_overflowing_draws_fall_back_to_the_exact_draw():
    # alpha 200 on the small-batch range [0.01, 2]: 0.01^-199 overflows, every draw is nan
    assert np.isnan(power_law_loads(200.0, 0, 8, 2, 1)).all()
    load = expert_load(Routing("power-law", alpha=200.0), 8, 2, 2, 0, 1)
    assert load.picks == (Fraction(1, 4),) * 8 and load.distinct(1) == 2


def test_a_valid_count_keeps_the_generator():
    # T = 64 tokens, 6 picks of 256: the generator's own loads (max < 64: no expert is clipped)
    loads = power_law_loads(1.2, 0, 256, 6, 64)
    load = expert_load(Routing("power-law", alpha=1.2), 256, 6, 1, 0, 64)
    assert [float(p) for p in load.picks] == pytest.approx(list(loads / 64), rel=1e-12)
    assert load.picks != (Fraction(6, 256),) * 256


def test_invalid_input_is_still_refused():
    with pytest.raises(CostError, match="fewer than top_k = 6 experts have a load"):
        expert_load(Routing("power-law"), 4, 6, 1, 0, 10)  # fewer experts than picks
    with pytest.raises(CostError, match="negative token count"):
        expert_load(Routing("power-law"), 256, 6, 1, 0, -1)


def test_small_decode_batch_with_dspark_costs(capsys):
    # was: exit 2 "fewer than top_k = 6 experts have a load" (the draft block's dispatch at T = 0)
    argv = ("cost", "--model", "deepseek-v4-flash", "--decode", "64:8K", "--dspark", "--routing", "power-law:1.2")
    status, _out, err = run(capsys, *argv)
    assert (status, err) == (0, "")
    d = run_json(capsys, *argv)
    assert POWER_LAW_FALLBACK in d["assumptions"]
    assert d["moe"]["routing"] == "power-law α=1.2 (seed 0)"
    # every backbone MoE layer prices the generator's loads at T = 64: p_e = load_e / 64, none over 1
    p = power_law_loads(1.2, 0, 256, 6, 64) / 64
    assert p.max() < 1
    ep = d["moe"]["ep"]
    per_rank = p.reshape(ep, -1).sum(axis=1)  # contiguous slices
    for row in d["moe"]["layers"]:
        assert row["tokens"] == 64
        assert row["distinct_experts"] == pytest.approx(float((1 - (1 - p) ** 64).sum()), rel=1e-9)
        assert row["imbalance"] == pytest.approx(float(per_rank.max() / per_rank.mean()), rel=1e-9)
    assert d["moe"]["layers"][0]["distinct_experts"] == pytest.approx(142.84095348175188, rel=1e-9)


def test_uniform_plans_state_no_power_law_fallback(capsys):
    d = run_json(capsys, "cost", "--model", "deepseek-v4-flash", "--decode", "64:8K", "--dspark")
    assert POWER_LAW_FALLBACK not in d["assumptions"]
