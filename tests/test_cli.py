"""The ``v41graph`` command line: JSON contracts, text output and the exit-status rule.

Commands run in-process through :func:`v41graph.cli.main.main` (fast); one test runs the installed
console script to prove the entry point works.
"""

from __future__ import annotations

import doctest
import json
import os
from pathlib import Path
import shutil
import subprocess
import sys

from helpers import run, run_json
import pytest

from v41graph.cli.main import main
from v41graph.model.config import builtin_config_text


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path, monkeypatch):
    """`report` writes its folder into the working directory: keep it out of the checkout."""
    monkeypatch.chdir(tmp_path)

LAYER_KEYS = {"index", "stage", "path", "compress_ratio", "kv_owner", "topk_producer"}


# --------------------------------------------------------------------------- layout


def test_layout_json_contract(capsys):
    data = run_json(capsys, "layout")
    assert data["model"] == "deepseek-v4.1-flash"
    assert data["path_counts"] == {"swa": 2, "full": 4, "reindex": 4, "reuse": 30}
    layers = data["layers"]
    assert [l["index"] for l in layers] == list(range(40))
    for layer in layers:
        assert LAYER_KEYS <= layer.keys()
    assert {k: layers[29][k] for k in LAYER_KEYS} == {
        "index": 29, "stage": "decoder", "path": "reuse", "compress_ratio": 1, "kv_owner": 20, "topk_producer": 28}
    assert {k: layers[0][k] for k in LAYER_KEYS} == {
        "index": 0, "stage": "encoder", "path": "swa", "compress_ratio": 0, "kv_owner": None, "topk_producer": None}
    assert [l["index"] for l in layers if l["path"] == "full"] == [2, 8, 14, 20]
    assert [l["index"] for l in layers if l["path"] == "reindex"] == [24, 28, 32, 36]


def test_layout_v4_flash_json(capsys):
    data = run_json(capsys, "layout", "--model", "deepseek-v4-flash")
    assert data["model"] == "deepseek-v4-flash"
    assert data["path_counts"] == {"swa": 2, "csa": 21, "hca": 20}
    assert len(data["layers"]) == 43


def test_layout_text(capsys):
    status, out, err = run(capsys, "layout")
    assert (status, err) == (0, "")
    assert "paths: swa 2 · full 4 · reindex 4 · reuse 30" in out


def test_layout_from_config_path(capsys, tmp_path):
    path = tmp_path / "DeepSeek-V4.1-Flash.config.json"
    path.write_text(builtin_config_text("deepseek-v4.1-flash"), encoding="utf-8")
    data = run_json(capsys, "layout", "--model", str(path))
    assert data["path_counts"] == {"swa": 2, "full": 4, "reindex": 4, "reuse": 30}


# --------------------------------------------------------------------------- memory


def test_memory_json_contract_at_1m(capsys):
    data = run_json(capsys, "memory", "--context", "1M")
    assert data["model"] == "deepseek-v4.1-flash"
    assert data["context"] == 1_048_576
    kv = data["kv"]
    assert kv["global_entries"] == 2_621_440
    assert kv["main_kv_bytes"] == 754_974_720  # 3 × 524,288 × 288 + 1,048,576 × 288
    assert kv["index_k_bytes"] == 178_257_920
    assert kv["global_bytes"] == 933_232_640
    assert kv["swa_payload_bytes"] == 2_621_440
    assert kv["dspark_swa_bytes"] == 0
    assert [o["owner"] for o in kv["owners"]] == [2, 8, 14, 20]
    assert [o["entries"] for o in kv["owners"]] == [524_288, 524_288, 524_288, 1_048_576]
    assert data["engram_table_bytes"] == 202_758_032_400
    groups = data["weights_by_group"]
    assert isinstance(groups, dict) and groups
    assert all(isinstance(v, int) for v in groups.values())
    assert sum(groups.values()) == data["weights_bytes"]
    assert groups["engram_tables"] == 202_758_032_400


def test_memory_dspark_flag(capsys):
    assert run_json(capsys, "memory", "--context", "128K", "--dspark")["kv"]["dspark_swa_bytes"] == 202_752


@pytest.mark.parametrize("text, tokens", [("4096", 4096), ("128K", 131_072), ("128k", 131_072), ("1M", 1_048_576),
                                          ("1_048_576", 1_048_576), ("0", 0)])
def test_context_suffixes(capsys, text, tokens):
    assert run_json(capsys, "memory", "--context", text)["context"] == tokens


def test_memory_text(capsys):
    status, out, err = run(capsys, "memory", "--context", "128K")
    assert (status, err) == (0, "")
    assert "131,072" in out
    assert "202,758,032,400" in out


# --------------------------------------------------------------------------- report


def test_report(capsys):
    status, out, err = run(capsys, "report")
    assert (status, err) == (0, "")
    assert "reuse 30" in out
    for context in ("4,096", "131,072", "1,048,576"):
        assert context in out


def test_no_command_is_report(capsys):
    status, out, _ = run(capsys)
    assert status == 0 and "reuse 30" in out


# --------------------------------------------------------------------------- bad input: exit 2, one line


def assert_one_line_error(capsys, argv, *needles):
    status, out, err = run(capsys, *argv)
    assert status == 2
    assert out == ""
    assert err.endswith("\n") and err.count("\n") == 1, err
    assert "Traceback" not in err
    for needle in needles:
        assert needle in err, f"{needle!r} not in {err!r}"
    return err


@pytest.mark.parametrize("argv, needles", [
    (["memory", "--context", "-5"], ["--context", "'-5'"]),
    (["memory", "--context", "abc"], ["--context", "'abc'"]),
    (["memory", "--context", "1.5M"], ["--context", "'1.5M'"]),
    (["layout", "--model", "no-such-model"], ["no-such-model", "deepseek-v4.1-flash"]),
    (["layout", "--model", "/nonexistent/x.json"], ["/nonexistent/x.json"]),
    (["frobnicate"], ["frobnicate"]),
], ids=["negative", "not-a-number", "fraction", "unknown-model", "missing-file",
        "unknown-command"])
def test_bad_input(capsys, argv, needles):
    assert_one_line_error(capsys, argv, *needles)


def test_invalid_config_file(capsys, tmp_path):
    config = json.loads(builtin_config_text("deepseek-v4.1-flash"))
    config["text_config"]["compress_ratios"] = config["text_config"]["compress_ratios"][:40]
    path = tmp_path / "truncated.json"
    path.write_text(json.dumps(config), encoding="utf-8")
    for command in (["layout"], ["memory", "--context", "4096"], ["report"]):
        assert_one_line_error(capsys, [*command, "--model", str(path)], "compress_ratios", "40 entries")


def test_non_json_file(capsys, tmp_path):
    path = tmp_path / "notes.json"
    path.write_text("this is not JSON\nat all\n", encoding="utf-8")
    assert_one_line_error(capsys, ["layout", "--model", str(path)], str(path), "JSON")


# --------------------------------------------------------------------------- the installed entry point


def test_console_script():
    script = (shutil.which("v41graph", path=os.path.dirname(sys.executable)) or shutil.which("v41graph"))
    command = [script] if script else [sys.executable, "-m", "v41graph.cli.main"]
    proc = subprocess.run([*command, "layout", "--json"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["path_counts"] == {"swa": 2, "full": 4, "reindex": 4, "reuse": 30}


# --------------------------------------------------------------------------- the README stays true


def test_readme_python_quickstart():
    root = Path(__file__).resolve().parents[1]
    readme, guide = root / "README.md", root / "docs" / "guide.md"
    if not readme.is_file():
        pytest.skip("README.md not present")
    for doc, least in ((readme, 10), (guide, 30)):  # the quickstart, and the guide's Python section
        result = doctest.testfile(str(doc), module_relative=False, optionflags=doctest.ELLIPSIS)
        assert result.attempted >= least and result.failed == 0, doc


def test_dot_command_writes_dot_and_rejects_bad_layers(tmp_path, capsys):
    out = tmp_path / "g.dot"
    assert main(["dot", "--prefill", "300", "--layers", "28:29", "--no-costs", "-o", str(out)]) == 0
    text = out.read_text()  # the deployment first, as a DOT comment (issue 37)
    assert text.startswith("// deployment: 8 × h200_sxm: tp 8 · ep 8 (auto: smallest that fits)\ndigraph v41graph {")
    assert '"L20.store.main_kv" -> "L29.kv_unpack"' in text and '"L28.idx.topk" -> "L29.attn"' in text
    assert main(["dot", "--layers", "x"]) == 2
    assert "not a layer range" in capsys.readouterr().err


def test_compile_json_token_layers_replay_on_and_off(capsys):
    results = {}
    for replay in ("bounded", "off"):
        assert main(["compile", "--prefill", "1", "127", "128", "129", "5000", "--replay", replay, "--json"]) == 0
        results[replay] = json.loads(capsys.readouterr().out)
    # 21·5385 + 19·(1 + 127 + 128 + 128 + 128) with the SGLang cut; 40·5385 without replay
    assert results["bounded"]["token_layers"] == 122813
    assert results["off"]["token_layers"] == 215400
    assert results["bounded"]["weights_bytes"] == results["off"]["weights_bytes"] == 511759675736
    assert [p["name"] for p in results["bounded"]["passes"]] == ["precision", "replay", "kv_dedup", "fusion"]
    assert results["bounded"]["kv"]["naive_global_bytes"] > results["bounded"]["kv"]["global_bytes"]


def test_report_writes_the_boundary_diagram(tmp_path, capsys):
    assert main(["report", "--out", str(tmp_path / "rep")]) == 0
    text = (tmp_path / "rep" / "boundary.dot").read_text()
    assert all(f"layer {l} · " in text for l in range(18, 23)) and "layer 23 · " not in text
    assert "layers 18–22" in capsys.readouterr().out


def test_unwritable_output_is_one_line_error(tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    assert main(["dot", "--prefill", "300", "-o", str(blocker / "x.dot")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err and "x.dot" in err
