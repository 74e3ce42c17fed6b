"""How ``deploy`` walks its space lazily and what it may skip (:mod:`.deploy_search` ranks and checks what
it priced): each role's instances engine by engine, up the caps until one does not fit or its decode step
alone misses the TPOT; the chunk sizes that schedule differently; the replica and instance counts tried;
an upper bound of a candidate's tokens/s per GPU, and the k best met so far that a bound has to beat; the
two modes' walks, pricing in order of falling bound what can still beat the k best.

>>> _chunks((4096, 8192, 16384), 4000)
(4096,)
>>> _counts(2, lambda x: 2 - x, 10.0, 5.0, None)
[(1, 1)]
"""

from __future__ import annotations

from dataclasses import replace
from math import ceil

from .deploy_price import (LOAD, aggregated_steps, decode_s, prefill_s, prefill_taken, price_aggregated,
                           price_disaggregated, prompts_per_step)
from .deploy_space import (SCHEDULES, Instance, budget_bytes, fit_reason, instance_mappings, memory_bytes,
                           prefill_prompts)


def _key(inst, role) -> tuple:
    """Everything the memory of an instance in ``role`` depends on (a prefill holds no decode batch)."""
    if role == "prefill":
        return (inst.engine, inst.engram, role)
    return (inst.engine, inst.engram, inst.verify > 0, inst.cap, role)


def _memory(model, hardware, inst, q, role, memo) -> int:
    key = ("bytes", *_key(inst, role))
    if key not in memo:
        memo[key] = memory_bytes(model, hardware, inst, q.isl, q.osl, role)
    return memo[key]


def _replicas(price_one, gpus_each: int, q, offered) -> int:
    """Replicas of an aggregated instance: the whole budget's worth (equal per-GPU figures, more rate), or
    under a target rate the fewest that carry it at :data:`LOAD` (fewer GPUs, more tokens/s per GPU)."""
    most = q.gpus // gpus_each
    if offered is None or not price_one.capacity_per_s:
        return most
    return max(1, min(most, ceil(offered / (LOAD * price_one.capacity_per_s) - 1e-12)))


def _counts(x_max: int, y_max, pc: float, dc: float, offered) -> list[tuple[int, int]]:
    """(x, y) prefill and decode instance counts tried for one pair: every one on a small budget; else, per
    x, the decode count that balances it (floor and ceiling) and the most that fit; under a target rate the
    fewest of each that carry it."""
    if offered is not None:
        x = max(1, min(x_max, ceil(offered / (LOAD * pc) - 1e-12)))
        y = max(1, min(y_max(x), ceil(offered / (LOAD * dc) - 1e-12))) if y_max(x) >= 1 else 0
        return [(x, y)] if y else []
    out = []
    for x in range(1, x_max + 1):
        top = y_max(x)
        if top < 1:
            break
        if x_max * top <= 64:
            out += [(x, y) for y in range(1, top + 1)]
            continue
        even = x * pc / dc
        out += [(x, y) for y in sorted({max(1, min(top, int(even))), max(1, min(top, ceil(even))), top})]
    return out


def _instances(model, hardware, q, caps, chunks, axes, overlap, memo, costers, role: str, below_tp: bool = False):
    """The instances of one role, lazily: (instance, fit reason, decode step per token at the cap or None).
    Memory grows with the cap and so does the decode step, so a cap that does not fit, or whose decode step
    alone misses the TPOT, ends that engine's walk up the caps (the rest are reported, not priced)."""
    knobs = [(rp, en) for rp in axes["replay"] for en in axes["engram"]]
    for e in instance_mappings(model, q.gpus, below_tp):
        for rp, en in knobs:
            if role == "prefill":
                for ch in chunks:
                    inst = Instance(e, max(caps), ch, rp, en, overlap=overlap)
                    yield inst, _fit(model, hardware, inst, q, "prefill", memo), None
                continue
            for v in axes["verify"]:
                for ch in chunks if role == "both" else chunks[:1]:
                    for mixed in SCHEDULES if role == "both" else (False,):
                        made = (Instance(e, cap, ch, rp, en, v, overlap, mixed) for cap in sorted(caps))
                        yield from _up_the_caps(model, hardware, q, made, memo, costers)


def _up_the_caps(model, hardware, q, made, memo, costers):
    """One engine's instances in rising cap: the first that does not fit, or whose decode step misses the
    TPOT, gives its reason to every larger cap unpriced (both only grow with the cap)."""
    stop = None
    for inst in made:
        if stop:
            yield inst, stop, None
            continue
        why = _fit(model, hardware, inst, q, "both", memo)
        if why:
            stop = why
            yield inst, why, None
            continue
        c = costers.get(inst)
        td = decode_s(c, inst.cap, q.isl + q.osl // 2, inst.verify) / costers.emitted(inst)
        if td > q.tpot_s:
            stop = (f"analytic TPOT: the decode step alone is {td * 1e3:,.2f} ms at cap {inst.cap} > "
                    f"{q.tpot_s * 1e3:,.1f} ms (larger caps only add to it)")
            yield inst, stop, td
            continue
        yield inst, None, td


def space_record(caps, chunks, isl: int, ep_below_tp: bool) -> dict:
    """The space a search walked, as ``deploy.json``'s ``space`` says it: the caps (sorted), the chunk sizes that
    schedule differently (:func:`_chunks`) and whether EP sizes below TP were searched.

    >>> space_record((64, 24), (16384, 1024, 8192), 2000, False)
    {'caps': [24, 64], 'chunks': [1024, 8192], 'ep_below_tp': False}
    """
    return {"caps": sorted(caps), "chunks": list(_chunks(chunks, isl)), "ep_below_tp": ep_below_tp}


def _chunks(chunks, isl: int) -> tuple[int, ...]:
    """The chunk sizes that schedule differently: every chunk ≥ the prompt takes it whole, so of those
    only the smallest is searched (the others would repeat its every figure under another label)."""
    whole = [c for c in sorted(chunks) if c >= isl]
    return tuple(c for c in sorted(chunks) if c < isl) + tuple(whole[:1])


def _agg_bound(costers, inst, td: float, q, offered) -> float:
    """An upper bound of an aggregated instance's tokens/s per GPU, from three step shapes: its rate is at
    most LOAD × cap / ((osl − 1) · t_d(cap)) (decode alone), and for a mean TPOT within the SLA its
    prefills may take at most 1 − t_d(1) / TPOT of the decode time, at best k prompts a step (a fuller
    prefill step costs less per prompt)."""
    k = prompts_per_step(q.isl, inst.chunk)
    t1 = decode_s(costers.get(inst), 1, q.isl + q.osl // 2, inst.verify) / costers.emitted(inst)
    taken = prefill_taken(costers, inst, q.isl, q.osl, k)
    rate = min(LOAD * inst.cap / (max(1, q.osl - 1) * td), max(0.0, 1 - t1 / q.tpot_s) * k / max(taken, 1e-12))
    if offered is not None:
        rate = min(rate, offered)
    return rate * q.osl / inst.engine.gpus


def _fit(model, hardware, inst, q, role, memo):
    """:func:`~.deploy_space.fit_reason`, from the memoised bytes: the reason is written only for a misfit."""
    key = _key(inst, role)
    if key not in memo:
        fits = _memory(model, hardware, inst, q, role, memo) <= budget_bytes(hardware)
        memo[key] = None if fits else fit_reason(model, hardware, inst, q.isl, q.osl, role)
    return memo[key]


class _Best:
    """The k best per-GPU figures that met the SLA analytically: what a bound has to beat to be priced."""

    def __init__(self, k: int):
        self.k, self.figures = k, []

    def add(self, figure: float) -> None:
        self.figures = sorted([*self.figures, figure], reverse=True)[:self.k]

    def beats(self, bound: float) -> bool:
        return len(self.figures) < self.k or bound >= self.figures[-1]


def walk_aggregated(costers, q, offered, instances, add, best: _Best) -> int:
    """Add one row per aggregated instance (``add(mode, parts, reason=None, price=None)``): a misfit with its
    reason, the rest priced at the replicas of :func:`_replicas` in order of falling bound while the bound can
    still beat ``best``. Returns how many the bound pruned."""
    agg, pruned = [], 0
    for inst, why, td in instances:
        if why:
            add("aggregated", (inst, max(1, q.gpus // inst.engine.gpus)), why)
        else:
            agg.append((_agg_bound(costers, inst, td, q, offered), inst))
    for bound, inst in sorted(agg, key=lambda t: (-t[0], t[1].label())):
        if not best.beats(bound):
            pruned += 1
            continue
        steps = aggregated_steps(costers, inst, q.isl, q.osl)
        one = price_aggregated(costers, inst, 1, q.isl, q.osl, offered, steps)
        r = _replicas(one, inst.engine.gpus, q, offered)
        add("aggregated", (inst, r), price=price_aggregated(costers, inst, r, q.isl, q.osl, offered, steps))
    return pruned


def walk_disaggregated(costers, q, offered, pres, decs, add, best: _Best) -> int:
    """Add the rows of prefill × decode instance pairs (as :func:`walk_aggregated`): a pair with a misfit once,
    the rest at each of :func:`_counts`' instance counts, in order of falling bound while it can still beat
    ``best``. Returns how many pairs the bound pruned."""
    pruned = 0
    for bound, pre, dec, pc, dc in sorted(_pairs(costers, q, offered, pres, decs, add),
                                          key=lambda t: (-t[0], t[1].label(), t[2].label())):
        if not best.beats(bound):
            pruned += 1
            continue
        gp, gd = pre.engine.gpus, dec.engine.gpus
        for x, y in _counts(q.gpus // gp, lambda x: (q.gpus - x * gp) // gd, pc, dc, offered):
            add("disaggregated", (pre, x, dec, y),
                price=price_disaggregated(costers, pre, x, dec, y, q.isl, q.osl, offered))
    return pruned


def _pairs(costers, q, offered, pres, decs, add) -> list[tuple]:
    """The pairs that fit, as (bound, prefill, decode, prefill rate, decode rate); a pair with a misfit is
    added as a row at once. A decode instance takes its prefill's chunk: the pair's prefill sets it."""
    osl1, pairs = max(1, q.osl - 1), []
    for pre, pwhy in pres:
        pc = None  # priced once per prefill instance, and only if some pair of it fits
        for dec, dwhy, td in decs:
            if (dec.replay, dec.engram) != (pre.replay, pre.engram):
                continue
            dec = replace(dec, chunk=pre.chunk)
            if pre.engine.gpus + dec.engine.gpus > q.gpus:
                continue
            if pwhy or dwhy:
                add("disaggregated", (pre, 1, dec, 1), ("prefill instance: " + pwhy) if pwhy else dwhy)
                continue
            if pc is None:
                pc = prefill_prompts(q.isl) / prefill_s(costers.get(pre), q.isl, pre.chunk, prefill_prompts(q.isl))
            dc = dec.cap / (osl1 * td)
            p_gpu, d_gpu = pc / pre.engine.gpus, dc / dec.engine.gpus
            bound = (LOAD * q.osl * p_gpu * d_gpu / (p_gpu + d_gpu) if offered is None
                     else offered * q.osl / (pre.engine.gpus + dec.engine.gpus))
            pairs.append((bound, pre, dec, pc, dc))
    return pairs
