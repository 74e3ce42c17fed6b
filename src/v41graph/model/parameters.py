"""Parameter counts from the module inventory: total by group, bytes per parameter of each storage
format, and the parameters one token activates (docs/parameters.md explains every term).

One source: every count is the element count of :func:`~v41graph.model.inventory.inventory`'s
tensors (a scale tensor is not a parameter: its bytes sit in its tensor's format).

* ``total`` is the main model as a model card counts it — embedding, backbone, head and the
  vision tower — and leaves out the draft blocks (DSpark / MTP), which ``draft`` counts apart.
* ``active`` counts what one token reads: every dense weight of each layer it runs through,
  ``experts_per_token`` of the ``n_routed_experts`` routed experts, the shared experts, one row of
  the embedding, the Engram rows its hash columns fetch ((max n-gram − 1) × heads rows of
  ``engram_head_dim`` per Engram layer), and the output head (with the final norm and, in V4, the
  hc head mix) where the token makes logits. A text
  token never runs the vision tower, and the draft is not the model.

  - ``decode``: every backbone layer and the head.
  - ``prefill``: a prompt token in the limit of a long prompt: every backbone layer, no head
    (one logit row per prompt).
  - ``prefill_bounded``: as ``prefill`` under decoder SWA bounded replay (V4.1): only the layers
    before the late-layer start (SGLang's ``max(kv_source_layer_ids) + 1`` = 21) run every prompt
    token; the later ones run the last window of tokens only, which is no parameter per token in
    the limit. ``None`` for a model without the encoder-decoder split.

>>> from v41graph import load_model
>>> p = parameters(load_model("deepseek-v4-flash"))
>>> round(p.total / 1e9, 1), round(p.active["decode"].total / 1e9, 2), round(p.draft / 1e9, 2)
(284.3, 13.27, 6.61)
>>> q = parameters(load_model())
>>> round(q.active["decode"].total / 1e9, 2), round(q.active["prefill_bounded"].total / 1e9, 2)
(16.13, 8.28)
>>> q.formats["fp4_e2m1_ue8m0_g32"]["bytes_per_parameter"]
0.53125
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from ..errors import ConfigError, expect
from ..reuse import cached
from .config import ModelSpec
from .inventory import GROUPS, inventory

#: groups a token activates whole in every layer it runs through
_DENSE = frozenset(GROUPS) - {"embedding", "head", "routed_experts", "engram_tables", "dspark", "vision"}


@dataclass(frozen=True)
class Active:
    """The parameters one token activates in one phase, by inventory group (exact, whole numbers)."""

    phase: str
    total: int
    by_group: dict[str, int]
    layers: int  # backbone layers the token runs through
    head: bool  # whether the token makes logits


@dataclass(frozen=True)
class Parameters:
    """Total parameters by group, per storage format, and active per token by phase (module doc)."""

    model: str
    total: int
    by_group: dict[str, int]
    draft: int
    formats: dict[str, dict[str, float]]
    active: dict[str, Active | None]

    def as_dict(self) -> dict:
        """JSON-ready: counts as ints, formats with their bytes per parameter."""
        return {"model": self.model, "total": self.total, "by_group": self.by_group, "draft": self.draft,
                "formats": self.formats, "active": {k: None if a is None else {
                    "total": a.total, "by_group": a.by_group, "layers": a.layers, "head": a.head}
                    for k, a in self.active.items()},
                "basis": "element counts of the module inventory; total leaves out the draft blocks "
                         "(counted as draft); active per token: docs/parameters.md"}


def _layer(module: str) -> int | None:
    parts = module.split(".")
    return int(parts[1]) if parts[0] == "layers" and len(parts) > 1 and parts[1].isdigit() else None


@cached(None)
def parameters(model: ModelSpec, late_layer_start: int | None = None) -> Parameters:
    """Parameter counts of ``model`` (``late_layer_start``: the bounded-replay cut; default SGLang's)."""
    inv = inventory(expect(model, ModelSpec, "parameters model", ConfigError, " (v41graph.load_model(...))"))
    by_group = dict.fromkeys(GROUPS, 0)
    formats: dict[str, list[int]] = {}
    per_layer: dict[int | None, dict[str, Fraction]] = {}
    for t, k in inv.kinds():
        n = t.elements * k
        by_group[t.group] += n
        f = formats.setdefault(t.format.name, [0, 0])
        f[0] += n
        f[1] += t.bytes * k
        layer = _layer(t.module)  # None: outside the layers (the final norm, V4's hc head mix)
        if t.group in _DENSE | {"routed_experts"}:
            share = Fraction(model.experts_per_token, model.n_routed_experts) if t.group == "routed_experts" else 1
            row = per_layer.setdefault(layer, {})
            row[t.group] = row.get(t.group, 0) + n * share
    rows = model.engram_max_ngram_size - 1 if model.engram_layer_ids else 0
    engram_row = rows * model.engram_n_heads * model.engram_head_dim  # per Engram layer, per token
    draft = by_group["dspark"]
    by_group_main = {g: v for g, v in by_group.items() if g != "dspark"}
    cut = late_layer_start if late_layer_start is not None else (
        max(model.kv_source_ids) + 1 if model.family == "v4.1" and model.kv_source_ids else None)
    everything = range(model.num_layers)

    def active(phase: str, layers: range, head: bool) -> Active:
        out = dict.fromkeys(GROUPS, Fraction(0))
        out["embedding"] = Fraction(model.hidden_size)
        for i in layers:
            for g, v in per_layer.get(i, {}).items():
                out[g] += v
        out["engram_tables"] = Fraction(engram_row * sum(1 for i in model.engram_layer_ids if i in layers))
        if head:  # the final norm and hc mix run where the head does
            out["head"] = Fraction(by_group["head"])
            for g, v in per_layer.get(None, {}).items():
                out[g] += v
        counted = {g: round(v) for g, v in out.items() if v}
        return Active(phase, sum(counted.values()), counted, len(layers), head)

    return Parameters(
        model.name, sum(by_group_main.values()), by_group_main, draft,
        {name: {"parameters": n, "bytes": b, "bytes_per_parameter": b / n} for name, (n, b) in formats.items()},
        {"decode": active("decode", everything, True), "prefill": active("prefill", everything, False),
         "prefill_bounded": None if cut is None else active("prefill_bounded", range(cut), False)})
