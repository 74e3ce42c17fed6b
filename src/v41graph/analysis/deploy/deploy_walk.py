"""How ``deploy`` walks its space lazily and what it may skip (:mod:`.deploy_search` prices and checks what
is left): each role's instances engine by engine, up the caps until one does not fit or its decode step
alone misses the TPOT; the chunk sizes that schedule differently; the replica and instance counts tried;
an upper bound of a candidate's tokens/s per GPU, and the k best met so far that a bound has to beat.

>>> _chunks((4096, 8192, 16384), 4000)
(4096,)
>>> _counts(2, lambda x: 2 - x, 10.0, 5.0, None)
[(1, 1)]
"""

from __future__ import annotations

from math import ceil

from .deploy_price import LOAD, decode_s, prefill_taken, prompts_per_step
from .deploy_space import SCHEDULES, Instance, budget_bytes, fit_reason, instance_mappings, memory_bytes


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


def _instances(model, hardware, q, caps, chunks, axes, overlap, memo, costers, role: str):
    """The instances of one role, lazily: (instance, fit reason, decode step per token at the cap or None).
    Memory grows with the cap and so does the decode step, so a cap that does not fit, or whose decode step
    alone misses the TPOT, ends that engine's walk up the caps (the rest are reported, not priced)."""
    knobs = [(rp, en) for rp in axes["replay"] for en in axes["engram"]]
    for e in instance_mappings(model, q.gpus):
        for rp, en in knobs:
            if role == "prefill":
                for ch in chunks:
                    inst = Instance(e, max(caps), ch, rp, en, overlap=overlap)
                    yield inst, _fit(model, hardware, inst, q, "prefill", memo), None
                continue
            for v in axes["verify"]:
                for ch in chunks if role == "both" else chunks[:1]:
                    for mixed in SCHEDULES if role == "both" else (False,):
                        stop = None
                        for cap in sorted(caps):
                            inst = Instance(e, cap, ch, rp, en, v, overlap, mixed)
                            if stop:
                                yield inst, stop, None
                                continue
                            why = _fit(model, hardware, inst, q, "both", memo)
                            if why:
                                stop = why
                                yield inst, why, None
                                continue
                            c = costers.get(inst)
                            td = decode_s(c, cap, q.isl + q.osl // 2, v) / costers.emitted(inst)
                            if td > q.tpot_s:
                                stop = (f"analytic TPOT: the decode step alone is {td * 1e3:,.2f} ms at cap {cap} > "
                                        f"{q.tpot_s * 1e3:,.1f} ms (larger caps only add to it)")
                                yield inst, stop, td
                                continue
                            yield inst, None, td


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
