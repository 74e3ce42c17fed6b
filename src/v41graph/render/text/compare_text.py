"""Text and Markdown of a comparison (``analysis/comparison.py`` computes it; this only formats).

>>> from v41graph import load_model, Plan, Request
>>> from v41graph.analysis.comparison import Side, compare
>>> m = load_model()
>>> c = compare(Side(m, Plan([Request.prefill(1024)]), "h200_sxm"),
...             Side(m, Plan([Request.prefill(1024)], tp=8), "h200_sxm"))
>>> len(compare_text(c).splitlines()) > 10
True
"""

from __future__ import annotations

from typing import Any, Sequence

from ...model.formats import GIB
from ..tabular import markdown_table


def _num(v: float | None, unit: str) -> str:
    if v is None:
        return "-"
    if unit == "ms":
        return f"{v * 1e3:.3f}"
    if unit == "GiB":
        return f"{v / GIB:.3f}"
    return f"{v:.3f}"


def _rows(c: dict[str, Any]) -> list[tuple[str, str, str, str, str, str]]:
    """(section, name, a, b, b − a, b / a) for every line of the comparison."""
    out = []
    for section, unit in _UNITS.items():
        for name, d in c[section].items():
            ratio = "-" if d["ratio"] is None else f"{d['ratio']:.3f}"
            out.append((section, _shown(name), _num(d["a"], unit), _num(d["b"], unit), _num(d["delta"], unit),
                        ratio))
    return out


#: the sections shown, in order, with the unit their values are printed in (the JSON keeps seconds
#: and bytes, named ``…_s`` / ``…_bytes``; the text names drop that suffix under the section's unit)
_UNITS = {"totals": "ms", "by_stage": "ms", "by_family": "ms", "memory": "GiB"}


def _shown(name: str) -> str:
    for suffix in ("_s", "_bytes"):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


def _title(section: str) -> str:
    return "by op family" if section == "by_family" else section.replace("_", " ")


def _note(c: dict[str, Any]) -> str:
    return f"by op family: {c['sides'][0]['family_rule']}; memory per GPU under each side's mapping"


def compare_text(c: dict[str, Any]) -> str:
    """Aligned plain text: the two labels, then one line per figure with a, b, b − a and b / a.

    Written by hand: one column width across every section, each section's header line carrying
    its unit, so the sections read as one table (tabulate lays out one table at a time)."""
    lines = [f"A: {c['sides'][0]['label']}", f"B: {c['sides'][1]['label']}"]
    rows = _rows(c)
    width = max(len(r[1]) for r in rows)
    section = None
    for s, name, a, b, d, ratio in rows:
        if s != section:
            section = s
            lines.append(f"\n{_title(s)} ({_UNITS[s]}){'':<{max(width - len(_title(s)) - 2, 0)}}"
                         f"{'A':>12}{'B':>12}{'B - A':>12}{'B / A':>8}")
        lines.append(f"  {name:<{width}}{a:>12}{b:>12}{d:>12}{ratio:>8}")
    return "\n".join([*lines, "", _note(c)])


def compare_markdown(c: dict[str, Any]) -> str:
    """The same comparison as Markdown tables, one per section."""
    lines = [f"- **A**: {c['sides'][0]['label']}", f"- **B**: {c['sides'][1]['label']}"]
    sections: dict[str, list[tuple]] = {}
    for s, name, a, b, d, ratio in _rows(c):
        sections.setdefault(s, []).append((name, a, b, d, ratio))
    for s, rows in sections.items():
        lines += ["", f"### {_title(s)} ({_UNITS[s]})", ""]
        lines += markdown_table(("", "A", "B", "B − A", "B / A"), rows, "lrrrr")
    return "\n".join([*lines, "", _note(c)]) + "\n"


def with_checkpoints(text: str, lines: Sequence[str], markdown: bool = False) -> str:
    """``text`` (:func:`compare_text`, or :func:`compare_markdown` when ``markdown``) with the checkpoint
    ``lines`` (one, or one per side where they differ) right below the sides' labels, as ``compare`` prints it:
    the text ends in a newline, the Markdown as it is.

    >>> with_checkpoints("title\\nA: a\\nB: b\\nrest", ["checkpoint: c"])
    'title\\nA: a\\nB: b\\ncheckpoint: c\\nrest\\n'
    >>> with_checkpoints("- **A** a\\n- **B** b\\n", ["checkpoint: c"], markdown=True)
    '- **A** a\\n- **B** b\\n- checkpoint: c\\n'
    """
    rows = text.split("\n")
    after = next(i for i, line in enumerate(rows) if line.startswith(("B: ", "- **B**"))) + 1
    bullet = "- " if markdown else ""
    return "\n".join([*rows[:after], *(bullet + c for c in lines), *rows[after:]]) + ("" if markdown else "\n")
