"""Helpers and expected tables shared by several test modules (imported as ``helpers``)."""

from __future__ import annotations

import importlib
import importlib.util
import json
from pathlib import Path

from v41graph.cli.main import main

ROOT = Path(__file__).resolve().parents[1]

# Token×layers of one uncached N-token prefill on V4.1-Flash, written out by hand:
# N: (bounded, SGLang cut 21N + 19·min(N,128); no replay 40N; bounded, paper cut 20N + 20·min(N,128))
PREFILL_TOKEN_LAYERS = {
    1: (40, 40, 40),
    127: (5080, 5080, 5080),
    128: (5120, 5120, 5120),
    129: (5141, 5160, 5140),
    5000: (107432, 200000, 102560),
    65536: (1378688, 2621440, 1313280),
}


def run(capsys, *argv: str) -> tuple[int, str, str]:
    """Run the CLI in-process: (exit status, stdout, stderr)."""
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def run_json(capsys, *argv: str) -> dict:
    """Run the CLI with ``--json``; it must succeed silently on stderr."""
    status, out, err = run(capsys, *argv, "--json")
    assert (status, err) == (0, "")
    return json.loads(out)


def load_script(relative: str):
    """A script of the repository (``docs/cli_doc.py``, ``benchmarks/bench_forecast.py``) as a module: the docs'
    generators are scripts, not package modules, and their tests regenerate what they write."""
    path = ROOT / relative
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def resolve_dotted(dotted: str):
    """The object a dotted name reads (the longest importable module prefix, then attributes); AttributeError or
    ModuleNotFoundError when it names nothing."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        for attr in parts[cut:]:
            obj = getattr(obj, attr)
        return obj
    raise ModuleNotFoundError(dotted)
