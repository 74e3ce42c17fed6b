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
from v41graph.costs.value import Cost, as_float, sol_time

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
def test_sol_time_floats_of_exact_figures_are_float_of_the_fraction(flops, bytes_, comm, gpu):
    """Exact figures give Fraction seconds, and ``as_float`` (numerator over denominator, what the
    scheduling pass keeps per node) gives the very bits of ``float()`` of each."""
    hw = load_hardware(gpu)
    t = sol_time(Cost.of(flops=flops, bytes=bytes_, comm=comm), hw)
    parts = (t.compute, t.memory, t.comm, t.time)
    assert all(type(x) is Fraction for x in parts)
    assert [_bits(as_float(x)) for x in parts] == [_bits(float(x)) for x in parts]
    assert t.time == max(t.compute, t.memory, t.comm)


def test_sol_time_of_a_float_figure_is_its_exact_value():
    hw = load_hardware("h200_sxm")
    assert sol_time(Cost.of(bytes={"weights": 1.5}), hw).memory == Fraction(3, 2 * hw.hbm_bandwidth)
