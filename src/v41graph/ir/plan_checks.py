"""Checks of a plan against a model that are not the plan's own fields: each request's positions
and images, the expert-load model and the redundant experts (docs/architecture.md, decision 8)."""

from __future__ import annotations

from ..algebra import is_symbolic
from ..errors import PlanError
from ..model.config import ModelSpec
from ..model.vision import image_tokens
from .routing import Routing


def check_request(model: ModelSpec, i: int, r) -> None:
    """Request ``i`` (an ir.plan.Request): positions inside max_position_embeddings; images the model
    can see and the prompt holds."""
    if model.max_position is not None and not is_symbolic(r.end) and r.end > model.max_position:
        raise PlanError(f"request {i} ({r.kind}): holds {r.end:,} positions, past max_position_embeddings "
                        f"{model.max_position:,} of model {model.name!r} (the CLI's --allow-past-max-position, or "
                        f"dataclasses.replace(model, max_position=None), lifts the limit)")
    if not r.images:
        return
    if model.vision is None:
        raise PlanError(f"request {i} ({r.kind}): has {r.images} image(s) but model {model.name!r} has no vision_config")
    tokens = r.images * image_tokens(model.vision, r.image_size)[1]
    if not is_symbolic(r.new) and r.new < tokens:
        raise PlanError(f"request {i} ({r.kind}): its {r.images} image(s) take {tokens} language tokens but the "
                        f"prompt holds {r.new}; image tokens are part of the prompt (give a prompt of >= {tokens})")


def check_experts(plan, model: ModelSpec) -> None:
    """The routing's loads fit the routed experts; redundant experts need EP and fill its ranks evenly."""
    if not isinstance(plan.routing, Routing):
        raise PlanError(f"plan routing: expected a Routing (ir/routing.py), got {plan.routing!r:.80}")
    plan.routing.check(model.n_routed_experts)
    e, r = model.n_routed_experts, plan.ep_redundant
    if r and (plan.ep == 1 or (e + r) % plan.ep):
        raise PlanError(f"plan ep_redundant: {r} redundant experts need ep > 1 and {e} + {r} experts divisible "
                        f"by ep {plan.ep}")
