"""Rows in columns (ir/rows.py, ir/ledger_columns.py): a plan of many requests compiled over
tables of columns gives exactly what the same plan gives over tuples of Row objects — every
pass's graph (rows included), side tables and report, and the schedule."""

from __future__ import annotations

from contextlib import contextmanager

from hypothesis import HealthCheck, given, settings, strategies as st
import numpy as np
import pytest

from v41graph import Plan, Request, load_model
from v41graph.ir.ledger import ledger
from v41graph.ir import ledger_columns, rows
from v41graph.ir.ledger import Row
from v41graph.ir.rows import RowTable, fits_int64, is_table, token_key
from v41graph.ir.shapes import clear_caches
from v41graph.passes import compile

from test_shapes import _same


@contextmanager
def _tuples():
    """Every plan's rows as tuples of Row, however many requests it has (the reference)."""
    old = rows.TABLE_MIN_REQUESTS[0]
    rows.TABLE_MIN_REQUESTS[0] = 10 ** 9
    try:
        yield
    finally:
        rows.TABLE_MIN_REQUESTS[0] = old


@pytest.fixture(scope="module")
def model():
    return load_model()


def test_a_table_is_a_sequence_of_rows():
    rows = (Row(0, 3, 0, 100, 0, 0, 0, 0), Row(1, 3, 50, 80, 4, 10, 80, 50, restored=3, copies=2, seq=7))
    t = RowTable.of(3, rows)
    assert tuple(t) == rows and t == rows and rows == t and list(t) == list(rows) and t[1] is t.rows[1]
    assert len(t) == 2 and bool(t) and not RowTable.of(3, []) and t != RowTable.of(4, rows)
    assert type(t[0].q_end) is int and t[1].seq == 7 and t[0].seq is None  # plain Python ints
    assert token_key(t) == token_key(rows)  # one canonical token set for either form
    assert token_key((Row(0, 3, 0, 10, 0, 0, 0, 0),)) != token_key((Row(0, 3, 0, 11, 0, 0, 0, 0),))


def test_the_int64_guard():
    assert fits_int64(1 << 20, 64, 1024)
    assert not fits_int64(1 << 20, 1 << 20, 1 << 10)


def test_tables_are_built_for_many_numeric_requests_only(model):
    from v41graph.ir.lower import lower
    many = Plan([Request.prefill(100 + i) for i in range(16)])
    few = Plan([Request.prefill(100 + i) for i in range(3)])
    assert is_table(lower(model, many).nodes["L3.wq_a"].rows)
    assert not is_table(lower(model, few).nodes["L3.wq_a"].rows)
    with _tuples():
        assert not is_table(lower(model, many).nodes["L3.wq_a"].rows)


def test_policy_tables_equal_the_ledger(model):
    plan = Plan([Request.prefill(300 + 7 * i) for i in range(6)] + [Request.extend(4096 + i, 100 + i, False)
                for i in range(4)] + [Request.decode(2000 + i, copies=3) for i in range(4)],
                decoder_replay="bounded", encoder_restore="bounded")
    tables = ledger_columns.policy_tables(model, plan, ledger_columns.base_tables(model, plan))
    rows = ledger(model, plan).rows
    for layer, table in tables.items():
        assert tuple(table) == tuple(r for r in rows if r.layer == layer)
    assert len({id(t.cols) for t in tables.values()}) < 10  # layers of one class share their columns


def _requests(draw, n):
    out = []
    for i in range(n):
        kind = draw(st.sampled_from(["prefill", "extend", "lost", "decode", "chunks"]))
        a, b = draw(st.integers(1, 3000)), draw(st.integers(1, 300))
        if kind == "prefill":
            out.append(Request.prefill(a))
        elif kind == "extend":
            out.append(Request.extend(a, b))
        elif kind == "lost":
            out.append(Request.extend(a, b, swa_cached=False))
        elif kind == "decode":
            out.append(Request.decode(a, copies=draw(st.integers(1, 9))))
        else:
            out += [Request.chunk(a + b, 0, a, seq=("p", i)), Request.chunk(a + b, a, b, seq=("p", i))]
    return out


@st.composite
def _plans(draw):
    requests = _requests(draw, draw(st.integers(8, 24)))
    policies = draw(st.sampled_from([
        dict(decoder_replay="bounded", encoder_restore="bounded"),
        dict(decoder_replay="bounded", encoder_restore="bounded", replay_cut="paper", chunk_tail="last"),
        dict(encoder_restore="bounded", tp=8, ep=8),
        dict(decoder_replay="bounded", encoder_restore="bounded", dp=4, ep=4),
        dict(encoder_restore="bounded", dspark="on"),
    ]))
    return Plan(requests, **policies)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(plan=_plans(), hardware=st.sampled_from(["h200_sxm", "gb300"]))
def test_tables_compile_as_tuples_do(model, plan, hardware):
    clear_caches()
    tabled = compile(model, plan, hardware)
    assert is_table(tabled.graph.nodes["L5.wq_a"].rows)
    with _tuples():
        clear_caches()
        reference = compile(model, plan, hardware)
    assert not is_table(reference.graph.nodes["L5.wq_a"].rows)
    _same(tabled, reference)


def test_columns_are_read_only():
    t = RowTable.of(0, [Row(0, 0, 0, 10, 0, 0, 0, 0)])
    with pytest.raises(ValueError):
        t.cols.q_end[0] = 5
    with pytest.raises(AttributeError):
        t.cols.q_end = np.array([5])
