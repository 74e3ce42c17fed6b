"""``simulate``'s answers, typed: the simulation per rate, or the serving check, each with what it was priced on.

The command parses its options into a deployment (a :class:`~v41graph.analysis.mapping_search.MappingChoice`),
a scheduler and a :class:`~.step_basis.StepBasis`, and prints the :class:`~v41graph.analysis.answer.Priced`
these return: ``--json`` is its ``to_json()``.

>>> from v41graph import load_model, Plan, Request
>>> from v41graph.costs.hardware import load_hardware
>>> from v41graph.analysis.mapping_search import explicit
>>> from v41graph.analysis.serving.step_basis import StepOptions, choose_step_basis
>>> model, hw = load_model(), load_hardware("h200_sxm")
>>> choice = explicit(model, hw, Plan([Request.decode(1100)], tp=8, ep=8))
>>> step = choose_step_basis(model, hw, choice.mapping, StepOptions(cost="sol"))
>>> a = simulate_answer(model, hw, choice, step, rates=(1.0,), prompt=1000, output=100, duration=5.0, seed=1)
>>> a.body["mapping"], a.basis["mode"], a.deployment.line()
({'tp': 8, 'ep': 8, 'dp': 1, 'gpus': 8}, 'sol', '8 × h200_sxm: tp 8 · ep 8 (explicit)')
"""

from __future__ import annotations

from typing import Sequence

from ...errors import CostError
from ..answer import Priced
from .simulate import Scheduler
from .step_basis import StepBasis

#: the Poisson arrival window without ``--duration`` (a trace is measured whole unless ``--duration`` cuts it)
POISSON_DURATION_S = 600.0


def simulate_workload(prompt: int, output: int):
    """The plan whose fit picks ``simulate``'s auto mapping: the deployment holds at least one request's prompt
    and output (the KV pool takes the rest).

    >>> [(r.kind, r.cached, r.new) for r in simulate_workload(4096, 256).requests]
    [('decode', 4352, 1)]
    """
    from ...ir.plan import Plan, Request
    return Plan([Request.decode(prompt + output)])


def simulate_window(trace: str | None = None, *, requests: int | None = None, duration: float | None = None,
                    rates: Sequence[float] = (), output: int = 1):
    """``simulate``'s arrivals and window: (the trace's rows up to the cut (``requests`` rows, an explicit
    ``duration``), streamed and bounded, or None without a ``trace``; the window in seconds). A trace keeps
    ``duration`` as given (None: the whole trace is the window); Poisson arrivals take :data:`POISSON_DURATION_S`
    unless ``duration`` is given, and a Poisson workload too large at any of ``rates`` is refused here, before
    any work (:func:`~v41graph.workload.arrivals.check_workload`).

    >>> simulate_window(rates=(2.0,), output=256)
    (None, 600.0)
    >>> simulate_window(duration=5.0, rates=(1.0, 8.0), output=100)
    (None, 5.0)
    >>> simulate_window(requests=3)
    Traceback (most recent call last):
    ...
    v41graph.errors.CostError: simulate --trace-requests: needs --trace FILE
    """
    from ...workload.arrivals import check_workload, read_trace
    if not trace:
        if requests:
            raise CostError("simulate --trace-requests: needs --trace FILE")
        window = duration or POISSON_DURATION_S
        for rate in rates:  # an oversized workload is refused before any work
            check_workload(rate, window, output)
        return None, window
    return read_trace(trace, requests=requests, until=duration, bounded=True,
                      cut="--trace-requests N or --duration S"), duration


def simulate_answer(model, hardware, choice, step: StepBasis, *, rates: Sequence[float], prompt: int, output: int,
                    duration: float | None, seed: int, scheduler: Scheduler = Scheduler(), trace=None,
                    bucket: bool = True, disagg: bool = False, prefill_tp: int | None = None,
                    prefill_ep: int | None = None, dspark=None, checkpoints: Sequence = ()) -> Priced:
    """``simulate``: the arrivals (Poisson at each of ``rates``, or ``trace``) through ``scheduler`` on the
    deployment ``choice`` (``disagg``: a prefill instance of ``prefill_tp`` × ``prefill_ep``, default the
    deployment's, beside it), priced on ``step``; the body is
    :func:`~.serving_summary.simulate_summary`'s, its mapping with the GPU count."""
    from .serving_summary import simulate_summary
    m = choice.mapping
    split = {"tp": prefill_tp or m.tp, "ep": prefill_ep or m.ep} if disagg else None
    name, mode = step.basis.basis, step.basis.mode
    data = simulate_summary(model, hardware, rates=rates, prompt=prompt, output=output, duration=duration, seed=seed,
                            tp=m.tp, ep=m.ep, dp=m.dp, scheduler=scheduler, trace=trace, bucket=bucket,
                            disagg=split, cost=mode, dspark=dspark, coster=step.coster, sol_ceiling=name != "sol")
    return Priced({**data, "mapping": {**data["mapping"], "gpus": m.gpus}}, step.record(data.get("coverage")),
                  choice, tuple(checkpoints))


def serving_check_answer(step: StepBasis, choice=None, *, overlap: bool = True, checkpoints: Sequence = ()) -> Priced:
    """``simulate --serving-check``: the stand-in of AISimulate's GB300 core scope simulated on ``step``'s
    FPM or runtime coster, its means beside the observed and AISimulate's
    (:func:`~v41graph.analysis.forwards.fpm_serving_check.serving_check`); a graph basis is refused."""
    from ..forwards.fpm_serving_check import serving_check
    if step.coster is None:
        raise CostError("simulate --serving-check: needs --cost fpm or runtime (it checks step costs against "
                        "measurement)")
    replay = "off" if step.coster.decoder_replay == "off" else "on"
    return Priced(serving_check(step.coster, replay, overlap=overlap), step.record(), choice, tuple(checkpoints))


__all__ = ["POISSON_DURATION_S", "serving_check_answer", "simulate_answer", "simulate_window",
           "simulate_workload"]
