"""Op kinds from outside the package: a payload class and its cost rule, on the one rule table.

:func:`register_op` puts the rule on :func:`v41graph.costs.rules.op_cost` itself (a
``singledispatch`` table), so the schedule's numbers and :func:`v41graph.analysis.symbolic.query.closed_form`
price the new kind alike (docs/architecture.md, decision 2): write the rule with the
:mod:`v41graph.algebra` helpers and it gives ints for numeric plans and sympy for symbolic ones.
A rule has the built-in rules' signature ``rule(op, node, ctx, t) -> Cost`` (``t``: the node's
token count). A kind registered twice, or a class that is not a frozen :class:`~v41graph.ir.ops.Op`
dataclass, is an error. Registering empties every kept answer (``v41graph.reuse.clear_caches``).

>>> from dataclasses import dataclass
>>> from v41graph.ir.ops import Op
>>> from v41graph.costs.value import Cost
>>> @dataclass(frozen=True)
... class Scale(Op):
...     dim: int
>>> register_op(Scale, lambda op, node, ctx, t: Cost.of(flops={"fp32": t * op.dim}))
>>> op_cost(Scale(4), None, None, 10).flop("fp32"), "Scale" in registered_ops()
(40, True)
"""

from __future__ import annotations

import dataclasses
from typing import Callable

from ..errors import CostError
from ..reuse import clear_caches
from ..ir.ops import Op
from .rules import op_cost
from .value import Cost

__all__ = ["op_cost", "register_op", "registered_ops"]

#: kinds registered from outside the package, by class name, in registration order
_USER: dict[str, type] = {}


def register_op(cls: type, rule: Callable[..., Cost]) -> None:
    """Register op kind ``cls`` with cost ``rule`` on the rule table numbers and closed forms share."""
    if not (isinstance(cls, type) and issubclass(cls, Op)):
        raise CostError(f"register_op: {cls!r} is not a subclass of v41graph.ir.ops.Op")
    params = getattr(cls, "__dataclass_params__", None)
    if params is None or not params.frozen or not dataclasses.is_dataclass(cls):
        raise CostError(f"register_op: op kind {cls.__name__} must be a frozen dataclass (payloads are immutable)")
    if not callable(rule):
        raise CostError(f"register_op: the cost rule of {cls.__name__} is not callable: {rule!r}")
    if cls.__name__ in _USER or op_cost.dispatch(cls) is not op_cost.dispatch(Op):
        raise CostError(f"register_op: op kind {cls.__name__} already has a cost rule")
    op_cost.register(cls)(rule)
    _USER[cls.__name__] = cls
    # a rule for a kind that priced as the default before (a built-in storage) changes answers that
    # compiles kept (a shape's signatures, its prices): nothing kept may outlive the rule table it read
    clear_caches()


def registered_ops() -> tuple[str, ...]:
    """Names of the op kinds registered from outside the package, in registration order."""
    return tuple(_USER)
