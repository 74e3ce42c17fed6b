"""The one comma-list parser of the command line, and the lists built on it (names, counts).

>>> comma_list("2, 4,8", float)
(2.0, 4.0, 8.0)
>>> comma_list("2,x", float, error="not a list of rates")
Traceback (most recent call last):
...
argparse.ArgumentTypeError: not a list of rates
"""

from __future__ import annotations

import argparse
from typing import Any, Callable

from ..errors import V41Error
from .options.plan_options import token_count


def comma_list(text: str, parse: Callable[[str], Any] = str, *, error: str | None = None,
               allow_empty: bool = False) -> tuple:
    """``text`` split at commas, each part stripped (empty parts skipped) and read by ``parse``.

    A part ``parse`` refuses (ValueError, an argparse or v41graph error), or no part at all unless
    ``allow_empty``, raises ``argparse.ArgumentTypeError(error)`` (default: naming the text)."""
    message = error or f"{text!r} is not a comma-separated list"
    try:
        values = tuple(parse(part) for part in (p.strip() for p in text.split(",")) if part)
    except (ValueError, argparse.ArgumentTypeError, V41Error) as exc:
        raise argparse.ArgumentTypeError(message if error else f"{message} ({exc})") from None
    if not values and not allow_empty:
        raise argparse.ArgumentTypeError(message)
    return values


def count_list(text: str) -> list[int]:
    """``1024,4096`` or ``1K..8K`` (doubling) → a list of counts.

    >>> count_list("1K..8K"), count_list("1,8")
    ([1024, 2048, 4096, 8192], [1, 8])
    """
    out: list[int] = []
    for part in comma_list(text, allow_empty=True):
        lo, sep, hi = part.partition("..")
        if not sep:
            out.append(token_count(lo))
            continue
        a, b = token_count(lo), token_count(hi)
        if a < 1 or b < a:
            raise argparse.ArgumentTypeError(f"{part!r} is not a range A..B with 1 <= A <= B")
        while a <= b:
            out.append(a)
            a *= 2
    return out


def name_list(text: str) -> list[str]:
    """``off,bounded`` → ``["off", "bounded"]``; empty parts skipped."""
    return list(comma_list(text, allow_empty=True))
