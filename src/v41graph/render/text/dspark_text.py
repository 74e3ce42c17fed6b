"""Text of the DSpark verify-length table (``analysis/serving/dspark_verify.py`` computes it; this only formats).

The table is laid out by hand: a mark beside the chosen row and a reason line under each batch,
and the README shows it as it is.
"""

from __future__ import annotations

from typing import Any

__all__ = ["dspark_text"]


def dspark_text(data: dict[str, Any]) -> str:
    """Readable form of :func:`dspark_summary`."""
    bound = f", ITL bound {1e3 * data['itl_bound_s']:g} ms" if data["itl_bound_s"] else ""
    mp = " · ".join(f"{k} {v}" for k, v in data["mapping"].items())
    lines = [f"DSpark verify length — {data['model']} on {data['hardware']} ({mp}), context {data['context']:,}{bound}",
             "acceptance  " + " ".join(f"{a:g}" for a in data["acceptance"]),
             "survival    " + " ".join(f"{s:.4g}" for s in data["prefix_survival"])]
    for b in data["batches"]:
        lines += [f"\nbatch {b['batch']}:", "   k  E[emitted]   forward ms   commit ms    step ms     tokens/s"]
        for p in b["points"]:
            mark = "  <- chosen" if p["k"] == b["chosen_k"] else ""
            lines.append(f"  {p['k']:>2}  {p['expected_emitted']:>10.4f}  {1e3 * p['forward_s']:>11.4f}  "
                         f"{1e3 * p['commit_s']:>10.5f}  {1e3 * p['step_s']:>9.4f}  {p['tokens_per_s']:>11.1f}{mark}")
        lines.append(f"  chosen: {'none' if b['chosen_k'] is None else 'k=' + str(b['chosen_k'])} — {b['reason']}")
    if data["load_note"]:
        lines.append("\n" + data["load_note"])
    return "\n".join(lines)
