"""v41graph SOL against AIConfigurator's SOL on DeepSeek-V4-Flash / h200_sxm, four workloads, by op family.

AIConfigurator's figures are constants below (it is not a dependency). They were produced with
``aiconfigurator-core`` 0.12.0 (``pip install aiconfigurator==0.12.0``), SGLang backend, the
h200_sxm 0.5.14 database in SOL mode (``db.set_default_database_mode(DatabaseMode.SOL)``),
``get_model("deepseek-ai/DeepSeek-V4-Flash", ModelConfig(tp_size=TP, moe_tp_size=1 if EP > 1 else
TP, moe_ep_size=EP), "sglang")`` and ``backend._run_static_breakdown(model, db,
RuntimeConfig(batch_size=B, isl=8192, osl=2), "static_ctx" | "static_gen", 32, 1.0,
include_energy=False)``: the per-op dicts, in ms. The totals are the issue-9 table's.

Run: ``python benchmarks/aiconfigurator_compare.py`` (about a minute). docs/aiconfigurator-comparison.md
explains every family that differs by more than 5 %.
"""

from __future__ import annotations

import re

from v41graph import Plan, Request, load_model
from v41graph.passes import compile
from v41graph.ir.ops import Fused

#: AIConfigurator 0.12.0 SOL breakdowns (ms), keyed by workload; ops summed into v41graph's families
AIC = {
    "prefill 8192, TP1": {"embedding": 0.014, "mhc + norms": 9.647 + 1.202 + 9.633 + 1.202, "attention": 73.998,
                          "shared expert": 5.976 + 0.902 + 2.988, "router": 0.747, "routed experts": 53.78,
                          "communication": 0.0, "logits": 0.221},
    "prefill 8192, TP8 EP8": {"embedding": 0.014, "mhc + norms": 9.647 + 1.202 + 9.633 + 1.202, "attention": 17.386,
                              "shared expert": 0.747 + 0.113 + 0.373, "router": 0.747, "routed experts": 6.723,
                              "communication": 11.222 + 11.222, "logits": 0.028},
    # decode: AIConfigurator overlaps the routed MoE (router + dispatch + experts) with the shared
    # expert (OverlapOp "generation_moe_overlap"), so those three families are one figure there
    "decode 64 @ 8192, TP1": {"embedding": 0.0, "mhc + norms": 0.089 + 0.009 + 0.089 + 0.009, "attention": 1.54,
                              "MoE (overlapped)": 28.905, "logits": 0.224},
    "decode 64 @ 8192, TP8 EP8": {"embedding": 0.0, "mhc + norms": 0.089 + 0.009 + 0.089 + 0.009,
                                  "attention": 0.465, "MoE (overlapped)": 3.809, "logits": 0.028},
}
AIC_TOTAL = {"prefill 8192, TP1": 160.310, "prefill 8192, TP8 EP8": 70.259, "decode 64 @ 8192, TP1": 30.867,
             "decode 64 @ 8192, TP8 EP8": 4.500}

PLANS = {
    "prefill 8192, TP1": Plan([Request.prefill(8192)]),
    "prefill 8192, TP8 EP8": Plan([Request.prefill(8192)], tp=8, ep=8),
    "decode 64 @ 8192, TP1": Plan([Request.decode(8192, copies=64)]),
    "decode 64 @ 8192, TP8 EP8": Plan([Request.decode(8192, copies=64)], tp=8, ep=8),
}

_FAMILIES = (  # (family, local node-name pattern); first match wins
    ("embedding", r"embed$"),
    ("communication", r".*(all_reduce|all_gather|dispatch|combine_a2a|dp_gather)$"),
    ("mhc + norms", r"(hc_\w+\.\w+|attn_norm|ffn_norm|head\.(coeff|collapse|norm))$"),
    ("shared expert", r"moe\.shared\..*"),
    ("router", r"moe\.gate$"),
    ("routed experts", r"moe\.(experts\..*|combine)$"),
    ("logits", r"head\.proj$"),
    ("attention", r".*"),  # the attention sublayer: projections, compressor, indexer, core
)


def family(node_id: str) -> str:
    local = re.sub(r"^[LD]\d+\.", "", node_id)
    return next(f for f, pattern in _FAMILIES if re.match(pattern, local))


def breakdown(model, plan) -> tuple[float, dict[str, float]]:
    """(SOL total, Σ node time by family) in ms; a fused module counts in its members' family
    (``mixed: a + b`` when they differ)."""
    compiled = compile(model, plan, "h200_sxm")
    out: dict[str, float] = {}
    for nid, slot in compiled.graph.annotations["schedule"].items():
        node = compiled.graph.nodes[nid]
        members = node.op.members if isinstance(node.op, Fused) else (nid,)
        names = sorted({family(m) for m in members})
        key = names[0] if len(names) == 1 else "mixed: " + " + ".join(names)
        out[key] = out.get(key, 0.0) + float(slot.sol.time) * 1e3
    return compiled.report("schedule").total_time_s * 1e3, out


def _fold(ours: dict[str, float], theirs: dict[str, float]) -> dict[str, float]:
    """Our families folded onto AIConfigurator's where it merges them (decode's overlapped MoE)."""
    if "MoE (overlapped)" not in theirs:
        return ours
    folded = {k: v for k, v in ours.items() if k not in ("shared expert", "router", "routed experts", "communication")}
    folded["MoE (overlapped)"] = sum(ours.get(k, 0.0) for k in ("shared expert", "router", "routed experts",
                                                                  "communication"))
    return folded


def main() -> None:
    model = load_model("deepseek-v4-flash")
    print("DeepSeek-V4-Flash (FP4 experts) on h200_sxm, SOL; fusion: the V4 default (two-pass)\n")
    print(f"{'workload':<28}{'AIConfigurator':>16}{'v41graph':>12}{'ratio':>8}")
    rows = {}
    for name, plan in PLANS.items():
        total, fams = breakdown(model, plan)
        rows[name] = (total, fams)
        print(f"{name:<28}{AIC_TOTAL[name]:>13.3f} ms{total:>9.3f} ms{total / AIC_TOTAL[name]:>8.2f}")
    for name, (total, fams) in rows.items():
        theirs, ours = AIC[name], _fold(fams, AIC[name])
        print(f"\n{name}: Σ node time by op family (ms; v41graph's total is its critical path, not this sum)")
        print(f"  {'family':<30}{'AIConfigurator':>15}{'v41graph':>10}{'ratio':>8}")
        for fam in sorted(set(theirs) | set(ours), key=lambda f: -max(theirs.get(f, 0.0), ours.get(f, 0.0))):
            a, b = theirs.get(fam), ours.get(fam, 0.0)
            ratio = "-" if not a else f"{b / a:.2f}"
            flag = "  *" if a is not None and a > 0 and abs(b / a - 1) > 0.05 else ""
            print(f"  {fam:<30}{'-' if a is None else f'{a:.3f}':>15}{b:>10.3f}{ratio:>8}{flag}")


if __name__ == "__main__":
    main()
