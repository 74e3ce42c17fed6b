"""Plain tables through ``tabulate``, in Markdown (pipe tables) or aligned text — the one table writer.

Cells are shown as given (``disable_numparse``): a figure formatted upstream (``1,024``, ``12.30 ms``)
is never re-read as a number. A layout that is not a plain table (two header rows, sections, a
mark beside a row) is written by hand where it is, with a comment saying why.

>>> print("\\n".join(markdown_table(("k", "n"), [("a", 1), ("bb", 22)], "lr")))
| k   |   n |
|:----|----:|
| a   |   1 |
| bb  |  22 |
>>> print(text_table(("k", "n"), [("a", 1), ("bb", 22)], "lr"))
k      n
a      1
bb    22
"""

from __future__ import annotations

from typing import Iterable, Sequence

from tabulate import tabulate

_ALIGN = {"l": "left", "r": "right", "c": "center"}


def _table(header: Sequence[str], rows: Iterable[Sequence], align: str | None, fmt: str) -> str:
    header = tuple(header)
    colalign = tuple(_ALIGN[a] for a in align) if align else ("left",) * len(header)
    return tabulate([tuple(r) for r in rows], headers=header, tablefmt=fmt, colalign=colalign,
                    disable_numparse=True)


def markdown_table(header: Sequence[str], rows: Iterable[Sequence], align: str | None = None) -> list[str]:
    """A Markdown pipe table as lines; ``align`` one of ``l`` / ``r`` / ``c`` per column (default left)."""
    return _table(header, rows, align, "pipe").splitlines()


def text_table(header: Sequence[str], rows: Iterable[Sequence], align: str | None = None) -> str:
    """An aligned plain-text table under its header, two spaces between columns."""
    return _table(header, rows, align, "plain")
