"""The SOL gap as text and as a plot (``v41graph fpm gap``); both take ``Gap.to_dict()``.

>>> g = {"table": "t", "gpu": "gb300", "boundary": "b", "bases": ["sol"], "rows": [], "summary": [
...     {"phase": "decode", "batch": 1, "points": 3, "observed_ms": [150.0, 154.0], "sol_ms": [0.55, 0.56],
...      "median_efficiency": 0.0036, "efficiency_range": [0.0036, 0.0037], "elasticity": None}]}
>>> print(gap_text(g).splitlines()[-1])
  decode  b1     3  150.00–154.00   0.550–0.560     0.3600%  0.3600–0.3700%     278×            -
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..plots import _save, pyplot

_COLOURS = {("prefill", 1): "tab:blue", ("prefill", 2): "tab:cyan", ("decode", 1): "tab:red",
            ("decode", 2): "tab:orange"}


def gap_text(g: dict[str, Any]) -> str:
    """Per (phase, batch): measured and SOL ranges, efficiency (SOL / measured), gap, elasticity."""
    lines = [f"table: {g['table']}  (GPU {g['gpu']})",
             f"measured: {g['boundary']}",
             "basis: v41graph SOL of the same shape on the table's GPU and policies"
             + (" (and hybrid)" if "hybrid" in g["bases"] else "")
             + "; efficiency = SOL / measured (1 = at the bound), gap = measured / SOL",
             "elasticity: slope of log measured on log SOL within the partition (1: follows the bound; "
             "0: flat; '-': SOL spans too little)",
             "  phase  batch pts  measured ms     SOL ms        median eff  eff range        gap   elasticity"]
    for s in g["summary"]:
        lo, hi = s["efficiency_range"]
        el = "-" if s["elasticity"] is None else f"{s['elasticity']:.3f}"
        lines.append(f"  {s['phase']:<7} b{s['batch']:<3} {s['points']:>3}  {s['observed_ms'][0]:.2f}–"
                     f"{s['observed_ms'][1]:.2f}   {s['sol_ms'][0]:.3f}–{s['sol_ms'][1]:.3f}   "
                     f"{s['median_efficiency'] * 100:8.4f}%  {lo * 100:.4f}–{hi * 100:.4f}%  "
                     f"{1 / s['median_efficiency']:6.0f}×  {el:>11}")
    for basis, fit in (g.get("runtime_fit") or {}).items():
        from .serving_text import runtime_terms
        lines.append(f"runtime terms on {basis} (the engine's own cost, fitted; chosen by leave-one-out): "
                     f"{runtime_terms(fit)}; "
                     f"leave-one-out MAPE {fit['loo_error']['mape']:.2f} %, worst {fit['loo_error']['worst']:.2f} % "
                     f"over {fit['points']} forwards")
    return "\n".join(lines)


def plot_gap(gaps: list[dict[str, Any]], path: str | Path) -> str:
    """One row per table: measured and SOL time vs tokens (new + past KV), and efficiency vs tokens."""
    plt = pyplot()
    fig, axes = plt.subplots(len(gaps), 2, figsize=(11, 3.6 * len(gaps)), squeeze=False)
    for (left, right), g in zip(axes, gaps):
        for (phase, batch), colour in _COLOURS.items():
            rows = sorted((r for r in g["rows"] if (r["phase"], r["batch_size"]) == (phase, batch)),
                          key=lambda r: r["total_prefill_tokens"] + r["total_kv_read_tokens"])
            if not rows:
                continue
            x = [r["total_prefill_tokens"] + r["total_kv_read_tokens"] for r in rows]
            label = f"{phase} b{batch}"
            left.scatter(x, [r["observed_ms"] for r in rows], s=10, color=colour, label=f"{label} measured")
            left.scatter(x, [r["sol_ms"] for r in rows], s=10, color=colour, marker="x", label=f"{label} SOL")
            right.scatter(x, [r["efficiency"] * 100 for r in rows], s=10, color=colour, label=label)
        for ax in (left, right):
            ax.set_xscale("symlog", linthresh=1)
            ax.set_yscale("log")
            ax.set_xlabel("tokens in the forward (new + past KV, summed over the batch)")
            ax.grid(True, alpha=0.3)
        left.set_ylabel("ms")
        left.set_title(f"{g['table']}: measured vs SOL", fontsize=9)
        right.set_ylabel("efficiency = SOL / measured (%)")
        right.set_title(f"{g['table']}: efficiency against the bound", fontsize=9)
        left.legend(fontsize=6, ncol=2)
        right.legend(fontsize=6)
    fig.tight_layout()
    return _save(fig, path) + f" (SOL gap of {', '.join(g['table'] for g in gaps)})"


__all__ = ["gap_text", "plot_gap"]
