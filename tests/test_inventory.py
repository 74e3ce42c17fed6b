"""Interface ①: the physical module inventory and resident weight bytes (SPEC §1.3).

Expected numbers are written out from the config dimensions (model-facts §1, §3, §6, §9) and the
checkpoint tensor counts of model-facts §2, never from the rule the code uses.
"""

from __future__ import annotations

import dataclasses
from fractions import Fraction
from math import ceil

from hypothesis import given, strategies as st
import pytest

from v41graph import ConfigError, load_model
from v41graph.model.formats import BF16, FP4_E2M1_UE8M0_G32, FP8_E4M3_B32, FP8_E4M3_B128, FP8_E4M3_G32, Format
from v41graph.model.inventory import GROUPS, Inventory, WeightTensor, inventory


@pytest.fixture(scope="module")
def v41() -> Inventory:
    return inventory(load_model())


@pytest.fixture(scope="module")
def v4() -> Inventory:
    return inventory(load_model("deepseek-v4-flash"))


def by_name(inv: Inventory) -> dict[str, WeightTensor]:
    return {t.name: t for t in inv.tensors}


def names_with(inv: Inventory, *parts: str, prefix: str = "") -> list[str]:
    return [t.name for t in inv.tensors if t.name.startswith(prefix) and all(p in t.name for p in parts)]


# --- byte math of one tensor -------------------------------------------------------------------

def test_fp8_32x32_weight_bytes_round_ragged_blocks_up():
    # 100×70 → 7,000 payload bytes + ceil(100/32)·ceil(70/32) = 4·3 one-byte scales
    assert WeightTensor("w", "m", "attention", (100, 70), FP8_E4M3_B32).bytes == 7012


@given(st.integers(1, 5000), st.integers(1, 5000))
def test_fp8_32x32_bytes_are_payload_plus_one_scale_per_block(rows, cols):
    t = WeightTensor("w", "m", "attention", (rows, cols), FP8_E4M3_B32)
    assert t.bytes == rows * cols + ceil(rows / 32) * ceil(cols / 32)
    assert t.bytes >= FP8_E4M3_B32.bytes_for(rows * cols)  # ragged edges only add scales


def test_per_32_groups_run_along_the_last_dim():
    # 3 rows × 40 values: 120 B payload + 3 rows × ceil(40/32) = 2 scales each
    assert WeightTensor("e", "m", "engram_tables", (3, 40), FP8_E4M3_G32).bytes == 126
    # a routed-expert w1 of V4.1: 2304×5120 e2m1 (½ B) + 2304×160 ue8m0 scales
    w1 = WeightTensor("w1", "m", "routed_experts", (2304, 5120), FP4_E2M1_UE8M0_G32)
    assert w1.bytes == 2304 * 2560 + 2304 * 160 == 6_266_880


def test_unscaled_formats_are_elements_times_width():
    assert WeightTensor("n", "m", "norms", (3, 5), BF16).bytes == 30
    assert WeightTensor("n", "m", "norms", (7,), BF16).elements == 7


def test_bytes_that_are_not_whole_raise():
    with pytest.raises(ConfigError, match="not a whole number"):
        WeightTensor("odd", "m", "routed_experts", (1, 3), FP4_E2M1_UE8M0_G32).bytes  # 1.5 B + 1 scale


def test_unknown_group_raises():
    with pytest.raises(ConfigError, match="unknown group 'misc'"):
        WeightTensor("w", "m", "misc", (2, 2), BF16)


def test_scaled_format_without_a_tile_rule_raises():
    odd = Format("fp8_custom", "e4m3", Fraction(1), "ue8m0", Fraction(1), 64)
    with pytest.raises(ConfigError, match="no scale tile rule"):
        WeightTensor("w", "m", "attention", (64, 64), odd).bytes


# --- V4.1-Flash against the checkpoint facts ---------------------------------------------------

def test_engram_tables_are_resident_whole_at_264_bytes_per_row(v41):
    rows = {1: 384_006_168, 14: 384_016_682}  # engram_num_embeddings, model-facts §1.1
    tables = by_name(v41)
    for layer, n in rows.items():
        t = tables[f"layers.{layer}.engram.embed.weight"]
        assert t.shape == (n, 256) and t.bytes == n * 264  # 256 e4m3 + 8 ue8m0 per row
    assert v41.bytes_by_group()["engram_tables"] == 202_758_032_400


def test_engram_projection_shapes(v41):
    t = by_name(v41)
    wkv = t["layers.1.engram.wkv.weight"]
    assert wkv.shape == (25600, 6144)  # (4+1)·5120 × (4−1)·8·256
    assert wkv.bytes == 25600 * 6144 + 800 * 192
    assert t["layers.14.engram.q_weight"].shape == t["layers.14.engram.k_weight"].shape == (4, 5120)
    assert v41.bytes_by_group()["engram_proj"] == 2 * (157_286_400 + 153_600 + 2 * 4 * 5120 * 2)


def test_checkpoint_tensor_counts(v41):
    # model-facts §2, read from model.safetensors.index.json by a third party
    assert v41.count("compressor.wkv") == 4
    assert v41.count("compressor.wgate") == 3  # the ratio-1 compressor (layer 20) has no gate
    assert v41.count("indexer.wq_b") == 8
    assert v41.count("indexer.wk") == 4  # only KV sources own index keys
    assert v41.count("engram.embed") == 2
    assert len(names_with(v41, ".ffn.experts.", prefix="layers.")) == 40 * 384 * 3
    assert len(names_with(v41, ".ffn.experts.", prefix="mtp.")) == 3 * 128 * 3
    assert v41.count("ffn.experts.") == 40 * 384 * 3 + 3 * 128 * 3


def test_owners_of_compressors_and_index_keys(v41):
    assert names_with(v41, "compressor.wkv") == [f"layers.{l}.attn.compressor.wkv.weight" for l in (2, 8, 14, 20)]
    assert names_with(v41, "indexer.wk.") == [f"layers.{l}.attn.indexer.wk.weight" for l in (2, 8, 14, 20)]
    assert names_with(v41, "indexer.wq_b") == [f"layers.{l}.attn.indexer.wq_b.weight"
                                               for l in (2, 8, 14, 20, 24, 28, 32, 36)]
    t = by_name(v41)
    assert t["layers.2.attn.compressor.wkv.weight"].format.name == "fp32"  # ratio 2
    assert t["layers.20.attn.compressor.wkv.weight"].format.name == "bf16"  # ratio 1
    assert t["layers.2.attn.compressor.wgate.weight"].shape == (512, 5120)


def test_dspark_heads_live_on_one_block_each(v41):
    assert names_with(v41, "main_proj") == ["mtp.0.main_proj.weight"]
    assert names_with(v41, "confidence_head") == ["mtp.2.confidence_head.proj.weight"]
    assert names_with(v41, "markov_head") == ["mtp.2.markov_head.markov_w1.weight",
                                              "mtp.2.markov_head.markov_w2.weight"]
    t = by_name(v41)
    assert t["mtp.0.main_proj.weight"].shape == (5120, 3 * 5120)
    assert t["mtp.2.confidence_head.proj.weight"].shape == (1, 5120 + 256)
    assert t["mtp.2.markov_head.markov_w1.weight"].shape == (129280, 256)
    assert names_with(v41, "compressor", prefix="mtp.") == []  # draft blocks are SWA-only
    assert {x.group for x in v41.tensors if x.name.startswith("mtp.")} == {"dspark"}


def test_fp8_linear_weight_bytes_in_the_model(v41):
    wq_b = by_name(v41)["layers.3.attn.wq_b.weight"]
    assert (wq_b.shape, wq_b.format) == ((64 * 512, 1280), FP8_E4M3_B32)
    assert wq_b.bytes == 32768 * 1280 + 1024 * 40


def test_reuse_layer_attention_module_bytes(v41):
    # layer 3 (Reuse): own query, SWA KV, output projection — no compressor, no indexer
    expected = (1280 * 5120 + 40 * 160        # wq_a, FP8 32×32
                + 1280 * 4                    # q_norm, fp32
                + 32768 * 1280 + 1024 * 40    # wq_b
                + 512 * 5120 + 16 * 160       # wkv
                + 512 * 4                     # kv_norm
                + 8192 * 4096 * 2             # wo_a, bf16
                + 5120 * 8192 + 160 * 256     # wo_b
                + 64 * 4)                     # attn_sink, fp32
    assert v41.bytes_by_module()["layers.3.attn"] == expected


def test_routed_experts_cost_17_32_bytes_per_parameter(v41):
    experts = [t for t in v41.tensors if t.group == "routed_experts"]
    assert all(Fraction(t.bytes, t.elements) == Fraction(17, 32) for t in experts)
    assert v41.bytes_by_group()["routed_experts"] == 40 * 384 * 3 * 2304 * 5120 * 17 // 32


def test_vision_tower_and_aligner(v41):
    per_layer = 2 * 1024 + 4 * 1024 * 1024 + 3 * 1024 * 2816  # 2 norms, qkv + proj, SwiGLU
    aligner = 5120 * 1024 * 9 + 5120 * 5120
    assert v41.bytes_by_group()["vision"] == 2 * (32 * per_layer + 1024 * 3 * 14 * 14 + aligner)


def test_totals_agree_and_groups_keep_their_order(v41, v4):
    for inv in (v41, v4):
        groups = inv.bytes_by_group()
        assert tuple(groups) == GROUPS
        assert inv.total_bytes == sum(groups.values()) == sum(inv.bytes_by_module().values())
        assert len({t.name for t in inv.tensors}) == len(inv.tensors)


def test_inventory_is_cached_per_model():
    first = inventory(load_model())
    assert inventory(load_model()) is first  # equal frozen ModelSpecs share one entry
    assert first.total_bytes == inventory(load_model()).total_bytes == 511_759_675_736


# --- V4 family ---------------------------------------------------------------------------------

def test_v4_flash_has_no_engram_and_21_indexers(v4):
    groups = v4.bytes_by_group()
    assert groups["engram_tables"] == groups["engram_proj"] == groups["vision"] == 0
    assert v4.count("engram") == 0
    assert v4.count("attn.indexer.wq_b") == 21  # the ratio-4 (CSA) layers 2, 4, …, 42
    assert v4.count("attn.compressor.wkv") == 21 + 20  # every compressed layer owns one
    assert v4.count("gate.tid2eid") == 3  # num_hash_layers
    assert [t.name for t in v4.tensors if t.name.startswith("hc_head")] == [
        "hc_head_fn", "hc_head_base", "hc_head_scale"]
    assert {t.name.split(".")[1] for t in v4.tensors if t.name.startswith("mtp.")} == {"0"}


def test_v4_weights_use_128_blocks(v4):
    wq_a = by_name(v4)["layers.2.attn.wq_a.weight"]
    assert (wq_a.shape, wq_a.format) == ((1024, 4096), FP8_E4M3_B128)
    assert wq_a.bytes == 1024 * 4096 + 8 * 32


def test_v4_compressors_overlap_at_ratio_4(v4):
    t = by_name(v4)
    assert t["layers.2.attn.compressor.wkv.weight"].shape == (1024, 4096)  # 2·head_dim
    assert t["layers.2.attn.compressor.ape"].shape == (4, 1024)
    assert t["layers.3.attn.compressor.wkv.weight"].shape == (512, 4096)
    assert t["layers.3.attn.compressor.ape"].shape == (128, 512)
    assert t["layers.2.attn.indexer.compressor.wkv.weight"].shape == (256, 4096)  # 2·index_head_dim
    ratio4 = 2 * 1024 * 4096 * 4 + 4 * 1024 * 4  # wkv + wgate + ape, fp32
    ratio128 = 2 * 512 * 4096 * 4 + 128 * 512 * 4
    assert v4.bytes_by_group()["compressor"] == 21 * ratio4 + 20 * ratio128


def test_unknown_weight_block_is_a_config_error():
    with pytest.raises(ConfigError, match="weight_block_size"):
        inventory(dataclasses.replace(load_model(), weight_block=64))
