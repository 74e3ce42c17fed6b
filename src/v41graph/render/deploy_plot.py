"""The Pareto plot of ``v41graph deploy``: tokens/s per GPU against tokens/s per user, one point per
candidate that meets the SLA analytically (the SLA applied: rejected ones are not drawn), each
mode's front joined, the picks labelled, model / hardware / basis in the title. Extra ``plot``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .plots import _save, pyplot

_COLOURS = {"aggregated": "tab:blue", "disaggregated": "tab:orange"}


def _front(points):
    """Points on the upper-right front (no other point higher in both), by tokens/s per user."""
    out, best = [], -1.0
    for x, y in sorted(points, key=lambda p: (-p[0], -p[1])):
        if y > best:
            out.append((x, y))
            best = y
    return sorted(out)


def deploy_pareto(data: dict[str, Any], path: str | Path, basis: str) -> str:
    """Write the plot to ``path`` (.png or .svg); returns a one-line message."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(8, 5.5))
    for mode, colour in _COLOURS.items():
        pts = [(c["analytic"]["tokens_per_s_per_user"], c["analytic"]["tokens_per_s_per_gpu"])
               for c in data["candidates"] if c["mode"] == mode and c["status"] != "rejected"]
        if not pts:
            continue
        ax.scatter(*zip(*pts), s=10, alpha=0.35, color=colour, label=f"{mode} ({len(pts)} meet the SLA)")
        ax.plot(*zip(*_front(pts)), color=colour, lw=1.5)
        pick = data["picks"].get(mode)
        if pick:
            x, y = pick["analytic"]["tokens_per_s_per_user"], pick["analytic"]["tokens_per_s_per_gpu"]
            ax.scatter([x], [y], s=80, marker="*", color=colour, edgecolor="black", zorder=3)
            ax.annotate(f"{mode} pick: {pick['label']}", (x, y), textcoords="offset points", xytext=(6, 6),
                        fontsize=7)
    q = data["question"]
    ax.axvline(1.0 / q["tpot_s"], color="grey", ls="--", lw=0.8)
    ax.set_xlabel("tokens/s per user (1 / TPOT)")
    ax.set_ylabel("tokens/s per GPU")
    ax.set_title(f"{data['model']} on up to {q['gpus']} × {data['hardware']} — basis {basis}\n"
                 f"SLA p{q['percentile']:g} TTFT ≤ {q['ttft_s'] * 1e3:g} ms, TPOT ≤ {q['tpot_s'] * 1e3:g} ms "
                 f"(dashed: the TPOT bound)", fontsize=9)
    if ax.get_legend_handles_labels()[0]:  # no candidate met the SLA: no legend (matplotlib warns on an empty one)
        ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    _save(fig, path)
    plt.close(fig)
    return f"Pareto plot: {path}"
