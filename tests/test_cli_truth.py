"""The CLI tells the truth about itself: its version, its default command, its defaults, and
output that is plain text on the terminal and Markdown only in ``report.md``."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from importlib.metadata import version

import pytest

import v41graph
from helpers import run
from v41graph.cli.main import build_parser, main


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # `report` writes v41graph-report/ into the working directory


def test_version_comes_from_the_package_metadata(capsys):
    assert v41graph.__version__ == version("v41graph")
    assert re.fullmatch(r"\d+\.\d+\.\d+.*", v41graph.__version__)
    status, out, err = run(capsys, "--version")
    assert (status, out, err) == (0, v41graph.__version__ + "\n", "")


def test_version_of_the_console_script_matches_python():
    code = "import v41graph; print(v41graph.__version__)"
    py = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    cli = subprocess.run([sys.executable, "-m", "v41graph.cli", "--version"], capture_output=True, text=True,
                         timeout=60, check=True)
    assert py.stdout == cli.stdout == version("v41graph") + "\n"


@pytest.mark.parametrize("options", [["--json"], ["--hardware", "b200_sxm", "--json"],
                                     ["--out", "elsewhere", "--json"]])
def test_options_without_a_command_are_report(capsys, options):
    status, bare, err = run(capsys, *options)
    assert (status, err) == (0, "")
    status, explicit, err = run(capsys, "report", *options)
    assert (status, err) == (0, "")
    assert bare == explicit
    data = json.loads(bare)
    assert data["hardware"] == (options[1] if options[0] == "--hardware" else "h200_sxm")


def test_unknown_option_without_a_command_is_one_line(capsys):
    status, out, err = run(capsys, "--frobnicate")
    assert status == 2 and out == "" and err.count("\n") == 1 and "--frobnicate" in err


def _subparsers():
    parser = build_parser()
    (sub,) = [a for a in parser._actions if a.choices and isinstance(a.choices, dict)]
    return sub.choices


# every option of every command, with the default its --help must state
DEFAULTS = {
    "--model": "deepseek-v4.1-flash", "--replay": "off", "--replay-cut": "sglang", "--chunk-tail": "every",
    "--encoder-restore": "persisted", "--fusion": "single-pass", "--tp": "1", "--ep": "1", "--dp": "1",
    "--hardware": "h200_sxm", "--out": "v41graph-report", "--layers": "19:20", "--chunk": "no chunking",
    "--json": "off", "--dspark": "off", "--check": "off", "--passes": "off", "--latex": "off", "--swa-lost": "off",
}


@pytest.mark.parametrize("command", ["layout", "memory", "compile", "dot", "cost", "formula", "report", "engram",
                                     "dspark"])
def test_help_shows_every_default(command, monkeypatch):
    monkeypatch.setenv("COLUMNS", "2000")  # argparse wraps lines (and words at hyphens) to the terminal
    text = " ".join(_subparsers()[command].format_help().split())
    for action in _subparsers()[command]._actions:
        option = max(action.option_strings, key=len, default=None)
        if option in (None, "--help") or action.required:
            continue
        assert "(default: " in (action.help or "") or option in DEFAULTS, option
        if option in DEFAULTS:
            assert re.search(rf"{re.escape(option)}\b.*?\(default: [^)]*{re.escape(DEFAULTS[option])}", text), option
    if command == "formula":
        assert "(default: one prefill of N tokens" in text
    if command in ("compile", "dot", "cost"):
        assert "(default: one prefill of 8192 tokens" in text


def test_report_summary_is_plain_text_and_names_the_svg(capsys):
    status, out, err = run(capsys, "report")
    assert (status, err) == (0, "")
    assert "diagram (layers 18–22): v41graph-report/boundary.svg\n" in out
    assert not re.search(r"\]\(|!\[|`|\*\*|^#", out, re.M)  # no Markdown links, images, code or headings
    assert "token×layers(N), replay off = 40*N\n" in out
    assert "token×layers(N), replay bounded = 21*N + 19*Min(128, N)\n" in out


def test_report_markdown_has_tables_not_dicts(capsys):
    assert main(["report"]) == 0
    md = open("v41graph-report/report.md", encoding="utf-8").read()
    assert "{'" not in md and "{\"" not in md
    cells = "\n".join(re.sub(r"\s*\|\s*", "|", line) for line in md.splitlines())  # whatever the column widths
    assert re.search(r"^\|bound by\|nodes\|\n\|:-+\|-+:\|$", cells, re.M)
    assert "|29|decoder|reuse|1|20|28|" in cells  # layer 29 reads the KV of 20 and the Top-K of 28
    assert "![layers 18–22](boundary.svg)" in md
    assert "|token×layers of an N-token prefill, replay bounded|`21*N + 19*Min(128, N)`|" in cells


def test_report_json_contract(capsys):
    status, out, err = run(capsys, "report", "--json")
    data = json.loads(out)
    assert list(data) == ["model", "hardware", "layout", "memory", "prefill", "decode_b64_ctx8k", "closed_forms",
                          "memory_per_gpu", "parameters", "decode_by_family", "cost_mode", "decode_coverage",
                          "sol_ceiling", "basis", "deployment", "checkpoint"]
    assert data["closed_forms"] == {"token_layers": {"replay_off": "40*N", "replay_bounded": "21*N + 19*Min(128, N)"},
                                    "kv_bytes": "356*N + 1068*floor(N/2)"}
    assert [m["context"] for m in data["memory"]] == [4096, 131072, 1048576]


def test_report_forecasts_by_default_with_the_sol_ceiling_beside(capsys):
    """Issue 34, item 2: the report's serving lines are a forecast (hybrid where tables cover the GPU), each
    time beside the same time on SOL (the figures `--cost sol` prints) and their ratio."""
    status, out, _ = run(capsys, "report", "--json")
    forecast = json.loads(out)
    status_sol, out_sol, _ = run(capsys, "report", "--json", "--cost", "sol")
    sol = json.loads(out_sol)
    assert (status, status_sol) == (0, 0)
    assert (forecast["basis"]["mode"], forecast["basis"]["chosen"]) == ("hybrid", "default")
    assert forecast["basis"]["why"] == "measured kernel tables cover h200_sxm"
    assert (sol["basis"]["mode"], sol["basis"]["chosen"], "sol_ceiling" in sol) == ("sol", "--cost", False)
    ceiling = forecast["sol_ceiling"]
    for n, p in sol["prefill"].items():
        for key in ("replay_off", "replay_bounded"):
            assert ceiling["prefill"][n][f"{key}_s"] == p[f"{key}_s"]
            assert ceiling["prefill"][n]["ratio"][key] == forecast["prefill"][n][f"{key}_s"] / p[f"{key}_s"] > 1
    assert ceiling["decode_step_s"] == sol["decode_b64_ctx8k"]["step_s"]
    assert ceiling["decode_ratio"] == forecast["decode_b64_ctx8k"]["step_s"] / sol["decode_b64_ctx8k"]["step_s"]
    status, text, _ = run(capsys, "report", "--out", "r2")
    step = forecast["decode_b64_ctx8k"]["step_s"]
    assert (f"decode step, batch 64 @ 8K: {step * 1e3:,.2f} ms ({64 / step:,.0f} tok/s) · SOL "
            f"{ceiling['decode_step_s'] * 1e3:,.2f} ms · {ceiling['decode_ratio']:.2f}×") in text


def test_report_runs_on_v4_with_its_fusion_profile(capsys):
    status, out, err = run(capsys, "report", "--model", "deepseek-v4-flash", "--json")
    assert (status, err) == (0, "")
    data = json.loads(out)
    # V4 has no decoder replay: 43 backbone layers each see every token
    assert data["closed_forms"]["token_layers"] == {"replay_off": "43*N", "replay_bounded": None}
    assert data["prefill"]["8192"]["replay_bounded_s"] is None
