"""Plots (extra v41graph[plot]): PNGs read back (size, not blank), SVG stable, the extra named
when matplotlib is missing."""

from __future__ import annotations

import sys

import pytest

from v41graph.analysis.plot_data import geometric
from v41graph.analysis.sweep.sweep_result import COLUMNS, SweepResult

from helpers import run


def _image(path):
    mpimg = pytest.importorskip("matplotlib.image")
    img = mpimg.imread(path)
    return img


@pytest.fixture(autouse=True)
def _needs_matplotlib(request):
    if request.node.name != "test_without_matplotlib_the_command_names_the_extra":
        pytest.importorskip("matplotlib", reason="matplotlib not installed (extra v41graph[plot])")


def test_geometric_by_hand():
    # 2 per octave from 1K to 4K: 1024·2^(k/2) rounded
    assert geometric(1024, 4096, 2).tolist() == [1024, round(1024 * 2 ** 0.5), 2048, round(2048 * 2 ** 0.5), 4096]


def test_latency_png_from_the_cli(capsys, tmp_path):
    out = tmp_path / "lat.png"
    status, text, err = run(capsys, "plot", "latency", "--prompt", "1024..1048576", "--replay", "off,bounded",
                            "-o", str(out))
    assert (status, err) == (0, "") and text.strip() == f"wrote PNG to {out}"
    img = _image(out)
    height, width = img.shape[:2]
    assert width >= 600 and height >= 350
    rgb = img[..., :3]
    assert rgb.std() > 0.05  # not blank: axes, two lines and labels on white
    assert ((rgb < 0.5).any(axis=-1)).mean() > 0.005  # dark pixels (text, lines) cover part of it


def test_memory_ops_and_svg_are_deterministic(capsys, tmp_path):
    assert run(capsys, "plot", "memory", "--context", "1K..64K", "-o", str(tmp_path / "m.png"))[0] == 0
    assert _image(tmp_path / "m.png").shape[1] >= 600
    for name in ("a.svg", "b.svg"):
        assert run(capsys, "plot", "ops", "--prompt", "1K", "--replay", "off", "-o", str(tmp_path / name))[0] == 0
    a, b = (tmp_path / "a.svg").read_bytes(), (tmp_path / "b.svg").read_bytes()
    assert a == b and a.lstrip()[:5] in (b"<?xml", b"<svg ")


def test_pareto_points_are_labelled_and_the_title_names_model_hardware_basis():
    from v41graph.render.plots import pareto_title, point_label
    row = {"model": "deepseek-v4.1-flash", "hardware": "h200_sxm", "cost_mode": "sol", "tp": 8.0, "ep": 8,
           "dp": 1, "batch": 128}
    assert point_label(row) == "tp8 ep8 dp1 · b128"
    assert pareto_title([row]) == "deepseek-v4.1-flash · h200_sxm · SOL: Pareto frontier"


def test_pareto_plot_needs_per_gpu_figures(tmp_path):
    rows = ({"valid": True, "tok_s_per_gpu": 10.0, "tok_s_per_user": 1.0, "pareto": True},
            {"valid": True, "tok_s_per_gpu": 5.0, "tok_s_per_user": 5.0, "pareto": True},
            {"valid": True, "tok_s_per_gpu": 2.0, "tok_s_per_user": 2.0, "pareto": False})
    from v41graph.render.plots import plot_pareto
    msg = plot_pareto(SweepResult(rows, COLUMNS), tmp_path / "p.png")
    assert msg == f"wrote PNG to {tmp_path / 'p.png'}" and _image(tmp_path / "p.png").std() > 0.05
    empty = SweepResult(({"valid": True, "tok_s_per_gpu": None, "tok_s_per_user": 1.0, "fit_note": "why"},))
    with pytest.raises(Exception, match="no valid row has both tok_s_per_gpu and tok_s_per_user \\(why\\)"):
        plot_pareto(empty, tmp_path / "q.png")
    with pytest.raises(AttributeError, match="render.plots.plot_pareto"):  # the old method says where it went
        empty.plot_pareto(tmp_path / "q.png")


def test_bad_suffix(capsys, tmp_path):
    status, _, err = run(capsys, "plot", "memory", "--context", "1K..2K", "-o", str(tmp_path / "m.gif"))
    assert status == 2 and "unsupported suffix '.gif'" in err


def test_without_matplotlib_the_command_names_the_extra(capsys, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib now raises ImportError
    status, out, err = run(capsys, "plot", "latency", "-o", str(tmp_path / "lat.png"))
    assert status == 2 and out == "" and err.count("\n") == 1 and "v41graph[plot]" in err
    assert not (tmp_path / "lat.png").exists()
