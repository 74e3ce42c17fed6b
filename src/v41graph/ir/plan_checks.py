"""The checks of a plan: each length, each policy value, and a plan against a model.

Every failure is a :class:`~v41graph.errors.PlanError` naming the field and the value
(docs/architecture.md, decision 8). ``ir/plan.py`` holds the data and calls these.

>>> _choice("fusion", "three-pass", FUSION_PROFILES)
Traceback (most recent call last):
...
v41graph.errors.PlanError: plan fusion: unknown value 'three-pass' (expected one of unfused, two-pass, single-pass)
"""

from __future__ import annotations

from typing import Any

from ..algebra import as_int, is_symbolic
from ..errors import PlanError, expect
from ..model.config import ModelSpec
from ..model.mapping import MOE_A2A
from ..model.sharding import mapping_of
from ..model.vision import image_tokens
from .lengths import checked_length as _length
from .routing import SHARED_OVERLAP, Routing

Length = Any  # int or sympy expression

DECODER_REPLAY = ("off", "bounded")
REPLAY_CUTS = ("sglang", "paper")
CHUNK_TAILS = ("every", "last")
ENCODER_RESTORE = ("persisted", "bounded")
FUSION_PROFILES = ("unfused", "two-pass", "single-pass")
ENGRAM_RESIDENCY = ("hbm", "host")
DSPARK_MODES = ("off", "on")

#: ledger rows (requests × layers, draft blocks included) one plan may hold. Why a bound: lowering,
#: the passes and the schedule touch every row, ~4–6 µs each on a 2-core machine, so 2²² rows is
#: under ~25 s — well inside the 60 s a command may take; a 1M-token prompt in chunks of 16 on
#: V4-Pro's 61 layers (65,536 × 62 rows: 24 s) fits. Past it a plan is refused before any work.
MAX_LEDGER_ROWS = 1 << 22


def _check_request(model: ModelSpec, i: int, r) -> None:
    """Positions inside max_position_embeddings; images the model can see and the prompt holds."""
    if model.max_position is not None and not is_symbolic(r.end) and r.end > model.max_position:
        raise PlanError(f"request {i} ({r.kind}): holds {r.end:,} positions, past max_position_embeddings "
                        f"{model.max_position:,} of model {model.name!r} (the CLI's --allow-past-max-position, or "
                        f"dataclasses.replace(model, max_position=None), lifts the limit)")
    if not r.images:
        return
    if model.vision is None:
        raise PlanError(f"request {i} ({r.kind}): has {r.images} image(s) but model {model.name!r} "
                        "has no vision_config")
    tokens = r.images * image_tokens(model.vision, r.image_size)[1]
    if not is_symbolic(r.new) and r.new < tokens:
        raise PlanError(f"request {i} ({r.kind}): its {r.images} image(s) take {tokens} language tokens but the "
                        f"prompt holds {r.new}; image tokens are part of the prompt (give a prompt of >= {tokens})")


def _images(n: int) -> int:
    count = as_int(n)
    if count is None or count < 0:
        raise PlanError(f"request images: must be a non-negative integer, got {n!r}")
    return count


def _choice(name: str, value: str, options: tuple[str, ...]) -> str:
    if value not in options:
        raise PlanError(f"plan {name}: unknown value {value!r} (expected one of {', '.join(options)})")
    return value


def check_policies(plan) -> None:
    """Each policy of ``plan`` (a :class:`~v41graph.ir.plan.Plan`) among its values; counts >= 1."""
    _choice("decoder_replay", plan.decoder_replay, DECODER_REPLAY)
    _choice("replay_cut", plan.replay_cut, REPLAY_CUTS)
    _choice("chunk_tail", plan.chunk_tail, CHUNK_TAILS)
    _choice("encoder_restore", plan.encoder_restore, ENCODER_RESTORE)
    if plan.fusion is not None:
        _choice("fusion", plan.fusion, FUSION_PROFILES)
    _choice("engram_residency", plan.engram_residency, ENGRAM_RESIDENCY)
    _choice("dspark", plan.dspark, DSPARK_MODES)
    _choice("shared_overlap", plan.shared_overlap, SHARED_OVERLAP)
    _choice("moe_a2a", plan.moe_a2a, MOE_A2A)
    object.__setattr__(plan, "ep_redundant", _length("plan ep_redundant", plan.ep_redundant, minimum=0))
    for name in ("tp", "ep", "dp", "replay_window", "late_layer_start"):  # stored as ints (a numpy integer too)
        if name in ("tp", "ep", "dp") or getattr(plan, name) is not None:
            object.__setattr__(plan, name, _length(f"plan {name}", getattr(plan, name), minimum=1))


def check_against_model(plan, model: ModelSpec) -> None:
    """``plan`` on ``model``: the parallel mapping, the experts, the replay start, DSpark, each request's positions."""
    expect(model, ModelSpec, "plan model", PlanError, " (v41graph.load_model(...))")
    layers = model.num_layers + len(model.draft_blocks)
    if len(plan.requests) * layers > MAX_LEDGER_ROWS:  # bounded work: refused before lowering starts
        raise PlanError(f"plan requests: {len(plan.requests):,} requests (each chunk one) × {layers} layers of "
                        f"{model.name!r} make {len(plan.requests) * layers:,} ledger rows; at most "
                        f"{MAX_LEDGER_ROWS:,} (ir/plan_checks.py MAX_LEDGER_ROWS)")
    mapping_of(plan).check(model)  # heads, wo_a groups, experts, tp·dp against ep (model/sharding.py)
    check_experts(plan, model)  # routing loads and redundant experts
    if plan.late_layer_start is not None and not 0 < plan.late_layer_start <= model.num_layers:
        raise PlanError(f"plan late_layer_start: {plan.late_layer_start} is outside 1..{model.num_layers}")
    if plan.decoder_replay == "bounded" and model.family != "v4.1":
        raise PlanError(f"plan decoder_replay: 'bounded' needs a causal encoder-decoder (V4.1); "
                        f"model {model.name!r} is {model.family}")
    if plan.dspark == "on" and not model.draft_blocks:
        raise PlanError(f"plan dspark: 'on' but model {model.name!r} declares no draft blocks")
    for i, r in enumerate(plan.requests):
        if r.kind == "verify" and plan.dspark != "on":
            raise PlanError("plan dspark: a verify request needs dspark='on'")
        _check_request(model, i, r)
def check_experts(plan, model: ModelSpec) -> None:
    """The routing's loads fit the routed experts; redundant experts need EP and fill its ranks evenly."""
    if not isinstance(plan.routing, Routing):
        raise PlanError(f"plan routing: expected a Routing (ir/routing.py), got {plan.routing!r:.80}")
    plan.routing.check(model.n_routed_experts)
    e, r = model.n_routed_experts, plan.ep_redundant
    if r and (plan.ep == 1 or (e + r) % plan.ep):
        raise PlanError(f"plan ep_redundant: {r} redundant experts need ep > 1 and {e} + {r} experts divisible "
                        f"by ep {plan.ep}")
