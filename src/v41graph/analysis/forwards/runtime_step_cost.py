"""Serving steps on the runtime basis: each step's kernels from its graph, plus the engine's own cost.

A drop-in for :class:`~.step_cost.StepCoster` (``simulate --cost runtime``, and what an FPM
simulation falls back on outside its table): the kernel time of the step's own plan (SOL, or hybrid
where the measured kernel tables cover the GPU) plus the runtime terms fitted to a whole-forward
table of the same GPU (:mod:`.runtime_basis`). Every step is answered — mixed prefill + decode,
DSpark verify, batches no table measured — and counted by tier:

- ``runtime``: the table's GPU and mapping, the step inside the measured requests, tokens and contexts;
- ``extrapolated``: anything else (another mapping, a longer prompt, a larger batch, a mixed step).

>>> from v41graph import load_model
>>> from v41graph.costs.fpm.load import load_table
>>> from v41graph.costs.hardware import load_hardware
>>> c = runtime_coster(load_model(), load_hardware("gb300"), load_table("aisimulate-gb300-off-v1"), tp=4)
>>> c.fit.terms
('forward', 'prefill', 'request', 'token')
>>> ms = c.forward_s((), c.decode_key(1, 129)) * 1000
>>> 149 < ms < 156, c.answers
(True, {'runtime': 1})
"""

from __future__ import annotations

from typing import Any

from ...costs.fpm.table import FpmTable
from .fpm_reference import sol_reference
from .runtime_basis import RuntimeFit, Shape, fit_runtime
from ..serving.step_cost import Piece, StepCoster, tier_counts


def step_shape(pieces: tuple[Piece, ...], decode: tuple[int, int], verify_len: int = 0) -> Shape:
    """What the runtime terms read of a step: prefill or not, requests, new tokens, past KV read.
    A decode request's context counts its own token, so its past KV is one less."""
    batch, context = decode
    return Shape(bool(pieces), len(pieces) + batch, sum(p.length for p in pieces) + batch * (1 + verify_len),
                 sum(p.start for p in pieces) + batch * max(context - 1, 0))


class RuntimeStepCoster:
    """Kernel seconds of ``kernels`` plus ``fit``'s runtime terms; ``answers`` counts steps by tier."""

    basis = "runtime"

    def __init__(self, kernels: StepCoster, fit: RuntimeFit):
        self.kernels, self.fit = kernels, fit
        self.model, self.hardware, self.policies = kernels.model, kernels.hardware, kernels.policies
        self.bucket = kernels.bucket
        self.same_deployment = (fit.gpu == kernels.hardware.name and fit.tp == kernels.policies["tp"]
                                and kernels.policies["ep"] == 1 and kernels.policies["dp"] == 1)
        self.answers: dict[str, int] = {}

    @property
    def compiled(self) -> int:
        return self.kernels.compiled

    def decode_key(self, batch: int, context_sum: int) -> tuple[int, int]:
        return self.kernels.decode_key(batch, context_sum)

    def piece_key(self, piece: Piece) -> Piece:
        return self.kernels.piece_key(piece)

    @property
    def decoder_replay(self) -> str:
        return self.kernels.policies["decoder_replay"]

    def tier(self, shape: Shape) -> str:
        return "runtime" if self.same_deployment and self.fit.inside(shape) else "extrapolated"

    def forward_s(self, pieces: tuple[Piece, ...], decode: tuple[int, int], verify_len: int = 0) -> float:
        shape = step_shape(pieces, decode, verify_len)
        tier = self.tier(shape)
        self.answers[tier] = self.answers.get(tier, 0) + 1
        return self.kernels.forward_s(pieces, decode, verify_len) + self.fit.runtime_ms(shape) / 1000

    def basis_record(self) -> dict[str, Any]:
        """What the steps stand on: the kernel basis, the fitted terms and the steps per tier."""
        return {"fit": self.fit.to_dict(), "kernel": self.fit.kernel, **tier_counts(self.answers),
                "same_deployment": self.same_deployment}


def runtime_coster(model, hardware, table: FpmTable, *, tp: int = 1, ep: int = 1, dp: int = 1, cost=None,
                   bucket: bool = False, reference=None) -> RuntimeStepCoster:
    """The runtime step coster of a deployment, its terms fitted to ``table`` on the kernel basis
    ``cost`` (a CostMode; SOL when None): the fit and the steps stand on the same kernels, so the
    terms hold exactly what the kernels leave out. ``reference``: the table's kernel times on that
    basis when the caller has them already (:func:`~.fpm_reference.sol_reference` of the identity)."""
    identity = table.identity
    kernel = reference or sol_reference(identity, model=model, cost=cost)
    fit = fit_runtime(table, kernel, "sol" if cost is None else cost.mode)
    kernels = StepCoster(model, hardware, tp=tp, ep=ep, dp=dp, bucket=bucket, cost=cost,
                         decoder_replay=identity.decoder_replay or "off",
                         engram_residency=identity.engram_residency or "hbm")
    return RuntimeStepCoster(kernels, fit)


__all__ = ["RuntimeStepCoster", "runtime_coster", "step_shape"]
