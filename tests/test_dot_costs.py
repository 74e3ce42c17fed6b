"""Diagrams with costs: the SVG's nodes, the styled critical path and distinct legend colours."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import pytest

from v41graph import Plan, Request, compile, load_model
from v41graph.render.dot import find_renderer
from v41graph.render.dot_colours import PALETTE, STORAGE_PALETTE, _assigned
from v41graph.render.dot_costs import render_cost_dot

from helpers import run

SVG = "{http://www.w3.org/2000/svg}"


@pytest.fixture(scope="module")
def compiled():
    return compile(load_model(), Plan([Request.prefill(8192)]))


def _groups(root, cls):
    return [g for g in root.iter(f"{SVG}g") if g.get("class") == cls]


def _critical(g) -> bool:
    return any(p.get("stroke") == "#d62728" and p.get("stroke-width") == "3" for p in g.iter(f"{SVG}path"))


def test_every_kind_has_its_own_colour():
    compute, storage = _assigned(False), _assigned(True)
    assert len(set(compute.values())) == len(compute) >= 25
    assert len(set(storage.values())) == len(storage) >= 5
    assert not set(PALETTE) & set(STORAGE_PALETTE)


def test_cost_labels_and_critical_path_in_dot(compiled):
    text = render_cost_dot(compiled, layers=[20])
    slots = compiled.graph.annotation("schedule")
    t = float(slots["L20.attn"].sol.time)
    assert 1e-6 <= t < 1e-3  # so the label is in µs, four significant digits
    assert f"{t * 1e6:.4g} µs · {slots['L20.attn'].sol.bound}" in text
    path = compiled.report("schedule").critical_path
    drawn = [n for n in path if compiled.graph.nodes[n].layer == 20]
    styled = re.findall(r'"([^"]+)" -> "([^"]+)" \[[^\]]*color="#d62728" penwidth=3', text)
    # edges are drawn into the selection (a source outside it is a stub), so: every path step ending in layer 20
    assert set(styled) == {(a, b) for a, b in zip(path, path[1:]) if b in drawn} and styled


@pytest.mark.skipif(find_renderer() is None, reason="no DOT renderer (dot or graphviz-pure)")
def test_cli_svg_has_nodes_styled_path_and_distinct_legend(capsys, tmp_path, compiled):
    out = tmp_path / "d.svg"
    status, text, err = run(capsys, "dot", "--prefill", "8192", "--tp", "1", "--layers", "18:22", "--costs",
                            "-o", str(out))
    assert status == 0 and err == ""
    root = ET.parse(out).getroot()
    nodes = _groups(root, "node")
    titles = {n.findtext(f"{SVG}title") for n in nodes}
    graph = compiled.graph
    inside = {n for n, node in graph.nodes.items() if node.layer in range(18, 23)}
    assert inside <= titles  # every node of the five layers, plus stubs and legend entries
    edges = _groups(root, "edge")
    path = compiled.report("schedule").critical_path
    expected = {f"{a}->{b}" for a, b in zip(path, path[1:]) if a in inside and b in inside}
    assert {e.findtext(f"{SVG}title").replace("&#45;", "-") for e in edges if _critical(e)} >= expected
    assert len(expected) > 20
    legend = [n for n in nodes if (n.findtext(f"{SVG}title") or "").startswith("legend_")
              and n.findtext(f"{SVG}title") not in ("legend_external", "legend_critical")]
    shapes = (f"{SVG}path", f"{SVG}polygon", f"{SVG}ellipse")
    fills = [next(p.get("fill") for p in n if p.tag in shapes) for n in legend]
    assert len(fills) == len(set(fills)) >= 10


def test_plain_dot_command_draws_costs_and_the_critical_path(capsys, compiled):
    # issue 13's acceptance command as written: no flag needed for times and the styled path
    status, text, err = run(capsys, "dot", "--prefill", "8192", "--tp", "1", "--layers", "18:22")
    assert (status, err) == (0, "")
    assert text == run(capsys, "dot", "--prefill", "8192", "--tp", "1", "--layers", "18:22", "--costs")[1]
    path = compiled.report("schedule").critical_path
    inside = {n for n, node in compiled.graph.nodes.items() if node.layer in range(18, 23)}
    styled = set(re.findall(r'"([^"]+)" -> "([^"]+)" \[[^\]]*color="#d62728" penwidth=3', text))
    assert styled >= {(a, b) for a, b in zip(path, path[1:]) if a in inside and b in inside} and len(styled) > 20
    # --no-costs is the graph as lowered (unfused: the FP4 unpack is its own node, no times)
    status, plain, _ = run(capsys, "dot", "--prefill", "8192", "--tp", "1", "--layers", "18:22", "--no-costs")
    assert status == 0 and '"L21.kv_unpack"' in plain and "#d62728" not in plain and " ms · " not in plain
    status, passed, _ = run(capsys, "dot", "--prefill", "8192", "--tp", "1", "--layers", "18:22", "--passes")
    assert status == 0 and '"L21.kv_unpack"' not in passed and " ms · " not in passed
    status, _, err = run(capsys, "dot", "--collapse", "--no-costs")
    assert status == 2 and "--no-costs" in err and err.count("\n") == 1


@pytest.mark.skipif(find_renderer() is None, reason="no DOT renderer (dot or graphviz-pure)")
def test_collapse_draws_one_box_per_layer(capsys, tmp_path, compiled):
    out = tmp_path / "c.svg"
    assert run(capsys, "dot", "--prefill", "8192", "--collapse", "-o", str(out))[0] == 0
    root = ET.parse(out).getroot()
    titles = [n.findtext(f"{SVG}title") for n in _groups(root, "node")]
    layers = {n.layer for n in compiled.graph.nodes.values() if n.layer is not None}
    boxes = [t for t in titles if not t.startswith("legend_")]
    assert len([t for t in boxes if ".L" in t]) == len(layers) == 40
    assert sum(_critical(e) for e in _groups(root, "edge")) >= 39  # the path runs through every layer


def test_costs_need_a_schedule():
    from v41graph.passes import compile_graph
    c = compile_graph(load_model(), Plan([Request.prefill(128)]))
    with pytest.raises(Exception, match="needs a scheduled result"):
        render_cost_dot(c)


def test_times_in_the_unit_that_fits_and_title_names_plan_mapping_basis():
    from v41graph.render.dot_costs import _ms
    assert [_ms(x) for x in (3.495e-6, 0.008237, 1.174, 7.68e-9, 0)] == ["3.495 µs", "8.237 ms", "1.174 s", "7.68 ns",
                                                                        "0 s"]
    m = load_model()
    plan = Plan([Request.decode(8192, copies=64)], tp=8, ep=8)
    text = render_cost_dot(compile(m, plan), layers=[20], model=m, plan=plan)
    assert ('label="deepseek-v4.1-flash · h200_sxm · decode 64 × 8,192 · tp 8 · ep 8 · dp 1 (8 GPUs) · SOL total '
            in text)
    legend = re.search(r'legend_families \[label="([^"]*)"', text).group(1)
    assert "routed experts: " in legend and "Fused" not in legend and "SOL shares" in legend
