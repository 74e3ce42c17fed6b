"""Fast paths of the warm compile, each checked against the plain computation it stands for.

A fast path that can change an answer is a defect: each is tested here as a differential property
(random inputs, bit-for-bit or Fraction-for-Fraction equality with the slow form), beside the
whole-compile properties of tests/test_reuse.py.
"""

from __future__ import annotations

from fractions import Fraction
from functools import reduce
from operator import add
import math
import struct

from hypothesis import given, settings, strategies as st

from v41graph.algebra import fsum_in_order
from v41graph.costs.hardware import load_hardware
from v41graph.costs.value import Cost, _general_sol, _terms, as_float, exact_sol_time, sol_time

_FINITE = st.floats(allow_nan=False, allow_infinity=False, width=64)


def _bits(x: float) -> bytes:
    return struct.pack("<d", x)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(_FINITE, st.floats(min_value=0, max_value=1e-3)), max_size=60))
def test_fsum_in_order_is_the_left_to_right_sum(values):
    """Same bits as ``reduce(add, values, 0.0)`` (the scheduling pass's sums), a float even for none."""
    slow = reduce(add, values, 0.0)
    fast = fsum_in_order(values)
    assert type(fast) is float
    assert _bits(fast) == _bits(slow) or (math.isnan(fast) and math.isnan(slow))


def test_fsum_in_order_keeps_order_where_rounding_tells():
    # 1e16 + 1 + 1 rounds the ones away one at a time; a compensated sum would keep them
    assert fsum_in_order([1e16, 1.0, 1.0]) == reduce(add, [1e16, 1.0, 1.0], 0.0) == 1e16
    assert fsum_in_order([]) == 0.0 and type(fsum_in_order([])) is float


_EXACT = st.one_of(st.integers(0, 10**15), st.fractions(min_value=0, max_value=10**12, max_denominator=10**6))


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.sampled_from(["bf16", "fp8", "fp4", "tf32"]), _EXACT, max_size=3),
       st.dictionaries(st.sampled_from(["weights", "act_in", "kv_read"]), _EXACT, max_size=3),
       st.dictionaries(st.sampled_from(["nvlink", "scaleout"]), _EXACT, max_size=2),
       st.sampled_from(["h200_sxm", "b200", "gb200"]))
def test_sol_time_of_exact_figures_is_the_general_one(flops, bytes_, comm, gpu):
    """The one-fraction sums and the cross-multiplied maximum give the very Fractions and bound of
    the term-by-term path (the one expressions and float figures take); floats from them are
    Fraction.__float__'s."""
    hw = load_hardware(gpu)
    cost = Cost.of(flops=flops, bytes=bytes_, comm=comm)
    t = sol_time(cost, hw)
    assert t == _general_sol(_terms(cost, hw))
    assert all(type(x) is Fraction for x in (t.compute, t.memory, t.comm, t.time))
    assert [as_float(x) for x in (t.time, t.compute)] == [float(t.time), float(t.compute)]
    # what the scheduling pass keeps: the same SolTime, and each float that of its Fraction
    sol, time, resources = exact_sol_time(cost, hw)
    assert sol == t and _bits(time) == _bits(float(t.time))
    assert [_bits(x) for x in resources] == [_bits(float(x)) for x in (t.compute, t.memory, t.comm)]


def test_exact_sol_time_leaves_other_figures_to_the_general_path():
    from v41graph.symbols import N
    hw = load_hardware("h200_sxm")
    assert exact_sol_time(Cost.of(flops={"bf16": 2 * N}), hw) is None
    assert exact_sol_time(Cost.of(bytes={"weights": 1.5}), hw) is None
    assert sol_time(Cost.of(bytes={"weights": 1.5}), hw).memory == Fraction(3, 2 * hw.hbm_bandwidth)
