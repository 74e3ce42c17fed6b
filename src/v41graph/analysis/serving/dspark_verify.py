"""The DSpark verify-length scheduler: per batch size, the step cost and yield of each verify length.

A DSpark decode step for a batch of B requests at context L and verify length k:

* k ≥ 1: the backbone verifies k drafts plus its own next position — ``Request.verify(L, k + 1)``
  for each request — and the three draft blocks draft the next ``dspark_block_size`` positions;
  the plan is compiled like any other (``dspark='on'``), so the step time is the compiled graph's;
  then the state commit/rollback (``costs.requests.dspark_acceptance.commit_cost``) is added;
* k = 0: a plain decode without drafting (``Request.decode(L)``, ``dspark='off'``).

Each request emits E[emitted | k] tokens per step (prefix survival), so the batch's throughput is
``costs.requests.system.dspark_throughput`` = B · E[emitted] / step time — verify outputs counted, never
"fixed rate × 5". The policy picks, per batch size, the k with the most tokens/s; with an ITL
bound, only the k whose step time (the gap a client waits between bursts) meets it.

>>> from v41graph import load_model
>>> from v41graph.costs.requests.dspark_acceptance import Acceptance
>>> curve = verify_curve(load_model(), "h200_sxm", Acceptance((0.9, 0.8)), batch=1)
>>> [p.k for p in curve.points], curve.points[2].emitted, curve.chosen
([0, 1, 2], 2.62, 2)
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from ...costs.requests.dspark_acceptance import Acceptance, commit_cost
from ...costs.hardware import Hardware, load_hardware
from ...costs.requests.system import dspark_throughput
from ...costs.value import sol_time
from ...algebra import as_int
from ...errors import CostError
from ...ir.plan import Plan, Request
from ...model.config import ModelSpec
from ...passes import compile
from ...reuse import cached


@dataclass(frozen=True)
class VerifyPoint:
    """One verify length at one batch size."""

    k: int
    emitted: float  # E[tokens emitted per request per step]
    forward_s: float  # the compiled step: backbone verify + draft blocks
    commit_s: float  # state commit / rollback
    tokens_per_s: float  # batch · emitted / step

    @property
    def step_s(self) -> float:
        return self.forward_s + self.commit_s


@dataclass(frozen=True)
class VerifyCurve:
    """Every verify length's point at one batch size, and the policy's choice."""

    batch: int
    points: tuple[VerifyPoint, ...]
    chosen: int | None  # None: no length meets the ITL bound
    reason: str


def step_plan(batch: int, context: int, k: int, mapping: tuple[int, int, int] = (1, 1, 1)) -> Plan:
    """The plan of one step: B verifies of k + 1 tokens with drafting, or B plain decodes (k = 0),
    under ``mapping`` = (tp, ep, dp)."""
    tp, ep, dp = mapping
    if k == 0:
        return Plan([Request.decode(context, copies=batch)], tp=tp, ep=ep, dp=dp)
    return Plan([replace(Request.verify(context, k + 1), copies=batch)], dspark="on", tp=tp, ep=ep, dp=dp)


@cached(256)
def _forward_s(model: ModelSpec, hw: Hardware, batch: int, context: int, k: int, mapping) -> float:
    # memo: a curve per acceptance vector re-uses the same compiled steps (the graph does not
    # depend on the acceptance)
    plan = step_plan(batch, context, k, mapping).check(model)
    return float(compile(model, plan, hw).report("schedule").total_time_s)


def _point(model: ModelSpec, hw: Hardware, acceptance: Acceptance, batch: int, context: int, k: int,
           mapping=(1, 1, 1)) -> VerifyPoint:
    forward = _forward_s(model, hw, batch, context, k, tuple(mapping))
    commit = float(sol_time(commit_cost(model, acceptance, k, batch), hw).time)
    emitted = acceptance.emitted(k)
    return VerifyPoint(k, emitted, forward, commit, dspark_throughput(acceptance.rates[:k], forward + commit, batch))


def _reason(points: tuple[VerifyPoint, ...], best: VerifyPoint, itl_s: float | None) -> str:
    last = points[-1].k
    if best.k == last:
        why = f"k={best.k} is the longest verify the acceptance vector allows and tokens/s still rise"
    else:
        nxt = points[best.k + 1]
        why = (f"k={best.k} maximises tokens/s: k={nxt.k} would add {1e3 * (nxt.step_s - best.step_s):.3f} ms per "
               f"step ({100 * (nxt.step_s / best.step_s - 1):.1f}%) for {nxt.emitted - best.emitted:.3f} more tokens "
               f"per request ({100 * (nxt.emitted / best.emitted - 1):.1f}%)")
    if itl_s is not None:
        excluded = [p.k for p in points if p.step_s > itl_s]
        if excluded:
            why += f"; the ITL bound {1e3 * itl_s:g} ms excludes k={','.join(map(str, excluded))}"
    return why


def verify_curve(model: ModelSpec, hardware: str | Hardware, acceptance: Acceptance, batch: int,
                 context: int = 4096, itl_s: float | None = None, mapping=(1, 1, 1)) -> VerifyCurve:
    """Step time, E[emitted] and tokens/s of verify lengths 0..len(acceptance) at ``batch`` requests
    (on the GPUs of ``mapping`` = (tp, ep, dp); the step time is one GPU's, all running in step)."""
    hw = hardware if isinstance(hardware, Hardware) else load_hardware(hardware)
    if as_int(batch) is None or batch < 1:
        raise CostError(f"dspark batch: must be a positive integer, got {batch!r}")
    batch = int(batch)  # a numpy integer is an int from here on (JSON, hashing)
    if model.dspark_block_size and len(acceptance.rates) > model.dspark_block_size:
        raise CostError(f"dspark acceptance: {len(acceptance.rates)} rates for a draft block of "
                        f"{model.dspark_block_size} positions")
    if itl_s is not None and not itl_s > 0:
        raise CostError(f"dspark itl bound: must be > 0 seconds, got {itl_s!r}")
    points = tuple(_point(model, hw, acceptance, batch, context, k, mapping) for k in range(len(acceptance.rates) + 1))
    allowed = [p for p in points if itl_s is None or p.step_s <= itl_s]
    if not allowed:
        fastest = min(points, key=lambda p: p.step_s)
        return VerifyCurve(batch, points, None, f"no verify length meets the ITL bound {1e3 * itl_s:g} ms "
                           f"(the fastest step, k={fastest.k}, takes {1e3 * fastest.step_s:.3f} ms)")
    best = max(allowed, key=lambda p: (p.tokens_per_s, -p.k))
    return VerifyCurve(batch, points, best.k, _reason(points, best, itl_s))


def dspark_summary(model: ModelSpec, hardware: str | Hardware, acceptance: Acceptance, batches, *,
                   context: int = 4096, itl_s: float | None = None, mapping=(1, 1, 1)) -> dict[str, Any]:
    """JSON-ready curves for every batch size, and a note on how the choice moves with load."""
    hw = hardware if isinstance(hardware, Hardware) else load_hardware(hardware)
    curves = [verify_curve(model, hw, acceptance, b, context, itl_s, mapping) for b in batches]
    choices = {c.batch: c.chosen for c in curves}
    if len(set(choices.values())) > 1:
        load = "the choice moves with load: " + ", ".join(f"k={k} at batch {b}" for b, k in choices.items())
    elif len(curves) > 1:
        load = f"the same k={curves[-1].chosen} at every batch size here; at the largest: {curves[-1].reason}"
    else:
        load = ""
    return {
        "model": model.name, "hardware": hw.name, "context": context, "itl_bound_s": itl_s,
        "mapping": dict(zip(("tp", "ep", "dp"), mapping)),
        "acceptance": list(acceptance.rates), "prefix_survival": [round(s, 12) for s in acceptance.survival()],
        "batches": [{
            "batch": c.batch, "chosen_k": c.chosen, "reason": c.reason,
            "points": [{"k": p.k, "expected_emitted": round(p.emitted, 12), "forward_s": p.forward_s,
                        "commit_s": p.commit_s, "step_s": p.step_s, "tokens_per_s": p.tokens_per_s}
                       for p in c.points]} for c in curves],
        "choices": {str(b): k for b, k in choices.items()}, "load_note": load,
    }


def dspark_workload(model: ModelSpec, context: int, batches) -> Plan:
    """The workload whose fit picks ``dspark``'s deployment: the largest batch at ``context``, DSpark on; a
    model without draft blocks is refused."""
    if not model.draft_blocks or not model.dspark_block_size:
        raise CostError(f"dspark: model {model.name!r} declares no DSpark draft blocks "
                        f"({len(model.draft_blocks)} draft blocks, dspark_block_size {model.dspark_block_size})")
    return Plan([Request.decode(context, copies=max(batches))], dspark="on")


def dspark_answer(model: ModelSpec, hardware: Hardware, acceptance: Acceptance, batches, choice, *,
                  context: int = 4096, itl_s: float | None = None, checkpoints=()):
    """``dspark``'s answer on the deployment ``choice`` (a ``MappingChoice``): :func:`dspark_summary` with the
    GPU count, priced on SOL (a :class:`~v41graph.analysis.answer.Priced`)."""
    from ..answer import Priced
    from ..basis import basis_record
    m = choice.mapping
    data = dspark_summary(model, hardware, acceptance, batches, context=context, itl_s=itl_s,
                          mapping=(m.tp, m.ep, m.dp))
    return Priced({**data, "gpus": m.gpus}, basis_record("sol"), choice, tuple(checkpoints))


__all__ = ["VerifyCurve", "VerifyPoint", "dspark_answer", "dspark_summary", "dspark_workload", "step_plan",
           "verify_curve"]
