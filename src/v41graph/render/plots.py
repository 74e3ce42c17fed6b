"""Plots (extra ``v41graph[plot]``: matplotlib, Agg backend), written as PNG or SVG by suffix.

- :func:`plot_latency` — TTFT (one prefill forward) vs prompt length, a line per replay policy;
- :func:`plot_memory` — cache memory vs context, stacked by owner (each KV source's main KV and
  index K, the SWA rings, compressor state);
- :func:`plot_ops` — time by op family, stacked bars, one bar per (prompt, replay);
- :func:`plot_pareto` — a sweep's tokens/s per GPU vs per user, the frontier marked.

Each returns a one-line message; without matplotlib each raises a :class:`V41Error` naming
the extra. SVG output carries no date and fixed ids, so equal inputs give equal files. The
figures come from ``analysis/plot_data.py`` (a renderer never compiles); a sweep's rows from
``analysis/sweep/sweep_grid.py``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from ..errors import V41Error
from ..model.formats import GIB

EXTRA = "v41graph[plot]"


def pyplot():
    """matplotlib.pyplot on the Agg backend, or a one-line error naming the extra."""
    try:
        import matplotlib
    except ImportError:
        raise V41Error(f"plot: needs matplotlib; install the extra: pip install '{EXTRA}'") from None
    matplotlib.use("Agg")
    matplotlib.rcParams["svg.hashsalt"] = "v41graph"  # stable ids in SVG output
    import matplotlib.pyplot as plt
    return plt


def _save(fig, path: str | Path) -> str:
    suffix = Path(path).suffix.lower()
    if suffix not in (".png", ".svg"):
        raise V41Error(f"plot output: unsupported suffix {suffix or '(none)'!r} in {str(path)!r} (use .png or .svg)")
    metadata = {"Date": None} if suffix == ".svg" else {"Software": "v41graph"}
    fig.savefig(path, dpi=120, bbox_inches="tight", metadata=metadata)
    import matplotlib.pyplot as plt
    plt.close(fig)
    return f"wrote {suffix[1:].upper()} to {path}"


def plot_latency(series: dict[str, Any], path: str | Path) -> str:
    """TTFT vs prompt length, one line per replay policy (``analysis.plot_data.latency_series``)."""
    plt = pyplot()
    x = series["x"]
    fig, ax = plt.subplots(figsize=(7, 4.2))
    for replay, ttft in series["ttft_s"].items():
        ax.plot(x, ttft * 1e3, marker=".", label=f"replay {replay}")
    ax.set(xscale="log", yscale="log", xlabel="prompt length (tokens)", ylabel="TTFT, one prefill forward (ms)",
           title=f"{series['model']} · {series['hardware']} · tp{series['tp']} ep{series['ep']} "
                 f"· batch {series['batch']}")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    return _save(fig, path)


def plot_memory(series: dict[str, Any], path: str | Path) -> str:
    """Cache memory of one request vs context, stacked by owner, in GiB (``analysis.plot_data.memory_series``)."""
    plt = pyplot()
    x, layers = series["x"], series["bytes"]
    fig, ax = plt.subplots(figsize=(7, 4.2))
    ax.stackplot(x, *[np.array(v) / GIB for v in layers.values()], labels=list(layers))
    ax.set(xscale="log", xlabel="context (tokens)", ylabel="cache memory per request (GiB)",
           title=f"{series['model']}: cache memory by owner")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(loc="upper left", fontsize=8)
    return _save(fig, path)


def plot_ops(data: dict[str, Any], path: str | Path) -> str:
    """Prefill time by op family, one stacked bar per (prompt, replay) (``analysis.plot_data.ops_bars``)."""
    from ..analysis.families import FAMILIES, SPLIT_RULE
    plt = pyplot()
    bars, labels, model, hardware = data["by_family_s"], data["labels"], data["model"], data["hardware"]
    families = [f for f in FAMILIES if any(b.get(f, 0.0) > 0 for b in bars)]
    fig, ax = plt.subplots(figsize=(max(6, 1.1 * len(bars) + 3), 4.5))
    bottom = np.zeros(len(bars))
    colours = plt.get_cmap("tab20")(np.linspace(0, 1, max(len(families), 2)))  # distinct, in family order
    for family, colour in zip(families, colours):
        h = np.array([b.get(family, 0.0) for b in bars]) * 1e3
        ax.bar(labels, h, bottom=bottom, label=family, color=colour)
        bottom += h
    ax.set(ylabel="time summed over nodes (ms)",
           title=f"{model} · {hardware} · tp {data['tp']} · ep {data['ep']} · SOL: prefill time by op family")
    fig.text(0.01, 0.01, SPLIT_RULE, fontsize=7)
    ax.legend(fontsize=7, bbox_to_anchor=(1.01, 1), loc="upper left")
    return _save(fig, path)


def point_label(row: dict) -> str:
    """A sweep point as its mapping and batch: ``tp8 ep8 dp1 · b128``.

    >>> point_label({"tp": 8, "ep": 8, "dp": 1, "batch": 128})
    'tp8 ep8 dp1 · b128'
    """
    def n(key):  # a sweep file read back gives floats; a hand-made row may lack a key
        v = row.get(key)
        return "?" if v is None else int(v) if isinstance(v, float) and v.is_integer() else v
    return f"tp{n('tp')} ep{n('ep')} dp{n('dp')} · b{n('batch')}"


def pareto_title(rows: list[dict]) -> str:
    """The models, hardware and cost bases of the plotted rows, joined where several.

    >>> pareto_title([{"model": "m", "hardware": "h200_sxm", "cost_mode": "sol"}])
    'm · h200_sxm · SOL: Pareto frontier'
    """
    def names(key):
        return ", ".join(dict.fromkeys(str(r.get(key)) for r in rows))
    return f"{names('model')} · {names('hardware')} · {names('cost_mode').upper()}: Pareto frontier"


def plot_pareto(result, path: str | Path, *, x: str = "tok_s_per_gpu", y: str = "tok_s_per_user") -> str:
    """Every valid row of a sweep as a point, the Pareto rows joined as the frontier."""
    rows = [r for r in result.rows if r.get("valid") and r.get(x) is not None and r.get(y) is not None]
    if not rows:
        notes = sorted({r.get("fit_note") for r in result.rows if r.get("fit_note")})
        raise V41Error(f"plot pareto: no valid row has both {x} and {y}" + (f" ({notes[0]})" if notes else ""))
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6.5, 4.5))
    ax.scatter([r[x] for r in rows], [r[y] for r in rows], s=14, color="#9e9e9e", label="points")
    front = sorted((r for r in rows if r.get("pareto")), key=lambda r: r[x])
    if front:
        ax.plot([r[x] for r in front], [r[y] for r in front], "-o", color="#d62728", label="Pareto frontier")
    for r in rows:  # each point says what it is: its mapping and batch
        ax.annotate(point_label(r), (r[x], r[y]), fontsize=6, xytext=(3, 3), textcoords="offset points")
    names = {"tok_s_per_gpu": "tokens/s per GPU", "tok_s_per_user": "tokens/s per user"}
    ax.set(xlabel=names.get(x, x), ylabel=names.get(y, y), title=pareto_title(rows))
    ax.grid(True, alpha=0.3)
    ax.legend()
    return _save(fig, path)
