"""The expert-load model a plan names: which experts the router picks, as data (issue 25).

A :class:`Routing` says how the tokens of a batch spread over the routed experts:

* ``uniform``: every expert equally likely (each token picks ``top_k`` distinct experts);
* ``power-law``: per-expert loads drawn, with ``seed``, from a bounded power law of exponent
  ``alpha`` — AIConfigurator's generator (its collector's ``_generate_power_law_distribution``
  in ``collector/helper.py``, ai-dynamo/aiconfigurator), whose default ``alpha`` is 1.01
  (aiconfigurator-core 0.12 ``sdk/models/deepseek_v4.py``: ``self._power_law_alpha = 1.01``,
  under ``sdk/config.py``'s default ``workload_distribution = "power_law"``); where its draws
  scaled to T·k are degenerate (T = 0, an overflow) each token picks ``top_k`` distinct experts
  uniformly (:data:`v41graph.costs.expert_loads.POWER_LAW_FALLBACK`), so any token count is priced;
* ``loads``: explicit relative loads per expert (e.g. counts from a routing trace), read from a
  file by :func:`routing_from_text`.

The same model holds for every MoE layer. What it implies — expected distinct experts, tokens
per expert, the busiest expert-parallel rank — is worked out by :mod:`v41graph.costs.expert_loads`.

>>> parse_routing("power-law:1.2:7")
Routing(model='power-law', alpha=1.2, seed=7, loads=None)
>>> parse_routing("zipf")
Traceback (most recent call last):
...
v41graph.errors.PlanError: plan routing: unknown model 'zipf' (expected uniform, power-law[:ALPHA[:SEED]] or a loads file)
"""  # noqa: E501  (a doctest's expected error is one line)

from __future__ import annotations

from dataclasses import dataclass
import json
import math
from pathlib import Path

from ..errors import PlanError

ROUTING_MODELS = ("uniform", "power-law", "loads")
#: AIConfigurator 0.12's power-law exponent (aiconfigurator-core sdk/models/deepseek_v4.py)
AIC_POWER_LAW_ALPHA = 1.01


@dataclass(frozen=True)
class Routing:
    """An expert-load model (module doc). Frozen and hashable: it is part of the plan's identity."""

    model: str = "uniform"
    alpha: float = AIC_POWER_LAW_ALPHA
    seed: int = 0
    loads: tuple[float, ...] | None = None  # model "loads": relative load of each expert

    def __post_init__(self):
        if self.model not in ROUTING_MODELS:
            raise PlanError(f"plan routing.model: unknown value {self.model!r} (expected one of "
                            f"{', '.join(ROUTING_MODELS)})")
        if isinstance(self.alpha, bool) or not isinstance(self.alpha, (int, float)) or not math.isfinite(self.alpha) \
                or self.alpha <= 0 or self.alpha == 1:
            raise PlanError(f"plan routing.alpha: must be a finite number > 0 and != 1, got {self.alpha!r}")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or self.seed < 0:
            raise PlanError(f"plan routing.seed: must be a non-negative integer, got {self.seed!r}")
        if (self.model == "loads") != (self.loads is not None):
            raise PlanError(f"plan routing.loads: given exactly when the model is 'loads' (model {self.model!r})")
        if self.loads is not None:
            bad = [x for x in self.loads if isinstance(x, bool) or not isinstance(x, (int, float))
                   or not math.isfinite(x) or x < 0]
            if bad or not any(self.loads):
                raise PlanError(f"plan routing.loads: expected non-negative finite numbers, not all zero; got "
                                f"{bad[0] if bad else 'all zero'!r}")

    def check(self, experts: int) -> "Routing":
        """Loads against the model's routed experts."""
        if self.loads is not None and len(self.loads) != experts:
            raise PlanError(f"plan routing.loads: {len(self.loads)} loads for a model of {experts} routed experts")
        return self

    def describe(self) -> str:
        """``uniform``, ``power-law α=1.01 (seed 0)`` or ``loads of 256 experts``."""
        if self.model == "power-law":
            return f"power-law α={self.alpha:g} (seed {self.seed})"
        return "uniform" if self.model == "uniform" else f"loads of {len(self.loads)} experts"


UNIFORM = Routing()


def parse_routing(text: str) -> Routing:
    """``uniform``, ``power-law[:ALPHA[:SEED]]``, or the path of a loads file (:func:`routing_from_text`)."""
    name, *rest = text.split(":")
    if name == "uniform" and not rest:
        return UNIFORM
    if name == "power-law" and len(rest) <= 2:
        try:
            alpha = float(rest[0]) if rest else AIC_POWER_LAW_ALPHA
            seed = int(rest[1]) if len(rest) > 1 else 0
        except ValueError:
            raise PlanError(f"plan routing: expected power-law[:ALPHA[:SEED]], got {text!r}") from None
        return Routing("power-law", alpha, seed)
    path = Path(text)
    if path.is_file():
        return routing_from_text(path.read_text(), str(path))
    raise PlanError(f"plan routing: unknown model {text!r} (expected uniform, power-law[:ALPHA[:SEED]] or a "
                    "loads file)")


def routing_from_text(text: str, where: str = "loads") -> Routing:
    """Per-expert loads: a JSON list of numbers, or numbers separated by commas or white space.

    >>> routing_from_text("[3, 1, 0, 4]").loads
    (3.0, 1.0, 0.0, 4.0)
    """
    try:
        values = json.loads(text) if text.lstrip().startswith("[") else text.replace(",", " ").split()
        loads = tuple(float(x) for x in values)
    except (ValueError, TypeError):
        raise PlanError(f"plan routing.loads: {where}: expected a JSON list or separated numbers") from None
    return Routing("loads", loads=loads)



SHARED_OVERLAP = ("engine", "on", "off")


def shared_expert_overlap(plan) -> bool:
    """Whether the shared expert runs beside the routed experts (on another stream) or after them.

    ``plan.shared_overlap`` "on" / "off" says so; "engine" (the default) follows the engines by
    phase: overlapped in decode, serial in prefill. AIConfigurator's DeepSeek-V4 model overlaps
    the routed MoE with the shared expert in decode only (``OverlapOp``; reference
    sharding-facts.md §4 [AIC], VERIFIED). SGLang's ``DeepseekV2MoE.forward`` (which V4 reuses)
    takes its dual-stream path only for at most ``DUAL_STREAM_TOKEN_THRESHOLD = 1024`` tokens
    (decode batches; a prefill of more tokens runs the shared expert on the main stream) — read in
    SGLang-derived copies of that class, not re-read in the upstream V4 path: PARTLY VERIFIED. A
    plan is "decode" when every request is a decode or DSpark verify step.

    >>> from v41graph import Plan, Request
    >>> decode, prefill = Plan([Request.decode(8192, copies=64)]), Plan([Request.prefill(8)])
    >>> shared_expert_overlap(decode), shared_expert_overlap(prefill)
    (True, False)
    """
    if plan.shared_overlap != "engine":
        return plan.shared_overlap == "on"
    return decode_step(plan)


def decode_step(plan) -> bool:
    """Whether every request of ``plan`` is a decode or DSpark verify step (no prefill in the batch):
    what SGLang captures in CUDA graphs and runs DeepEP low-latency for (``costs/measured/collectives.py``).

    >>> from v41graph import Plan, Request
    >>> decode_step(Plan([Request.decode(8192, copies=64)])), decode_step(Plan([Request.prefill(8)]))
    (True, False)
    """
    return all(r.kind in ("decode", "verify") for r in plan.requests)


__all__ = ["AIC_POWER_LAW_ALPHA", "ROUTING_MODELS", "SHARED_OVERLAP", "Routing", "UNIFORM", "decode_step",
           "parse_routing", "routing_from_text", "shared_expert_overlap"]
