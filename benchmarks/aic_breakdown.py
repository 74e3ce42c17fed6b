"""AIConfigurator's per-op latencies for the four workloads of benchmarks/bench_measured_vs_aic.py.

Needs ``aiconfigurator-core`` (0.12.0; the ``measured`` extra). The calls: ``get_database("h200_sxm",
"sglang", "0.5.14")`` (SILICON, or ``set_default_database_mode(DatabaseMode.SOL)`` for SOL),
``get_model("sgl-project/DeepSeek-V4-Flash-FP8", ModelConfig(tp_size=TP, moe_tp_size=1 if EP > 1 else TP,
moe_ep_size=EP), "sglang")`` — no ``moe_backend``: SGLang without DeepEP, i.e. ``--moe-a2a-backend none`` —
and ``get_backend("sglang")._run_static_breakdown(model, db, RuntimeConfig(batch_size=B, isl=8192, osl=2),
"static_ctx" | "static_gen", 32, 1.0, include_energy=False)``. In decode AIConfigurator runs the routed MoE
beside the shared expert (``OverlapOp``: max of the two); :func:`breakdown` lists the ops of both groups
(the overlap flattened) so each family has its own figure, and keeps AIConfigurator's total.
"""

from __future__ import annotations

#: AIConfigurator op names (without the context_/generation_ prefix) → v41graph's comparison families
AIC_FAMILY = {"embedding": "embedding", "mhc_pre": "mHC + norms", "mhc_post": "mHC + norms",
              "attn_norm": "mHC + norms", "ffn_norm": "mHC + norms", "attention": "attention module",
              "shared_gate_up_gemm": "shared expert", "shared_act_gate": "shared expert",
              "shared_ffn2_gemm": "shared expert", "router_gemm": "router", "moe": "routed experts",
              "moe_pre_dispatch": "communication", "moe_post_dispatch": "communication", "p2p": "communication",
              "logits_gemm": "head"}
MODEL = "sgl-project/DeepSeek-V4-Flash-FP8"


def available() -> bool:
    """Whether aiconfigurator-core can be imported here."""
    try:
        import aiconfigurator_core.sdk  # noqa: F401
    except ImportError:
        return False
    return True


def breakdown(workloads: dict, sol: bool = False, model_name: str = MODEL) -> dict:
    """Per workload: AIConfigurator's total (ms) and its op latencies (ms) summed by family; ``model_name``
    the Hugging Face id AIConfigurator prices (the FP8-expert one by default)."""
    from aiconfigurator_core.sdk import common
    from aiconfigurator_core.sdk.perf_database import get_database

    db = get_database("h200_sxm", "sglang", "0.5.14")
    # get_database hands out one cached database: set its mode for this call and put it back after, or a
    # SOL call would turn every later SILICON call in the process into SOL
    before = db.get_default_database_mode()
    db.set_default_database_mode(common.DatabaseMode.SOL if sol else common.DatabaseMode.SILICON)
    try:
        return _breakdown(db, workloads, model_name)
    finally:
        db.set_default_database_mode(before)


def _breakdown(db, workloads: dict, model_name: str) -> dict:
    from aiconfigurator_core.sdk import config
    from aiconfigurator_core.sdk.backends.factory import get_backend
    from aiconfigurator_core.sdk.models import get_model

    backend, out = get_backend("sglang"), {}
    for name, (batch, tp, ep, phase) in workloads.items():
        mc = config.ModelConfig(tp_size=tp, moe_tp_size=1 if ep > 1 else tp, moe_ep_size=ep)
        runtime = config.RuntimeConfig(batch_size=batch, isl=8192, osl=2)
        mode = "static_ctx" if phase == "prefill" else "static_gen"
        # the overlap flattened, its total rebuilt as OverlapOp's max(sum_a, sum_b) (operations/overlap.py):
        # the engine keeps the first op plan it sees for a model, so only the flattened one is ever run
        model = get_model(model_name, mc, "sglang")
        groups = _flatten(model)
        flat = _ops(backend._run_static_breakdown(model, db, runtime, mode, 32, 1.0, include_energy=False), phase)
        groups = groups if phase == "decode" else []
        overlapped = {n for g in groups for n in g}
        total = sum(v for k, v in flat.items() if k not in overlapped)
        total += max((sum(flat[n] for n in g) for g in groups), default=0.0)
        families: dict[str, float] = {}
        for op, ms in flat.items():
            fam = AIC_FAMILY[op.split("_", 1)[1]]
            families[fam] = families.get(fam, 0.0) + ms
        out[name] = {"total_ms": total, "families_ms": families}
    return out


def _flatten(model) -> list[list[str]]:
    """Both phases' OverlapOps replaced by their two groups in sequence; the decode groups' op names."""
    groups: list[list[str]] = []
    for attr in ("context_ops", "generation_ops"):
        ops = []
        for op in getattr(model, attr):
            if type(op).__name__ == "OverlapOp":
                groups = [[o._name for o in op._group_a], [o._name for o in op._group_b]]
                ops += list(op._group_a) + list(op._group_b)
            else:
                ops.append(op)
        setattr(model, attr, ops)
    return groups


def _ops(result, phase: str) -> dict[str, float]:
    latencies = result[0] if phase == "prefill" else result[2]
    return {k: float(v) for k, v in latencies.items()}
