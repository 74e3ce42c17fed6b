"""What a plan's expert-load model (:mod:`v41graph.ir.routing`) implies for one MoE layer.

From the routing each expert gets ``p_e``, the probability that one token picks it (``Σ p_e =
top_k``, each at most 1: a token picks ``top_k`` *distinct* experts). Over ``T`` tokens:

* expert ``e`` is read at all with probability ``1 − (1 − p_e)^T``, so a layer reads
  ``Σ_e 1 − (1 − p_e)^T`` distinct experts in expectation — ``E·(1 − (1 − k/E)^T)`` under uniform
  routing (≈ 199.9 of 256 at T = 64, k = 6), not ``min(E, T·k)``;
* expert ``e`` receives ``T·p_e`` tokens;
* under expert parallelism each rank holds a slice of the experts (their replicas, with
  redundant experts) and receives the tokens of what it holds. The step waits for the busiest
  rank: its tokens (the expert GEMMs, the dispatch it receives and the combine it sends back)
  and its distinct experts read are what a layer is priced at. ``imbalance`` is its tokens over
  the mean rank's.

Placement: without redundant experts expert ``e`` lives on rank ``e·ranks // E`` (contiguous
slices, the engines' default). With ``redundant`` extra slots the EPLB greedy of DeepSeek's public
``eplb.py`` (re-implemented): replicate, one at a time, the expert of the largest load per
replica; then pack the replicas, heaviest first, onto the least-loaded rank with a free slot.

One implementation for numbers and sympy: ``T`` may be a symbol for every model whose pick
probabilities do not depend on ``T`` (uniform and loads); AIConfigurator's power-law generator
draws its range from ``T``, so it needs a number. Where its draws scaled to ``T·k`` are
degenerate — ``T = 0`` (a node no token reaches), or draws that overflow or leave fewer than
``k`` experts a load — the loads fall back to the exact draw of ``T`` tokens each picking ``k``
distinct experts, uniformly (``T·k`` picks; :data:`POWER_LAW_FALLBACK`): a valid plan is never
refused, only invalid input (fewer experts than ``k``, a negative ``T``).

>>> from v41graph.ir.routing import UNIFORM
>>> load = expert_load(UNIFORM, 256, 6, 1, 0, 64)
>>> round(float(load.distinct(64)), 2), load.imbalance
(199.89, Fraction(1, 1))
>>> from v41graph.symbols import N
>>> load.distinct(N)
256 - 256*untouched(3/128, N)
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from functools import cached_property

from ..algebra import Value, is_symbolic, ssum
from ..chance import untouched
from ..errors import CostError
from ..ir.routing import UNIFORM, Routing
from ..reuse import cached


@dataclass(frozen=True)
class ExpertLoad:
    """One layer's expert loads under a routing and a placement over ``ranks`` EP ranks."""

    picks: tuple[Fraction, ...]  # per expert: probability that one token picks it
    ranks: tuple[tuple[Fraction, ...], ...]  # per rank: the pick probability of each replica it holds
    busiest: int  # the rank with the most expected tokens (the lowest of equals)

    @cached_property  # a pure function of the frozen fields, summed once per object (every compile asks)
    def imbalance(self) -> Fraction:
        """The busiest rank's expected tokens over the mean rank's (1 = balanced)."""
        top_k = sum(self.picks)
        return sum(self.ranks[self.busiest]) * len(self.ranks) / top_k

    @cached_property  # grouped once per (cached) load object: hashing 256 fractions per compile cost ~1 ms
    def _groups(self) -> tuple[tuple[tuple[Fraction, int], ...], ...]:
        """``(p, count)`` pairs, by ``p``, of each rank's replicas, then of the whole layer's (last)."""
        out = []
        for probs in (*self.ranks, self.picks):
            groups: dict[Fraction, int] = {}
            for p in probs:
                groups[p] = groups.get(p, 0) + 1
            out.append(tuple(sorted(groups.items())))
        return tuple(out)

    def distinct(self, tokens: Value, rank: int | None = None) -> Value:
        """Expected distinct experts (replicas) read over ``tokens`` tokens: the whole layer's, or
        one ``rank``'s."""
        return sum_untouched(self._groups[-1 if rank is None else rank], tokens)

    def tokens_per_expert(self, tokens: Value) -> tuple[Value, ...]:
        return tuple(tokens * p for p in self.picks)


def sum_untouched(groups: tuple[tuple[Fraction, int], ...], tokens: Value) -> Value:
    """``Σ count · (1 − (1 − p)^T)`` over ``(p, count)`` pairs (:func:`v41graph.chance.untouched`)."""
    return ssum(count * (1 - untouched(p, tokens)) for p, count in groups)


def expert_load(routing: Routing, experts: int, top_k: int, ranks: int, redundant: int, tokens: Value
                ) -> ExpertLoad:
    """The :class:`ExpertLoad` of a layer of ``experts`` routed experts, ``top_k`` per token, over
    ``ranks`` EP ranks with ``redundant`` extra expert slots, for ``tokens`` tokens (read only by the
    power-law model)."""
    if routing.model == "power-law":
        if is_symbolic(tokens):
            raise CostError(f"routing power-law: the generator's range depends on the token count, which is "
                            f"symbolic ({tokens}); closed forms take uniform routing or a loads file")
        key = int(tokens)
    else:
        key = None
    return _load(routing, experts, top_k, ranks, redundant, key)


@cached(256)  # the placement of a routing is a pure function of these arguments
def _load(routing: Routing, experts: int, top_k: int, ranks: int, redundant: int, tokens: int | None) -> ExpertLoad:
    picks = pick_probabilities(routing, experts, top_k, tokens)
    placed = place(picks, ranks, redundant)
    loads = [sum(r) for r in placed]
    return ExpertLoad(picks, placed, loads.index(max(loads)))


def pick_probabilities(routing: Routing, experts: int, top_k: int, tokens: int | None) -> tuple[Fraction, ...]:
    """Per expert, the probability that one token picks it (``Σ = top_k``, each ≤ 1)."""
    if routing.model == "uniform":
        return (Fraction(top_k, experts),) * experts
    if routing.model == "loads":
        routing.check(experts)
        weights = [Fraction(x) for x in routing.loads]
    else:
        loads = power_law_loads(routing.alpha, routing.seed, experts, top_k, tokens)
        if _degenerate(loads, experts, top_k):  # module doc: the exact draw of T tokens × k distinct picks
            return (Fraction(top_k, experts),) * experts
        weights = [Fraction(float(x)) for x in loads]
    return _water_fill(weights, top_k)


#: stated with the assumptions of a power-law plan (module doc)
POWER_LAW_FALLBACK = ("power-law routing: where the generator's draws scaled to T·k are degenerate (T = 0, or draws "
                      "that overflow or leave fewer than k experts a load) each of the T tokens picks k distinct "
                      "experts uniformly (T·k picks)")


def power_law_loads(alpha: float, seed: int, experts: int, top_k: int, tokens: int):
    """AIConfigurator's per-expert token counts before rounding (collector/helper.py,
    ``_generate_power_law_distribution``): ``experts`` draws from the power law ``x^-alpha`` on
    [1, 0.8·T] when T·k > E, else on [0.01, 2], by inverse CDF, scaled to T·k — seeded here.
    Degenerate draws come back as they are (zeros at T = 0, ``inf``/``nan`` where a power
    overflows): :func:`pick_probabilities` falls back on them.

    >>> [float(x) for x in power_law_loads(1.2, 0, 4, 2, 0)]
    [0.0, 0.0, 0.0, 0.0]
    """
    import numpy as np
    if tokens < 0:
        raise CostError(f"routing power-law: a negative token count ({tokens})")
    lo, hi = (1.0, tokens * 0.8) if tokens * top_k > experts else (0.01, 2.0)
    u = np.random.default_rng(seed).random(experts)
    a = 1.0 - alpha
    with np.errstate(all="ignore"):  # an overflowing power is a degenerate draw, not an error
        lo_a, hi_a = np.power(np.float64(lo), a), np.power(np.float64(hi), a)
        x = ((hi_a - lo_a) * u + lo_a) ** (1.0 / a)
        return x / x.sum() * (tokens * top_k)


def _degenerate(loads, experts: int, top_k: int) -> bool:
    """Whether scaled power-law ``loads`` cannot be pick weights: not all finite, or fewer than
    ``top_k`` experts with a load (``experts < top_k`` is invalid input: the water fill refuses it)."""
    import numpy as np
    return experts >= top_k and not (np.isfinite(loads).all() and int((loads > 0).sum()) >= top_k)


def _water_fill(weights: list[Fraction], top_k: int) -> tuple[Fraction, ...]:
    """Pick probabilities proportional to ``weights``, scaled to sum to ``top_k``; an expert can be
    picked at most once per token, so what exceeds 1 goes to the others, proportionally."""
    if sum(1 for w in weights if w > 0) < top_k:
        raise CostError(f"routing loads: fewer than top_k = {top_k} experts have a load")
    fixed: set[int] = set()
    while True:
        free = [i for i in range(len(weights)) if i not in fixed]
        scale = (top_k - len(fixed)) / sum(weights[i] for i in free)
        over = [i for i in free if weights[i] * scale > 1]
        if not over:
            return tuple(Fraction(1) if i in fixed else weights[i] * scale for i in range(len(weights)))
        fixed.update(over)


def place(picks: tuple[Fraction, ...], ranks: int, redundant: int) -> tuple[tuple[Fraction, ...], ...]:
    """Per rank, the pick probability of each replica it holds (module doc: contiguous, or EPLB)."""
    experts = len(picks)
    if redundant == 0:
        out: list[list[Fraction]] = [[] for _ in range(ranks)]
        for e, p in enumerate(picks):
            out[e * ranks // experts].append(p)
        return tuple(tuple(r) for r in out)
    if (experts + redundant) % ranks:
        raise CostError(f"plan ep_redundant: {experts} experts + {redundant} redundant do not fill {ranks} ranks "
                        "evenly")
    copies = [1] * experts
    for _ in range(redundant):  # eplb.py replicate_experts: the largest load per replica gets one more
        e = max(range(experts), key=lambda i: (picks[i] / copies[i], -i))
        copies[e] += 1
    replicas = sorted(((picks[e] / copies[e], e) for e in range(experts) for _ in range(copies[e])),
                      key=lambda r: (-r[0], r[1]))
    slots = (experts + redundant) // ranks
    held: list[list[Fraction]] = [[] for _ in range(ranks)]
    total = [Fraction(0)] * ranks
    for p, _e in replicas:  # eplb.py balanced_packing: heaviest first, to the lightest rank with room
        r = min((i for i in range(ranks) if len(held[i]) < slots), key=lambda i: (total[i], i))
        held[r].append(p)
        total[r] += p
    return tuple(tuple(r) for r in held)


def load_of(ctx, experts: int, top_k: int, tokens: Value) -> ExpertLoad:
    """The :class:`ExpertLoad` a cost rule prices under ``ctx``'s plan (routing, ``ep`` ranks,
    redundant experts); without a context (a measured table's own shape) uniform on one rank."""
    if ctx is None:
        return expert_load(UNIFORM, experts, top_k, 1, 0, tokens)
    plan = ctx.plan
    ranks = plan.ep if experts % plan.ep == 0 else 1  # a draft block's experts that EP does not split
    redundant = plan.ep_redundant if ctx.model is not None and experts == ctx.model.n_routed_experts else 0
    return expert_load(plan.routing, experts, top_k, ranks, redundant, tokens)


__all__ = ["POWER_LAW_FALLBACK", "ExpertLoad", "expert_load", "load_of", "pick_probabilities", "place",
           "power_law_loads", "sum_untouched"]
