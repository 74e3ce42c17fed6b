"""The interactive page (issue 29) without a browser: self-contained, its calculators' forms are
the project's own and agree with the CLI, the same page for a plan (``cost --html``, ``write_html``).
The browser half is tests/test_html_browser.py."""

from __future__ import annotations

import json
import re

import pytest
import sympy

from v41graph.analysis.page import cache_forms, gpu_form, prefill_forms
from v41graph.analysis.report_data import report_mappings
from v41graph.analysis.summaries import memory_summary
from v41graph.cli.main import main
from v41graph.costs.hardware import load_hardware
from v41graph.ir.plan import Plan, Request
from v41graph.passes import compile
from v41graph.render.html.html_report import forms_script, html_page
from v41graph.symbols import B, L, N


@pytest.fixture(scope="module")
def report_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("report") / "rep"
    assert main(["report", "--out", str(out)]) == 0
    return out


def external_references(html: str) -> list[str]:
    """Anything a browser could fetch: a URL with a scheme, a src= or an href= that is not a #fragment,
    CSS url()/@import."""
    found = re.findall(r"(?:https?|ftp|wss?)://[^\s\"'<>)]*", html)
    found += re.findall(r"\bsrc\s*=\s*[\"']?[^\s\"'>]*", html)
    found += [h for h in re.findall(r"\bhref\s*=\s*[\"']([^\"']*)", html) if not h.startswith("#")]
    found += re.findall(r"url\(|@import|<link\b|<iframe\b|<object\b|<embed\b", html)
    return found


def test_report_writes_a_self_contained_page(report_dir, capsys):
    html = (report_dir / "report.html").read_text(encoding="utf-8")
    assert external_references(html) == []
    assert 0 < (report_dir / "report.html").stat().st_size < 3_000_000
    for needle in ('id="layer-29"', 'id="layer-40"', 'id="calc-context"', 'id="diagram-layers"',
                   'id="diagram-collapsed"', 'id="memory"', 'id="prefill"', 'id="per-gpu"', 'id="families"',
                   "critical path", "<svg"):
        assert needle in html, needle


def test_the_report_prints_one_new_line(report_dir, capsys):
    assert main(["report", "--out", str(report_dir)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[-1] == f"interactive page: {report_dir / 'report.html'}"
    assert lines[-2].startswith("diagram (layers 18–22): ")


def test_the_page_is_deterministic(report_dir):
    first = (report_dir / "report.html").read_bytes()
    assert main(["report", "--out", str(report_dir)]) == 0
    assert (report_dir / "report.html").read_bytes() == first


def test_forms_print_as_javascript_with_math_functions(flash):
    from v41graph.analysis.page import PageData
    forms = {**cache_forms(flash), **prefill_forms(flash, load_hardware("h200_sxm"))}
    page = PageData("m", "h", "SOL", [], {}, forms, [], [])
    js = forms_script(page)
    assert "Math.floor(" in js and "Math.min(" in js and "Math.max(" in js and " ? " in js  # Piecewise
    assert not re.search(r"(?<!Math\.)\b(floor|Min|Max|Piecewise|ceiling)\(", js)
    assert "Not supported" not in js
    assert html_page(page, "", title="t") == html_page(page, "", title="t")


@pytest.mark.parametrize("context", [0, 4096, 131072, 1048576, 999_999])
def test_cache_forms_equal_memory(flash, context):
    forms, kv = cache_forms(flash), memory_summary(flash, context)["kv"]

    def at(key: str) -> int:
        return int(forms[key].expr.subs(L, context))

    assert at("cache.total") == kv["total_bytes"] and at("cache.global_bytes") == kv["global_bytes"]
    for o in kv["owners"]:
        assert at(f"cache.{o['owner']}.main_kv_bytes") == o["main_kv_bytes"]
        assert at(f"cache.{o['owner']}.index_k_bytes") == o["index_k_bytes"]


def test_gpu_forms_equal_the_report(flash, report_dir):
    data = json.loads((report_dir / "report.json").read_text())
    hw = load_hardware("h200_sxm")
    # the report runs on its auto mapping (8 × h200_sxm, tp 8 · ep 8): the per-GPU calculator uses it
    deployment = data["deployment"]
    assert (deployment["gpus"], deployment["tp"], deployment["dp"], deployment["ep"]) == (8, 8, 1, 8)
    mapping = {k: deployment[k] for k in ("tp", "ep", "dp")}
    [(label, plan)] = report_mappings(mapping).items()
    [figures] = data["memory_per_gpu"]
    assert label == "tp 8 · dp 1 · ep 8" and figures["mapping"]["tp"] == 8
    form, context = gpu_form(flash, plan, hw.hbm_capacity)
    assert context == 8193 and form.expr.subs(B, 64) == figures["total_bytes"] == 67_989_033_514
    html = (report_dir / "report.html").read_text(encoding="utf-8")
    assert "Deployment: 8 × h200_sxm: tp 8 · ep 8 (auto: smallest that fits)" in html
    assert "Basis: hybrid: measured kernel tables, then transfers, then SOL" in html  # a forecast by default
    assert "--prefill N --tp 8 --ep 8 [--replay bounded]" in html
    # each prefill time beside its SOL ceiling (issue 34, item 2): the report's own SOL figure, with the ratio
    c = data["sol_ceiling"]["prefill"]["8192"]
    assert "<th>SOL replay off (×)</th>" in html
    assert f"{c['replay_off_s'] * 1e3:,.2f} ms ({c['ratio']['replay_off']:.2f}×)" in html
    form, _ = gpu_form(flash, Plan([Request.decode(8192, copies=64)], dp=8, ep=8), hw.hbm_capacity)
    assert form.expr.has(sympy.ceiling)  # a DP rank holds ⌈B/8⌉ requests


@pytest.mark.parametrize("mapping", [None, {"tp": 8, "ep": 8}])
def test_prefill_forms_equal_compile(flash, mapping):
    forms = prefill_forms(flash, load_hardware("h200_sxm"), mapping)
    degrees = mapping or {}
    for n in (1000, 100000):
        for replay in ("off", "bounded"):
            plan = Plan([Request.prefill(n)], decoder_replay=replay, **degrees)
            t = compile(flash, plan, "h200_sxm").report("schedule")
            assert float(forms[f"prefill.{replay}"].expr.subs(N, n)) == pytest.approx(t.total_time_s, rel=1e-12)


def test_cost_html_writes_the_plan_page(tmp_path, capsys):
    path = tmp_path / "plan.html"
    assert main(["cost", "--decode", "64:8K", "--tp", "8", "--ep", "8", "--json",
                 "--html", str(path)]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["mapping"]["tp"] == 8  # --json stays JSON: the message goes to stderr
    assert err == f"wrote the interactive page to {path}\n"
    html = path.read_text(encoding="utf-8")
    assert external_references(html) == [] and 'id="layer-29"' in html and 'id="gpu-0-total"' in html
    assert "tp 8 · dp 1 · ep 8" in html
