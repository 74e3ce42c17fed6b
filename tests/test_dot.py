"""DOT backend: golden text, byte-identical output across processes, stubs for what a selection
reads from outside (KV owner, Top-K producer, residual), stable colours, and SVG rendering."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
import re
import subprocess
import sys

import pytest

from v41graph import GraphError, Plan, Request, load_model, lower
from v41graph.render import dot_files as dotmod
from v41graph.render.dot import PALETTE, find_renderer, kind_colour, render_dot, write_diagram
from v41graph.ir import ops

GOLDEN = Path(__file__).parent / "golden" / "dot_layers_19_20.dot"
# Same graph and selection as in-process; printed as raw UTF-8 bytes so nothing re-encodes them.
SCRIPT = ("import sys; from v41graph import Plan, Request, load_model, lower; "
          "from v41graph.render.dot import render_dot; "
          "g = lower(load_model(), Plan([Request.prefill(256)])); "
          "sys.stdout.buffer.write(render_dot(g, layers=[19, 20]).encode('utf-8'))")


@pytest.fixture(scope="module")
def g():
    return lower(load_model(), Plan([Request.prefill(256)]))


def _node_line(text: str, node_id: str) -> str:
    """The line declaring ``node_id``, with its leading tabs (one tab: outside every cluster)."""
    found = re.findall(rf'^\t+"{re.escape(node_id)}" \[.*\]$', text, flags=re.M)
    assert len(found) == 1, f"{node_id!r} declared {len(found)} times"
    return found[0]


def _fills(text: str) -> dict[str, set[str]]:
    """Op kind → the fill colours of the nodes labelled with it."""
    out: dict[str, set[str]] = {}
    for kind, colour in re.findall(r'label="[^"]*\\n(\w+)" fillcolor="(#[0-9a-f]{6})"', text):
        out.setdefault(kind, set()).add(colour)
    return out


def golden_text() -> str:
    """The drawing the golden file holds (also what tools/regen_golden.py writes)."""
    return render_dot(lower(load_model(), Plan([Request.prefill(256)])), layers=[19, 20])


def test_golden_layers_19_20(g):
    # The test only reads the golden. To regenerate deliberately (after a change meant to alter
    # the drawing): `python tools/regen_golden.py`, then read `git diff tests/golden`, render it
    # (`dot -Tsvg` or `graphviz-pure -Tsvg`) and look.
    assert render_dot(g, layers=[19, 20]).encode("utf-8") == GOLDEN.read_bytes()
    assert golden_text() == render_dot(g, layers=[19, 20])  # the tool draws the same graph


def test_golden_shape(g):
    """What the golden file should show, asserted apart so a regenerated golden cannot lose it."""
    text = render_dot(g, layers=[19, 20])
    for cluster in ("cluster_encoder", "cluster_encoder_L19", "cluster_decoder", "cluster_decoder_L20",
                    "cluster_decoder_L20_storage", "cluster_legend"):
        assert f"subgraph {cluster} {{" in text
    assert 'label="layer 20 · decoder · full"' in text and 'label="layer 19 · encoder · reuse"' in text
    # Layer 19 (Reuse) reads layer 14's KV and Top-K; layer 18 hands over the residual and the pre-mix.
    for stub in ("L14.store.main_kv", "L14.idx.topk", "L18.hc_ffn.expand", "L18.hc_ffn.coeff"):
        assert _node_line(text, stub).startswith(f'\t"{stub}" [label="{stub}"')
        assert "style=dashed" in _node_line(text, stub)
    assert "shape=cylinder" in _node_line(text, "L20.store.main_kv")
    assert '"L20.cmp.write" -> "L20.store.main_kv" [label="main_kv 512×v41_main_kv"]' in text
    assert "legend_Gemm" in text and "legend_storage_GlobalKVStore" in text and "legend_external" in text


def test_same_text_across_runs(g):
    again = lower(load_model(), Plan([Request.prefill(256)]))
    assert render_dot(again, layers=[19, 20]) == render_dot(g, layers=[19, 20])
    assert render_dot(g, layers=range(19, 21)) == render_dot(g, layers=(20, 19, 20))


def test_same_bytes_across_processes_and_hash_seeds(g):
    runs = [subprocess.run([sys.executable, "-c", SCRIPT], env=dict(os.environ, PYTHONHASHSEED=seed),
                           capture_output=True, check=True, timeout=300).stdout for seed in ("0", "4242")]
    assert runs[0] == runs[1] == render_dot(g, layers=[19, 20]).encode("utf-8")


def test_layer_29_reads_kv_and_topk_from_stubs(g):
    text = render_dot(g, layers=[29])
    assert '"L20.store.main_kv" -> "L29.kv_unpack" [label="main_kv 512×v41_main_kv" color=grey50 style=dashed]' in text
    assert '"L28.idx.topk" -> "L29.kv_unpack" [label="topk 512×i32" color=grey50 style=dashed]' in text
    assert '"L28.idx.topk" -> "L29.attn" [label="topk 512×i32" color=grey50 style=dashed]' in text
    assert '"L29.kv_unpack" -> "L29.attn" [label="main_kv 512×bf16"]' in text  # inside the layer: bf16 entries
    for stub in ("L20.store.main_kv", "L28.idx.topk"):
        assert _node_line(text, stub).startswith(f'\t"{stub}" ')  # outside every cluster
    assert '"L20.attn"' not in text  # only the stub of layer 20's storage, nothing else of it
    assert 'label="deepseek-v4.1-flash · layer 29"' in text


def test_edge_bytes_label(g):
    text = render_dot(g, layers=[29], edge_bytes={("L20.store.main_kv", "L29.kv_unpack", "main_kv"): 1234567})
    assert '"L20.store.main_kv" -> "L29.kv_unpack" [label="main_kv 1,234,567 B"' in text
    assert '"L28.idx.topk" -> "L29.attn" [label="topk 512×i32"' in text


def test_stage_selection_draws_head_and_stubs_the_last_layer(g):
    last = max(n.layer for n in g.nodes.values() if n.layer is not None)
    text = render_dot(g, stages={"head"}, title="head only")
    assert "subgraph cluster_head {" in text and "cluster_decoder" not in text
    assert _node_line(text, "head.proj").startswith('\t\t"head.proj" [label="head.proj\\nGemm"')
    assert _node_line(text, f"L{last}.hc_ffn.expand").startswith(f'\t"L{last}.hc_ffn.expand" ')
    assert 'label="head only"' in text


@pytest.mark.parametrize("kw, message", [
    ({"layers": [99]}, "no node in layer 99"),
    ({"layers": ["20"]}, "expected ints"),
    ({"layers": [True]}, "expected ints"),
    ({"stages": {"middle"}}, "unknown stage 'middle'"),
    ({"layers": [20], "stages": "encoder"}, "no node is in layers [20]"),
    ({"layers": []}, "no node is in layers []"),
])
def test_bad_selection_raises(g, kw, message):
    with pytest.raises(GraphError, match=re.escape(message)):
        render_dot(g, **kw)


def test_colour_of_a_kind_is_the_same_in_different_graphs(g):
    v4 = lower(load_model("deepseek-v4-flash"), Plan([Request.decode(4096)]))
    ours, theirs = _fills(render_dot(g, layers=[20])), _fills(render_dot(v4, layers=[2, 3]))
    common = ours.keys() & theirs.keys()
    assert {"Gemm", "Norm", "SparseAttention", "TopK", "GlobalKVStore", "SwaRing"} <= common
    for kind in common:
        assert ours[kind] == theirs[kind] == {kind_colour(kind, storage=getattr(ops, kind).storage)}
    # The closed form: MD5 of the name over the fixed palette, never the salted hash().
    assert kind_colour("Gemm") == PALETTE[int(hashlib.md5(b"Gemm").hexdigest()[:8], 16) % len(PALETTE)]


def _assert_svg(path: Path) -> None:
    assert path.read_bytes().lstrip()[:5] in (b"<?xml", b"<svg ")


def test_svg(g, tmp_path):
    assert find_renderer() is not None  # graphviz-pure is a runtime dependency: a renderer is always there
    message = write_diagram(render_dot(g, layers=[20]), tmp_path / "x.svg")
    assert message.startswith(f"wrote SVG to {tmp_path / 'x.svg'} (rendered by ")
    _assert_svg(tmp_path / "x.svg")


# System Graphviz (``dot``) is optional and preferred when present (the fake-renderer tests below
# check the order); graphviz-pure is installed with the package, so it is tested everywhere.
@pytest.mark.parametrize("name", ["graphviz-pure"])
def test_svg_with_each_renderer(g, tmp_path, monkeypatch, name):
    monkeypatch.setattr(dotmod, "RENDERERS", (name,))
    assert find_renderer() is not None
    assert write_diagram(render_dot(g, layers=[29]), tmp_path / "y.svg").endswith(f"(rendered by {name})")
    _assert_svg(tmp_path / "y.svg")
    with pytest.raises(GraphError, match=rf"write_diagram: {re.escape(name)} exited \d+: .*syntax error"):
        write_diagram("digraph { a -> ", tmp_path / "bad.svg")


def test_no_renderer_writes_dot_and_says_so(g, tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", "")
    monkeypatch.setattr(dotmod.shutil, "which", lambda *a, **k: None)
    text = render_dot(g, layers=[20])
    message = write_diagram(text, tmp_path / "x.svg")
    assert message.startswith(f"wrote DOT text to {tmp_path / 'x.dot'}: no DOT renderer found")
    assert (tmp_path / "x.dot").read_bytes() == text.encode("utf-8")
    assert not (tmp_path / "x.svg").exists()


def _fake_renderer(tmp_path: Path, monkeypatch, body: str) -> None:
    """A ``dot`` first on PATH that runs ``body`` (Python: needs no shell tools on PATH)."""
    exe = tmp_path / "bin" / "dot"
    exe.parent.mkdir()
    exe.write_text(f"#!{sys.executable}\nimport sys, time\n{body}\n")
    exe.chmod(0o755)
    monkeypatch.setattr(dotmod, "RENDERERS", ("dot",))
    monkeypatch.setenv("PATH", str(exe.parent) + os.pathsep + os.environ.get("PATH", ""))  # ours first


def test_failing_renderer_raises_with_its_first_stderr_line(tmp_path, monkeypatch):
    _fake_renderer(tmp_path, monkeypatch, "sys.stdin.read(); sys.stderr.write('Error: boom\\nmore\\n'); sys.exit(3)")
    with pytest.raises(GraphError, match=r"^write_diagram: dot exited 3: Error: boom$"):
        write_diagram("digraph {}", tmp_path / "x.svg")


def test_hanging_renderer_times_out(tmp_path, monkeypatch):
    _fake_renderer(tmp_path, monkeypatch, "time.sleep(30)")
    with pytest.raises(GraphError, match="did not finish within 0.5 s"):
        write_diagram("digraph {}", tmp_path / "x.svg", timeout=0.5)


def test_dot_path_and_bad_suffix(tmp_path):
    assert write_diagram("digraph { a -> b }\n", tmp_path / "g.dot") == f"wrote DOT text to {tmp_path / 'g.dot'}"
    assert (tmp_path / "g.dot").read_text(encoding="utf-8") == "digraph { a -> b }\n"
    with pytest.raises(GraphError, match=r"unsupported suffix '\.png'"):
        write_diagram("digraph {}", tmp_path / "g.png")


def test_system_dot_is_preferred_over_graphviz_pure(tmp_path, monkeypatch):
    _fake_renderer(tmp_path, monkeypatch, "sys.stdout.write('<svg/>')")
    monkeypatch.setattr(dotmod, "RENDERERS", ("dot", "graphviz-pure"))
    assert find_renderer() == str(tmp_path / "bin" / "dot")
    assert write_diagram("digraph {}", tmp_path / "x.svg").endswith("(rendered by dot)")


def test_drawn_layers_default_and_the_last_layer_the_plan_draws():
    """Issue 36, item 5: the layers ``dot`` draws by default and the past-the-end refusal are render's."""
    from v41graph.errors import PlanError
    from v41graph.render.dot import DEFAULT_LAYERS, drawn_layers
    m = load_model()
    plain, drafts = Plan([Request.decode(100, copies=4)]), Plan([Request.decode(100, copies=4)], dspark="on")
    assert (DEFAULT_LAYERS, drawn_layers(m, plain), drawn_layers(m, plain, range(39, 40))) == (
        range(19, 21), range(19, 21), range(39, 40))
    assert drawn_layers(m, drafts, range(40, 43)) == range(40, 43)  # the 3 draft blocks follow layer 39
    with pytest.raises(PlanError, match=r"^dot --layers: 38:40 goes past the last layer 39 of model "
                       r"'deepseek-v4.1-flash'$"):
        drawn_layers(m, plain, range(38, 41))
    with pytest.raises(PlanError, match="goes past the last layer 42 of model 'deepseek-v4.1-flash' and its draft"):
        drawn_layers(m, drafts, range(41, 44))
