"""``docs/vocabulary.md``: the vocabulary lists of :mod:`v41graph.costs.vocabulary` as Markdown.

``python -m v41graph.render.vocabulary_doc > docs/vocabulary.md`` regenerates it;
``tests/test_vocabulary.py`` fails when the file and the code differ.

>>> text = vocabulary_markdown()
>>> "| `fp8` | `fp8_e4m3` |" in text and "| `bf16` | 2 |" in text
True
"""

from __future__ import annotations

from ..costs.vocabulary import byte_categories, edge_roles, format_aliases, formats, links, op_kinds, precisions
from ..ir import ops


def _doc(kind: str) -> str:
    doc = (getattr(ops, kind).__doc__ or "").strip().split("\n\n")[0]
    return " ".join(doc.split()) if not doc.startswith(f"{kind}(") else ""


def vocabulary_markdown() -> str:
    """The whole page (built-in op kinds only: what the package itself defines)."""
    out = ["# Vocabulary", "",
           "Generated from the code by `python -m v41graph.render.vocabulary_doc > docs/vocabulary.md`; "
           "`tests/test_vocabulary.py` fails when they differ. From Python: `v41graph.formats()`; "
           "`format_aliases()`, `op_kinds()`, `edge_roles()`, `precisions()` from `v41graph.extend`.", "",
           "## Storage formats", "", "| format | bytes per value (scales included) |", "|---|---|"]
    out += [f"| `{name}` | {value} |" for name, value in formats().items()]
    out += ["", "## Format aliases", "", "Accepted wherever a format is named (`Gemm(..., \"fp8\")`, "
            "`GraphBuilder.edge`); an unknown name is an error listing the choices.", "",
            "| alias | format |", "|---|---|"]
    out += [f"| `{a}` | `{c}` |" for a, c in format_aliases().items()]
    out += ["", "## Op kinds", "", "| kind | what it is |", "|---|---|"]
    out += [f"| `{k}` | {_doc(k)} |" for k in op_kinds(builtin_only=True)]
    out += ["", "## Edge roles", "", "The input roles op kinds need or take: " +
            ", ".join(f"`{r}`" for r in edge_roles()) + ".", "",
            "## Flop precisions", "", "Fastest first: " + ", ".join(f"`{p}`" for p in precisions()) + ".", "",
            "## Byte categories and links", "", "Bytes: " + ", ".join(f"`{b}`" for b in byte_categories()) +
            "; communication: " + ", ".join(f"`{x}`" for x in links()) + "."]
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    print(vocabulary_markdown(), end="")
