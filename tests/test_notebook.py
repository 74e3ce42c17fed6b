"""Notebook display and DataFrames: short reprs, HTML tables, one record per node."""

from __future__ import annotations

import pytest

from v41graph import Plan, Request, compile, load_model, lower


@pytest.fixture(scope="module")
def compiled():
    return compile(load_model(), Plan([Request.prefill(8192)], decoder_replay="bounded"))


def test_reprs_are_short(compiled):
    for obj in (compiled, compiled.graph, compiled.report("schedule"), lower(load_model(), Plan([Request.decode(64)]))):
        assert len(repr(obj)) <= 300
    assert repr(compiled).startswith("Compiled('deepseek-v4.1-flash', ")
    assert f"{len(compiled.graph.nodes)} nodes" in repr(compiled.graph)


def test_html_summary_is_a_table(compiled):
    html = compiled._repr_html_()
    assert html.startswith("<table>") and html.endswith("</table>")
    assert "h200_sxm" in html and "critical path" in html and html.count("<tr>") >= 8


def test_records_one_per_node_with_costs(compiled):
    recs = compiled.to_records()
    report = compiled.report("schedule")
    assert len(recs) == len(compiled.graph.nodes)
    assert sum(r["critical"] for r in recs) == len(report.critical_path)
    assert sum(r["time_s"] for r in recs) == pytest.approx(sum(report.by_op.values()), rel=1e-12)
    gemm = next(r for r in recs if r["kind"] == "Gemm")
    assert gemm["bound"] in ("compute", "memory") and gemm["bytes_weights"] > 0
    assert {r["stage"] for r in recs} >= {"encoder", "decoder", "head"}


def test_to_pandas_one_row_per_node(compiled):
    pytest.importorskip("pandas", reason="pandas not installed (extra v41graph[dataframe])")
    df = compiled.to_pandas()
    assert len(df) == len(compiled.graph.nodes)
    assert {"name", "layer", "stage", "kind", "flops_fp8", "bytes_kv_read", "time_s", "bound", "critical"} <= set(df)


def test_ipython_display_uses_the_html(compiled):
    formatters = pytest.importorskip("IPython.core.formatters", reason="IPython not installed")
    fmt = formatters.HTMLFormatter()
    assert fmt(compiled) == compiled._repr_html_()


def test_diagram_shows_as_svg(compiled):
    from v41graph.render.dot import find_renderer
    from v41graph.render.notebook import diagram
    d = diagram(compiled, layers=[20])
    assert "critical path" in d.dot and len(repr(d)) <= 300
    if find_renderer() is None:
        pytest.skip("no DOT renderer (dot or graphviz-pure)")
    svg = d._repr_svg_()
    assert svg.lstrip().startswith(("<?xml", "<svg")) and "L20.attn" in svg
    with pytest.raises(Exception, match="expected a Graph or a compiled result, got int"):
        diagram(3)
