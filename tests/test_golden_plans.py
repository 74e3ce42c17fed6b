"""Ten plans whose JSON and DOT outputs must stay byte-identical (issue 14: speed work may not
change a number).

Each plan is run through the CLI in-process three ways — ``compile --json``, ``cost --json`` and
``dot --costs`` (the scheduled graph with its critical path) — and compared with the files in
``tests/golden/plans/``. The tests only read the goldens: they never write one, whatever the
environment, so a test cannot pass by rewriting what it compares with. To regenerate after an
intended change of output, run the separate tool

    python tools/regen_golden.py

then read ``git diff tests/golden`` and say in the commit why each difference is right.
"""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import pytest

from v41graph.cli.main import main

GOLDEN = Path(__file__).parent / "golden" / "plans"

# name -> the plan options (and model/hardware) shared by the three commands.
PLANS = {
    "prefill-1": ["--prefill", "1"],
    "prefill-8k-bounded": ["--prefill", "8192", "--replay", "bounded"],
    "prefill-128k-off-gb300": ["--prefill", "131072", "--replay", "off", "--hardware", "gb300"],
    "mixed-prefills": ["--prefill", "1", "127", "128", "129", "5000"],
    "decode-64-at-8k-tp8-ep8": ["--decode", "64:8192", "--tp", "8", "--ep", "8"],
    "extend-swa-lost": ["--extend", "4096:1000", "--swa-lost", "--encoder-restore", "bounded"],
    "chunked-16k": ["--prefill", "16384", "--chunk", "4096", "--replay", "bounded",
                    "--chunk-tail", "last"],
    "dspark-decode": ["--decode", "8:2048", "--dspark"],
    # the official FP4 checkpoint on h200, as written before issue 34 (the default there is now the FP8 one)
    "v4-flash-prefill-dp8": ["--model", "deepseek-v4-flash", "--prefill", "8192", "--dp", "8", "--ep", "8",
                             "--checkpoint", "fp4", "--fp4-on-hopper"],
    "unfused-paper-cut": ["--prefill", "3000", "--fusion", "unfused", "--replay", "bounded",
                          "--replay-cut", "paper", "--decode", "4:70000"],
}

# `cost` prices a deployment: with no mapping option it runs on the smallest that fits (issue 24). The
# goldens pin the mapping they were written for, so their figures stay those of one GPU.
PLANS = {name: opts if {"--tp", "--ep", "--dp"} & set(opts) else [*opts, "--tp", "1"] for name, opts in PLANS.items()}

COMMANDS = {
    "compile.json": ("compile", "--json"),
    "cost.json": ("cost", "--json"),
    "dot.dot": ("dot", "--costs", "--layers", "18:22"),
}


def _without_hardware(options: list[str]) -> list[str]:
    # `compile` takes no --hardware (nor the checkpoint it picks): the lowered-and-passed graph of the
    # model as loaded (a built-in: its official checkpoint) does not depend on it.
    drop = {"--hardware": 2, "--checkpoint": 2, "--fp4-on-hopper": 1}
    out, i = [], 0
    while i < len(options):
        if options[i] in drop:
            i += drop[options[i]]
            continue
        out.append(options[i])
        i += 1
    return out


def produce(plan: str, suffix: str) -> str:
    """What the CLI prints for one golden case (also what tools/regen_golden.py writes)."""
    command, *flags = COMMANDS[suffix]
    options = PLANS[plan] if command != "compile" else _without_hardware(PLANS[plan])
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main([command, *options, *flags])
    assert (status, err.getvalue()) == (0, ""), err.getvalue()
    return out.getvalue()


@pytest.mark.parametrize("suffix", sorted(COMMANDS))
@pytest.mark.parametrize("plan", sorted(PLANS))
def test_output_is_byte_identical(plan, suffix):
    path = GOLDEN / f"{plan}.{suffix}"
    assert produce(plan, suffix) == path.read_text(), f"{path.name} changed; see this module's docstring"


def test_every_golden_file_has_a_case():
    expected = {f"{plan}.{suffix}" for plan in PLANS for suffix in COMMANDS}
    assert {p.name for p in GOLDEN.iterdir()} == expected
