"""System figures of one scheduled forward: forward time, TTFT, ITL, output tokens, throughput.

A forward time is not a client latency (docs/architecture.md, "System figures"). These figures
say exactly what one forward gives, and how each one is derived from it:

- **forward** = the schedule's ``total_time_s`` (max of the critical path and the busiest
  resource);
- **TTFT** = the forward time, when a prefill-like request (prefill, extend, or the *last* chunk
  of a chunked prompt) produces its first token in this forward; ``None`` otherwise. A plan is
  one forward: the chunks that ``--chunk`` puts into one plan are one batch here, so their TTFT is
  one forward time, not "chunks × forward". When each chunk runs as its own forward (the usual
  chunked prefill), the prompt's TTFT is Σ of those plans' forward times — compute one plan per
  chunk and add their ``forward_s``. Queueing and the client's network are not modelled. A plan
  is one forward with nothing after it, so the overlap scheduler's late emission
  (costs/requests/lifecycle.py) does not apply: a step that no step follows emits at its own end. In
  serving a step does follow, and :func:`first_token_s` adds it;
- **ITL** = the forward time when the plan holds decode requests (each advances by one token
  per forward); ``None`` otherwise;
- **output tokens** = Σ ``emits_logits`` over the requests (copies included), except DSpark
  verify requests: how many of their drafted positions are accepted depends on the acceptance
  model (docs/architecture.md, "System figures"; never "fixed rate × 5"), so they are left out
  rather than counted at 5;
- **throughput** = output tokens / forward time (tokens per second of this forward).

>>> from v41graph import load_model, Plan, Request
>>> from v41graph.passes import compile
>>> plan = Plan([Request.prefill(1024), Request.decode(4096, copies=8)])
>>> report = compile(load_model(), plan, "h200_sxm").report("schedule")
>>> s = system_figures(plan, report)
>>> s.output_tokens, s.ttft_s == s.itl_s == s.forward_s == report.total_time_s
(9, True)
>>> s.throughput_tok_s == 9 / report.total_time_s
True
"""

from __future__ import annotations

from dataclasses import dataclass

from ...errors import CostError
from ...ir.plan import Plan


@dataclass(frozen=True)
class SystemFigures:
    """What one forward means for a client; see the module docstring for each rule."""

    forward_s: float
    ttft_s: float | None
    itl_s: float | None
    output_tokens: int
    throughput_tok_s: float | None


def system_figures(plan: Plan, schedule_report) -> SystemFigures:
    """Forward, TTFT, ITL, output tokens and throughput of ``plan`` from its schedule report."""
    forward = float(schedule_report.total_time_s)
    first_token = any(r.is_extend and r.is_last_chunk for r in plan.requests)
    decoding = any(r.kind == "decode" for r in plan.requests)
    tokens = sum(r.emits_logits for r in plan.requests if r.kind != "verify")
    if not isinstance(tokens, int):
        raise CostError(f"system figures: need a numeric plan, got output tokens {tokens}")
    return SystemFigures(
        forward_s=forward,
        ttft_s=forward if first_token else None,
        itl_s=forward if decoding else None,
        output_tokens=tokens,
        throughput_tok_s=tokens / forward if forward > 0 else None,
    )


def first_token_s(wait_s: float, prefill_s: float, next_step_s: float, overlap: bool = True) -> float:
    """Analytic TTFT of one request: the wait before its prefill, its prefill forwards and, under the
    overlap scheduler (SGLang's default), the forward of the step that follows the prefill — its
    token is emitted only when that step ends (:func:`~v41graph.costs.requests.lifecycle.emission_times`, the
    rule the serving simulation applies). ``next_step_s`` is that step's forward (e.g. one decode step
    of the running batch), or its expected value when a step follows only some of the time; without
    overlap it does not count.

    >>> first_token_s(0.25, 0.5, 0.125), first_token_s(0.25, 0.5, 0.125, overlap=False)
    (0.875, 0.75)
    """
    return wait_s + prefill_s + (next_step_s if overlap else 0.0)


def expected_emitted(acceptance) -> float:
    """E[tokens emitted per DSpark verify step] from per-position conditional acceptance.

    Position j is kept only if every earlier one was (prefix acceptance), so its survival is the
    product a_1·…·a_j; the verifier always emits one token of its own (the correction or the
    bonus). E = 1 + Σ_j Π_{i≤j} a_i — never "fixed rate × 5" (docs/architecture.md, "System figures").

    >>> expected_emitted([0.8, 0.5])        # 1 + 0.8 + 0.8·0.5
    2.2
    >>> expected_emitted([])                 # no draft: plain decode
    1.0
    """
    total, survive = 1.0, 1.0
    for j, a in enumerate(acceptance):
        if isinstance(a, bool) or not isinstance(a, (int, float)) or not 0 <= a <= 1:
            raise CostError(f"dspark acceptance[{j}]: must be a probability in [0, 1], got {a!r}")
        survive *= a
        total += survive
    return total


def dspark_throughput(acceptance, step_s: float, batch: int = 1) -> float:
    """Tokens per second ≈ E[emitted tokens] / E[step time], for ``batch`` requests per step."""
    if not step_s > 0:
        raise CostError(f"dspark step time: must be > 0 seconds, got {step_s!r}")
    return batch * expected_emitted(acceptance) / step_s
