"""Measured modules: which graph nodes one measured kernel times (mapping before lookup).

A module table times a whole boundary — the V4 attention sublayer from ``wq_a`` to ``wo_b``
(q/kv projections, compressor, indexer, unpack, sparse attention, output projection, the caches
it writes), or the routed MoE (up → SwiGLU → down). The ``measured_modules`` pass
(:mod:`v41graph.passes.measured_modules`) replaces those nodes by one
:class:`~v41graph.ir.ops.Fused` node whose ``covers`` records them — the fusion pass's own
mechanism — so a module's time is never added on top of its members'.

>>> from v41graph import load_model, lower, Plan, Request
>>> m = load_model("deepseek-v4-flash")
>>> g = lower(m, Plan([Request.prefill(64)], fusion="two-pass"))
>>> group = attention_group(g, 3)
>>> group[0], group[-1], "L3.attn_norm" in group, "L3.store.main_kv" in group
('L3.wq_a', 'L3.wo_b', False, True)
>>> model_key(m), model_key(load_model())
('sgl-project/DeepSeek-V4-Flash-FP8', None)
"""

from __future__ import annotations

from ...ir.graph import Graph
from ...ir.ops import Communication
from ...model.config import ModelSpec

#: what a layer holds besides its attention sublayer (node-name suffixes after ``L<i>.``); its
#: collectives (TP all-reduce, attention-group gathers) are priced on their own as well
_NOT_ATTENTION = ("hc_", "attn_norm", "ffn_norm", "moe.", "engram.")

#: the checkpoints the DSv4 module tables were collected with, by their dims (hidden, heads)
_CHECKPOINTS = {(4096, 64): "sgl-project/DeepSeek-V4-Flash-FP8", (7168, 128): "sgl-project/DeepSeek-V4-Pro-FP8"}


def model_key(model: ModelSpec) -> str | None:
    """The table's ``model`` for a V4 model with a measured checkpoint's dims; None otherwise (V4.1)."""
    if model.family != "v4":
        return None
    return _CHECKPOINTS.get((model.hidden_size, model.num_heads))


def attention_group(graph: Graph, layer: int) -> tuple[str, ...]:
    """The ids of layer ``layer``'s attention sublayer (what a DSv4 attention module times), in graph order:
    every node of the layer but its mHC, norms, MoE, Engram and collectives."""
    prefix = f"L{layer}."
    return tuple(n for n, node in graph.nodes.items() if n.startswith(prefix)
                 and not n[len(prefix):].startswith(_NOT_ATTENTION) and not isinstance(node.op, Communication))


def attention_layers(graph: Graph) -> list[int]:
    return sorted({n.layer for n in graph.nodes.values() if n.layer is not None and n.id.startswith("L")})
