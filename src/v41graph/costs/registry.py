"""Op kinds from outside the package: a payload class and its cost rule, on the one rule table.

:func:`register_op` puts the rule on :func:`v41graph.costs.rules.op_cost` itself (a
``singledispatch`` table), so the schedule's numbers and :func:`v41graph.analysis.symbolic.query.closed_form`
price the new kind alike (docs/architecture.md, decision 2): write the rule with the
:mod:`v41graph.algebra` helpers and it gives ints for numeric plans and sympy for symbolic ones.
A rule has the built-in rules' signature ``rule(op, node, ctx, t) -> Cost`` (``t``: the node's
token count). A kind registered twice, or a class that is not a frozen :class:`~v41graph.ir.ops.Op`
dataclass, is an error. Registering empties every kept answer (``v41graph.reuse.clear_caches``).
A registration belongs to the current :class:`~v41graph.session.Session`: the rule table holds a
stand-in for the kind that prices it by the current session's rule, or as an unregistered kind
(the default rule) in a session that did not register it.

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
from ..session import current
from .rules import op_cost
from .value import Cost

__all__ = ["op_cost", "prices_as_default", "register_op", "registered_ops"]

_DEFAULT = op_cost.dispatch(Op)  # the rule of a kind nobody registered


def _user() -> dict[type, Callable[..., Cost]]:
    """The current session's kinds registered from outside the package (class → rule), in registration order."""
    return current().state(_user, dict)


class _SessionRule:
    """What the rule table holds for a registered kind: the current session's rule for it, else the default."""

    def __init__(self, cls: type):
        self.cls = cls

    def __call__(self, op, node, ctx, t) -> Cost:
        return _user().get(self.cls, _DEFAULT)(op, node, ctx, t)

    @property
    def tokens_only(self) -> bool:  # :func:`v41graph.costs.rules.tokens_only`, of the rule in force
        return getattr(_user().get(self.cls), "tokens_only", False)


def prices_as_default(cls: type) -> bool:
    """Whether the default rule prices op kind ``cls`` in the current session (for a storage kind: it costs
    nothing), which a kind another session registered a rule for still does here."""
    found = op_cost.dispatch(cls)
    return found is _DEFAULT or (isinstance(found, _SessionRule) and found.cls not in _user())


def register_op(cls: type, rule: Callable[..., Cost]) -> None:
    """Register op kind ``cls`` with cost ``rule`` on the rule table numbers and closed forms share."""
    if not (isinstance(cls, type) and issubclass(cls, Op)):
        raise CostError(f"register_op: {cls!r} is not a subclass of v41graph.ir.ops.Op")
    params = getattr(cls, "__dataclass_params__", None)
    if params is None or not params.frozen or not dataclasses.is_dataclass(cls):
        raise CostError(f"register_op: op kind {cls.__name__} must be a frozen dataclass (payloads are immutable)")
    if not callable(rule):
        raise CostError(f"register_op: the cost rule of {cls.__name__} is not callable: {rule!r}")
    user, found = _user(), op_cost.dispatch(cls)
    if cls.__name__ in (c.__name__ for c in user) or not (found is _DEFAULT or isinstance(found, _SessionRule)):
        raise CostError(f"register_op: op kind {cls.__name__} already has a cost rule")
    if not isinstance(found, _SessionRule):  # once per class and process; the rule itself is the session's
        op_cost.register(cls)(_SessionRule(cls))
    user[cls] = rule
    # a rule for a kind that priced as the default before (a built-in storage) changes answers that
    # compiles kept (a shape's signatures, its prices): nothing kept may outlive the rule table it read
    clear_caches()


def registered_ops() -> tuple[str, ...]:
    """Names of the op kinds registered from outside the package, in registration order."""
    return tuple(c.__name__ for c in _user())
