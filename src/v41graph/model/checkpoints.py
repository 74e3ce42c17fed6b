"""The published checkpoints of each built-in model, and which one a GPU runs (issue 34).

A built-in config.json is one checkpoint's (the official one, ``deepseek-ai/…``); the same
architecture also ships re-quantised. What differs is the routed experts' storage
(``expert_dtype``): the official checkpoints hold FP4 e2m1 experts, the SGLang project's
``…-FP8`` re-quantisations FP8 ones. Hopper (h100, h200) has no FP4 tensor cores, and engines
serve V4 there from the FP8 checkpoint (AIConfigurator 0.12's support matrix marks the official
V4 checkpoints ``HW_INCOMPATIBLE`` on h200_sxm, "SM90 does not support FP4", and the ``-FP8``
ones ``PASS``). The format also decides memory fit: FP8 experts take twice the bytes.

**The rule** (:func:`choose_checkpoint`, given whether the GPU has FP4 tensor cores — the
hardware side reads it from its peaks, so this layer imports nothing above it):

* a GPU with FP4 tensor cores (b200, gb200, gb300) runs the official FP4 checkpoint;
* a GPU without them runs the model's engine-published FP8 checkpoint where one exists;
* a model with none (V4.1-Flash) keeps its FP4 checkpoint there, with a caveat;
* ``checkpoint`` names one explicitly (its Hugging Face id, its name, or the alias ``fp4`` /
  ``fp8`` for the official and engine checkpoints); an FP4 checkpoint on a GPU without FP4 tensor
  cores, for a model that has an FP8 one, needs ``fp4_on_hopper``; a community checkpoint is
  chosen only by name;
* a config.json given by path keeps its own ``expert_dtype``; its checkpoint id is unknown (None).

>>> from v41graph import load_model
>>> flash = load_model("deepseek-v4-flash")
>>> flash.checkpoint, flash.expert_dtype
('deepseek-ai/DeepSeek-V4-Flash', 'fp4')
>>> c = choose_checkpoint(flash, has_fp4=False, gpu="h200_sxm")
>>> c.hf_id, c.expert_dtype
('sgl-project/DeepSeek-V4-Flash-FP8', 'fp8')
>>> choose_checkpoint(flash, has_fp4=True, gpu="gb200").hf_id
'deepseek-ai/DeepSeek-V4-Flash'
>>> v41 = choose_checkpoint(load_model(), has_fp4=False, gpu="h200_sxm")
>>> v41.hf_id, v41.caveat is not None
('deepseek-ai/DeepSeek-V4.1-Flash', True)
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Mapping

from ..errors import ConfigError
from .spec import ModelSpec

VERIFIED, UNVERIFIED = "VERIFIED", "UNVERIFIED"
#: who published a checkpoint: DeepSeek itself, an inference engine's project, or someone else
PUBLISHERS = ("official", "engine", "community")

_AIC = ("aiconfigurator-core 0.12.0, systems/support_matrix/h200_sxm.csv: {hf} is listed (SGLang 0.5.14 and "
        "0.5.16, agg and disagg) with status {status}{why}; its DeepSeek-V4 model list (sdk/common.py, "
        "DEEPSEEK_V4_HF_MODELS) names it")
_CONFIG = ("official config.json at the revision pinned in reference/model-facts.md §1 (byte-identical to the "
           "embedded data/models/{name}.json): expert_dtype fp4")


@dataclass(frozen=True)
class Checkpoint:
    """One published checkpoint of a built-in model: its Hugging Face id, the routed experts'
    storage, who published it, and whether that was checked (``status`` with its ``source``)."""

    model: str          # the built-in model it belongs to
    hf_id: str          # Hugging Face repository id, the engines' --model-path
    expert_dtype: str   # routed experts' storage: "fp4" | "fp8"
    publisher: str      # one of PUBLISHERS
    status: str         # VERIFIED | UNVERIFIED
    source: str         # one sentence: where the facts come from

    @property
    def name(self) -> str:
        """The repository's own name (``DeepSeek-V4-Flash-FP8``)."""
        return self.hf_id.rsplit("/", 1)[-1]

    @property
    def alias(self) -> str | None:
        """``fp4`` / ``fp8`` for the official and engine checkpoints; a community one has none."""
        return None if self.publisher == "community" else self.expert_dtype

    def to_dict(self) -> dict[str, Any]:
        return {"hf_id": self.hf_id, "name": self.name, "expert_dtype": self.expert_dtype,
                "publisher": self.publisher, "status": self.status, "source": self.source}


def _official(model: str, hf_id: str) -> Checkpoint:
    source = _CONFIG.format(name=model)
    if model in ("deepseek-v4-flash", "deepseek-v4-pro"):
        source += "; " + _AIC.format(hf=hf_id, status="HW_INCOMPATIBLE", why=" ('h200_sxm (SM90) does not support "
                                     "FP4 required by " + hf_id + "')")
    return Checkpoint(model, hf_id, "fp4", "official", VERIFIED, source)


def _sglang_fp8(model: str, hf_id: str) -> Checkpoint:
    return Checkpoint(model, hf_id, "fp8", "engine", VERIFIED,
                      _AIC.format(hf=hf_id, status="PASS", why="") + "; an FP8-only re-quantisation by the SGLang "
                      "project (sdk/models/helpers.py: 'FP8-only requants (sgl-project) have no expert_dtype'), the "
                      "checkpoint AIConfigurator's DeepSeek-V4 kernel tables were collected with "
                      "(data/measured/MANIFEST.json)")


#: every built-in model's published checkpoints, the official one first
CHECKPOINTS: Mapping[str, tuple[Checkpoint, ...]] = {
    "deepseek-v4-flash": (_official("deepseek-v4-flash", "deepseek-ai/DeepSeek-V4-Flash"),
                          _sglang_fp8("deepseek-v4-flash", "sgl-project/DeepSeek-V4-Flash-FP8")),
    "deepseek-v4-pro": (_official("deepseek-v4-pro", "deepseek-ai/DeepSeek-V4-Pro"),
                        _sglang_fp8("deepseek-v4-pro", "sgl-project/DeepSeek-V4-Pro-FP8")),
    # no engine-published FP8 checkpoint found for the DSpark releases: not in AIConfigurator 0.12's
    # support matrix nor in its DeepSeek-V4 model list; community conversions exist and are not listed
    "deepseek-v4-flash-0731": (_official("deepseek-v4-flash-0731", "deepseek-ai/DeepSeek-V4-Flash-0731"),),
    "deepseek-v4-pro-0813": (_official("deepseek-v4-pro-0813", "deepseek-ai/DeepSeek-V4-Pro-0813"),),
    "deepseek-v4.1-flash": (
        _official("deepseek-v4.1-flash", "deepseek-ai/DeepSeek-V4.1-Flash"),
        Checkpoint("deepseek-v4.1-flash", "timur136/DeepSeek-V4.1-Flash-FP8", "fp8", "community", UNVERIFIED,
                   "a community conversion (FP4 experts widened to FP8, stated lossless by its author), named in "
                   "issue 34; not checked against the Hugging Face Hub here, and served by no engine's recipe"),
    ),
}


def checkpoints_of(model: ModelSpec) -> tuple[Checkpoint, ...]:
    """The checkpoints ``model`` may run as: a built-in's (loaded by name), else none (a config.json
    given by path, or a ModelSpec built from a dict, whose checkpoint is unknown)."""
    known = CHECKPOINTS.get(model.name, ())
    return known if any(c.hf_id == model.checkpoint for c in known) else ()


def find_checkpoint(model: ModelSpec, wanted: str, field: str = "checkpoint") -> Checkpoint:
    """The checkpoint of ``model`` that ``wanted`` names: its Hugging Face id, its name, or the alias
    ``fp4`` / ``fp8`` (case-insensitive); anything else is an error naming the field, the value and
    the known names."""
    known = checkpoints_of(model)
    if not known:
        raise ConfigError(f"{field} {wanted!r}: model {model.name!r} is a config.json with no known checkpoints "
                          f"(its expert_dtype {model.expert_dtype!r} is used as it says)")
    key = wanted.strip().lower()
    for c in known:
        if key in (c.hf_id.lower(), c.name.lower(), c.alias):
            return c
    names = ", ".join(f"{c.hf_id} ({c.alias or c.publisher + ', ' + c.status})" for c in known)
    raise ConfigError(f"{field} {wanted!r}: unknown checkpoint of model {model.name!r} (known: {names})")


@dataclass(frozen=True)
class CheckpointChoice:
    """Which checkpoint a model runs as on a GPU, and why (:func:`choose_checkpoint`)."""

    model: str
    checkpoint: Checkpoint | None  # None: a config.json given by path (its own expert_dtype, id unknown)
    expert_dtype: str
    reason: str
    caveat: str | None = None

    @property
    def hf_id(self) -> str | None:
        return None if self.checkpoint is None else self.checkpoint.hf_id

    def apply(self, model: ModelSpec) -> ModelSpec:
        """``model`` as this checkpoint: its experts' storage and its Hugging Face id."""
        return replace(model, expert_dtype=self.expert_dtype, checkpoint=self.hf_id)

    def to_dict(self) -> dict[str, Any]:
        record = self.checkpoint.to_dict() if self.checkpoint is not None else {
            "hf_id": None, "name": None, "expert_dtype": self.expert_dtype, "publisher": None, "status": None,
            "source": None}
        return {**record, "reason": self.reason, "caveat": self.caveat}

    def line(self) -> str:
        """One text line: ``checkpoint: ID (fp8 experts, engine, VERIFIED) — why[; caveat: …]``."""
        c = self.checkpoint
        what = (f"{c.hf_id} ({c.expert_dtype} experts, {c.publisher}, {c.status})" if c is not None
                else f"{self.model}'s config.json ({self.expert_dtype} experts, checkpoint id unknown)")
        return f"checkpoint: {what} — {self.reason}" + (f"; caveat: {self.caveat}" if self.caveat else "")


def choose_checkpoint(model: ModelSpec, has_fp4: bool, checkpoint: str | None = None, *,
                      fp4_on_hopper: bool = False, gpu: str = "this GPU", field: str = "checkpoint",
                      flag: str = "fp4_on_hopper", refuse_unused: bool = True) -> CheckpointChoice:
    """The checkpoint ``model`` runs as on a GPU with (``has_fp4``) or without FP4 tensor cores (the
    rule in the module doc). ``checkpoint`` names one; ``fp4_on_hopper`` allows an FP4 one on a GPU
    without FP4 tensor cores where an FP8 one exists (and, with ``refuse_unused``, is an error where
    it changes nothing; a sweep over GPUs passes it to all of them). ``field`` and ``flag`` are how
    errors spell the two (``--checkpoint``, ``--fp4-on-hopper``)."""
    known = checkpoints_of(model)
    fp8 = next((c for c in known if c.expert_dtype == "fp8" and c.publisher != "community"), None)
    no_fp4 = f"{gpu} has no FP4 tensor cores"
    if checkpoint is not None:
        chosen = find_checkpoint(model, checkpoint, field)
        reason = f"chosen by {field} {checkpoint}"
    elif not known:
        chosen, reason = None, "a config.json given by path: its own expert_dtype"
    elif not has_fp4 and fp8 is not None:
        chosen, reason = fp8, f"{no_fp4}: engines serve {model.name} there from its FP8 checkpoint"
    else:
        chosen = known[0]
        reason = (f"{gpu} has FP4 tensor cores: the official FP4 checkpoint" if has_fp4 else
                  f"no engine has published an FP8 checkpoint of {model.name}: the official one")
    dtype = model.expert_dtype if chosen is None else chosen.expert_dtype
    fp4_without_cores = dtype == "fp4" and not has_fp4
    needs_flag = fp4_without_cores and checkpoint is not None and fp8 is not None
    if needs_flag and not fp4_on_hopper:
        raise ConfigError(f"{field} {checkpoint!r}: {chosen.hf_id} holds FP4 experts and {no_fp4}; engines serve "
                          f"{fp8.hf_id} there (add {flag} to price the FP4 checkpoint anyway)")
    if fp4_on_hopper and not needs_flag and refuse_unused:
        raise ConfigError(f"{flag}: changes nothing here (it allows a {field} naming an FP4 checkpoint on a GPU "
                          f"without FP4 tensor cores, for a model with an FP8 checkpoint)")
    caveat = None
    if fp4_without_cores:
        missing = "no FP8 checkpoint published; " if fp8 is None and known else ""
        caveat = f"{missing}FP4 experts on a GPU without FP4 tensor cores ({gpu}), priced at its FP8 peak"
    return CheckpointChoice(model.name, chosen, dtype, reason, caveat)


def with_checkpoint(model: ModelSpec, checkpoint: str, field: str = "checkpoint") -> ModelSpec:
    """``model`` as its checkpoint ``checkpoint`` (by id, name or alias), whatever the GPU."""
    return replace(model, expert_dtype=(c := find_checkpoint(model, checkpoint, field)).expert_dtype,
                   checkpoint=c.hf_id)
