"""Workload identity: the fields that partition measured data (docs/architecture.md, "Modules": ir/identity.py).

Measured tables (OP and FPM) hold data for exactly one identity: backend and revision, image,
GPU, topology, parallel mapping, decoder replay, encoder restore, fusion profile, Engram
residency, DSpark mode, input modality, execution mode, precision layout and measurement
boundary, plus the names of the shape coordinates that vary *inside* the partition. Data never
crosses identities; a lookup under another identity is refused, naming the fields that differ.

A field may be ``None`` when the source does not record it (e.g. AISimulate's GB200 table never
states the mHC fusion profile). Such a field cannot be checked: :meth:`Identity.unverified`
names it, and every answer built on it says so. ``admission`` is a status, not a partition key.

>>> from v41graph.ir.plan import Plan, Request
>>> rt = Runtime(model="m@1", backend="vllm", backend_version="1.0", image_digest="sha256:ab",
...              topology="1 node x 4 GPUs", execution="eager", weights="fp8", activation_dtype="fp8",
...              kv_cache_dtype="fp8", boundary="forward interval")
>>> q = identity_from_plan(Plan([Request.decode(64)], tp=4), "gb200", rt)
>>> q.gpu, q.tp, q.decoder_replay, q.admission
('gb200', 4, 'off', 'query')
>>> Identity.from_json(q.to_json()) == q
True
>>> q.differences(identity_from_plan(Plan([Request.decode(64)], tp=4), "gb300", rt))
('gpu',)
"""

from __future__ import annotations

import json
from dataclasses import dataclass, fields, replace
from typing import Any, Mapping

from ..errors import PlanError
from .plan import Plan

COORDINATES = ("phase", "batch_size", "total_prefill_tokens", "total_kv_read_tokens")
ADMISSIONS = ("admitted", "not admitted", "query")  # "query": built from a plan, not from data
# Fields a source may leave unrecorded (null in JSON); the others every identity must state.
_OPTIONAL = frozenset({"model", "backend_version", "image_digest", "topology", "encoder_restore", "fusion",
                       "engram_residency", "execution", "weights", "activation_dtype", "kv_cache_dtype",
                       "boundary"})


@dataclass(frozen=True)
class Runtime:
    """What a deployment is beyond the plan: the backend, its image and how it was timed."""

    model: str  # checkpoint and revision, e.g. "deepseek-ai/DeepSeek-V4.1-Flash@fb2764a5…"
    backend: str
    backend_version: str
    image_digest: str
    topology: str  # nodes x GPUs, e.g. "1 node x 4 GPUs"
    execution: str  # e.g. "eager" or "cuda graphs"
    weights: str
    activation_dtype: str
    kv_cache_dtype: str
    boundary: str  # what the timer covers, e.g. "native forward interval, scheduler excluded"


@dataclass(frozen=True)
class Identity:
    """One partition of measured data; frozen and hashable, with a JSON round trip."""

    model: str | None
    backend: str
    backend_version: str | None
    image_digest: str | None
    gpu: str
    topology: str | None
    tp: int
    ep: int
    dp: int
    pp: int
    decoder_replay: str
    encoder_restore: str | None
    fusion: str | None
    engram_residency: str | None
    dspark: str
    modality: str
    execution: str | None
    weights: str | None
    activation_dtype: str | None
    kv_cache_dtype: str | None
    boundary: str | None
    coordinates: tuple[str, ...] = COORDINATES
    admission: str = "admitted"

    def __post_init__(self):
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name in ("tp", "ep", "dp", "pp"):
                if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                    raise PlanError(f"identity {f.name}: must be an integer >= 1, got {value!r}")
            elif f.name == "coordinates":
                if not isinstance(value, tuple) or not value or not all(isinstance(c, str) for c in value):
                    raise PlanError(f"identity coordinates: must be a non-empty list of names, got {value!r}")
            elif value is None and f.name in _OPTIONAL:
                continue
            elif not isinstance(value, str) or not value:
                raise PlanError(f"identity {f.name}: must be a non-empty string, got {value!r}")
        if self.admission not in ADMISSIONS:
            raise PlanError(f"identity admission: unknown value {self.admission!r} "
                            f"(expected one of {', '.join(ADMISSIONS)})")

    # -- comparison --------------------------------------------------------------------------
    def differences(self, other: "Identity") -> tuple[str, ...]:
        """Fields recorded on both sides whose values differ (admission is not compared)."""
        return tuple(f.name for f in fields(self) if f.name != "admission"
                     and getattr(self, f.name) is not None and getattr(other, f.name) is not None
                     and getattr(self, f.name) != getattr(other, f.name))

    def unverified(self, other: "Identity") -> tuple[str, ...]:
        """Fields that one side does not record, so a match cannot check them."""
        return tuple(f.name for f in fields(self) if f.name != "admission"
                     and (getattr(self, f.name) is None or getattr(other, f.name) is None))

    def describe_differences(self, other: "Identity") -> str:
        """``"gpu (table 'gb200', query 'gb300'), tp (…)"`` for the fields that differ."""
        return ", ".join(f"{n} (table {getattr(self, n)!r}, query {getattr(other, n)!r})"
                         for n in self.differences(other))

    # -- JSON --------------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        out["coordinates"] = list(self.coordinates)
        return out

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, sort_keys=True) + "\n"

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], origin: str = "identity") -> "Identity":
        """Parse an identity; every field must be present (``null`` where not recorded)."""
        if not isinstance(data, Mapping):
            raise PlanError(f"{origin}: top level must be a JSON object, got {type(data).__name__}")
        names = [f.name for f in fields(cls)]
        unknown = sorted(set(data) - set(names))
        if unknown:
            raise PlanError(f"{origin}: unknown field {unknown[0]!r}")
        for name in names:
            if name not in data:
                raise PlanError(f"{origin}: missing field {name!r}")
        values = dict(data)
        if isinstance(values["coordinates"], list):
            values["coordinates"] = tuple(values["coordinates"])
        try:
            return cls(**values)
        except PlanError as exc:
            raise PlanError(f"{origin}: {str(exc).removeprefix('identity ')}") from None

    @classmethod
    def from_json(cls, text: str, origin: str = "identity") -> "Identity":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise PlanError(f"{origin}: not valid JSON ({exc.msg} at line {exc.lineno})") from None
        return cls.from_dict(data, origin)

    def with_fields(self, **changes) -> "Identity":
        return replace(self, **changes)


def identity_from_plan(plan: Plan, hardware, runtime: Runtime) -> Identity:
    """The identity a plan would run under on ``hardware`` (a name or a Hardware) with ``runtime``.

    The policies come from :meth:`Plan.identity` (one list of what partitions data); v41graph
    plans have no pipeline parallelism, so ``pp`` is 1.
    """
    policies = dict(plan.identity())
    gpu = getattr(hardware, "name", hardware)
    if not isinstance(gpu, str) or not gpu:
        raise PlanError(f"identity gpu: expected a hardware name, got {hardware!r}")
    images = any(r.images for r in plan.requests)
    return Identity(
        model=runtime.model, backend=runtime.backend, backend_version=runtime.backend_version,
        image_digest=runtime.image_digest, gpu=gpu, topology=runtime.topology,
        tp=policies["tp"], ep=policies["ep"], dp=policies["dp"], pp=1,
        decoder_replay=policies["decoder_replay"], encoder_restore=policies["encoder_restore"],
        fusion=policies["fusion"], engram_residency=policies["engram_residency"], dspark=policies["dspark"],
        modality="text+image" if images else "text", execution=runtime.execution, weights=runtime.weights,
        activation_dtype=runtime.activation_dtype, kv_cache_dtype=runtime.kv_cache_dtype,
        boundary=runtime.boundary, admission="query")


def runtime_of(identity: Identity) -> Runtime:
    """The deployment an identity describes (unrecorded fields stay None, and stay unchecked).

    >>> from v41graph.ir.plan import Plan, Request
    >>> rt = Runtime("m@1", "vllm", "1.0", "sha256:ab", "1x4", "eager", "fp8", "fp8", "fp8", "interval")
    >>> runtime_of(identity_from_plan(Plan([Request.decode(8)]), "gb200", rt)) == rt
    True
    """
    return Runtime(**{f.name: getattr(identity, f.name) for f in fields(Runtime)})


__all__ = ["ADMISSIONS", "COORDINATES", "Identity", "Runtime", "identity_from_plan", "runtime_of"]
