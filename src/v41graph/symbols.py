"""Every sympy Symbol v41graph uses, created here and nowhere else.

``Symbol('N')`` and ``Symbol('N', positive=True, integer=True)`` are different symbols and only
the second lets ``Min``/``Max``/``floor`` simplify, so all lengths are created with those
assumptions through :func:`length`.

>>> from v41graph.symbols import N, length
>>> N.is_positive and N.is_integer
True
>>> length("N") == N  # equal (sympy may hand back a new object after clear_caches)
True
"""

from __future__ import annotations

import sympy

from .reuse import cached


@cached(None, resource=True)  # interned: one object per name
def length(name: str) -> sympy.Symbol:
    """A positive integer symbol, interned by name (the same name gives the same symbol)."""
    return sympy.Symbol(name, positive=True, integer=True)


#: prompt / context length in tokens
N = length("N")
#: decode batch size
B = length("B")
#: decode context length
L = length("L")
#: cached prefix length
P = length("P")
#: new (suffix) tokens after a prefix hit
S = length("S")
