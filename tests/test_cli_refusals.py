"""No silent no-ops (issue 10, deliver 7): an option the plan would ignore, a length past the
model's max_position_embeddings (1,048,576 = 2^20) and malformed values exit 2 with one line that
names what is wrong."""

from __future__ import annotations

import pytest

from helpers import run, run_json


def _one_line_error(capsys, argv, *needles):
    status, out, err = run(capsys, *argv)
    assert (status, out) == (2, "")
    assert err.endswith("\n") and err.count("\n") == 1 and "Traceback" not in err, err
    for needle in needles:
        assert needle in err, f"{needle!r} not in {err!r}"
    return err


@pytest.mark.parametrize("argv, needles", [
    (["cost", "--swa-lost"], ["--swa-lost", "--extend"]),
    (["compile", "--prefill", "100", "--swa-lost"], ["--swa-lost", "--extend"]),
    (["cost", "--chunk", "0"], ["--chunk", "'0'", "at least 1 token"]),
    (["cost", "--decode", "1:100", "--chunk", "10"], ["--chunk", "--prefill"]),
    (["cost", "--encoder-restore", "bounded"], ["--encoder-restore bounded", "--extend", "--swa-lost"]),
    (["cost", "--extend", "100:10", "--encoder-restore", "bounded"], ["--encoder-restore bounded", "--swa-lost"]),
    (["cost", "--replay-cut", "paper"], ["--replay-cut paper", "--replay bounded"]),
    (["cost", "--prefill", "1000", "--chunk", "100", "--chunk-tail", "last"], ["--chunk-tail last", "--replay"]),
    (["cost", "--prefill", "100", "--dspark"], ["--dspark", "--decode"]),
    (["dot", "--json"], ["dot", "--json"]),
    (["cost", "--extend", "100:10", "--swa-lost"], ["--swa-lost", "--encoder-restore bounded"]),
    (["cost", "--decode", "4:100", "--replay", "bounded"], ["--replay bounded", "--prefill", "--extend"]),
    (["formula", "token_layers", "--replay-cut", "paper"], ["--replay-cut paper", "--replay bounded"]),
], ids=["swa-lost", "swa-lost-compile", "chunk-0", "chunk-no-prefill", "restore-no-extend", "restore-nothing-lost",
        "cut-replay-off", "tail-replay-off", "dspark-prefill", "dot-json", "swa-lost-persisted", "replay-decode-only",
        "formula-cut"])
def test_ignored_options_are_errors(capsys, argv, needles):
    _one_line_error(capsys, argv, *needles)


@pytest.mark.parametrize("argv, needles", [
    (["cost", "--prefill", "2M"], ["2,097,152", "max_position_embeddings 1,048,576", "--allow-past-max-position"]),
    (["compile", "--decode", "1:1M"], ["1,048,577", "max_position_embeddings 1,048,576"]),
    (["memory", "--context", "1000000000000"], ["1,000,000,000,000", "max_position_embeddings 1,048,576"]),
    (["cost", "--tp", "-1"], ["--tp", "'-1'", "not a positive integer degree"]),
    (["cost", "--ep", "0"], ["--ep", "'0'", "not a positive integer degree"]),
    (["dot", "--layers", "30:20"], ["--layers", "'30:20'", "empty layer range", "20:30"]),
    (["layout", "--model", ""], ["model name is empty"]),
])
def test_messages_name_what_is_wrong(capsys, argv, needles):
    err = _one_line_error(capsys, argv, *needles)
    assert "non-negative token count" not in err and "Is a directory" not in err


def test_max_position_is_accepted_and_can_be_lifted(capsys):
    assert run_json(capsys, "memory", "--context", "1M")["context"] == 2 ** 20
    data = run_json(capsys, "memory", "--context", "2M", "--allow-past-max-position")
    # 2^21 tokens: owners 2, 8, 14 keep 2^20 entries each, owner 20 keeps 2^21; 356 B per entry
    assert data["kv"]["global_bytes"] == (3 * 2 ** 20 + 2 ** 21) * 356


def test_chunked_prompts_in_the_cli_are_one_cache_each(capsys):
    data = run_json(capsys, "compile", "--prefill", "1000", "1000", "--chunk", "100")
    assert data["kv"]["global_bytes"] == 2 * (3 * 500 + 1000) * 356


def test_combinations_that_act_still_run(capsys):
    run_json(capsys, "compile", "--extend", "1000:50", "--swa-lost", "--encoder-restore", "bounded")
    run_json(capsys, "compile", "--prefill", "1000", "--chunk", "500", "--replay", "bounded", "--chunk-tail", "last")
    run_json(capsys, "compile", "--prefill", "1000", "--replay", "bounded", "--replay-cut", "paper")
    run_json(capsys, "compile", "--decode", "4:1000", "--dspark")
