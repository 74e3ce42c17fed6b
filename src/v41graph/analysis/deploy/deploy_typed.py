"""``deploy``'s question from what is asked, and its answer typed: what ``deploy.json`` and ``--json`` hold.

The command parses its options and calls :func:`deploy_question` (the lengths, a trace's means, the
request rate a token target asks for, the budget) and :func:`deploy_answer` (the search at a budget,
or the fewest GPUs that serve the rate), then writes and prints the :class:`DeployAnswer`.

>>> q = deploy_question(isl=1000, osl=200, ttft_s=1.0, tpot_s=0.05, tokens_per_s=2000)
>>> q.rate, q.gpus
(10.0, 1)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from ...errors import V41Error
from ..answer import TypedAnswer, checkpoint_json, is_empty, part
from ..basis import ServingBasis, basis_record
from .deploy_search import Question, trace_lengths


def target_rate(rate: float | None, tokens_per_s: float | None, osl: int) -> float | None:
    """The request rate ``deploy`` must carry: ``rate`` (req/s) as given, else ``tokens_per_s`` output tokens
    per second over ``osl`` tokens per request, else None (a GPU budget instead).

    >>> target_rate(3.0, None, 200), target_rate(None, 2000.0, 200), target_rate(None, None, 200)
    (3.0, 10.0, None)
    """
    return rate if rate is not None else (tokens_per_s / osl if tokens_per_s else None)


def deploy_trace(path: str, requests: int | None = None) -> list:
    """The arrivals ``deploy`` replays from the trace at ``path``: its first ``requests`` rows (all when None), in
    time order; streamed, so the rows past them are never read, and bounded as ``simulate`` bounds a trace (the
    refusal names ``--trace-requests N``)."""
    from ...workload.arrivals import read_trace
    return sorted(read_trace(path, requests=requests, bounded=True, cut="--trace-requests N"), key=lambda a: a.t)


def deploy_question(*, isl: int, osl: int, ttft_s: float, tpot_s: float, gpus: int | None = None,
                    rate: float | None = None, tokens_per_s: float | None = None, percentile: float = 90.0,
                    requests: int = 400, seed: int = 1, trace=None) -> Question:
    """The SLA question: ``isl`` / ``osl`` (a ``trace``'s means where one is given) and either a budget of
    ``gpus`` or a target rate (``rate``, or ``tokens_per_s`` / osl: :func:`target_rate`); one of the two, and
    a trace brings its own rate."""
    if trace is not None:  # the analytic price runs at the trace's mean lengths
        isl, osl = trace_lengths(trace)
    rate = target_rate(rate, tokens_per_s, osl)
    if (gpus is None) == (rate is None):
        raise V41Error("deploy: give either --gpus N (a budget) or --rate / --target-tokens-per-s (the fewest GPUs "
                       "that serve it), not " + ("both" if gpus else "neither"))
    if rate is not None and trace is not None:
        raise V41Error("deploy --rate: a trace brings its own rate; drop --trace or --rate")
    return Question(isl, osl, ttft_s, tpot_s, gpus or 1, percentile, requests, seed, rate)


@dataclass(frozen=True)
class DeployAnswer(TypedAnswer):
    """``deploy``'s answer: the model, the GPU, the basis record (with the search's coverage off SOL), the
    checkpoint it ran, then the search's record (:mod:`.deploy_answer`; with ``fewest`` at a rate).
    ``to_json()`` is ``--json``; ``deploy.json`` is it with a newline."""

    model: str
    hardware: str
    basis: dict[str, Any]
    checkpoint: tuple = part(omit=is_empty, as_json=checkpoint_json, default=())
    result: dict[str, Any] = part(inline=True, default_factory=dict)


def deploy_answer(model, hardware, q: Question, served: ServingBasis, *, trace=None, max_gpus: int = 64,
                  checkpoints: Sequence = (), **search: Any) -> DeployAnswer:
    """The search on ``served`` (:func:`~..basis.serving_basis`): at ``q.gpus`` without a rate, else the fewest
    GPUs up to ``max_gpus`` that serve ``q.rate``; ``search``: the rest of
    :func:`~.deploy_search.search`'s options (``check``, ``top``, ``axes``, ``progress``, …)."""
    name, mode, chosen, why = served
    mode = None if name == "sol" else mode  # SOL: the StepCoster's own rules, as before a basis was chosen
    if q.rate is None:
        from .deploy_search import search as run
        data = run(model, hardware, q, trace=trace, cost=mode, **search)
    else:
        from .deploy_fewest import fewest
        data = fewest(model, hardware, q, max_gpus=max_gpus, cost=mode, **search)
    basis = basis_record(name, coverage=data["coverage"] or None, chosen=chosen, why=why)
    return DeployAnswer(model.name, hardware.name, basis, tuple(checkpoints), data)


__all__ = ["DeployAnswer", "deploy_answer", "deploy_question", "target_rate"]
