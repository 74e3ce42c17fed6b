"""How each weight and op splits across GPUs under TP, EP and DP attention — one table, with sources.

A parallel :class:`Mapping` is SGLang's DP-attention layout written as three degrees:

* ``tp``: attention tensor parallelism (SGLang's attn-TP group, vLLM's TP group);
* ``dp``: attention data parallelism — requests are dealt over ``dp`` ranks, each with its own
  KV pool, attention weights replicated per rank (SGLang ``--enable-dp-attention``);
* ``ep``: expert parallelism of the routed experts, over an all-to-all backend (``a2a``: SGLang's
  ``--moe-a2a-backend``, DeepEP by default here) or none (every GPU sees every token, the MoE ends in
  an all-reduce; SGLang's own default), :data:`v41graph.model.mapping.MOE_A2A`.

The mapping uses ``gpus = max(tp·dp, ep)`` GPUs. The ``gpus / (tp·dp)`` GPUs that hold one
attention shard run it redundantly (SGLang's attention replicas), and the MoE is split
``ep`` ways by expert and ``moe_tp = gpus / ep`` ways by intermediate dimension — AIConfigurator's
``tp·attention_dp == moe_tp·moe_ep`` [AIC].

Every op node and weight tensor belongs to one :class:`Rule`. A rule says how the work splits
(``split``) over which group, and on which tokens the op runs (``tokens``):

* ``rank``: the tokens of one DP rank (every attention-side op);
* ``moe``: the MoE's token side (gate, shared expert, all-to-all, combine). With EP over an a2a
  backend the attention group's tokens are scattered over its GPUs before the dispatch, so each GPU
  sends its own share (SGLang ``tensor_split`` / ``attn_tp_all_gather`` [S4]); without EP or without
  an a2a backend the MoE runs on the gathered tokens of every DP rank;
* ``global``: the routed experts' GEMMs, over all tokens of the batch, split ``gpus`` ways.

A node's per-GPU cost is its work over its tokens divided by :meth:`Mapping.work_divisor`;
a weight's per-GPU bytes are its bytes divided by :meth:`Mapping.weight_divisor`. Sources are
the SGLang / vLLM files cited in ``reference/sharding-facts.md``: [S4] sglang
``models/deepseek_v4.py``, [SC] ``attention/dsv4/compressor.py``, [SI] ``attention/dsv4/indexer.py``,
[SM] ``models/deepseek_v2.py`` (``DeepseekV2MoE``, ``is_deepseek_v4``), [SD] ``token_dispatcher/deepep.py``,
[V4] vllm ``models/deepseek_v4.py``, [VA] ``layers/deepseek_v4_attention.py``, [VC] vLLM
``DeepseekCompressor``, [VE] vllm ``models/deepseek_v4_1/*/engram.py``, [AIC] aiconfigurator
``sdk/models/deepseek_v4.py``.

>>> m = Mapping(tp=8, ep=8)
>>> m.gpus, m.attention_group, m.moe_tp
(8, 8, 1)
>>> [m.work_divisor(rule_for_node(n)) for n in ("wq_a", "wq_b", "moe.experts.up", "moe.dispatch")]
[1, 8, 8, 8]
>>> Mapping(tp=1, dp=8, ep=8).work_divisor(rule_for_node("moe.dispatch"))
1

The table is open: :func:`v41graph.model.user_sharding.register_sharding` adds a row for a user
node kind or node-name pattern, and an op may carry its own :class:`Rule` (``Op.sharding``). A
built-in node name keeps its row; a node nothing answers for is an error, never a default.
"""

from __future__ import annotations

from dataclasses import dataclass
from fnmatch import fnmatchcase
import re
from types import MappingProxyType

from ..errors import PlanError
from ..reuse import cached
from ..session import current

SPLITS = ("replicated", "column", "row", "vocab", "expert", "collective")
TOKENS = ("rank", "moe", "global")


@dataclass(frozen=True)
class Rule:
    """How one module's weights and ops split. ``nodes``: local node names (the id without its
    ``L3.`` / ``D0.`` prefix); ``weights``: inventory names without ``layers.3.`` / ``mtp.0.``
    (shell patterns). ``group``: ``attn_tp`` or ``moe_tp`` for column/row/vocab splits."""

    name: str
    split: str
    tokens: str
    nodes: tuple[str, ...]
    weights: tuple[str, ...]
    source: str
    group: str = "attn_tp"
    #: op kinds (class names) the row answers for (user rows; the built-ins go by node name)
    kinds: tuple[str, ...] = ()
    #: the collective that must follow the op under a split > 1 (``all_reduce`` after a row split):
    #: informational for the built-ins, whose collectives are nodes of their own in the table
    collective: str | None = None


def _r(name, split, tokens, nodes, weights, source, group="attn_tp") -> Rule:
    return Rule(name, split, tokens, tuple(nodes.split()), tuple(weights.split()), source, group)


#: the sharding table: every lowered node and every inventory tensor matches exactly one row
RULES: tuple[Rule, ...] = (
    _r("embedding", "vocab", "rank", "embed", "embed.weight",
       "[S4] VocabParallelEmbedding(enable_tp=not dp-attention); [V4] VocabParallelEmbedding; all-reduce after"),
    _r("mhc", "replicated", "rank",
       "hc_attn.coeff hc_attn.collapse hc_attn.expand hc_ffn.coeff hc_ffn.collapse hc_ffn.expand "
       "head.coeff head.collapse D.coeff D.collapse",
       "hc_attn_* hc_ffn_* hc_head_*", "[S4] hc_* nn.Parameter fp32, full on every rank; [V4] MHCPreOp/MHCPostOp"),
    _r("norms", "replicated", "rank", "attn_norm ffn_norm head.norm D.norm",
       "attn_norm.weight ffn_norm.weight norm.weight", "[S4] RMSNorm per token on the full hidden state"),
    _r("attn.wq_a", "replicated", "rank", "wq_a q_norm", "attn.wq_a.weight attn.q_norm.weight",
       "[S4] ReplicatedLinear (wqkv_a fuses wq_a+wkv); [V4] fused_wqa_wkv disable_tp=True"),
    _r("attn.wq_b", "column", "rank", "wq_b q_rescale q_rope", "attn.wq_b.weight",
       "[S4] ColumnParallelLinear over attn-TP: n_local_heads = heads/tp; [V4] ColumnParallelLinear"),
    _r("attn.wkv", "replicated", "rank", "wkv kv_norm kv_rope kv_quant swa_write",
       "attn.wkv.weight attn.kv_norm.weight",
       "[S4] ReplicatedLinear, full 512-d latent written on every rank; [V4] inside fused_wqa_wkv"),
    _r("attn.core", "column", "rank", "attn kv_unpack", "attn.attn_sink",
       "[S4] this rank's heads (tp_slice); [VA] n_local_heads (padded to 64 in the kernel: docs)"),
    _r("attn.wo_a", "column", "rank", "wo_a", "attn.wo_a.weight",
       "[S4] ColumnParallelLinear, n_local_groups = o_groups/attn_tp; [V4] is_bmm over local groups"),
    _r("attn.wo_b", "row", "rank", "wo_b", "attn.wo_b.weight",
       "[S4] RowParallelLinear(reduce_results=attn_tp>1); [V4] RowParallelLinear"),
    _r("compressor", "replicated", "rank", "cmp.wkv cmp.wgate cmp.pool cmp.norm cmp.rope cmp.quant cmp.write",
       "attn.compressor.*", "[SC] Compressor.wkv_gate ReplicatedLinear; [VC] fused_wkv_wgate disable_tp=True"),
    _r("indexer", "replicated", "rank",
       "idx.wq_b idx.q_rope idx.q_quant idx.weights_proj idx.score idx.topk idx.block_max idx.candidates "
       "idx.wk idx.wkv idx.wgate idx.k_pool idx.k_norm idx.k_rope idx.k_quant idx.k_write",
       "attn.indexer.*", "[SI] ReplicatedLinear wq_b / weights_proj, n_local_heads = n_heads; [VA] 'no tensor "
       "parallel, just replicated'; V4 indexer compressor [SI, SC]"),
    _r("attn.all_reduce", "collective", "rank", "attn.all_reduce", "",
       "[S4] wo_b RowParallelLinear reduce_results: all-reduce over attn-TP"),
    _r("embed.all_reduce", "collective", "rank", "embed.all_reduce", "",
       "standard VocabParallelEmbedding: masked lookup then all-reduce [S4, V4]"),
    _r("moe.gate", "replicated", "moe", "moe.gate", "ffn.gate.*",
       "[SM] MoEGate.weight full (bf16×bf16→fp32), tid2eid replicated; [V4] NormGateLinear full"),
    _r("moe.shared", "column", "moe", "moe.shared.up moe.shared.swiglu", "ffn.shared_experts.w1.weight "
       "ffn.shared_experts.w3.weight",
       "[SM] DeepseekV2MLP MergedColumnParallel over the TP group; tp_size=1 with an a2a backend (EP)",
       group="moe_tp"),
    _r("moe.shared.down", "row", "moe", "moe.shared.down", "ffn.shared_experts.w2.weight",
       "[SM] RowParallel(reduce_results=False); replicated with an a2a backend", group="moe_tp"),
    _r("moe.experts", "expert", "global", "moe.experts.up moe.experts.swiglu moe.experts.down", "ffn.experts.*",
       "[SM] FusedMoE: experts over EP (DeepEP), intermediate dim over MoE-TP; [V4] FusedMoE / MegaMoE"),
    _r("moe.combine", "replicated", "moe", "moe.combine", "",
       "routed + shared sum per token [SM]"),
    _r("moe.a2a", "collective", "moe", "moe.dispatch moe.combine_a2a",
       "", "[SD] DeepEP dispatch (FP8 + scales) and combine (bf16): each GPU sends its own tokens"),
    _r("moe.collectives", "collective", "rank", "moe.all_gather moe.all_reduce moe.dp_gather", "",
       "[S4] attn_tp_all_gather after an EP MoE; [SM] all-reduce over TP without EP; dp_gather_partial"),
    _r("engram.tables", "column", "rank", "engram.lookup store.engram_table", "engram.embed.weight",
       "[VE] ParallelEngramEmbedding shards the hash columns over TP (part_n_hash_cols = cdiv(24, tp)), "
       "then all-gathers the looked-up rows"),
    _r("engram", "replicated", "rank", "engram.hash engram.proj engram.gate", "engram.*",
       "[VE] Engram.wkv ReplicatedLinear (FP8); q_weight / k_weight replicated"),
    _r("engram.all_gather", "collective", "rank", "engram.all_gather", "",
       "[VE] all-gather over TP of [T, local_cols, 256] bf16"),
    _r("head", "vocab", "rank", "head.proj D.head", "head.weight",
       "[S4] ParallelLMHead (vocab/tp) + LogitsProcessor gather; [AIC] logits GEMM vocab/tp; the DSpark "
       "base-logit head reads the same head.weight"),
    _r("dspark", "replicated", "rank", "D.main_proj D.heads", "main_proj.weight main_norm.weight markov_head.* "
       "confidence_head.* e_proj.weight h_proj.weight enorm.weight hnorm.weight",
       "draft-specific modules: engine sharding UNVERIFIED (sharding-facts §6.2); replicated"),
    _r("vision", "replicated", "rank", "vision.encoder vision.aligner.fc1 vision.aligner.fc2", "vision.* aligner.*",
       "not in the engines' V4 code; replicated"),
    _r("storage", "replicated", "rank", "store.swa store.main_kv store.index_k store.cmp_state store.idx_state "
       "store.candidate_pool", "", "latent KV replicated across attn-TP, split by request across DP "
       "(sharding-facts §2)"),
)

_BY_NODE = {n: r for r in RULES for n in r.nodes}
BUILTIN_NODES = MappingProxyType(_BY_NODE)  # local node name → its built-in row (read-only)
_PREFIX = re.compile(r"^(?:L\d+|D\d+)\.")
_WEIGHT_PREFIX = re.compile(r"^(?:layers|mtp)\.\d+\.")
_EXPERT = re.compile(r"experts\.\d+\.")


def local_name(node_id: str) -> str:
    """A node id without its layer prefix: ``L3.idx.wq_b`` → ``idx.wq_b``."""
    return _PREFIX.sub("", node_id)


def rule_for_node(node_id: str, op=None) -> Rule:
    """The table row of a node (by id or local name, and its op ``op`` where given); a node
    nothing answers for raises, naming the registration call.

    Order: the op's own ``sharding``, the built-in row of the node's local name, then the user
    rows (node-name patterns, then op kinds; :mod:`v41graph.model.user_sharding`).

    >>> rule_for_node("L3.wq_b").split, rule_for_node("L3.idx.wq_b").split
    ('column', 'replicated')
    """
    own = getattr(op, "sharding", None)
    if own is not None:
        return own
    return rule_for_id(node_id, None if op is None else type(op).__name__)


@cached(65536)  # a few thousand ids, asked for by every node of every compile
def rule_for_id(node_id: str, kind: str | None) -> Rule:
    """:func:`rule_for_node` for a node of op kind ``kind`` (a class name) whose op carries no row."""
    rule = _BY_NODE.get(local_name(node_id))
    if rule is None:  # a name the built-in table does not hold: the user rows (model/user_sharding.py)
        rule = _user_rule(node_id, kind)
    if rule is None:
        what = f" (op kind {kind})" if kind else ""
        raise PlanError(f"sharding: no rule for node {node_id!r}{what}: register one with "
                        f"v41graph.extend.register_sharding({kind or repr(local_name(node_id))}, split=...) "
                        f"or give the "
                        f"op a `sharding` rule (model/sharding.py RULES)")
    return rule


class UserRows:
    """A session's user rows, in registration order (kept by :mod:`.user_sharding`), and a number that
    changes with them (a key part for memos of what the table decides)."""

    def __init__(self):
        self.rules: list[Rule] = []
        self.generation = 0


def user_rows() -> UserRows:
    """The current :class:`~v41graph.session.Session`'s user rows."""
    return current().state(user_rows, UserRows)


def _user_rule(node_id: str, kind: str | None) -> Rule | None:
    """The user row of a node: a node-name pattern (id or local name), then its op kind."""
    short = local_name(node_id)
    rules = user_rows().rules
    for r in rules:
        if any(fnmatchcase(node_id, p) or fnmatchcase(short, p) for p in r.nodes):
            return r
    return next((r for r in rules if kind in r.kinds), None) if kind else None


def rule_for_weight(name: str) -> Rule:
    """The table row of an inventory tensor by its checkpoint name.

    >>> rule_for_weight("layers.7.ffn.experts.12.w2.weight").name
    'moe.experts'
    """
    # one lookup per distinct tensor kind: layers and experts differ only in their numbers
    rule = _weight_rule(_EXPERT.sub("experts.N.", _WEIGHT_PREFIX.sub("", name)))
    if rule is None:
        raise PlanError(f"sharding: no rule for weight {name!r} (model/sharding.py RULES)")
    return rule


@cached(None)
def _weight_rule(short: str) -> Rule | None:
    return next((r for r in RULES if any(fnmatchcase(short, p) for p in r.weights)), None)


# the parallel mapping and its two DP spellings live in model/mapping.py (re-exported here: one import path
# for the table and the mapping it is read under)
from .mapping import DP_SPELLINGS, Mapping, mapping_of, sglang_dp_attention  # noqa: E402,F401
