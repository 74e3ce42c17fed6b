"""Interface ③: the cost value and SOL time.

``Cost`` holds flops by precision, bytes by category and communication bytes by link; it adds
with ``+``. :func:`sol_time` turns a cost into the speed-of-light time on a hardware:
max(Σ flops_p / peak_p, bytes / HBM bandwidth, Σ comm_l / link_l), defined for zero-flop and
zero-byte nodes, and says which resource bounds it. Values may be numbers or sympy expressions.

>>> from v41graph.costs.hardware import load_hardware
>>> c = Cost.of(flops={"bf16": 989 * 10**12}, bytes={"weights": 0})
>>> t = sol_time(c, load_hardware("h200_sxm"))
>>> (t.time, t.bound)
(Fraction(1, 1), 'compute')
>>> sol_time(Cost(), load_hardware("h200_sxm")).time == 0, sol_time(Cost(), load_hardware("h200_sxm")).bound
(True, 'none')
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Mapping

from ..algebra import Value, is_symbolic, smax, to_sympy
from ..errors import CostError
from .hardware import Hardware

BYTE_CATEGORIES = ("weights", "act_in", "act_out", "kv_read", "kv_write", "workspace")
LINKS = ("nvlink", "scaleout", "host")
_CATEGORIES, _LINKS = frozenset(BYTE_CATEGORIES), frozenset(LINKS)
#: where a chip has no peak for a precision, the kernel runs at the next one (dequantise first)
FALLBACK = {"fp4": "fp8", "fp8": "bf16", "tf32": "bf16"}


def _items(d: Mapping[str, Value]) -> tuple[tuple[str, Value], ...]:
    # a zero number is dropped, a symbolic figure never (``v != 0`` first: it is the cheap test);
    # most costs have one or two figures per part, so those are built without sorting
    if not d:
        return ()
    if len(d) == 1:
        ((k, v),) = d.items()
        return ((k, v),) if v != 0 or is_symbolic(v) else ()
    if len(d) == 2:  # (every node's activations: in and out)
        a, b = d.items()
        if b[0] < a[0]:
            a, b = b, a
        return (a,) * (a[1] != 0 or is_symbolic(a[1])) + (b,) * (b[1] != 0 or is_symbolic(b[1]))
    return tuple(sorted(kv for kv in d.items() if kv[1] != 0 or is_symbolic(kv[1])))


def _plus(a: tuple[tuple[str, Value], ...], b: tuple[tuple[str, Value], ...]) -> tuple[tuple[str, Value], ...]:
    """Two parts' figures summed (each already sorted, without zeros)."""
    if not b:
        return a
    if not a:
        return b
    return _items(_merge(a, b))


def _merge(*parts) -> dict[str, Value]:
    """Several parts' (key, value) figures summed by key, in the order given."""
    out: dict[str, Value] = {}
    for items in parts:
        for k, v in items:
            out[k] = out[k] + v if k in out else v
    return out


@dataclass(frozen=True)
class Cost:
    """What one node does: flops by precision, bytes by category, communication by link."""

    flops: tuple[tuple[str, Value], ...] = ()
    bytes: tuple[tuple[str, Value], ...] = ()
    comm: tuple[tuple[str, Value], ...] = ()

    @staticmethod
    def of(flops: Mapping[str, Value] = {}, bytes: Mapping[str, Value] = {},  # noqa: B006 - read only
           comm: Mapping[str, Value] = {}) -> "Cost":  # noqa: B006
        for k in bytes:
            if k not in _CATEGORIES:
                raise CostError(f"cost: unknown byte category {k!r} (known: {', '.join(BYTE_CATEGORIES)})")
        for k in comm:
            if k not in _LINKS:
                raise CostError(f"cost: unknown link {k!r} (known: {', '.join(LINKS)})")
        return Cost(_items(flops), _items(bytes), _items(comm))

    @staticmethod
    def activations(read: Value, written: Value) -> "Cost":
        """``Cost.of(bytes={"act_in": read, "act_out": written})``, minus the check of two known
        categories (every node priced makes one)."""
        return Cost((), _items({"act_in": read, "act_out": written}), ())

    def __add__(self, other: "Cost") -> "Cost":
        return Cost(_plus(self.flops, other.flops), _plus(self.bytes, other.bytes), _plus(self.comm, other.comm))

    @staticmethod
    def sum(costs) -> "Cost":
        """``costs[0] + costs[1] + …`` (``Cost()`` for none), merged in one step."""
        costs = list(costs)
        return Cost(_items(_merge(*(c.flops for c in costs))), _items(_merge(*(c.bytes for c in costs))),
                    _items(_merge(*(c.comm for c in costs))))

    def scaled(self, factor) -> "Cost":
        """Every figure times ``factor`` (a per-GPU share under tensor/expert parallelism)."""
        f = lambda items: tuple((k, v * factor) for k, v in items)  # noqa: E731
        return Cost(f(self.flops), f(self.bytes), f(self.comm))

    def flop(self, precision: str) -> Value:
        return dict(self.flops).get(precision, 0)

    def byte(self, category: str) -> Value:
        return dict(self.bytes).get(category, 0)

    @property
    def total_flops(self) -> Value:
        return sum((v for _, v in self.flops), 0)

    @property
    def total_bytes(self) -> Value:
        return sum((v for _, v in self.bytes), 0)

    @property
    def total_comm(self) -> Value:
        return sum((v for _, v in self.comm), 0)


@dataclass(frozen=True)
class SolTime:
    """Seconds per resource and the bound: max(compute, memory, communication)."""

    compute: Value
    memory: Value
    comm: Value
    time: Value
    bound: str | None  # "compute" | "memory" | "comm" | "none" (zero work); None when symbolic


def peak_for(hw: Hardware, precision: str) -> tuple[str, int]:
    """The precision a kernel really runs at on ``hw`` (falling back as FALLBACK says) and its peak."""
    p = precision
    while p not in hw.peak_flops:
        if p not in FALLBACK:
            raise CostError(f"hardware {hw.name}: no peak for precision {precision!r} "
                            f"(has {', '.join(sorted(hw.peak_flops))})")
        p = FALLBACK[p]
    return p, hw.peak_flops[p]


def _div(value: Value, rate: int) -> Value:
    """``value / rate`` exactly: an expression, or one Fraction made directly (no intermediate one)."""
    if is_symbolic(value):
        return value / to_sympy(rate)
    if isinstance(value, Fraction):
        return Fraction(value.numerator, value.denominator * rate)
    if isinstance(value, int):
        return Fraction(value, rate)
    return Fraction(value) / rate  # a float figure (an expected count): exactly the float's value


def _seconds(terms) -> Value:
    """Σ value / rate over (value, rate) pairs; Fraction(0) for none (most costs have one term or
    none of a kind, so no sum starts from a zero Fraction)."""
    total = None
    for value, rate in terms:
        part = _div(value, rate)
        total = part if total is None else total + part
    return _ZERO if total is None else total


_ZERO = Fraction(0)


def sol_time(cost: Cost, hw: Hardware) -> SolTime:
    """Speed-of-light time of a cost on a hardware."""
    return _general_sol(_terms(cost, hw))


def _terms(cost: Cost, hw: Hardware) -> tuple[list, list, list]:
    """The (value, rate) terms of each resource's seconds: flops over the peak of their precision,
    all bytes over HBM bandwidth, communication over its link: the one statement of the SOL
    formula, which :func:`_general_sol` sums."""
    peaks = hw.peak_flops
    return ([(v, peaks[p] if p in peaks else peak_for(hw, p)[1]) for p, v in cost.flops],
            [(cost.total_bytes, hw.hbm_bandwidth)],
            [(v, _link_rate(hw, k)) for k, v in cost.comm] if cost.comm else [])


def _general_sol(terms: tuple[list, list, list]) -> SolTime:
    """:func:`sol_time` term by term (a Fraction or expression per term; the maximum by ``smax``)."""
    compute, memory, comm = (_seconds(t) for t in terms)
    time = smax(compute, memory, comm, evaluate=False)  # symbolic: unordered anyway, and far faster
    if is_symbolic(time):
        return SolTime(compute, memory, comm, time, None)
    # ties go to compute, then to memory before comm
    bound = "none" if time == 0 else next(k for k, v in zip(_RESOURCES, (compute, memory, comm))
                                         if v is time or v == time)
    return SolTime(compute, memory, comm, time, bound)


_RESOURCES = ("compute", "memory", "comm")


def as_float(value: Value) -> float:
    """``float(value)``; for a Fraction its numerator over its denominator, the very division
    ``Fraction.__float__`` makes (``numbers.Rational``'s, through two property reads)."""
    return value.numerator / value.denominator if type(value) is Fraction else float(value)


def _link_rate(hw: Hardware, link: str) -> int:
    return {"nvlink": hw.nvlink_bandwidth, "scaleout": hw.scaleout_bandwidth, "host": hw.host_bandwidth}[link]
