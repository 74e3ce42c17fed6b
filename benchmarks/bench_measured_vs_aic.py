"""v41graph hybrid (OP) against AIConfigurator 0.12 SILICON on DeepSeek-V4-Flash, FP8 experts, h200_sxm.

The four workloads of issue 11 — prefill 8192 at TP1 and TP8/EP8, a decode step of batch 64 at
8192 context at TP1 and TP8/EP8 — priced with ``--cost hybrid`` from the vendored tables (or the
measured extra, or ``--measured-root``), side by side with AIConfigurator's SILICON estimate, the
ratio, and the share of time measured or interpolated. The FP8-expert model is the built-in
config with ``expert_dtype: fp8`` (as sgl-project/DeepSeek-V4-Flash-FP8).

Run: ``python benchmarks/bench_measured_vs_aic.py [--json] [--measured-root DIR]``.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from v41graph import Plan, Request, load_model
from v41graph.costs.measured.tiers import CostMode
from v41graph.model.config import builtin_config_text
from v41graph.passes import compile

#: AIConfigurator 0.12.0 SILICON mode, DeepSeek-V4-Flash FP8 experts, h200_sxm, SGLang (issue 11)
AIC_SILICON_MS = {"prefill 8192, TP1": 409.07, "prefill 8192, TP8 EP8": 211.86,
                  "decode 64 @ 8192, TP1": 54.31, "decode 64 @ 8192, TP8 EP8": 14.81}
WORKLOADS = {"prefill 8192, TP1": ([Request.prefill(8192)], 1, 1),
             "prefill 8192, TP8 EP8": ([Request.prefill(8192)], 8, 8),
             "decode 64 @ 8192, TP1": ([Request.decode(8192, copies=64)], 1, 1),
             "decode 64 @ 8192, TP8 EP8": ([Request.decode(8192, copies=64)], 8, 8)}


def fp8_expert_model():
    """The built-in V4-Flash config with ``expert_dtype: fp8``."""
    config = json.loads(builtin_config_text("deepseek-v4-flash"))
    config["expert_dtype"] = "fp8"
    path = Path(tempfile.mkdtemp()) / "deepseek-v4-flash-fp8.json"
    path.write_text(json.dumps(config))
    return load_model(path)


def rows(measured_root: str | None = None) -> list[dict]:
    model = fp8_expert_model()
    out = []
    for name, (requests, tp, ep) in WORKLOADS.items():
        plan = Plan(requests, fusion="two-pass", tp=tp, ep=ep, moe_a2a="none")
        report = compile(model, plan, "h200_sxm", cost=CostMode("hybrid", measured_root=measured_root)
                          ).report("schedule")
        cov = report.coverage
        ms = report.total_time_s * 1e3
        moe = next((n for n in cov["nodes"] if n["node"] == "L5.moe.experts"), None)
        out.append({"workload": name, "v41graph_ms": ms, "aic_silicon_ms": AIC_SILICON_MS[name],
                    "ratio": ms / AIC_SILICON_MS[name], "measured_or_interpolated": cov["measured_or_interpolated"],
                    "tiers_ms": {k: v * 1e3 for k, v in cov["total"]["time_s"].items()},
                    "routed_experts": None if moe is None else
                    f"{moe['tier']} ({moe['parts'][0]['coords'].get('moe_dtype')} table)",
                    "data": cov["data"]["source"]})
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--measured-root", default=None)
    args = parser.parse_args(argv)
    table = rows(args.measured_root)
    if args.json:
        print(json.dumps(table, indent=2))
        return 0
    print(f"{'workload':<28}{'v41graph hybrid':>16}{'AIC SILICON':>13}{'ratio':>7}{'meas+interp':>13}  experts")
    for r in table:
        print(f"{r['workload']:<28}{r['v41graph_ms']:>13.2f} ms{r['aic_silicon_ms']:>10.2f} ms{r['ratio']:>7.2f}"
              f"{r['measured_or_interpolated']:>12.1%}  {r['routed_experts']}")
    for r in table:
        print(f"  {r['workload']}: " + " · ".join(f"{k} {v:.2f} ms" for k, v in r["tiers_ms"].items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
