"""The parallel mapping a plan runs under: TP / EP / DP degrees, the GPUs they take, and SGLang's
DP-attention spelling (docs/architecture.md; the rows each op splits by are in ``model/sharding.py``).
"""

from __future__ import annotations

from dataclasses import dataclass
from ..errors import PlanError
from .config import ModelSpec

#: the MoE's all-to-all backend, SGLang's ``--moe-a2a-backend`` (server_args.py ``MOE_A2A_BACKEND_CHOICES``,
#: default ``"none"``): ``deepep`` dispatches each GPU's tokens to the experts' ranks and combines them
#: back (DeepEP, [SD]); ``none`` keeps every token on every GPU of the MoE group, each GPU runs its own
#: experts (EP) or its share of every expert (MoE-TP) on all of them, and one all-reduce sums the
#: partial outputs ([SM] ``DeepseekV2MoE.forward_normal``: ``tensor_model_parallel_all_reduce``)
MOE_A2A = ("deepep", "none")

#: a row of the sharding table (model/sharding.py ``Rule``; not imported: that module imports this one)
Rule = "v41graph.model.sharding.Rule"


@dataclass(frozen=True)
class Mapping:
    """Parallel degrees: attention ``tp``, attention ``dp``, expert ``ep`` (see the module doc)."""

    tp: int = 1
    dp: int = 1
    ep: int = 1
    redundant: int = 0  # redundant routed-expert slots over the EP ranks (EPLB, costs/expert_loads.py)
    a2a: str = "deepep"  # the MoE all-to-all backend (MOE_A2A): what EP sends over the links

    @property
    def gpus(self) -> int:
        return max(self.tp * self.dp, self.ep)

    @property
    def attention_group(self) -> int:
        """GPUs that hold one DP rank's tokens: its attn-TP ranks and their replicas."""
        return self.gpus // self.dp

    @property
    def moe_tp(self) -> int:
        """Ways each routed expert's intermediate dimension is split (SGLang MoE-TP)."""
        return self.gpus // self.ep

    @property
    def dispatches(self) -> bool:
        """Whether the MoE moves tokens to the experts' GPUs (EP over an all-to-all backend) rather than
        every GPU of the group seeing every token (``a2a="none"``, or no EP)."""
        return self.ep > 1 and self.a2a != "none"

    def group_size(self, rule: Rule) -> int:
        if rule.group == "attn_tp":
            return self.tp
        # the shared expert: TP over the whole group unless an a2a backend replicates it ([SM] tp_size=1)
        return self.moe_tp if self.dispatches else self.gpus

    def weight_divisor(self, rule: Rule) -> int:
        """How many GPUs share one copy of the rule's weights."""
        if rule.split in ("column", "row", "vocab"):
            return self.group_size(rule)
        return self.gpus if rule.split == "expert" else 1

    def token_divisor(self, rule: Rule) -> int:
        """How the rule's tokens are divided beyond the DP split lowering already made."""
        return self.attention_group if rule.tokens == "moe" and self.dispatches else 1

    def work_divisor(self, rule: Rule) -> int:
        """How many GPUs share the work of one node of this rule over its (lowered) tokens."""
        if rule.split == "collective":
            return self.token_divisor(rule)  # the rule prices bytes per GPU already
        return self.weight_divisor(rule) * self.token_divisor(rule)

    def check(self, model: ModelSpec) -> "Mapping":
        """Degrees against the model: heads, wo_a groups and experts divisible; tp·dp and ep nested."""
        for name in ("tp", "dp", "ep"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise PlanError(f"plan {name}: must be a positive integer, got {v!r}")
        if model.num_heads % self.tp:
            raise PlanError(f"plan tp: {self.tp} does not divide the {model.num_heads} attention heads")
        if model.o_groups % self.tp:
            raise PlanError(f"plan tp: {self.tp} does not divide the {model.o_groups} wo_a output groups "
                            f"(the engines split wo_a by group)")
        if model.n_routed_experts % self.ep:
            raise PlanError(f"plan ep: {self.ep} does not divide the {model.n_routed_experts} routed experts")
        if self.gpus % (self.tp * self.dp) or self.gpus % self.ep:
            raise PlanError(f"plan ep: {self.ep} and tp × dp = {self.tp} × {self.dp} = {self.tp * self.dp} "
                            f"must divide one another (the GPU count is the larger)")
        return self


def mapping_of(plan) -> Mapping:
    """The mapping of anything with ``tp``, ``dp`` and ``ep`` (a Plan), its redundant experts and a2a backend."""
    return Mapping(plan.tp, plan.dp, plan.ep, getattr(plan, "ep_redundant", 0), getattr(plan, "moe_a2a", "deepep"))


#: the two ways a DP degree is spelled, and what each means for the GPU count (named in every output)
DP_SPELLINGS = {
    "replicas": "--dp: attention DP ranks of tp GPUs each (GPUs = tp × dp; the layout above)",
    "attn-dp": "SGLang --tp T --dp D --enable-dp-attention: attention DP inside the TP group "
               "(GPUs = T, attention TP = T / D) [S4]; sharding-facts notation: attn-TP = tp/dp",
}


def sglang_dp_attention(tp: int, dp: int, ep: int = 1) -> Mapping:
    """SGLang's spelling ``--tp T --dp D --enable-dp-attention`` as a :class:`Mapping`.

    SGLang's TP group is all ``T`` GPUs; DP attention splits it into ``D`` attention groups of
    ``T / D`` attn-TP ranks, each with its own requests and KV pool ([S4] ``deepseek_v4.py``;
    ``reference/sharding-facts.md`` "Notation" and §2 "SGLang DP attention"). So the GPU count is
    ``T``, not ``T × D`` as with this module's own ``dp`` (``DP_SPELLINGS``).

    >>> m = sglang_dp_attention(8, 8, 8)
    >>> (m.tp, m.dp, m.ep, m.gpus)
    (1, 8, 8, 8)
    >>> sglang_dp_attention(8, 3)
    Traceback (most recent call last):
    ...
    v41graph.errors.PlanError: --attn-dp: 3 does not divide --tp 8 (SGLang's DP attention splits the TP group ...)
    """
    if tp % dp:
        raise PlanError(f"--attn-dp: {dp} does not divide --tp {tp} (SGLang's DP attention splits the TP group "
                        f"into attention groups of tp / dp GPUs)")
    return Mapping(tp=tp // dp, dp=dp, ep=ep)
