"""DSpark acceptance and the state commit/rollback a verify step costs.

**Acceptance.** The confidence head predicts, per draft position j, the probability that the
backbone accepts it given that positions 1..j−1 were accepted (model-facts §8). A verify of k
drafts keeps a prefix: position j survives with probability a_1·…·a_j, and the backbone always
adds one token of its own, so E[emitted | k] = 1 + Σ_{j≤k} a_1·…·a_j — computed by
``costs.requests.system.expected_emitted``, the one copy of that formula.

**Commit / rollback.** The verify writes the state of k + 1 positions (the last token and k
drafts) before it knows how many drafts survive. Global KV, index K and compressed entries of
rejected positions are dropped by moving the request's length back (no bytes); compressor state
rows are indexed by position in the group, so a rejected position's row is simply written again
later (no bytes). What is overwritten in place is each backbone SWA ring (``window`` slots indexed
by position mod window): the k draft positions overwrite the oldest entries, which a rollback
needs again. So, per request and SWA layer:

* commit: the k entries about to be overwritten are copied aside (read + write);
* rollback: the entries of the rejected positions are copied back (read + write); on average
  E[rejected | k] = k − Σ_{j≤k} a_1·…·a_j of them.

Expected bytes read = bytes written = entry × layers × (k + E[rejected]). A ring with k spare
slots would need neither copy; the ring of exactly ``window`` slots (the reference's) is modelled.
The draft blocks' own rings are rewritten by the next draft pass and are not counted.

>>> from v41graph import load_model
>>> a = Acceptance((0.9, 0.8))
>>> [round(s, 12) for s in a.survival()], a.emitted(2)
([0.9, 0.72], 2.62)
>>> c = commit_cost(load_model(), a, 1)     # (1 saved + 0.1 restored) × 40 rings × 528 B
>>> c.byte("kv_read") == c.byte("kv_write"), round(c.byte("kv_read"))
(True, 23232)
"""

from __future__ import annotations

from dataclasses import dataclass

from ...algebra import as_int
from ...errors import CostError
from ...model.config import ModelSpec
from ...model.memory import kv_layouts
from .system import expected_emitted
from ..value import Cost


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

    def check(self, k: int) -> int:
        if as_int(k) is None or not 0 <= k <= len(self.rates):
            raise CostError(f"dspark verify length: must be an integer in 0..{len(self.rates)} "
                            f"(one per acceptance rate), got {k!r}")
        return k


def commit_cost(model: ModelSpec, acceptance: Acceptance, k: int, copies: int = 1) -> Cost:
    """Expected commit/rollback traffic of a step verifying ``k`` drafts, for ``copies`` requests."""
    acceptance.check(k)
    if k == 0:
        return Cost()
    if k > model.window:
        raise CostError(f"dspark verify length: {k} drafts exceed the SWA window {model.window}")
    rejected = k - sum(acceptance.survival()[:k])
    moved = len(model.layers) * kv_layouts(model).swa.bytes * (k + rejected) * copies
    return Cost.of(bytes={"kv_read": moved, "kv_write": moved})


__all__ = ["Acceptance", "commit_cost"]
