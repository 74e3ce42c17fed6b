"""Every sympy Symbol v41graph uses, created here and nowhere else.

``Symbol('N')`` and ``Symbol('N', positive=True, integer=True)`` are different symbols and only
the second lets ``Min``/``Max``/``floor`` simplify, so all lengths are created with those
assumptions through :func:`length`.

>>> from v41graph.symbols import N, length
>>> N.is_positive and N.is_integer
True
>>> length("N") is N  # interned: clear_caches() leaves the symbol table alone
True
"""

from __future__ import annotations

import sympy

#: the symbol table: one object per name for the life of the process (a table of names, not an
#: answer kept across calls: ``clear_caches()`` must not make ``length("N")`` a second object)
_SYMBOLS: dict[str, sympy.Symbol] = {}


def length(name: str) -> sympy.Symbol:
    """A positive integer symbol, interned by name (the same name gives the same symbol)."""
    found = _SYMBOLS.get(name)
    if found is None:
        found = _SYMBOLS[name] = sympy.Symbol(name, positive=True, integer=True)
    return found


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
