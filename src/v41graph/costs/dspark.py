"""DSpark acceptance and the state commit/rollback a verify step costs.

**Acceptance.** The confidence head predicts, per draft position j, the probability that the
backbone accepts it given that positions 1..j−1 were accepted (model-facts §8). A verify of k
drafts keeps a prefix: position j survives with probability a_1·…·a_j, and the backbone always
adds one token of its own, so E[emitted | k] = 1 + Σ_{j≤k} a_1·…·a_j — computed by
``costs.system.expected_emitted``, the one copy of that formula.

**Commit / rollback.** The verify writes the state of k + 1 positions before it knows how many
survive. Global KV, index K and compressed entries of rejected positions are freed by moving the
request's length back (no bytes). Two states are overwritten in place and must be restorable:

* each SWA ring (one per backbone layer, ``window`` slots indexed by position mod window): the
  k + 1 writes overwrite the k + 1 oldest entries, which a rollback needs again — they are copied
  aside before the verify (read + write) and copied back when any draft is rejected;
* each compressor's partial-group state (kv_state + score_state, fp32): copied aside before and
  back on a rejection.

Expected bytes per request = (1 + P(some draft rejected)) × 2 × (saved bytes). The draft blocks'
own SWA rings are rewritten by the next draft pass and are not counted. k = 0 is a plain decode:
nothing to commit.

>>> from v41graph import load_model
>>> a = Acceptance((0.9, 0.8))
>>> [round(s, 12) for s in a.survival()], a.emitted(2)
([0.9, 0.72], 2.62)
>>> c = commit_cost(load_model(), a, 1)     # 1.1 × (2 positions × 40 rings × 528 B + 3 × 8 KiB state)
>>> c.byte("kv_read") == c.byte("kv_write"), round(c.byte("kv_read"))
(True, 73498)
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import CostError
from ..model.config import ModelSpec
from ..model.memory import cache_memory, kv_layouts
from .system import expected_emitted
from .value import Cost


@dataclass(frozen=True)
class Acceptance:
    """Per-position conditional acceptance a_1..a_n of the draft (what the confidence head predicts)."""

    rates: tuple[float, ...]

    def __post_init__(self):
        rates = tuple(self.rates)
        if not rates:
            raise CostError("dspark acceptance: needs at least one draft position")
        expected_emitted(rates)  # validates every rate, naming the position
        object.__setattr__(self, "rates", rates)

    @staticmethod
    def parse(text: str) -> "Acceptance":
        """``"0.9,0.8,0.7"`` → Acceptance((0.9, 0.8, 0.7)); a clear error on anything else."""
        try:
            return Acceptance(tuple(float(x) for x in text.split(",")))
        except ValueError:
            raise CostError(f"dspark acceptance: expected comma-separated probabilities, got {text!r}") from None

    def survival(self) -> tuple[float, ...]:
        """Prefix survival: P(positions 1..j all accepted) for j = 1..n."""
        out, s = [], 1.0
        for a in self.rates:
            s *= a
            out.append(s)
        return tuple(out)

    def emitted(self, k: int) -> float:
        """E[tokens emitted] by a step that verifies the first ``k`` drafts."""
        self.check(k)
        return expected_emitted(self.rates[:k])

    def any_rejected(self, k: int) -> float:
        """P(at least one of the first ``k`` drafts is rejected): when a rollback happens."""
        self.check(k)
        return 1.0 - (self.survival()[k - 1] if k else 1.0)

    def check(self, k: int) -> int:
        if isinstance(k, bool) or not isinstance(k, int) or not 0 <= k <= len(self.rates):
            raise CostError(f"dspark verify length: must be an integer in 0..{len(self.rates)} "
                            f"(one per acceptance rate), got {k!r}")
        return k


def commit_cost(model: ModelSpec, acceptance: Acceptance, k: int, copies: int = 1) -> Cost:
    """Expected commit/rollback traffic of a step verifying ``k`` drafts, for ``copies`` requests."""
    acceptance.check(k)
    if k == 0:
        return Cost()
    if k + 1 > model.window:
        raise CostError(f"dspark verify length: {k} + 1 positions exceed the SWA window {model.window}")
    ring = len(model.layers) * (k + 1) * kv_layouts(model).swa.bytes
    saved = ring + cache_memory(model, 0).state_bytes
    moved = (1 + acceptance.any_rejected(k)) * saved * copies
    return Cost.of(bytes={"kv_read": moved, "kv_write": moved})


__all__ = ["Acceptance", "commit_cost"]
