"""System figures of one scheduled forward: forward time, TTFT, ITL, output tokens, throughput.

SPEC.md §7 ("system results") warns against taking the forward time as client latency. These
figures say exactly what one forward gives, and how each one is derived from it:

- **forward** = the schedule's ``total_time_s`` (max of the critical path and the busiest
  resource);
- **TTFT** = the forward time, when a prefill-like request (prefill, extend, or the *last* chunk
  of a chunked prompt) produces its first token in this forward; ``None`` otherwise. A plan is
  one forward: the chunks that ``--chunk`` puts into one plan are one batch here, so their TTFT is
  one forward time, not "chunks × forward". When each chunk runs as its own forward (the usual
  chunked prefill), the prompt's TTFT is Σ of those plans' forward times — compute one plan per
  chunk and add their ``forward_s``. Queueing and the client's network are not modelled;
- **ITL** = the forward time when the plan holds decode requests (each advances by one token
  per forward); ``None`` otherwise;
- **output tokens** = Σ ``emits_logits`` over the requests (copies included), except DSpark
  verify requests: how many of their drafted positions are accepted depends on the acceptance
  model (SPEC.md §5.4, never "fixed rate × 5"), so they are left out rather than counted at 5;
- **throughput** = output tokens / forward time (tokens per second of this forward).

>>> from v41graph import load_model, Plan, Request
>>> from v41graph.backends.query import numeric_schedule
>>> plan = Plan([Request.prefill(1024), Request.decode(4096, copies=8)])
>>> report = numeric_schedule(load_model(), plan, "h200_sxm").report("schedule")
>>> s = system_figures(plan, report)
>>> s.output_tokens, s.ttft_s == s.itl_s == s.forward_s == report.total_time_s
(9, True)
>>> s.throughput_tok_s == 9 / report.total_time_s
True
"""

from __future__ import annotations

from dataclasses import dataclass

from .errors import CostError
from .plan import Plan


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
