"""Resolution tiers, the cost-mode policy and what one node resolved to.

Tiers, best first: ``measured`` (a table site at the query), ``interpolated`` (bracketed on every
axis), ``held`` (utilisation held beyond the measured range; the distance is kept),
``transfer:<kind>`` (another ``dtype``, ``shape`` or ``op``'s utilisation carried over, only when
the policy allows that kind) and ``sol`` (v41graph's own SOL time). A node's time is the sum of
its parts (a fused module may hold a measured MoE and an unmeasured norm); its tier is its
worst part's.

>>> worst(("measured", "transfer:dtype", "interpolated"))
'transfer:dtype'
>>> CostMode("hybrid").allows("shape"), CostMode("op").allows("shape")
(True, False)
>>> CostMode("fast")
Traceback (most recent call last):
...
v41graph.errors.CostError: cost mode: unknown 'fast' (expected one of sol, op, hybrid)
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ...errors import CostError

MODES = ("sol", "op", "hybrid")
TRANSFERS = ("dtype", "shape", "op")
TIERS = ("measured", "interpolated", "held", "transfer:dtype", "transfer:shape", "transfer:op", "sol")
#: tiers whose time comes from a table at the op's own key (no transfer, no fallback)
MEASURED_TIERS = ("measured", "interpolated")


def rank(tier: str) -> int:
    return TIERS.index(tier)


def worst(tiers) -> str:
    return max(tiers, key=rank)


@dataclass(frozen=True)
class CostMode:
    """How node times are found: ``sol`` (rules only), ``op`` (tables, strict) or ``hybrid``.

    ``transfers`` are the kinds hybrid mode may use (op mode never transfers); ``measured_root``
    is a folder in the aiconfigurator layout that replaces the packaged tables.
    """

    mode: str = "sol"
    transfers: tuple[str, ...] = TRANSFERS
    measured_root: str | None = None

    def __post_init__(self):
        if self.mode not in MODES:
            raise CostError(f"cost mode: unknown {self.mode!r} (expected one of {', '.join(MODES)})")
        for t in self.transfers:
            if t not in TRANSFERS:
                raise CostError(f"cost mode transfers: unknown kind {t!r} (expected some of {', '.join(TRANSFERS)})")

    @property
    def strict(self) -> bool:
        return self.mode == "op"

    def allows(self, kind: str) -> bool:
        return self.mode == "hybrid" and kind in self.transfers


@dataclass(frozen=True)
class Part:
    """One priced piece of a node: which table at which coordinates, the tier and the time."""

    what: str  # the op kinds it covers, e.g. "RoutedExperts+SwiGLU+RoutedExperts"
    tier: str
    time: float  # seconds
    sol: float  # seconds, v41graph's SOL of the same piece
    table: str | None = None  # family/backend/file, None for SOL
    coords: tuple[tuple[str, object], ...] = ()
    distance: tuple[tuple[str, float, float], ...] = ()


@dataclass(frozen=True)
class Resolution:
    """A node's OP time: the sum of its parts, flagged by its worst tier."""

    node: str
    kind: str
    parts: tuple[Part, ...] = field(default=())

    @property
    def time(self) -> float:
        return sum(p.time for p in self.parts)

    @property
    def tier(self) -> str:
        return worst(p.tier for p in self.parts) if self.parts else "sol"


class MeasuredMiss(CostError):
    """Op mode found no measured data for a node (names the op, the table and the coordinates)."""


def coords_text(coords) -> str:
    return ", ".join(f"{k}={v}" for k, v in coords)
