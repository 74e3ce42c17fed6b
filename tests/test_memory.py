"""Interface ①: cache memory by owner and resident weights (SPEC §1.3–1.4).

Every expected value is a literal worked out by hand from SPEC.md §1.4 and
``shared/reference/model-facts.md`` §3.4 / §4, never recomputed with the rule the code uses.
"""

from __future__ import annotations

from hypothesis import given, settings, strategies as st
import pytest
import sympy

from v41graph import ConfigError, load_model
from v41graph.model.memory import cache_memory, kv_layouts, naive_global_bytes
from v41graph.symbols import N

MIB = 1 << 20
FIELDS = ("global_entries", "main_kv_bytes", "index_k_bytes", "global_bytes", "swa_bytes",
          "swa_payload_bytes", "dspark_swa_bytes", "total_bytes")




# --------------------------------------------------------------------------- entry layouts


def test_v41_entry_sizes(flash):
    layouts = kv_layouts(flash)
    assert layouts.main.bytes == 288  # 512 × (0.5 + 1/16)
    assert layouts.index_k.bytes == 68  # 128 × (0.5 + 1/32)
    assert layouts.swa.bytes == 528  # 512 × (1 + 1/32)
    assert layouts.swa.payload_bytes == 512


def test_v4_entry_sizes(v4_flash):
    layouts = kv_layouts(v4_flash)
    assert layouts.main.bytes == 584  # 448 e4m3 + 64 bf16 + 8 B scale row
    assert layouts.swa.bytes == 584
    assert layouts.index_k.bytes == 68


# --------------------------------------------------------------------------- global cache at 1M


def test_global_cache_at_1m(flash):
    c = cache_memory(flash, 1_048_576)
    assert c.global_entries == 2_621_440
    assert c.global_bytes == 933_232_640
    assert c.global_bytes == 890 * MIB
    assert c.main_kv_bytes == 754_974_720
    assert c.index_k_bytes == 178_257_920


def test_per_owner_entries_at_1m(flash):
    c = cache_memory(flash, 1_048_576)
    assert [(o.owner, o.ratio) for o in c.owners] == [(2, 2), (8, 2), (14, 2), (20, 1)]
    assert [o.entries for o in c.owners] == [524_288, 524_288, 524_288, 1_048_576]
    assert [o.index_k_entries for o in c.owners] == [524_288, 524_288, 524_288, 1_048_576]
    assert [o.main_kv_bytes for o in c.owners] == [150_994_944] * 3 + [301_989_888]
    assert [o.index_k_bytes for o in c.owners] == [35_651_584] * 3 + [71_303_168]


# 3⌊N/2⌋ + N, written out: the odd / window boundaries of SPEC §7
@pytest.mark.parametrize("n, entries", [(0, 0), (1, 1), (2, 5), (3, 6), (127, 316), (128, 320), (129, 321)])
def test_entries_at_boundaries(flash, n, entries):
    c = cache_memory(flash, n)
    assert c.global_entries == entries
    assert c.global_bytes == entries * 356


@pytest.mark.parametrize("n, partial", [(1, 1), (2, 0), (127, 1), (128, 0), (129, 1), (1_048_577, 1)])
def test_partial_group_is_state(flash, n, partial):
    owners = cache_memory(flash, n).owners
    assert [o.partial_tokens for o in owners] == [partial, partial, partial, 0]


# --------------------------------------------------------------------------- SWA rings and DSpark


@pytest.mark.parametrize("n", [128, 129, 5000, 1_048_576])
def test_swa_saturates_at_window(flash, n):
    c = cache_memory(flash, n)
    assert c.swa_entries_per_layer == 128
    assert c.swa_payload_bytes == 2_621_440  # 40 × 128 × 512 = 2.5 MiB
    assert c.swa_bytes == 2_703_360  # 40 × 128 × 528


@pytest.mark.parametrize("n, payload", [(1, 20_480), (127, 2_600_960)])
def test_swa_below_window(flash, n, payload):
    c = cache_memory(flash, n)
    assert c.swa_payload_bytes == payload == 40 * n * 512
    assert c.swa_bytes == 40 * n * 528


@pytest.mark.parametrize("n", [128, 129, 1_048_576])
def test_dspark_rings(flash, n):
    on, off = cache_memory(flash, n, dspark=True), cache_memory(flash, n)
    assert on.dspark_swa_bytes == 202_752  # 3 × 128 × 528
    assert off.dspark_swa_bytes == 0
    assert on.total_bytes - off.total_bytes == 202_752
    assert on.global_bytes == off.global_bytes  # draft blocks are SWA-only


# --------------------------------------------------------------------------- closed forms


def test_symbolic_slope_is_890(flash):
    c = cache_memory(flash, N)
    assert sympy.limit(c.global_bytes / N, N, sympy.oo) == 890


def test_closed_form(flash):
    expr = cache_memory(flash, N).global_bytes
    assert sympy.simplify(expr - (356 * N + 1068 * sympy.floor(N / 2))) == 0


def test_naive_counterfactual_slope(flash):
    # every compressed layer owning its own KV: 18 × (288 + 68)/2 + 20 × (288 + 68) = 10,324 B/token
    assert sympy.limit(naive_global_bytes(flash, N) / N, N, sympy.oo) == 10_324


def test_v4_flash_global_kv(v4_flash):
    # 21 CSA (m = 4, with index K) + 20 HCA (m = 128, no indexer), 584 B main-KV entries
    c = cache_memory(v4_flash, N)
    assert sympy.limit(c.global_bytes / N, N, sympy.oo) == sympy.Rational(14057, 4)
    assert sympy.Rational(14057, 4) == sympy.Rational(21 * (584 + 68), 4) + sympy.Rational(20 * 584, 128)
    assert cache_memory(v4_flash, 1_048_576).global_bytes == 3_684_958_208


def test_v4_flash_swa(v4_flash):
    c = cache_memory(v4_flash, 1_048_576)
    assert c.swa_layers == 43
    assert c.swa_bytes == 3_214_336  # 43 × 128 × 584


def test_v41_is_about_a_quarter_of_v4(flash, v4_flash):
    # the report's "roughly 1/4 of the corresponding footprint of DeepSeek-V4-Flash": 890 / 3514.25
    v41 = sympy.limit(cache_memory(flash, N).global_bytes / N, N, sympy.oo)
    v4 = sympy.limit(cache_memory(v4_flash, N).global_bytes / N, N, sympy.oo)
    assert 0.25 <= float(v41 / v4) <= 0.26


_SYMBOLIC: dict[tuple[str, bool], object] = {}


def _symbolic(model, dspark):
    key = (model.name, dspark)
    if key not in _SYMBOLIC:
        _SYMBOLIC[key] = cache_memory(model, N, dspark=dspark)
    return _SYMBOLIC[key]


@pytest.mark.parametrize("name", ["deepseek-v4.1-flash", "deepseek-v4-flash"])
@pytest.mark.parametrize("dspark", [False, True], ids=["dspark_off", "dspark_on"])
@settings(max_examples=200, deadline=None)
@given(n=st.integers(0, 2**21))
def test_symbolic_equals_numeric(name, dspark, n):
    model = load_model(name)
    numeric, symbolic = cache_memory(model, n, dspark=dspark), _symbolic(model, dspark)
    for field in FIELDS:
        value = getattr(symbolic, field)
        substituted = value.subs(N, n) if isinstance(value, sympy.Basic) else value
        assert substituted == getattr(numeric, field), (field, n)
    for sym_owner, num_owner in zip(symbolic.owners, numeric.owners, strict=True):
        assert sympy.sympify(sym_owner.entries).subs(N, n) == num_owner.entries
        assert sympy.sympify(sym_owner.partial_tokens).subs(N, n) == num_owner.partial_tokens


# --------------------------------------------------------------------------- bad input


@pytest.mark.parametrize("context", [-1, 1.5, "x", True, None])
def test_invalid_context(flash, context):
    with pytest.raises(ConfigError) as info:
        cache_memory(flash, context)
    assert "context" in str(info.value)


# --------------------------------------------------------------------------- resident weights


def test_weights_do_not_depend_on_context(flash):
    from v41graph.analysis.summaries import memory_summary

    short, long = memory_summary(flash, 4096), memory_summary(flash, 1_048_576)
    assert short["weights_bytes"] == long["weights_bytes"]
    assert short["weights_by_group"] == long["weights_by_group"]
    assert short["engram_table_bytes"] == long["engram_table_bytes"] == 202_758_032_400


def test_engram_tables(flash):
    # (384,006,168 + 384,016,682) rows × 256 × (1 + 1/32) B; resident whatever is looked up
    from v41graph.analysis.summaries import memory_summary

    assert memory_summary(flash, 1)["engram_table_bytes"] == 202_758_032_400
