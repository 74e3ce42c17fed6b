"""Fusion rules from outside the package: a pattern (graph → groups of node ids) and the id of the
module each group becomes. The fusion pass runs them after its own rules, under every fusion
profile but ``unfused``, with the same legality checks (one token set, convex) and the same
:class:`~v41graph.ir.ops.Fused` record of what the module covers (docs/architecture.md, decision 5).

>>> from v41graph.ir.ops import Rope
>>> rule = FusionRule("rope_pairs", lambda g: [])
>>> rule.fused_id(("L3.kv_norm", "L3.kv_rope"))
'L3.kv_rope'
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from ..errors import GraphError, expect
from ..ir.graph import Graph
from ..session import current

__all__ = ["FusionRule", "fusion_rules", "register_fusion_rule", "unregister_fusion_rule"]


def _last(group: tuple[str, ...]) -> str:
    return group[-1]


@dataclass(frozen=True)
class FusionRule:
    """``find(graph)`` lists the groups (tuples of node ids, in dataflow order) to fuse;
    ``fused_id(group)`` names the module (default: its last member's id, so per-node tables such as
    the sharding table keep answering for it)."""

    name: str
    find: Callable[[Graph], list[tuple[str, ...]]]
    fused_id: Callable[[tuple[str, ...]], str] = _last


BUILT_IN = ("mhc", "quant", "score_topk", "swiglu", "kv_unpack")


def _rules() -> dict[str, FusionRule]:
    """The current session's user rules, by name, in registration order."""
    return current().state(_rules, dict)


def register_fusion_rule(rule: FusionRule) -> None:
    """Add ``rule`` to the fusion pass (after the built-in rules, in registration order)."""
    expect(rule, FusionRule, "register_fusion_rule rule", GraphError, " (v41graph.extend.FusionRule(name, find))")
    if rule.name in BUILT_IN or rule.name in _rules():
        raise GraphError(f"register_fusion_rule: a fusion rule named {rule.name!r} exists already")
    _rules()[rule.name] = rule


def unregister_fusion_rule(name: str) -> None:
    if _rules().pop(name, None) is None:
        raise GraphError(f"unregister_fusion_rule: no user fusion rule named {name!r}")


def fusion_rules() -> tuple[FusionRule, ...]:
    return tuple(_rules().values())
