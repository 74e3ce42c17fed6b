"""Interface ①: model semantics — ModelSpec / LayerSpec from a config.json, and the layer layout.

V4.1 (``model_type`` ``deepseek_v41``): the path of backbone layer ``l`` is

* ``swa`` when its compress ratio is 0;
* ``full`` when ``l`` is a KV source (it owns global KV and index K, and indexes);
* ``reindex`` when ``l`` is an index source but not a KV source (own Top-K over shared KV);
* ``reuse`` otherwise (shared KV *and* shared Top-K, but its own query, SWA KV, attention, MoE, mHC).

KV owner = max(kv source <= l) and Top-K producer = max(index source <= l): two different
relations, both kept. V4 (``deepseek_v4``): ratio 4 → ``csa``, 128 → ``hca``, 0 → ``swa``; each
compressed layer owns its KV.

>>> from v41graph import load_model
>>> m = load_model()
>>> m.path_counts()
{'swa': 2, 'full': 4, 'reindex': 4, 'reuse': 30}
>>> l29 = m.layers[29]
>>> (l29.path, l29.stage, l29.kv_owner, l29.topk_producer)
('reuse', 'decoder', 20, 28)
>>> len(m.draft_blocks)
3
"""

from __future__ import annotations

from dataclasses import replace
from importlib import resources
import json
from pathlib import Path
from typing import Any, Literal, Mapping

from ..errors import ConfigError
from .checkpoints import CHECKPOINTS, with_checkpoint
from .configkeys import _MISSING, Keys
from .layout import DraftBlockSpec, LayerSpec, v4_layers, v41_layers  # noqa: F401  (LayerSpec re-exported)
from .relations import check_relations
from .spec import ModelSpec, VisionSpec  # the data this module parses into, re-exported

Path_ = Literal["swa", "full", "reindex", "reuse", "csa", "hca"]
DEFAULT_MODEL = "deepseek-v4.1-flash"
#: bounds on what drives loops (layers, experts, vision layers, draft blocks): a config past them is
#: refused before any work starts (the largest released model has 61 layers and 384 experts)
MAX_LAYERS = 1024
MAX_EXPERTS = 1 << 16
MAX_DIM = 1 << 20
#: layers × routed experts, draft blocks included (V4-Pro: 61 × 384 = 23,424), so the inventory
#: stays a few hundred thousand tensors
MAX_EXPERT_INSTANCES = 1 << 16
#: a config.json is a few KB; anything past this is not one (and is not read whole)
MAX_CONFIG_BYTES = 1 << 24
#: routed-expert storage a config may declare (``expert_dtype``)
EXPERT_DTYPES = ("fp4", "fp8")


def model_from_config(config: Mapping[str, Any], name: str = "custom") -> ModelSpec:
    """Validate a parsed config.json and build its :class:`ModelSpec`.

    Raises :class:`~v41graph.errors.ConfigError` naming the key and value on any problem.
    """
    root = Keys(config)
    family, k = _family(root)
    n = k.int("num_hidden_layers", minimum=1, maximum=MAX_LAYERS)
    ratios, targets, n_draft = _ratios(k, n)
    block, expert_dtype = _quantization(root, k)
    engram = k.layer_ids("engram_layer_ids", n, default=[])
    engram_rows = k.ints("engram_num_embeddings", default=[])
    if len(engram_rows) != len(engram):
        raise ConfigError(f"config key '{k.name('engram_num_embeddings')}' has {len(engram_rows)} entries "
                          f"for {len(engram)} engram_layer_ids {list(engram)}")
    if family == "v4.1":
        kv_src, idx_src, cand = _v41_sources(k, n, ratios)
        layers = v41_layers(k, n, ratios, kv_src, idx_src, cand, engram, targets)
    else:
        kv_src = tuple(l for l in range(n) if ratios[l] > 0)
        idx_src = tuple(l for l in range(n) if ratios[l] == 4)
        cand = None
        layers = v4_layers(k, n, ratios, targets)
    n_experts = k.int("n_routed_experts", minimum=1, maximum=MAX_EXPERTS)
    top_k = k.int("num_experts_per_tok", minimum=1)
    window = k.int("sliding_window", minimum=1)
    drafts = tuple(DraftBlockSpec(
        index=n + j, block=j, compress_ratio=0, window=window,
        n_routed_experts=k.int("dspark_n_routed_experts", minimum=1, maximum=MAX_EXPERTS, default=n_experts),
        experts_per_token=k.int("dspark_num_experts_per_tok", minimum=1, default=top_k)) for j in range(n_draft))
    instances = n * n_experts + sum(d.n_routed_experts for d in drafts)
    if instances > MAX_EXPERT_INSTANCES:  # each instance is three weight tensors in the inventory
        raise ConfigError(f"config: {n} layers × {n_experts:,} routed experts (+ draft blocks) make {instances:,} "
                          f"expert instances; at most {MAX_EXPERT_INSTANCES:,}")
    vision = _vision(root.section_of("vision_config")) if root.has("vision_config") else None
    return check_relations(ModelSpec(
        name=name, family=family, vocab_size=k.int("vocab_size", minimum=1),
        hidden_size=k.int("hidden_size", minimum=1, maximum=MAX_DIM), num_layers=n,
        num_heads=k.int("num_attention_heads", minimum=1, maximum=MAX_DIM),
        head_dim=k.int("head_dim", minimum=1, maximum=MAX_DIM),
        rope_head_dim=k.int("qk_rope_head_dim"), q_lora_rank=k.int("q_lora_rank", minimum=1, maximum=MAX_DIM),
        o_lora_rank=k.int("o_lora_rank", minimum=1, maximum=MAX_DIM), o_groups=k.int("o_groups", minimum=1),
        n_routed_experts=n_experts, n_shared_experts=k.int("n_shared_experts"), experts_per_token=top_k,
        moe_intermediate_size=k.int("moe_intermediate_size", minimum=1, maximum=MAX_DIM), window=window,
        compress_ratios=ratios, kv_source_ids=kv_src, index_source_ids=idx_src,
        index_n_heads=k.int("index_n_heads", minimum=1),
        index_head_dim=k.int("index_head_dim", minimum=1, maximum=MAX_DIM),
        index_topk=k.int("index_topk", minimum=1), candidate_source_id=cand,
        candidate_topk_blocks=k.int("candidate_topk_blocks", minimum=1, default=2048),
        candidate_block_size=k.int("candidate_block_size", minimum=1, default=8),
        hc_mult=k.int("hc_mult", minimum=1), hc_sinkhorn_iters=k.int("hc_sinkhorn_iters"),
        engram_layer_ids=engram, engram_num_embeddings=engram_rows,
        # an Engram layer needs its N-gram orders (2..max), heads and row width; without one they may be absent
        engram_max_ngram_size=k.int("engram_max_ngram_size", minimum=2 if engram else 0, maximum=64,
                                    default=_MISSING if engram else 0),
        engram_n_heads=k.int("engram_n_heads", minimum=1 if engram else 0, maximum=MAX_DIM,
                             default=_MISSING if engram else 0),
        engram_head_dim=k.int("engram_head_dim", minimum=1 if engram else 0, maximum=MAX_DIM,
                              default=_MISSING if engram else 0),
        num_hash_layers=k.int("num_hash_layers", default=0), weight_block=block[0],
        dspark_block_size=k.int("dspark_block_size", default=0), dspark_target_layer_ids=targets,
        dspark_markov_rank=k.int("dspark_markov_rank", default=0), vision=vision,
        layers=layers, draft_blocks=drafts, expert_dtype=expert_dtype,
        max_position=k.int("max_position_embeddings", minimum=1) if k.has("max_position_embeddings") else None), k)


def _family(root: Keys) -> tuple[str, Keys]:
    """The family a config's ``model_type`` names and the keys holding its text model (V4.1 nests them)."""
    model_type = root.str("model_type")
    if model_type == "deepseek_v41":
        return "v4.1", root.section_of("text_config")
    if model_type == "deepseek_v4":
        return "v4", root
    raise ConfigError(f"config key 'model_type': unsupported value {model_type!r} "
                      f"(expected 'deepseek_v41' or 'deepseek_v4')")


def _ratios(k: Keys, n: int) -> tuple[tuple[int, ...], tuple[int, ...], int]:
    """The compress ratios (one per backbone layer, then one per draft block, each 0), the DSpark target
    layers and the number of draft blocks."""
    ratios = k.ints("compress_ratios")
    targets = k.layer_ids("dspark_target_layer_ids", n, default=[])
    n_draft = len(targets) if targets else k.int("num_nextn_predict_layers", default=0, maximum=MAX_LAYERS)
    if len(ratios) != n + n_draft:
        raise ConfigError(f"config key '{k.name('compress_ratios')}' has {len(ratios)} entries; expected "
                          f"{n + n_draft} ({n} backbone layers + {n_draft} draft blocks)")
    for j in range(n, n + n_draft):
        if ratios[j] != 0:
            raise ConfigError(f"config key '{k.name('compress_ratios')}': draft block entry {j} has ratio "
                              f"{ratios[j]}; draft blocks are SWA-only (0)")
    return ratios, targets, n_draft


def _quantization(root: Keys, k: Keys) -> tuple[tuple[int, ...], str]:
    """The square weight block and the routed experts' storage (``expert_dtype``: in the quantization
    config where it says, else beside the model's keys, else FP4)."""
    quant = root.section_of("quantization_config")
    block = quant.ints("weight_block_size")
    if len(block) != 2 or block[0] != block[1] or block[0] == 0:
        raise ConfigError(f"config key 'quantization_config.weight_block_size' must be a square block "
                          f"[b, b], got {list(block)}")
    dtype_keys = quant if quant.has("expert_dtype") else k
    expert_dtype = dtype_keys.str("expert_dtype", "fp4")
    if expert_dtype not in EXPERT_DTYPES:
        raise ConfigError(f"config key '{dtype_keys.name('expert_dtype')}': unknown value {expert_dtype!r} "
                          f"(expected one of {', '.join(EXPERT_DTYPES)})")
    return block, expert_dtype


def _v41_sources(k: Keys, n: int, ratios) -> tuple[tuple[int, ...], tuple[int, ...], int | None]:
    """V4.1's KV and index source layers and its candidate source: each a compressed layer, every KV
    source also an index source, the candidate source (if any) a KV source."""
    kv_src = k.layer_ids("kv_source_layer_ids", n)
    idx_src = k.layer_ids("index_source_layer_ids", n)
    for key, ids in (("kv_source_layer_ids", kv_src), ("index_source_layer_ids", idx_src)):
        for s in ids:
            if ratios[s] == 0:
                raise ConfigError(f"config key '{k.name(key)}': layer {s} has compress ratio 0 "
                                  f"(SWA-only) and cannot be a source")
    for s in kv_src:
        if s not in idx_src:
            raise ConfigError(f"config key '{k.name('kv_source_layer_ids')}': KV source {s} is missing "
                              f"from index_source_layer_ids {list(idx_src)}")
    cand = k.raw("candidate_source_layer_id", None)
    if cand is not None:
        cand = k.int("candidate_source_layer_id")
        if cand not in kv_src:
            raise ConfigError(f"config key '{k.name('candidate_source_layer_id')}': {cand} is not a KV "
                              f"source (kv_source_layer_ids {list(kv_src)})")
    return kv_src, idx_src, cand


def _vision(v: Keys) -> VisionSpec:
    return VisionSpec(v.int("num_hidden_layers", minimum=1, maximum=MAX_LAYERS), v.int("hidden_size", minimum=1),
                      v.int("num_attention_heads", minimum=1), v.int("intermediate_size", minimum=1),
                      v.int("patch_size", minimum=1), v.int("downsample_ratio", minimum=1),
                      v.int("max_image_tokens", minimum=1), v.int("min_pixels", default=0))


def builtin_models() -> tuple[str, ...]:
    """Names accepted by :func:`load_model` besides a path."""
    folder = resources.files("v41graph") / "data" / "models"
    return tuple(sorted(p.name[:-5] for p in folder.iterdir() if p.name.endswith(".json")))


def builtin_config_text(name: str) -> str:
    """The embedded config.json text of a built-in model, byte-for-byte."""
    return (resources.files("v41graph") / "data" / "models" / f"{name}.json").read_text(encoding="utf-8")


def load_model(name_or_path: str | Path | None = None, checkpoint: str | None = None) -> ModelSpec:
    """Load a built-in model by name (default DeepSeek-V4.1-Flash) or any config.json by path.

    A built-in is its official checkpoint (``deepseek-ai/…``, FP4 experts) unless ``checkpoint``
    names another of its published ones (a Hugging Face id, a name, or ``fp4`` / ``fp8``;
    :mod:`v41graph.model.checkpoints`; which one a GPU runs: :func:`v41graph.costs.hardware.for_hardware`).
    A config.json by path is what it says (checkpoint id None).

    >>> load_model("deepseek-v4-flash").path_counts()
    {'swa': 2, 'csa': 21, 'hca': 20}
    >>> m = load_model("deepseek-v4-flash", checkpoint="fp8")
    >>> m.checkpoint, m.expert_dtype
    ('sgl-project/DeepSeek-V4-Flash-FP8', 'fp8')
    >>> load_model("no-such-model")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    v41graph.errors.ConfigError: model: unknown name 'no-such-model' and no such file (built-in: deepseek-v4-flash, ...
    """
    if name_or_path is None:
        name_or_path = DEFAULT_MODEL
    key = str(name_or_path)
    if not key.strip():
        raise ConfigError(f"model: the model name is empty (built-in: {', '.join(builtin_models())}; "
                          f"or a config.json path)")
    if key in builtin_models():
        official = CHECKPOINTS.get(key, (None,))[0]  # the embedded config.json is the official checkpoint's
        model = model_from_config(json.loads(builtin_config_text(key)), key)
        model = replace(model, checkpoint=official and official.hf_id)
        return model if checkpoint is None else with_checkpoint(model, checkpoint)
    path = Path(key)
    config = _read_config(path, key)
    model = model_from_config(config, path.stem)
    return model if checkpoint is None else with_checkpoint(model, checkpoint)  # (refused: no known checkpoints)


def _read_config(path: Path, key: str) -> Any:
    """The JSON of a config.json given by path, every way it can fail refused in one line."""
    try:
        exists, regular = path.exists(), path.is_file()
        size = path.stat().st_size if regular else 0
    except (OSError, ValueError) as exc:  # a name too long for the file system, a NUL byte, …
        raise ConfigError(f"model: cannot use {key:.80}{'…' if len(key) > 80 else ''} as a path: "
                          f"{getattr(exc, 'strerror', None) or exc}") from None
    if not exists:
        raise ConfigError(f"model: unknown name {key!r} and no such file (built-in: {', '.join(builtin_models())})")
    if not regular:  # a directory, a FIFO or a device would block or fail later
        raise ConfigError(f"model: {key!r} is not a regular file")
    if size > MAX_CONFIG_BYTES:
        raise ConfigError(f"model: {key!r} has {size:,} bytes; a config.json has at most {MAX_CONFIG_BYTES:,}")
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"model: cannot read {key!r}: {exc}") from None
    try:
        config = json.loads(text)
    except RecursionError:
        raise ConfigError(f"model: {key!r} nests JSON too deeply to be a config.json") from None
    except ValueError as exc:  # JSONDecodeError, and integers past Python's digit limit
        raise ConfigError(f"model: {key!r} is not valid JSON: {exc}") from None
    return config
