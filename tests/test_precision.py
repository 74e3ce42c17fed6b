"""Storage formats and cache-entry layouts: exact bytes, scales included (SPEC §1.4, §4.1).

Expected numbers come from shared/reference/model-facts.md §3.4 (vLLM kv_formats_v41.py:
V41_FP4_BYTES = 288, V41_FP8_BYTES = 528; indexer K 68; V4 fp8_ds_mla (584, 576)).
"""

from __future__ import annotations

from fractions import Fraction

import pytest

from v41graph import ConfigError
from v41graph.model.formats import (BF16, FORMATS, FP4_E2M1_E4M3_G16, FP4_E2M1_UE8M0_G32, FP8_E4M3, FP8_E4M3_B32,
                                    FP8_E4M3_B128, FP8_E4M3_G32, FP32, INDEX_K_FP4, V4_KV, V41_MAIN_KV, V41_SWA_KV,
                                    EntryLayout, Segment, format_named, single)

LAYOUTS = (V41_MAIN_KV, V41_SWA_KV, INDEX_K_FP4, V4_KV)


def _exact(value) -> bool:
    """A Fraction or a plain int: never a float, never a bool."""
    return type(value) is int or isinstance(value, Fraction)


# --------------------------------------------------------------------------- entry layouts


def test_v41_main_kv_288():
    # 512 × e2m1 (256 B) + 32 × e4m3 scales (one per 16)
    assert V41_MAIN_KV.bytes == 288
    assert V41_MAIN_KV.payload_bytes == 256
    assert V41_MAIN_KV.dims == 512


def test_index_k_fp4_68():
    # 128 × e2m1 (64 B) + 4 × ue8m0 (one per 32)
    assert INDEX_K_FP4.bytes == 68
    assert INDEX_K_FP4.payload_bytes == 64
    assert INDEX_K_FP4.dims == 128


def test_v41_swa_kv_528():
    # 512 × e4m3 + 16 × ue8m0 (one per 32)
    assert V41_SWA_KV.bytes == 528
    assert V41_SWA_KV.payload_bytes == 512
    assert V41_SWA_KV.dims == 512


def test_v4_kv_584():
    # 448 e4m3 nope + 64 bf16 rope = 576 B slot, + 8 B scale row
    assert V4_KV.bytes == 584
    assert V4_KV.payload_bytes == 576
    assert V4_KV.dims == 512


def test_v41_global_kv_per_token_890():
    # model-facts §3.4: 3 encoder owners at m = 2 and 1 decoder owner at m = 1
    per_token = 3 * Fraction(V41_MAIN_KV.bytes + INDEX_K_FP4.bytes, 2) + (V41_MAIN_KV.bytes + INDEX_K_FP4.bytes)
    assert per_token == 890


@pytest.mark.parametrize("layout", LAYOUTS, ids=lambda l: l.name)
def test_layout_bytes_are_plain_ints(layout):
    assert type(layout.bytes) is int
    assert type(layout.payload_bytes) is int
    assert type(layout.dims) is int
    for seg in layout.segments:
        assert isinstance(seg.bytes, Fraction)


def test_layout_with_fractional_bytes_is_an_error():
    odd = single("odd", 3, FP4_E2M1_UE8M0_G32)  # 3 × 17/32 B
    with pytest.raises(ConfigError, match="odd"):
        odd.bytes
    with pytest.raises(ConfigError, match="odd"):
        odd.payload_bytes  # 3 × 1/2 B: must not be floored silently


def test_raw_segment_bytes():
    assert Segment(0, None, 8).bytes == 8
    assert EntryLayout("pad", (Segment(0, None, 8),)).bytes == 8
    assert EntryLayout("pad", (Segment(0, None, 8),)).payload_bytes == 0


# --------------------------------------------------------------------------- formats


def test_fp4_ue8m0_g32_per_element():
    assert FP4_E2M1_UE8M0_G32.bytes_per_element == Fraction(17, 32)
    assert FP4_E2M1_UE8M0_G32.payload_bytes_per_element == Fraction(1, 2)


def test_fp4_e4m3_g16_per_element():
    assert FP4_E2M1_E4M3_G16.bytes_per_element == Fraction(9, 16)
    assert FP4_E2M1_E4M3_G16.bytes_for(512) == 288


def test_fp8_block_formats_per_element():
    assert FP8_E4M3_B32.bytes_per_element == 1 + Fraction(1, 1024)
    assert FP8_E4M3_B128.bytes_per_element == 1 + Fraction(1, 128 * 128)
    assert FP8_E4M3_G32.bytes_per_element == Fraction(33, 32)


def test_fp8_g32_bytes_for_256():
    # one Engram row: 256 × e4m3 + 8 × ue8m0
    assert FP8_E4M3_G32.bytes_for(256) == 264


def test_unscaled_formats():
    assert BF16.bytes_per_element == 2
    assert FP32.bytes_per_element == 4
    assert FP8_E4M3.bytes_per_element == 1
    for fmt in (BF16, FP32, FP8_E4M3):
        assert fmt.bytes_per_element == fmt.payload_bytes_per_element


@pytest.mark.parametrize("name", sorted(FORMATS))
def test_every_format_is_exact(name):
    fmt = FORMATS[name]
    assert fmt.name == name
    assert _exact(fmt.element_bytes) and _exact(fmt.scale_bytes)
    assert _exact(fmt.bytes_per_element)
    assert _exact(fmt.payload_bytes_per_element)
    for n in (0, 1, 31, 32, 1024, 5120):
        got = fmt.bytes_for(n)
        assert _exact(got), (name, n, type(got))
        assert got == fmt.bytes_per_element * n
    assert fmt.bytes_per_element >= fmt.payload_bytes_per_element


@pytest.mark.parametrize("name", sorted(FORMATS))
def test_format_named_roundtrip(name):
    assert format_named(name) is FORMATS[name]


def test_format_named_unknown_lists_known_names():
    with pytest.raises(ConfigError) as info:
        format_named("nope")
    msg = str(info.value)
    assert "'nope'" in msg
    for name in FORMATS:
        assert name in msg
