"""Checking the lengths a plan is built from: token counts, copies and parallel degrees.

A length is an integer of any kind (a numpy integer from a sweep is as good as an int; it is
stored as an int) or a sympy expression; a bool, a float or a string is refused by name.

>>> import numpy as np
>>> checked_length("request prefill.prompt", np.int64(8192), minimum=1)
8192
>>> checked_length("request prefill.prompt", 1.5, minimum=1)
Traceback (most recent call last):
...
v41graph.errors.PlanError: request prefill.prompt: must be an integer or sympy expression, got 1.5
"""

from __future__ import annotations

from typing import Any

from ..algebra import as_int, is_symbolic
from ..errors import PlanError, V41Error


def checked_length(field_name: str, value: Any, *, minimum: int, error: type[V41Error] = PlanError) -> Any:
    """Validate a length: an integer >= minimum (returned as an int), or a sympy expression
    (assumed positive); a bad one raises ``error`` (a plan's: PlanError; a hand-built graph's: GraphError)."""
    if is_symbolic(value):
        if not value.is_number:
            return value
        if not value.is_Integer:  # 3/2, zoo, oo, nan: never truncated or guessed
            raise error(f"{field_name}: must be a finite integer, got {value}")
    number = as_int(value)
    if number is None:
        raise error(f"{field_name}: must be an integer or sympy expression, got {value!r}")
    if number < minimum:
        raise error(f"{field_name}: must be >= {minimum}, got {number}")
    return number
