"""Interface ①: model loading, the V4.1 / V4 layer layouts and config validation (SPEC §1.1–1.2).

The V4.1-Flash layout is checked against a table written out by hand from
``shared/reference/model-facts.md`` §2, never against the rule the code uses.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from hypothesis import given, settings, strategies as st
import pytest

import v41graph
from v41graph import ConfigError, load_model
from v41graph.model.config import model_from_config
from v41graph.model.config import builtin_config_text

V41 = "deepseek-v4.1-flash"
V41_SHA256 = "8be45ce0476004a3f529fd896115a4a2e800a129ad2d3ec05b16050f52e21879"
_HERE = Path(__file__).resolve()

# model-facts.md §2: (index, stage, path, compress_ratio, kv_owner, topk_producer)
V41_FLASH_LAYOUT = [
    (0, "encoder", "swa", 0, None, None),
    (1, "encoder", "swa", 0, None, None),
    (2, "encoder", "full", 2, 2, 2),
    (3, "encoder", "reuse", 2, 2, 2),
    (4, "encoder", "reuse", 2, 2, 2),
    (5, "encoder", "reuse", 2, 2, 2),
    (6, "encoder", "reuse", 2, 2, 2),
    (7, "encoder", "reuse", 2, 2, 2),
    (8, "encoder", "full", 2, 8, 8),
    (9, "encoder", "reuse", 2, 8, 8),
    (10, "encoder", "reuse", 2, 8, 8),
    (11, "encoder", "reuse", 2, 8, 8),
    (12, "encoder", "reuse", 2, 8, 8),
    (13, "encoder", "reuse", 2, 8, 8),
    (14, "encoder", "full", 2, 14, 14),
    (15, "encoder", "reuse", 2, 14, 14),
    (16, "encoder", "reuse", 2, 14, 14),
    (17, "encoder", "reuse", 2, 14, 14),
    (18, "encoder", "reuse", 2, 14, 14),
    (19, "encoder", "reuse", 2, 14, 14),
    (20, "decoder", "full", 1, 20, 20),
    (21, "decoder", "reuse", 1, 20, 20),
    (22, "decoder", "reuse", 1, 20, 20),
    (23, "decoder", "reuse", 1, 20, 20),
    (24, "decoder", "reindex", 1, 20, 24),
    (25, "decoder", "reuse", 1, 20, 24),
    (26, "decoder", "reuse", 1, 20, 24),
    (27, "decoder", "reuse", 1, 20, 24),
    (28, "decoder", "reindex", 1, 20, 28),
    (29, "decoder", "reuse", 1, 20, 28),
    (30, "decoder", "reuse", 1, 20, 28),
    (31, "decoder", "reuse", 1, 20, 28),
    (32, "decoder", "reindex", 1, 20, 32),
    (33, "decoder", "reuse", 1, 20, 32),
    (34, "decoder", "reuse", 1, 20, 32),
    (35, "decoder", "reuse", 1, 20, 32),
    (36, "decoder", "reindex", 1, 20, 36),
    (37, "decoder", "reuse", 1, 20, 36),
    (38, "decoder", "reuse", 1, 20, 36),
    (39, "decoder", "reuse", 1, 20, 36),
]


def v41_config() -> dict:
    """A fresh, mutable copy of the embedded V4.1-Flash config."""
    return json.loads(builtin_config_text(V41))



# --------------------------------------------------------------------------- V4.1-Flash layout


def test_default_model_is_v41_flash(flash):
    assert flash.family == "v4.1"
    assert flash.name == V41
    assert flash.num_layers == 40
    assert len(flash.layers) == 40


def test_v41_path_counts(flash):
    assert flash.path_counts() == {"swa": 2, "full": 4, "reindex": 4, "reuse": 30}


def test_v41_table_has_40_rows():
    assert [row[0] for row in V41_FLASH_LAYOUT] == list(range(40))


@pytest.mark.parametrize("row", V41_FLASH_LAYOUT, ids=lambda r: f"layer{r[0]}")
def test_v41_every_layer_matches_table(flash, row):
    layer = flash.layers[row[0]]
    got = (layer.index, layer.stage, layer.path, layer.compress_ratio, layer.kv_owner, layer.topk_producer)
    assert got == row


def test_v41_layer_29_reads_kv_of_20_and_topk_of_28(flash):
    l29 = flash.layers[29]
    assert l29.path == "reuse"
    assert l29.kv_owner == 20
    assert l29.topk_producer == 28
    assert not l29.owns_kv and not l29.produces_topk


def test_v41_flags(flash):
    assert [l.index for l in flash.layers if l.candidate_source] == [20]
    assert [l.index for l in flash.layers if l.candidate_user] == [24, 28, 32, 36]
    assert [l.index for l in flash.layers if l.engram] == [1, 14]
    assert [l.index for l in flash.layers if l.dspark_target] == [37, 38, 39]
    assert flash.candidate_source_id == 20
    assert flash.candidate_pool_positions == 2048 * 8


def test_v41_owners_and_sources(flash):
    assert flash.kv_owners == (2, 8, 14, 20)
    assert flash.kv_source_ids == (2, 8, 14, 20)
    assert flash.index_source_ids == (2, 8, 14, 20, 24, 28, 32, 36)
    assert [l.index for l in flash.layers if l.produces_topk] == [2, 8, 14, 20, 24, 28, 32, 36]


def test_v41_draft_blocks_are_not_backbone_layers(flash):
    assert len(flash.draft_blocks) == 3
    assert [d.index for d in flash.draft_blocks] == [40, 41, 42]
    assert [d.block for d in flash.draft_blocks] == [0, 1, 2]
    backbone = {l.index for l in flash.layers}
    assert backbone.isdisjoint({40, 41, 42})
    for d in flash.draft_blocks:
        assert d.compress_ratio == 0
        assert (d.n_routed_experts, d.experts_per_token) == (128, 3)
    assert len(flash.compress_ratios) == 43
    assert flash.compress_ratios[40:] == (0, 0, 0)


def test_v41_window_128_everywhere(flash):
    assert flash.window == 128
    assert {l.window for l in flash.layers} == {128}
    assert {d.window for d in flash.draft_blocks} == {128}


def test_v41_scalar_shapes(flash):
    assert (flash.hidden_size, flash.num_heads, flash.head_dim, flash.rope_head_dim) == (5120, 64, 512, 64)
    assert (flash.n_routed_experts, flash.n_shared_experts, flash.experts_per_token) == (384, 1, 6)
    assert (flash.index_n_heads, flash.index_head_dim, flash.index_topk) == (32, 128, 512)
    assert flash.engram_num_embeddings == (384006168, 384016682)
    assert flash.weight_block == 32
    assert flash.lagged_mhc is True


# --------------------------------------------------------------------------- the embedded config


def test_embedded_config_sha256():
    text = builtin_config_text(V41)
    assert hashlib.sha256(text.encode("utf-8")).hexdigest() == V41_SHA256
    assert len(text.encode("utf-8")) == 3311


# SHA-256 of the official config.json of each release (the files in the project's shared/configs,
# checked there once): every built-in is embedded byte for byte, and no test reads outside the repo.
OFFICIAL_SHA256 = {
    "deepseek-v4.1-flash": "8be45ce0476004a3f529fd896115a4a2e800a129ad2d3ec05b16050f52e21879",
    "deepseek-v4-flash": "b628e63398a645abc711d92207f8737dd8140f7a4ef1e0a5b3616019e0ddd818",
    "deepseek-v4-flash-0731": "6c8f3d2d3b48707541b88f32f22ef3f0f8a6b57d8523281e2b8d3cdb0ae9a023",
    "deepseek-v4-pro": "5fe4568daee51c208cb8a79538eaeda090ae011ade1dee2c386aa95f569c810e",
    "deepseek-v4-pro-0813": "9dd2a89255469e120b333668ef5a169b7ae46c00f6bbab786bf0be457546aec0",
}


@pytest.mark.parametrize("name", sorted(OFFICIAL_SHA256))
def test_embedded_configs_are_the_official_files(name):
    assert hashlib.sha256(builtin_config_text(name).encode("utf-8")).hexdigest() == OFFICIAL_SHA256[name]


def test_load_model_from_path(tmp_path, flash):
    path = tmp_path / "DeepSeek-V4.1-Flash.config.json"
    path.write_text(builtin_config_text(V41), encoding="utf-8")
    for arg in (path, str(path)):
        model = load_model(arg)
        assert model.layers == flash.layers
        assert model.draft_blocks == flash.draft_blocks
        assert model.path_counts() == {"swa": 2, "full": 4, "reindex": 4, "reuse": 30}


def test_builtin_models_listed():
    assert set(v41graph.builtin_models()) >= {V41, "deepseek-v4-flash", "deepseek-v4-pro",
                                                "deepseek-v4-flash-0731", "deepseek-v4-pro-0813"}


# --------------------------------------------------------------------------- V4 baselines


def test_v4_flash_layout():
    m = load_model("deepseek-v4-flash")
    assert m.family == "v4"
    assert m.path_counts() == {"swa": 2, "csa": 21, "hca": 20}
    assert len(m.layers) == 43
    assert [l.index for l in m.layers if l.path == "swa"] == [0, 1]
    assert [l.index for l in m.layers if l.path == "csa"] == list(range(2, 43, 2))
    assert [l.index for l in m.layers if l.path == "hca"] == list(range(3, 42, 2))
    for l in m.layers:
        if l.path == "swa":
            assert (l.kv_owner, l.topk_producer) == (None, None)
        elif l.path == "csa":
            assert (l.compress_ratio, l.kv_owner, l.topk_producer) == (4, l.index, l.index)
        else:
            assert (l.compress_ratio, l.kv_owner, l.topk_producer) == (128, l.index, None)
    assert m.kv_owners == tuple(range(2, 43))
    assert len(m.draft_blocks) == 1
    assert m.lagged_mhc is False


def test_v4_pro_layout():
    m = load_model("deepseek-v4-pro")
    assert m.path_counts() == {"swa": 0, "csa": 30, "hca": 31}
    assert len(m.layers) == 61
    assert (m.layers[0].path, m.layers[1].path) == ("hca", "hca")
    assert [l.index for l in m.layers if l.path == "csa"] == list(range(2, 61, 2))
    assert [l.index for l in m.layers if l.path == "hca"] == [0, 1] + list(range(3, 60, 2))
    assert len(m.draft_blocks) == 1


@pytest.mark.parametrize("name, n_layers, drafts", [
    ("deepseek-v4-flash", 43, 1), ("deepseek-v4-flash-0731", 43, 3),
    ("deepseek-v4-pro", 61, 1), ("deepseek-v4-pro-0813", 61, 3)])
def test_v4_draft_blocks(name, n_layers, drafts):
    m = load_model(name)
    assert len(m.draft_blocks) == drafts
    assert [d.index for d in m.draft_blocks] == list(range(n_layers, n_layers + drafts))
    assert all(d.index not in {l.index for l in m.layers} for d in m.draft_blocks)


# --------------------------------------------------------------------------- validation


def _rejects(config, *needles):
    """model_from_config raises ConfigError (nothing else) whose message holds every needle."""
    with pytest.raises(ConfigError) as info:
        model_from_config(config)
    msg = str(info.value)
    for needle in needles:
        assert str(needle) in msg, f"{needle!r} not in {msg!r}"
    return msg


def test_missing_key():
    c = v41_config()
    del c["text_config"]["hidden_size"]
    _rejects(c, "text_config.hidden_size", "missing")


@pytest.mark.parametrize("key, value", [("hidden_size", "5120"), ("kv_source_layer_ids", "2,8")])
def test_wrong_type(key, value):
    c = v41_config()
    c["text_config"][key] = value
    _rejects(c, f"text_config.{key}", repr(value))


@pytest.mark.parametrize("length", [40, 42, 44])
def test_compress_ratios_length(length):
    c = v41_config()
    c["text_config"]["compress_ratios"] = ([0, 0] + [2] * 18 + [1] * 20 + [0] * 10)[:length]
    _rejects(c, "compress_ratios", f"{length} entries", "43")


def test_kv_source_with_ratio_zero():
    c = v41_config()
    c["text_config"]["kv_source_layer_ids"] = [1, 8, 14, 20]
    _rejects(c, "kv_source_layer_ids", "layer 1", "ratio 0")


def test_index_source_out_of_range():
    c = v41_config()
    c["text_config"]["index_source_layer_ids"] = [2, 8, 14, 20, 24, 28, 32, 36, 40]
    _rejects(c, "index_source_layer_ids", "40", "out of range")


def test_kv_source_missing_from_index_sources():
    c = v41_config()
    c["text_config"]["index_source_layer_ids"] = [2, 14, 20, 24, 28, 32, 36]
    _rejects(c, "kv_source_layer_ids", "KV source 8", "index_source_layer_ids")


@pytest.mark.parametrize("ids", [[8, 2, 14, 20], [2, 8, 8, 14, 20]], ids=["unsorted", "duplicate"])
def test_unsorted_or_duplicate_ids(ids):
    c = v41_config()
    c["text_config"]["kv_source_layer_ids"] = ids
    _rejects(c, "kv_source_layer_ids", str(ids))


def test_candidate_source_not_a_kv_source():
    c = v41_config()
    c["text_config"]["candidate_source_layer_id"] = 24
    _rejects(c, "candidate_source_layer_id", "24", "not a KV source")


def test_unknown_model_type():
    c = v41_config()
    c["model_type"] = "llama"
    _rejects(c, "model_type", "'llama'")


def test_unknown_model_name():
    with pytest.raises(ConfigError) as info:
        load_model("deepseek-v9-ultra")
    assert "deepseek-v9-ultra" in str(info.value)
    assert V41 in str(info.value)


def test_unreadable_path(tmp_path):
    folder = tmp_path / "a-directory.json"
    folder.mkdir()
    with pytest.raises(ConfigError) as info:
        load_model(folder)
    assert str(folder) in str(info.value)
    binary = tmp_path / "binary.json"
    binary.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(ConfigError) as info:
        load_model(binary)
    assert str(binary) in str(info.value)


@pytest.mark.parametrize("text", ['{"model_type": "deepseek_v41", ', "not json", ""])
def test_invalid_json_file(tmp_path, text):
    path = tmp_path / "broken.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load_model(path)
    assert str(path) in str(info.value)
    assert "JSON" in str(info.value)


def test_json_that_is_not_an_object(tmp_path):
    path = tmp_path / "list.json"
    path.write_text("[1, 2, 3]", encoding="utf-8")
    with pytest.raises(ConfigError):
        load_model(path)


# --------------------------------------------------------------------------- property tests
#
# Which text_config keys model.py reads, and how (see model_from_config / _v41_layers):
#
# * required integers (no default): deleting one or giving it any non-int value is an error;
# * required lists of layer ids / integers: likewise;
# * keys read WITH a default (candidate_topk_blocks, candidate_block_size, engram_max_ngram_size,
#   engram_n_heads, engram_head_dim, num_hash_layers, dspark_block_size, dspark_markov_rank,
#   dspark_n_routed_experts, dspark_num_experts_per_tok, dspark_target_layer_ids): deleting them
#   is valid, so they are excluded from deletion; a wrong-typed value is still an error.
#   dspark_target_layer_ids is special: without it the draft count falls back to
#   num_nextn_predict_layers (3), which still matches the 43 compress_ratios.
# * engram_layer_ids / engram_num_embeddings both default to [], but deleting only one of them
#   breaks their length match, so single deletions are errors and they are included.
# * candidate_source_layer_id is optional and JSON null means "absent": excluded from deletion,
#   and None is not a wrong type for it.
# * num_nextn_predict_layers is only read when dspark_target_layer_ids is empty (not the case
#   here), and the remaining keys (model_type, rms_norm_eps, rope_*, hidden_act, swiglu_limit,
#   scoring_func, routed_scaling_factor, hc_eps, engram_vocab_size, ... ) are not read at all:
#   all excluded.

REQUIRED_INTS = ["num_hidden_layers", "vocab_size", "hidden_size", "num_attention_heads", "head_dim",
                 "qk_rope_head_dim", "q_lora_rank", "o_lora_rank", "o_groups", "n_routed_experts",
                 "n_shared_experts", "num_experts_per_tok", "moe_intermediate_size", "sliding_window",
                 "index_n_heads", "index_head_dim", "index_topk", "hc_mult", "hc_sinkhorn_iters"]
REQUIRED_LISTS = ["compress_ratios", "kv_source_layer_ids", "index_source_layer_ids",
                  "engram_layer_ids", "engram_num_embeddings"]
DEFAULTED_INTS = ["candidate_topk_blocks", "candidate_block_size", "engram_max_ngram_size", "engram_n_heads",
                  "engram_head_dim", "dspark_block_size", "dspark_markov_rank", "dspark_n_routed_experts",
                  "dspark_num_experts_per_tok"]
DEFAULTED_LISTS = ["dspark_target_layer_ids"]
NULLABLE_INTS = ["candidate_source_layer_id"]  # None == absent; every other non-int is wrong
VISION_INTS = ["num_hidden_layers", "hidden_size", "num_attention_heads", "intermediate_size", "patch_size",
               "downsample_ratio", "max_image_tokens"]

_scalars_not_int = st.one_of(st.text(max_size=8), st.none(), st.booleans(), st.floats(),
                             st.dictionaries(st.text(max_size=3), st.integers(), max_size=2))
NOT_INT = st.one_of(_scalars_not_int, st.lists(st.integers(), max_size=3))
NOT_INT_LIST = st.one_of(
    _scalars_not_int, st.integers(),
    # a list holding at least one element that is not a (non-bool) int
    st.tuples(st.lists(st.integers(0, 50), max_size=3),
              st.one_of(st.text(max_size=3), st.none(), st.booleans(), st.floats()),
              st.integers(0, 3)).map(lambda t: t[0][:t[2]] + [t[1]] + t[0][t[2]:]))


@st.composite
def deletions(draw):
    c = v41_config()
    key = draw(st.sampled_from(REQUIRED_INTS + REQUIRED_LISTS))
    del c["text_config"][key]
    return key, c


@st.composite
def wrong_types(draw):
    c = v41_config()
    section, key, bad = draw(st.one_of(
        st.tuples(st.just("text_config"), st.sampled_from(REQUIRED_INTS + DEFAULTED_INTS), NOT_INT),
        st.tuples(st.just("text_config"), st.sampled_from(REQUIRED_LISTS + DEFAULTED_LISTS), NOT_INT_LIST),
        st.tuples(st.just("text_config"), st.sampled_from(NULLABLE_INTS), NOT_INT.filter(lambda v: v is not None)),
        st.tuples(st.just("vision_config"), st.sampled_from(VISION_INTS), NOT_INT),
        st.tuples(st.just(None), st.just("model_type"), NOT_INT),  # no string can be the wrong *type*
        st.tuples(st.just(None), st.sampled_from(["text_config", "quantization_config"]),
                  st.one_of(st.text(max_size=5), st.none(), st.integers(), st.lists(st.integers(), max_size=2)))))
    (c if section is None else c[section])[key] = bad
    return key, bad, c


# Literal V4.1-Flash ratios (model-facts §1.1) and which values are invalid at each position.
V41_RATIOS = [0, 0] + [2] * 18 + [1] * 20 + [0, 0, 0]
V41_KV_SOURCES = {2, 8, 14, 20}


def _invalid_ratio_values(i: int) -> st.SearchStrategy:
    always = st.one_of(st.integers(max_value=-1), st.integers(min_value=3, max_value=10**6))
    if i < 2:  # SWA-only with no KV source at or below: any positive ratio has no owner
        return st.one_of(always, st.sampled_from([1, 2]))
    if i >= 40:  # DSpark blocks must be 0
        return st.one_of(always, st.sampled_from([1, 2]))
    if i in V41_KV_SOURCES:  # a source cannot be SWA, nor change ratio under its group
        return st.one_of(always, st.sampled_from([v for v in (0, 1, 2) if v != V41_RATIOS[i]]))
    # a non-source layer may become SWA (0) legally; only the other compressed ratio is invalid
    return st.one_of(always, st.just(3 - V41_RATIOS[i]))


@st.composite
def out_of_range(draw):
    c = v41_config()
    t = c["text_config"]
    key = draw(st.sampled_from(["kv_source_layer_ids", "index_source_layer_ids", "compress_ratios"]))
    values = t[key]
    i = draw(st.integers(0, len(values) - 1))
    if key == "compress_ratios":
        bad = draw(_invalid_ratio_values(i))
    else:  # negative, past the last backbone layer, or a ratio-0 (SWA-only) layer
        bad = draw(st.one_of(st.integers(max_value=-1), st.integers(min_value=40, max_value=10**6),
                             st.sampled_from([0, 1])))
    values[i] = bad
    return key, i, bad, c


@settings(max_examples=60, deadline=None)
@given(deletions())
def test_property_deleted_required_key_rejected(case):
    key, c = case
    _rejects(c, key)  # engram_layer_ids is named bare, in the engram_num_embeddings length message


@settings(max_examples=60, deadline=None)
@given(wrong_types())
def test_property_wrong_type_rejected(case):
    key, _bad, c = case
    _rejects(c, key)


@settings(max_examples=60, deadline=None)
@given(out_of_range())
def test_property_out_of_range_source_or_ratio_rejected(case):
    key, _i, _bad, c = case
    _rejects(c)


@st.composite
def valid_sources(draw):
    """Random valid V4.1 configs: KV sources ⊇ {2}, index sources ⊇ KV sources, ratios per owner."""
    kv = sorted({2} | set(draw(st.lists(st.integers(3, 39), max_size=10))))
    extra_idx = set(draw(st.lists(st.integers(3, 39), max_size=10)))
    # each KV owner's group gets its own compression ratio; some non-source layers become SWA-only
    group_ratio = {s: draw(st.sampled_from([1, 2, 4])) for s in kv}
    swa = set(draw(st.lists(st.integers(3, 39), max_size=6))) - set(kv) - extra_idx
    ratios = [0, 0]
    for l in range(2, 40):
        ratios.append(0 if l in swa else group_ratio[max(s for s in kv if s <= l)])
    idx = sorted(set(kv) | extra_idx)
    cand = draw(st.one_of(st.none(), st.sampled_from(kv)))
    c = v41_config()
    t = c["text_config"]
    t["compress_ratios"] = ratios + [0, 0, 0]
    t["kv_source_layer_ids"] = kv
    t["index_source_layer_ids"] = idx
    if cand is None:
        del t["candidate_source_layer_id"]
    else:
        t["candidate_source_layer_id"] = cand
    return c, ratios, kv, idx, cand


@settings(max_examples=60, deadline=None)
@given(valid_sources())
def test_property_layout_invariants(case):
    c, ratios, kv, idx, cand = case
    m = model_from_config(c)
    assert len(m.layers) == 40
    assert sum(m.path_counts().values()) == 40
    assert m.path_counts()["swa"] == ratios.count(0)
    assert m.kv_owners == tuple(kv)
    for l in m.layers:
        assert l.compress_ratio == ratios[l.index]
        if ratios[l.index] == 0:
            assert (l.path, l.kv_owner, l.topk_producer) == ("swa", None, None)
            continue
        assert l.kv_owner == max(s for s in kv if s <= l.index)
        assert l.topk_producer == max(s for s in idx if s <= l.index)
        assert (l.path == "full") == (l.index in kv)
        assert (l.path == "reindex") == (l.index in idx and l.index not in kv)
        assert (l.path == "reuse") == (l.index not in idx)
        assert l.candidate_source == (l.index == cand)
        assert l.candidate_user == (cand is not None and l.path == "reindex" and l.index > cand)
